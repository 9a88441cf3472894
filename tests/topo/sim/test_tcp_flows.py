"""TCP flows (``control: tcp``): the loader's checks, the simulator's model (and its refusal of
bbr), and (root) kernel runs through namespaces and p4switch (docs/howto/netns.md, docs/howto/tcp.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hbh.cli import main as hbh_main
from tests.paths import ROOT
from tests.switch import netns as N
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.file import schema
from topo.file.schema import load_topology, load_topology_text
from topo.net.model import TCP_RECORD_BYTES
from topo.netns import tcpflow
from topo.netns.keepup import verdict
from topo.run.runner import run_experiment
from topo.sim.network import SimNetwork, SimUnsupported

TCP_FILE = ROOT / "topo/tcp-1router.yaml"
ALINEA = "  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}"


def with_flow(flow: str) -> str:
    return BASE.replace(ALINEA, f"  - {flow}")


@pytest.fixture
def kernel_offers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The kernel's list, as the loader reads it: reno cubic bbr."""
    path = tmp_path / "tcp_available_congestion_control"
    path.write_text("reno cubic bbr\n")
    monkeypatch.setattr(schema, "AVAILABLE_CC", path)
    return path


def test_tcp_flow_resolves_with_defaults(kernel_offers: Path) -> None:
    topo = load_topology_text(with_flow("{src: H1, dst: H2, control: tcp}"), SOURCE)
    (f,) = topo.flows
    assert (f.control, f.cc, f.size_bytes, f.packet_size) == ("tcp", "cubic", None, TCP_RECORD_BYTES)
    assert f.path == ("H1", "R1", "R2", "H2")


def test_tcp_flow_cc_and_size(kernel_offers: Path) -> None:
    (f,) = load_topology_text(with_flow("{src: H1, dst: H2, control: tcp, cc: bbr, size: 10MB}"), SOURCE).flows
    assert (f.cc, f.size_bytes) == ("bbr", 10_000_000)
    (f,) = load_topology_text(with_flow("{src: H1, dst: H2, control: tcp, size: 1MiB}"), SOURCE).flows
    assert f.size_bytes == 1 << 20


def test_unknown_cc_is_refused_with_the_kernels_list(kernel_offers: Path) -> None:
    expect_error(with_flow("{src: H1, dst: H2, control: tcp, cc: vegas}"), "cc: vegas", "flows[0].cc",
                 "'vegas' is not offered by this kernel (available: reno cubic bbr; the simulator's TCP model "
                 "also has none, cvihis-rtm)")


def test_without_the_kernels_file_reno_and_cubic_are_accepted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(schema, "AVAILABLE_CC", tmp_path / "absent")
    assert schema.kernel_congestion_controls() == (("reno", "cubic"), False)
    expect_error(with_flow("{src: H1, dst: H2, control: tcp, cc: bbr}"), "cc: bbr", "flows[0].cc",
                 "(available: reno cubic;")


@pytest.mark.parametrize(("extra", "path", "what"), [
    ("rate: 1Mbps", "flows[0].rate", "a tcp flow has no rate"),
    ("r_max: 1Mbps", "flows[0].r_max", "a tcp flow has no r_max"),
    ("packet_size: 1000B", "flows[0].packet_size", "a tcp flow has no packet_size"),
    ("size: 0B", "flows[0].size", "a tcp flow's size must be > 0"),
    ("size: 1MBit", "flows[0].size", "unknown size unit"),
])
def test_tcp_flow_key_errors(kernel_offers: Path, extra: str, path: str, what: str) -> None:
    expect_error(with_flow(f"{{src: H1, dst: H2, control: tcp, {extra}}}"), "control: tcp", path, what)


def test_cc_and_size_belong_to_tcp_flows(kernel_offers: Path) -> None:
    expect_error(BASE.replace("r_max: 1.5Mbps}", "r_max: 1.5Mbps, cc: reno}"), "cc: reno", "flows[0].cc",
                 "only tcp flows have cc (this one is alinea)")


@pytest.mark.cpu_only
def test_the_simulator_refuses_bbr_before_the_run(kernel_offers: Path, capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    text = TCP_FILE.read_text().replace("cc: cubic", "cc: bbr")
    topo = load_topology_text(text, str(TCP_FILE))
    with pytest.raises(SimUnsupported, match=r"flows\[0\]\.cc: bbr \(flow t1\) runs in the netns backend only; "
                                             r"the simulator's TCP model has reno, cubic, none and cvihis-rtm"):
        SimNetwork(topo)
    bbr = tmp_path / "bbr.yaml"
    bbr.write_text(text)
    assert hbh_main(["run", str(bbr), "--duration", "1s", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"hbh run: {bbr}:") and "\n" not in err and "netns backend only" in err, err


def test_cc_none_is_the_simulators_and_the_netns_backend_refuses_it(kernel_offers: Path, tmp_path: Path) -> None:
    """No congestion control (the fabric's ``none``): the TCP model's reliability alone, which no kernel
    offers, so netns says so before any namespace exists."""
    topo = load_topology_text(with_flow("{src: H1, dst: H2, control: tcp, cc: none, size: 10kB}"), SOURCE)
    assert topo.flows[0].cc == "none"
    SimNetwork(topo)  # accepted by the simulator
    from topo.netns.network import NetnsNetwork
    from topo.netns.plumbing import NetnsError
    net = NetnsNetwork(topo, duration_ns=10**9, run_dir=tmp_path)
    with pytest.raises(NetnsError, match=r"cc none is the simulator's TCP model without congestion control; "
                                         r"no kernel offers it: use --backend sim"):
        net._refuse_unsupported()


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_the_simulator_runs_tcp_with_the_kernels_files(tmp_path: Path, cc: str) -> None:
    """The model's flow gives the same CSVs and summary block as a kernel flow, deterministically."""
    topo = load_topology_text(TCP_FILE.read_text().replace("cc: cubic", f"cc: {cc}"), str(TCP_FILE))
    s = run_experiment(topo, 8_000_000_000, seed=3, out=tmp_path / "a", plots=False).summary
    f = s["flows"]["t1"]
    assert 1.5e6 < f["goodput_bps"] <= 2e6 * TCP_RECORD_BYTES / 1514 * 1.02, f  # near the 2 Mb/s link's payload rate
    t = f["tcp"]
    assert t["cc"] == cc and t["errors"] == [] and t["retransmissions"] >= 1  # a 50-packet FIFO overflows
    assert t["rtt_ms"]["min"] >= 12 and t["rtt_ms"]["p50"] > t["rtt_ms"]["min"]  # 4 x 3 ms + queueing
    assert t["bytes_received"] > 0 and t["bytes_acked"] <= t["bytes_sent"]
    assert s["buffers"]["H2<-R1"]["mean"] > 0.2  # loss-based TCP keeps the bottleneck's queue busy
    rows = _csv(tmp_path / "a" / "tcp.csv")
    assert len(rows) >= 80 and {r["flow"] for r in rows} == {"t1"}
    # TCP_INFO's state in the model's terms: Open, Recovery or Loss, ssthresh unset until the first reduction
    assert {r["ca_state"] for r in rows} <= {"0", "3", "4"} and "3" in {r["ca_state"] for r in rows}
    first = next(i for i, r in enumerate(rows) if r["ca_state"] != "0")
    assert all(r["ssthresh_pkts"] for r in rows[first:])  # set by the first reduction on
    if cc == "reno":  # (cubic's HyStart may end slow start, setting ssthresh, before any loss)
        assert all(r["ssthresh_pkts"] == "" for r in rows[:first])
    seqs = [int(r["seq"]) for r in _csv(tmp_path / "a" / "packets_t1.csv")]
    assert seqs == list(range(len(seqs)))  # delivered in order, each once
    run_experiment(topo, 8_000_000_000, seed=3, out=tmp_path / "b", plots=False)
    for name in ("flows.csv", "tcp.csv", "packets_t1.csv", "laws.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_sized_tcp_flow_completes_in_the_simulator() -> None:
    topo = load_topology_text(TCP_FILE.read_text().replace("cc: cubic, start: 0s}", "cc: reno, start: 0s, size: 300kB}"),
                              str(TCP_FILE))
    t = run_experiment(topo, 6_000_000_000, seed=1, plots=False).summary["flows"]["t1"]["tcp"]
    assert t["bytes_received"] == 300_000 and t["bytes_sent"] == 300_000 and t["completed"], t
    assert 1.2 < t["completion_s"] < 5, t


@pytest.mark.cpu_only
@pytest.mark.parametrize("sack", [True, False])
def test_the_simulator_honours_the_sack_key(sack: bool) -> None:
    """The model negotiates SACK as the key says (the summary's ``sack``, TCP_INFO's in netns)."""
    text = TCP_FILE.read_text().replace("cc: cubic, start: 0s}", f"cc: reno, start: 0s, sack: {str(sack).lower()}}}")
    s = run_experiment(load_topology_text(text, str(TCP_FILE)), 6_000_000_000, seed=1, plots=False).summary
    t = s["flows"]["t1"]["tcp"]
    assert t["sack"] is sack and t["retransmissions"] >= 1 and t["errors"] == [], t
    assert t["bytes_received"] > 0 and t["bytes_acked"] <= t["bytes_sent"]


def test_sack_key(kernel_offers: Path) -> None:
    (f,) = load_topology_text(with_flow("{src: H1, dst: H2, control: tcp, sack: false}"), SOURCE).flows
    assert f.sack is False
    (f,) = load_topology_text(with_flow("{src: H1, dst: H2, control: tcp}"), SOURCE).flows
    assert f.sack is True
    expect_error(with_flow("{src: H1, dst: H2, control: tcp, sack: maybe}"), "sack: maybe", "flows[0].sack",
                 "sack is true or false")
    expect_error(BASE.replace("r_max: 1.5Mbps}", "r_max: 1.5Mbps, sack: false}"), "sack: false", "flows[0].sack",
                 "only tcp flows have sack")


def test_record_parser_splits_records() -> None:
    data = tcpflow.encode_record(0, 100, 5) + tcpflow.encode_record(1, TCP_RECORD_BYTES, 7)
    p = tcpflow.RecordParser()
    assert p.feed(data[:150], 10) == [(0, 5, 10)]
    assert p.feed(data[150:], 20) == [(1, 7, 20)]
    assert not p.buf


# ---- root: through namespaces and p4switch --------------------------------------------------------------
def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.netns
@pytest.mark.slow
def test_bulk_tcp_runs_through_p4switch(tmp_path: Path) -> None:
    N.require_netns()
    s = run_experiment(load_topology(TCP_FILE), 10_000_000_000, seed=1, out=tmp_path, plots=False,
                       backend="netns", pcap=False).summary
    f = s["flows"]["t1"]
    assert f["goodput_bps"] < 2e6, f  # below the bottleneck, whatever the machine
    N.skip_unless_kept_up(s, "bulk TCP through p4switch")
    assert 0.5e6 < f["goodput_bps"] < 2e6, f  # below the 2 Mb/s bottleneck (frames' bytes), well above nothing
    t = f["tcp"]
    assert t["cc"] == "cubic" and t["errors"] == [] and t["sack"] is True, t  # the kernel's default, as TCP_INFO says
    rt = s["realtime"]  # whether the run kept real time: one wake-up per 100 ms sampling period
    assert rt["wakeups"] >= 90 and rt["late_max_ms"] >= rt["late_p99_ms"] >= rt["late_p50_ms"] >= 0, rt
    assert isinstance(rt["kept_up"], bool)
    assert t["retransmissions"] is not None and t["rtt_ms"]["samples"] >= 50 and t["rtt_ms"]["min"] > 12, t
    assert f["owd_ms"]["p50"] > 0 and t["bytes_received"] > 0
    assert json.loads((tmp_path / "summary.json").read_text())["flows"]["t1"]["tcp"]["retransmissions"] is not None
    rows = _csv(tmp_path / "tcp.csv")
    assert len(rows) >= 90 and {r["flow"] for r in rows} == {"t1"}
    assert {r["ca_state"] for r in rows} <= {"0", "1", "2", "3", "4"}  # enum tcp_ca_state
    if t["retransmissions"]:  # a reduction set ssthresh (blank while Linux's is "infinite")
        assert any(r["ssthresh_pkts"] for r in rows)
    assert "dropped in its ring" in (tmp_path / "logs" / "H1.log").read_text()  # the sender's own device
    assert any(r["receive_rate_bps"] not in ("", "0") for r in _csv(tmp_path / "flows.csv"))


@pytest.mark.netns
@pytest.mark.slow
def test_sized_tcp_flow_completes(tmp_path: Path) -> None:
    N.require_netns()
    topo = load_topology_text(TCP_FILE.read_text().replace("cc: cubic, start: 0s}", "cc: reno, start: 0s, size: 300kB}"),
                              str(TCP_FILE))
    s = run_experiment(topo, 6_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns", pcap=False).summary
    t = s["flows"]["t1"]["tcp"]
    assert t["cc"] == "reno" and t["bytes_received"] == 300_000 and t["bytes_sent"] == 300_000, t
    # 300 kB at 2 Mb/s take 1.2 s; slow start and the FIFO add some
    assert t["completed"] and t["completion_s"] > 1.2, t
    if t["completion_s"] >= 5:
        N.skip_unless_kept_up(s, f"a sized TCP flow completed in {t['completion_s']} s")
    assert t["completion_s"] < 5, t


UPLINK_BOTTLENECK = """\
name: uplink-bottleneck
nodes:
  H1: {kind: host}
  R1: {kind: switch}
  H2: {kind: host}
links:
  - {ends: [H1, R1], rate: 4Mbps, delay: 20ms}
  - {ends: [R1, H2], rate: 40Mbps, delay: 1ms, buffer: 200}
flows:
  - {name: t1, src: H1, dst: H2, control: tcp, cc: cubic, start: 0s}
"""


@pytest.mark.netns
@pytest.mark.slow
def test_kernel_tcp_crosses_the_hosts_relay_at_its_links_rate_and_delay(tmp_path: Path) -> None:
    """H1's uplink, emulated by the engine's relay (engine/src/hosts/hostrelay.rs), is the bottleneck: the
    flow's goodput is that link's rate less the headers, its minimum RTT the links' delays and wire times."""
    N.require_netns()
    topo = load_topology_text(UPLINK_BOTTLENECK, "uplink.yaml")
    s = run_experiment(topo, 8_000_000_000, seed=1, out=tmp_path, plots=False, backend="netns", pcap=False).summary
    relays = s["realtime"]["host_relays"]
    assert set(relays) == {"H1", "H2"} and relays["H1"]["frames_sent"] > 0 and relays["H2"]["to_tun"] > 0, relays
    up, down = topo.link_between("H1", "R1"), topo.link_between("R1", "H2")
    frame = tcpflow.TUN_MTU + 14
    payload = tcpflow.TUN_MTU - 52  # IPv4 and TCP headers with timestamps
    ceiling = up.rate_bps * payload / frame
    goodput = s["flows"]["t1"]["goodput_bps"]
    base_ms = 2 * (up.delay_ns + down.delay_ns) / 1e6
    min_rtt = s["flows"]["t1"]["tcp"]["rtt_ms"]["min"]
    # however busy the machine, the relay never sends faster than its link nor sooner than its delay
    assert goodput < 1.05 * ceiling, (goodput, ceiling)
    assert base_ms <= min_rtt, (min_rtt, base_ms, relays)
    if (kept_up := verdict(s["realtime"])) != "yes":  # the machine, not the relay: no lower bound to hold it to
        pytest.skip(f"the run fell behind its real-time emulation ({kept_up}); it sent no faster than its link and no sooner than its delay")
    assert 0.8 * ceiling < goodput, (goodput, ceiling)  # a queue of 1000 frames never runs dry
    wire_ms = sum(frame * 8 / link.rate_bps * 1e3 for link in (up, down))
    # slack: 10 ms for R1's loop, plus how late the two relays handed any frame to their sockets (their own measure)
    slack_ms = 10 + relays["H1"]["late_max_ms"] + relays["H2"]["late_max_ms"]
    assert min_rtt < base_ms + wire_ms + slack_ms, (min_rtt, base_ms, relays)
