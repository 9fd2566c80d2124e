"""Reading one offset range: Fetch requests in a loop, each response decoded in Rust into
one Arrow RecordBatch. Python runs per request, never per record."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kafkalite import _core
from kafkalite._core import KafkaClient
from kafkalite.errors import BrokerError, OffsetOutOfRangeError
from kafkalite.spark.arrow import record_batch
from kafkalite.spark.options import EARLIEST, LATEST
from kafkalite.spark.planning import OffsetRange

NONE, OFFSET_OUT_OF_RANGE = 0, OffsetOutOfRangeError.error_code

#: A batch larger than the fetch size is returned whole by the broker (KIP-74) only when it
#: comes first; doubling up to this cap covers the rest.
FETCH_BYTES_MAX = 256 << 20
#: How long to wait for the high watermark to reach the range's end before calling the
#: missing records lost (they were planned, so they existed or were about to).
WAIT_FOR_END_MS = 30_000
WAIT_POLL_MS = 500


def _data_loss(message: str, fail_on_data_loss: bool) -> None:
    if fail_on_data_loss:
        raise OffsetOutOfRangeError(
            f"{message}. Some data may have been lost (deleted by retention or the topic "
            "was recreated); set failOnDataLoss=false to skip it."
        )


def _broker_error(message: str, error_code: int) -> BrokerError:
    err = BrokerError(message)
    err.error_code = error_code
    return err


def _log_bounds(client: KafkaClient, topic: str, partition: int) -> tuple[int, int]:
    """Where the log begins and ends. An OFFSET_OUT_OF_RANGE answer carries -1 for both (as
    Kafka's does), so ask ListOffsets, as a consumer resetting its position does."""
    key = (topic, partition)
    start = client.list_offsets({key: EARLIEST})[key]
    end = client.list_offsets({key: LATEST})[key]
    return start, end


def read_range(
    client: KafkaClient,
    rng: OffsetRange,
    include_headers: bool,
    fail_on_data_loss: bool,
    fetch_bytes: int,
    isolation_level: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Every record of `rng` once, in offset order, as RecordBatches in the source's schema
    (gaps only where compaction removed records; with `isolation_level` 1, also where
    aborted transactions' records and transaction markers lie)."""
    position = rng.start
    waited_polls = 0
    while position < rng.end:
        # After an empty answer, let the broker hold the next fetch until data arrives.
        wait_ms = WAIT_POLL_MS if waited_polls else 0
        fetched = client.fetch(
            rng.topic, rng.partition, position, fetch_bytes, wait_ms, isolation_level
        )
        out_of_range = fetched.error_code == OFFSET_OUT_OF_RANGE
        if out_of_range or (fetched.error_code == NONE and fetched.log_start_offset > position):
            if out_of_range:
                log_start, log_end = _log_bounds(client, rng.topic, rng.partition)
            else:
                log_start, log_end = fetched.log_start_offset, fetched.high_watermark
            _data_loss(
                f"{rng.topic}[{rng.partition}]: offset {position} is out of range "
                f"(log start {log_start}, high watermark {log_end})",
                fail_on_data_loss,
            )
            if log_start <= position:
                return  # the log ends before `position`: nothing left to read
            position = log_start
            continue
        if fetched.error_code != NONE:
            raise _broker_error(
                f"fetch {rng.topic}[{rng.partition}] at offset {position} failed with "
                f"error {fetched.error_code}",
                fetched.error_code,
            )
        columns = _core.decode_arrow_columns(
            fetched.records, position, rng.end, include_headers, fetched.aborted_transactions
        )
        if columns["num_rows"]:
            yield record_batch(columns, rng.topic, rng.partition, include_headers)
        next_offset = columns["next_offset"]
        if next_offset is not None and next_offset > position:
            position = next_offset
            waited_polls = 0
            continue
        if len(fetched.records) and fetch_bytes < FETCH_BYTES_MAX:
            fetch_bytes *= 2  # only a partial batch came back: ask for more bytes
            continue
        # What this reader may see ends at the last stable offset under read_committed.
        visible_end = fetched.last_stable_offset if isolation_level else fetched.high_watermark
        if visible_end > position:
            raise _broker_error(
                f"fetch {rng.topic}[{rng.partition}] at offset {position} returned no "
                f"complete batch below the visible end {visible_end}",
                -1,
            )
        # The range was planned past the current high watermark (a lagging follower, or
        # the log was truncated): wait a bounded time, then call the rest lost.
        waited_polls += 1
        if waited_polls * WAIT_POLL_MS > WAIT_FOR_END_MS:
            _data_loss(
                f"{rng.topic}[{rng.partition}]: records {position}..{rng.end - 1} were "
                f"planned but the log ends at {fetched.high_watermark}",
                fail_on_data_loss,
            )
            return
