//! Shared test fixtures: hand-assembled batches (for bytes `encode_batch` would never
//! write), sample records, a deterministic PRNG and an allocation probe.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use crate::records::batch::{write_crc, BatchHeader, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
use crate::records::{Header, RecordInput};

/// Header fields for `raw_batch`, with `section` as the records bytes verbatim.
#[derive(Clone, Debug)]
pub struct RawBatch {
    pub base_offset: i64,
    pub attributes: i16,
    pub count: i32,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub section: Vec<u8>,
}

impl RawBatch {
    /// One record at delta 0, CreateTime 0, uncompressed.
    pub fn new(section: Vec<u8>) -> RawBatch {
        RawBatch {
            base_offset: 0,
            attributes: 0,
            count: 1,
            last_offset_delta: 0,
            base_timestamp: 0,
            max_timestamp: 0,
            section,
        }
    }
}

/// A batch with exactly these fields and a correct CRC, however inconsistent they are.
pub fn raw_batch(spec: &RawBatch) -> Vec<u8> {
    let mut out = vec![0u8; BATCH_HEADER_LEN];
    out.extend_from_slice(&spec.section);
    let header = BatchHeader {
        base_offset: spec.base_offset,
        batch_length: (out.len() - LOG_OVERHEAD) as i32,
        partition_leader_epoch: 0,
        magic: MAGIC_V2,
        crc: 0,
        attributes: spec.attributes,
        last_offset_delta: spec.last_offset_delta,
        base_timestamp: spec.base_timestamp,
        max_timestamp: spec.max_timestamp,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: spec.count,
    };
    header.write_to(&mut out);
    write_crc(&mut out);
    out
}

/// `n` records mixing null and empty keys and values, headers and out-of-order timestamps.
pub fn sample_records(n: usize) -> Vec<RecordInput> {
    (0..n)
        .map(|i| {
            let key = match i % 3 {
                0 => None,
                1 => Some(Vec::new()),
                _ => Some(format!("key-{i}").into_bytes()),
            };
            let value = (i % 5 != 4).then(|| format!("value {i} ").repeat(i % 7 + 1).into_bytes());
            let headers = (0..i % 3)
                .map(|h| Header {
                    key: format!("h{h}").into_bytes(),
                    value: (h % 2 == 0).then(|| vec![h as u8; h + 1]),
                })
                .collect();
            // Wobbles around an increasing clock, so some deltas are negative.
            let timestamp = 1_700_000_000_000 + (i as i64 * 10) - (i as i64 % 4) * 25;
            RecordInput {
                timestamp,
                key,
                value,
                headers,
            }
        })
        .collect()
}

/// xorshift64*: deterministic, dependency-free randomness for fuzz-style tests.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

thread_local! {
    static LARGEST_ALLOCATION: Cell<usize> = const { Cell::new(0) };
}

/// Run `f` and report the largest single allocation it made on this thread. Tests run on
/// parallel threads, hence per-thread bookkeeping.
pub fn largest_allocation_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST_ALLOCATION.with(|l| l.set(0));
    let result = f();
    (result, LARGEST_ALLOCATION.with(Cell::get))
}

/// Delegates to the system allocator, noting request sizes so tests can prove hostile
/// lengths are refused before anything is allocated for them. Test builds only.
struct SizeProbe;

fn note_size(size: usize) {
    // try_with: allocations during thread teardown must not panic.
    let _ = LARGEST_ALLOCATION.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// GlobalAlloc contract; the bookkeeping only touches a const-initialised thread-local
// Cell, which never allocates.
unsafe impl GlobalAlloc for SizeProbe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_size(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_size(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_size(new_size);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
    }
}

#[global_allocator]
static SIZE_PROBE: SizeProbe = SizeProbe;

#[test]
fn size_probe_sees_allocations() {
    let (v, largest) = largest_allocation_during(|| vec![1u8; 3 << 20]);
    assert_eq!(v.len(), 3 << 20);
    assert!(largest >= 3 << 20);
    let ((), largest) = largest_allocation_during(|| ());
    assert_eq!(largest, 0);
}
