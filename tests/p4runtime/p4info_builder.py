"""Hand-built P4Info protobufs for tests (no front end needed).

Ids follow the P4Runtime scheme: resource-type prefix in the top byte, then a
running number.
"""

from __future__ import annotations

from collections.abc import Sequence

from p4.config.v1 import p4info_pb2 as p4i

EXACT, LPM, TERNARY, RANGE, OPTIONAL = 2, 3, 4, 5, 6
P = p4i.P4Ids


class P4InfoBuilder:
    def __init__(self) -> None:
        self.p4info = p4i.P4Info()
        self.p4info.pkg_info.arch = "v1model"
        self._seq = 0
        self.ids: dict[str, int] = {}

    def _id(self, prefix: int, name: str) -> int:
        self._seq += 1
        ident = (prefix << 24) | self._seq
        self.ids[name] = ident
        return ident

    def action(self, name: str, params: Sequence[tuple[str, int]] = ()) -> int:
        a = self.p4info.actions.add()
        a.preamble.id = self._id(P.ACTION, name)
        a.preamble.name = name
        for i, (pname, width) in enumerate(params, start=1):
            a.params.add(id=i, name=pname, bitwidth=width)
        return a.preamble.id

    def table(self, name: str, fields: Sequence[tuple[str, int, int]], actions: Sequence[str], size: int = 1024,
              *, const: bool = False, const_default: str | None = None, default: tuple[str, Sequence[int]] | None = None,
              scopes: dict[str, int] | None = None, direct_counter: str | None = None,
              direct_meter: str | None = None, counter_unit: int = 3, idle_timeout: bool = False) -> int:
        t = self.p4info.tables.add()
        t.preamble.id = self._id(P.TABLE, name)
        t.preamble.name = name
        for i, (fname, width, kind) in enumerate(fields, start=1):
            t.match_fields.add(id=i, name=fname, bitwidth=width, match_type=kind)
        for aname in actions:
            t.action_refs.add(id=self.ids[aname], scope=(scopes or {}).get(aname, 0))
        t.size = size
        t.is_const_table = const
        if idle_timeout:
            t.idle_timeout_behavior = p4i.Table.NOTIFY_CONTROL
        if const_default:
            t.const_default_action_id = self.ids[const_default]
        if default or const_default:
            aname, args = default or (const_default, ())
            t.initial_default_action.action_id = self.ids[aname]
            for i, v in enumerate(args, start=1):
                t.initial_default_action.arguments.add(param_id=i, value=v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big"))
        if direct_counter:
            dc = self.p4info.direct_counters.add()
            dc.preamble.id = self._id(P.DIRECT_COUNTER, direct_counter)
            dc.preamble.name = direct_counter
            dc.spec.unit = counter_unit
            dc.direct_table_id = t.preamble.id
            t.direct_resource_ids.append(dc.preamble.id)
        if direct_meter:
            dm = self.p4info.direct_meters.add()
            dm.preamble.id = self._id(P.DIRECT_METER, direct_meter)
            dm.preamble.name = direct_meter
            dm.spec.unit = p4i.MeterSpec.BYTES
            dm.direct_table_id = t.preamble.id
            t.direct_resource_ids.append(dm.preamble.id)
        return t.preamble.id

    def counter(self, name: str, size: int, unit: int = 3) -> int:
        c = self.p4info.counters.add()
        c.preamble.id = self._id(P.COUNTER, name)
        c.preamble.name = name
        c.spec.unit = unit
        c.size = size
        return c.preamble.id

    def meter(self, name: str, size: int, unit: int = p4i.MeterSpec.PACKETS, mtype: int = 0) -> int:
        m = self.p4info.meters.add()
        m.preamble.id = self._id(P.METER, name)
        m.preamble.name = name
        m.spec.unit = unit
        m.spec.type = mtype
        m.size = size
        return m.preamble.id

    def register(self, name: str, width: int, size: int) -> int:
        r = self.p4info.registers.add()
        r.preamble.id = self._id(P.REGISTER, name)
        r.preamble.name = name
        r.type_spec.bitstring.bit.bitwidth = width
        r.size = size
        return r.preamble.id

    def digest(self, name: str, members: Sequence[tuple[str, int]]) -> int:
        d = self.p4info.digests.add()
        d.preamble.id = self._id(P.DIGEST, name)
        d.preamble.name = name
        d.type_spec.struct.name = name
        st = self.p4info.type_info.structs[name]
        for mname, width in members:
            m = st.members.add(name=mname)
            m.type_spec.bitstring.bit.bitwidth = width
        return d.preamble.id

    def controller_header(self, name: str, fields: Sequence[tuple[str, int]]) -> int:
        c = self.p4info.controller_packet_metadata.add()
        c.preamble.id = self._id(P.CONTROLLER_HEADER, name)
        c.preamble.name = name
        c.preamble.annotations.append(f'@controller_header("{name}")')
        for i, (fname, width) in enumerate(fields, start=1):
            c.metadata.add(id=i, name=fname, bitwidth=width)
        return c.preamble.id

    def action_profile(self, name: str, tables: Sequence[str], size: int, *, selector: bool = False,
                       max_group_size: int = 0, sum_of_members: bool = False,
                       max_member_weight: int | None = None) -> int:
        """An action profile/selector implementing ``tables`` (their implementation_id is set)."""
        ap = self.p4info.action_profiles.add()
        ap.preamble.id = self._id(P.ACTION_PROFILE, name)
        ap.preamble.name = name
        ap.with_selector = selector
        ap.size = size
        ap.max_group_size = max_group_size
        if sum_of_members:
            ap.sum_of_members.SetInParent()
            if max_member_weight is not None:
                ap.sum_of_members.max_member_weight = max_member_weight
        for tname in tables:
            ap.table_ids.append(self.ids[tname])
            next(t for t in self.p4info.tables if t.preamble.name == tname).implementation_id = ap.preamble.id
        return ap.preamble.id

    def value_set(self, name: str, fields: Sequence[tuple[str, int, int]], size: int) -> int:
        vs = self.p4info.value_sets.add()
        vs.preamble.id = self._id(P.VALUE_SET, name)
        vs.preamble.name = name
        for i, (fname, width, kind) in enumerate(fields, start=1):
            vs.match.add(id=i, name=fname, bitwidth=width, match_type=kind)
        vs.size = size
        return vs.preamble.id

    def build(self) -> p4i.P4Info:
        out = p4i.P4Info()
        out.CopyFrom(self.p4info)
        return out


def demo_p4info() -> tuple[p4i.P4Info, dict[str, int]]:
    """A v1model-like program: LPM routing, an ACL, a const table, externs, digests, packet I/O."""
    b = P4InfoBuilder()
    b.action("NoAction")
    b.action("MyIngress.drop")
    b.action("MyIngress.forward", [("port", 9), ("dmac", 48)])
    b.action("MyIngress.set_prio", [("prio", 3)])
    b.table("MyIngress.ipv4_lpm", [("hdr.ipv4.dstAddr", 32, LPM)],
            ["MyIngress.forward", "MyIngress.drop", "NoAction"], size=4,
            default=("MyIngress.drop", ()), direct_counter="MyIngress.lpm_hits",
            scopes={"NoAction": 2})
    b.table("MyIngress.acl", [("std.ingress_port", 9, EXACT), ("hdr.ipv4.srcAddr", 32, TERNARY),
                              ("hdr.tcp.dport", 16, RANGE)],
            ["MyIngress.drop", "NoAction", "MyIngress.set_prio"], direct_meter="MyIngress.acl_meter")
    b.table("MyIngress.fixed", [("std.ingress_port", 9, EXACT)], ["MyIngress.drop", "NoAction"],
            const=True, const_default="NoAction")
    b.table("MyIngress.opt", [("hdr.eth.type", 16, OPTIONAL), ("std.ingress_port", 9, EXACT)],
            ["MyIngress.drop", "NoAction"])
    b.counter("MyIngress.port_pkts", 8, unit=2)
    b.meter("MyIngress.port_meter", 8)
    b.register("MyIngress.occupancy", 32, 16)
    b.digest("learn_t", [("mac", 48), ("port", 9)])
    b.controller_header("packet_in", [("ingress_port", 9), ("reason", 7)])
    b.controller_header("packet_out", [("egress_port", 9), ("pad", 7)])
    return b.build(), b.ids
