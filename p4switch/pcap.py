"""Classic pcap files (LINKTYPE_ETHERNET, µs timestamps) and per-port captures.

Why: frames in and out of every port can be inspected with tcpdump/wireshark/scapy, as with
BMv2's ``--pcap DIR``. Timestamps come from the switch scheduler (``now_ns``), so a
simulation's captures carry virtual time and a real-time switch's carry its clock (0 at
start; pass ``epoch_ns`` to shift them to wall-clock time).

File names in a capture directory follow BMv2's ``--pcap``: ``<name>_in.pcap`` (frames
received by the port) and ``<name>_out.pcap`` (frames it transmitted), where ``<name>`` is
the interface name (``netns``) or the port's name (``sim``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["PcapError", "PcapWriter", "PortCapture", "read_pcap", "LINKTYPE_ETHERNET"]

LINKTYPE_ETHERNET = 1
MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")


class PcapError(Exception):
    """A pcap file is malformed; the message names the file and the offset."""


class PcapWriter:
    """Writes one classic little-endian pcap file with microsecond timestamps."""

    def __init__(self, path: str | os.PathLike[str], snaplen: int = 65535,
                 linktype: int = LINKTYPE_ETHERNET, autoflush: bool = False) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self.autoflush = autoflush
        self.count = 0
        self._f: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._f.write(_GLOBAL.pack(MAGIC_US, 2, 4, 0, 0, snaplen, linktype))
        if autoflush:
            self._f.flush()

    def write(self, frame: bytes, ts_ns: int) -> None:
        """Append ``frame`` captured at ``ts_ns`` (truncated to µs, as the format holds)."""
        if self._f is None:
            raise PcapError(f"{self.path}: write after close")
        if ts_ns < 0:
            raise PcapError(f"{self.path}: negative timestamp {ts_ns} ns")
        sec, rem_ns = divmod(ts_ns, 1_000_000_000)
        data = bytes(frame[: self.snaplen])
        self._f.write(_RECORD.pack(sec, rem_ns // 1000, len(data), len(frame)))
        self._f.write(data)
        self.count += 1
        if self.autoflush:
            self._f.flush()

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self) -> PcapWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def read_pcap(path: str | os.PathLike[str]) -> list[tuple[int, bytes]]:
    """Read a classic pcap (either byte order, µs or ns magic) as ``[(ts_ns, frame), ...]``."""
    raw = Path(path).read_bytes()
    if len(raw) < _GLOBAL.size:
        raise PcapError(f"{path}: too short for a pcap global header ({len(raw)} bytes)")
    magic_le = struct.unpack_from("<I", raw)[0]
    endian = "<" if magic_le in (MAGIC_US, MAGIC_NS) else ">"
    magic = struct.unpack_from(endian + "I", raw)[0]
    if magic not in (MAGIC_US, MAGIC_NS):
        raise PcapError(f"{path}: not a classic pcap file (magic 0x{magic_le:08x})")
    frac_ns = 1 if magic == MAGIC_NS else 1000
    record = struct.Struct(endian + "IIII")
    out: list[tuple[int, bytes]] = []
    off = _GLOBAL.size
    while off < len(raw):
        if off + record.size > len(raw):
            raise PcapError(f"{path}: truncated record header at offset {off}")
        sec, frac, incl, _orig = record.unpack_from(raw, off)
        off += record.size
        if off + incl > len(raw):
            raise PcapError(f"{path}: truncated record data at offset {off}")
        out.append((sec * 1_000_000_000 + frac * frac_ns, raw[off: off + incl]))
        off += incl
    return out


class PortCapture:
    """Per-port in/out pcap files in one directory, named like BMv2's ``--pcap``.

    ``clock`` returns the current time in ns (a scheduler's ``now_ns``); ``epoch_ns`` is added
    to every timestamp. :meth:`open_port` creates a port's two files at once (as BMv2 does at
    start, so a capture of a port that saw no frame is an empty pcap, not a missing file);
    a port not opened so gets its file at its first frame in that direction.
    """

    def __init__(self, directory: str | os.PathLike[str], clock: Callable[[], int],
                 epoch_ns: int = 0, autoflush: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._epoch_ns = epoch_ns
        self._autoflush = autoflush
        self._writers: dict[tuple[str, str], PcapWriter] = {}

    @staticmethod
    def file_name(name: str, direction: str) -> str:
        if direction not in ("in", "out"):
            raise ValueError(f"capture direction must be 'in' or 'out', got {direction!r}")
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"bad port name for a capture file: {name!r}")
        return f"{name}_{direction}.pcap"

    def path(self, name: str, direction: str) -> Path:
        return self.directory / self.file_name(name, direction)

    def open_port(self, name: str) -> None:
        """Create ``name``'s in and out files now (header only until frames come)."""
        for direction in ("in", "out"):
            self._writer(name, direction).flush()

    def record_in(self, name: str, frame: bytes) -> None:
        """A frame received by port ``name``."""
        self.record_at(name, "in", frame, self._clock())

    def record_out(self, name: str, frame: bytes) -> None:
        """A frame transmitted by port ``name``."""
        self.record_at(name, "out", frame, self._clock())

    def record_at(self, name: str, direction: str, frame: bytes, t_ns: int) -> None:
        """A frame port ``name`` received (``"in"``) or sent (``"out"``) at ``t_ns`` on the clock:
        for frames handed over in batches after they were seen (the engine's loop)."""
        self._writer(name, direction).write(frame, t_ns + self._epoch_ns)

    def _writer(self, name: str, direction: str) -> PcapWriter:
        w = self._writers.get((name, direction))
        if w is None:
            w = self._writers[(name, direction)] = PcapWriter(self.path(name, direction), autoflush=self._autoflush)
        return w

    def flush(self) -> None:
        for w in self._writers.values():
            w.flush()

    def close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers.clear()

    def __enter__(self) -> PortCapture:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
