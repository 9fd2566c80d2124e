//! kafkalite-core: Kafka RecordBatch v2 handling, segmented partition logs and the I/O engine
//! beneath them. No Python here: the binding crate `kafkalite-py` wraps this for `kafkalite._core`.

pub mod config;
pub mod error;
pub mod error_codes;
pub mod io;
pub mod logging;
pub mod records;
pub mod storage;

pub use error::{Error, Result};
