"""`hbh demo`, and what the data plane does when a sender does not react (a fixed-rate flow)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hbh.cli import main
from topo.file.schema import load_topology, load_topology_text
from topo.run.runner import run_experiment

ROOT = Path(__file__).resolve().parents[1]


def test_demo_prints_the_summary_beside_the_paper(tmp_path: Path, capsys) -> None:
    assert main(["demo", "--duration", "3s", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Chen et al. report" in out and "no packet loss" in out and "R1<-H1" in out
    assert all(c in out for c in ("cvihis-rtm", "cvihis-blm", "tcp-cubic", "tfrc", "ledbat", "gcc", "Jain's index"))
    assert "bottleneck-drop" in (tmp_path / "report.md").read_text()
    for name in ("report.md", "runs.csv", "compare_occupancy.png", "compare_rates.png", "compare_delay.png"):
        assert (tmp_path / name).stat().st_size > 0
    stored = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").glob("*.json")}
    assert len(stored) == 7

    # Run again: the seven runs are reused, and the demo says so instead of claiming to simulate them.
    assert main(["demo", "--duration", "3s", "--out", str(tmp_path)]) == 0
    again = capsys.readouterr().out
    assert "reusing the runs stored in" in again and "made by this code" in again and "--rerun" in again
    assert not any(line.startswith("simulating") for line in again.splitlines())
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").glob("*.json")} == stored


def test_the_demo_reruns_what_other_code_made_and_what_it_is_told_to(tmp_path: Path) -> None:
    """A stored run whose record names other code is simulated again, and said so; --rerun removes them all."""
    import json

    from hbh.demo import CONTROLS, stored_runs, what_runs
    from topo.sweep.code import code_digest

    runs = stored_runs(tmp_path, "3s", 1)
    assert list(runs) == CONTROLS.split(",") and {s for _, s in runs.values()} == {"run"}
    for control, (key, _) in runs.items():
        record = {"key": key, "summary": {}, "code": code_digest() if control != "tfrc" else "0" * 16}
        (tmp_path / "runs").mkdir(exist_ok=True)
        (tmp_path / "runs" / f"{key}.json").write_text(json.dumps(record))
    said = what_runs(tmp_path, "3s", 1, rerun=False)
    assert "for tfrc were made by other code: simulating them again" in said
    assert "simulating 3s of virtual time for tfrc," in said and "alinea, cvihis-rtm" in said.splitlines()[0]
    assert stored_runs(tmp_path, "3s", 2)["alinea"][1] == "run"  # another seed is another run
    said = what_runs(tmp_path, "3s", 1, rerun=True)
    assert "reusing" not in said and f"for {', '.join(CONTROLS.split(','))}, seed 1" in said
    assert not list((tmp_path / "runs").glob("*.json"))


def test_code_digest_follows_the_sources(tmp_path: Path) -> None:
    from topo.sweep.code import digest_of

    (tmp_path / "topo").mkdir()
    (tmp_path / "topo" / "law.py").write_text("GAIN = 1\n")
    (tmp_path / "topo" / "notes.md").write_text("not code\n")
    first = digest_of(tmp_path)
    (tmp_path / "topo" / "notes.md").write_text("still not code\n")
    assert digest_of(tmp_path) == first
    (tmp_path / "topo" / "law.py").write_text("GAIN = 2\n")
    assert digest_of(tmp_path) != first


def test_a_sender_that_ignores_reports_fills_its_buffer_and_every_drop_is_counted() -> None:
    """Hop-by-hop network (one ALINEA flow), plus a fixed-rate source that ignores R1's reports."""
    t = load_topology_text("""
nodes:
  H1: {kind: host}
  H3: {kind: host}
  R1: {kind: switch}
  H2: {kind: host, receive_buffer: 200, playout: 1.2Mbps}
links:
  - {ends: [H1, R1]}
  - {ends: [H3, R1]}
  - {ends: [R1, H2]}
flows:
  - {name: fixed, src: H1, dst: H2, control: fixed, rate: 1.5Mbps}
  - {name: reg, src: H3, dst: H2, control: alinea}
""", "overload.yaml")
    r = run_experiment(t, 6_000_000_000, seed=1, plots=False)
    s, rec = r.summary, r.recorder
    h1 = [row for row in rec.laws if (row.node, row.toward) == ("H1", "R1")]
    assert h1 and all(row.rate_bps == 0 for row in h1)  # H1 runs no law: R1's reports are only measured
    assert max(row.occupancy for row in h1) == 200 and any(row.drops for row in h1)
    assert s["buffers"]["H2<-R1"]["max"] < 1.0  # R1 still regulates its output toward H2
    drops = s["loss"]["dropped_by_reason"]
    assert drops.get("overflow", 0) > 0 and s["loss"]["receiver_buffer_overflow"] == 0
    sent, received = s["loss"]["data_packets_sent"], s["loss"]["data_packets_received"]
    assert 0 <= sent - received - drops["overflow"] <= 2 * 200 + 4  # the rest is in R1's buffers or on a wire


def test_only_fixed_flows_make_an_end_to_end_network_whose_drops_are_counted() -> None:
    t = load_topology(ROOT / "topo" / "paper-1router.yaml")
    (flow,) = t.flows
    t.flows = [dataclasses.replace(flow, control="fixed", rate_bps=1.9e6, r_max_bps=None)]
    s = run_experiment(t, 6_000_000_000, seed=1, plots=False).summary
    assert all(r["max_bps"] == 0 for r in s["rates"].values())  # nobody regulates: reports only measured
    assert s["loss"]["receiver_buffer_overflow"] > 0  # R1 forwards at the link's rate: H2's buffer overflows
    assert s["loss"]["total"] == s["loss"]["receiver_buffer_overflow"] == s["loss"]["lost_by_sequence"]
