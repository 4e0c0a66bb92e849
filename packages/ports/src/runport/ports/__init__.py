"""The runtime port: ``RuntimeAdapter``, ``PortError`` and ``Sink`` (docs/streaming-law.md)."""

from runport.ports._adapter import RuntimeAdapter, Sink
from runport.ports._errors import PortError

__all__ = ["PortError", "RuntimeAdapter", "Sink"]
