"""``kafkalite broker``: run the broker in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from kafkalite import _core
from kafkalite.broker.properties import broker_settings
from kafkalite.errors import InvalidConfigError

EXIT_CONFIG_ERROR = 2
EXIT_START_FAILED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="server.properties file (Kafka's broker keys)")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key (repeatable)",
    )
    parser.add_argument("--listeners", help="e.g. PLAINTEXT://127.0.0.1:9092")
    parser.add_argument("--log-dirs", help="comma-separated data directories")
    parser.add_argument("--threads", type=int, default=2, help="network/IO worker threads")


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, str] = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"kafkalite broker: --override expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return EXIT_CONFIG_ERROR
        overrides[key.strip()] = value.strip()
    try:
        settings = broker_settings(args.config, overrides, args.listeners, args.log_dirs)
    except OSError as e:
        print(f"kafkalite broker: cannot read config: {e}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = _core.BrokerServer(settings, args.threads)
    except InvalidConfigError as e:
        print(f"kafkalite broker: {e}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except OSError as e:
        print(f"kafkalite broker: failed to start: {e}", file=sys.stderr)
        return EXIT_START_FAILED
    where = ", ".join(f"{name}://{host}:{port}" for name, host, port in server.addresses)
    print(
        f"kafkalite broker started on {where} (log.dirs={settings['log.dirs']})",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(0.5):
        pass
    print("kafkalite broker shutting down", file=sys.stderr, flush=True)
    server.stop()
    return 0
