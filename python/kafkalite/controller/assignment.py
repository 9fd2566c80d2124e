"""Replica assignment for new topics and partitions, as Kafka's ``AdminUtils`` does it:
round-robin from a random start with a shifting gap between a partition's replicas, and,
when every broker has a rack, a broker list alternating racks so each partition's
replicas land on as many racks as possible."""

from __future__ import annotations

import random
from collections.abc import Mapping


class AssignmentError(ValueError):
    """The assignment cannot be made; ``code_name`` is Kafka's error for it."""

    def __init__(self, code_name: str, message: str) -> None:
        super().__init__(message)
        self.code_name = code_name


def _replica_index(first: int, shift: int, index: int, n: int) -> int:
    return (first + 1 + (shift + index) % (n - 1)) % n


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered rack by rack: first of rack a, first of rack b, ... then seconds."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    names = sorted(by_rack)
    out: list[int] = []
    depth = 0
    while len(out) < len(racks):
        for rack in names:
            if depth < len(by_rack[rack]):
                out.append(by_rack[rack][depth])
        depth += 1
    return out


def assign(
    partitions: int,
    replication_factor: int,
    brokers: Mapping[int, str | None],
    *,
    start_index: int = -1,
    start_partition: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition -> replicas (first is the preferred leader) over ``brokers`` (id -> rack)."""
    if partitions <= 0:
        raise AssignmentError("INVALID_PARTITIONS", "number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise AssignmentError(
            "INVALID_REPLICATION_FACTOR", "replication factor must be larger than 0"
        )
    if replication_factor > len(brokers):
        raise AssignmentError(
            "INVALID_REPLICATION_FACTOR",
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered or some brokers have all their log "
            "directories cordoned.",
        )
    with_rack = {b: r for b, r in brokers.items() if r is not None}
    if with_rack and len(with_rack) != len(brokers):
        raise AssignmentError(
            "INVALID_REPLICA_ASSIGNMENT",
            "Not all brokers have rack information for replica rack aware assignment.",
        )
    rng = rng or random.Random()
    ordered = rack_alternated(with_rack) if with_rack else sorted(brokers)
    n = len(ordered)
    n_racks = len(set(with_rack.values())) if with_rack else 1
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    partition = max(0, start_partition)
    out: dict[int, list[int]] = {}
    for _ in range(partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        replicas = [ordered[first]]
        if not with_rack:
            replicas += [
                ordered[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)
            ]
        else:
            racks_used = {with_rack[ordered[first]]}
            k = 0
            while len(replicas) < replication_factor:
                broker = ordered[_replica_index(first, shift * n_racks, k, n)]
                rack = with_rack[broker]
                k += 1
                if (rack not in racks_used or len(racks_used) == n_racks) and (
                    broker not in replicas or len(replicas) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
        out[partition] = replicas
        partition += 1
    return out


def check_manual(assignment: Mapping[int, list[int]], live: set[int]) -> None:
    """A client's own assignment: known brokers, no broker twice, one replication factor."""
    factors = {len(r) for r in assignment.values()}
    if len(factors) > 1:
        raise AssignmentError(
            "INVALID_REPLICA_ASSIGNMENT", "All partitions should have the same number of replicas"
        )
    for partition, replicas in assignment.items():
        if not replicas:
            raise AssignmentError(
                "INVALID_REPLICA_ASSIGNMENT",
                f"partition {partition} has an empty replica list",
            )
        if len(set(replicas)) != len(replicas):
            raise AssignmentError(
                "INVALID_REPLICA_ASSIGNMENT",
                f"Duplicate brokers not allowed in replica assignment: {replicas} "
                f"for partition id {partition}.",
            )
        unknown = sorted(set(replicas) - live)
        if unknown:
            raise AssignmentError(
                "INVALID_REPLICA_ASSIGNMENT",
                f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
            )
