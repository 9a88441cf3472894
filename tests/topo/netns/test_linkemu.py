"""The link emulator (topo/netns/linkemu.py) against p4switch's own link model.

Root tests (marked ``netns``): two veth pairs of a run-like prefix, the emulator process
(``python -m topo.netns.linkemu``, started as the netns backend starts it) between them, frames sent in
on one side and their kernel receive timestamps (SO_TIMESTAMPNS) read on the other. The
reference is :class:`runtime.link.LinkModel` / :class:`~runtime.link.Transmitter`: a
saturated link's rate within 2 %, an isolated frame's one-way delay within 0.5 ms of the
model's wire time + delay. The numbers measured are printed (``pytest -s``); docs/howto/bmv2.md has
them.
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4switch.control import control_call
from runtime.link import Transmitter
from tests.paths import ROOT
from tests.wakeups import skip_if_the_machine_wakes_late
from topo.netns.linkemu import Direction, frame_bytes_model
from topo.netns.plumbing import Plumbing, clean, control_socket_path, emulator_ifname, new_prefix
from topo.netns.switches import LinkEmuProcess, LinkEmuSpec, linkemu_command

ETHERTYPE = 0x88B6  # IEEE local experimental (0x88B5 is the ALINEA report's)
FRAME = 1000  # bytes, Ethernet header included
SO_TIMESTAMPNS = 35
ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33


def test_command_line() -> None:
    spec = LinkEmuSpec(name="R1-R2", a="hbh0a1b21p2e", b="hbh0a1b22p1e", bitrate_bps=2_000_000, delay_ns=3_000_000,
                       both_ways=True, control_socket="/tmp/hbh0a1b2-link-R1-R2.ctl", log_file="x.log")
    assert linkemu_command(spec, python="py") == [
        "py", "-m", "topo.netns.linkemu", "--a", "hbh0a1b21p2e", "--b", "hbh0a1b22p1e", "--rate", "2000000",
        "--delay-ns", "3000000", "--both-ways", "--control-socket", "/tmp/hbh0a1b2-link-R1-R2.ctl"]
    spec.both_ways = False
    assert "--both-ways" not in linkemu_command(spec)


def test_emulator_ends_carry_the_prefix_and_fit_linux() -> None:
    from topo.netns.plumbing import NetnsError

    assert emulator_ifname("hbh0a1b212p34") == "hbh0a1b212p34e"
    with pytest.raises(NetnsError, match="longer than 15"):
        emulator_ifname("hbh0a1b212345p6")
    assert control_socket_path("hbh0a1b2", "R1") == "/tmp/hbh0a1b2-R1.ctl"


class _Plumbing:
    """What NetnsNetwork._make_links asks of the plumbing, recorded (no root needed)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def add_namespace(self, host: str) -> None:
        self.calls.append(("ns", host))

    def add_switch_link(self, a: str, b: str) -> None:
        self.calls.append(("pair", a, b))

    def add_host_link(self, end: str, ns: str, host_tmp: str, mac: str) -> None:
        self.calls.append(("host", end, ns, host_tmp))


def _network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str | None) -> Any:
    import topo.netns.network as netns
    from topo.file.schema import load_topology

    monkeypatch.setattr(netns, "netem_missing", lambda prefix: missing)
    net = netns.NetnsNetwork(load_topology(ROOT / "topo/capacity-drop.yaml"), duration_ns=1, run_dir=tmp_path,
                             target="bmv2")
    net.prefix = "hbh0a1b2"
    net.plumbing = _Plumbing()  # type: ignore[assignment]
    monkeypatch.setattr(net, "_start_emulators", lambda: None)
    net._make_links()
    return net


def test_without_netem_each_link_runs_through_an_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    net = _network(tmp_path, monkeypatch, "Error: Specified qdisc kind is unknown.")
    err = capsys.readouterr().err
    assert net.link_mode == "linkemu"
    assert err.count("links: ") == 1  # said once, at start
    assert ("links: tc netem unavailable (Error: Specified qdisc kind is unknown.); rate and delay emulated by 6 hbh "
            "link emulator processes") in err
    calls = net.plumbing.calls
    # H1 (index 1) - R1 (index 2, port 1): the switch's interface, its emulator end, the host's pair
    assert ("pair", "hbh0a1b22p1", "hbh0a1b22p1e") in calls
    assert ("host", "hbh0a1b21he", "hbh0a1b2-H1", "hbh0a1b21h") in calls
    # R1 - R2: each switch interface paired with its emulator end, no veth between the switches
    assert ("pair", "hbh0a1b22p2", "hbh0a1b22p2e") in calls and ("pair", "hbh0a1b23p1", "hbh0a1b23p1e") in calls
    specs = net.emulator_specs
    assert len(specs) == 6
    r = specs[("R1", "R2")]
    assert (r.a, r.b, r.bitrate_bps, r.delay_ns, r.both_ways) == ("hbh0a1b22p2e", "hbh0a1b23p1e", 2_000_000,
                                                                  3_000_000, True)
    assert r.control_socket == "/tmp/hbh0a1b2-link-R1-R2.ctl"
    h = specs[("H1", "R1")]
    assert (h.a, h.b, h.both_ways) == ("hbh0a1b22p1e", "hbh0a1b21he", False)  # the host paces its own uplink
    assert net._link_bytes[("R1", "R2")] == ("hbh0a1b23p1", "rx")  # counted where it left the emulator
    assert net._link_bytes[("R1", "H1")] == ("hbh0a1b21he", "tx")


def test_with_netem_links_are_plain_veths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    net = _network(tmp_path, monkeypatch, None)
    assert net.link_mode == "netem" and not net.emulator_specs
    assert "links: rate and delay by tc netem" in capsys.readouterr().err
    assert ("pair", "hbh0a1b22p2", "hbh0a1b23p1") in net.plumbing.calls


def test_a_link_rate_event_goes_to_the_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import topo.netns.network as netns

    net = _network(tmp_path, monkeypatch, "unknown")
    calls: list[tuple] = []
    monkeypatch.setattr(netns, "control_call", lambda path, op, **kw: calls.append((path, op, kw)))
    ev = next(e for e in net.topo.events if e.kind == "link_rate")
    net._set_link_rate(ev)
    assert calls == [("/tmp/hbh0a1b2-link-R3-R4.ctl", "set_bitrate", {"bps": round(ev.rate_bps)})]


def test_clean_removes_control_sockets_of_dead_runs_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A switch killed by SIGKILL leaves its /tmp/PREFIX-NAME.ctl; `hbh clean` and the next run's
    clean() remove it once the run is dead, and leave a live run's alone."""
    if os.geteuid() != 0:
        pytest.skip("needs root (the run markers are in /run/hbh)")
    from topo.netns import plumbing as netns_plumbing

    monkeypatch.setattr(netns_plumbing, "SOCKET_DIR", tmp_path)
    live = Plumbing(new_prefix())
    live.mark()
    dead = new_prefix()
    paths = {}
    socks = []
    try:
        for prefix, name in ((live.prefix, "R1"), (dead, "R1"), (dead, "link-R1-R2")):
            paths[(prefix, name)] = control_socket_path(prefix, name)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(paths[(prefix, name)])
            socks.append(s)
        found = netns_plumbing.leftovers()
        assert paths[(live.prefix, "R1")] not in found.sockets
        assert {paths[(dead, "R1")], paths[(dead, "link-R1-R2")]} <= set(found.sockets)
        assert "2 control sockets" in clean(dead).summary()
        assert not Path(paths[(dead, "R1")]).exists() and not Path(paths[(dead, "link-R1-R2")]).exists()
        assert Path(paths[(live.prefix, "R1")]).exists()
    finally:
        for s in socks:
            s.close()
        live.close()


# ---- measured, on veths (root) -------------------------------------------------------------------
@dataclass
class EmuLink:
    """sender -> [veth] -> emulator a ... emulator b -> [veth] -> receiver."""

    spec: LinkEmuSpec
    emu: LinkEmuProcess
    tx: socket.socket  # on the sender's interface
    rx: socket.socket  # on the receiver's interface (kernel receive timestamps)
    back_tx: socket.socket  # sender on the receiver's side (b -> a)
    back_rx: socket.socket


def _raw(ifname: str, receive: bool) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE) if receive else 0)
    s.bind((ifname, ETHERTYPE if receive else 0))
    if receive:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    return s


@pytest.fixture()
def emu_link(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmuLink]:
    if os.geteuid() != 0:
        pytest.skip("needs root (veth pairs, raw sockets)")
    rate, delay, both = request.param
    plumbing = Plumbing(new_prefix())
    plumbing.mark()  # a live run: another run's `hbh clean` leaves these alone
    pre = plumbing.prefix
    socks: list[socket.socket] = []
    emu = None
    try:
        ends = (f"{pre}1p1", f"{pre}2p1")
        for end in ends:
            plumbing.add_switch_link(end, emulator_ifname(end))
        spec = LinkEmuSpec(name="S-R", a=emulator_ifname(ends[0]), b=emulator_ifname(ends[1]), bitrate_bps=rate,
                           delay_ns=delay, both_ways=both, control_socket=control_socket_path(pre, "link-S-R"),
                           log_file=str(tmp_path / "linkemu.log"))
        emu = LinkEmuProcess(spec, ROOT)
        emu.wait_ready(time.monotonic() + 30)
        socks = [_raw(ends[0], False), _raw(ends[1], True), _raw(ends[1], False), _raw(ends[0], True)]
        yield EmuLink(spec, emu, *socks)
    finally:
        for s in socks:
            s.close()
        if emu is not None:
            emu.stop()
        plumbing.close()
        clean(pre)


def _frame(seq: int, size: int = FRAME) -> bytes:
    head = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + struct.pack("!HI", ETHERTYPE, seq)
    return head + bytes(size - len(head))


def _send_paced(sock: socket.socket, count: int, bps: float) -> list[int]:
    """``count`` frames at ``bps`` (frame bytes), in small bursts; their CLOCK_REALTIME send times."""
    gap_ns = FRAME * 8 * 1e9 / bps
    start = time.monotonic_ns()
    sent: list[int] = []
    deadline = time.monotonic() + 30
    while len(sent) < count and time.monotonic() < deadline:
        due = min(count, int((time.monotonic_ns() - start) / gap_ns) + 1)
        while len(sent) < due:
            sent.append(time.time_ns())
            sock.send(_frame(len(sent) - 1))
        time.sleep(0.001)
    return sent


def _receive(sock: socket.socket, count: int, timeout_s: float) -> dict[int, tuple[int, int]]:
    """seq -> (kernel receive time, CLOCK_REALTIME ns; frame length) for up to ``count`` frames."""
    got: dict[int, tuple[int, int]] = {}
    deadline = time.monotonic() + timeout_s
    for _ in range(count * 2 + 10):
        left = deadline - time.monotonic()
        if left <= 0 or len(got) >= count:
            break
        sock.settimeout(left)
        try:
            data, anc, _flags, _addr = sock.recvmsg(65536, 64)
        except TimeoutError:
            break
        stamp = next((struct.unpack("qq", d[:16]) for lvl, typ, d in anc
                      if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS), None)
        if stamp is None or len(data) < 18 or struct.unpack("!H", data[12:14])[0] != ETHERTYPE:
            continue
        got[struct.unpack("!I", data[14:18])[0]] = (stamp[0] * 1_000_000_000 + stamp[1], len(data))
    return got


def _measure_rate(link: EmuLink, bps: int, count: int) -> float:
    """Measured span of a saturated stream over the model's span (1.0 = exact)."""
    _send_paced(link.tx, count, bps * 1.5)
    got = _receive(link.rx, count, 30)
    assert len(got) == count, f"{count - len(got)} of {count} frames lost"
    times = [got[i][0] for i in range(count)]
    tx = Transmitter(frame_bytes_model(bps, 0))  # the reference: back to back on the model
    ends = [tx.transmit(0, got[i][1])[1] for i in range(count)]
    return (times[-1] - times[0]) / (ends[-1] - ends[0])


def _tap(ifname: str) -> socket.socket:
    """Every frame on ``ifname``, outgoing ones too (ETH_P_ALL), with kernel timestamps."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    return s


def _measure_delays(sock_tx: socket.socket, sock_rx: socket.socket, count: int, gap_s: float) -> list[int]:
    """One-way delays (ns) of ``count`` isolated frames, from the kernel's time of each frame
    leaving the sender's interface (a tap on it), not the test's clock before ``send``: the
    test process may be preempted between the two on a busy machine, which the emulator is
    not to blame for."""
    owd = []
    with _tap(sock_tx.getsockname()[0]) as tap:
        for i in range(count):
            sock_tx.send(_frame(i))
            sent = _receive(tap, 1, 2.0)
            got = _receive(sock_rx, 1, 2.0)
            assert i in sent, f"frame {i} not seen leaving its interface within 2 s"
            assert i in got, f"isolated frame {i} not received within 2 s"
            owd.append(got[i][0] - sent[i][0])
            time.sleep(gap_s)
    return owd


RATE_TOLERANCE = 0.02
DELAY_TOLERANCE_NS = 500_000


@pytest.mark.netns
@pytest.mark.parametrize("emu_link", [(2_000_000, 3_000_000, True), (20_000_000, 10_000_000, False)],
                         ids=["2Mbps-3ms", "20Mbps-10ms"], indirect=True)
def test_rate_and_delay_follow_the_link_model(emu_link: EmuLink) -> None:
    spec = emu_link.spec
    model = frame_bytes_model(spec.bitrate_bps, spec.delay_ns)
    expected = model.wire_time_ns(FRAME) + model.delay_ns
    _measure_delays(emu_link.tx, emu_link.rx, 10, 0.01)  # warm-up: the emulator learns its loop's lateness
    owd = _measure_delays(emu_link.tx, emu_link.rx, 40, 0.02 + expected / 1e9)  # 90 %: 4 may be late
    errors = sorted(abs(d - expected) for d in owd)
    print("ERRS", [round((d - expected)/1e3) for d in owd])
    ratio = _measure_rate(emu_link, spec.bitrate_bps, max(200, spec.bitrate_bps // (FRAME * 8)))  # ~1 s
    print(f"\nlinkemu {spec.bitrate_bps / 1e6:g} Mb/s {spec.delay_ns / 1e6:g} ms: rate error "
          f"{(1 / ratio - 1) * 100:+.3f} %, one-way delay - model ({expected / 1e6:.3f} ms): median "
          f"{statistics.median(owd) / 1e6 - expected / 1e6:+.3f} ms, max |error| {errors[-1] / 1e6:.3f} ms")
    within = (abs(1 / ratio - 1) < RATE_TOLERANCE and statistics.median(errors) < DELAY_TOLERANCE_NS
              and errors[len(errors) * 3 // 4 - 1] < DELAY_TOLERANCE_NS)
    if not within:  # the emulator's precision is the property: not measurable on a machine that is late itself
        skip_if_the_machine_wakes_late(DELAY_TOLERANCE_NS / 1000, f"rate ratio {ratio:.4f}, delay errors "
                                       f"median {statistics.median(errors) / 1e3:.0f} µs", 0.75)
    assert abs(1 / ratio - 1) < RATE_TOLERANCE
    assert statistics.median(errors) < DELAY_TOLERANCE_NS
    # three frames in four: on this two-vCPU VM, even idle, a frame now and then leaves 0.7-10 ms late
    # although the loop runs at SCHED_FIFO (isolated spikes, up to 7 of 40 frames in 1.5 s; the same
    # at the commit that introduced this bound): the machine's pauses, not the emulator's lateness
    assert errors[len(errors) * 3 // 4 - 1] < DELAY_TOLERANCE_NS
    stats = control_call(spec.control_socket, "stats")
    assert stats["a->b"]["dropped"] == 0 and stats["a->b"]["queued"] == 0
    threads = os.listdir(f"/proc/{emu_link.emu.proc.pid}/task")  # the delivery loop runs ahead of the rest
    assert any(os.sched_getscheduler(int(t)) == os.SCHED_FIFO for t in threads)
    if not spec.both_ways:  # b -> a is forwarded at once: the host paces its own uplink
        back = _measure_delays(emu_link.back_tx, emu_link.back_rx, 9, 0.01)
        assert statistics.median(back) < DELAY_TOLERANCE_NS
    else:
        back = _measure_delays(emu_link.back_tx, emu_link.back_rx, 9, 0.02 + expected / 1e9)
        assert abs(statistics.median(back) - expected) < DELAY_TOLERANCE_NS


@pytest.mark.netns
@pytest.mark.parametrize("emu_link", [(20_000_000, 2_000_000, True)], indirect=True)
def test_live_rate_change_through_the_control_socket(emu_link: EmuLink) -> None:
    path = emu_link.spec.control_socket
    assert control_call(path, "bitrate") == {"a->b": 20_000_000, "b->a": 20_000_000}
    control_call(path, "set_bitrate", bps=5_000_000)
    assert control_call(path, "bitrate") == {"a->b": 5_000_000, "b->a": 5_000_000}
    ratio = _measure_rate(emu_link, 5_000_000, 300)
    print(f"\nlinkemu after set_bitrate 20 -> 5 Mb/s: rate error {(1 / ratio - 1) * 100:+.3f} %")
    assert 1 / ratio < 1 + RATE_TOLERANCE  # never faster than the new rate (the old one was 4 times faster)
    if abs(1 / ratio - 1) >= RATE_TOLERANCE:
        skip_if_the_machine_wakes_late(DELAY_TOLERANCE_NS / 1000, f"rate ratio {ratio:.4f}", 0.75)
    assert abs(1 / ratio - 1) < RATE_TOLERANCE
    from p4switch.control import ControlError

    with pytest.raises(ControlError, match="bps must be an integer >= 0"):
        control_call(path, "set_bitrate", bps=-1)
    assert emu_link.emu.stop() == 0  # SIGTERM: a clean exit that removes its socket
    assert not Path(path).exists()


@pytest.mark.netns
def test_the_netem_probe_answers_and_leaves_nothing() -> None:
    """Where netem works it says None; elsewhere (this machine: no sch_netem) why not, in one line."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a probe veth pair)")
    from topo.netns.network import netem_missing

    prefix = new_prefix()
    try:
        missing = netem_missing(prefix)
        assert missing is None or (missing and "\n" not in missing)
        assert not any(n.startswith(prefix) for n in os.listdir("/sys/class/net"))
    finally:
        clean(prefix)


# ---- the backlog an emulator reports (no root: a Direction on stand-in ports) --------------------
class _Clock:
    """A scheduler's clock and timers, held by hand."""

    def __init__(self) -> None:
        self.now = 0
        self.timers: list[tuple[int, Any, tuple[Any, ...]]] = []

    def now_ns(self) -> int:
        return self.now

    def call_at(self, t: int, fn: Any, *args: Any) -> None:
        self.timers.append((t, fn, args))


class _Port:
    def __init__(self) -> None:
        self._null = open(os.devnull, "rb")  # noqa: SIM115 - closed by the test
        self.sent: list[bytes] = []

    def fileno(self) -> int:  # no receive timestamp on /dev/null: the arrival is the clock's now
        return self._null.fileno()

    def send(self, frame: bytes) -> None:
        self.sent.append(frame)


@given(st.lists(st.tuples(st.integers(0, 20_000_000), st.integers(64, 1500)), min_size=1, max_size=60),
       st.integers(0, 5_000_000))
def test_backlog_counts_the_frames_waiting_for_the_wire(arrivals: list[tuple[int, int]], delay: int) -> None:
    """Against a FIFO server computed apart: at each arrival, the frames whose serialization has not
    started (propagating ones and the one on the wire are not a queue)."""
    clock, into, out = _Clock(), _Port(), _Port()
    try:
        way = Direction(clock, into, out, Transmitter(frame_bytes_model(2_000_000, delay)))  # type: ignore[arg-type]
        t, starts, peak = 0, [], 0
        wire_free = 0
        for gap, size in arrivals:
            t += gap
            clock.now = t
            way.carry(1, bytes(size))
            start = max(t, wire_free)
            wire_free = start + -(-size * 8 * 1_000_000_000 // 2_000_000)
            starts.append(start)
            waiting = sum(1 for s in starts if s > t)
            peak = max(peak, waiting)
            assert way.backlog(t) == waiting
        assert way.peak_backlog == peak
        assert way.stats()["peak_backlog"] == peak
        clock.now = wire_free  # every frame serialized: nothing waits
        assert way.stats()["backlog"] == 0
    finally:
        into._null.close()
        out._null.close()
