"""Client quotas in ZooKeeper, as Kafka's ZooKeeper mode kept them: ``/config/users/<user>``,
``/config/clients/<client-id>``, ``/config/users/<user>/clients/<client-id>`` (and
``/config/ips/<ip>``), names sanitized as Kafka's ``Sanitizer`` does and ``<default>`` for
the default entity, each ``{"version":1,"config":{key: value}}``, every change announced
with a ``/config/changes/config_change_`` notification.

The ``config`` map is shared: SCRAM credentials (and other owners' keys) live in
``/config/users/<user>`` too, so a change is a read-modify-write of the quota keys only,
with a compare-and-set on the znode version. Every broker reads the whole set on each
ZooKeeper pass and pushes it into its Rust side (``BrokerServer.apply_client_quotas``)."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkalite.controller import znodes

USERS = "/config/users"
CLIENTS = "/config/clients"
IPS = "/config/ips"
DEFAULT = "<default>"

# Kafka's QuotaConfig keys; the byte rates and the connection rate are whole numbers.
QUOTA_KEYS = {
    "producer_byte_rate": int,
    "consumer_byte_rate": int,
    "request_percentage": float,
    "controller_mutation_rate": float,
    "connection_creation_rate": int,
}

Entity = dict[str, "str | None"]
Watch = Callable[[Any], None]


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding where only letters, digits and ``._-``
    stay as they are (``*`` and ``~`` encoded too, space as ``%20``)."""
    return urllib.parse.quote(name, safe="._-").replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


def _segment(name: str | None) -> str:
    return DEFAULT if name is None else sanitize(name)


def _name(segment: str) -> str | None:
    return None if segment == DEFAULT else desanitize(segment)


def entity_path(entity: Entity) -> str:
    """The znode of an entity (``{"user": "alice", "client-id": None}`` ->
    ``/config/users/alice/clients/<default>``)."""
    if "user" in entity and "client-id" in entity:
        return f"{USERS}/{_segment(entity['user'])}/clients/{_segment(entity['client-id'])}"
    if "user" in entity:
        return f"{USERS}/{_segment(entity['user'])}"
    if "client-id" in entity:
        return f"{CLIENTS}/{_segment(entity['client-id'])}"
    if "ip" in entity:
        return f"{IPS}/{_segment(entity['ip'])}"
    raise ValueError(f"not a quota entity: {entity!r}")


def _text(key: str, value: float) -> str:
    kind = QUOTA_KEYS.get(key, float)
    return str(round(value)) if kind is int else repr(float(value))


def _alter_one(zk: KazooClient, entity: Entity, ops: list[tuple[str, float | None]]) -> None:
    path = entity_path(entity)
    while True:
        try:
            data, stat = zk.get(path)
            config = znodes.parse_config(data) if data else {}
            version: int | None = stat.version
        except NoNodeError:
            config, version = {}, None
        for key, value in ops:
            if value is None:
                config.pop(key, None)
            else:
                config[key] = _text(key, value)
        payload = znodes.config_json(config)
        try:
            if version is None:
                zk.create(path, payload, makepath=True)
            else:
                zk.set(path, payload, version=version)
            return
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue  # another writer (SCRAM credentials, another broker) got there first


def alter(zk: KazooClient, changes: list[dict[str, Any]]) -> None:
    """Apply checked changes: ``[{"entity": [[type, name|null], ...], "ops": [[key,
    value|null], ...]}]`` (null value: remove the key)."""
    for change in changes:
        entity = {str(t): n for t, n in change["entity"]}
        ops = [(str(k), None if v is None else float(v)) for k, v in change["ops"]]
        _alter_one(zk, entity, ops)
        zk.create(
            f"{znodes.CONFIG_CHANGES}/config_change_",
            json.dumps(
                {"version": 2, "entity_path": entity_path(entity).removeprefix("/config/")},
                separators=(",", ":"),
            ).encode(),
            sequence=True,
            makepath=True,
        )


def _quotas(zk: KazooClient, path: str) -> dict[str, float]:
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return {}
    if not data:
        return {}
    try:
        config = znodes.parse_config(data)
    except ValueError:
        return {}
    out: dict[str, float] = {}
    for key, value in config.items():
        if key in QUOTA_KEYS:
            try:
                out[key] = float(value)
            except ValueError:
                continue  # not a number: not something a broker could enforce
    return out


def _children(zk: KazooClient, path: str, watch: Watch | None = None) -> list[str]:
    try:
        return list(zk.get_children(path, watch=watch))
    except NoNodeError:
        return []


def read_all(zk: KazooClient, watch: Watch | None = None) -> list[dict[str, Any]]:
    """Every entity with quotas, as ``BrokerServer.apply_client_quotas`` takes them.
    ``watch`` fires on the next change notification."""
    out: list[dict[str, Any]] = []

    def add(entity: list[list[str | None]], path: str) -> None:
        quotas = _quotas(zk, path)
        if quotas:
            out.append({"entity": entity, "quotas": quotas})

    if watch is not None:
        _children(zk, znodes.CONFIG_CHANGES, watch)
    for user in _children(zk, USERS):
        add([["user", _name(user)]], f"{USERS}/{user}")
        for client in _children(zk, f"{USERS}/{user}/clients"):
            add(
                [["user", _name(user)], ["client-id", _name(client)]],
                f"{USERS}/{user}/clients/{client}",
            )
    for client in _children(zk, CLIENTS):
        add([["client-id", _name(client)]], f"{CLIENTS}/{client}")
    for ip in _children(zk, IPS):
        add([["ip", _name(ip)]], f"{IPS}/{ip}")
    return out


class ClientQuotaOps:
    """AlterClientQuotas in cluster mode: the broker's Rust side checked the request;
    here it is written to ZooKeeper and this broker's quotas refreshed before the client
    is answered (the others follow on their next pass)."""

    zk: KazooClient
    sync_now: Callable[[], None]

    def alter_client_quotas(self, op: dict[str, Any]) -> None:
        alter(self.zk, json.loads(op["args"]))
        self.sync_now()


__all__ = ["ClientQuotaOps", "alter", "desanitize", "entity_path", "read_all", "sanitize"]
