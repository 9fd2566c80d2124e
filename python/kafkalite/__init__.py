"""kafkalite: a Kafka-compatible commit log with a Rust core, embeddable from Python."""

from kafkalite._core import PartitionLog, __version__, io_engine
from kafkalite.broker import Broker
from kafkalite.errors import KafkaliteError

__all__ = ["Broker", "KafkaliteError", "PartitionLog", "__version__", "io_engine"]
