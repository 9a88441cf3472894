"""Issue 20's stall, reproduced in the simulator: today's agents on BMv2's egress queues.

On real simple_switch the paper's five-router line froze (goodput at the floor, R1-R4 stuck at
77-85 % for the whole run). The cause is BMv2's queue model, now p4switch's default
(p4switch/tm.py): a packet's departure is fixed when it is queued, so the packets queued while
an agent's rate is at the floor keep their 200 ms spacing after the rate rises. The same file on
the dequeue-time shaper regulates every buffer (test_sim_runs.py). When the agents learn to live
with BMv2's queues (issue 20, item 2), this test is the one to turn around.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from topo.runner import queue_model_warning, run_experiment
from topo.schema import load_topology

ROOT = Path(__file__).resolve().parents[2]
S = 1_000_000_000


def on_queue_model(name: str, model: str):
    t = load_topology(ROOT / "topo" / f"{name}.yaml")
    return dataclasses.replace(t, options=dataclasses.replace(t.options, queue_model=model))


@pytest.mark.slow
def test_paper_5router_freezes_on_bmv2_queues_under_todays_agents() -> None:
    t = on_queue_model("paper-5router", "bmv2")
    s = run_experiment(t, 30 * S, seed=1, plots=False).summary
    goodput = s["flows"]["f1"]["goodput_bps"]
    assert goodput < 0.25 * 1.2e6, goodput  # the shaper gives 1.2 Mb/s on the same line
    frozen = [name for name, b in s["buffers"].items() if b["std"] < 0.01 and b["mean"] > 0.5]
    assert len(frozen) >= 2, s["buffers"]  # routers stuck well above empty, not moving


def test_the_run_warns_about_hop_by_hop_on_bmv2_queues() -> None:
    assert "freeze" in (queue_model_warning(on_queue_model("paper-5router", "bmv2")) or "")
    assert queue_model_warning(on_queue_model("paper-5router", "shaper")) is None
    assert queue_model_warning(on_queue_model("paper-5router", "shaper"), target="bmv2") is not None
    assert queue_model_warning(on_queue_model("cvihis-blm-vs-rtm", "bmv2")) is None  # end to end: no rates set
