"""One broker of a cluster: the Rust broker plus its ZooKeeper session. Started by
``kafkalite broker`` when ``zookeeper.connect`` is set.

The session registers the broker (ephemeral ``/brokers/ids/<id>``), takes part in
controller election, runs the controller while this broker holds ``/controller``, keeps
the Rust broker's metadata in step with ZooKeeper (a ``MetadataCache`` kept by watches;
a snapshot of it pushed through ``apply_metadata`` when it changed) and answers the admin
requests clients send this broker. One thread does the ZooKeeper work in order; a second
drains admin requests; a third pushes snapshots into the Rust broker; a fourth
(``liveness``) notices a broker whose process is gone.

Failure detection at defaults: a broker that crashed is proven gone within milliseconds
(its listener refuses connections) and its registration is removed at once, so the
controller moves its leaderships without waiting for its session to expire; a broker
that hangs or is cut off is replaced when its session expires, after
``zookeeper.session.timeout.ms`` (4 s by default: kafkalite has no garbage-collection
pauses to wait out, Kafka's ZooKeeper-era 18 s was for those)."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafkalite import _core
from kafkalite.controller import (
    client_metrics,
    client_quotas,
    election,
    entity_configs,
    group_configs,
    isr,
    liveness,
    shared_security,
    znodes,
)
from kafkalite.controller.admin import AdminHandler
from kafkalite.controller.controller import Controller, Fenced, Rebalance
from kafkalite.controller.metadata_cache import MetadataCache
from kafkalite.controller.password_encoder import PasswordEncoder, PasswordEncoderError
from kafkalite.errors import KafkaliteError
from kafkalite.monitoring.scrape import endpoint_url

_log = logging.getLogger("kafkalite.cluster")

# A hung broker is replaced this long after it stopped answering ZooKeeper (the broker
# key's default, ``zookeeper.session.timeout.ms``).
SESSION_TIMEOUT_MS = 4000
# How often the loop wakes without a watch firing: timers (the leader rebalance, admin
# requests waiting for the controller). Nothing is re-read then.
TICK_S = 2.0
# A snapshot slower than this to apply is logged (it holds up every metadata change).
SLOW_PUSH_S = 0.5
# At most this many topic creations are taken from the queue and created together.
CREATE_BURST = 1000
# ISR proposals written together at most (then answered, and the next burst taken).
ISR_BURST = 1000


class ClusterStartError(KafkaliteError):
    """The broker cannot join its cluster (ZooKeeper unreachable, broker.id taken)."""


def split_connect(connect: str) -> tuple[str, str]:
    """``host:port,host:port/chroot`` -> (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/") if chroot else ""


def connect_zookeeper(connect: str, session_ms: int, connection_ms: int) -> KazooClient:
    """A started session, the chroot created when missing (as Kafka does); a clear error
    when ZooKeeper does not answer within ``connection_ms``."""
    hosts, chroot = split_connect(connect)
    zk = KazooClient(hosts=hosts, timeout=session_ms / 1000)
    try:
        zk.start(timeout=connection_ms / 1000)
    except KazooTimeoutError:
        # kazoo has already stopped the client.
        raise ClusterStartError(
            f"cannot connect to ZooKeeper at {connect!r} within {connection_ms} ms "
            "(zookeeper.connect, zookeeper.connection.timeout.ms)"
        ) from None
    if chroot:
        zk.ensure_path(chroot)
        zk.chroot = chroot
    return zk


@dataclass
class _Waiter:
    """An admin request answered once ``done`` holds in a snapshot pushed to the Rust
    broker (its next Metadata request sees what was done), or timed out at ``deadline``.
    ``at_commit``: answered as soon as ``done`` holds in the cache, before the push (as
    Kafka's controller answers CreateTopics once its records are committed, while the
    brokers create the logs)."""

    request_id: int
    done: Callable[[], bool]
    deadline: float
    what: str
    at_commit: bool = False


class ClusterNode:
    def __init__(self, settings: Mapping[str, str], worker_threads: int = 2) -> None:
        self.settings = dict(settings)
        self.worker_threads = worker_threads
        self.broker_id = int(self.settings.get("broker.id", self.settings.get("node.id", "1")))
        self.session_ms = int(self.settings.get("zookeeper.session.timeout.ms", SESSION_TIMEOUT_MS))
        self.connection_ms = int(
            self.settings.get("zookeeper.connection.timeout.ms", self.session_ms)
        )
        self.unclean = self.settings.get("unclean.leader.election.enable", "false") == "true"
        self.rack = self.settings.get("broker.rack") or None
        self.controlled_shutdown = (
            self.settings.get("controlled.shutdown.enable", "true").lower() == "true"
        )
        # Set while shutting down under control: the loop no longer re-registers.
        self._leaving = threading.Event()
        self.server: _core.BrokerServer | None = None
        self.zk: KazooClient | None = None
        self.cache: MetadataCache | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        # One reader of ZooKeeper's small state (security, quotas, ...) at a time.
        self._sync_lock = threading.Lock()
        # Snapshots reach the Rust broker in the order they were taken, from a thread of
        # their own: applying one with thousands of new partitions takes a while, and the
        # ZooKeeper loop (the controller's decisions among them) goes on meanwhile; the
        # next push takes everything that changed in between.
        self._push_lock = threading.Lock()
        self._push_wanted = threading.Event()
        self._pushed_generation = -1
        # Security, quotas, client metrics and group configs changed (their watches).
        self._small_dirty = True
        self._waiters: list[_Waiter] = []
        self._waiters_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._controller: Controller | None = None
        self._probe: liveness.LivenessProbe | None = None
        self.inter_broker_listener = ""
        # Dynamic secrets in ZooKeeper (`shared_security`), set up at start.
        self.encoder: PasswordEncoder | None = None
        self._decrypter = shared_security.Decrypter(None)

    @property
    def addresses(self) -> list[tuple[str, str, int]]:
        assert self.server is not None
        return self.server.addresses

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` when ``metrics.listen`` is set, else None."""
        assert self.server is not None
        return endpoint_url(self.server.metrics_address)

    def start(self) -> ClusterNode:
        connect = self.settings["zookeeper.connect"]
        zk = connect_zookeeper(connect, self.session_ms, self.connection_ms)
        self.zk = zk
        try:
            for path in (*znodes.PERSISTENT_PATHS, znodes.NEW_STATES):
                zk.ensure_path(path)
            try:
                zk.create(
                    znodes.CLUSTER_ID,
                    znodes.cluster_id_json(znodes.topic_id_string(uuid.uuid4())),
                    makepath=True,
                )
            except NodeExistsError:
                pass
            self._take_over_dead_registration(connect)
            dynamic = self._read_secrets()
            self.server = _core.BrokerServer(
                self.settings, self.worker_threads, json.dumps(dynamic)
            )
            self._decrypter.strict = False
            self._check_inter_broker_listener()
            self.cache = MetadataCache(zk, self._wake.set)
            self.cache.reload()
            # Topics and leaders before registering: once others see this broker (the
            # launcher waits for that), its Metadata already describes the cluster.
            self.sync_now()
            self._register(connect)
        except BaseException:
            self.stop()
            raise
        # One pass before serving as a cluster member, so this broker's first Metadata
        # answer already names the live brokers and the controller.
        self.cache.barrier()
        self._step()
        self._push_metadata()
        zk.add_listener(self._session_event)
        self._probe = liveness.LivenessProbe(self._gone, f"-{self.broker_id}").start()
        for target, name in (
            (self._loop, "zk-loop"),
            (self._admin_loop, "zk-admin"),
            (self._push_loop, "metadata-push"),
        ):
            t = threading.Thread(
                target=target, name=f"kafkalite-{name}-{self.broker_id}", daemon=True
            )
            t.start()
            self._threads.append(t)
        self._wake.set()
        return self

    def _take_over_dead_registration(self, connect: str) -> None:
        """A registration under this broker's id stays until its session expires. If it is
        a crashed earlier run of this broker (every endpoint it registered refuses
        connections, and this broker has not bound them yet) it is removed so the broker
        can start at once; if anything answers there, another broker uses the id."""
        assert self.zk is not None
        path = znodes.broker_path(self.broker_id)
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return
        endpoints = znodes.parse_broker(self.broker_id, data).endpoints
        for _name, host, port in endpoints:
            target = liveness.Target(self.broker_id, host, port, stat.ephemeralOwner)
            outcome = liveness.LivenessProbe.connect(target)
            if not isinstance(outcome, str):
                outcome.close()
            if outcome != "refused":
                raise self._duplicate(connect)
        _log.info(
            "broker %d: the registration of an earlier run (session 0x%x) is left over and "
            "nothing listens at its endpoints: replacing it",
            self.broker_id,
            stat.ephemeralOwner,
        )
        try:
            self.zk.delete(path, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass

    def _read_secrets(self) -> dict[str, dict[str, str]]:
        """The encoder for dynamic secrets and this broker's dynamic configs, decrypted
        (re-encrypted first when ``password.encoder.old.secret`` rotates the secret). A
        stored secret this broker cannot decrypt stops it with one line naming the key."""
        assert self.zk is not None
        try:
            self.encoder = PasswordEncoder.from_settings(self.settings)
            shared_security.rotate_secret(self.zk, self.broker_id, self.settings)
            self._decrypter = shared_security.Decrypter(self.encoder)
            return shared_security.read_dynamic(self.zk, self.broker_id, self._decrypter)
        except (PasswordEncoderError, shared_security.SecretError) as e:
            raise ClusterStartError(str(e)) from None

    def _check_inter_broker_listener(self) -> None:
        """``inter.broker.listener.name`` must name one of this broker's listeners (as
        Kafka requires); unset, brokers talk over the one named after
        ``security.inter.broker.protocol``, else the first (the broker's own rule, which
        its replica fetchers follow)."""
        assert self.server is not None
        names = [n for n, _h, _p in self.server.advertised_listeners]
        self.inter_broker_listener = self.server.inter_broker_listener or names[0]
        if self.inter_broker_listener not in names:
            raise ClusterStartError(
                f"inter.broker.listener.name {self.inter_broker_listener!r} is not one of "
                f"this broker's listeners ({', '.join(names)})"
            )

    def inter_broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where to reach broker ``broker_id`` from this one: its endpoint for this
        broker's ``inter.broker.listener.name``; None if it is not registered."""
        assert self.zk is not None
        try:
            data, _ = self.zk.get(znodes.broker_path(broker_id))
        except NoNodeError:
            return None
        return znodes.endpoint(data, self.inter_broker_listener)

    def _duplicate(self, connect: str) -> ClusterStartError:
        return ClusterStartError(
            f"broker.id {self.broker_id} is already registered in ZooKeeper at {connect!r}: "
            "another broker is using it (give each broker its own broker.id)"
        )

    def _register(self, connect: str) -> None:
        assert self.server is not None and self.zk is not None
        advertised = self.server.advertised_listeners
        name, host, port = advertised[0]
        info = znodes.BrokerInfo(self.broker_id, host, port, self.rack)
        protocols = dict(self.server.listener_security_protocols)
        data = znodes.broker_json(info, name, advertised[1:], protocols)
        try:
            self.zk.create(znodes.broker_path(self.broker_id), data, ephemeral=True)
        except NodeExistsError:
            raise self._duplicate(connect) from None

    def _session_event(self, state: str) -> None:
        # A new session after an expiry has lost the ephemeral znodes and the watches:
        # the loop reloads the cache and re-registers. Called on kazoo's thread, so it
        # only wakes the loop.
        if state == KazooState.CONNECTED or state == KazooState.LOST:
            self._wake.set()

    def _watch(self, _event: object) -> None:
        self._small_dirty = True
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(TICK_S)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self._step()
            except Exception:
                if not self._stopping.is_set():
                    _log.exception("broker %d: ZooKeeper pass failed", self.broker_id)
                    self._stopping.wait(0.5)
                    self._wake.set()

    def _next_wait(self) -> float:
        with self._waiters_lock:
            deadlines = [w.deadline for w in self._waiters]
        if not deadlines:
            return TICK_S
        return max(0.01, min(TICK_S, min(deadlines) - time.monotonic()))

    def _step(self) -> None:
        zk, cache = self.zk, self.cache
        assert zk is not None and cache is not None
        if not zk.connected:
            return
        me = zk.client_id[0] if zk.client_id else None
        if cache.session != me:
            self._small_dirty = True
        # A controller decides on (and creates) new partitions' states before this broker
        # reads and watches them, a round trip per partition.
        cache.refresh(defer_new=True)
        try:
            self._decide(zk, cache, me)
            self._answer_committed()
        finally:
            if cache.watch_new():
                self._push_wanted.set()

    def _decide(self, zk: KazooClient, cache: MetadataCache, me: int | None) -> None:
        """Register, elect, act as the controller when elected, watch the others."""
        mine = cache.brokers.get(self.broker_id)
        if mine is None or mine.session != me:
            # The cache may lag behind a registration just made: ask ZooKeeper.
            stat = zk.exists(znodes.broker_path(self.broker_id))
            if stat is None and self._leaving.is_set():
                pass
            elif stat is None:
                self._register(self.settings["zookeeper.connect"])
            elif stat.ephemeralOwner != me:
                # The znode of a previous session of ours, about to expire: try again then.
                return
        seat = cache.controller
        if seat is None:
            term = election.try_elect(zk, self.broker_id)
            if term is not None:
                _log.info("broker %d is the controller, epoch %d", self.broker_id, term.epoch)
                self._controller = Controller(
                    zk,
                    self.broker_id,
                    term,
                    self.unclean,
                    cache,
                    wake=self._wake.set,
                    rebalance=Rebalance.from_settings(self.settings),
                )
        elif seat != (self.broker_id, me):
            self._controller = None
        if self._controller is not None:
            try:
                self._controller.reconcile()
            except Fenced as e:
                _log.warning("broker %d: %s", self.broker_id, e)
                self._controller = None
        self._push_wanted.set()
        if self._small_dirty:
            self._push_small()
        self._watch_liveness()

    def sync_now(self) -> None:
        """Bring the Rust broker up to what ZooKeeper holds now (after a write of this
        broker's own whose outcome the answer must show)."""
        assert self.cache is not None
        self.cache.barrier()
        self.cache.refresh()
        self._push_metadata()
        self._push_small()

    def _push_loop(self) -> None:
        while not self._stopping.is_set():
            self._push_wanted.wait(self._next_wait())
            self._push_wanted.clear()
            if self._stopping.is_set():
                return
            try:
                self._push_metadata()
            except Exception:
                if not self._stopping.is_set():
                    _log.exception("broker %d: metadata push failed", self.broker_id)
                    self._stopping.wait(0.5)
                    self._push_wanted.set()

    def _push_metadata(self) -> None:
        """Push the cache into the Rust broker if it changed since the last push; then
        answer the waiters whose condition that snapshot shows, and those out of time."""
        cache = self.cache
        assert cache is not None
        with self._push_lock:
            with self._waiters_lock:
                waiters = list(self._waiters)
            # Taken together, so what a waiter sees done is in the snapshot pushed.
            with cache.lock:
                generation = cache.generation
                arguments = None
                if generation != self._pushed_generation:
                    arguments = cache.snapshot_arguments()
                satisfied = [w for w in waiters if w.done()]
            committed = [w for w in satisfied if w.at_commit]
            if committed:
                self._answer_waiters(committed, committed)
                waiters = [w for w in waiters if not w.at_commit or w not in committed]
                satisfied = [w for w in satisfied if not w.at_commit]
            if arguments is not None:
                started = time.monotonic()
                if self.server is not None:
                    self.server.apply_metadata(*arguments)
                took = time.monotonic() - started
                if took > SLOW_PUSH_S:
                    _log.warning(
                        "broker %d: a metadata snapshot took %.0f ms to apply",
                        self.broker_id,
                        took * 1000,
                    )
                self._pushed_generation = generation
            self._answer_waiters(waiters, satisfied)

    def _push_small(self) -> None:
        """Security, client quotas, client-metrics subscriptions and group configs: read
        whole (they are small), each read re-arming its watch."""
        assert self.zk is not None
        with self._sync_lock:
            self._small_dirty = False
            shared = shared_security.read_state(
                self.zk, self.broker_id, self._decrypter, self._watch
            )
            quotas = client_quotas.read_all(self.zk, self._watch)
            subscriptions = entity_configs.read_all(
                self.zk, client_metrics.ENTITY_TYPE, self._watch
            )
            groups = entity_configs.read_all(self.zk, group_configs.ENTITY_TYPE, self._watch)
            if self.server is not None:
                self.server.apply_shared_security(shared)
                self.server.apply_client_quotas(json.dumps(quotas))
                self.server.apply_client_metrics(json.dumps(subscriptions))
                self.server.apply_group_configs(json.dumps(groups))

    def wait_for(
        self,
        request_id: int,
        done: Callable[[], bool],
        timeout_s: float,
        what: str,
        at_commit: bool = False,
    ) -> None:
        """Answer admin request ``request_id`` once ``done`` shows in a pushed snapshot
        (``at_commit``: in the cache), REQUEST_TIMED_OUT after ``timeout_s``; the admin
        loop goes on meanwhile."""
        waiter = _Waiter(request_id, done, time.monotonic() + timeout_s, what, at_commit)
        with self._waiters_lock:
            self._waiters.append(waiter)
        self._push_wanted.set()

    def _answer_waiters(self, waiters: list[_Waiter], satisfied: list[_Waiter]) -> None:
        server = self.server
        if not waiters or server is None:
            return
        now = time.monotonic()
        timeout = _core.error_code("REQUEST_TIMED_OUT")
        outcomes = [(w, 0, "") for w in satisfied] + [
            (w, timeout, f"the controller did not {w.what} in time")
            for w in waiters
            if now >= w.deadline and all(w is not d for d in satisfied)
        ]
        # Claimed first: the push loop and the admin loop both answer waiters.
        with self._waiters_lock:
            outcomes = [o for o in outcomes if any(o[0] is w for w in self._waiters)]
            self._waiters = [w for w in self._waiters if all(w is not o[0] for o in outcomes)]
        for w, code, message in outcomes:
            server.complete_admin_request(w.request_id, code, message)

    def _answer_committed(self) -> None:
        """Answer the waiters answered at commit whose condition the cache shows now (the
        controller's writes, or states just read), not after the next snapshot push."""
        with self._waiters_lock:
            waiting = [w for w in self._waiters if w.at_commit]
        if not waiting or self.cache is None:
            return
        with self.cache.lock:
            done = [w for w in waiting if w.done()]
        self._answer_waiters(done, done)

    def _watch_liveness(self) -> None:
        """The controller watches every other broker; the others watch the controller."""
        cache, probe = self.cache, self._probe
        if cache is None or probe is None:
            return
        if self._controller is not None:
            ids = [b for b in cache.brokers if b != self.broker_id]
        else:
            seat = cache.controller
            ids = [seat[0]] if seat is not None and seat[0] != self.broker_id else []
        targets = []
        for b in ids:
            reg = cache.brokers.get(b)
            if reg is None:
                continue
            address = znodes.endpoint(reg.data, self.inter_broker_listener)
            if address is not None:
                targets.append(liveness.Target(b, address[0], address[1], reg.session))
        probe.watch(targets)

    def _gone(self, target: liveness.Target) -> None:
        """A broker's process is proven gone: remove its registration (and the controller
        seat, if it held it) now, as its session's expiry would later; the controller then
        moves its leaderships. The znodes go only while they are still the dead session's:
        a new run of that broker registers afresh."""
        zk = self.zk
        if zk is None or self._stopping.is_set():
            return
        for path in (znodes.broker_path(target.broker_id), znodes.CONTROLLER):
            try:
                stat = zk.exists(path)
                if stat is not None and stat.ephemeralOwner == target.session:
                    zk.delete(path, version=stat.version)
                    _log.warning(
                        "broker %d: removed %s of broker %d (session 0x%x), whose process "
                        "is gone, without waiting for its session to expire",
                        self.broker_id,
                        path,
                        target.broker_id,
                        target.session,
                    )
            except (NoNodeError, BadVersionError):
                pass

    def _admin_loop(self) -> None:
        handler = AdminHandler(self.zk, self.sync_now, self.broker_id, self)  # type: ignore[arg-type]
        handler.encoder = self.encoder
        # ISR proposals taken but not yet written nor answered: a burst of them is written
        # together, and one snapshot serves all of them.
        proposals: list[tuple[int, dict[str, Any]]] = []
        # A request taken while gathering a burst of topic creations, handled next.
        held: tuple[int, dict[str, Any]] | None = None
        while not self._stopping.is_set():
            server = self.server
            if server is None:
                return
            try:
                if held is not None:
                    request, held = held, None
                else:
                    request = server.next_admin_request(0 if proposals else 500)
            except RuntimeError:
                return
            if proposals and (
                request is None or request[1]["op"] != "alter_isr" or len(proposals) >= ISR_BURST
            ):
                self._commit_isr_proposals(server, proposals)
                proposals = []
            if request is None:
                continue
            request_id, op = request
            try:
                if op["op"] == "alter_isr":
                    proposals.append((request_id, op))
                    continue
                if op["op"] == "create_topic":
                    # The topics of one CreateTopics (queued together) and of any other
                    # request queued behind it are created together.
                    batch = [(request_id, op)]
                    while len(batch) < CREATE_BURST:
                        more = server.next_admin_request(0)
                        if more is None:
                            break
                        if more[1]["op"] != "create_topic":
                            held = more
                            break
                        batch.append(more)
                    self._create_topics(server, handler, batch)
                    continue
                handler.request_id = request_id
                answer = handler.handle(op)
                if answer is None:
                    continue  # answered by a waiter
                code, message = answer
            except Exception as e:
                _log.exception("broker %d: admin request %s failed", self.broker_id, op)
                code, message = _core.error_code("UNKNOWN_SERVER_ERROR"), str(e)
            server.complete_admin_request(request_id, code, message)

    def _create_topics(
        self,
        server: _core.BrokerServer,
        handler: AdminHandler,
        batch: list[tuple[int, dict[str, Any]]],
    ) -> None:
        """Create a burst of topics; answer at once those refused (the others are answered
        by waiters once elected)."""
        try:
            answers = handler.create_topics(batch)
        except Exception as e:
            _log.exception("broker %d: creating %d topic(s) failed", self.broker_id, len(batch))
            failed = (_core.error_code("UNKNOWN_SERVER_ERROR"), str(e))
            answers = [(request_id, failed) for request_id, _op in batch]
        for request_id, answer in answers:
            if answer is not None:
                server.complete_admin_request(request_id, *answer)

    def _commit_isr_proposals(
        self, server: _core.BrokerServer, proposals: list[tuple[int, dict[str, Any]]]
    ) -> None:
        """Write a burst of ISR proposals, then answer them. A leader stops counting the
        members its proposal adds once answered, so the snapshot that shows whether they
        were written goes in first: the proposals' partition states are read again after
        the writes. A failed write or read answers with an error: the outcome stays
        unknown to the leader."""
        assert self.cache is not None and self.zk is not None
        code, message = 0, ""
        try:
            isr.commit_all(self.zk, [op for _id, op in proposals])
            self.cache.read_states({(op["topic"], int(op["partition"])) for _id, op in proposals})
            self._push_metadata()
        except Exception as e:
            _log.warning("broker %d: no snapshot after ISR changes: %s", self.broker_id, e)
            code, message = _core.error_code("UNKNOWN_SERVER_ERROR"), str(e)
        for request_id, _op in proposals:
            server.complete_admin_request(request_id, code, message)

    def is_controller(self) -> bool:
        return self._controller is not None

    def _leads_any_movable(self) -> bool:
        """Whether this broker still leads a partition the controller can hand to another
        in-sync replica that is registered. A partition with no such replica stays put
        (Kafka's controlled shutdown skips it too): when a whole cluster stops at once,
        waiting for it would only run out the timeout."""
        cache = self.cache
        assert cache is not None
        with cache.lock:
            others = set(cache.brokers) - {self.broker_id}
            return any(
                ps.state.leader == self.broker_id and any(r in others for r in ps.state.isr)
                for ps in cache.states.values()
            )

    def _shut_down_under_control(self, timeout_s: float) -> None:
        """Kafka's controlled shutdown, through ZooKeeper: leave ``/brokers/ids`` while
        still serving, so the controller (this broker's own loop, if it holds the seat)
        moves every leadership it can off it; wait until none is left, then take that last
        snapshot, so clients are told NOT_LEADER_OR_FOLLOWER rather than cut off."""
        assert self.zk is not None
        self._leaving.set()
        path = znodes.broker_path(self.broker_id)
        stat = self.zk.exists(path)
        # Only our own registration: never a live namesake's (a refused duplicate id).
        if stat is None or stat.ephemeralOwner != self.zk.client_id[0]:
            return
        try:
            self.zk.delete(path, version=stat.version)
        except Exception:  # already gone: nothing to hand over
            return
        self._wake.set()
        deadline = time.monotonic() + timeout_s
        while self._leads_any_movable() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.sync_now()

    def stop(self) -> None:
        """Leave the cluster -- under control when ``controlled.shutdown.enable`` (the
        default) -- then stop the Rust broker. Closing the session drops this broker's
        znodes, so leaderships move at once even without control."""
        if (
            self.controlled_shutdown
            and self.server is not None
            and self.zk is not None
            and self.cache is not None
            and self.zk.connected
        ):
            try:
                self._shut_down_under_control(min(self.session_ms / 1000, 30.0))
            except Exception:
                _log.exception("broker %d: controlled shutdown failed", self.broker_id)
        self._stopping.set()
        self._wake.set()
        self._push_wanted.set()
        if self._probe is not None:
            self._probe.stop()
        zk, self.zk = self.zk, None
        if zk is not None:
            try:
                zk.stop()
                zk.close()
            except Exception:
                pass
        for t in self._threads:
            t.join(5)
        server, self.server = self.server, None
        if server is not None:
            server.stop()


__all__ = ["ClusterNode", "ClusterStartError"]
