"""Controller election as Kafka's ZooKeeper mode did it: the first broker to create the
ephemeral ``/controller`` znode is the controller, and each new controller bumps
``/controller_epoch``. The znode version of ``/controller_epoch`` fences the controller's
writes: every partition-state write is a transaction that checks it, so a controller that
lost its seat (session expired, paused) cannot overwrite its successor's decisions."""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkalite.controller import znodes


@dataclass(frozen=True)
class Term:
    """This broker's term as controller: its epoch and the epoch znode's version."""

    epoch: int
    epoch_zk_version: int


def current_controller(zk: KazooClient) -> tuple[int, int] | None:
    """(broker id, session id owning the znode) of the controller, None if there is none."""
    try:
        data, stat = zk.get(znodes.CONTROLLER)
    except NoNodeError:
        return None
    return znodes.parse_controller(data), stat.ephemeralOwner


def try_elect(zk: KazooClient, broker_id: int) -> Term | None:
    """Become the controller if there is none; the new term, or None when another
    broker got there first."""
    try:
        zk.create(znodes.CONTROLLER, znodes.controller_json(broker_id), ephemeral=True)
    except NodeExistsError:
        return None
    while True:
        try:
            data, stat = zk.get(znodes.CONTROLLER_EPOCH)
        except NoNodeError:
            try:
                zk.create(znodes.CONTROLLER_EPOCH, b"1")
                return Term(1, 0)
            except NodeExistsError:
                continue
        epoch = int(data) + 1
        try:
            new = zk.set(znodes.CONTROLLER_EPOCH, str(epoch).encode(), version=stat.version)
            return Term(epoch, new.version)
        except BadVersionError:
            continue
