"""A pytest plugin that lets kafka-python's own integration tests (from its source
distribution, fetched by `kafka_python_suite`) run against an already-started kafkalite.

Their `test/integration/conftest.py` is used unchanged: with `KAFKA_URI` set it wraps the
broker at that address as an external fixture instead of spawning Apache Kafka. What the
sdist leaves out is the repository's harness, so this plugin provides the two pieces their
conftest imports and reaches: the `test` package (the sdist has no `test/__init__.py`, and the
standard library's `test` package would shadow a namespace package) and `test.service`,
whose `ExternalService` is all an external broker needs. Spawning a broker is refused:
this run only ever talks to the kafkalite the outer test started."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

_SRC = Path(os.environ["KAFKALITE_KAFKA_PYTHON_SRC"])


class ExternalService:
    """A broker someone else runs: nothing to open, close, or wait for."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def dump_logs(self) -> None:
        pass

    def wait_for(self, pattern: str, timeout: float = 30) -> bool:
        return True


class SpawnedService:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("this run uses the kafkalite broker at KAFKA_URI; it spawns none")


def _install_harness() -> None:
    pkg = types.ModuleType("test")
    pkg.__path__ = [str(_SRC / "test")]
    pkg.__file__ = str(_SRC / "test" / "__init__.py")
    sys.modules["test"] = pkg
    service = types.ModuleType("test.service")
    service.ExternalService = ExternalService
    service.SpawnedService = SpawnedService
    sys.modules["test.service"] = service
    pkg.service = service
    # The repository's top-level test conftest makes a failing future callback fail the
    # test instead of being logged; keep that strictness.
    from kafka.future import Future

    Future.error_on_callbacks = True


_install_harness()
