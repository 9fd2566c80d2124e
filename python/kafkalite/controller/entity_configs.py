"""Entity configs in ZooKeeper as Kafka kept them (``AdminZkClient.changeConfigs``):
``/config/<entity type>/<entity name>`` holds ``{"version":1,"config":{...}}`` and each
change leaves a sequential ``/config/changes/config_change_NNNNNNNNNN`` with
``{"version":2,"entity_path":"<entity type>/<entity name>"}`` for brokers to react to.

Entity types: ``brokers`` (a broker id, or ``<default>``), ``users`` and ``clients``
(names sanitized as Kafka's ``Sanitizer`` does), ``topics``, ``client-metrics``, ``groups``
(sanitized too: a group id may hold any character). Several
owners share one znode -- a user's SCRAM credentials and its quotas live side by side -- so
every write is a read-modify-write that keeps the keys it was not asked to change, retried
on a version conflict."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

CONFIG_ROOT = "/config"
CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"
DEFAULT = "<default>"
ENTITY_TYPES = ("brokers", "users", "clients", "topics", "client-metrics", "groups")


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encode (UTF-8), spaces as %20, ``*`` as %2A,
    so any user or client id is one znode name. ``<default>`` stays as it is."""
    if name == DEFAULT:
        return name
    encoded = urllib.parse.quote(name, safe="-._")
    return encoded.replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


def path(entity_type: str, name: str) -> str:
    if entity_type not in ENTITY_TYPES:
        raise ValueError(f"unknown entity type {entity_type!r} (one of {', '.join(ENTITY_TYPES)})")
    return f"{CONFIG_ROOT}/{entity_type}/{sanitize(name)}"


def parse(data: bytes) -> dict[str, str]:
    if not data:
        return {}
    config = json.loads(data).get("config") or {}
    return {str(k): str(v) for k, v in config.items()}


def encode(config: Mapping[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": dict(config)}, separators=(",", ":")).encode()


def read(zk: KazooClient, entity_type: str, name: str, watch: object = None) -> dict[str, str]:
    """The entity's configs ({} when it has none)."""
    try:
        data, _ = zk.get(path(entity_type, name), watch=watch)
    except NoNodeError:
        if watch is not None:
            zk.exists(path(entity_type, name), watch=watch)
        return {}
    return parse(data)


def entities(zk: KazooClient, entity_type: str, watch: object = None) -> list[str]:
    """Every entity of the type with a znode, names desanitized."""
    try:
        children = zk.get_children(f"{CONFIG_ROOT}/{entity_type}", watch=watch)
    except NoNodeError:
        return []
    return sorted(desanitize(c) for c in children)


def read_all(
    zk: KazooClient, entity_type: str, watch: Callable[[Any], None] | None = None
) -> dict[str, dict[str, str]]:
    """Every entity of the type that has keys: name -> configs."""
    out: dict[str, dict[str, str]] = {}
    for name in entities(zk, entity_type, watch):
        configs = read(zk, entity_type, name)
        if configs:
            out[name] = configs
    return out


def replace_whole(zk: KazooClient, entity_type: str, name: str, configs: Mapping[str, str]) -> None:
    """Make ``configs`` the entity's whole set; an entity left with no key loses its znode
    (a client-metrics subscription or a group's configs, as in Kafka)."""
    if configs:
        modify(zk, entity_type, name, lambda _: dict(configs))
        return
    try:
        zk.delete(path(entity_type, name))
    except NoNodeError:
        pass
    notify_change(zk, entity_type, name)


def whole_set_args(op: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """(name, configs) of an admin request that replaces an entity's whole set, as the
    broker's Rust side sends it: ``{"args": "{\"name\": ..., \"configs\": {...}}"}``."""
    args = json.loads(op["args"])
    return str(args["name"]), {str(k): str(v) for k, v in args["configs"].items()}


def modify(
    zk: KazooClient,
    entity_type: str,
    name: str,
    change: Callable[[dict[str, str]], dict[str, str]],
    notify: bool = True,
) -> dict[str, str]:
    """Apply ``change`` to the entity's configs (it gets a copy, returns the new dict; keys
    it leaves alone stay), write them with a compare-and-set on the znode version, and
    leave a change notification. Returns the configs written."""
    znode = path(entity_type, name)
    while True:
        try:
            data, stat = zk.get(znode)
            current, version = parse(data), stat.version
        except NoNodeError:
            current, version = {}, -1
        new = change(dict(current))
        try:
            if version < 0:
                zk.create(znode, encode(new), makepath=True)
            else:
                zk.set(znode, encode(new), version=version)
        except (BadVersionError, NodeExistsError):
            continue  # someone else wrote meanwhile: read again
        break
    if notify:
        notify_change(zk, entity_type, name)
    return new


def notify_change(zk: KazooClient, entity_type: str, name: str) -> None:
    entity_path = f"{entity_type}/{sanitize(name)}"
    data = json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":"))
    zk.create(f"{CHANGES}/{CHANGE_PREFIX}", data.encode(), sequence=True, makepath=True)


def set_keys(
    zk: KazooClient,
    entity_type: str,
    name: str,
    updates: Mapping[str, str],
    deletions: tuple[str, ...] | list[str] = (),
) -> dict[str, str]:
    """Set ``updates`` and remove ``deletions``, keeping every other key."""

    def change(config: dict[str, str]) -> dict[str, str]:
        for key in deletions:
            config.pop(key, None)
        config.update(updates)
        return config

    return modify(zk, entity_type, name, change)


def replace_owned(
    zk: KazooClient,
    entity_type: str,
    name: str,
    owned: Callable[[str], bool],
    configs: Mapping[str, str],
) -> dict[str, str]:
    """Make the keys ``owned`` says are this caller's exactly ``configs``; keys of other
    owners stay."""

    def change(config: dict[str, str]) -> dict[str, str]:
        kept = {k: v for k, v in config.items() if not owned(k)}
        kept.update(configs)
        return kept

    return modify(zk, entity_type, name, change)
