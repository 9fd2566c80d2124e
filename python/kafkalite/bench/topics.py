"""Topic creation for a bench run, shared by the harness and the Java driver (here, so
neither imports the other)."""

from __future__ import annotations

import time


def create_topics(
    bootstrap: str,
    names: list[str],
    partitions: int,
    replication_factor: int = 1,
    config: dict[str, str] | None = None,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(n, partitions, replication_factor, config=dict(config or {})) for n in names],
        operation_timeout=30,
    )
    for name, fut in futures.items():
        try:
            fut.result(60)
        except Exception as e:
            raise RuntimeError(f"cannot create topic {name}: {e}") from e
    # Wait until metadata shows every partition with a leader (Kafka needs a moment).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=5).topics
        if all(n in md and len(md[n].partitions) == partitions for n in names) and all(
            p.leader >= 0 for n in names for p in md[n].partitions.values()
        ):
            return
        time.sleep(0.2)
    raise RuntimeError(f"topics {names} have no leaders after 30 s")
