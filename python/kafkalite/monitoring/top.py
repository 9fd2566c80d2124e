"""``kafkalite top``: a live view of a broker through its metrics endpoint: bytes and
records in/out per second per topic, and consumer lag per group, redrawn in place every
--interval seconds until q (or Ctrl-C). Not on a terminal (a pipe, a test), it prints
--iterations views one after another."""

from __future__ import annotations

import argparse
import select
import sys
import termios
import time
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from kafkalite.monitoring import scrape

BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
LAG = "kafka_consumergroup_lag"
CONNECTIONS = "kafka_server_socket_server_metrics_connection_count"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    top = sub.add_parser("top", help="live throughput per topic and lag per group of a broker")
    top.add_argument(
        "--url",
        default="http://127.0.0.1:9404/metrics",
        help="the broker's metrics endpoint (its metrics.listen)",
    )
    top.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes")
    top.add_argument(
        "--iterations", type=int, default=0, help="stop after this many refreshes (0: until q)"
    )
    top.set_defaults(func=run)


def rates(before: scrape.Samples, after: scrape.Samples, seconds: float) -> list[list[str]]:
    """Per topic: MiB/s in, records/s in, MiB/s out over the interval."""
    rows = []
    now_in = scrape.by_label(after, BYTES_IN, "topic")
    for (topic,) in sorted(now_in):

        def rate(name: str, topic: str = topic) -> float:
            a = scrape.value(after, name, topic=topic) or 0.0
            b = scrape.value(before, name, topic=topic) or 0.0
            return max(a - b, 0.0) / max(seconds, 1e-9)

        rows.append(
            [
                topic,
                f"{rate(BYTES_IN) / (1 << 20):.2f}",
                f"{rate(MESSAGES_IN):,.0f}",
                f"{rate(BYTES_OUT) / (1 << 20):.2f}",
            ]
        )
    return rows


def lags(samples: scrape.Samples) -> list[list[str]]:
    """Per group: total lag and the partitions it spans."""
    per_group: dict[str, tuple[float, int]] = {}
    for (group, _topic, _partition), lag in scrape.by_label(
        samples, LAG, "consumergroup", "topic", "partition"
    ).items():
        total, n = per_group.get(group, (0.0, 0))
        per_group[group] = (total + lag, n + 1)
    return [[g, f"{int(t):,}", str(n)] for g, (t, n) in sorted(per_group.items())]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [line.format(*header), *(line.format(*r) for r in rows)]


def view(url: str, before: scrape.Samples, after: scrape.Samples, seconds: float) -> str:
    connections = sum(scrape.by_label(after, CONNECTIONS, "listener").values())
    lines = [
        f"kafkalite top  {url}  {time.strftime('%H:%M:%S')}  "
        f"connections {int(connections)}  (q quits)",
        "",
        *table(["topic", "MiB/s in", "records/s in", "MiB/s out"], rates(before, after, seconds)),
        "",
        *table(["group", "lag", "partitions"], lags(after)),
    ]
    return "\n".join(lines)


@contextmanager
def keys(stream: TextIO) -> Iterator[bool]:
    """Single key presses from a terminal (yields True), or nothing to read (False)."""
    if not stream.isatty():
        yield False
        return
    saved = termios.tcgetattr(stream)
    try:
        tty.setcbreak(stream)
        yield True
    finally:
        termios.tcsetattr(stream, termios.TCSADRAIN, saved)


def quit_pressed(stream: TextIO, wait: float) -> bool:
    ready, _, _ = select.select([stream], [], [], wait)
    return bool(ready) and stream.read(1).lower() == "q"


def run(args: argparse.Namespace) -> int:
    try:
        before = scrape.fetch(args.url)
    except OSError as e:
        print(f"kafkalite top: cannot read {args.url}: {e}", file=sys.stderr)
        return 1
    shown = 0
    last = time.monotonic()
    with keys(sys.stdin) as interactive:
        try:
            while args.iterations == 0 or shown < args.iterations:
                if interactive:
                    if quit_pressed(sys.stdin, args.interval):
                        return 0
                else:
                    time.sleep(args.interval)
                after = scrape.fetch(args.url)
                now = time.monotonic()
                text = view(args.url, before, after, now - last)
                # Redraw in place on a terminal: home, clear, draw.
                sys.stdout.write(("\x1b[H\x1b[2J" if interactive else "") + text + "\n")
                sys.stdout.flush()
                before, last, shown = after, now, shown + 1
        except KeyboardInterrupt:
            return 0
        except OSError as e:
            print(f"kafkalite top: lost {args.url}: {e}", file=sys.stderr)
            return 1
    return 0
