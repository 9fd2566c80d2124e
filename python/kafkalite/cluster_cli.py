"""``kafkalite cluster up --brokers 3 [--data-dir DIR]``: a local ZooKeeper and N brokers
on loopback, in the foreground until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cluster = sub.add_parser("cluster", help="run a local multi-broker cluster")
    actions = cluster.add_subparsers(dest="action", required=True)
    up = actions.add_parser("up", help="start ZooKeeper and N brokers until Ctrl-C")
    up.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    up.add_argument("--data-dir", help="keep data here (default: a temporary dir, removed)")
    up.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="broker key for every broker (repeatable)",
    )
    up.set_defaults(func=_up)


def _up(args: argparse.Namespace) -> int:
    from kafkalite.cluster import Cluster

    overrides = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"kafkalite cluster: --override expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()
    if args.brokers < 1:
        print(
            f"kafkalite cluster: --brokers must be at least 1, got {args.brokers}", file=sys.stderr
        )
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with Cluster(args.brokers, overrides=overrides, data_dir=args.data_dir) as c:
        print(f"zookeeper.connect={c.zookeeper_connect}", flush=True)
        for b in c.brokers:
            print(f"broker {b.broker_id}: {b.bootstrap_servers} (pid {b.pid})", flush=True)
        print(f"bootstrap.servers={c.bootstrap_servers}", flush=True)
        print("Ctrl-C stops the cluster", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
    return 0
