"""Protobuf messages <-> decoded runtime state (ints, dataclasses).

Decoding checks what only the wire format can get wrong (unknown ids, empty or
oversized bytestrings, wrong oneof); the state checks the semantics. Encoding
always produces canonical (shortest) bytestrings, for read-write symmetry.
"""

from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4runtime_pb2 as pb

from p4switch.state.actions import ActionCall
from p4switch.state.bytestrings import decode_unsigned, encode_unsigned
from p4switch.state.errors import Code, StateError, invalid
from p4switch.state.externs import MeterCell, MeterConfig
from p4switch.state.pre import CloneSession, MulticastGroup, Replica
from p4switch.state.profiles import ActionSet, GroupRef, IndirectAction, MemberRef, WeightedAction
from p4switch.state.runtime import RuntimeState
from p4switch.state.tables import Exact, Lpm, Match, MatchFieldInfo, OptionalMatch, Range, TableState, Ternary

# ------------------------------------------------------------------ matches


def decode_match(table: TableState, fms: Sequence[pb.FieldMatch]) -> dict[int, Match]:
    return decode_field_matches(f"table '{table.name}'", table.fields, fms)


def decode_field_matches(where: str, field_infos: Sequence[MatchFieldInfo],
                         fms: Sequence[pb.FieldMatch]) -> dict[int, Match]:
    """FieldMatch messages of a table entry or value set member -> {field id: Match}."""
    out: dict[int, Match] = {}
    fields = {f.id: f for f in field_infos}
    for fm in fms:
        f = fields.get(fm.field_id)
        if f is None:
            raise invalid(f"{where} has no match field id {fm.field_id}")
        if fm.field_id in out:
            raise invalid(f"{where}: match field '{f.name}' given twice")
        what = f"{where} field '{f.name}'"
        kind = fm.WhichOneof("field_match_type")
        w = f.bitwidth
        if kind == "exact":
            m: Match = Exact(decode_unsigned(fm.exact.value, w, what))
        elif kind == "lpm":
            m = Lpm(decode_unsigned(fm.lpm.value, w, what), fm.lpm.prefix_len)
        elif kind == "ternary":
            m = Ternary(decode_unsigned(fm.ternary.value, w, what), decode_unsigned(fm.ternary.mask, w, what + " mask"))
        elif kind == "range":
            m = Range(decode_unsigned(fm.range.low, w, what + " low"), decode_unsigned(fm.range.high, w, what + " high"))
        elif kind == "optional":
            m = OptionalMatch(decode_unsigned(fm.optional.value, w, what))
        elif kind == "other":
            raise StateError(Code.UNIMPLEMENTED, f"{what}: 'other' match kinds are not supported")
        else:
            raise invalid(f"{what}: no match kind set")
        out[fm.field_id] = m
    return out


def encode_match(table: TableState, match: Sequence[Match | None]) -> list[pb.FieldMatch]:
    return encode_field_matches(table.fields, match)


def encode_field_matches(fields: Sequence[MatchFieldInfo], match: Sequence[Match | None]) -> list[pb.FieldMatch]:
    out = []
    for f, m in zip(fields, match):
        if m is None:
            continue  # don't care: omitted
        fm = pb.FieldMatch(field_id=f.id)
        if isinstance(m, Exact):
            fm.exact.value = encode_unsigned(m.value)
        elif isinstance(m, Lpm):
            fm.lpm.value = encode_unsigned(m.value)
            fm.lpm.prefix_len = m.prefix_len
        elif isinstance(m, Ternary):
            fm.ternary.value = encode_unsigned(m.value)
            fm.ternary.mask = encode_unsigned(m.mask)
        elif isinstance(m, Range):
            fm.range.low = encode_unsigned(m.low)
            fm.range.high = encode_unsigned(m.high)
        else:
            fm.optional.value = encode_unsigned(m.value)
        out.append(fm)
    return out


# ------------------------------------------------------------------ actions


def decode_action(state: RuntimeState, action: pb.Action) -> tuple[int, tuple[int, ...]]:
    info = state.actions.get(action.action_id)
    if info is None:
        raise invalid(f"unknown action id 0x{action.action_id:08x}")
    values: dict[int | str, int] = {}
    for p in action.params:
        idx = info.param_index(p.param_id)
        if idx is None:
            raise invalid(f"action '{info.name}' has no parameter id {p.param_id}")
        if p.param_id in values:
            raise invalid(f"action '{info.name}' parameter '{info.params[idx].name}' given twice")
        param = info.params[idx]
        values[p.param_id] = decode_unsigned(p.value, param.bitwidth, f"action '{info.name}' parameter '{param.name}'")
    return info.id, info.params_from_mapping(values)


def encode_action(state: RuntimeState, call: ActionCall) -> pb.Action:
    info = state.actions[call.action_id]
    out = pb.Action(action_id=call.action_id)
    for p, v in zip(info.params, call.params):
        out.params.add(param_id=p.id, value=encode_unsigned(v))
    return out


def decode_table_action(table: TableState, state: RuntimeState,
                        ta: pb.TableAction) -> tuple[int | IndirectAction, tuple[int, ...]]:
    """(action id, params) for a direct action, else (MemberRef/GroupRef/ActionSet, ()).

    Whether the kind suits the table is the table's check (INVALID_ARGUMENT if not)."""
    kind = ta.WhichOneof("type")
    if kind == "action":
        return decode_action(state, ta.action)
    if kind == "action_profile_member_id":
        return MemberRef(ta.action_profile_member_id), ()
    if kind == "action_profile_group_id":
        return GroupRef(ta.action_profile_group_id), ()
    if kind == "action_profile_action_set":
        actions = []
        for i, apa in enumerate(ta.action_profile_action_set.action_profile_actions):
            where = f"table '{table.name}' one-shot action {i}"
            check_watch(apa.watch, apa.watch_port, where)
            if not apa.HasField("action"):
                raise invalid(f"{where}: action missing")
            aid, params = decode_action(state, apa.action)
            actions.append(WeightedAction(ActionCall(aid, params), apa.weight))
        return ActionSet(actions), ()
    raise invalid(f"table '{table.name}': empty table action")


def encode_table_action(state: RuntimeState, call: ActionCall | IndirectAction) -> pb.TableAction:
    out = pb.TableAction()
    if isinstance(call, ActionCall):
        out.action.CopyFrom(encode_action(state, call))
    elif isinstance(call, MemberRef):
        out.action_profile_member_id = call.member_id
    elif isinstance(call, GroupRef):
        out.action_profile_group_id = call.group_id
    else:
        out.action_profile_action_set.SetInParent()
        for wa in call.actions:
            out.action_profile_action_set.action_profile_actions.add(
                action=encode_action(state, wa.action), weight=wa.weight)
    return out


def check_watch(watch: int, watch_port: bytes, where: str) -> None:
    """p4switch has no port liveness: watch ports are refused as the spec asks of such targets."""
    if watch or watch_port:
        raise StateError(Code.UNIMPLEMENTED, f"{where}: watch ports are not supported by p4switch")


# ------------------------------------------------------- counters / meters


def decode_counter_data(data: pb.CounterData, what: str) -> tuple[int, int]:
    if data.packet_count < 0 or data.byte_count < 0:
        raise invalid(f"{what}: negative counter value")
    return data.packet_count, data.byte_count


def encode_counter_data(packets: int, nbytes: int) -> pb.CounterData:
    return pb.CounterData(packet_count=packets, byte_count=nbytes)


def decode_meter_config(cfg: pb.MeterConfig) -> MeterConfig:
    return MeterConfig(cfg.cir, cfg.cburst, cfg.pir, cfg.pburst, cfg.eburst)


def encode_meter_config(cfg: MeterConfig) -> pb.MeterConfig:
    return pb.MeterConfig(cir=cfg.cir, cburst=cfg.cburst, pir=cfg.pir, pburst=cfg.pburst, eburst=cfg.eburst)


def check_meter_counter_data(data: pb.MeterCounterData, what: str) -> None:
    """Writes may only clear per-colour counters (all sub-fields zero)."""
    for color in (data.green, data.yellow, data.red):
        if color.packet_count or color.byte_count:
            raise invalid(f"{what}: per-colour counters can only be reset to 0")


def encode_meter_counter_data(cell: MeterCell) -> pb.MeterCounterData:
    g, y, r = (encode_counter_data(c.packets, c.bytes) for c in cell.colors)
    return pb.MeterCounterData(green=g, yellow=y, red=r)


# ---------------------------------------------------------------------- PRE


def decode_replica(r: pb.Replica, where: str) -> Replica:
    kind = r.WhichOneof("port_kind")
    if kind == "port":
        return Replica(decode_unsigned(r.port, 32, f"{where} replica port"), r.instance, True)
    return Replica(r.egress_port, r.instance, False)


def encode_replica(r: Replica) -> pb.Replica:
    if r.port_as_bytes:
        return pb.Replica(port=encode_unsigned(r.port), instance=r.instance)
    return pb.Replica(egress_port=r.port, instance=r.instance)


def decode_clone_session(s: pb.CloneSessionEntry) -> CloneSession:
    where = f"clone session {s.session_id}"
    replicas = tuple(decode_replica(r, where) for r in s.replicas)
    return CloneSession(s.session_id, replicas, s.class_of_service, s.packet_length_bytes)


def encode_clone_session(s: CloneSession) -> pb.CloneSessionEntry:
    return pb.CloneSessionEntry(session_id=s.session_id, replicas=[encode_replica(r) for r in s.replicas],
                                class_of_service=s.class_of_service, packet_length_bytes=s.packet_length_bytes)


def decode_multicast_group(g: pb.MulticastGroupEntry) -> MulticastGroup:
    where = f"multicast group {g.multicast_group_id}"
    replicas = tuple(decode_replica(r, where) for r in g.replicas)
    return MulticastGroup(g.multicast_group_id, replicas, g.metadata)


def encode_multicast_group(g: MulticastGroup) -> pb.MulticastGroupEntry:
    return pb.MulticastGroupEntry(multicast_group_id=g.group_id, replicas=[encode_replica(r) for r in g.replicas],
                                  metadata=g.metadata)
