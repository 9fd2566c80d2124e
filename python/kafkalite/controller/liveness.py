"""Proof that a broker's process is gone, long before ZooKeeper expires its session.

A crashed broker is observable at once: the kernel closes its sockets, so a connection
held open to its inter-broker listener ends, and a new one is refused (nothing listens on
the port any more). ``LivenessProbe`` holds one idle connection to each broker it is told
to watch; when one ends, it connects again: refused is proof, and ``on_gone`` is called
with the broker and the ZooKeeper session of the registration it proved dead. A timeout
proves nothing (a paused or partitioned broker, an overloaded host): those wait for the
session to expire, as before.

The controller watches every other broker; every other broker watches the controller,
so a dead controller's seat is freed as fast as a dead leader's partitions move.
"""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_log = logging.getLogger("kafkalite.cluster")

# How long a connect may take before it counts as "no answer" (not as proof).
CONNECT_TIMEOUT_S = 1.0
# Between attempts at a broker that did not answer.
RETRY_S = 0.5
# A connection that ends this soon after it was made is tried again after a pause that
# doubles each time (from QUICK_END_RETRY_S up to RETRY_MAX_S), so a broker that closes
# connections at once (a connection limit) is not hammered.
QUICK_END_S = 1.0
QUICK_END_RETRY_S = 0.05
RETRY_MAX_S = 2.0


@dataclass(frozen=True)
class Target:
    broker_id: int
    host: str
    port: int
    # The ZooKeeper session owning the broker's registration: what is proven dead.
    session: int


class LivenessProbe:
    def __init__(self, on_gone: Callable[[Target], None], name: str = "") -> None:
        self._on_gone = on_gone
        self._lock = threading.Lock()
        self._targets: dict[int, Target] = {}
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"kafkalite-liveness{name}", daemon=True
        )

    def start(self) -> LivenessProbe:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._changed.set()
        self._thread.join(5)

    def watch(self, targets: list[Target]) -> None:
        """Watch exactly these (a target whose registration changed is a new one)."""
        wanted = {t.broker_id: t for t in targets}
        with self._lock:
            if wanted == self._targets:
                return
            self._targets = wanted
        self._changed.set()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        held: dict[int, tuple[Target, socket.socket]] = {}
        connected_at: dict[int, float] = {}
        quick_ends: dict[int, int] = {}
        # broker id -> (target, when to try connecting next)
        waiting: dict[int, tuple[Target, float]] = {}
        proven: set[tuple[int, int]] = set()
        try:
            while not self._stopping.is_set():
                if self._changed.is_set():
                    self._changed.clear()
                    with self._lock:
                        targets = dict(self._targets)
                    for b in list(held):
                        if targets.get(b) != held[b][0]:
                            self._drop(sel, held.pop(b)[1])
                    for b in list(waiting):
                        if targets.get(b) != waiting[b][0]:
                            del waiting[b]
                    for b, t in targets.items():
                        if b not in held and b not in waiting:
                            waiting[b] = (t, 0.0)
                now = time.monotonic()
                for b, (t, when) in list(waiting.items()):
                    if when > now or (t.broker_id, t.session) in proven:
                        continue
                    del waiting[b]
                    outcome = self.connect(t)
                    if isinstance(outcome, socket.socket):
                        held[b] = (t, outcome)
                        connected_at[b] = time.monotonic()
                        sel.register(outcome, selectors.EVENT_READ, b)
                    elif outcome == "refused":
                        proven.add((t.broker_id, t.session))
                        self._report(t)
                    else:
                        waiting[b] = (t, time.monotonic() + RETRY_S)
                timeout = 0.2 if waiting else 1.0
                for key, _mask in sel.select(timeout) if held else self._idle(timeout):
                    b = key.data
                    t, sock = held[b]
                    if self._ended(sock):
                        self._drop(sel, held.pop(b)[1])
                        # Connect again at once: refused now is the proof.
                        pause = 0.0
                        if time.monotonic() - connected_at.get(b, 0.0) < QUICK_END_S:
                            quick_ends[b] = quick_ends.get(b, 0) + 1
                            pause = min(QUICK_END_RETRY_S * 2 ** quick_ends[b], RETRY_MAX_S)
                        else:
                            quick_ends.pop(b, None)
                        waiting[b] = (t, time.monotonic() + pause)
        finally:
            for _t, sock in held.values():
                sock.close()
            sel.close()

    def _idle(self, timeout: float) -> list[tuple[selectors.SelectorKey, int]]:
        self._changed.wait(timeout)
        return []

    @staticmethod
    def connect(t: Target) -> socket.socket | str:
        """A connection, or "refused" (proof) or "no answer" (none)."""
        try:
            sock = socket.create_connection((t.host, t.port), timeout=CONNECT_TIMEOUT_S)
        except ConnectionRefusedError:
            return "refused"
        except OSError:
            return "no answer"
        sock.setblocking(False)
        return sock

    @staticmethod
    def _ended(sock: socket.socket) -> bool:
        try:
            return sock.recv(4096) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    @staticmethod
    def _drop(sel: selectors.BaseSelector, sock: socket.socket) -> None:
        try:
            sel.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()

    def _report(self, t: Target) -> None:
        _log.warning(
            "broker %d: its process is gone (connection to %s:%d refused)",
            t.broker_id,
            t.host,
            t.port,
        )
        try:
            self._on_gone(t)
        except Exception:
            _log.exception("broker %d: acting on its end failed", t.broker_id)
