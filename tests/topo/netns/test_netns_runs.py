"""The shipped experiments as real processes: namespaces, veths, p4switch, agents over gRPC/Thrift.

Needs root (skipped with the reason otherwise). Every run has its own prefix; every test
removes what its run left, also when it fails (``clean(prefix)`` in ``finally``). Real time
on a shared 2-core machine: the margins are the acceptance criteria themselves (zero loss,
5 points of occupancy, 5 % of goodput), which a real defect (a lost report stream, a wrong
link model, a broken queue rate) misses by far.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hbh.cli import main as hbh_main
from tests.paths import ROOT
from tests.switch import netns as N
from topo.file.schema import load_topology
from topo.netns.plumbing import clean, leftovers
from topo.run.runner import run_experiment

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ONE = ROOT / "topo/paper-1router.yaml"
FIVE = ROOT / "topo/paper-5router.yaml"


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def started(run_dir: Path) -> dict[str, Any] | None:
    """network.json once the run has a time 0 (switches, agents and hosts are up)."""
    try:
        net = json.loads((run_dir / "network.json").read_text())
    except (OSError, ValueError):
        return None
    return net if net.get("t0_monotonic_ns") else None


def test_one_router_meets_its_targets_and_agrees_with_the_simulator(one_router_netns: tuple[Path, Any]) -> None:
    """The run (tests/topo/conftest.py) is test_bmv2_diff's p4switch side too."""
    out, real = one_router_netns
    topo = load_topology(ONE)
    s = real.summary
    N.skip_unless_kept_up(s, "one router against the simulator")
    assert s["loss"]["total"] == 0, s["loss"]
    for name, b in s["buffers"].items():
        assert abs(b["mean"] - b["target"]) <= 0.05, (name, b)
    sim = run_experiment(topo, 20_000_000_000, seed=1, plots=False).summary
    for name, b in sim["buffers"].items():
        assert abs(s["buffers"][name]["mean"] - b["mean"]) <= 0.05, (name, b, s["buffers"][name])
    for name, f in sim["flows"].items():
        assert abs(s["flows"][name]["goodput_bps"] - f["goodput_bps"]) <= 0.05 * f["goodput_bps"], name
    for f in ("laws.csv", "flows.csv", "buffers.csv", "links.csv", "drops.csv", "summary.json", "network.json",
              "logs/R1.log"):
        assert (out / f).stat().st_size > 0, f
    pcaps = sorted((out / "pcap" / "R1").glob("*.pcap"))
    assert len(pcaps) == 4 and all(p.stat().st_size > 24 for p in pcaps)  # more than the pcap header
    assert not leftovers(json.loads((out / "network.json").read_text())["prefix"])


def test_five_routers_lose_nothing(tmp_path: Path) -> None:
    """15 s: the laws converge hop by hop from the receiver back, the last (R1's) at ~9 s in the
    simulator, so the run holds the whole start-up, where the buffers fill, and 6 s of steady state."""
    N.require_netns()
    s = run_experiment(load_topology(FIVE), 15_000_000_000, seed=1, out=tmp_path, plots=False,
                       backend="netns", pcap=False).summary
    assert s["loss"]["data_packets_received"] > 0
    N.skip_unless_kept_up(s, "five routers without loss")
    assert s["loss"]["total"] == 0, s["loss"]
    lat = s["control_latency"]  # measured by the agents: every switch changed rates on reports
    assert lat["samples"] > 0 and set(lat["switches"]) == {"R1", "R2", "R3", "R4", "R5"}
    assert all(v["samples"] > 0 and 0 < v["median_ms"] <= v["p99_ms"] for v in lat["switches"].values())
    cpu = s["realtime"]["cpu_cores"]  # the run's own processes: five switches forwarding, two hosts sending
    assert cpu["switches"] > 0 and cpu["hosts"] > 0 and cpu["runner"] > 0, cpu
    assert cpu["total"] >= cpu["switches"] + cpu["hosts"] and cpu["cpus"] == os.cpu_count(), cpu


def test_params_set_during_a_run_shows_in_its_csv(tmp_path: Path, capsys) -> None:
    """`hbh params set --run DIR --switch R1` changes R1's law toward H2 while the run goes on;
    laws.csv shows it in R1's next reports. The law keeps O within [O_min, O_max]: [15 %, 95 %]
    before, [5 %, 10 %] after -- disjoint, whatever the buffers' state when the change comes.
    A gain written relative to the link (0.25C) resolves at the run's link rate, and `show`
    says which values came from the file and which were changed live."""
    N.require_netns()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = run_experiment(load_topology(ONE), 8_000_000_000, out=tmp_path, plots=False,
                                           backend="netns", pcap=False)
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    prefix = None
    try:
        net = wait_for(lambda: started(tmp_path), 90, "the run to start")
        prefix = net["prefix"]
        t0 = net["t0_monotonic_ns"]
        wait_for(lambda: time.monotonic_ns() - t0 > 3e9, 20, "run time 3 s")  # 300 reports of R1 before
        call_at = (time.monotonic_ns() - t0) / 1e9
        assert hbh_main(["params", "set", "--run", str(tmp_path), "--switch", "R1", "--port", "2",
                         "--o-min", "5%", "--o-max", "10%", "--w-min", "0.125C"]) == 0
        set_at = (time.monotonic_ns() - t0) / 1e9
        capsys.readouterr()
        assert hbh_main(["params", "show", "--run", str(tmp_path), "--switch", "R1"]) == 0
        shown = capsys.readouterr().out
        row = next(line for line in shown.splitlines() if line.startswith("   2 (toward H2, link 2Mbps)"))
        assert "o_max live" in row and "w_min live" in row and "w_max file" in row and "r_max file" in row
        table_row = next(line for line in shown.splitlines() if line.split()[:1] == ["2"])
        assert "250kbps" in table_row  # 0.125 x 2 Mb/s
        t.join(60)
        assert not t.is_alive(), "the run did not end"
        if "error" in box:
            raise box["error"]
    finally:
        t.join(60)
        if prefix:
            clean(prefix)
    rows = [r for r in box["result"].recorder.laws if r.node == "R1" and r.toward == "H2"]
    before = [r.o for r in rows if r.t_ns / 1e9 < call_at]
    after = [r for r in rows if r.t_ns / 1e9 > set_at]  # set_at: when the command returned
    assert before and all(0.15 - 1e-6 <= o <= 0.95 + 1e-6 for o in before)
    assert after and all(r.o <= 0.10 + 1e-6 for r in after if r.t_ns / 1e9 > set_at + 0.1)
    first = min(r.t_ns for r in rows if r.o <= 0.10 + 1e-6) / 1e9
    assert call_at <= first  # never before the command
    # seen by the time the command returned, plus one report interval and scheduling slack
    if first > set_at + 0.010 + 0.2:
        N.skip_unless_kept_up(box["result"].summary, f"the change was seen {first - set_at:.3f} s after the command")
    assert first <= set_at + 0.010 + 0.2


def _default_sigint() -> None:
    """In the runner, before exec: Ctrl-C's default action. A shell starting a command in the
    background without job control (``make test &`` in a script) has it ignore SIGINT, children
    included, and Python then installs no KeyboardInterrupt handler: the runner would never see
    the test's SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_runner(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hbh", "run", str(ONE), "--backend", "netns", "--duration", "60s",
                             "--out", str(out), "--no-progress", "--no-plots"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_nothing_is_left_behind(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGTERM/SIGINT: the runner tears everything down itself. SIGKILL: its switches and hosts
    die with it, and `hbh clean` removes the namespaces, veths and control sockets it left."""
    N.require_netns()
    proc = _start_runner(tmp_path)
    prefix = None
    try:
        net = wait_for(lambda: started(tmp_path) or proc.poll() is not None, 90, "the run to start")
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        prefix = net["prefix"]
        found = leftovers(prefix)
        assert len(found.namespaces) == 2 and len(found.links) == 2 and len(found.pids) >= 3, found
        assert found.sockets == [f"/tmp/{prefix}-R1.ctl"], found
        time.sleep(1)
        os.kill(proc.pid, sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            log = tmp_path / "logs" / "agents.log"
            pytest.fail(f"the runner did not end within 30 s of {sig.name}; its stderr: "
                        f"{proc.communicate(timeout=10)[1][-2000:]!r}; its log (teardown steps that failed "
                        f"or took long): {log.read_text()[-3000:] if log.exists() else 'none'}")
        if sig == signal.SIGKILL:
            left = leftovers(prefix)
            assert left.namespaces and left.sockets  # not cleaned by anyone yet (a killed switch keeps its socket)
            assert hbh_main(["clean"]) == 0
        else:
            assert proc.returncode == 130
        wait_for(lambda: not leftovers(prefix), 10, "the processes to go")
        assert not leftovers(prefix)
        assert not any(n.startswith(prefix) for n in os.listdir("/sys/class/net"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if prefix:
            clean(prefix)


def test_capacity_drop_runs_in_netns_and_the_hop_behind_reacts(tmp_path: Path) -> None:
    """A timed link_rate event changes p4switch's wire model through its control socket."""
    N.require_netns()
    import dataclasses

    topo = load_topology(ROOT / "topo/capacity-drop.yaml")
    (ev,) = topo.events
    topo.events = [dataclasses.replace(ev, at_ns=12_000_000_000)]
    s = run_experiment(topo, 16_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns", pcap=False).summary
    N.skip_unless_kept_up(s, "capacity drop")
    assert s["loss"]["total"] == 0, s["loss"]
    (reaction,) = s["events"]
    assert reaction["regulator"] == "R2" and reaction["buffer"] == "R3<-R2", reaction
    assert reaction["reaction_intervals"] is not None, reaction
    rates = {(r["from"], r["to"]): r for r in _csv(tmp_path / "links.csv") if float(r["t_s"]) >= 13.0}
    assert int(rates[("R3", "R4")]["rate_bps"]) == 1_000_000


def test_report_loss_runs_in_netns_without_data_loss(tmp_path: Path) -> None:
    N.require_netns()

    topo = load_topology(ONE)
    topo.options = dataclasses.replace(topo.options, report_loss=0.10)
    s = run_experiment(topo, 12_000_000_000, seed=3, out=tmp_path, plots=False, backend="netns", pcap=False).summary
    assert s["reports_lost_on_links"] > 0
    N.skip_unless_kept_up(s, "report loss without data loss")
    assert s["loss"]["total"] == 0, s["loss"]
    assert s["reports_lost_on_links"] > 0


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open() as f:
        return list(csv.DictReader(f))


def test_end_to_end_run_in_netns_records_the_bottleneck_fifo(tmp_path: Path) -> None:
    """CVIHIS flows over router FIFOs: their occupancy is read through p4switch's control socket.
    4 s (was 10): the FIFO holds packets from 0.5 s on (0.4 s in the simulator) and every flow
    delivers from its start; nothing here reads a window of the run."""
    N.require_netns()
    s = run_experiment(load_topology(ROOT / "topo/cvihis-three-flows.yaml"), 4_000_000_000, seed=1, out=tmp_path,
                       plots=False, backend="netns", pcap=False).summary
    neck = s["buffers"]["R2<-R1"]
    assert neck["target"] is None and neck["max"] > 0, neck
    assert all(f["received"] > 0 for f in s["flows"].values())
