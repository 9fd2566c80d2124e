//! `kafkalite._core`: the thin PyO3 layer over kafkalite-core. Logic lives in the core crate;
//! this crate converts types, maps errors and releases the GIL.

mod alloc;
mod arrow_batches;
mod arrow_columns;
mod broker;
mod buffer;
mod cluster;
mod config;
mod conformance;
mod errors;
mod kafka_client;
mod partition_log;
mod records;

use pyo3::prelude::*;

#[global_allocator]
static ALLOCATOR: alloc::GuardedAlloc = alloc::GuardedAlloc;

/// The write engine this process uses: "io_uring" or "pwritev".
#[pyfunction]
fn io_engine() -> &'static str {
    kafkalite_core::io::engine_kind().name()
}

/// Why the pwritev fallback is in use, or None when io_uring is.
#[pyfunction]
fn io_engine_fallback_reason() -> Option<String> {
    kafkalite_core::io::engine_fallback_reason()
}

#[pymodule]
fn _core(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(py, m)?;
    m.add_class::<partition_log::PartitionLog>()?;
    m.add_class::<partition_log::FileSlice>()?;
    m.add_class::<partition_log::AppendInfo>()?;
    m.add_class::<partition_log::CompactionStats>()?;
    m.add_class::<broker::BrokerServer>()?;
    m.add_function(wrap_pyfunction!(config::validate_broker_config, m)?)?;
    m.add_function(wrap_pyfunction!(config::broker_config_default, m)?)?;
    m.add_function(wrap_pyfunction!(config::broker_config_is_sensitive, m)?)?;
    m.add_function(wrap_pyfunction!(config::check_dynamic_broker_config, m)?)?;
    m.add_class::<kafka_client::KafkaClient>()?;
    m.add_class::<kafka_client::ClusterMetadata>()?;
    m.add_class::<kafka_client::TopicMetadata>()?;
    m.add_class::<kafka_client::PartitionMetadata>()?;
    m.add_class::<kafka_client::FetchedPartition>()?;
    m.add_class::<kafka_client::ProduceResult>()?;
    m.add_function(wrap_pyfunction!(conformance::conformance_run, m)?)?;
    m.add_function(wrap_pyfunction!(conformance::conformance_fuzz, m)?)?;
    m.add_function(wrap_pyfunction!(io_engine, m)?)?;
    m.add_function(wrap_pyfunction!(cluster::error_code, m)?)?;
    m.add_function(wrap_pyfunction!(io_engine_fallback_reason, m)?)?;
    m.add_function(wrap_pyfunction!(records::build_batch, m)?)?;
    m.add_function(wrap_pyfunction!(records::decode_batches, m)?)?;
    m.add_function(wrap_pyfunction!(records::crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_columns::decode_arrow_columns, m)?)?;
    m.add_function(wrap_pyfunction!(arrow_batches::encode_arrow_batches, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
