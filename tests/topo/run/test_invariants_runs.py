"""The run-end invariants on whole simulator runs: short runs of a merge topology under each kind
of control pass every invariant (``strict``), every run's summary records them, and ``hbh run
--strict`` fails (status 3) on a run whose records were tampered with, naming the invariant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hbh.cli import main as hbh_main
from topo.file.schema import load_topology_text
from topo.net.invariants import NAMES
from topo.run.runner import STRICT_EXIT, InvariantsFailed, run_experiment
from topo.sim.network import SimNetwork

#: two sources merge at R1 onto a slower R1-R2, one sink with a playout buffer; a fixed flow
#: faster than its own access link (its NIC queue fills, R1 drops) and a rate drop on R1-R2.
MERGE = """\
name: inv-merge
defaults:
  link: {{rate: 4Mbps, delay: 2ms, buffer: 60}}
  packet_size: 1000B
nodes:
  H1: {{kind: host}}
  H2: {{kind: host}}
  R1: {{kind: switch}}
  R2: {{kind: switch}}
  D: {{kind: host, receive_buffer: 100, playout: 2.5Mbps}}
links:
  - {{ends: [H1, R1]}}
  - {{ends: [H2, R1], rate: 2Mbps}}
  - {{ends: [R1, R2], rate: 3Mbps}}
  - {{ends: [R2, D]}}
flows:
  - {{name: f1, src: H1, dst: D, control: {control}}}
  - {{name: f2, src: H2, dst: D, control: {control}{size}}}
  - {{name: x, src: H2, dst: D, control: fixed, rate: 3Mbps, start: 1s}}
events:
  - {{at: 2s, link: [R1, R2], rate: 1.5Mbps}}
"""
S = 1_000_000_000


def merge(control: str) -> str:
    """The merge under ``control``; f2's packets are smaller (a TCP flow's are full segments)."""
    return MERGE.format(control=control, size="" if control == "tcp" else ", packet_size: 600B")


@pytest.mark.slow
@pytest.mark.parametrize("control", ["alinea", "cvihis-rtm", "tcp"])
def test_a_short_merge_run_keeps_every_invariant(control: str) -> None:
    topo = load_topology_text(merge(control), f"merge-{control}.yaml")
    result = run_experiment(topo, 3 * S, seed=1, plots=False, strict=True)
    block = result.summary["invariants"]
    assert block == {"checked": list(NAMES), "violations": []}
    assert result.summary["loss"]["total"] > 0  # the fixed flow overflows R1: conservation had drops to place


def test_a_run_that_loses_its_drop_records_fails_under_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The drop counters never reach drops.csv: the summary then says nothing was dropped while the
    switch's counters and the flows' missing packets say otherwise."""
    monkeypatch.setattr(SimNetwork, "_sample_drops", lambda self: None)
    path = tmp_path / "merge.yaml"
    path.write_text(merge("alinea").replace("start: 1s", "start: 0s"))
    out = tmp_path / "run"
    args = ["run", str(path), "--duration", "3s", "--out", str(out), "--no-plots", "--no-progress"]
    assert hbh_main([*args, "--strict"]) == STRICT_EXIT
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("hbh run: invariant violated: ")]
    assert any(": counters_agree: " in line and "drop counters say" in line for line in lines)
    recorded = json.loads((out / "summary.json").read_text())["invariants"]
    assert recorded["checked"] == list(NAMES)
    assert [f"hbh run: invariant violated: {v['name']}: {v['detail']}" for v in recorded["violations"]] == lines
    assert hbh_main(args) == 0  # without --strict: said, not fatal
    assert "hbh run: invariant violated: counters_agree" in capsys.readouterr().err


def test_run_experiment_strict_raises_with_the_results(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SimNetwork, "_sample_drops", lambda self: None)
    topo = load_topology_text(merge("alinea").replace("start: 1s", "start: 0s"), "merge.yaml")
    with pytest.raises(InvariantsFailed) as info:
        run_experiment(topo, 3 * S, seed=1, plots=False, strict=True)
    assert info.value.result.violations and "counters_agree" in str(info.value)


def test_a_run_whose_switches_hide_their_drops_breaks_conservation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop counters that read zero everywhere: the records and the summary agree with each other,
    but the flows' missing packets are then nowhere on their paths."""
    import topo.sim.network as simnet

    monkeypatch.setattr(simnet, "read_drop_counters", lambda client, ports: [])
    topo = load_topology_text(merge("alinea").replace("start: 1s", "start: 0s"), "merge.yaml")
    result = run_experiment(topo, 3 * S, seed=1, plots=False)
    found = [v for v in result.violations if v["name"] == "conservation"]
    assert found, result.violations


@pytest.mark.netns
@pytest.mark.slow
def test_a_short_netns_run_keeps_every_invariant(tmp_path: Path) -> None:
    """Real processes: the end state's bounds (what the hosts' last sample cannot see) still hold."""
    from tests.switch import netns as N
    from topo.netns.plumbing import clean

    N.require_netns()
    topo = load_topology_text(merge("alinea").replace("start: 1s", "start: 0s"), "merge.yaml")
    out = tmp_path / "netns"
    try:
        result = run_experiment(topo, 3 * S, seed=1, out=out, plots=False, backend="netns", pcap=False)
    finally:  # the run tears its network down; this removes what a failed teardown would leave
        if (out / "network.json").exists():
            clean(json.loads((out / "network.json").read_text())["prefix"])
    assert result.summary["invariants"]["checked"] == list(NAMES)
    if result.violations:  # a run that fell behind real time measured the machine: its windows say so
        N.skip_unless_kept_up(result.summary, f"invariants: {result.violations}")
    assert result.violations == []


def test_hbh_compare_records_and_says_each_runs_invariants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Each run's summary in the comparison keeps its invariants; a broken one is said per control and seed."""
    path = tmp_path / "merge.yaml"
    path.write_text(merge("alinea").replace("start: 1s", "start: 0s"))
    out = tmp_path / "cmp"
    args = ["compare", str(path), "--controls", "alinea,cvihis-rtm", "--seeds", "1", "--duration", "3s", "--out",
            str(out), "--serial", "--no-plots", "--no-progress"]
    # links.csv says every link carried a byte per ns (8 Gb/s): more than any link here can
    monkeypatch.setattr(SimNetwork, "_carried_bytes", lambda self, u, v, now: now)
    assert hbh_main(args) == 0
    err = capsys.readouterr().err
    for control in ("alinea", "cvihis-rtm"):
        assert f"hbh compare: {control}, seed 1: invariant violated: link_rate: link " in err
    from topo.experiments.compare import compare

    again = compare(str(path), "alinea,cvihis-rtm", "1", "3s", out, serial=True, plots=False)  # resumed: stored
    for control in ("alinea", "cvihis-rtm"):
        (summary,) = again.summaries[control]
        assert summary["invariants"]["checked"] == list(NAMES)
        assert summary["invariants"]["violations"]


#: a host's fixed flow five times faster than its 20 Mb/s link (its NIC queue fills: ~0.4 s of
#: frames), then the link falls to 1 Mb/s: the frames still in the NIC queue must go at 1 Mb/s
#: (they do since the link's queue re-times what waits: engine/src/net/link.rs, ``Nic``).
HOST_LINK_FALL = """\
name: host-link-rate-fall
defaults:
  link: {rate: 20Mbps, delay: 1ms, buffer: 100}
nodes:
  S1: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, H2]}
flows:
  - {name: f1, src: H1, dst: H2, control: fixed, rate: 100Mbps, packet_size: 1000B}
events:
  - {at: 1s, link: [H1, S1], rate: 1Mbps}
"""


def test_a_host_links_rate_fall_slows_the_frames_already_in_its_nic_queue() -> None:
    topo = load_topology_text(HOST_LINK_FALL, "host-link-rate-fall.yaml")
    net = SimNetwork(topo, seed=1).build()
    net.run_until(2 * S)
    rec = net.recorder
    got = {s.t_ns: s.received for s in rec.flows if s.flow == "f1"}
    # from 0.1 s after the fall, H2 gets at most what 1 Mb/s carries (+ one frame): the queue's frames too
    assert (got[max(got)] - got[S + S // 10]) * 8 * 1000 <= 1_000_000 * (max(got) - S - S // 10) / S + 8 * 1000
    result = run_experiment(topo, 2 * S, seed=1, plots=False, strict=False)
    assert [v for v in result.summary["invariants"]["violations"] if v["name"] == "link_rate"] == []


def test_a_tcp_receiver_may_take_more_than_its_link_carried_over_the_window_but_not_since_the_start() -> None:
    """tcp-hole-release-goodput.yaml (fuzz_topo seed 79): one reno flow loses 1017 frames at its own NIC queue; its
    receiver hands the application the in-order records each retransmission frees, 23.6 Mb/s over the run window
    through a 20 Mb/s link. The goodput_total invariant bounds a TCP receiver from the run's start (less what it had
    taken before the window), as host_capacity does; over the window alone it failed this run."""
    from tests.paths import RANDOM_CASES  # noqa: PLC0415
    from tests.topo.randomcheck import case_seconds  # noqa: PLC0415

    text = (RANDOM_CASES / "tcp-hole-release-goodput.yaml").read_text()
    topo = load_topology_text(text, "tcp-hole-release-goodput.yaml")
    result = run_experiment(topo, round(case_seconds(text) * S), seed=1, plots=False, strict=True)
    link = topo.link_between("S1", "H3").rate_bps
    assert result.summary["goodput_total_bps"] > link  # the case still shows what the bound must allow
    assert result.summary["invariants"]["violations"] == []
