"""``kafkalite broker``: run the broker in the foreground until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING

from kafkalite.broker.embedded import Broker
from kafkalite.broker.properties import broker_settings, validate_settings
from kafkalite.errors import InvalidConfigError

if TYPE_CHECKING:
    from kafkalite.controller.node import ClusterNode

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
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"],
        help="broker log threshold, as the log.level key (default: INFO)",
    )


class _NoClusterError(Exception):
    """Never raised: stands for ClusterStartError when no cluster is configured."""


def _say(message: str) -> None:
    print(f"kafkalite broker: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, str] = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            _say(f"--override expects KEY=VALUE, got {item!r}")
            return EXIT_CONFIG_ERROR
        overrides[key.strip()] = value.strip()
    if args.log_level:
        overrides["log.level"] = args.log_level
    if args.threads < 1:
        _say(f"--threads must be at least 1, got {args.threads}")
        return EXIT_CONFIG_ERROR
    try:
        settings = broker_settings(args.config, overrides, args.listeners, args.log_dirs)
        warnings = validate_settings(settings)
    except OSError as e:
        _say(f"cannot read config: {e}")
        return EXIT_CONFIG_ERROR
    except InvalidConfigError as e:
        _say(str(e))
        return EXIT_CONFIG_ERROR
    for warning in warnings:
        _say(f"warning: {warning}")

    # Installed before the broker starts so a signal during startup still stops it cleanly
    # instead of raising KeyboardInterrupt through the Rust call.
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    broker: Broker | ClusterNode
    if settings.get("zookeeper.connect", "").strip():
        # Multi-broker mode: kazoo is only imported when a cluster is asked for.
        from kafkalite.controller.node import ClusterNode, ClusterStartError

        broker = ClusterNode(settings, worker_threads=args.threads)
    else:
        ClusterStartError = _NoClusterError
        broker = Broker(config=settings, worker_threads=args.threads)
    try:
        broker.start()
    except ClusterStartError as e:
        _say(f"failed to start: {e}")
        return EXIT_START_FAILED
    except InvalidConfigError as e:
        _say(str(e))
        return EXIT_CONFIG_ERROR
    except OSError as e:
        # Port in use, log dir not writable or held by another broker.
        _say(f"failed to start: {e}")
        return EXIT_START_FAILED
    where = ", ".join(f"{name}://{host}:{port}" for name, host, port in broker.addresses)
    metrics = f"; metrics on {broker.metrics_url}" if broker.metrics_url else ""
    print(
        f"kafkalite broker started on {where} (log.dirs={settings['log.dirs']}){metrics}",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(0.5):
        pass
    _say("shutting down")
    try:
        broker.stop()
    except OSError as e:
        _say(f"logs not closed cleanly: {e}")
        return EXIT_START_FAILED
    _say("stopped")
    return 0
