//! libFuzzer driver of `kafkalite_fuzz::targets::record_batches` under the allocation cap.
#![no_main]

use kafkalite_fuzz::alloc_cap::{with_bound, CappedAlloc};
use kafkalite_fuzz::targets::{bound, record_batches};

#[global_allocator]
static ALLOC: CappedAlloc = CappedAlloc;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    with_bound(bound(data.len()), || record_batches(data));
});
