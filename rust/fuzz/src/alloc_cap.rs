//! An allocation cap for fuzzing: a global allocator that aborts the process when one
//! allocation exceeds the bound set for the input being run. A decoder that reserves memory
//! for a length it read (rather than for bytes it has) is then a crash with its input, not
//! a slow run that libFuzzer's RSS limit might or might not catch.
//!
//! The bound per input is `FACTOR * input length + SLACK`: every array element or record
//! takes at least one byte of input, so a decoder that reserves only for what can be there
//! stays within the largest element size times the input length. Decompression is bounded
//! separately by the configured cap ([`with_bound`] takes the bound explicitly).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes a single allocation may take per input byte (the largest decoded element in
/// memory is well under this).
pub const FACTOR: usize = 256;
/// Fixed allowance: buffers every decode starts with, a file read's block.
pub const SLACK: usize = 1 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The bound for an input of `len` bytes.
#[must_use]
pub fn bound_for(len: usize) -> usize {
    len.saturating_mul(FACTOR).saturating_add(SLACK)
}

/// Run `f` with every single allocation capped at `bound` bytes; returns its result and
/// the largest allocation it made. Single-threaded harnesses only (the cap is global).
pub fn with_bound<T>(bound: usize, f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.store(0, Ordering::Relaxed);
    LIMIT.store(bound, Ordering::Relaxed);
    let out = f();
    LIMIT.store(usize::MAX, Ordering::Relaxed);
    (out, LARGEST.load(Ordering::Relaxed))
}

fn check(size: usize) {
    LARGEST.fetch_max(size, Ordering::Relaxed);
    let limit = LIMIT.load(Ordering::Relaxed);
    if size > limit {
        // No allocation from here on: write the message straight to stderr and abort, as
        // libFuzzer expects of a crash.
        let msg = b"kafkalite-fuzz: allocation above the input's bound\n";
        // SAFETY: writing a static buffer to fd 2.
        unsafe {
            libc_write(2, msg.as_ptr(), msg.len());
        }
        std::process::abort();
    }
}

extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, count: usize) -> isize;
}

/// The capped allocator: install with `#[global_allocator]` in a fuzz binary or test.
pub struct CappedAlloc;

// SAFETY: every method forwards unchanged to `System` after the size check, which only
// reads and writes atomics (no allocation) or aborts.
unsafe impl GlobalAlloc for CappedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        System.realloc(ptr, layout, new_size)
    }
}
