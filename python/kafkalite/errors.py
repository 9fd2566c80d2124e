"""The KafkaliteError family. Classes are created in Rust so the storage core raises them
directly; each has an ``error_code`` attribute holding the Kafka protocol error code."""

from kafkalite._core import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaliteError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    UnsupportedCompressionTypeError,
)

__all__ = [
    "CorruptRecordError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "KafkaStorageError",
    "KafkaliteError",
    "MessageTooLargeError",
    "OffsetOutOfRangeError",
    "UnsupportedCompressionTypeError",
]
