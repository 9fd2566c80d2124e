//! Fuzz targets over the code that reads untrusted bytes, shared by the libFuzzer driver
//! (`rust/fuzz/libfuzzer`, coverage-guided, run by `bench/fuzz.py`) and by this crate's
//! tests (the regression corpus and a short mutation smoke that builds on stable Rust with
//! no extra tools).
//!
//! - [`targets::request_frame`]: a request frame as the broker reads one off a socket (its
//!   own header parser, then the body decoder of every API and version it serves);
//! - [`targets::record_batches`]: RecordBatch validation, the produce-path record walk and
//!   decompression (with the broker's decompressed-size cap);
//! - [`targets::segment_recovery`]: a partition directory (segment, offset and time
//!   indexes, checkpoints) opened after an unclean shutdown, then read end to end.
//!
//! [`alloc_cap::CappedAlloc`] turns any single allocation above the input's own bound
//! into an abort, which libFuzzer reports as a crash with the input that caused it.

pub mod alloc_cap;
pub mod seeds;
pub mod targets;
