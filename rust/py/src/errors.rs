//! The `KafkaliteError` family, created here so Rust failures surface as typed Python
//! exceptions; each subclass carries the Kafka error code it mirrors as `error_code`.

use kafkalite_core::Error;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    kafkalite._core,
    KafkaliteError,
    PyException,
    "Base of every kafkalite error."
);
create_exception!(
    kafkalite._core,
    OffsetOutOfRangeError,
    KafkaliteError,
    "OFFSET_OUT_OF_RANGE (1)."
);
create_exception!(
    kafkalite._core,
    CorruptRecordError,
    KafkaliteError,
    "CORRUPT_MESSAGE (2)."
);
create_exception!(
    kafkalite._core,
    MessageTooLargeError,
    KafkaliteError,
    "MESSAGE_TOO_LARGE (10)."
);
create_exception!(
    kafkalite._core,
    InvalidTimestampError,
    KafkaliteError,
    "INVALID_TIMESTAMP (32)."
);
create_exception!(
    kafkalite._core,
    InvalidConfigError,
    KafkaliteError,
    "INVALID_CONFIG (40)."
);
create_exception!(
    kafkalite._core,
    KafkaStorageError,
    KafkaliteError,
    "KAFKA_STORAGE_ERROR (56)."
);
create_exception!(
    kafkalite._core,
    UnsupportedCompressionTypeError,
    KafkaliteError,
    "UNSUPPORTED_COMPRESSION_TYPE (76)."
);
create_exception!(
    kafkalite._core,
    InvalidRecordError,
    KafkaliteError,
    "INVALID_RECORD (87)."
);

/// Wrap a core error for `?` in binding code.
pub struct CoreError(pub Error);

impl From<Error> for CoreError {
    fn from(e: Error) -> Self {
        CoreError(e)
    }
}

impl From<CoreError> for PyErr {
    fn from(CoreError(e): CoreError) -> PyErr {
        let msg = e.to_string();
        match e {
            Error::OffsetOutOfRange { .. } => OffsetOutOfRangeError::new_err(msg),
            Error::CorruptRecord(_) => CorruptRecordError::new_err(msg),
            Error::MessageTooLarge { .. } => MessageTooLargeError::new_err(msg),
            Error::InvalidTimestamp(_) => InvalidTimestampError::new_err(msg),
            Error::InvalidConfig { .. } => InvalidConfigError::new_err(msg),
            Error::Closed | Error::Io(_) => KafkaStorageError::new_err(msg),
            Error::UnsupportedCompression(_) => UnsupportedCompressionTypeError::new_err(msg),
            Error::InvalidRecord(_) | Error::KeylessRecords { .. } => {
                InvalidRecordError::new_err(msg)
            }
        }
    }
}

pub fn register(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    let family: [(&str, Bound<'_, pyo3::types::PyType>, i16); 9] = [
        ("KafkaliteError", py.get_type::<KafkaliteError>(), -1),
        (
            "OffsetOutOfRangeError",
            py.get_type::<OffsetOutOfRangeError>(),
            1,
        ),
        ("CorruptRecordError", py.get_type::<CorruptRecordError>(), 2),
        (
            "MessageTooLargeError",
            py.get_type::<MessageTooLargeError>(),
            10,
        ),
        (
            "InvalidTimestampError",
            py.get_type::<InvalidTimestampError>(),
            32,
        ),
        (
            "InvalidConfigError",
            py.get_type::<InvalidConfigError>(),
            40,
        ),
        ("KafkaStorageError", py.get_type::<KafkaStorageError>(), 56),
        (
            "UnsupportedCompressionTypeError",
            py.get_type::<UnsupportedCompressionTypeError>(),
            76,
        ),
        (
            "InvalidRecordError",
            py.get_type::<InvalidRecordError>(),
            87,
        ),
    ];
    for (name, ty, code) in family {
        ty.setattr("error_code", code)?;
        m.add(name, ty)?;
    }
    Ok(())
}
