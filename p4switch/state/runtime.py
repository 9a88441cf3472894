"""RuntimeState: all control-plane-visible state of one pipeline, from its P4Info.

Built from a ``p4info_pb2.P4Info`` alone, so the P4Runtime server, the pipeline
and tests share one model without depending on the front end. Every object is
indexed by its P4Info id and by its fully qualified name. Action profiles and
selectors (``profiles.py``) are linked both ways with the tables they implement;
parser value sets (``value_sets.py``) are read by the parser.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import hbh_engine as _engine
from p4.config.v1 import p4info_pb2, p4types_pb2

from .actions import ActionInfo
from .bytestrings import decode_signed, decode_unsigned, encode_signed, encode_unsigned
from .digests import DigestBuffer
from .errors import invalid
from .externs import (
    CounterArray,
    CounterUnit,
    DirectCounterInfo,
    DirectMeterInfo,
    MeterArray,
    MeterType,
    MeterUnit,
    RegisterArray,
)
from .pre import PacketReplicationEngine, PreLimits
from .profiles import ActionProfileInfo, ActionProfileState
from .tables import TableInfo, TableState
from .value_sets import ValueSetState

__all__ = ["RuntimeState", "ControllerHeader", "PacketMetadataField",
           "decode_unsigned", "encode_unsigned", "decode_signed", "encode_signed"]


@dataclass(frozen=True, slots=True)
class PacketMetadataField:
    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True)
class ControllerHeader:
    """A ``@controller_header`` (packet_in / packet_out) and its fields."""

    id: int
    name: str
    fields: tuple[PacketMetadataField, ...]
    by_id: dict[int, PacketMetadataField] = field(default_factory=dict, compare=False)
    by_name: dict[str, PacketMetadataField] = field(default_factory=dict, compare=False)

    @cached_property
    def layout(self) -> tuple[int, tuple[tuple[str, int, int], ...]]:
        """(bits, ((name, shift, mask), ...) in field order): each field's place in the header read
        as one integer, MSB first. Why kept: a packet-in's metadata is read for every report."""
        shifts, shift = [], 0
        for f in reversed(self.fields):
            shifts.append((f.name, shift, (1 << f.bitwidth) - 1))
            shift += f.bitwidth
        return shift, tuple(reversed(shifts))

    @cached_property
    def splitter(self) -> Any:
        """The engine's split of this header off a frame (``hbh_engine.HeaderSplit``), None if a
        field is wider than 64 bits (then :func:`p4switch.device.split_controller_header` reads it
        in Python)."""
        bits, layout = self.layout
        return _engine.HeaderSplit(bits, layout) if all(f.bitwidth <= 64 for f in self.fields) else None

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @cached_property
    def limits(self) -> tuple[int | float, ...]:
        """2 ** bitwidth of each field in field order (a width of 0 or less: no limit)."""
        return tuple(1 << f.bitwidth if f.bitwidth > 0 else math.inf for f in self.fields)

    @classmethod
    def from_p4info(cls, cpm: p4info_pb2.ControllerPacketMetadata) -> ControllerHeader:
        fields = tuple(PacketMetadataField(m.id, m.name, m.bitwidth) for m in cpm.metadata)
        by_id = {f.id: f for f in fields}
        by_name = {f.name: f for f in fields}
        if len(by_id) != len(fields) or len(by_name) != len(fields):
            raise invalid(f"P4Info controller header '{cpm.preamble.name}': duplicate metadata ids or names")
        return cls(cpm.preamble.id, cpm.preamble.name, fields, by_id, by_name)


def bitstring_width(spec: p4types_pb2.P4DataTypeSpec) -> tuple[int, bool] | None:
    """(width, signed) of a bit<W>/int<W>/bool type spec; None for other types."""
    kind = spec.WhichOneof("type_spec")
    if kind == "bool":
        return 1, False
    if kind == "bitstring":
        bs = spec.bitstring.WhichOneof("type_spec")
        if bs == "bit":
            return spec.bitstring.bit.bitwidth, False
        if bs == "int":
            return spec.bitstring.int.bitwidth, True
    return None


class RuntimeState:
    """Tables, counters, meters, registers, PRE and digests of one P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.actions: dict[int, ActionInfo] = {}
        self.tables: dict[int, TableState] = {}
        self.action_profiles: dict[int, ActionProfileState] = {}
        self.value_sets: dict[int, ValueSetState] = {}
        self.counters: dict[int, CounterArray] = {}
        self.direct_counters: dict[int, DirectCounterInfo] = {}
        self.meters: dict[int, MeterArray] = {}
        self.direct_meters: dict[int, DirectMeterInfo] = {}
        self.registers: dict[int, RegisterArray] = {}
        self.register_specs: dict[int, p4types_pb2.P4DataTypeSpec] = {}
        self.digests: dict[int, DigestBuffer] = {}
        self.digest_specs: dict[int, p4types_pb2.P4DataTypeSpec] = {}
        self.pre = PacketReplicationEngine()
        self.packet_in: ControllerHeader | None = None
        self.packet_out: ControllerHeader | None = None

    @classmethod
    def from_p4info(cls, p4info: p4info_pb2.P4Info, pre_limits: PreLimits | None = None) -> RuntimeState:
        """Build (and check) the state; raises StateError(INVALID_ARGUMENT) on a bad P4Info."""
        st = cls(p4info)
        if pre_limits is not None:
            st.pre = PacketReplicationEngine(pre_limits)
        _check_ids(p4info)
        st.actions = {a.preamble.id: ActionInfo.from_p4info(a) for a in p4info.actions}
        for dc in p4info.direct_counters:
            st.direct_counters[dc.preamble.id] = DirectCounterInfo(
                dc.preamble.id, dc.preamble.name, CounterUnit(dc.spec.unit), dc.direct_table_id)
        for dm in p4info.direct_meters:
            st.direct_meters[dm.preamble.id] = DirectMeterInfo(
                dm.preamble.id, dm.preamble.name, MeterUnit(dm.spec.unit), MeterType(dm.spec.type),
                dm.direct_table_id)
        for t in p4info.tables:
            st.tables[t.preamble.id] = st._build_table(t)
        for ap in p4info.action_profiles:
            st.action_profiles[ap.preamble.id] = st._build_profile(ap)
        st._check_indirect_tables()
        for vs in p4info.value_sets:
            st.value_sets[vs.preamble.id] = ValueSetState.from_p4info(vs)
        for c in p4info.counters:
            st.counters[c.preamble.id] = CounterArray(c.preamble.id, c.preamble.name, CounterUnit(c.spec.unit), c.size)
        for m in p4info.meters:
            st.meters[m.preamble.id] = MeterArray(m.preamble.id, m.preamble.name, MeterUnit(m.spec.unit),
                                                  MeterType(m.spec.type), m.size)
        for r in p4info.registers:
            width = bitstring_width(r.type_spec) or (0, False)
            st.registers[r.preamble.id] = RegisterArray(r.preamble.id, r.preamble.name, width[0], r.size, width[1])
            st.register_specs[r.preamble.id] = r.type_spec
        for d in p4info.digests:
            st.digests[d.preamble.id] = DigestBuffer(d.preamble.id, d.preamble.name)
            st.digest_specs[d.preamble.id] = d.type_spec
        for cpm in p4info.controller_packet_metadata:
            header = ControllerHeader.from_p4info(cpm)
            if cpm.preamble.name == "packet_in":
                st.packet_in = header
            elif cpm.preamble.name == "packet_out":
                st.packet_out = header
        st._check_direct_tables()
        return st

    # ------------------------------------------------------- name indexes
    # (built on first use; the id dicts do not change after from_p4info)

    @cached_property
    def tables_by_name(self) -> dict[str, TableState]:
        return {t.name: t for t in self.tables.values()}

    @cached_property
    def action_profiles_by_name(self) -> dict[str, ActionProfileState]:
        return {p.name: p for p in self.action_profiles.values()}

    @cached_property
    def value_sets_by_name(self) -> dict[str, ValueSetState]:
        return {v.name: v for v in self.value_sets.values()}

    @cached_property
    def actions_by_name(self) -> dict[str, ActionInfo]:
        return {a.name: a for a in self.actions.values()}

    @cached_property
    def counters_by_name(self) -> dict[str, CounterArray]:
        return {c.name: c for c in self.counters.values()}

    @cached_property
    def direct_counters_by_name(self) -> dict[str, DirectCounterInfo]:
        return {c.name: c for c in self.direct_counters.values()}

    @cached_property
    def meters_by_name(self) -> dict[str, MeterArray]:
        return {m.name: m for m in self.meters.values()}

    @cached_property
    def direct_meters_by_name(self) -> dict[str, DirectMeterInfo]:
        return {m.name: m for m in self.direct_meters.values()}

    @cached_property
    def registers_by_name(self) -> dict[str, RegisterArray]:
        return {r.name: r for r in self.registers.values()}

    @cached_property
    def digests_by_name(self) -> dict[str, DigestBuffer]:
        return {d.name: d for d in self.digests.values()}

    # ------------------------------------------------------------ helpers

    def _build_table(self, t: p4info_pb2.Table) -> TableState:
        counter = meter = None
        for rid in t.direct_resource_ids:
            if rid in self.direct_counters:
                if counter is not None:
                    raise invalid(f"P4Info table '{t.preamble.name}': more than one direct counter")
                counter = self.direct_counters[rid]
            elif rid in self.direct_meters:
                if meter is not None:
                    raise invalid(f"P4Info table '{t.preamble.name}': more than one direct meter")
                meter = self.direct_meters[rid]
            else:
                raise invalid(f"P4Info table '{t.preamble.name}': unknown direct resource id 0x{rid:08x}")
        info = TableInfo.from_p4info(t, self.actions, counter, meter)
        return TableState(info, self.actions)

    def _build_profile(self, ap: p4info_pb2.ActionProfile) -> ActionProfileState:
        info = ActionProfileInfo.from_p4info(ap)
        tables = []
        for tid in info.table_ids:
            table = self.tables.get(tid)
            if table is None:
                raise invalid(f"P4Info action profile '{info.name}': unknown table id 0x{tid:08x}")
            if table.info.implementation_id != info.id:
                raise invalid(f"P4Info action profile '{info.name}' lists table '{table.name}', whose "
                              "implementation is another")
            tables.append(table)
        profile = ActionProfileState(info, self.actions, tables)
        for table in tables:
            table.profile = profile
        return profile

    def _check_indirect_tables(self) -> None:
        for table in self.tables.values():
            impl = table.info.implementation_id
            if impl and table.profile is None:
                what = "unknown" if impl not in self.action_profiles else "not listing this table"
                raise invalid(f"P4Info table '{table.name}': implementation 0x{impl:08x} is an {what} action profile")

    def _check_direct_tables(self) -> None:
        for res in list(self.direct_counters.values()) + list(self.direct_meters.values()):
            table = self.tables.get(res.table_id)
            if table is None:
                raise invalid(f"P4Info direct resource '{res.name}': unknown table id 0x{res.table_id:08x}")
            if res not in (table.info.direct_counter, table.info.direct_meter):
                raise invalid(f"P4Info direct resource '{res.name}' is not listed by table '{table.name}'")


def _all_preambles(p4info: p4info_pb2.P4Info) -> Iterable[tuple[str, p4info_pb2.Preamble]]:
    for kind in ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
                 "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests"):
        for obj in getattr(p4info, kind):
            yield kind, obj.preamble


def _check_ids(p4info: p4info_pb2.P4Info) -> None:
    """Ids share one number space and 0 is invalid; names are unique per kind."""
    ids: dict[int, str] = {}
    names: set[tuple[str, str]] = set()
    for kind, pre in _all_preambles(p4info):
        if pre.id == 0:
            raise invalid(f"P4Info {kind} '{pre.name}': id 0 is reserved")
        if pre.id in ids:
            raise invalid(f"P4Info id 0x{pre.id:08x} used by both {ids[pre.id]} and {kind} '{pre.name}'")
        ids[pre.id] = f"{kind} '{pre.name}'"
        if (kind, pre.name) in names:
            raise invalid(f"P4Info: two {kind} named '{pre.name}'")
        names.add((kind, pre.name))
