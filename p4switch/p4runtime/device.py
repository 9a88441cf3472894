"""What the P4Runtime core needs from a switch, and a do-nothing switch for tests.

The core never runs packets: it asks the device to (re)load a pipeline, hands it
packet-outs, and reads/writes ``device.state``. The device calls
``core.packet_in(payload, metadata)`` when its pipeline sends a packet to the CPU
port; digests reach the core through ``RuntimeState.digests`` listeners.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from p4.config.v1 import p4info_pb2

from p4switch.state.runtime import RuntimeState


class PipelineLoadError(Exception):
    """The device cannot realize a pipeline config; the message says why.

    The core answers SetForwardingPipelineConfig with INVALID_ARGUMENT and this message.
    """


@runtime_checkable
class Device(Protocol):
    """The switch side of the P4Runtime server.

    ``load_pipeline`` replaces the running pipeline (forwarding state cleared) and
    must leave ``state`` set to the RuntimeState of the new pipeline, typically
    ``RuntimeState.from_p4info(p4info)`` plus the program's const entries. If it
    leaves ``state`` as None, the core builds one with its ``state_factory`` and
    assigns it to ``device.state``. ``verify_pipeline`` (optional) checks a config
    without loading it. Both raise PipelineLoadError.
    """

    state: RuntimeState | None

    def load_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None: ...

    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> None: ...


class NullDevice:
    """Accepts any pipeline and records packet-outs; for tests and dry runs."""

    def __init__(self, state_factory: Callable[[p4info_pb2.P4Info], RuntimeState] = RuntimeState.from_p4info,
                 reject: Callable[[p4info_pb2.P4Info, bytes], str | None] | None = None) -> None:
        self.state: RuntimeState | None = None
        self.device_config: bytes | None = None
        self.packet_outs: list[tuple[bytes, dict[str, int]]] = []
        self.loads = 0
        self._state_factory = state_factory
        self._reject = reject

    def verify_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        reason = self._reject(p4info, device_config) if self._reject else None
        if reason:
            raise PipelineLoadError(reason)

    def load_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        self.verify_pipeline(p4info, device_config)
        self.state = self._state_factory(p4info)
        self.device_config = device_config
        self.loads += 1

    def packet_out(self, payload: bytes, metadata: dict[str, int]) -> None:
        self.packet_outs.append((payload, dict(metadata)))
