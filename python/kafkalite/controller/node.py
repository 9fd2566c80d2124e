"""One broker of a cluster: the Rust broker plus its ZooKeeper session. Started by
``kafkalite broker`` when ``zookeeper.connect`` is set.

The session registers the broker (ephemeral ``/brokers/ids/<id>``), takes part in
controller election, runs the controller while this broker holds ``/controller``, keeps
the Rust broker's metadata in step with ZooKeeper (watches, then a whole snapshot pushed
through ``apply_metadata``) and answers the admin requests clients send this broker.
One thread does the ZooKeeper work in order; a second drains admin requests."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafkalite import _core
from kafkalite.controller import (
    client_metrics,
    client_quotas,
    election,
    entity_configs,
    group_configs,
    isr,
    shared_security,
    snapshot,
    znodes,
)
from kafkalite.controller.admin import AdminHandler
from kafkalite.controller.controller import Controller, Fenced, Rebalance
from kafkalite.controller.password_encoder import PasswordEncoder, PasswordEncoderError
from kafkalite.errors import KafkaliteError
from kafkalite.monitoring.scrape import endpoint_url

_log = logging.getLogger("kafkalite.cluster")

# Kafka's defaults.
SESSION_TIMEOUT_MS = 18000
# How often the loop re-reads ZooKeeper even without a watch firing (a safety net).
RESYNC_S = 2.0


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
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._sync_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._controller: Controller | None = None
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
            for path in znodes.PERSISTENT_PATHS:
                zk.ensure_path(path)
            try:
                zk.create(
                    znodes.CLUSTER_ID,
                    znodes.cluster_id_json(znodes.topic_id_string(uuid.uuid4())),
                    makepath=True,
                )
            except NodeExistsError:
                pass
            if zk.exists(znodes.broker_path(self.broker_id)):
                raise self._duplicate(connect)
            dynamic = self._read_secrets()
            self.server = _core.BrokerServer(
                self.settings, self.worker_threads, json.dumps(dynamic)
            )
            self._decrypter.strict = False
            self._check_inter_broker_listener()
            # Topics and leaders before registering: once others see this broker (the
            # launcher waits for that), its Metadata already describes the cluster.
            self.sync_now()
            self._register(connect)
        except BaseException:
            self.stop()
            raise
        # One pass before serving as a cluster member, so this broker's first Metadata
        # answer already names the live brokers and the controller.
        self._step()
        zk.add_listener(self._session_event)
        for target, name in ((self._loop, "zk-loop"), (self._admin_loop, "zk-admin")):
            t = threading.Thread(
                target=target, name=f"kafkalite-{name}-{self.broker_id}", daemon=True
            )
            t.start()
            self._threads.append(t)
        self._wake.set()
        return self

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
        # A new session after an expiry has lost the ephemeral znodes: the loop
        # re-registers. Called on kazoo's thread, so it only wakes the loop.
        if state == KazooState.CONNECTED or state == KazooState.LOST:
            self._wake.set()

    def _watch(self, _event: object) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(RESYNC_S)
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

    def _step(self) -> None:
        zk = self.zk
        assert zk is not None
        if not zk.connected:
            return
        me = zk.client_id[0] if zk.client_id else None
        path = znodes.broker_path(self.broker_id)
        stat = zk.exists(path)
        if stat is None and self._leaving.is_set():
            pass
        elif stat is None:
            self._register(self.settings["zookeeper.connect"])
        elif stat.ephemeralOwner != me:
            # The znode of a previous session of ours, about to expire: try again then.
            return
        seat = election.current_controller(zk)
        if seat is None:
            term = election.try_elect(zk, self.broker_id)
            if term is not None:
                _log.info("broker %d is the controller, epoch %d", self.broker_id, term.epoch)
                self._controller = Controller(
                    zk,
                    self.broker_id,
                    term,
                    self.unclean,
                    watch=self._watch,
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
        self.sync_now()

    def sync_now(self) -> None:
        """Read ZooKeeper and push the snapshot into the Rust broker."""
        assert self.zk is not None
        with self._sync_lock:
            snap = snapshot.read(self.zk, self._watch)
            shared = shared_security.read_state(
                self.zk, self.broker_id, self._decrypter, self._watch
            )
            quotas = client_quotas.read_all(self.zk, self._watch)
            subscriptions = entity_configs.read_all(
                self.zk, client_metrics.ENTITY_TYPE, self._watch
            )
            groups = entity_configs.read_all(self.zk, group_configs.ENTITY_TYPE, self._watch)
            if self.server is not None:
                self.server.apply_metadata(*snap.as_arguments())
                self.server.apply_shared_security(shared)
                self.server.apply_client_quotas(json.dumps(quotas))
                self.server.apply_client_metrics(json.dumps(subscriptions))
                self.server.apply_group_configs(json.dumps(groups))

    def _admin_loop(self) -> None:
        handler = AdminHandler(self.zk, self.sync_now, self.broker_id)  # type: ignore[arg-type]
        handler.encoder = self.encoder
        # ISR proposals written but not yet answered: one snapshot serves all of them.
        proposals: list[int] = []
        while not self._stopping.is_set():
            server = self.server
            if server is None:
                return
            try:
                request = server.next_admin_request(0 if proposals else 500)
            except RuntimeError:
                return
            if proposals and (request is None or request[1]["op"] != "alter_isr"):
                self._answer_isr_proposals(server, proposals)
                proposals = []
            if request is None:
                continue
            request_id, op = request
            try:
                if op["op"] == "alter_isr":
                    isr.commit(self.zk, op)  # type: ignore[arg-type]
                    proposals.append(request_id)
                    continue
                code, message = handler.handle(op)
            except Exception as e:
                _log.exception("broker %d: admin request %s failed", self.broker_id, op)
                code, message = _core.error_code("UNKNOWN_SERVER_ERROR"), str(e)
            server.complete_admin_request(request_id, code, message)

    def _answer_isr_proposals(self, server: _core.BrokerServer, ids: list[int]) -> None:
        """A leader stops counting the members its proposal adds once answered, so the
        snapshot that shows whether they were written goes in first. A failed snapshot
        answers with an error: the outcome stays unknown to the leader."""
        code, message = 0, ""
        try:
            self.sync_now()
        except Exception as e:
            _log.warning("broker %d: no snapshot after ISR changes: %s", self.broker_id, e)
            code, message = _core.error_code("UNKNOWN_SERVER_ERROR"), str(e)
        for request_id in ids:
            server.complete_admin_request(request_id, code, message)

    def is_controller(self) -> bool:
        return self._controller is not None

    def _leads_any_movable(self) -> bool:
        """Whether this broker still leads a partition the controller can hand to another
        in-sync replica that is registered. A partition with no such replica stays put
        (Kafka's controlled shutdown skips it too): when a whole cluster stops at once,
        waiting for it would only run out the timeout."""
        assert self.zk is not None
        snap = snapshot.read(self.zk)
        others = {b.broker_id for b in snap.brokers} - {self.broker_id}
        return any(
            leader == self.broker_id and any(r in others for r in isr)
            for _tid, _configs, parts in snap.topics.values()
            for _p, leader, _epoch, _replicas, isr in parts
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
            and self.zk.connected
        ):
            try:
                self._shut_down_under_control(min(self.session_ms / 1000, 30.0))
            except Exception:
                _log.exception("broker %d: controlled shutdown failed", self.broker_id)
        self._stopping.set()
        self._wake.set()
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
