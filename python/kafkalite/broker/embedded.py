"""The embedded broker: ``with Broker() as b: ... b.bootstrap_servers``."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from kafkalite import _core
from kafkalite.broker.properties import validate_settings

# Raised by start() when another broker or process holds a log dir's `.lock` (the Rust
# broker takes it for every log dir it opens); a KafkaStorageError and an OSError.
from kafkalite.errors import LogDirInUseError
from kafkalite.monitoring.scrape import endpoint_url

__all__ = ["Broker", "LogDirInUseError"]

_log = logging.getLogger("kafkalite.broker")


class Broker:
    """A single-node Kafka broker running inside this process.

    The wire protocol is served by Rust threads; Python only starts and stops it. With no
    arguments it listens on an ephemeral port of 127.0.0.1 and keeps its data in a temporary
    directory that is removed when it stops. ``config`` takes Kafka's broker keys
    (``num.partitions``, ``log.retention.ms``, ``listeners``, ...) and wins over ``host`` and
    ``port``. Unlike the daemon, it defaults ``group.initial.rebalance.delay.ms`` to 0, so
    consumer groups form at once.
    """

    def __init__(
        self,
        log_dirs: str | Path | Sequence[str | Path] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Mapping[str, object] | None = None,
        worker_threads: int = 2,
    ) -> None:
        self._config = {k: _kafka_value(v) for k, v in (config or {}).items()}
        # Kafka waits 3 s for more members before a new group's first rebalance; in a test
        # or a notebook that is just a 3 s stall (Kafka's own test harness sets 0 too).
        self._config.setdefault("group.initial.rebalance.delay.ms", "0")
        # Kafka reads log.dirs and falls back to log.dir.
        singular = self._config.pop("log.dir", None)
        from_config = self._config.pop("log.dirs", singular)
        if log_dirs is not None and from_config is not None:
            raise ValueError("give log_dirs or config['log.dirs'], not both")
        if log_dirs is None:
            log_dirs = from_config
        # A temporary dir is made by start() and removed by stop(), so a Broker that never
        # starts leaves nothing behind.
        self._owns_dirs = log_dirs is None
        if log_dirs is None:
            dirs = []
        elif isinstance(log_dirs, Path):
            dirs = [log_dirs]
        elif isinstance(log_dirs, str):
            # Kafka's comma-separated form, as in log.dirs.
            dirs = [Path(d.strip()) for d in log_dirs.split(",") if d.strip()]
        else:
            dirs = [Path(d) for d in log_dirs]
        self.log_dirs: list[Path] = dirs
        self._listeners = f"PLAINTEXT://{_bracketed(host)}:{port}"
        self._worker_threads = worker_threads
        self._server: _core.BrokerServer | None = None

    @property
    def settings(self) -> dict[str, str]:
        """The Kafka broker keys this broker is started with."""
        settings = {"listeners": self._listeners, **self._config}
        settings["log.dirs"] = ",".join(str(d) for d in self.log_dirs)
        return settings

    def start(self) -> Broker:
        """Validate the config, then lock the log dirs, bind and serve (in Rust). A no-op
        when running; raises LogDirInUseError when another broker holds a log dir."""
        if self._server is not None:
            return self
        if self._owns_dirs:
            self.log_dirs = [Path(tempfile.mkdtemp(prefix="kafkalite-"))]
        settings = self.settings
        try:
            for warning in validate_settings(settings):
                _log.warning("%s", warning)
            self._server = _core.BrokerServer(settings, self._worker_threads)
        except BaseException:
            self._release()
            raise
        return self

    def stop(self) -> None:
        """Stop serving and close every log cleanly; removes a temporary data dir.
        Idempotent."""
        server, self._server = self._server, None
        try:
            if server is not None:
                server.stop()
        finally:
            self._release()

    def _release(self) -> None:
        if self._owns_dirs:
            for d in self.log_dirs:
                shutil.rmtree(d, ignore_errors=True)
            self.log_dirs = []

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.running

    @property
    def port(self) -> int:
        """The bound port of the first listener (resolved when it was 0)."""
        return self._require().addresses[0][2]

    @property
    def addresses(self) -> list[tuple[str, str, int]]:
        """(listener name, bound host, bound port) for every listener."""
        return self._require().addresses

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` when ``metrics.listen`` is set, else None."""
        return endpoint_url(self._require().metrics_address)

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` as clients should use it (the first advertised listener)."""
        _name, host, port = self._require().advertised_listeners[0]
        return f"{_bracketed(host)}:{port}"

    def compact(
        self, topic: str | None = None, *, force: bool = True
    ) -> list[tuple[str, int, _core.CompactionStats]]:
        """Run the log cleaner now over ``topic`` (every topic when None).

        The broker also cleans in the background every ``log.cleaner.backoff.ms``, when a
        partition's dirty ratio reaches ``min.cleanable.dirty.ratio``; ``force`` cleans
        whatever is cleanable now, rolling the active segment first (it is never cleaned).
        Returns (topic, partition, stats) per partition; topics whose ``cleanup.policy``
        lacks ``compact`` come back with ``stats.skipped`` set.
        """
        return self._require().compact(topic, force)

    def _require(self) -> _core.BrokerServer:
        if self._server is None:
            raise RuntimeError("the broker is not running; call start() or use `with`")
        return self._server

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self._server is not None else "stopped"
        return f"Broker({where}, log_dirs={[str(d) for d in self.log_dirs]})"


def _kafka_value(value: object) -> str:
    """Config values as Kafka writes them (booleans lower-case, lists comma-separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_kafka_value(v) for v in value)
    return str(value)


def _bracketed(host: str) -> str:
    """IPv6 literals need brackets in host:port strings."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
