"""`hbh params` against a running p4switch process, with a switch agent attached (root, netns).

The agent is the switch's primary controller over real gRPC and Thrift. `hbh params set` writes
a change (briefly becoming primary), `hbh params show` reads it back, a rejected change writes
nothing, and the agent runs with the new parameters from the next report the switch hands it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.agent import ModelledPort, RegulatedPort, Route, SwitchPlan
from controlplane.dataplane_config import mac_int
from controlplane.p4runtime_client import GrpcController
from controlplane.params import LawParams, PortParams
from controlplane.queues import connect
from controlplane.report import Report, encode
from controlplane.switch_agent import SwitchAgent
from hbh.cli import main
from p4switch.device import compile_file
from runtime.sched import RealtimeScheduler
from tests.switch import netns as N

pytestmark = pytest.mark.netns
ROOT = Path(__file__).resolve().parents[2]
LAW = LawParams(o_min=0.15, o_max=0.7, w_max=8e6, w_min=5e5, r_max=2e6, r_floor=4e4, k_p=0.0)
SW_MAC = {1: 0x020000000101, 2: 0x020000000102}


def report_frame(dst_mac: str, src_mac: str, occupancy: int) -> bytes:
    return encode(Report(node_id=9, port=1, occupancy=occupancy, capacity=200, timestamp_us=1, seq=1,
                         interval_us=10_000, dst_mac=mac_int(dst_mac), src_mac=mac_int(src_mac)))


def test_params_set_show_and_the_agent_applies_them_at_the_next_report(tmp_path: Path, capsys) -> None:
    N.require_netns()
    with N.topology() as topo:
        h1 = topo.add_host("h1", 1, "10.0.1.1", 24, "10.0.1.254", "02:00:00:00:01:01")
        h2 = topo.add_host("h2", 2, "10.0.2.1", 24, "10.0.2.254", "02:00:00:00:01:02")
        sw = N.SwitchProcess(["-i", f"1@{h1.switch_if}", "-i", f"2@{h2.switch_if}", "--no-p4"],
                             str(tmp_path / "p4switch.log")).start()
        sched = RealtimeScheduler()
        sched.start()
        agent: SwitchAgent | None = None
        try:
            plan = SwitchPlan("S1", 1, routes=(Route(0x0A000201, 32, 2, mac_int(h2.mac), SW_MAC[2]),),
                              modelled=(ModelledPort(1, PortParams(200, 10_000), SW_MAC[1], mac_int(h1.mac)),),
                              regulated=(RegulatedPort(2, LAW, 1000),))
            box: list[SwitchAgent] = []
            ctl = GrpcController(sw.grpc_addr, on_message=lambda m: box and box[0].on_stream_message(m))
            agent = SwitchAgent(plan, ctl, connect("127.0.0.1", sw.thrift_port), sched)
            box.append(agent)
            prog = compile_file(ROOT / "p4src" / "alinea.p4")
            agent.install(prog.p4info, prog.device_config)
            addr = ["--grpc-addr", sw.grpc_addr]

            assert main(["params", "set", *addr, "--port", "2", "--o-max", "60%", "--w-min", "1Mbps"]) == 0
            assert main(["params", "set", *addr, "--port", "1", "--interval", "5ms"]) == 0
            capsys.readouterr()
            assert main(["params", "show", *addr]) == 0
            shown = capsys.readouterr().out
            row2 = next(line for line in shown.splitlines() if line.split()[0] == "2")
            row1 = next(line for line in shown.splitlines() if line.split()[0] == "1")
            assert "60.0%" in row2 and "1Mbps" in row2 and "5ms" in row1

            # Refused after reading the switch (O_min above the switch's O_max): nothing written.
            assert main(["params", "set", *addr, "--port", "2", "--o-min", "65%"]) == 2
            assert "o_min = 0.65 is above o_max = 0.6" in capsys.readouterr().err
            # A port that faces no reporting neighbour has no law parameters.
            assert main(["params", "set", *addr, "--port", "1", "--o-max", "50%"]) == 2
            capsys.readouterr()
            assert main(["params", "show", *addr]) == 0
            assert capsys.readouterr().out == shown

            # The agent still runs the plan's law until the switch hands it a report ...
            assert agent.core.ports[(2, 0)].law.params.o_max == 0.7
            tx = N.raw_socket(h2.name, "eth0")
            try:
                tx.send(report_frame("02:00:00:00:01:02", h2.mac, occupancy=100))
                assert ctl.wait_for(lambda: agent.core.ports[(2, 0)].law.reports > 0, 30.0), sw.output()
            finally:
                tx.close()
            # ... and from that report on it runs with what the switch holds.
            params = agent.core.ports[(2, 0)].law.params
            assert (params.o_max, params.w_min) == (0.6, 1e6)
        finally:
            if agent is not None:
                sched.run_sync(agent.stop)
                agent.client.close()
            sched.stop()
            sw.stop()
