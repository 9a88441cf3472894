"""A p4switch between two network namespaces, h1 -- switch -- h2, and the blaster that fills it: the
rig of the bench's throughput, latency and soak rounds (run.py, soak.py).

Why a module of its own: run.py runs the soak (soak.py) and the soak starts its switch as run.py's
rounds do; with the rig in either, the two would import each other.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.paths import ROOT

ALINEA = ROOT / "p4src" / "alinea.p4"

#: run in h1 (``python -c BLASTER IFNAME HEXFRAME SECONDS``): sends one frame as fast as the socket
#: takes it for SECONDS, then prints how many it sent
BLASTER = textwrap.dedent("""
    import socket, sys, time
    ifname, hexframe, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    frame = bytes.fromhex(hexframe)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(64):
            try:
                s.send(frame)
                n += 1
            except BlockingIOError:
                pass
    print(n)
""")


#: the destination MAC the throughput rounds' frames leave the switch with when h2 is to discard them
#: (``_start(elsewhere=True)``): a unicast address that is not h2's eth0's, so h2's stack marks each frame
#: "for another host" and ip_rcv drops it before IP, UDP and ICMP see it, as a receiver NIC's unicast
#: filter would drop it (without that, every blast frame walks h2's IP and UDP receive and its ICMP
#: port-unreachable reply, on the switch's CPU: the veth delivers in the sender's context); the
#: switch's own work (lookup, rewrite, send) is the same for either address
ELSEWHERE_MAC = 0x0200000002FE


def _start(tmp: Path, cpu: int | None, tree: Path | None = None,
           elsewhere: bool = False):  # -> (Topology, SwitchProcess, GrpcController)
    from controlplane.p4runtime_client import GrpcController
    from tests.switch.netns import SwitchProcess, Topology
    from tests.switch.simnet import program

    topo = Topology()
    sw = ctl = None
    try:
        topo.add_host("h1", 1, "10.0.1.1", 24, "10.0.1.254", "02:00:00:00:01:01")
        topo.add_host("h2", 2, "10.0.2.1", 24, "10.0.2.254", "02:00:00:00:01:02")
        sw = SwitchProcess(["-i", f"1@{topo.hosts['h1'].switch_if}", "-i", f"2@{topo.hosts['h2'].switch_if}",
                            "--log-level", "warn", str(ALINEA)], str(tmp / "p4switch.log"), cpu=cpu,
                           cwd=str(tree or ROOT)).start()
        ctl = GrpcController(sw.grpc_addr, device_id=0)
        ctl.use_p4info(program(str(ALINEA)).p4info)
        for p in (1, 2):
            mac = ELSEWHERE_MAC if elsewhere and p == 2 else int(topo.hosts[f"h{p}"].mac.replace(":", ""), 16)
            ctl.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000 | p << 8, 24)},
                             "MyIngress.ipv4_forward", {"dst_mac": mac, "src_mac": 0x020000000100 | p, "port": p})
        return topo, sw, ctl
    except BaseException:
        if ctl is not None:
            ctl.close()
        if sw is not None:
            sw.stop()
        topo.close()
        raise


def _frame(topo, size: int = 64) -> bytes:  # noqa: ANN001 - topo None: the frame of a direct veth pair
    from tests.bench.fuzz import eth, ipv4

    h1 = int(topo.hosts["h1"].mac.replace(":", ""), 16) if topo is not None else 0x020000000001
    udp = (40000).to_bytes(2, "big") + (47001).to_bytes(2, "big") + (8 + size).to_bytes(2, "big") + bytes(2)
    return eth(0x020000000101, h1, 0x0800) + ipv4(0x0A000101, 0x0A000201, payload=udp + bytes(size))


