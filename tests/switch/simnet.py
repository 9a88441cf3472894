"""A switch in virtual time with hosts on in-memory links (the sim binding), for tests.

The program reaches the switch the way a controller pushes it: SetForwardingPipelineConfig
with the P4Info and the device config (preprocessed source), through the in-process
P4Runtime core; table entries and clone sessions are P4Runtime writes too.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.p4runtime_client import InProcessController, clone_session
from p4switch.device import CompiledProgram, compile_file
from p4switch.link import InMemoryLink
from p4switch.sched import VirtualScheduler
from p4switch.switch import Switch, SwitchOptions

ROOT = Path(__file__).resolve().parents[2]
ALINEA = ROOT / "p4src" / "alinea.p4"
FEATURES = ROOT / "tests" / "p4programs" / "features.p4"

REPORT = struct.Struct("!BBHHIIHIIII")  # version/type, flags, node, port, occ, cap, ts(hi16), ts(lo32), seq, drops, interval
ETH_ALINEA = 0x88B5


@functools.lru_cache(maxsize=4)
def program(path: str) -> CompiledProgram:
    """Compiled once per test session (the front end is deterministic)."""
    return compile_file(path)


def mac(n: int) -> bytes:
    return n.to_bytes(6, "big")


def mac_int(text: str) -> int:
    return int(text.replace(":", ""), 16)


@dataclass
class SimHost:
    """A link endpoint that records (virtual ns, frame) of everything it receives."""

    name: str
    sched: VirtualScheduler
    got: list[tuple[int, bytes]] = field(default_factory=list)
    link: InMemoryLink | None = None

    def receive(self, frame: bytes) -> None:
        self.got.append((self.sched.now_ns(), frame))

    def send(self, frame: bytes) -> None:
        assert self.link is not None
        self.link.send(self, frame)

    def send_at(self, t_ns: int, frame: bytes) -> None:
        self.sched.call_at(t_ns, self.send, frame)

    def frames(self, ethertype: int | None = None) -> list[tuple[int, bytes]]:
        if ethertype is None:
            return list(self.got)
        return [(t, f) for t, f in self.got if len(f) >= 14 and int.from_bytes(f[12:14], "big") == ethertype]


@dataclass
class SimNet:
    sched: VirtualScheduler
    switch: Switch
    ctl: InProcessController
    hosts: dict[int, SimHost]
    program: CompiledProgram


def sim_switch(path: Path = ALINEA, ports: tuple[int, ...] = (1, 2), bitrate: int = 1_000_000_000,
               delay_ns: int = 1000, options: SwitchOptions | None = None) -> SimNet:
    """A switch running ``path``, one host per port, the pipeline pushed by a primary client."""
    sched = VirtualScheduler()
    sw = Switch(sched, options or SwitchOptions(seed=1))
    hosts: dict[int, SimHost] = {}
    for n in ports:
        port = sw.add_link_port(n, f"s1-eth{n}")
        host = SimHost(f"h{n}", sched)
        host.link = InMemoryLink(sched, host, port, bitrate=bitrate, delay_ns=delay_ns)
        port.attach(host.link)
        hosts[n] = host
    prog = program(str(path))
    ctl = InProcessController(sw.p4rt)
    ctl.set_pipeline(prog.p4info, prog.device_config)
    return SimNet(sched, sw, ctl, hosts, prog)


# ---- alinea.p4 configuration (docs/dataplane.md, "What users must configure") -------------------

SWITCH_MAC = {1: 0x02_00_00_00_01_01, 2: 0x02_00_00_00_01_02}
HOST_MAC = {1: 0x02_00_00_00_00_01, 2: 0x02_00_00_00_00_02}
HOST_IP = {1: "10.0.1.1", 2: "10.0.2.1"}
NODE_ID = 7


def ip_int(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def configure_alinea(ctl: InProcessController | object, ports: tuple[int, ...] = (1, 2), *,
                     modelled: dict[int, tuple[int, int]] | None = None,
                     neighbours: tuple[int, ...] = ()) -> None:
    """Routes 10.0.<p>.0/24 -> port p; ``modelled`` = {port: (capacity, interval_us)} gets a
    port_config entry and its report clone session; ``neighbours`` get report_ingress entries."""
    for p in ports:
        ctl.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_int(f"10.0.{p}.0"), 24)},
                         "MyIngress.ipv4_forward", {"dst_mac": HOST_MAC[p], "src_mac": SWITCH_MAC[p], "port": p})
    for p, (capacity, interval) in (modelled or {}).items():
        ctl.insert_entry("MyIngress.port_config", {"standard_metadata.ingress_port": p}, "MyIngress.set_port",
                         {"capacity_pkts": capacity, "report_interval_us": interval, "node_id": NODE_ID,
                          "port_mac": SWITCH_MAC[p], "upstream_mac": HOST_MAC[p]})
        ctl.insert(clone_session(1000 + p, [(p, 1)]))
    for p in neighbours:
        ctl.insert_entry("MyIngress.report_ingress", {"standard_metadata.ingress_port": p},
                         "MyIngress.report_to_cpu")


def udp_frame(src: int, dst: int, ttl: int = 64, payload: bytes = b"x" * 64, sport: int = 1234,
              dport: int = 5678) -> bytes:
    """Ethernet/IPv4/UDP from host ``src`` to host ``dst`` (correct IPv4 checksum)."""
    from scapy.all import IP, UDP, Ether

    return bytes(Ether(dst=_mac_text(SWITCH_MAC[src]), src=_mac_text(HOST_MAC[src]))
                 / IP(src=HOST_IP[src], dst=HOST_IP[dst], ttl=ttl) / UDP(sport=sport, dport=dport) / payload)


def _mac_text(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


@dataclass(frozen=True)
class Report:
    """An ALINEA report as docs/wire-format.md lays it out."""

    dst: int
    src: int
    version: int
    msg_type: int
    flags: int
    node_id: int
    port: int
    occupancy: int
    capacity: int
    timestamp: int
    seq: int
    drops: int
    interval_us: int
    length: int


def parse_report(frame: bytes) -> Report:
    """Parse an ALINEA report frame with struct, per the wire format (raises ValueError)."""
    if len(frame) < 46 or int.from_bytes(frame[12:14], "big") != ETH_ALINEA:
        raise ValueError(f"not an ALINEA report frame ({len(frame)} bytes)")
    vt, flags, node, port, occ, cap, ts_hi, ts_lo, seq, drops, interval = REPORT.unpack_from(frame, 14)
    return Report(int.from_bytes(frame[0:6], "big"), int.from_bytes(frame[6:12], "big"), vt >> 4, vt & 0xF, flags,
                  node, port, occ, cap, (ts_hi << 32) | ts_lo, seq, drops, interval, len(frame))
