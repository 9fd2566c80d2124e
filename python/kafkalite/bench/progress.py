"""A dependency-free progress bar on stderr, driven by estimated phase durations.

Phases run for known times (warm-up, measured seconds), so the bar advances with the clock
inside a phase and snaps to the phase's end when it finishes.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

WIDTH = 30


class Progress:
    def __init__(self, total_s: float, enabled: bool = True) -> None:
        self.total_s = max(total_s, 1.0)
        self.done_s = 0.0
        self.phase = ""
        self.phase_est_s = 0.0
        self.phase_started = time.monotonic()
        self.started = time.monotonic()
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.enabled and self.tty:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        if self.enabled and self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()

    def _fraction(self) -> float:
        inside = min(time.monotonic() - self.phase_started, self.phase_est_s)
        return min(1.0, (self.done_s + inside) / self.total_s)

    def _draw(self) -> None:
        f = self._fraction()
        filled = int(f * WIDTH)
        elapsed = time.monotonic() - self.started
        bar = "#" * filled + "." * (WIDTH - filled)
        line = f"\r[{bar}] {f * 100:3.0f}% {elapsed:5.0f}s {self.phase[:50]:<50}"
        sys.stderr.write(line)
        sys.stderr.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    @contextmanager
    def step(self, name: str, est_s: float) -> Iterator[None]:
        self.phase, self.phase_est_s, self.phase_started = name, est_s, time.monotonic()
        if self.enabled and not self.tty:
            # Not a terminal (CI logs): one line per phase instead of redrawing.
            print(f"[{self._fraction() * 100:3.0f}%] {name}", file=sys.stderr, flush=True)
        try:
            yield
        finally:
            self.done_s += est_s
            if self.enabled and self.tty:
                self._draw()

    def say(self, message: str) -> None:
        """A message above the bar."""
        if self.enabled:
            prefix = "\r" + " " * (WIDTH + 70) + "\r" if self.tty else ""
            print(prefix + message, file=sys.stderr, flush=True)
