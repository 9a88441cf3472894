"""CVIHIS end to end in the simulator: feedback through the network, clock offsets, mode switch."""

from __future__ import annotations

import pytest

from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment
from topo.sim.network import SimNetwork

S = 1_000_000_000
LINE = """
nodes:
  H1: {{kind: host{h1}}}
  R1: {{kind: switch}}
  R2: {{kind: switch}}
  H2: {{kind: host{h2}}}
defaults:
  link: {{rate: 10Mbps, delay: 5ms, buffer: 60}}
links:
  - {{ends: [H1, R1]}}
  - {{ends: [R1, R2], rate: 4Mbps, delay: 40ms}}
  - {{ends: [R2, H2]}}
flows:
  - {{name: f1, src: H1, dst: H2, control: {control}}}
{extra}"""


def line(control: str = "cvihis-rtm", h1: str = "", h2: str = "", extra: str = ""):
    return load_topology_text(LINE.format(control=control, h1=h1, h2=h2, extra=extra), "line.yaml")


@pytest.mark.slow
def test_one_rtm_flow_uses_the_bottleneck_end_to_end() -> None:
    s = run_experiment(line(), 60 * S, seed=1, plots=False).summary  # goodput over 30-60 s, once ramped up
    f = s["flows"]["f1"]
    assert f["goodput_bps"] >= 0.95 * 4e6
    assert s["rates"] and all(r["max_bps"] == 0 for r in s["rates"].values())  # no switch regulates


def test_clock_offsets_between_sender_and_receiver_change_nothing() -> None:
    base = run_experiment(line(), 4 * S, seed=2, plots=False)
    shifted = run_experiment(line(h1=", clock_offset: 1s", h2=", clock_offset: -1s"), 4 * S, seed=2, plots=False)
    assert shifted.recorder.packets == base.recorder.packets  # same packets at the same (true) times
    assert shifted.summary["flows"] == base.summary["flows"]


def test_mode_switches_on_the_fly_keeping_the_receiver() -> None:
    t = line(control="cvihis-blm", extra="events:\n  - {at: 1s, flow: f1, mode: rtm}\n")
    net = SimNetwork(t, seed=1).build()
    net.run_until(S - 1)
    sink = net.hosts["H2"].sinks[1]
    received = sink.core.received
    assert sink.core.mode.value == "blm" and received > 0
    net.run_until(S + 1)
    assert net.hosts["H2"].sinks[1] is sink and sink.core.mode.value == "rtm" and sink.core.received >= received
