"""The ALINEA report codec (docs/reference/wire-format.md), shared by switch agents and hosts.

One definition of the 42-byte report keeps the P4 header, the agents and the host
stacks from drifting apart; the P4 program builds reports, everything in Python reads
them through this module. Hosts' reports are built by the engine's ``HostReporter``
(engine/src/hosts/hostrecv.rs, per data packet); ``encode`` here is the reference its test
(tests/hosts/test_receiver.py) compares it with, byte for byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, NoReturn

ETHERTYPE_ALINEA: Final = 0x88B5
#: 2: the report carries its buffer's drain (``drained``, ``drained_ts``); version 1 had none.
VERSION: Final = 2
MSG_OCCUPANCY = 1
FLAG_OVERFLOW = 0x01
#: The report's class (per-destination classes, docs/howto/fabric.md) is in the flags' bits 7-5.
CLASS_SHIFT = 5
CLASS_MASK = 0xE0
ETH_BYTES: Final = 14
REPORT_BYTES: Final = 42
FRAME_BYTES: Final = ETH_BYTES + REPORT_BYTES

# version/type, flags, node, port, occupancy, capacity, timestamp (48 bits: high 16, low 32),
# seq, drops, interval_us, drained, drained_ts (48 bits: high 16, low 32)
_LAYOUT = struct.Struct("!BBHHIIHIIIIIHI")
assert _LAYOUT.size == REPORT_BYTES


class ReportError(ValueError):
    """The frame is not a well-formed ALINEA report."""


@dataclass
class Report:
    """One occupancy report, with the Ethernet addresses it travelled with.

    Not frozen, though nobody changes one, and with an ``__init__`` of its own: every report a
    switch hears is decoded into one (a third of a simulation's packet-hops), and the ``__init__``
    ``dataclass`` writes is Python even in the compiled module (a frozen one's sets each field by
    ``object.__setattr__``): a tenth of a simulation's CPU time, where mypyc compiles this one."""

    node_id: int
    port: int
    occupancy: int
    capacity: int
    timestamp_us: int
    seq: int
    drops: int = 0
    interval_us: int = 0
    flags: int = 0
    #: packets of this buffer that have left (wrapping at 2**32) and when the last left, µs on the
    #: reporter's clock (0: none yet): two reports give the buffer's drain exactly
    drained: int = 0
    drained_ts_us: int = 0
    dst_mac: int = 0
    src_mac: int = 0
    version: int = VERSION
    msg_type: int = MSG_OCCUPANCY

    def __init__(self, node_id: int, port: int, occupancy: int, capacity: int, timestamp_us: int, seq: int,
                 drops: int = 0, interval_us: int = 0, flags: int = 0, drained: int = 0, drained_ts_us: int = 0,
                 dst_mac: int = 0, src_mac: int = 0, version: int = VERSION, msg_type: int = MSG_OCCUPANCY) -> None:
        self.node_id, self.port, self.occupancy, self.capacity = node_id, port, occupancy, capacity
        self.timestamp_us, self.seq, self.drops, self.interval_us, self.flags = timestamp_us, seq, drops, interval_us, flags
        self.drained, self.drained_ts_us, self.dst_mac, self.src_mac = drained, drained_ts_us, dst_mac, src_mac
        self.version, self.msg_type = version, msg_type

    @property
    def fraction(self) -> float:
        """Occupancy as a fraction of the buffer (the paper's O(k) in [0, 1])."""
        return self.occupancy / self.capacity if self.capacity else 0.0

    @property
    def data_class(self) -> int:
        """The class of the reported buffer (0 with one class)."""
        return (self.flags & CLASS_MASK) >> CLASS_SHIFT


def is_report(frame: bytes) -> bool:
    return len(frame) >= ETH_BYTES and int.from_bytes(frame[12:14], "big") == ETHERTYPE_ALINEA


def decode(frame: bytes) -> Report:
    """Decode a report frame (Ethernet + report; padding after it is ignored)."""
    # A well-formed report passes one test (every report of a simulation comes here); anything
    # else is checked step by step, for the error that names what is wrong. The fields are read
    # byte by byte at _LAYOUT's offsets (tests/controlplane/test_report.py holds them to encode's):
    # compiled, a byte of a ``bytes`` is a C read and the shifts are on machine ints, where struct's
    # unpack and int.from_bytes went through Python calls, a tuple and an int object per field.
    b = frame
    if not (len(b) >= FRAME_BYTES and b[12] == ETHERTYPE_ALINEA >> 8 and b[13] == ETHERTYPE_ALINEA & 0xFF
            and b[ETH_BYTES] >> 4 == VERSION):
        _refuse(frame)
    vt = b[14]
    return Report(_u16(b, 16), _u16(b, 18), _u32(b, 20), _u32(b, 24), (_u16(b, 28) << 32) | _u32(b, 30),
                  _u32(b, 34), _u32(b, 38), _u32(b, 42), b[15], _u32(b, 46), (_u16(b, 50) << 32) | _u32(b, 52),
                  (_u16(b, 0) << 32) | _u32(b, 2), (_u16(b, 6) << 32) | _u32(b, 8), vt >> 4, vt & 0xF)


def _u16(b: bytes, i: int) -> int:
    """The big-endian 16-bit field at byte ``i``."""
    return (b[i] << 8) | b[i + 1]


def _u32(b: bytes, i: int) -> int:
    """The big-endian 32-bit field at byte ``i``."""
    return (b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]


def _refuse(frame: bytes) -> NoReturn:
    """The ReportError that says why ``frame`` is not a report :func:`decode` reads."""
    if not is_report(frame):
        raise ReportError(f"not an ALINEA frame (EtherType 0x{ETHERTYPE_ALINEA:04x} expected)")
    if len(frame) <= ETH_BYTES:
        raise ReportError(f"ALINEA frame of {len(frame)} bytes, a report needs {FRAME_BYTES}")
    if frame[ETH_BYTES] >> 4 != VERSION:
        raise ReportError(f"ALINEA report version {frame[ETH_BYTES] >> 4}, this decoder reads version {VERSION} "
                          "(a switch running an older alinea.p4: rebuild it with `make p4`)")
    raise ReportError(f"ALINEA frame of {len(frame)} bytes, a report needs {FRAME_BYTES}")


def encode(report: Report) -> bytes:
    """A report frame as the data plane builds it (hosts, which report like nodes, build the same bytes
    in the engine)."""
    ts = report.timestamp_us & 0xFFFF_FFFF_FFFF
    dts = report.drained_ts_us & 0xFFFF_FFFF_FFFF
    body = _LAYOUT.pack((report.version << 4) | report.msg_type, report.flags, report.node_id, report.port,
                        report.occupancy, report.capacity, ts >> 32, ts & 0xFFFF_FFFF, report.seq,
                        report.drops, report.interval_us, report.drained & 0xFFFF_FFFF, dts >> 32,
                        dts & 0xFFFF_FFFF)
    eth = report.dst_mac.to_bytes(6, "big") + report.src_mac.to_bytes(6, "big") + ETHERTYPE_ALINEA.to_bytes(2, "big")
    return eth + body
