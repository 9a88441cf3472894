"""A switch in virtual time with hosts on in-memory links (the sim binding), for tests.

The program reaches the switch the way a controller pushes it: SetForwardingPipelineConfig
with the P4Info and the device config (preprocessed source), through the in-process
P4Runtime core; table entries and clone sessions are P4Runtime writes too.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from controlplane import dataplane_config as dp
from controlplane.p4runtime_client import InProcessController
from controlplane.report import FRAME_BYTES, Report, decode, encode
from p4switch.device import CompiledProgram, compile_file
from p4switch.switch import Switch, SwitchOptions
from runtime.sched import VirtualScheduler
from topo.sim.hosts import SimHost, attach_host

ROOT = Path(__file__).resolve().parents[2]
ALINEA = ROOT / "p4src" / "alinea.p4"
FEATURES = ROOT / "tests" / "p4programs" / "features.p4"



@functools.lru_cache(maxsize=4)
def program(path: str) -> CompiledProgram:
    """Compiled once per test session (the front end is deterministic)."""
    return compile_file(path)


def mac(n: int) -> bytes:
    return n.to_bytes(6, "big")


mac_int = dp.mac_int


@dataclass
class SimNet:
    sched: VirtualScheduler
    switch: Switch
    ctl: InProcessController
    hosts: dict[int, SimHost]
    program: CompiledProgram

    def _repr_pretty_(self, p: object, cycle: bool) -> None:
        """One line for hypothesis's report of a failing example: walking the switch's whole state
        field by field (its default for a dataclass) takes minutes and gigabytes."""
        p.text(f"SimNet(hosts={sorted(self.hosts)})")  # type: ignore[attr-defined]


def sim_switch(path: Path = ALINEA, ports: tuple[int, ...] = (1, 2), bitrate: int = 1_000_000_000,
               delay_ns: int = 1000, options: SwitchOptions | None = None) -> SimNet:
    """A switch running ``path``, one host per port, the pipeline pushed by a primary client."""
    sched = VirtualScheduler()
    sw = Switch(sched, options or SwitchOptions(seed=1))
    hosts: dict[int, SimHost] = {}
    for n in ports:
        hosts[n] = attach_host(sw, sched, n, f"h{n}", bitrate=bitrate, delay_ns=delay_ns)
    prog = program(str(path))
    ctl = InProcessController(sw.p4rt)
    ctl.set_pipeline(prog.p4info, prog.device_config)
    return SimNet(sched, sw, ctl, hosts, prog)


# ---- alinea.p4 configuration (docs/reference/dataplane.md, "What users of p4c/BMv2 (and of p4switch) must configure") -------------------

SWITCH_MAC = {1: 0x02_00_00_00_01_01, 2: 0x02_00_00_00_01_02}
HOST_MAC = {1: 0x02_00_00_00_00_01, 2: 0x02_00_00_00_00_02}
HOST_IP = {1: "10.0.1.1", 2: "10.0.2.1"}
NODE_ID = 7
ip_int = dp.ip_int


def configure_alinea(ctl: InProcessController | object, ports: tuple[int, ...] = (1, 2), *,
                     modelled: dict[int, tuple[int, int]] | None = None,
                     neighbours: tuple[int, ...] = ()) -> None:
    """Routes 10.0.<p>.0/24 -> port p; ``modelled`` = {port: (capacity, interval_us)} gets a
    port_config entry and its report clone session; ``neighbours`` get report_ingress entries."""
    for p in ports:
        dp.add_route(ctl, ip_int(f"10.0.{p}.0"), 24, p, dst_mac=HOST_MAC[p], src_mac=SWITCH_MAC[p])
    for p, (capacity, interval) in (modelled or {}).items():
        dp.model_port(ctl, p, capacity_pkts=capacity, report_interval_us=interval, node_id=NODE_ID,
                      port_mac=SWITCH_MAC[p], upstream_mac=HOST_MAC[p])
    for p in neighbours:
        dp.accept_reports(ctl, p)


def udp_frame(src: int, dst: int, ttl: int = 64, payload: bytes = b"x" * 64, sport: int = 1234,
              dport: int = 5678) -> bytes:
    """Ethernet/IPv4/UDP from host ``src`` to host ``dst`` (correct IPv4 checksum)."""
    from scapy.all import IP, UDP, Ether

    return bytes(Ether(dst=_mac_text(SWITCH_MAC[src]), src=_mac_text(HOST_MAC[src]))
                 / IP(src=HOST_IP[src], dst=HOST_IP[dst], ttl=ttl) / UDP(sport=sport, dport=dport) / payload)


_mac_text = dp.mac_text


def parse_report(frame: bytes) -> Report:
    """Decode with the project's codec and check the frame is exactly a report (FRAME_BYTES)."""
    assert len(frame) == FRAME_BYTES, f"report frame of {len(frame)} bytes"
    return decode(frame)


def neighbour_report(occupancy: int = 140) -> bytes:
    """A report from the neighbour behind port 2 (node 2, its port 1), addressed to port 1's MAC."""
    return encode(Report(node_id=2, port=1, occupancy=occupancy, capacity=200, timestamp_us=1_234_567, seq=42,
                         interval_us=10_000, dst_mac=0x020000000101, src_mac=0x020000000201))
