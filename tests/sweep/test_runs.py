"""Sweeps end to end on paper-1router (2 s runs): serial == Ray, resume after a kill, failures,
refusals before anything runs, and no Ray process left behind (also after Ctrl-C)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hbh.cli import main
from tests.wakeups import busy_thread_share
from topo.file.settings import SweepError
from topo.netns.switches import free_tcp_port
from topo.sweep.run import plan_sweep, run_sweep

ROOT = Path(__file__).resolve().parents[2]
TOPO = str(ROOT / "topo" / "paper-1router.yaml")


#: What a Ray that could not come up in time says (its raylet has 30 s to register, hard-coded in
#: ray/_private/node.py; a cluster's head likewise), through hbh sweep's one-line errors.
RAY_SLOW_START = ("timed out during startup", "cannot start a local Ray instance", "cannot join the Ray cluster")


def skip_if_ray_could_not_start_on_a_loaded_machine(message: str) -> None:
    """Skip when Ray failed to come up while the machine gave a busy thread less than 90 % of a core:
    Ray's own start-up deadline, not the sweep, failed then. On an idle machine it fails the test."""
    if any(m in message for m in RAY_SLOW_START):
        share = busy_thread_share()
        if share < 0.9:
            pytest.skip(f"Ray did not start in time ({message.strip().splitlines()[-1][:200]}) on a machine that "
                        f"gives a busy thread {100 * share:.0f} % of a core now")


def small_sweep(seeds: str = "1-2", duration: str = "2s"):
    return plan_sweep(TOPO, ["alinea.o_max=0.6,0.9"], None, seeds, duration)


def processes_under(path: str) -> list[int]:
    """Pids of live processes whose command line mentions ``path`` (this sweep's private Ray)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if path.encode() in cmdline:
                pids.append(int(entry.name))
    return pids


@pytest.fixture
def ray_root():
    """A short private temp root (Ray's socket paths must stay under 108 bytes)."""
    root = tempfile.mkdtemp(prefix="hbhr", dir="/tmp")
    yield Path(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_serial_and_ray_give_identical_runs_csv_and_ray_leaves_nothing(tmp_path, ray_root, capfd, caplog):
    serial = run_sweep(small_sweep(), tmp_path / "serial", serial=True, progress=False, plots=False)
    try:
        on_ray = run_sweep(small_sweep(), tmp_path / "ray", jobs=2, progress=False, plots=False,
                           ray_temp_root=ray_root)
    except SweepError as exc:
        skip_if_ray_could_not_start_on_a_loaded_machine(str(exc))
        raise
    assert serial.ran == on_ray.ran == 4 and not serial.failures and not on_ray.failures
    assert (tmp_path / "serial" / "runs.csv").read_text() == (tmp_path / "ray" / "runs.csv").read_text()
    assert processes_under(str(ray_root)) == []
    # Ray's token-authentication notice does not reach the user's terminal (nor any log handler)
    from topo.sweep.execute import RAY_TOKEN_NOTICE

    assert RAY_TOKEN_NOTICE not in capfd.readouterr().err
    assert not any(RAY_TOKEN_NOTICE in r.getMessage() for r in caplog.records)


def test_a_run_stored_by_other_code_runs_again_and_is_counted(tmp_path, capsys):
    import json

    first = run_sweep(small_sweep(), tmp_path, serial=True, progress=False, plots=False)
    assert (first.ran, first.skipped, first.stale) == (4, 0, 0)
    path = sorted((tmp_path / "runs").glob("*.json"))[0]
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "code": "made-elsewhere"}))
    again = run_sweep(small_sweep(), tmp_path, serial=True, progress=False, plots=False)
    assert (again.ran, again.skipped, again.stale) == (1, 3, 1)
    assert json.loads(path.read_text())["code"] == record["code"]


def test_outputs_one_row_per_run_and_a_table_per_point(tmp_path):
    result = run_sweep(small_sweep(), tmp_path, serial=True, progress=False, plots=True)
    lines = (tmp_path / "runs.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert len(lines) == 1 + 4
    for column in ("alinea.o_max", "control", "seed", "loss.total", "convergence_s", "flow.f1.goodput_bps",
                   "flow.f1.owd_p99_ms", "link.R1->H2.utilisation", "buffer.R1<-H1.mean"):
        assert column in header
    md = (tmp_path / "sweep.md").read_text()
    assert sum(1 for line in md.splitlines() if line.startswith(("| 0.6 |", "| 0.9 |"))) == 2
    assert (tmp_path / "fig_alinea.o_max.png").stat().st_size > 0
    assert all(f.exists() for f in result.files)


def test_a_killed_sweep_resumes_with_only_the_missing_runs(tmp_path):
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "hbh", "sweep", TOPO, "--set", "alinea.o_max=0.6,0.9", "--seeds", "1-4",
           "--duration", "3s", "--out", str(out), "--serial", "--no-progress", "--no-plots"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list((out / "runs").glob("*.json")) and proc.poll() is None:
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    assert 0 < len(before) < 8, "the sweep was not killed midway"
    from topo.sweep.code import code_digest

    made_by = {json.loads(p.read_text())["code"] for p in (out / "runs").glob("*.json")}
    if made_by != {code_digest()}:  # a record names the code that made it (topo/sweep/code.py)
        pytest.skip("the sources changed between the killed sweep's start and this process's: its runs are "
                    "rightly not reused (someone is editing this tree)")
    result = run_sweep(plan_sweep(TOPO, ["alinea.o_max=0.6,0.9"], None, "1-4", "3s"), out, serial=True,
                       progress=False, plots=False)
    assert (result.skipped, result.ran) == (len(before), 8 - len(before))
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json") if p.name in before} == before
    assert len((out / "runs.csv").read_text().splitlines()) == 1 + 8
    assert not list((out / "runs").glob(".*.tmp"))  # no half-written file left


def test_a_failed_run_is_reported_and_does_not_stop_the_others(tmp_path, monkeypatch, capsys):
    import topo.run.runner

    real = topo.run.runner.run_experiment

    def flaky(topo_, duration_ns, seed, *args, **kwargs):
        if seed == 2:
            raise RuntimeError("simulated crash")
        return real(topo_, duration_ns, seed, *args, **kwargs)

    monkeypatch.setattr(topo.run.runner, "run_experiment", flaky)
    result = run_sweep(small_sweep(), tmp_path, serial=True, progress=False, plots=False)
    assert len(result.failures) == 2 and len(result.rows) == 2
    err = capsys.readouterr().err
    assert "alinea.o_max=0.6, seed 2: RuntimeError: simulated crash" in err
    assert "simulated crash" in (tmp_path / "sweep.md").read_text()
    monkeypatch.setattr(topo.run.runner, "run_experiment", real)
    again = run_sweep(small_sweep(), tmp_path, serial=True, progress=False, plots=False)
    assert (again.ran, again.skipped, again.failures) == (2, 2, [])
    assert not list((tmp_path / "failed").glob("*.json"))


@pytest.mark.parametrize(("args", "needle"), [
    (["--set", "alinea.o_mx=0.5"], "unknown parameter alinea.o_mx"),
    (["--set", "alinea.o_max=0.5,1.5"], "--set alinea.o_max=1.5: alinea[2]: o_max = 1.5"),
    (["--set", "link[R1-H2].rate=0bps"], "--set link[R1-H2].rate=0bps"),
    (["--controls", "alinea,cubic"], "unknown control 'cubic' (known: "),
    (["--seeds", "3-1"], "--seeds '3-1'"),
    (["--duration", "0s"], "--duration"),
])
def test_a_bad_sweep_is_refused_before_anything_runs(tmp_path, capsys, args, needle):
    out = tmp_path / "never"
    assert main(["sweep", TOPO, "--out", str(out), "--serial", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.slow
def test_ctrl_c_on_a_ray_sweep_leaves_no_ray_process(tmp_path, ray_root):
    out = tmp_path / "sweep"
    env = {**os.environ, "TMPDIR": str(ray_root)}
    cmd = [sys.executable, "-m", "hbh", "sweep", TOPO, "--set", "alinea.o_max=0.6,0.7,0.8,0.9", "--seeds", "1-4",
           "--duration", "3s", "--out", str(out), "--jobs", "2", "--no-progress", "--no-plots"]
    log = tmp_path / "stderr.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not list((out / "runs").glob("*.json")) and proc.poll() is None:
            time.sleep(0.05)
        if proc.poll() is not None:
            skip_if_ray_could_not_start_on_a_loaded_machine(log.read_text())
        assert proc.poll() is None, "the sweep ended before it could be interrupted"
        assert processes_under(str(ray_root)), "no Ray process found under the sweep's temp root"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while processes_under(str(ray_root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    leftover = processes_under(str(ray_root))
    for pid in leftover:  # clean up whatever the test found, then fail
        os.kill(pid, signal.SIGKILL)
    assert leftover == []


def test_an_address_nobody_answers_on_is_refused_in_seconds(tmp_path, capsys):
    with socket.socket() as s:  # a loopback port that is free, so nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["sweep", TOPO, "--out", str(tmp_path / "o"), "--address", f"127.0.0.1:{port}",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"--address 127.0.0.1:{port}: no Ray head answers there" in err and "Traceback" not in err


def start_ray_head(ray_root: Path, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """`ray start --head` on a free loopback port, answering; started again on another port (at most
    3 times) when it exits first, as a head does whose port another process took after the probe."""
    ray_bin = str(Path(sys.executable).parent / "ray")
    for _ in range(3):
        port = free_tcp_port()
        head = subprocess.Popen([ray_bin, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port",
                                 str(port), "--temp-dir", str(ray_root), "--num-cpus", "2",
                                 "--include-dashboard=false"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and head.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return head, port
            except OSError:
                time.sleep(0.5)
        if head.poll() is None:
            return head, port  # slow, not dead: the sweep's own error says what Ray did
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)  # what the head left behind, in its session
    raise AssertionError(f"ray start --head exited before answering, 3 times (last exit code {head.returncode})")


@pytest.mark.slow
def test_a_sweep_joins_a_running_cluster_and_leaves_it_running(tmp_path, ray_root):
    """`ray start --head` on loopback (Ray's single-machine mode, no token), then --address."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_AUTH_MODE": "disabled"}
    head, port = start_ray_head(ray_root, env)
    try:
        out = tmp_path / "joined"
        done = subprocess.run([sys.executable, "-m", "hbh", "sweep", TOPO, "--set", "alinea.o_max=0.6,0.9",
                               "--seeds", "1-2", "--duration", "2s", "--out", str(out), "--address",
                               f"127.0.0.1:{port}", "--no-progress", "--no-plots"], env=env, timeout=300,
                              capture_output=True, text=True)
        if done.returncode != 0:
            skip_if_ray_could_not_start_on_a_loaded_machine(done.stderr)
        assert done.returncode == 0, done.stderr[-2000:]
        assert head.poll() is None  # a joined cluster is not stopped by the sweep
        run_sweep(small_sweep(), tmp_path / "serial", serial=True, progress=False, plots=False)
        assert (out / "runs.csv").read_text() == (tmp_path / "serial" / "runs.csv").read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while processes_under(str(ray_root)) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in processes_under(str(ray_root)):
            os.kill(pid, signal.SIGKILL)
