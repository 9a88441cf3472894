"""The netns backend's command lines, names and error messages, without starting anything.

Why: the exact command lines for p4switch and BMv2 are the documented interface (a user
pastes them from network.json); the end-to-end runs are in test_netns_runs.py (root).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from hbh.cli import main as hbh_main
from p4switch.cli import _options as p4switch_options
from p4switch.cli import build_parser
from tests.paths import ROOT
from topo.netns import plumbing
from topo.netns.live import SHELL_ELECTION_ID, LiveError, shell_command, switch_info
from topo.netns.switches import SwitchSpec, bmv2_command, check_bmv2_tools, p4switch_command, switch_spin_us


def spec(**kw: object) -> SwitchSpec:
    base = dict(name="R1", device_id=2, interfaces=[(1, "hbh0a1b22p1"), (2, "hbh0a1b22p2")], grpc_port=50001,
                thrift_port=9091, log_file="/tmp/run/logs/R1.log", pcap_dir="/tmp/run/pcap/R1",
                bitrates={1: 2_000_000, 2: 3_000_000}, delays={1: 3_000_000, 2: 0})
    base.update(kw)
    return SwitchSpec(**base)  # type: ignore[arg-type]


def test_p4switch_command_is_the_documented_one() -> None:
    cmd = p4switch_command(spec(), python="python3")
    assert cmd == ["python3", "-m", "p4switch.cli", "-i", "1@hbh0a1b22p1", "-i", "2@hbh0a1b22p2",
                   "--device-id", "2", "--grpc-server-addr", "127.0.0.1:50001", "--thrift-port", "9091",
                   "--cpu-port", "255", "--no-p4", "--log-file", "/tmp/run/logs/R1.log", "--pcap", "/tmp/run/pcap/R1",
                   "--port-overhead", "0", "--port-min-frame", "0", "--port-bitrate", "1=2000000", "--port-bitrate", "2=3000000", "--port-delay", "1=3000000ns"]


def test_p4switch_accepts_what_the_backend_builds() -> None:
    """The p4switch CLI parses the backend's command line into the intended link models."""
    args = build_parser().parse_args(p4switch_command(spec(), python="x")[3:])
    opts = p4switch_options(args)
    assert opts.port_bitrates == {1: 2_000_000, 2: 3_000_000}
    assert opts.port_delays == {1: 3_000_000} and opts.port_delay_ns == 0
    assert opts.interfaces == [(1, "hbh0a1b22p1"), (2, "hbh0a1b22p2")] and opts.program is None
    assert opts.port_overhead_bytes == 0 and opts.port_min_frame_bytes == 0  # frame bytes, as the simulator


def test_bmv2_command_is_the_documented_one() -> None:
    assert bmv2_command(spec(pcap_dir=None)) == [
        "simple_switch_grpc", "--device-id", "2", "-i", "1@hbh0a1b22p1", "-i", "2@hbh0a1b22p2",
        "--thrift-port", "9091", "--log-file", "/tmp/run/logs/R1.log", "--log-flush", "--no-p4", "--",
        "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255"]
    assert "--pcap" in bmv2_command(spec())


@pytest.mark.parametrize("text, port, ns", [("3ms", None, 3_000_000), ("2=250us", 2, 250_000), ("1=7ns", 1, 7),
                                            ("0.5s", None, 500_000_000)])
def test_port_delay_option(text: str, port: int | None, ns: int) -> None:
    opts = p4switch_options(build_parser().parse_args(["--no-p4", "--port-delay", text]))
    assert (opts.port_delays.get(port) if port is not None else opts.port_delay_ns) == ns


@pytest.mark.parametrize("text", ["3parsecs", "x=3ms", "-1ms", "2=", "999=1ms"])
def test_bad_port_delay_is_one_line(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--no-p4", "--port-delay", text])
    assert exc.value.code == 2
    assert "--port-delay" in capsys.readouterr().err


def test_bmv2_tools_missing_is_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/sbin/ip" if name == "ip" else None)
    with pytest.raises(plumbing.NetnsError, match="p4c and simple_switch_grpc"):
        check_bmv2_tools()
    monkeypatch.setattr(plumbing.os, "geteuid", lambda: 0)
    code = hbh_main(["run", str(ROOT / "topo/paper-1router.yaml"), "--backend", "netns", "--target", "bmv2",
                     "--duration", "1s", "--out", "/nonexistent/never-written"])
    assert code == 2
    assert "simple_switch_grpc" in capsys.readouterr().err


def test_hbh_bmv2_picks_the_binary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """HBH_BMV2 names the simple_switch_grpc to run (e.g. BMv2's default build in its own prefix);
    unset, the one on PATH; the rest of the command line is the same either way."""
    monkeypatch.delenv("HBH_BMV2", raising=False)
    on_path = bmv2_command(spec())
    assert on_path[0] == "simple_switch_grpc"
    exe = tmp_path / "bin" / "simple_switch_grpc"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("HBH_BMV2", str(exe))
    chosen = bmv2_command(spec())
    assert chosen == [str(exe)] + on_path[1:]
    monkeypatch.setattr(shutil, "which", lambda name: name if name in ("p4c", str(exe)) else None)
    check_bmv2_tools()  # an executable HBH_BMV2 and p4c: nothing missing


@pytest.mark.parametrize("make", ["missing", "not-executable", "directory"])
def test_hbh_bmv2_not_executable_is_exit_2(make: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "simple_switch_grpc"
    if make == "not-executable":
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    elif make == "directory":
        path.mkdir()
    monkeypatch.setenv("HBH_BMV2", str(path))
    with pytest.raises(plumbing.NetnsError, match="HBH_BMV2=.*not an executable file"):
        check_bmv2_tools()
    monkeypatch.setattr(plumbing.os, "geteuid", lambda: 0)
    code = hbh_main(["run", str(ROOT / "topo/paper-1router.yaml"), "--backend", "netns", "--target", "bmv2",
                     "--duration", "1s", "--out", "/nonexistent/never-written"])
    assert code == 2
    err = capsys.readouterr().err
    assert "HBH_BMV2" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_not_root_is_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(plumbing.os, "geteuid", lambda: 1000)
    code = hbh_main(["run", str(ROOT / "topo/paper-1router.yaml"), "--backend", "netns", "--duration", "1s",
                     "--out", "/nonexistent/never-written"])
    err = capsys.readouterr().err
    assert code == 2 and "needs root" in err and "Traceback" not in err
    assert hbh_main(["clean"]) == 2


def test_target_without_netns_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = hbh_main(["run", str(ROOT / "topo/paper-1router.yaml"), "--target", "bmv2", "--duration", "1s"])
    assert code == 2 and "--backend netns" in capsys.readouterr().err


def test_names_carry_the_prefix_and_fit_linux() -> None:
    prefix = plumbing.new_prefix()
    assert plumbing.PREFIX_RE.fullmatch(prefix)
    name = plumbing.switch_ifname(prefix, 12, 34)
    assert name.startswith(prefix) and len(name) <= 15
    with pytest.raises(plumbing.NetnsError, match="longer than 15"):
        plumbing.switch_ifname(prefix, 12345, 678)


def write_run(tmp_path: Path) -> Path:
    net = {"switches": {"R1": {"grpc_addr": "127.0.0.1:50001", "device_id": 2, "thrift_port": 9091}}}
    (tmp_path / "network.json").write_text(json.dumps(net))
    return tmp_path


def test_switches_are_found_by_name_in_the_run(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    assert switch_info(run, "R1")["grpc_addr"] == "127.0.0.1:50001"
    with pytest.raises(LiveError, match="'R9': not a switch.*switches: R1"):
        switch_info(run, "R9")
    with pytest.raises(LiveError, match="no network.json"):
        switch_info(tmp_path / "nothing", "R1")


def test_shell_is_a_backup_unless_asked(tmp_path: Path) -> None:
    info = switch_info(write_run(tmp_path), "R1")
    cmd = shell_command(info, python="py")
    assert cmd == ["py", "-m", "p4runtime_sh", "--grpc-addr", "127.0.0.1:50001", "--device-id", "2",
                   "--election-id", "0,5"]
    from topo.netns.network import AGENT_ELECTION_ID

    assert AGENT_ELECTION_ID > SHELL_ELECTION_ID  # the shell is below the agent: it keeps the primary role
    assert shell_command(info, primary=True, python="py")[-1] == "1,0"


def test_params_run_errors_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path)
    assert hbh_main(["params", "show", "--run", str(run), "--switch", "R9"]) == 2
    assert "--switch 'R9'" in capsys.readouterr().err
    assert hbh_main(["params", "show", "--run", str(run)]) == 2
    assert "--run needs --switch" in capsys.readouterr().err
    assert hbh_main(["params", "set", "--grpc-addr", "127.0.0.1:1", "--switch", "R1", "--port", "1",
                     "--o-max", "50%"]) == 2
    assert "--switch is only used with --run" in capsys.readouterr().err


@pytest.mark.cpu_only
def test_host_process_refuses_a_switch_name(tmp_path: Path) -> None:
    import pickle
    import subprocess

    from topo.file.schema import load_topology
    from topo.netns.plumbing import MARKER_DIR, new_prefix

    topo_file = tmp_path / "t.pkl"
    topo_file.write_bytes(pickle.dumps(load_topology(ROOT / "topo/paper-1router.yaml")))
    # a prefix of its own, marked live while the host process runs: a netns run starting meanwhile
    # (another test worker) cleans up the processes of runs without a live marker, by prefix
    prefix = new_prefix()
    marker = MARKER_DIR / f"{prefix}.pid"
    with contextlib.suppress(OSError):  # not root: no netns run can clean it up either
        MARKER_DIR.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{os.getpid()}\n")
    try:
        proc = subprocess.run([sys.executable, "-m", "topo.netns.host", "--topology", str(topo_file), "--host", "R1",
                               "--duration-ns", "1", "--out", str(tmp_path / "o"), "--prefix", prefix],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        marker.unlink(missing_ok=True)
    assert proc.returncode == 2 and "not a host" in proc.stderr


def test_netem_command_for_bmv2_links() -> None:
    from topo.netns.network import netem_command

    assert netem_command("hbh0a1b22p1", 2_000_000, 3_000_000) == [
        "tc", "qdisc", "replace", "dev", "hbh0a1b22p1", "root", "netem", "delay", "3000us", "rate", "2000000bit",
        "limit", "10000"]


def test_link_control_and_report_loss_reach_the_p4switch_command() -> None:
    cmd = p4switch_command(spec(control_socket="/tmp/x-R1.ctl", link_loss={0x88B5: 0.1}, seed=1002), python="x")
    opts = p4switch_options(build_parser().parse_args(cmd[3:]))
    assert opts.control_socket == "/tmp/x-R1.ctl" and opts.link_loss == {0x88B5: 0.1} and opts.seed == 1002


@pytest.mark.parametrize("text", ["0x88B5", "0x88B5=1", "0x88B5=-0.1", "zz=0.1", "0x1FFFF=0.1"])
def test_bad_link_loss_is_one_line(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--no-p4", "--link-loss", text])
    assert exc.value.code == 2
    assert "--link-loss" in capsys.readouterr().err


def test_per_destination_classes_start_switches_with_their_priority_queues() -> None:
    """BMv2 takes --priority-queues as a target option (after --); p4switch as its own."""
    bmv2 = bmv2_command(spec(priority_queues=5))
    assert bmv2[bmv2.index("--"):][-2:] == ["--priority-queues", "5"]
    opts = p4switch_options(build_parser().parse_args(p4switch_command(spec(priority_queues=5), python="x")[3:]))
    assert opts.priority_queues == 5
    assert "--priority-queues" not in bmv2_command(spec()) + p4switch_command(spec())


def test_a_run_sharing_its_cores_starts_switches_that_never_spin() -> None:
    """``switch_spin_us``: p4switch's own spin where each of the run's processes has a core, none
    where they share; the choice reaches the switch's options, and BMv2 (which has no such option)
    is never given it."""
    default = p4switch_options(build_parser().parse_args(["--no-p4"])).spin_ns
    assert default > 0
    assert switch_spin_us(processes=4, cpus=2) == 0
    assert switch_spin_us(processes=4, cpus=4) * 1000 == default
    for spin_us in (0, 50):
        opts = p4switch_options(build_parser().parse_args(p4switch_command(spec(spin_us=spin_us), python="x")[3:]))
        assert opts.spin_ns == spin_us * 1000
        assert "--spin-us" not in bmv2_command(spec(spin_us=spin_us))
    assert "--spin-us" not in p4switch_command(spec())


@pytest.mark.parametrize("text", ["-1", "1001", "x"])
def test_bad_spin_is_one_line(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    from p4switch.cli import main as p4switch_main

    with pytest.raises(SystemExit) as exc:
        p4switch_main(["--no-p4", "--spin-us", text])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--spin-us" in err and "Traceback" not in err


def test_free_tcp_ports_are_never_handed_out_twice_in_one_process() -> None:
    from topo.netns.switches import free_tcp_port

    ports = [free_tcp_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)


def test_a_host_closes_when_its_loop_does_not_answer(capsys: pytest.CaptureFixture[str]) -> None:
    """A starved machine (a 16-host fabric on 2 cores, load 22) let a host's loop miss run_sync's
    5 s while the host closed: the results were written, but the error made the run fail. Closing
    now goes on, says so, and still closes the relay."""
    from topo.file.schema import load_topology
    from topo.netns.host import NetnsHost

    class Starved:
        closed = False

        def remove_reader(self, fd: int) -> bool:
            raise TimeoutError("RealtimeScheduler.run_sync: remove_reader did not complete within 5.0 s")

        def stop(self) -> None:
            raise TimeoutError("RealtimeScheduler.stop: loop thread did not stop within 5.0 s")

    class Relay:
        notify_fd, closed = 99, False

        def close(self) -> None:
            self.closed = True

    host = NetnsHost(load_topology(ROOT / "topo" / "paper-1router.yaml"), "H1", 1, "eth0")
    host.sched.stop()
    host.sched, host.relay = Starved(), Relay()  # type: ignore[assignment]
    host.close()
    assert host.relay.closed
    assert capsys.readouterr().err.count("closing without the loop's answer") == 2


def test_a_host_process_sends_nothing_after_the_run() -> None:
    """``ending_with_run``: every flow stops by the run's end, as the simulator's run ends there; a
    flow that stops earlier keeps its time, and nothing else of the topology changes."""
    import dataclasses

    from topo.file.schema import load_topology
    from topo.netns.host import ending_with_run

    topo = load_topology(ROOT / "topo/paper-1router.yaml")
    f = topo.flows[0]
    assert f.stop_ns is None
    topo.flows += [dataclasses.replace(f, name="late", stop_ns=30_000_000_000),
                   dataclasses.replace(f, name="early", stop_ns=5_000_000_000)]
    ended = ending_with_run(topo, 20_000_000_000)
    assert [g.stop_ns for g in ended.flows] == [20_000_000_000, 20_000_000_000, 5_000_000_000]
    assert [dataclasses.replace(g, stop_ns=None) for g in ended.flows] == \
        [dataclasses.replace(g, stop_ns=None) for g in topo.flows]
    assert (ended.ports, ended.law, ended.links) == (topo.ports, topo.law, topo.links)
    assert topo.flows[0].stop_ns is None  # the runner's own topology is not touched
