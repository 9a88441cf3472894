"""Counters, meters and registers: the extern state the data plane updates.

Indexed arrays hold one cell per index; direct counters/meters give every table
entry its own cell (``TableEntry.direct_counter`` / ``.direct_meter``). Meters are
the two-rate three-colour marker of RFC 2698 (P4Runtime's default meter type),
with colours numbered as v1model's ``V1MODEL_METER_COLOR_*`` constants. Time is
passed in (integer nanoseconds); nothing here reads a clock.

Counter cells and the cells of unsigned registers of up to 64 bits are ``hbh_engine.Cells``
(engine/src/p4/p4cells.rs): the engine's P4 program updates them per packet and the control
plane reads them here, one store for both (indexed like the lists they replace; a list where
the engine is not built, and for signed or wider registers, which the engine does not run).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from .errors import Code, StateError, invalid

try:
    from hbh_engine import Cells
except ImportError:  # the engine is not built: every block runs on the closures anyway
    Cells = None

GREEN = 0
YELLOW = 1
RED = 2
NS_PER_S = 1_000_000_000


class CounterUnit(IntEnum):
    """``p4.config.v1.CounterSpec.Unit``."""

    UNSPECIFIED = 0
    BYTES = 1
    PACKETS = 2
    BOTH = 3


class MeterUnit(IntEnum):
    """``p4.config.v1.MeterSpec.Unit``."""

    UNSPECIFIED = 0
    BYTES = 1
    PACKETS = 2


class MeterType(IntEnum):
    """``p4.config.v1.MeterSpec.Type``."""

    TWO_RATE_THREE_COLOR = 0
    SINGLE_RATE_THREE_COLOR = 1
    SINGLE_RATE_TWO_COLOR = 2


def check_index(name: str, index: int, size: int) -> int:
    """P4Runtime index rules: negative -> INVALID_ARGUMENT, too big -> OUT_OF_RANGE."""
    if index < 0:
        raise invalid(f"'{name}': negative index {index}")
    if index >= size:
        raise StateError(Code.OUT_OF_RANGE, f"'{name}': index {index} out of range (size {size})")
    return index


# ---------------------------------------------------------------- counters


class CounterCell:
    """One packet/byte counter (a direct counter's cell, or a meter colour count)."""

    __slots__ = ("packets", "bytes")

    def __init__(self, packets: int = 0, nbytes: int = 0) -> None:
        self.packets = packets
        self.bytes = nbytes

    def count(self, nbytes: int) -> None:
        self.packets += 1
        self.bytes += nbytes

    def set(self, packets: int, nbytes: int) -> None:
        if packets < 0 or nbytes < 0:
            raise invalid(f"negative counter value (packets={packets}, bytes={nbytes})")
        self.packets = packets
        self.bytes = nbytes

    def snapshot(self) -> tuple[int, int]:
        return self.packets, self.bytes


@dataclass(frozen=True, slots=True)
class DirectCounterInfo:
    id: int
    name: str
    unit: CounterUnit
    table_id: int


class CounterArray:
    """An indexed counter; packets and bytes are kept in two flat lists."""

    def __init__(self, counter_id: int, name: str, unit: CounterUnit, size: int) -> None:
        if size < 0:
            raise invalid(f"counter '{name}': negative size {size}")
        self.id = counter_id
        self.name = name
        self.unit = CounterUnit(unit)
        self.size = size
        self.packets = _cells(size, 64)
        self.bytes = _cells(size, 64)

    def count(self, index: int, nbytes: int) -> None:
        """Data-plane update; an index out of range is ignored (as BMv2 does)."""
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        check_index(self.name, index, self.size)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        check_index(self.name, index, self.size)
        if packets < 0 or nbytes < 0:
            raise invalid(f"counter '{self.name}': negative value (packets={packets}, bytes={nbytes})")
        self.packets[index] = packets
        self.bytes[index] = nbytes

    def reset(self) -> None:
        for i in range(self.size):
            self.packets[i] = self.bytes[i] = 0


# ------------------------------------------------------------------ meters


@dataclass(frozen=True, slots=True)
class MeterConfig:
    """Rates in units per second, bursts in units (units: bytes or packets)."""

    cir: int
    cburst: int
    pir: int
    pburst: int
    eburst: int = 0

    def check(self, name: str, meter_type: MeterType) -> MeterConfig:
        """The P4Runtime rules per meter type, plus RFC 2698's PIR >= CIR."""
        for field in ("cir", "cburst", "pir", "pburst", "eburst"):
            if getattr(self, field) < 0:
                raise invalid(f"meter '{name}': negative {field} {getattr(self, field)}")
        if meter_type == MeterType.TWO_RATE_THREE_COLOR:
            if self.eburst:
                raise invalid(f"meter '{name}': eburst must be unset for a two-rate three-colour meter")
            if self.pir < self.cir:
                raise invalid(f"meter '{name}': pir {self.pir} < cir {self.cir} (RFC 2698 needs PIR >= CIR)")
        else:
            if self.pir != self.cir or self.pburst != self.cburst:
                raise invalid(f"meter '{name}': a single-rate meter needs pir == cir and pburst == cburst")
            if meter_type == MeterType.SINGLE_RATE_TWO_COLOR and self.eburst:
                raise invalid(f"meter '{name}': eburst must be unset for a single-rate two-colour meter")
        return self


class MeterCell:
    """One meter; unconfigured it marks everything GREEN.

    Token buckets are kept in units x 1e9 so that refilling by ``rate * dt_ns``
    stays exact in integers. Buckets start full at the first packet (RFC 2698).
    """

    __slots__ = ("config", "meter_type", "unit", "_tc", "_tp", "_last_ns", "colors")

    def __init__(self, meter_type: MeterType = MeterType.TWO_RATE_THREE_COLOR,
                 unit: MeterUnit = MeterUnit.PACKETS) -> None:
        self.meter_type = meter_type
        self.unit = unit
        self.config: MeterConfig | None = None
        self._tc = 0
        self._tp = 0
        self._last_ns: int | None = None
        self.colors = (CounterCell(), CounterCell(), CounterCell())

    def configure(self, config: MeterConfig | None) -> None:
        """Set (None: reset to the default all-GREEN behaviour); refills the buckets."""
        self.config = config
        self._last_ns = None

    def reset_colors(self) -> None:
        for c in self.colors:
            c.set(0, 0)

    def execute(self, now_ns: int, nbytes: int) -> int:
        """Colour of a packet of ``nbytes`` (it costs 1 in a packet meter, nbytes in a byte meter)."""
        color = self._mark(now_ns, nbytes if self.unit == MeterUnit.BYTES else 1)
        self.colors[color].count(nbytes)
        return color

    def _mark(self, now_ns: int, units: int) -> int:
        cfg = self.config
        if cfg is None:
            return GREEN
        cmax, pmax = cfg.cburst * NS_PER_S, cfg.pburst * NS_PER_S
        if self.meter_type == MeterType.SINGLE_RATE_THREE_COLOR:
            pmax = cfg.eburst * NS_PER_S
        if self._last_ns is None:
            self._tc, self._tp = cmax, pmax
        else:
            self._refill(cfg, max(0, now_ns - self._last_ns), cmax, pmax)
        self._last_ns = now_ns
        cost = units * NS_PER_S
        if self.meter_type == MeterType.SINGLE_RATE_THREE_COLOR:
            return self._mark_sr(cost)
        if self._tp < cost:
            return RED
        if self._tc < cost:
            self._tp -= cost
            return YELLOW
        self._tp -= cost
        self._tc -= cost
        return GREEN

    def _refill(self, cfg: MeterConfig, dt_ns: int, cmax: int, pmax: int) -> None:
        if self.meter_type == MeterType.SINGLE_RATE_THREE_COLOR:
            tc = self._tc + cfg.cir * dt_ns  # RFC 2697: overflow of C feeds E
            self._tc = min(cmax, tc)
            self._tp = min(pmax, self._tp + max(0, tc - cmax))
            return
        self._tc = min(cmax, self._tc + cfg.cir * dt_ns)
        self._tp = min(pmax, self._tp + cfg.pir * dt_ns)

    def _mark_sr(self, cost: int) -> int:
        if self._tc >= cost:
            self._tc -= cost
            return GREEN
        if self._tp >= cost:
            self._tp -= cost
            return YELLOW
        return RED


@dataclass(frozen=True, slots=True)
class DirectMeterInfo:
    id: int
    name: str
    unit: MeterUnit
    meter_type: MeterType
    table_id: int


class MeterArray:
    """An indexed meter; cells are created when first configured or executed."""

    def __init__(self, meter_id: int, name: str, unit: MeterUnit, meter_type: MeterType, size: int) -> None:
        if size < 0:
            raise invalid(f"meter '{name}': negative size {size}")
        self.id = meter_id
        self.name = name
        self.unit = MeterUnit(unit)
        self.meter_type = MeterType(meter_type)
        self.size = size
        self.cells: dict[int, MeterCell] = {}

    def cell(self, index: int) -> MeterCell:
        check_index(self.name, index, self.size)
        c = self.cells.get(index)
        if c is None:
            c = self.cells[index] = MeterCell(self.meter_type, self.unit)
        return c

    def execute(self, index: int, now_ns: int, nbytes: int) -> int:
        """Data-plane call; an index out of range marks GREEN (nothing to meter)."""
        if not 0 <= index < self.size:
            return GREEN
        c = self.cells.get(index)
        if c is None:
            c = self.cells[index] = MeterCell(self.meter_type, self.unit)
        return c.execute(now_ns, nbytes)

    def configure(self, index: int, config: MeterConfig | None) -> None:
        if config is not None:
            config.check(self.name, self.meter_type)
        self.cell(index).configure(config)

    def config(self, index: int) -> MeterConfig | None:
        check_index(self.name, index, self.size)
        c = self.cells.get(index)
        return None if c is None else c.config


# --------------------------------------------------------------- registers


class RegisterArray:
    """Integer cells of a fixed width; data-plane writes wrap to the width."""

    def __init__(self, register_id: int, name: str, bitwidth: int, size: int, signed: bool = False) -> None:
        if size < 0:
            raise invalid(f"register '{name}': negative size {size}")
        self.id = register_id
        self.name = name
        self.bitwidth = bitwidth
        self.signed = signed
        self.size = size
        self._mask = (1 << bitwidth) - 1 if bitwidth > 0 else -1
        self.cells = _cells(size, bitwidth) if not signed else [0] * size

    def read(self, index: int) -> int:
        """Data-plane read (v1model: an out-of-range index reads 0)."""
        return self.cells[index] if 0 <= index < self.size else 0

    def write(self, index: int, value: int) -> None:
        """Data-plane write, wrapped to the width; out of range is ignored."""
        if 0 <= index < self.size:
            self.cells[index] = value & self._mask if self._mask >= 0 else value

    def get(self, index: int) -> int:
        """Control-plane read, with P4Runtime index checks; signed values come back signed."""
        check_index(self.name, index, self.size)
        value = self.cells[index]
        if self.signed and self.bitwidth > 0 and value >> (self.bitwidth - 1):
            value -= 1 << self.bitwidth
        return value

    def set(self, index: int, value: int) -> None:
        """Control-plane write; the value must fit the width."""
        check_index(self.name, index, self.size)
        w = self.bitwidth
        if w > 0:
            lo, hi = (-(1 << (w - 1)), 1 << (w - 1)) if self.signed else (0, 1 << w)
            if not lo <= value < hi:
                raise invalid(f"register '{self.name}': value {value} does not fit {'int' if self.signed else 'bit'}<{w}>")
        self.write(index, value)


def _cells(size: int, width: int) -> Any:
    """The engine's shared cells of ``width`` bits, or a list (no engine, or a width over 64)."""
    if Cells is not None and 0 < width <= 64:
        return Cells(size, width)
    return [0] * size
