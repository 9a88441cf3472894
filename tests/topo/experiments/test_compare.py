"""`hbh compare`: bad input refused in one line (exit 2); a short comparison writes its report;
the paper-5router comparison shows ALINEA lossless beside CVIHIS, and each control's reaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hbh.cli import main
from tests.paths import ROOT
from topo.experiments.compare import compare, jain, run_metrics

P5 = str(ROOT / "topo" / "paper-5router.yaml")
DROP = str(ROOT / "topo" / "capacity-drop.yaml")


@pytest.mark.parametrize(("args", "needle"), [
    (["--controls", "alinea,tcp-nosuchcc"], "'nosuchcc' is not offered by this kernel (available: "),
    (["--controls", "alinea,tcp-bbr"], "bbr"),  # the simulator has no bbr (or the kernel offers none)
    (["--controls", "alinea,tcp-"], "unknown control 'tcp-'"),
    (["--controls", "alinea,quic"], "unknown control 'quic'"),
    (["--controls", "alinea,alinea"], "named twice"),
    (["--controls", "fixed"], "unknown control 'fixed'"),
    (["--seeds", "5-1"], "--seeds"),
    (["--seeds", "x"], "--seeds"),
    (["--duration=-3s"], "--duration"),
    (["--backend", "carrier-pigeon"], "--backend carrier-pigeon"),
    (["--set", "link[R1-R2].rate=1Mbps,2Mbps"], "one value per setting"),
    (["--set", "link[R1-R9].rate=1Mbps"], "R9"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys, args: list[str], needle: str) -> None:
    assert main(["compare", P5, "--out", str(tmp_path / "o"), "--serial", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hbh compare: ") and needle in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "o" / "runs").exists()  # nothing ran


ALL_SIX = "alinea,cvihis-rtm,cvihis-blm,tcp-cubic,tfrc,ledbat"


@pytest.mark.parametrize("topology", sorted(p.name for p in (ROOT / "topo").glob("*.yaml")))
def test_every_shipped_topology_takes_every_control(topology: str) -> None:
    """The flows' keys a control does not take (r_max for tcp and ledbat, cc for the others, a ledbat
    target...) go when the control changes, so every point of the comparison loads and the simulator
    accepts it (tcp-cubic: the model has cubic)."""
    from topo.experiments.compare import _check_backend
    from topo.file.settings import SweepError
    from topo.sweep.run import plan_sweep

    if is_multicast(ROOT / "topo" / topology):
        # A multicast file's unicast-only controls are refused, one line naming the flow and why.
        with pytest.raises(SweepError, match=r"a list of receivers \(multicast\) takes control"):
            plan_sweep(ROOT / "topo" / topology, [], ALL_SIX, "1", "1s")
        return
    sweep = plan_sweep(ROOT / "topo" / topology, [], ALL_SIX, "1", "1s")
    _check_backend(sweep, "sim")
    assert [p.control for p in sweep.points] == ALL_SIX.split(",")


def is_multicast(path: Path) -> bool:
    """A shipped file with a flow to a list of receivers (docs/howto/multicast.md)."""
    import yaml

    return any(isinstance(f.get("dst"), list) for f in yaml.safe_load(path.read_text()).get("flows", []))


def test_all_six_controls_carry_traffic_through_a_playout_host(tmp_path: Path) -> None:
    """paper-1router's H2 drains a playout buffer: TCP's application reads its socket instead, so its
    goodput is what it received, not the (empty) playout buffer's."""
    c = compare(str(ROOT / "topo" / "paper-1router.yaml"), ALL_SIX, "1", "3s", tmp_path, serial=True, plots=False)
    assert c.failures == 0 and c.controls == tuple(ALL_SIX.split(","))
    assert all(c.metrics[k][0]["goodput_kbps"] > 100 for k in c.controls), c.metrics
    assert all(f["control"] == "tcp" and f["tcp"]["cc"] == "cubic" for f in c.summaries["tcp-cubic"][0]["flows"].values())


def test_jain_index_bounds() -> None:
    assert jain([3.0, 3.0, 3.0]) == pytest.approx(1.0)
    assert jain([1.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    assert 1 / 3 < jain([2.0, 1.0, 1.0]) < 1.0
    assert jain([0.0, 0.0]) is None


def test_a_comparison_writes_a_report_with_every_control_and_resumes(tmp_path: Path) -> None:
    c = compare(P5, "alinea,cvihis-rtm", "1-2", "2s", tmp_path, serial=True, plots=True)
    assert c.failures == 0 and [len(c.metrics[k]) for k in c.controls] == [2, 2]
    report = (tmp_path / "report.md").read_text()
    assert "| loss (%) |" in report and "cvihis-rtm" in report and "seeds 1, 2" in report and "±" in report
    for name in ("compare_occupancy.png", "compare_rates.png", "compare_delay.png"):
        assert (tmp_path / name).stat().st_size > 0
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    again = compare(P5, "alinea,cvihis-rtm", "1-2", "2s", tmp_path, serial=True, plots=False)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == runs and again.metrics == c.metrics


def test_metrics_use_the_sources_rate_when_no_hop_regulates() -> None:
    summary = json.loads(json.dumps({
        "loss": {"total": 5, "data_packets_sent": 100}, "convergence_s": None,
        "flows": {"a": {"goodput_bps": 1e6, "owd_ms": {"mean": 10, "p50": 9, "p99": 30}, "rate_cv": 0.1},
                  "b": {"goodput_bps": 1e6, "owd_ms": {"mean": 20, "p50": 19, "p99": 40}, "rate_cv": 0.3}},
        "links": {"R1->R2": {"utilisation": 0.9}, "H1->R1": {"utilisation": 0.2}},
        "events": [{"reaction_s": None, "source_reaction_s": 0.5}]}))
    m = run_metrics(summary, {"R1->R2": 2e6, "H1->R1": 10e6}, ["a", "b"])
    assert m["loss_pct"] == pytest.approx(5.0) and m["utilisation"] == 0.9 and m["reaction_s"] == 0.5
    assert m["owd_mean_ms"] == pytest.approx(15) and m["jain"] == pytest.approx(1.0)


@pytest.mark.slow
def test_paper_5router_alinea_is_lossless_beside_cvihis_and_every_control_reacts_to_the_drop(tmp_path: Path) -> None:
    """capacity-drop = paper-5router with R3-R4 falling to 1 Mb/s at 30 s; 36 s runs, seed 1."""
    c = compare(DROP, "alinea,cvihis-rtm,cvihis-blm", "1", "36s", tmp_path, serial=True, plots=False)
    m = {k: v[0] for k, v in c.metrics.items()}
    assert m["alinea"]["loss_packets"] == 0
    assert m["cvihis-rtm"]["loss_packets"] > 0  # end to end: the drop is found by losing packets
    for control in c.controls:
        assert m[control]["reaction_s"] is not None and 0 < m[control]["reaction_s"] < 6
        assert m[control]["utilisation"] is not None and m[control]["owd_p50_ms"] is not None


TCP1 = str(ROOT / "topo" / "tcp-1router.yaml")


@pytest.mark.cpu_only
@pytest.mark.parametrize(("args", "needle"), [
    (["--jobs", "2"], "--jobs 2: netns runs one at a time"),
    ([], "needs root"),
])
def test_netns_refusals_are_one_line_and_exit_2(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch,
                                                  args: list[str], needle: str) -> None:
    from topo.netns import plumbing as netns_plumbing

    monkeypatch.setattr(netns_plumbing.os, "geteuid", lambda: 1000)  # not root, whoever runs the tests
    assert main(["compare", TCP1, "--controls", "cvihis-rtm,tcp-reno", "--backend", "netns", "--duration", "2s",
                 "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hbh compare: ") and needle in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "o" / "runs").exists()


@pytest.mark.cpu_only
def test_a_netns_run_has_its_own_key() -> None:
    """A results directory never takes a kernel run for a simulator run (or back); the simulator's keys
    are those of older directories."""
    from topo.sweep.run import plan_sweep

    sweep = plan_sweep(TCP1, [], "tcp-reno", "1", "2s")
    sim, netns = sweep.runs("sim")[0], sweep.runs("netns")[0]
    assert sim.key != netns.key and (sim.backend, netns.backend) == ("sim", "netns")
    assert sweep.runs()[0] == sim


@pytest.mark.netns
@pytest.mark.slow
def test_netns_compare_runs_each_control_in_namespaces(tmp_path: Path) -> None:
    """Two controls for 4 s each through p4switch: the kernel's TCP (its retransmission count from
    TCP_INFO) and CVIHIS RTM both carry traffic, and the report says which backend and load."""
    from tests.switch import netns as N

    N.require_netns()
    c = compare(TCP1, "cvihis-rtm,tcp-reno", "1", "4s", tmp_path, backend="netns", plots=False)
    assert c.failures == 0 and c.controls == ("cvihis-rtm", "tcp-reno")
    for control in c.controls:
        (s,) = c.summaries[control]
        assert s["backend"] == "netns" and s["flows"]["t1"]["goodput_bps"] > 0, control
    assert "retransmissions" in c.summaries["tcp-reno"][0]["flows"]["t1"]["tcp"]
    assert c.metrics["tcp-reno"][0]["utilisation"] is not None
    assert "Backend netns" in (tmp_path / "report.md").read_text()
