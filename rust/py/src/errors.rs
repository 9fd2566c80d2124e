//! The `KafkaliteError` family, created from one table so Rust failures surface as typed
//! Python exceptions. Each subclass mirrors one Kafka error code (named in the core's
//! `error_codes`) and carries it as `error_code`; a core error becomes the class of its
//! `Error::kafka_code`, so there is no second mapping to keep in step.

use std::ffi::CString;

use kafkalite_core::error_codes as codes;
use kafkalite_core::Error;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// Python class name (the public API of `kafkalite.errors`) and the Kafka code it mirrors.
const FAMILY: &[(&str, i16)] = &[
    ("OffsetOutOfRangeError", codes::OFFSET_OUT_OF_RANGE),
    ("CorruptRecordError", codes::CORRUPT_MESSAGE),
    ("MessageTooLargeError", codes::MESSAGE_TOO_LARGE),
    ("InvalidTimestampError", codes::INVALID_TIMESTAMP),
    ("InvalidConfigError", codes::INVALID_CONFIG),
    ("KafkaStorageError", codes::KAFKA_STORAGE_ERROR),
    (
        "UnsupportedCompressionTypeError",
        codes::UNSUPPORTED_COMPRESSION_TYPE,
    ),
    ("InvalidRecordError", codes::INVALID_RECORD),
];
const BASE: &str = "KafkaliteError";
const BROKER_ERROR: &str = "BrokerError";
/// `error_code` of the base class: Kafka's UNKNOWN_SERVER_ERROR.
const BASE_CODE: i16 = codes::UNKNOWN_SERVER_ERROR;

struct Family {
    base: Py<PyType>,
    /// For codes no subclass mirrors (the instance's `error_code` says which).
    broker_error: Py<PyType>,
    by_code: Vec<(i16, &'static str, Py<PyType>)>,
}

static TYPES: PyOnceLock<Family> = PyOnceLock::new();

fn new_class(
    py: Python<'_>,
    name: &str,
    doc: &str,
    base: Option<&Bound<'_, PyType>>,
    code: i16,
) -> PyResult<Py<PyType>> {
    let qualified = CString::new(format!("kafkalite._core.{name}")).expect("no NUL in names");
    let doc = CString::new(doc).expect("no NUL in docs");
    let base = match base {
        Some(b) => b.clone(),
        None => py.get_type::<pyo3::exceptions::PyException>(),
    };
    let ty = PyErr::new_type(py, &qualified, Some(&doc), Some(&base), None)?;
    ty.bind(py).setattr("error_code", code)?;
    Ok(ty)
}

fn family(py: Python<'_>) -> PyResult<&'static Family> {
    TYPES.get_or_try_init(py, || {
        let base = new_class(py, BASE, "Base of every kafkalite error.", None, BASE_CODE)?;
        let by_code = FAMILY
            .iter()
            .map(|&(name, code)| {
                let kafka_name = codes::name(code).expect("family codes are in the table");
                let doc = format!("{kafka_name} ({code}).");
                new_class(py, name, &doc, Some(base.bind(py)), code).map(|ty| (code, name, ty))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let broker_error = new_class(
            py,
            BROKER_ERROR,
            "A Kafka error code no subclass mirrors (its code is the instance's `error_code`), \
             or a broker that broke the protocol (`error_code` -1).",
            Some(base.bind(py)),
            BASE_CODE,
        )?;
        Ok(Family {
            base,
            broker_error,
            by_code,
        })
    })
}

/// A Python exception of the class mirroring Kafka error `code` (`BrokerError` for codes
/// without one of their own), with `error_code` set on the instance too.
pub fn kafka_error(code: i16, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match family(py) {
        Ok(f) => {
            let ty = f
                .by_code
                .iter()
                .find(|(c, _, _)| *c == code)
                .map_or(&f.broker_error, |(_, _, ty)| ty);
            let err = PyErr::from_type(ty.bind(py).clone(), message);
            match err.value(py).setattr("error_code", code) {
                Ok(()) => err,
                Err(e) => e,
            }
        }
        Err(e) => e,
    })
}

static LOG_DIR_IN_USE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `LogDirInUseError(KafkaStorageError, OSError)`: a storage error of the family that is
/// also the OSError it was when Python took the lock itself, so `except OSError` (the
/// daemon's "failed to start") still catches it. Built with `type()` because it has two
/// bases.
fn log_dir_in_use_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    LOG_DIR_IN_USE
        .get_or_try_init(py, || {
            let storage = family(py)?
                .by_code
                .iter()
                .find(|(c, _, _)| *c == codes::KAFKA_STORAGE_ERROR)
                .map(|(_, _, ty)| ty.bind(py).clone())
                .expect("KafkaStorageError is in the family");
            let bases = PyTuple::new(py, [storage, py.get_type::<PyOSError>()])?;
            let namespace = PyDict::new(py);
            namespace.set_item("__module__", "kafkalite._core")?;
            namespace.set_item(
                "__doc__",
                "Another broker or process holds the log dir's `.lock` (KAFKA_STORAGE_ERROR, 56).",
            )?;
            let ty = py
                .get_type::<PyType>()
                .call1(("LogDirInUseError", bases, namespace))?
                .downcast_into::<PyType>()?;
            Ok::<_, PyErr>(ty.unbind())
        })
        .map(|ty| ty.bind(py))
}

/// Wrap a core error for `?` in binding code.
pub struct CoreError(pub Error);

impl From<Error> for CoreError {
    fn from(e: Error) -> Self {
        CoreError(e)
    }
}

impl From<CoreError> for PyErr {
    fn from(CoreError(e): CoreError) -> PyErr {
        if let Error::LogDirInUse { .. } = e {
            let message = e.to_string();
            return Python::attach(|py| match log_dir_in_use_type(py) {
                Ok(ty) => PyErr::from_type(ty.clone(), message),
                Err(e) => e,
            });
        }
        kafka_error(e.kafka_code(), e.to_string())
    }
}

pub fn register(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    let f = family(py)?;
    m.add(BASE, f.base.bind(py))?;
    m.add(BROKER_ERROR, f.broker_error.bind(py))?;
    for (_, name, ty) in &f.by_code {
        m.add(*name, ty.bind(py))?;
    }
    m.add("LogDirInUseError", log_dir_in_use_type(py)?)?;
    Ok(())
}
