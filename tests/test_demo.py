"""`hbh demo`, and what the data plane does when a sender does not react (a fixed-rate flow)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hbh.cli import main
from topo.runner import run_experiment
from topo.schema import load_topology

ROOT = Path(__file__).resolve().parents[1]


def test_demo_prints_the_summary_beside_the_paper(tmp_path: Path, capsys) -> None:
    assert main(["demo", "--duration", "4s", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Chen et al. report" in out and "no packet loss" in out and "R1<-H1" in out
    for name in ("laws.csv", "summary.json", "occupancy.png", "rates.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_a_sender_that_ignores_reports_fills_the_buffer_and_every_drop_is_counted() -> None:
    t = load_topology(ROOT / "topo" / "paper-1router.yaml")
    (flow,) = t.flows
    t.flows = [dataclasses.replace(flow, control="fixed", rate_bps=1.9e6, r_max_bps=None)]
    r = run_experiment(t, 6_000_000_000, seed=1, plots=False)
    s, rec = r.summary, r.recorder
    reports = [row for row in rec.laws if (row.node, row.toward) == ("H1", "R1")]
    assert reports == []  # H1 runs no law: a fixed flow
    r1 = s["buffers"]["H2<-R1"]
    assert r1["max"] < 1.0  # R1 still regulates its output toward H2
    drops = s["loss"]["dropped_by_reason"]
    assert drops.get("overflow", 0) > 0  # R1's modelled input buffer overflows: admission drops
    sent, received = s["loss"]["data_packets_sent"], s["loss"]["data_packets_received"]
    assert s["loss"]["host_tx_queue_full"] == 0  # 1.9 Mb/s fits H1's 2 Mb/s link
    assert 0 <= sent - received - drops["overflow"] <= 200 + 2  # the rest is still in R1's buffer or on a wire
