"""Fault injectors against a running ``Cluster``, aimed at one partition's replicas.

Each fault is a function ``fault(target) -> str`` that breaks something, waits long enough
for the cluster to notice (past the ZooKeeper session timeout where that matters), repairs
it and returns one line saying what it did. ``FAULTS`` names them for schedules.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.chaos.disks import BrokerDisks
from kafkalite.chaos.netcut import NetCut
from kafkalite.chaos.wallclock import WallClocks
from kafkalite.cluster import Cluster, ClusterBroker
from kafkalite.controller import znodes

# How long past the session timeout a broker stays dead, paused or cut off: long enough
# for its ZooKeeper session to expire and the controller to move its leaderships.
PAST_SESSION_S = 1.0
LEADER_WAIT_S = 30.0

# Wall-clock steps, in turn, each to that turn's broker (brokers end up skewed against
# each other, as hosts whose clocks were stepped differently): an hour forward, an hour
# back, ten minutes.
CLOCK_STEPS_MS = (3_600_000, -3_600_000, -3_600_000, 3_600_000, 600_000, -600_000)
CLOCK_SEEN_TOLERANCE_MS = 60_000
# How long past replica.lag.time.max.ms a stopped follower may stay in the ISR: the
# shrink task's period (half the lag) and the controller's write.
LAG_GRACE_S = 5.0


@dataclass
class Target:
    cluster: Cluster
    topic: str
    partition: int = 0
    netcut: NetCut | None = None
    disks: BrokerDisks | None = None  # for power_loss: every broker's log dir on FUSE
    clocks: WallClocks | None = None  # for clock_jump: every broker on a stepped clock
    rng: random.Random = field(default_factory=random.Random)
    clock_steps_ms: tuple[int, ...] = CLOCK_STEPS_MS  # clock_jump's steps, in turn
    turns: dict[str, int] = field(default_factory=dict)  # per fault kind, for alternation
    # What a fault saw go wrong without losing data (a stall, a jump not seen).
    anomalies: list[str] = field(default_factory=list)

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

    @property
    def lag_s(self) -> float:
        return int(self.cluster.overrides.get("replica.lag.time.max.ms", "30000")) / 1000

    def turn(self, kind: str) -> int:
        n = self.turns.get(kind, 0)
        self.turns[kind] = n + 1
        return n

    def victim(self, kind: str) -> tuple[ClusterBroker, str]:
        """The leader on even turns of ``kind``, a follower (at random) on odd ones."""
        leader = self.leader()
        if self.turn(kind) % 2 == 0:
            return leader, "leader"
        followers = [r for r in self.replicas() if r != leader.broker_id]
        return self.broker(self.rng.choice(followers)), "follower"


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


def power_loss(t: Target) -> str:
    """One broker (the leader or a follower, in turn) loses power: SIGKILL and every write
    its disk had not fsynced is gone, then it restarts. With the default flush settings
    nothing is fsynced before the ack, so its log tail is gone: it must truncate and fetch
    again, and never lead without what the others acknowledged."""
    if t.disks is None:
        raise RuntimeError("power-loss needs every broker's log dir on BrokerDisks")
    b, role = t.victim("power-loss")
    time.sleep(t.rng.uniform(0, 1.0))  # a random moment in the write stream
    b.kill()
    dropped = t.disks.power_cut(b.broker_id)
    b.restart()
    return (
        f"power cut on {role} {b.broker_id} (SIGKILL, {dropped} unsynced bytes dropped), restarted"
    )


def clock_jump(t: Target) -> str:
    """Step one broker's wall clock (the leader or a follower, in turn) while it runs,
    the monotonic clock untouched. Jumping the leader, a follower is also stopped past
    replica.lag.time.max.ms: lag is timed on the monotonic clock, so the leader must
    drop it from the ISR whatever its wall clock did, or acks=all writes stall."""
    if t.clocks is None:
        raise RuntimeError("clock-jump needs the brokers started with WallClocks' env")
    if t.cluster.session_timeout_s <= t.lag_s + LAG_GRACE_S:
        # Else the stopped follower's session expires first and the controller drops it
        # from the ISR, whatever the leader's lag check does.
        raise ValueError(
            f"clock-jump needs zookeeper.session.timeout.ms above replica.lag.time.max.ms "
            f"+ {LAG_GRACE_S:g} s"
        )
    b, role = t.victim("clock-jump")
    step = t.clock_steps_ms[t.turn("clock-step") % len(t.clock_steps_ms)]
    offset = t.clocks.step(b.broker_id, step)
    seen = broker_clock_offset_ms(t, b.broker_id)
    what = f"{step / 60_000:+g} min on {role} {b.broker_id} (now {offset / 60_000:+g} min)"
    if seen is None or abs(seen - offset) > CLOCK_SEEN_TOLERANCE_MS:
        t.anomalies.append(f"clock step {what} not seen: LogAppendTime says {seen} ms")
    what += f", seen in LogAppendTime as {(seen or 0) / 60_000:+.1f} min"
    if role == "follower":
        time.sleep(t.lag_s + PAST_SESSION_S)  # its fetches go on through the step
        return f"clock {what}"
    stopped = t.broker(t.rng.choice([r for r in t.replicas() if r != b.broker_id]))
    stopped.pause()
    try:
        deadline = time.monotonic() + t.lag_s + LAG_GRACE_S
        while stopped.broker_id in (t.state() or (0, [stopped.broker_id]))[1]:
            if time.monotonic() > deadline:
                t.anomalies.append(
                    f"clock {what}: follower {stopped.broker_id} stopped, still in the ISR "
                    f"after {t.lag_s + LAG_GRACE_S:g} s"
                )
                break
            time.sleep(0.1)
    finally:
        stopped.resume()
    return f"clock {what}; follower {stopped.broker_id} stopped until dropped from the ISR"


def broker_clock_offset_ms(t: Target, broker_id: int) -> int | None:
    """The broker's wall clock minus ours, from the LogAppendTime it gives a record on a
    probe topic that lives on it alone; None when it does not answer."""
    topic = f"clock-probe-{broker_id}"
    admin = AdminClient({"bootstrap.servers": t.cluster.bootstrap_servers})
    if topic not in admin.list_topics(timeout=10).topics:
        new = NewTopic(
            topic,
            num_partitions=1,
            replica_assignment=[[broker_id]],
            config={"message.timestamp.type": "LogAppendTime"},
        )
        try:
            admin.create_topics([new], operation_timeout=30)[topic].result(30)
        except KafkaException:  # created meanwhile, or not yet: the produce below decides
            pass
    stamps: list[int] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is None:
            stamps.append(msg.timestamp()[1])

    p = Producer({"bootstrap.servers": t.cluster.bootstrap_servers, "acks": 1})
    sent = time.time()
    p.produce(topic, b"probe", on_delivery=on_delivery)
    p.flush(15)
    done = time.time()
    if not stamps:
        return None
    return stamps[0] - int((sent + done) / 2 * 1000)


FAULTS: dict[str, Callable[[Target], str]] = {
    "kill-leader": kill_leader,
    "pause-leader": pause_leader,
    "isolate-leader": isolate_leader,
    "wipe-follower": wipe_follower,
    "kill-all": kill_all,
    "power-loss": power_loss,
    "clock-jump": clock_jump,
}
