"""kafkalite: a Kafka-compatible commit log with a Rust core, embeddable from Python."""

from kafkalite._core import PartitionLog, __version__, io_engine
from kafkalite.broker import Broker
from kafkalite.errors import KafkaliteError

__all__ = ["Broker", "Cluster", "KafkaliteError", "PartitionLog", "__version__", "io_engine"]


def __getattr__(name: str) -> object:
    # The local cluster needs kazoo and ZooKeeper; single-node use never imports them.
    if name == "Cluster":
        from kafkalite.cluster import Cluster

        return Cluster
    raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
