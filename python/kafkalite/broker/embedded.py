"""The embedded broker: ``with Broker() as b: ... b.bootstrap_servers``."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from kafkalite import _core


class Broker:
    """A single-node Kafka broker running inside this process.

    The wire protocol is served by Rust threads; Python only starts and stops it. With no
    arguments it listens on an ephemeral port of 127.0.0.1 and keeps its data in a temporary
    directory that is removed when it stops. ``config`` takes Kafka's broker keys
    (``num.partitions``, ``log.retention.ms``, ...).
    """

    def __init__(
        self,
        log_dirs: str | Path | list[str | Path] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Mapping[str, object] | None = None,
        worker_threads: int = 2,
    ) -> None:
        self._owned_dir: Path | None = None
        if log_dirs is None:
            self._owned_dir = Path(tempfile.mkdtemp(prefix="kafkalite-"))
            dirs = [self._owned_dir]
        elif isinstance(log_dirs, (str, Path)):
            dirs = [Path(log_dirs)]
        else:
            dirs = [Path(d) for d in log_dirs]
        self.log_dirs = dirs
        settings: dict[str, str] = {
            "listeners": f"PLAINTEXT://{host}:{port}",
            "log.dirs": ",".join(str(d) for d in dirs),
        }
        settings.update({k: _kafka_value(v) for k, v in (config or {}).items()})
        self._settings = settings
        self._worker_threads = worker_threads
        self._server: _core.BrokerServer | None = None

    def start(self) -> Broker:
        if self._server is None:
            self._server = _core.BrokerServer(self._settings, self._worker_threads)
        return self

    def stop(self) -> None:
        """Stop serving and close every log cleanly; removes a temporary data dir."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.running

    @property
    def port(self) -> int:
        return self._require().addresses[0][2]

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` as clients should use it."""
        _name, host, port = self._require().advertised_listeners[0]
        return f"{host}:{port}"

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
        where = self.bootstrap_servers if self.running else "stopped"
        return f"Broker({where}, log_dirs={[str(d) for d in self.log_dirs]})"


def _kafka_value(value: object) -> str:
    """Config values as Kafka writes them (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
