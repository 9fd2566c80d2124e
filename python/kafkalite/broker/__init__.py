"""Broker lifecycle: the embedded broker and the ``kafkalite broker`` daemon."""

from kafkalite.broker.embedded import Broker

__all__ = ["Broker"]
