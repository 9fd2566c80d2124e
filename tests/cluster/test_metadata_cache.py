"""The metadata cache against a real ZooKeeper: it follows changes by watches and reads
only what changed (an idle refresh reads nothing), and a new session reloads it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kafkalite.controller import znodes
from kafkalite.controller.metadata_cache import MetadataCache
from kafkalite.controller.zookeeper import LocalZooKeeper
from tests.cluster.conftest import wait_for


class CountingClient(KazooClient):  # type: ignore[misc]
    """Counts the reads the cache makes."""

    reads = 0

    def get_async(self, path: str, watch: Any = None) -> Any:
        self.reads += 1
        return super().get_async(path, watch=watch)

    # kazoo's get_children is get_children_async waited for.
    def get_children_async(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self.reads += 1
        return super().get_children_async(path, *args, **kwargs)

    def exists_async(self, path: str, watch: Any = None) -> Any:
        self.existence_checks += 1
        return super().exists_async(path, watch=watch)

    existence_checks = 0


@pytest.fixture(scope="module")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    with LocalZooKeeper(tmp_path_factory.mktemp("zk")) as server:
        yield server


@pytest.fixture
def zk(zk_server: LocalZooKeeper) -> Iterator[CountingClient]:
    client = CountingClient(hosts=zk_server.connect)
    client.start(timeout=30)
    client.delete("/brokers", recursive=True)
    client.delete("/admin", recursive=True)
    client.delete("/config", recursive=True)
    for path in znodes.PERSISTENT_PATHS:
        client.ensure_path(path)
    yield client
    client.stop()
    client.close()


def add_topic(zk: KazooClient, name: str, count: int, with_states: bool = True) -> None:
    zk.create(znodes.topic_config_path(name), znodes.config_json({}), makepath=True)
    assignment = {p: [1, 2, 3] for p in range(count)}
    zk.create(znodes.topic_path(name), znodes.topic_json(assignment, uuid.uuid4()))
    if with_states:
        for p in range(count):
            state = znodes.LeaderAndIsr(1, 0, [1, 2, 3], 1)
            zk.create(znodes.partition_state_path(name, p), znodes.state_json(state), makepath=True)


def make_cache(zk: KazooClient) -> tuple[MetadataCache, threading.Event]:
    woken = threading.Event()
    cache = MetadataCache(zk, woken.set)
    cache.reload()
    return cache, woken


def test_a_change_reads_what_changed_and_an_idle_refresh_reads_nothing(
    zk: CountingClient,
) -> None:
    add_topic(zk, "big", 200)
    cache, woken = make_cache(zk)
    assert cache.elected("big", range(200))
    # Idle: no watch fired, nothing read.
    reads = zk.reads
    assert not cache.refresh()
    assert zk.reads == reads
    # One partition's new leader: one watch, one read.
    woken.clear()
    path = znodes.partition_state_path("big", 7)
    _, stat = zk.get(path)
    zk.set(path, znodes.state_json(znodes.LeaderAndIsr(2, 1, [2, 3], 1)), version=stat.version)
    reads = zk.reads
    wait_for(woken.is_set, timeout=5)
    cache.barrier()
    assert cache.refresh()
    assert zk.reads - reads == 1
    assert cache.states[("big", 7)].state.leader == 2
    assert cache.states[("big", 7)].version == stat.version + 1


def test_topics_partitions_configs_and_brokers_follow_zookeeper(zk: CountingClient) -> None:
    cache, _woken = make_cache(zk)
    add_topic(zk, "t", 3, with_states=False)
    cache.barrier()
    cache.refresh()
    # Known, but not elected: no partition has a state yet, and the snapshot leaves it out.
    assert "t" in cache.topics and not cache.elected("t", range(3))
    assert all(name != "t" for name, *_ in cache.snapshot_arguments()[3])
    for p in range(3):
        state = znodes.state_json(znodes.LeaderAndIsr(3, 0, [3], 1))
        zk.create(znodes.partition_state_path("t", p), state, makepath=True)
    zk.set(znodes.topic_config_path("t"), znodes.config_json({"retention.ms": "1000"}))
    info = znodes.BrokerInfo(3, "127.0.0.1", 9093, "r1")
    zk.create(znodes.broker_path(3), znodes.broker_json(info), ephemeral=True)
    cache.barrier()
    cache.refresh()
    assert cache.elected("t", range(3))
    assert cache.topics["t"].configs == {"retention.ms": "1000"}
    assert cache.brokers[3].info.rack == "r1"
    # Grown, then deleted.
    data, stat = zk.get(znodes.topic_path("t"))
    tz = znodes.parse_topic_znode(data)
    tz.assignment[3] = [3]
    zk.set(znodes.topic_path("t"), tz.to_json(), version=stat.version)
    cache.barrier()
    cache.refresh()
    assert len(cache.topics["t"].znode.assignment) == 4 and not cache.elected("t", range(4))
    zk.delete(znodes.topic_path("t"), recursive=True)
    zk.delete(znodes.broker_path(3))
    cache.barrier()
    cache.refresh()
    assert "t" not in cache.topics and not any(k[0] == "t" for k in cache.states)
    assert 3 not in cache.brokers


def test_partitions_created_after_their_topic_are_learnt_through_one_list(
    zk: CountingClient,
) -> None:
    """A broker learns a topic before the controller has created its partitions' states:
    it watches the topic's partition list, not each partition (a round trip per topic,
    not per partition), and reads each state once the controller has made it."""
    cache, woken = make_cache(zk)
    add_topic(zk, "fresh", 300, with_states=False)
    cache.barrier()
    cache.refresh()
    assert "fresh" in cache.topics and not cache.elected("fresh", range(300))
    checks, reads = zk.existence_checks, zk.reads
    # As the controller creates them: each partition's znode with its state, in one
    # transaction.
    base = znodes.partitions_path("fresh")
    tx = zk.transaction()
    tx.create(base, b"")
    for p in range(300):
        tx.create(f"{base}/{p}", b"")
        tx.create(
            znodes.partition_state_path("fresh", p),
            znodes.state_json(znodes.LeaderAndIsr(2, 0, [1, 2, 3], 1)),
        )
    assert all(r is True or isinstance(r, str) for r in tx.commit())
    wait_for(woken.is_set, timeout=5)
    cache.barrier()
    cache.refresh()
    assert cache.elected("fresh", range(300))
    assert zk.existence_checks == checks, "no partition was checked for on its own"
    assert zk.reads - reads == 1 + 300, "the list, then each state once"
    # The states read are watched: a leader change is seen.
    woken.clear()
    path = znodes.partition_state_path("fresh", 299)
    zk.set(path, znodes.state_json(znodes.LeaderAndIsr(3, 1, [3], 1)), version=0)
    wait_for(woken.is_set, timeout=5)
    cache.barrier()
    cache.refresh()
    assert cache.states[("fresh", 299)].state.leader == 3


def test_states_the_controller_announces_are_learnt_with_one_read(zk: CountingClient) -> None:
    """The controller lists the states it creates in a ``NEW_STATES`` child of the same
    transaction: a broker takes them all with one read, then arms their watches."""
    zk.ensure_path(znodes.NEW_STATES)
    cache, woken = make_cache(zk)
    add_topic(zk, "announced", 300, with_states=False)
    cache.barrier()
    cache.refresh()
    topic_id = cache.topics["announced"].znode.topic_id
    state = znodes.LeaderAndIsr(2, 0, [1, 2, 3], 1)
    base = znodes.partitions_path("announced")
    tx = zk.transaction()
    tx.create(base, b"")
    for p in range(300):
        tx.create(f"{base}/{p}", b"")
        tx.create(znodes.partition_state_path("announced", p), znodes.state_json(state))
    entries = [("announced", topic_id, p, state) for p in range(300)]
    tx.create(
        f"{znodes.NEW_STATES}/{znodes.NEW_STATES_PREFIX}",
        znodes.new_states_json(entries),
        sequence=True,
    )
    assert not any(isinstance(r, Exception) for r in tx.commit())
    reads = zk.reads
    cache.barrier()
    cache.refresh(defer_new=True)
    assert cache.elected("announced", range(300))
    assert cache.states[("announced", 7)].state == state
    # The list of announcements, the one announced, the topic's partition list.
    assert zk.reads - reads == 3
    # Then each state's watch is armed: a leader change is seen.
    cache.watch_new()
    woken.clear()
    path = znodes.partition_state_path("announced", 5)
    zk.set(path, znodes.state_json(znodes.LeaderAndIsr(3, 1, [3], 1)), version=0)
    wait_for(woken.is_set, timeout=5)
    cache.barrier()
    cache.refresh()
    assert cache.states[("announced", 5)].state.leader == 3


def test_states_this_broker_created_are_watched(zk: CountingClient) -> None:
    """The controller's own new states: the partition list that then lists them is skipped
    for states the cache has, so they must be armed like any new partition's, or a later
    change (an ISR shrink) would never reach this broker's Metadata."""
    cache, woken = make_cache(zk)
    add_topic(zk, "mine", 2, with_states=False)
    cache.barrier()
    cache.refresh()  # the topic; its partition list, missing, watched for its creation
    state = znodes.LeaderAndIsr(1, 0, [1, 2, 3], 1)
    for p in range(2):
        zk.create(znodes.partition_state_path("mine", p), znodes.state_json(state), makepath=True)
        cache.put_created(("mine", p), state)  # as the controller takes what it wrote
    cache.barrier()
    cache.refresh(defer_new=True)
    cache.watch_new()  # the broker's watch thread
    woken.clear()
    path = znodes.partition_state_path("mine", 1)
    zk.set(path, znodes.state_json(znodes.LeaderAndIsr(1, 0, [1, 2], 1)), version=0)
    wait_for(woken.is_set, timeout=5)
    cache.barrier()
    cache.refresh()
    assert cache.states[("mine", 1)].state.isr == [1, 2]


def test_a_new_session_reloads_everything(zk: CountingClient, tmp_path: Path) -> None:
    cache, _woken = make_cache(zk)
    add_topic(zk, "s", 2)
    zk.stop()
    zk.start(timeout=30)  # a new session: the old one's watches are gone
    assert cache.refresh()
    assert cache.elected("s", range(2))
    assert cache.session == zk.client_id[0]
