"""The ``kafkalite`` command: the broker daemon, Kafka-style client verbs, benchmarks."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from kafkalite import (
    _core,
    client_cli,
    cluster_cli,
    configs_cli,
    group_cli,
    log_cli,
    security_cli,
)
from kafkalite.bench import cli as bench_cli
from kafkalite.broker import daemon
from kafkalite.conformance import cli as conformance_cli
from kafkalite.monitoring import top


def _demo(args: argparse.Namespace) -> int:
    """Write a partition log and read every record back: a smoke test of the storage core."""
    with tempfile.TemporaryDirectory(prefix="kafkalite-demo-") as tmp:
        log_dir = Path(args.log_dir) if args.log_dir else Path(tmp) / "demo-0"
        log = _core.PartitionLog(log_dir, {"segment.bytes": args.segment_bytes})
        value = b"x" * args.record_bytes
        started = time.perf_counter()
        for i in range(args.batches):
            records = [(f"key-{i}-{j}".encode(), value) for j in range(args.records_per_batch)]
            batch = bytearray(_core.build_batch(records, compression=args.compression))
            log.append(batch)
        written = time.perf_counter() - started
        offset, seen = 0, 0
        while True:
            chunk = log.read(offset, max_bytes=4 << 20)
            if not chunk:
                break
            decoded = _core.decode_batches(chunk)
            for rec_offset, _ts, _key, rec_value, _headers in decoded:
                if rec_offset < offset:
                    continue
                if rec_offset != seen or rec_value != value:
                    print(
                        f"demo: record {seen} read back wrong (offset {rec_offset})",
                        file=sys.stderr,
                    )
                    return 1
                seen += 1
            offset = decoded[-1][0] + 1
        total = args.batches * args.records_per_batch
        print(
            f"wrote {total} records in {args.batches} batches to {log_dir} "
            f"({len(log.segment_base_offsets)} segments, {log.size_bytes} bytes) "
            f"in {written * 1000:.1f} ms using {_core.io_engine()}; read back {seen} records intact"
        )
        log.close()
        return 0 if seen == total else 1


DESCRIPTION = """\
kafkalite is a Kafka-compatible commit log that any Kafka client can use, served in Rust
and installed with pip. This command runs a broker (or a local cluster) and talks to it.
"""

EPILOG = """\
Run `kafkalite COMMAND --help` for a command's options. Client commands talk to
127.0.0.1:9092 unless given -b HOST:PORT.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkalite",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=_core.__version__, help="print the version"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    broker = sub.add_parser("broker", help="run a broker in the foreground")
    daemon.add_arguments(broker)
    broker.set_defaults(func=daemon.run)
    client_cli.add_parsers(sub)
    group_cli.add_parsers(sub)
    security_cli.add_parsers(sub)
    cluster_cli.add_parsers(sub)
    configs_cli.add_parsers(sub)
    log_cli.add_parsers(sub)
    top.add_parser(sub)
    bench_cli.register(sub)
    conformance_cli.register(sub)
    demo = sub.add_parser("demo", help="write a partition log and read it back (no broker)")
    demo.add_argument("--log-dir", help="partition directory (default: a temporary one)")
    demo.add_argument("--batches", type=int, default=200, help="batches to append (default: 200)")
    demo.add_argument(
        "--records-per-batch", type=int, default=100, help="records per batch (default: 100)"
    )
    demo.add_argument(
        "--record-bytes", type=int, default=1024, help="bytes per record value (default: 1024)"
    )
    demo.add_argument(
        "--segment-bytes",
        type=int,
        default=8 << 20,
        help="roll to a new segment at this size (default: 8 MiB)",
    )
    demo.add_argument(
        "--compression",
        default="none",
        choices=client_cli.COMPRESSIONS,
        help="batch compression codec (default: none)",
    )
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
