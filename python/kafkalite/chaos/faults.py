"""Fault injectors against a running ``Cluster``, aimed at one partition's leader.

Each fault is a function ``fault(target) -> str`` that breaks something, waits long enough
for the cluster to notice (past the ZooKeeper session timeout where that matters), repairs
it and returns one line saying what it did. ``FAULTS`` names them for schedules.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafkalite.chaos.netcut import NetCut
from kafkalite.cluster import Cluster, ClusterBroker
from kafkalite.controller import znodes

# How long past the session timeout a broker stays dead, paused or cut off: long enough
# for its ZooKeeper session to expire and the controller to move its leaderships.
PAST_SESSION_S = 1.0
LEADER_WAIT_S = 30.0


@dataclass
class Target:
    cluster: Cluster
    topic: str
    partition: int = 0
    netcut: NetCut | None = None

    def state(self) -> tuple[int, list[int]] | None:
        """(leader, isr) from the partition state znode, None before it exists."""
        path = znodes.partition_state_path(self.topic, self.partition)
        data = self.cluster.zk.exists(path) and self.cluster.zk.get(path)[0]
        if not data:
            return None
        s = znodes.parse_state(data)
        return s.leader, list(s.isr)

    def replicas(self) -> list[int]:
        data, _ = self.cluster.zk.get(znodes.topic_path(self.topic))
        assignment, _ = znodes.parse_topic(data)
        return list(assignment[self.partition])

    def broker(self, broker_id: int) -> ClusterBroker:
        return next(b for b in self.cluster.brokers if b.broker_id == broker_id)

    def leader(self, timeout: float = LEADER_WAIT_S) -> ClusterBroker:
        """The current leader, once there is one and its process is up."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.state()
            if st is not None and st[0] >= 0 and self.broker(st[0]).running:
                return self.broker(st[0])
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.topic}-{self.partition} has no live leader: {st}")
            time.sleep(0.1)

    @property
    def outage_s(self) -> float:
        return self.cluster.session_timeout_s + PAST_SESSION_S


def kill_leader(t: Target) -> str:
    """SIGKILL the leader; restart it once its session has expired."""
    b = t.leader()
    b.kill()
    b.restart()  # waits for the old registration to expire first
    return f"SIGKILL leader {b.broker_id}, restarted"


def pause_leader(t: Target) -> str:
    """SIGSTOP the leader past the session timeout, then SIGCONT: a zombie that still
    thinks it leads, and must not acknowledge acks=all writes alone."""
    b = t.leader()
    b.pause()
    try:
        time.sleep(t.outage_s)
    finally:
        b.resume()
    return f"SIGSTOP leader {b.broker_id} for {t.outage_s:g} s, SIGCONT"


def isolate_leader(t: Target) -> str:
    """Drop everything the leader sends (ZooKeeper, followers, clients) past the session
    timeout, then restore the link."""
    if t.netcut is None:
        raise RuntimeError("isolate_leader needs the cluster started with a NetCut's wrap")
    b = t.leader()
    t.netcut.isolate(b.broker_id)
    try:
        time.sleep(t.outage_s)
    finally:
        t.netcut.restore()
    return f"isolated leader {b.broker_id} for {t.outage_s:g} s, link restored"


def wipe_follower(t: Target) -> str:
    """A follower loses its whole data dir (a dead disk): kill, delete, restart empty.
    It has to copy everything from the leader again."""
    leader = t.leader().broker_id
    follower = next(r for r in t.replicas() if r != leader)
    b = t.broker(follower)
    b.kill()
    shutil.rmtree(b.data_dir / "logs", ignore_errors=True)
    b.restart()
    return f"wiped follower {follower}'s data dir, restarted"


def kill_all(t: Target) -> str:
    """SIGKILL every broker at once (a power cut), then restart them all."""
    for b in t.cluster.brokers:
        b.kill()
    for b in t.cluster.brokers:
        b.restart()
    return "SIGKILL all brokers, restarted"


FAULTS: dict[str, Callable[[Target], str]] = {
    "kill-leader": kill_leader,
    "pause-leader": pause_leader,
    "isolate-leader": isolate_leader,
    "wipe-follower": wipe_follower,
    "kill-all": kill_all,
}
