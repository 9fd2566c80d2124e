"""The share-state APIs (KIP-932) a partition leader uses to keep its share-partitions'
state at the share coordinator, sent as hand-built frames: InitializeShareGroupState,
WriteShareGroupState v1 (merged into the stored state as Kafka's share coordinator merges
it, a stale state epoch fenced), ReadShareGroupState, ReadShareGroupStateSummary v1 and
DeleteShareGroupState."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from tests.broker import rawproto

FENCED_STATE_EPOCH = 124
TOPIC = uuid.uuid4().bytes


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(log_dirs=tmp_path / "data") as b:
        yield b


def _s(text: str) -> bytes:
    raw = text.encode()
    return rawproto.uvarint(len(raw) + 1) + raw


def _array(items: list[bytes]) -> bytes:
    return rawproto.uvarint(len(items) + 1) + b"".join(items)


def _call(bs: str, key: int, version: int, body: bytes) -> bytes:
    sock = rawproto.connect(bs)
    try:
        sock.sendall(rawproto.frame(rawproto.header_v2(key, version, 9) + body))
        return rawproto.read_frame(sock)[5:]  # correlation id, header tags
    finally:
        sock.close()


def _partitions(group: str, partition: bytes) -> bytes:
    return _s(group) + _array([TOPIC + _array([partition + b"\x00"]) + b"\x00"]) + b"\x00"


def _write(bs: str, state_epoch: int, start: int, batches: list[tuple[int, int, int, int]]) -> int:
    encoded = [struct.pack(">qqbh", *b) + b"\x00" for b in batches]
    partition = struct.pack(">iiiqi", 0, state_epoch, 0, start, -1) + _array(encoded)
    answer = _call(bs, 85, 1, _partitions("g", partition))
    # results[1] topic id, partitions[1]: partition, error code
    return struct.unpack(">h", answer[1 + 16 + 1 + 4 : 1 + 16 + 1 + 4 + 2])[0]


def _read(bs: str) -> tuple[int, int, int, list[tuple[int, int, int, int]]]:
    answer = _call(bs, 84, 0, _partitions("g", struct.pack(">ii", 0, 0)))
    at = 1 + 16 + 1 + 4
    error = struct.unpack(">h", answer[at : at + 2])[0]
    at += 2
    at += 1 if answer[at] == 0 else answer[at]  # error message (compact, small)
    state_epoch, start = struct.unpack(">iq", answer[at : at + 12])
    at += 12
    count = answer[at] - 1
    at += 1
    batches = []
    for _ in range(count):
        batches.append(struct.unpack(">qqbh", answer[at : at + 19]))
        at += 20
    return error, state_epoch, start, batches


def test_state_is_initialized_merged_fenced_summarized_and_deleted(broker: Broker) -> None:
    bs = broker.bootstrap_servers
    init = _partitions("g", struct.pack(">iiq", 0, 1, 5))
    answer = _call(bs, 83, 0, init)
    assert struct.unpack(">h", answer[1 + 16 + 1 + 4 : 1 + 16 + 1 + 6])[0] == 0
    assert _read(bs) == (0, 1, 5, [])
    assert _write(bs, 1, 5, [(5, 6, 2, 1), (7, 7, 0, 2)]) == 0
    # A later write moves the start and overrides offset 7: the stored state is merged.
    assert _write(bs, 1, 6, [(7, 7, 4, 3)]) == 0
    assert _read(bs) == (0, 1, 6, [(6, 6, 2, 1), (7, 7, 4, 3)])
    assert _write(bs, 0, 6, []) == FENCED_STATE_EPOCH
    summary = _call(bs, 87, 1, _partitions("g", struct.pack(">ii", 0, 0)))
    at = 1 + 16 + 1 + 4
    assert struct.unpack(">h", summary[at : at + 2])[0] == 0
    at += 3  # error code, null message
    # state epoch, leader epoch, start offset, delivery complete count
    assert struct.unpack(">iiqi", summary[at : at + 20])[:3] == (1, 0, 6)
    _call(bs, 86, 0, _partitions("g", struct.pack(">i", 0)))
    assert _read(bs) == (0, 0, -1, [])
