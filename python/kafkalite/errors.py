"""The KafkaliteError family. Classes are created in Rust so the storage core raises them
directly; each has an ``error_code`` attribute holding the Kafka protocol error code."""

from kafkalite._core import (
    BrokerError,
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaliteError,
    KafkaStorageError,
    LogDirInUseError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    UnsupportedCompressionTypeError,
)

__all__ = [
    "BrokerError",
    "CorruptRecordError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "KafkaStorageError",
    "KafkaliteError",
    "LogDirInUseError",
    "MessageTooLargeError",
    "OffsetOutOfRangeError",
    "UnsupportedCompressionTypeError",
]
