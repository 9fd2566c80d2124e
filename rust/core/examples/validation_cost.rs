//! What walking every record of a produced batch costs (bench/validation_cost.py runs this).
//!
//! For each workload, in the same process and alternating round by round:
//! - validation alone, "before" (header checks and CRC, what appends ran until the record
//!   walk) and "after" (the same plus `check_batches`' record walk, inflating compressed
//!   batches);
//! - the append path (a segment's io_uring/pwritev append with the validation as its
//!   verify step, into the page cache, no fsync) with each.
//!
//! Prints one JSON line per workload: MiB/s of batch bytes (what producers send) and of
//! record bytes (decompressed), medians of the rounds, and the seconds of CPU per GiB the
//! walk adds. Usage: validation_cost [GiB per run] [rounds] [scratch dir].

use std::path::Path;
use std::time::Instant;

use kafkalite_core::records::{
    check_batch_crcs, check_batches, encode_batch, validate_batches_deferring_crc, Compression,
    RecordInput, RecordRules,
};
use kafkalite_core::storage::segment::{Segment, WrittenBatch};
use kafkalite_core::storage::LogConfig;

const MIB: f64 = (1 << 20) as f64;

struct Workload {
    name: &'static str,
    codec: Compression,
    record_bytes: usize,
}

/// ~1 MiB of records (before compression), values half random and half repeated, so zstd
/// gets a realistic ~2x rather than an all-zero 1000x.
fn batch(w: &Workload) -> (Vec<u8>, usize) {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let count = (1 << 20) / (w.record_bytes + 16);
    let records: Vec<RecordInput> = (0..count)
        .map(|i| {
            let mut value = vec![b'x'; w.record_bytes];
            for byte in value.iter_mut().take(w.record_bytes / 2) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *byte = seed as u8;
            }
            RecordInput {
                timestamp: 1_700_000_000_000 + i as i64,
                key: Some(format!("key-{i}").into_bytes()),
                value: Some(value),
                headers: Vec::new(),
            }
        })
        .collect();
    let plain = encode_batch(&records, Compression::None, 0).unwrap().len();
    (encode_batch(&records, w.codec, 0).unwrap(), plain)
}

fn validate(batch: &[u8], walk: bool, rules: &RecordRules) {
    let infos = validate_batches_deferring_crc(batch, usize::MAX).unwrap();
    if walk {
        check_batches(batch, &infos, rules).unwrap();
    } else {
        check_batch_crcs(batch, &infos).unwrap();
    }
}

/// Seconds to validate `n` copies of `batch`.
fn time_validation(batch: &[u8], n: usize, walk: bool) -> f64 {
    let rules = RecordRules::default();
    let started = Instant::now();
    for _ in 0..n {
        validate(batch, walk, &rules);
    }
    started.elapsed().as_secs_f64()
}

/// Seconds to append `n` copies of `batch` to a fresh segment in `dir`, validating each as
/// the write's verify step.
fn time_append(dir: &Path, batch: &[u8], n: usize, walk: bool) -> f64 {
    let config = LogConfig::default();
    let rules = RecordRules::default();
    let mut segment = Segment::create(dir, 0, 0).unwrap();
    let count = i64::from(i32::from_be_bytes(batch[57..61].try_into().unwrap()));
    let started = Instant::now();
    for i in 0..n as i64 {
        let written = WrittenBatch {
            base_offset: i * count,
            last_offset: i * count + count - 1,
            max_timestamp: 0,
            size: batch.len() as u64,
        };
        segment
            .append(&[batch], &[written], &config, || {
                validate(batch, walk, &rules);
                Ok(())
            })
            .unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    segment.delete().unwrap();
    elapsed
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let gib: f64 = args.get(1).map_or(1.0, |a| a.parse().unwrap());
    let rounds: usize = args.get(2).map_or(5, |a| a.parse().unwrap());
    let scratch = match args.get(3) {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .unwrap();
    let workloads = [
        Workload {
            name: "uncompressed, 1 KiB records",
            codec: Compression::None,
            record_bytes: 1024,
        },
        Workload {
            name: "uncompressed, 100 B records",
            codec: Compression::None,
            record_bytes: 100,
        },
        Workload {
            name: "zstd, 1 KiB records",
            codec: Compression::Zstd,
            record_bytes: 1024,
        },
    ];
    for w in &workloads {
        let (batch, plain) = batch(w);
        let n = ((gib * 1024.0 * MIB) / plain as f64).ceil() as usize;
        let (mut v0, mut v1, mut a0, mut a1) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            v0.push(time_validation(&batch, n, false));
            v1.push(time_validation(&batch, n, true));
            a0.push(time_append(scratch.path(), &batch, n, false));
            a1.push(time_append(scratch.path(), &batch, n, true));
        }
        let (v0, v1, a0, a1) = (median(v0), median(v1), median(a0), median(a1));
        let wire = (n * batch.len()) as f64 / MIB;
        let records = (n * plain) as f64 / MIB;
        println!(
            "{{\"workload\": \"{}\", \"batch_bytes\": {}, \"record_bytes_per_batch\": {plain}, \
             \"validate_before_mib_s\": {:.0}, \"validate_after_mib_s\": {:.0}, \
             \"append_before_mib_s\": {:.0}, \"append_after_mib_s\": {:.0}, \
             \"append_before_record_mib_s\": {:.0}, \"append_after_record_mib_s\": {:.0}, \
             \"walk_cpu_s_per_gib_of_records\": {:.3}, \"rounds\": {rounds}, \"gib_per_run\": {gib}, \
             \"units\": \"MiB/s of batch bytes unless named record, median of rounds\"}}",
            w.name,
            batch.len(),
            wire / v0,
            wire / v1,
            wire / a0,
            wire / a1,
            records / a0,
            records / a1,
            (v1 - v0) / (records / 1024.0),
        );
    }
}
