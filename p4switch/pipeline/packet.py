"""A packet in flight through the pipeline, and the control-flow signals of compiled code.

A :class:`Packet` owns its PHV (``phv``, see ``layout``) and the bytes it arrived with,
and records what the program asked the architecture to do with it (clone, resubmit,
recirculate, truncate, digests). The architecture layer (the switch) reads those records
after ``run_ingress``/``run_egress``; the pipeline never acts on them itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

DROP_PORT = 511  # BMv2's drop port: egress_spec after mark_to_drop()

# standard_metadata.instance_type values (BMv2 numbering)
PKT_INSTANCE_TYPE_NORMAL = 0
PKT_INSTANCE_TYPE_INGRESS_CLONE = 1
PKT_INSTANCE_TYPE_EGRESS_CLONE = 2
PKT_INSTANCE_TYPE_COALESCED = 3
PKT_INSTANCE_TYPE_RECIRC = 4
PKT_INSTANCE_TYPE_REPLICATION = 5
PKT_INSTANCE_TYPE_RESUBMIT = 6


class ExitSignal(Exception):
    """``exit``: ends the current top-level control (raised, never per statement checked).

    Preallocated signals are raised ``.with_traceback(None)``: re-raising an instance
    otherwise chains every raise's traceback onto it (a leak per packet).
    """


class ReturnSignal(Exception):
    """``return [value]`` inside an action, function or control body."""

    def __init__(self, value: Any = None) -> None:
        super().__init__()
        self.value = value


class ParserReject(Exception):
    """The parser stops in ``reject``; ``code`` is the error number (None: keep the current one)."""

    def __init__(self, code: int | None) -> None:
        super().__init__(code)
        self.code = code


EXIT = ExitSignal()


@dataclass(frozen=True, slots=True)
class CloneRequest:
    """A ``clone*`` call: ``kind`` "I2E" or "E2E", the clone session, and what metadata
    the clone keeps: ``field_list`` (an ``@field_list`` id), or ``slots`` (clone3's list),
    or neither."""

    kind: str
    session: int
    field_list: int | None = None
    slots: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class PreserveRequest:
    """A resubmit/recirculate request and the metadata it keeps (as CloneRequest)."""

    field_list: int | None = None
    slots: tuple[int, ...] | None = None


class PacketPipeline(Protocol):
    """What a :class:`Packet` reads of the pipeline that made it (``pipeline.V1Pipeline`` is
    the one): its PHV template, standard metadata's slots and masks, and access by path. The
    pipeline makes packets and hands itself in; a packet never imports it."""

    template: list
    std_slots: dict[str, int]
    std_masks: dict[str, int]

    def read_path(self, pkt: Packet, path: str) -> Any: ...

    def write_path(self, pkt: Packet, path: str, value: int) -> None: ...

    def header_valid(self, pkt: Packet, path: str) -> bool: ...


class Packet:
    """One packet instance.

    ``data`` are the bytes the parser reads; ``payload`` the part it did not consume.
    ``now_us`` is the time of the current block (ingress or egress timestamp, µs).
    """

    __slots__ = ("phv", "data", "payload_offset", "now_us", "clone_request", "resubmit",
                 "recirculate", "truncate_len", "digests", "pipeline", "parsed", "logs",
                 "assert_failures", "deparsed")

    def __init__(self, pipeline: PacketPipeline, data: bytes, now_us: int) -> None:
        self.pipeline = pipeline
        self.phv: list = pipeline.template[:]
        self.data = data
        self.payload_offset = 0
        self.now_us = now_us
        self.clone_request: CloneRequest | None = None
        self.resubmit: PreserveRequest | None = None
        self.recirculate: PreserveRequest | None = None
        self.truncate_len: int | None = None
        self.digests: list[tuple[int, Any]] = []
        self.parsed = False
        self.logs: list[str] = []
        self.assert_failures = 0
        # The deparser's headers, when the engine ran it with egress (pipeline.run_egress):
        # kept so that the frame is not deparsed again; None after any write through this API.
        self.deparsed: bytes | None = None

    # ------------------------------------------------------------ accessors

    @property
    def payload(self) -> bytes:
        """The bytes after the last header the parser consumed."""
        return self.data[self.payload_offset:]

    @property
    def now_ns(self) -> int:
        return self.now_us * 1000

    def std(self, name: str) -> int:
        """A ``standard_metadata`` field by name (KeyError when there is none)."""
        return self.phv[self.pipeline.std_slots[name]]

    def set_std(self, name: str, value: int) -> None:
        """Set a ``standard_metadata`` field (wrapped to its width)."""
        slot = self.pipeline.std_slots[name]
        self.phv[slot] = value & self.pipeline.std_masks[name]
        self.deparsed = None

    @property
    def marked_to_drop(self) -> bool:
        """egress_spec is the drop port (mark_to_drop, in ingress or egress)."""
        return self.phv[self.pipeline.std_slots["egress_spec"]] == DROP_PORT

    def get(self, path: str) -> Any:
        """A scalar by its path from the parser's parameters: ``"hdr.ipv4.ttl"``,
        ``"meta.admitted"``, ``"standard_metadata.egress_spec"`` (for tests and tools);
        a header path gives None when the header is invalid, else a dict of its fields."""
        return self.pipeline.read_path(self, path)

    def set(self, path: str, value: int) -> None:
        """Write a scalar by path (see :meth:`get`)."""
        self.pipeline.write_path(self, path, value)

    def is_valid(self, path: str) -> bool:
        """Validity of the header at ``path``."""
        return self.pipeline.header_valid(self, path)

    def __repr__(self) -> str:
        return f"<Packet {len(self.data)} bytes, egress_spec={self.std('egress_spec')}>"
