"""ACLs in ZooKeeper as Kafka's ``AclAuthorizer`` kept them: one znode per resource
pattern -- ``/kafka-acl/<ResourceType>/<name>`` for literal names,
``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` for prefixes -- holding
``{"version":1,"acls":[{"principal":..,"permissionType":..,"operation":..,"host":..}]}``,
and after each change a sequential notification: ``/kafka-acl-changes/acl_changes_N``
(``Type:name``) for literal patterns, ``/kafka-acl-extended-changes/acl_changes_N`` (JSON)
for prefixed ones. Bindings cross into the Rust broker with Kafka's wire codes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"

LITERAL, PREFIXED = 3, 4
RESOURCE_TYPES = {
    2: "Topic",
    3: "Group",
    4: "Cluster",
    5: "TransactionalId",
    6: "DelegationToken",
    7: "User",
}
OPERATIONS = {
    2: "All",
    3: "Read",
    4: "Write",
    5: "Create",
    6: "Delete",
    7: "Alter",
    8: "Describe",
    9: "ClusterAction",
    10: "DescribeConfigs",
    11: "AlterConfigs",
    12: "IdempotentWrite",
    13: "CreateTokens",
    14: "DescribeTokens",
}
PERMISSIONS = {2: "Deny", 3: "Allow"}
_BY_NAME = {
    "resource": {v: k for k, v in RESOURCE_TYPES.items()},
    "operation": {v: k for k, v in OPERATIONS.items()},
    "permission": {v: k for k, v in PERMISSIONS.items()},
}


def resource_path(resource_type: int, name: str, pattern: int) -> str:
    root = PREFIXED_ROOT if pattern == PREFIXED else LITERAL_ROOT
    return f"{root}/{RESOURCE_TYPES[resource_type]}/{name}"


def _entry(b: dict[str, Any]) -> dict[str, str]:
    return {
        "principal": b["principal"],
        "permissionType": PERMISSIONS[b["permission"]],
        "operation": OPERATIONS[b["operation"]],
        "host": b["host"],
    }


def _binding(resource_type: int, name: str, pattern: int, e: dict[str, str]) -> dict[str, Any]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": e["principal"],
        "host": e["host"],
        "operation": _BY_NAME["operation"][e["operation"]],
        "permission": _BY_NAME["permission"][e["permissionType"]],
    }


def read_all(zk: KazooClient) -> list[dict[str, Any]]:
    """Every ACL binding ZooKeeper holds, in the Rust broker's shape."""
    out: list[dict[str, Any]] = []
    for root, pattern in ((LITERAL_ROOT, LITERAL), (PREFIXED_ROOT, PREFIXED)):
        for type_name, code in _BY_NAME["resource"].items():
            base = f"{root}/{type_name}"
            try:
                names = zk.get_children(base)
            except NoNodeError:
                continue
            for name in sorted(names):
                try:
                    data, _ = zk.get(f"{base}/{name}")
                except NoNodeError:
                    continue
                for e in json.loads(data or b"{}").get("acls", []):
                    if e.get("operation") in _BY_NAME["operation"]:
                        out.append(_binding(code, name, pattern, e))
    return out


def _key(b: dict[str, Any]) -> tuple[int, str, int]:
    return b["resource_type"], b["resource_name"], b["pattern_type"]


def change(
    zk: KazooClient, add: Iterable[dict[str, Any]] = (), remove: Iterable[dict[str, Any]] = ()
) -> None:
    """Add and remove bindings, one compare-and-set per resource pattern, each followed by
    Kafka's change notification."""
    per_resource: dict[tuple[int, str, int], tuple[list[dict], list[dict]]] = {}
    for b in add:
        per_resource.setdefault(_key(b), ([], []))[0].append(_entry(b))
    for b in remove:
        per_resource.setdefault(_key(b), ([], []))[1].append(_entry(b))
    for (rtype, name, pattern), (adds, removes) in per_resource.items():
        znode = resource_path(rtype, name, pattern)
        while True:
            try:
                data, stat = zk.get(znode)
                entries, version = json.loads(data or b"{}").get("acls", []), stat.version
            except NoNodeError:
                entries, version = [], -1
            new = [e for e in entries if e not in removes]
            new += [e for e in adds if e not in new]
            body = json.dumps({"version": 1, "acls": new}, separators=(",", ":")).encode()
            try:
                if version < 0:
                    zk.create(znode, body, makepath=True)
                elif new:
                    zk.set(znode, body, version=version)
                else:
                    zk.delete(znode, version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
            break
        _notify(zk, rtype, name, pattern)


def _notify(zk: KazooClient, rtype: int, name: str, pattern: int) -> None:
    type_name = RESOURCE_TYPES[rtype]
    if pattern == LITERAL:
        zk.create(
            f"{LITERAL_CHANGES}/{CHANGE_PREFIX}",
            f"{type_name}:{name}".encode(),
            sequence=True,
            makepath=True,
        )
    else:
        data = {"version": 1, "resourceType": type_name, "name": name, "patternType": "PREFIXED"}
        zk.create(
            f"{EXTENDED_CHANGES}/{CHANGE_PREFIX}",
            json.dumps(data, separators=(",", ":")).encode(),
            sequence=True,
            makepath=True,
        )
