"""A P4Runtime core on a real p4switch pipeline (no switch, no I/O), for indirect-table and
value-set tests: writes go through ``P4RuntimeCore``, frames through the pipeline it loaded."""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from pathlib import Path

from p4.v1 import p4runtime_pb2 as pb

from p4switch.device import CompiledProgram, P4SwitchDevice, PipelineHolder, compile_file
from p4switch.p4runtime import P4RuntimeCore
from p4switch.pipeline import Packet
from tests.p4runtime.helpers import Client, b

PROGRAMS = Path(__file__).resolve().parents[1] / "p4programs"
LOAD_BALANCE = PROGRAMS / "load_balance.p4"
PROFILES = PROGRAMS / "profiles.p4"


@functools.lru_cache(maxsize=4)
def program(path: Path) -> CompiledProgram:
    return compile_file(path)


@dataclass
class Rig:
    core: P4RuntimeCore
    holder: PipelineHolder
    client: Client
    ids: dict[str, int]

    @property
    def state(self):  # -> RuntimeState
        return self.holder.state

    def run(self, frame: bytes, port: int = 1) -> Packet:
        """Parser and ingress; the caller reads egress_spec and headers off the packet."""
        pl = self.holder.pipeline
        pkt = pl.new_packet(frame, port, 1000)
        pl.run_ingress(pkt)
        return pkt


def rig(path: Path = LOAD_BALANCE) -> Rig:
    prog = program(path)
    holder = PipelineHolder()
    device = P4SwitchDevice(holder, inject=lambda port, frame: None, cpu_port=None, seed=1)
    core = P4RuntimeCore(device, device_id=1)
    client = Client(core)
    client.arbitrate(1)
    client.set_pipeline(prog.p4info, device_config=prog.device_config)
    ids = {o.preamble.name: o.preamble.id
           for kind in ("tables", "actions", "action_profiles", "value_sets")
           for o in getattr(prog.p4info, kind)}
    return Rig(core, holder, client, ids)


# ---------------------------------------------------------------------------- frames


def ipv4_udp(src: int, dst: int, sport: int, dport: int, ttl: int = 64, ethertype: int = 0x0800,
             tag: bytes = b"") -> bytes:
    """Ethernet (+ optional tag) / IPv4 / UDP ports / payload; checksums are not checked here."""
    eth = struct.pack("!6s6sH", b"\x02" * 6, b"\x04" * 6, ethertype)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 28, 0, 0, ttl, 17, 0, src, dst)
    return eth + tag + ip + struct.pack("!HHHH", sport, dport, 8, 0) + b"payload!"


# ------------------------------------------------------------------------ protobufs


def action(rig_: Rig, name: str, **params: int) -> pb.Action:
    a = pb.Action(action_id=rig_.ids[name])
    for i, (_, v) in enumerate(params.items(), start=1):
        a.params.add(param_id=i, value=b(v))
    return a


def member(rig_: Rig, profile: str, member_id: int, act: pb.Action | None = None) -> pb.ActionProfileMember:
    m = pb.ActionProfileMember(action_profile_id=rig_.ids[profile], member_id=member_id)
    if act is not None:
        m.action.CopyFrom(act)
    return m


def group(rig_: Rig, profile: str, group_id: int, members: list[tuple[int, int]] = (),
          max_size: int = 0) -> pb.ActionProfileGroup:
    g = pb.ActionProfileGroup(action_profile_id=rig_.ids[profile], group_id=group_id, max_size=max_size)
    for mid, weight in members:
        g.members.add(member_id=mid, weight=weight)
    return g


def lpm_entry(rig_: Rig, table: str, prefix: int, plen: int) -> pb.TableEntry:
    te = pb.TableEntry(table_id=rig_.ids[table])
    te.match.add(field_id=1).lpm.CopyFrom(pb.FieldMatch.LPM(value=b(prefix), prefix_len=plen))
    return te
