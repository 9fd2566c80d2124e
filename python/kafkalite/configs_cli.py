"""``kafkalite configs --zookeeper HOST:PORT``: a broker's dynamic configs written straight
into ZooKeeper, as Kafka 2.0's ``kafka-configs --zookeeper`` did -- so a broker's keystore
password and JAAS config can be in place before that broker first starts. Sensitive
values are encrypted with the ``password.encoder.secret`` given among ``--add-config``
(used, never stored), as Kafka's tool required."""

from __future__ import annotations

import argparse
import sys

from kafkalite import _core
from kafkalite.controller import entity_configs
from kafkalite.controller.node import connect_zookeeper
from kafkalite.controller.password_encoder import PasswordEncoder, is_encoded
from kafkalite.errors import KafkaliteError

ENCODER_PREFIX = "password.encoder."


def parse_configs(text: str) -> dict[str, str]:
    """Kafka's ``k1=v1,k2=[a,b]`` (brackets keep commas in a value)."""
    out: dict[str, str] = {}
    depth, item = 0, ""
    items = []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += ch
    items.append(item)
    for raw in filter(None, (i.strip() for i in items)):
        key, sep, value = raw.partition("=")
        if not sep:
            raise KafkaliteError(f"--add-config entry {key!r} has no '=' (key=value)")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _run(args: argparse.Namespace) -> int:
    if args.entity_default == (args.entity_name is not None):
        raise KafkaliteError("give exactly one of --entity-name and --entity-default")
    name = entity_configs.DEFAULT if args.entity_default else args.entity_name
    per_broker = not args.entity_default
    zk = connect_zookeeper(args.zookeeper, 30000, 15000)
    try:
        if args.alter:
            added = parse_configs(args.add_config or "")
            encoder_settings = {
                k: added.pop(k) for k in list(added) if k.startswith(ENCODER_PREFIX)
            }
            deleted = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
            checked = {
                k: _core.check_dynamic_broker_config(k, v, per_broker) for k, v in added.items()
            }
            sensitive = [k for k in checked if _core.broker_config_is_sensitive(k)]
            encoder = PasswordEncoder.from_settings(encoder_settings)
            if sensitive and encoder is None:
                raise KafkaliteError(
                    "password.encoder.secret must be given in --add-config to store "
                    f"{', '.join(sensitive)} (it encrypts them; it is not stored)"
                )
            for key in sensitive:
                assert encoder is not None
                checked[key] = encoder.encode(checked[key])
            entity_configs.set_keys(zk, "brokers", name, checked, deleted)
            print(f"Completed updating config for broker {name}.")
        else:
            stored = entity_configs.read(zk, "brokers", name)
            what = (
                "default config for brokers in the cluster"
                if not per_broker
                else f"configs for broker {name}"
            )
            print(f"Dynamic {what} are:")
            for key, value in sorted(stored.items()):
                secret = _core.broker_config_is_sensitive(key) or is_encoded(value)
                shown = "null" if secret else value
                print(f"  {key}={shown} sensitive={str(secret).lower()}")
    finally:
        zk.stop()
        zk.close()
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KafkaliteError as e:
        print(f"kafkalite configs: {e}", file=sys.stderr)
        return 2


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("configs", help="set a broker's dynamic configs in ZooKeeper")
    p.add_argument("--zookeeper", required=True, help="ZooKeeper to write to: HOST:PORT[/chroot]")
    p.add_argument(
        "--entity-type", required=True, choices=["brokers"], help="kind of entity (brokers)"
    )
    p.add_argument("--entity-name", help="the broker id whose configs to change or show")
    p.add_argument(
        "--entity-default", action="store_true", help="the cluster-wide default of every broker"
    )
    verb = p.add_mutually_exclusive_group(required=True)
    verb.add_argument("--alter", action="store_true", help="add or delete configs")
    verb.add_argument("--describe", action="store_true", help="show the stored configs")
    p.add_argument(
        "--add-config",
        help="k1=v1,k2=[a,b]; include password.encoder.secret=S to encrypt sensitive values",
    )
    p.add_argument("--delete-config", help="comma-separated keys to remove")
    p.set_defaults(func=run)
