"""LEDBAT (RFC 6817) as a sans-I/O core: delay estimates and the sender's window.

The receiver only echoes, per packet, the one-way delay it measured (``hosts/e2e_host.py``)."""

from hosts.ledbat.delays import DelayEstimates
from hosts.ledbat.sender import LedbatSender

__all__ = ["DelayEstimates", "LedbatSender"]
