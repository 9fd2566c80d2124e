"""A consume-transform-produce process for the exactly-once test: reads `in` in a group,
writes each value upper-cased to `out` and commits its input offsets inside the same
transaction (send_offsets_to_transaction). The test SIGKILLs it at random moments.

Usage: python -m tests.transactions.eos_worker BOOTSTRAP
"""

from __future__ import annotations

import sys

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def main(bootstrap: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "eos-worker", "linger.ms": 5}
    )
    producer.init_transactions(30)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "eos",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # Static membership: a restarted instance takes the killed one's place at
            # once instead of waiting for its session to expire.
            "group.instance.id": "eos-worker-1",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe(["in"])
    while True:
        batch = consumer.consume(50, 0.5)
        batch = [m for m in batch if not m.error()]
        if not batch:
            continue
        producer.begin_transaction()
        for m in batch:
            producer.produce("out", key=m.key(), value=m.value().upper(), partition=m.partition())
        positions = {}
        for m in batch:
            positions[(m.topic(), m.partition())] = m.offset() + 1
        offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        try:
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        except Exception as e:
            err = e.args[0] if e.args else None
            if isinstance(err, KafkaError) and err.txn_requires_abort():
                producer.abort_transaction(30)
                for tp in offsets:
                    # Rewind to the last committed position.
                    consumer.seek(
                        TopicPartition(
                            tp.topic,
                            tp.partition,
                            min(m.offset() for m in batch if m.partition() == tp.partition),
                        )
                    )
                continue
            raise
        print("committed", len(batch), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
