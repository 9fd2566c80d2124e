//! `conformance_run`: the differential conformance runner (`kafkalite-conformance`) for the
//! Python `kafkalite conformance` command, which starts the brokers and prints the report.

use kafkalite_conformance::{Injection, Options};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Play the conformance scripts against `kafkalite` and `kafka` (bootstrap addresses) and
/// return the report data as JSON. `inject` = (api, field, value) overwrites that field of
/// kafkalite's answers before comparing: how a test proves a difference is reported.
/// `sasl` = the (kafkalite, kafka) SASL_PLAINTEXT bootstraps the security scripts need.
#[pyfunction]
#[pyo3(signature = (kafkalite, kafka, quick=false, apis=None, inject=None, sasl=None))]
pub fn conformance_run(
    py: Python<'_>,
    kafkalite: String,
    kafka: String,
    quick: bool,
    apis: Option<Vec<String>>,
    inject: Option<(String, String, String)>,
    sasl: Option<(String, String)>,
) -> PyResult<String> {
    let options = Options {
        quick,
        apis: apis.unwrap_or_default(),
        injection: inject.map(|(api, field, value)| Injection { api, field, value }),
        sasl,
    };
    let report = py
        .detach(|| kafkalite_conformance::run(&kafkalite, &kafka, &options))
        .map_err(PyRuntimeError::new_err)?;
    serde_json::to_string(&report).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Record the quick scripts' requests against both brokers, then mutate them for
/// `seconds`, every request to kafkalite and every `compare_every`-th also to Kafka;
/// the fuzz report (counts and saved cases) as JSON.
#[pyfunction]
#[pyo3(signature = (kafkalite, kafka, seconds, compare_every=10, seed=1))]
pub fn conformance_fuzz(
    py: Python<'_>,
    kafkalite: String,
    kafka: String,
    seconds: f64,
    compare_every: u64,
    seed: u64,
) -> PyResult<String> {
    let duration = std::time::Duration::from_secs_f64(seconds.max(0.0));
    let report = py
        .detach(|| {
            kafkalite_conformance::fuzz::fuzz_from_scripts(
                &kafkalite,
                &kafka,
                duration,
                compare_every,
                seed,
            )
        })
        .map_err(PyRuntimeError::new_err)?;
    serde_json::to_string(&report).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}
