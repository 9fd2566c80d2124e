//! The JNI library of kafkalite's JVM Spark writer (`spark/jvm/`, class
//! `kafkalite.spark.NativeProducer`). A Spark task opens one producer, writes rows into a
//! buffer this library owns (its address goes to Java, which fills it with plain stores),
//! hands over a whole chunk of rows per call, and flushes at the end: a handful of JNI
//! calls per task, none per row. The producer is `kafkalite-client`'s: its RecordBatcher
//! and produce_batches, as the Python writer uses them through the extension.

mod error;
mod exports;
mod producer;
mod rows;
mod sender;

pub use error::SinkError;
pub use producer::{Settings, TaskProducer};
pub use rows::{Row, Rows};
