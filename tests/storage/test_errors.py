from __future__ import annotations

import pytest

from kafkalite import _core, errors

# Each class of the family and the Kafka protocol error code it mirrors.
FAMILY = {
    "OffsetOutOfRangeError": 1,
    "CorruptRecordError": 2,
    "MessageTooLargeError": 10,
    "InvalidTimestampError": 32,
    "InvalidConfigError": 40,
    "KafkaStorageError": 56,
    "UnsupportedCompressionTypeError": 76,
    "InvalidRecordError": 87,
}


@pytest.mark.parametrize(("name", "code"), sorted(FAMILY.items()))
def test_each_class_carries_its_kafka_code(name: str, code: int) -> None:
    cls = getattr(errors, name)
    assert cls is getattr(_core, name)
    assert issubclass(cls, errors.KafkaliteError)
    assert cls.error_code == code
    assert cls.__module__ == "kafkalite._core"
    assert cls.__name__ == name
    assert f"({code})" in (cls.__doc__ or "")


def test_base_class() -> None:
    assert issubclass(errors.KafkaliteError, Exception)
    assert errors.KafkaliteError.error_code == -1
    others = {"KafkaliteError", "BrokerError", "LogDirInUseError"}
    assert sorted(n for n in errors.__all__ if n not in others) == sorted(FAMILY)


def test_classes_beside_the_code_family() -> None:
    # Codes no subclass mirrors: the code is on the instance, -1 on the class.
    assert issubclass(errors.BrokerError, errors.KafkaliteError)
    assert errors.BrokerError.error_code == -1
    # A held log dir is a storage error that daemons also catch as OSError.
    assert issubclass(errors.LogDirInUseError, errors.KafkaStorageError)
    assert issubclass(errors.LogDirInUseError, OSError)
    assert errors.LogDirInUseError.__module__ == "kafkalite._core"


def test_core_failures_raise_the_class_of_their_code(tmp_path) -> None:
    with pytest.raises(errors.InvalidConfigError) as info:
        _core.PartitionLog(tmp_path / "p", {"segment.bytes": "nope"})
    assert info.value.error_code == 40
