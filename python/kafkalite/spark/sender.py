"""The sink's sending side: encoded record batches go out from a thread of their own, so
a task reads and encodes its next Arrow batch from Spark while the broker writes the
last one (the Rust client releases the GIL while it waits). One thread per task sends in
the order batches were encoded, so each partition's idempotent sequence numbers reach
the broker in order."""

from __future__ import annotations

import queue
import threading
import time

from kafkalite import _core
from kafkalite.errors import KafkaliteError

#: Error codes worth another try: leadership moving, replicas catching up, timeouts.
RETRIABLE = {3, 5, 6, 7, 13, 19, 20, 56, 74, 76}
DUPLICATE_SEQUENCE_NUMBER = 46
RETRY_FOR_S = 60.0
#: Encoded Arrow batches waiting for the sending thread: enough to cover one request in
#: flight, few enough that a task holds little more than one Arrow batch in memory.
QUEUED_MAX = 2

#: (partition, RecordBatch bytes, records) as `_core.encode_arrow_batches` returns them.
Encoded = list[tuple[int, bytes, int]]


class Sender:
    """Produces (topic, encoded batches) items in order on a thread. The first failure
    is raised by the next `send` or by `flush`; later items are dropped."""

    def __init__(self, client: _core.KafkaClient, acks: int) -> None:
        self.client = client
        self.acks = acks
        self.count = 0
        self._items: queue.Queue[tuple[str, Encoded] | None] = queue.Queue(QUEUED_MAX)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kafkalite-sink-send", daemon=True)
        self._thread.start()

    def send(self, topic: str, encoded: Encoded) -> None:
        self._raise_failure()
        self._items.put((topic, encoded))

    def flush(self) -> None:
        """Wait until every batch is written (or the first failure, which is raised)."""
        self.stop()
        self._raise_failure()

    def stop(self) -> None:
        """Let the thread finish what is queued and end; raises nothing."""
        if self._thread.is_alive():
            self._items.put(None)
            self._thread.join()

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while (item := self._items.get()) is not None:
            if self._error is not None:
                continue  # drain, so a task blocked in `send` wakes and sees the failure
            try:
                self._send(*item)
            except BaseException as exc:
                # Raised again in the task's thread, where Spark sees it.
                self._error = exc

    def _send(self, topic: str, encoded: Encoded) -> None:
        """Produce the batches, each partition's in order: one request per leader per
        round, a round taking the first unsent batch of every partition (Kafka answers a
        partition once per request). Batches refused with a retriable code go again with
        the same sequence numbers, so the broker writes each at most once."""
        pending = list(encoded)
        deadline = time.monotonic() + RETRY_FOR_S
        while pending:
            round_: dict[int, tuple[int, bytes, int]] = {}
            for batch in pending:
                round_.setdefault(batch[0], batch)
            try:
                answers = self.client.produce_batches(
                    topic, [(p, data) for p, data, _ in round_.values()], acks=self.acks
                )
            except ConnectionError as exc:
                if time.monotonic() > deadline:
                    raise KafkaliteError(f"producing to {topic} failed: {exc}") from exc
                time.sleep(0.1)
                continue
            failed = False
            for partition, code, _ in answers:
                batch = round_[partition]
                # DUPLICATE_SEQUENCE_NUMBER: an earlier try of this very batch was written.
                if code in (0, DUPLICATE_SEQUENCE_NUMBER):
                    pending.remove(batch)
                    self.count += batch[2]
                elif code not in RETRIABLE or time.monotonic() > deadline:
                    exc = KafkaliteError(
                        f"producing {batch[2]} records to {topic}-{partition} failed "
                        f"with error code {code}"
                    )
                    exc.error_code = code  # type: ignore[attr-defined]
                    raise exc
                else:
                    failed = True
            if failed:
                time.sleep(0.1)
