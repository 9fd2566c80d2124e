"""Poison pills and decompression bombs: a batch whose CRC and header agree but whose records
are garbage is refused with Kafka's error (CORRUPT_MESSAGE for data invalid in its codec,
INVALID_RECORD for records that do not parse or inflate past the broker's cap), by real
clients producing them, and the log is left exactly as it was."""

from __future__ import annotations

import gzip
import struct

import pytest
from confluent_kafka import KafkaError, Producer

from kafkalite import Broker, _core, errors
from tests.faults.conftest import consume_values, create_topic, log_end

CORRUPT_MESSAGE, INVALID_RECORD = 2, 87
ATTRIBUTES, RECORDS = 21, 61
CAP = 4 << 20


def restamp(batch: bytearray) -> bytes:
    """Recompute the CRC, as a buggy client writes one over whatever it built."""
    struct.pack_into(">I", batch, 17, _core.crc32c(bytes(batch[ATTRIBUTES:])))
    return bytes(batch)


def with_codec_flag(batch: bytearray, codec: int) -> bytearray:
    attributes = struct.unpack_from(">h", batch, ATTRIBUTES)[0]
    struct.pack_into(">h", batch, ATTRIBUTES, (attributes & ~7) | codec)
    return batch


def fill(value: int):  # type: ignore[no-untyped-def]
    def poison(batch: bytearray) -> bytearray:
        batch[RECORDS:] = bytes([value]) * (len(batch) - RECORDS)
        return batch

    return poison


def codec_flag(codec: int):  # type: ignore[no-untyped-def]
    return lambda batch: with_codec_flag(batch, codec)


def gzip_of_zeros(batch: bytearray) -> bytearray:
    body = gzip.compress(b"\0" * 4096)
    batch[RECORDS:] = body
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    return with_codec_flag(batch, 1)


def count_above_records(batch: bytearray) -> bytearray:
    (count,) = struct.unpack_from(">i", batch, 57)
    struct.pack_into(">i", batch, 23, count)  # last offset delta
    struct.pack_into(">i", batch, 57, count + 1)
    return batch


POISONS = {
    "zeroed records": (fill(0x00), {INVALID_RECORD}),
    "0xff records": (fill(0xFF), {INVALID_RECORD}),
    "gzip flag on plain records": (codec_flag(1), {CORRUPT_MESSAGE}),
    "lz4 flag on plain records": (codec_flag(3), {CORRUPT_MESSAGE}),
    "zstd flag on plain records": (codec_flag(4), {CORRUPT_MESSAGE}),
    # Raw snappy has no magic: garbage may decode into garbage records.
    "snappy flag on plain records": (codec_flag(2), {CORRUPT_MESSAGE, INVALID_RECORD}),
    "gzip of zeros": (gzip_of_zeros, {INVALID_RECORD}),
    "count above the records": (count_above_records, {INVALID_RECORD}),
}

GOOD = [(b"k%d" % i, b"value-%d" % i) for i in range(3)]


@pytest.mark.parametrize("kind", list(POISONS))
def test_core_client_poison_is_refused_and_the_log_unchanged(broker: Broker, kind: str) -> None:
    poison, codes = POISONS[kind]
    create_topic(broker.bootstrap_servers, "t")
    with _core.KafkaClient(broker.bootstrap_servers) as client:
        client.produce("t", 0, _core.build_batch(GOOD))
        bad = restamp(poison(bytearray(_core.build_batch(GOOD))))
        with pytest.raises(errors.KafkaliteError) as refused:
            client.produce("t", 0, bad)
        assert refused.value.error_code in codes, refused.value
        assert client.produce("t", 0, _core.build_batch(GOOD)).base_offset == 3
    assert log_end(broker.bootstrap_servers, "t") == 6
    got = consume_values(broker.bootstrap_servers, "t", 6)
    assert got == [(i, v) for i, (_, v) in enumerate(GOOD * 2)]


KAFKA_PYTHON_POISONS = [
    "zeroed records",
    "0xff records",
    "gzip flag on plain records",
    "count above the records",
]


@pytest.mark.parametrize("kind", KAFKA_PYTHON_POISONS)
def test_kafka_python_producing_garbage_gets_the_error(
    broker: Broker, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-python's own producer, its batch builder made to write garbage records under a
    correct CRC (what a buggy or hostile client does)."""
    from kafka import KafkaProducer
    from kafka.errors import CorruptRecordError, InvalidRecordError
    from kafka.record.default_records import DefaultRecordBatchBuilder

    poison, codes = POISONS[kind]
    create_topic(broker.bootstrap_servers, "t")
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, acks=1, retries=0, linger_ms=0
    )
    try:
        producer.send("t", key=b"ok", value=b"before").get(timeout=10)
        build = DefaultRecordBatchBuilder.build

        def poisoned(self: DefaultRecordBatchBuilder) -> bytearray:
            out = bytearray(restamp(poison(bytearray(build(self)))))
            self._buffer[:] = out
            return self._buffer

        monkeypatch.setattr(DefaultRecordBatchBuilder, "build", poisoned)
        with pytest.raises((CorruptRecordError, InvalidRecordError)) as refused:
            producer.send("t", key=b"k", value=b"poison " * 10).get(timeout=10)
        assert refused.value.errno in codes
        monkeypatch.setattr(DefaultRecordBatchBuilder, "build", build)
        producer.send("t", key=b"ok", value=b"after").get(timeout=10)
    finally:
        producer.close(timeout=5)
    assert consume_values(broker.bootstrap_servers, "t", 2) == [(0, b"before"), (1, b"after")]
    assert log_end(broker.bootstrap_servers, "t") == 2


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_decompression_bomb_is_refused(tmp_path, codec: str) -> None:  # type: ignore[no-untyped-def]
    """librdkafka compresses 8 MiB of zeros into a few KiB; with the broker's cap at 4 MiB it
    is INVALID_RECORD, while 3 MiB of zeros under the same cap is stored."""
    config = {"kafkalite.batch.decompressed.max.bytes": CAP}
    with Broker(log_dirs=tmp_path / "data", config=config) as broker:
        create_topic(broker.bootstrap_servers, "t")
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "compression.type": codec,
                "message.max.bytes": 16 << 20,
                "linger.ms": 0,
                "retries": 0,
            }
        )
        results: list[KafkaError | None] = []

        def report(err, _msg) -> None:  # type: ignore[no-untyped-def]
            results.append(err)

        for size in (3 << 20, 8 << 20):
            producer.produce("t", b"\0" * size, on_delivery=report)
            assert producer.flush(30) == 0
        assert results[0] is None, results[0]
        assert results[1] is not None and results[1].code() == KafkaError.INVALID_RECORD, results
        assert log_end(broker.bootstrap_servers, "t") == 1
