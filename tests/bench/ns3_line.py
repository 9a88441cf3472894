"""The paper-5router line in ns-3, the simulator's peer in docs/performance.md.

    build/ns3-venv/bin/python tests/bench/ns3_line.py --k 1,10,50 --seconds 10

Runs with the interpreter of its own environment (PyPI ``ns3``, pinned in tests/bench/ns3_bench.py),
never the project's: it imports nothing of the project. Prints one JSON line per rate factor:
packet-hops, the wall and CPU seconds of ``Simulator::Run`` alone, and the set-up's wall seconds (the
bindings' import, some 30 s, is paid once for all the rates of one process).

The line (paper-5router.yaml, every rate times ``k``, every delay and report interval divided by
``k``, as ``tests/bench/netns_bench.scaled`` does for the simulator's row): 7 nodes H1-R1..R5-H2
joined by point-to-point links at 2, 2, 3, 3, 2, 2 Mb/s x k and 3 ms / k, each direction a
200-packet drop-tail queue (the traffic-control layer removed, so that queue is the only one).
Traffic, all of it ns-3's compiled applications: one flow H1 -> H2 at the rate the simulator's
ALINEA loop settles at (H2's play-out, 1.2 Mb/s x k), and on every link a report every
10 ms / k from the downstream end to the upstream end, as every switch port and H2 send theirs.
Both are constant-rate ``UdpClient`` applications into ``UdpServer`` sinks.

Wire sizes are the simulator's: its frames are Ethernet frames on a wire that adds 24 bytes
(preamble, FCS, gap) and pads to 60, so a 1000-byte data frame occupies 1024 bytes of wire time
and a report (56 bytes) 84; here the PPP frame (2 bytes + IPv4 + UDP + payload) is given those sizes.

Packet-hops are counted as the simulator counts them (frames put on a link, both directions):
a trace sink in C++ (compiled by cppyy's cling, no Python per packet) on every device's
``PhyTxBegin``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

RATES_MBPS = (2, 2, 3, 3, 2, 2)  # H1-R1, R1-R2, R2-R3, R3-R4, R4-R5, R5-H2
DELAY_MS = 3.0
QUEUE_PACKETS = 200
PLAYOUT_MBPS = 1.2  # H2's play-out: the rate the simulator's loop settles at
REPORT_MS = 10.0
WIRE_EXTRA, PPP, IP_UDP = 24, 2, 28
DATA_WIRE, REPORT_WIRE = 1000 + WIRE_EXTRA, 60 + WIRE_EXTRA  # a report (56 bytes) is padded to 60

COUNTER = """
#include "ns3/core-module.h"
#include "ns3/network-module.h"
namespace hbh_bench {
static long long hops = 0;
void on_tx(ns3::Ptr<const ns3::Packet>) { ++hops; }
void install() {
  hops = 0;
  ns3::Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/PhyTxBegin",
                                     ns3::MakeCallback(&on_tx));
}
long long count() { return hops; }
}
"""


def _udp_flow(ns, src, dst_addr, port: int, payload: int, interval_s: float, seconds: float) -> None:  # noqa: ANN001
    """A constant-rate UdpClient on ``src`` toward ``dst_addr:port`` (its UdpServer is installed apart)."""
    client = ns.UdpClientHelper(ns.InetSocketAddress(dst_addr, port).ConvertTo())
    client.SetAttribute("MaxPackets", ns.UintegerValue(0))  # unlimited
    client.SetAttribute("Interval", ns.TimeValue(ns.Seconds(interval_s)))
    client.SetAttribute("PacketSize", ns.UintegerValue(payload))
    apps = client.Install(src)
    apps.Start(ns.Seconds(0.0))
    apps.Stop(ns.Seconds(seconds))


def _sink(ns, node, port: int, seconds: float) -> None:  # noqa: ANN001
    apps = ns.UdpServerHelper(port).Install(node)
    apps.Start(ns.Seconds(0.0))
    apps.Stop(ns.Seconds(seconds + 1))


def run(ns, k: int, seconds: float) -> dict[str, float]:  # noqa: ANN001
    t_setup = time.perf_counter()
    nodes = ns.NodeContainer()
    nodes.Create(len(RATES_MBPS) + 1)
    ns.InternetStackHelper().Install(nodes)
    tch = ns.TrafficControlHelper()
    addr = ns.Ipv4AddressHelper()
    ifaces = []
    for i, rate in enumerate(RATES_MBPS):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{rate * k}Mbps"))
        p2p.SetChannelAttribute("Delay", ns.StringValue(f"{DELAY_MS * 1000 / k:.6f}us"))
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{QUEUE_PACKETS}p")))
        devs = p2p.Install(nodes.Get(i), nodes.Get(i + 1))
        addr.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        ifaces.append(addr.Assign(devs))
        tch.Uninstall(devs)  # after Assign, which installs the default queue disc
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    last = len(RATES_MBPS)
    data_port, report_port = 9000, 9001
    _sink(ns, nodes.Get(last), data_port, seconds)
    _udp_flow(ns, nodes.Get(0), ifaces[-1].GetAddress(1), data_port, DATA_WIRE - PPP - IP_UDP,
              DATA_WIRE * 8 / (PLAYOUT_MBPS * 1e6 * k), seconds)
    for i in range(len(RATES_MBPS)):  # node i+1 reports to node i over link i
        _sink(ns, nodes.Get(i), report_port, seconds)
        _udp_flow(ns, nodes.Get(i + 1), ifaces[i].GetAddress(0), report_port, REPORT_WIRE - PPP - IP_UDP,
                  REPORT_MS / 1000 / k, seconds)
    ns.cppyy.gbl.hbh_bench.install()
    ns.Simulator.Stop(ns.Seconds(seconds))
    setup = time.perf_counter() - t_setup
    t, cpu = time.perf_counter(), time.process_time()
    ns.Simulator.Run()
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    hops = int(ns.cppyy.gbl.hbh_bench.count())
    ns.Simulator.Destroy()  # the node list too: the next rate starts afresh
    return {"hops": hops, "wall": wall, "cpu": cpu, "setup": setup}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", default="1", help="rate factors, comma-separated: links at 2/3 Mb/s x k")
    p.add_argument("--seconds", type=float, default=10.0, help="virtual time")
    args = p.parse_args(argv)
    t = time.perf_counter()
    from ns import ns  # the wheel's cppyy bindings (slow to import)

    ns.cppyy.cppdef(COUNTER)
    imported = time.perf_counter() - t
    for k in (int(x) for x in args.k.split(",")):
        print(json.dumps({"k": k, "import": imported} | run(ns, k, args.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
