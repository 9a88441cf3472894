"""The simulated host's receive: the engine's path against the Python path, frame by frame.

``SimHostNode.receive`` is the engine's (engine/src/hosts/hostrecv.rs): it accounts an ordinary data packet
of a flow with no end-to-end sink at the host (record, play-out buffer, the reporter's due time) and
hands every other frame to ``_receive_python``, which handles any frame. Two hosts built alike get the
same frames at the same times, one through ``receive`` and one through ``_receive_python`` alone;
after every frame their records, buffer, reporter, counters, recorded report rows and the frames they
sent must be the same, and the same error must come out of both.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.report import Report, encode
from hosts.datagram import FrameTemplate
from runtime.sched import VirtualScheduler
from topo.file.schema import load_topology_text
from topo.netns.host import _HostNet
from topo.sim.network import SimHostNode

# H2 has a small buffer (overflows) and a reporter; flow t (TFRC) and flow c (CVIHIS) have their sinks
# at H2 (Python's); flows a and back are the engine's. The sources' clocks are offset both ways (H1's
# flows start when its clock reads 0: topo/file/schema.py; the frames below still stamp times around it).
TOPOLOGY = """\
nodes:
  H1: {kind: host, clock_offset: -7ms}
  R1: {kind: switch}
  H2: {kind: host, receive_buffer: 4, playout: 2Mbps, clock_offset: 3ms}
links:
  - {ends: [H1, R1], rate: 10Mbps}
  - {ends: [R1, H2], rate: 10Mbps}
flows:
  - {name: a, src: H1, dst: H2, control: alinea, r_max: 1.5Mbps, start: 7ms}
  - {name: t, src: H1, dst: H2, control: tfrc, start: 7ms}
  - {name: back, src: H2, dst: H1, control: fixed, rate: 1Mbps, packet_size: 200B}
  - {name: c, src: H1, dst: H2, control: cvihis-blm, start: 7ms}
"""
TOPO = load_topology_text(TOPOLOGY, "t.yaml")
ENGINE_FLOWS = (1, 3)  # a and back: no end-to-end sink at H2


class Wire:
    """The host's link: keeps what the host sends, with the time."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.sent: list[tuple[int, bytes]] = []

    def send(self, _end: object, frame: bytes) -> int:
        self.sent.append((self.clock.now_ns(), bytes(frame)))
        return 0


class _Handle:
    def cancel(self) -> None:
        pass


class PythonClock:
    """A scheduler that is not the engine's (as netns's clock): the engine reads it through ``now_ns``.
    Timers are kept, never run (the same in both hosts)."""

    def __init__(self) -> None:
        self.t = 0

    def now_ns(self) -> int:
        return self.t

    def call_at(self, _t: int, _fn: Any, *_args: Any) -> _Handle:
        return _Handle()

    def advance(self, dt: int) -> None:
        self.t += dt


def advance(clock: Any, dt: int) -> None:
    if isinstance(clock, VirtualScheduler):
        clock.run_until(clock.now_ns() + dt)  # the sinks' timers run, in both hosts alike
    else:
        clock.advance(dt)


def host(engine_clock: bool) -> SimHostNode:
    clock: Any = VirtualScheduler() if engine_clock else PythonClock()
    h = SimHostNode(_HostNet(TOPO, 1, "H2", clock), TOPO.nodes["H2"])  # type: ignore[arg-type]
    h.link = Wire(clock)  # type: ignore[assignment]
    return h


def frame_of(step: tuple[Any, ...], now: int) -> bytes | None:
    """The frame a step sends at ``now`` (None: the step changes the reporter's interval)."""
    what = step[0]
    if what == "data":
        _, fid, kind, seq, jitter = step
        f = TOPO.flows[fid - 1]
        src = TOPO.nodes[f.src]
        t = FrameTemplate(src_mac=TOPO.mac(f.src), dst_mac=TOPO.mac("H2"), src_ip=TOPO.ip(f.src),
                          dst_ip=TOPO.ip(f.dst), flow=fid, size=f.packet_size, kind=kind)
        return t.frame(seq, now + src.clock_offset_ns + jitter)  # may be < 0: wraps, as a sender's would
    if what == "report":
        return encode(Report(node_id=3, port=1, occupancy=step[1], capacity=200, timestamp_us=now // 1000, seq=1))
    if what == "junk":
        return step[1]
    return None


def snapshot(h: SimHostNode) -> tuple[Any, ...]:
    records = [(fid, r.name, r.received, r.bytes, r.duplicates, r.reordered, r.highest, r.owd_sum_ns, r.lost,
                r.packets) for fid, r in h.records.items()]
    b, rep = h.buffer, h.reporter
    assert b is not None and rep is not None
    wire = h.link
    assert isinstance(wire, Wire)
    return (records, (b.occupancy, b.dropped, b.played, b.played_bytes, b.last_played_ns, b.next_drain_ns()),
            (rep.seq, rep.interval_us), dict(h.net.counts), list(wire.sent), list(h.net.recorder.laws),
            {fid: s.stats() for fid, s in h.e2e_sinks.items()})


def outcome(call: Any, frame: bytes) -> str | None:
    try:
        call(frame)
    except Exception as exc:  # the Python path's own errors (a send time that does not fit) must be the same
        return f"{type(exc).__name__}: {exc}"
    return None


STEPS = st.lists(st.tuples(
    st.integers(0, 3_000_000),
    st.one_of(
        st.tuples(st.just("data"), st.sampled_from([1, 1, 1, 2, 3, 4]), st.sampled_from([0, 0, 0, 0, 1, 2, 5, 6, 7]),
                  st.integers(0, 40), st.integers(-20_000_000, 20_000_000)),
        st.tuples(st.just("report"), st.integers(0, 200)),
        st.tuples(st.just("junk"), st.binary(max_size=80)),
        st.tuples(st.just("interval"), st.integers(1, 20_000)),
    )), max_size=60)


@settings(max_examples=150)
@given(STEPS, st.booleans())
def test_the_engines_receive_and_the_python_path_agree_after_every_frame(
        steps: list[tuple[int, tuple[Any, ...]]], engine_clock: bool) -> None:
    fast, slow = host(engine_clock), host(engine_clock)
    expected_in_engine = 0
    for dt, step in steps:
        advance(fast.sched, dt)
        advance(slow.sched, dt)
        now = fast.sched.now_ns()
        assert slow.sched.now_ns() == now
        frame = frame_of(step, now)
        if frame is None:
            for h in (fast, slow):
                assert h.reporter is not None
                h.reporter.interval_us = step[1]
            continue
        assert outcome(fast.receive, frame) == outcome(slow._receive_python, frame)
        assert snapshot(fast) == snapshot(slow)
        if step[0] == "data" and step[1] in ENGINE_FLOWS and step[2] == 0 \
                and now + TOPO.nodes[TOPO.flows[step[1] - 1].src].clock_offset_ns + step[4] >= 0:
            expected_in_engine += 1
    in_engine, to_python = fast.receive_counts()
    assert in_engine == expected_in_engine  # the engine took every data packet of its flows, and no other frame
    assert in_engine + to_python == sum(1 for _, s in steps if s[0] != "interval")
    assert slow.receive_counts() == (0, 0)


def test_an_unbound_receiver_hands_every_frame_to_python() -> None:
    calls: list[bytes] = []

    class Bare(SimHostNode):
        def __init__(self) -> None:  # no bind_receive
            pass

        def _receive_python(self, frame: bytes) -> None:
            calls.append(frame)

    bare = Bare()
    t = FrameTemplate(src_mac=1, dst_mac=2, src_ip=3, dst_ip=4, flow=1, size=100)
    bare.receive(t.frame(0, 0))
    assert calls == [t.frame(0, 0)] and bare.receive_counts() == (0, 1)


def test_a_data_frame_of_a_flow_not_in_the_topology_is_counted_in_both_paths() -> None:
    t = FrameTemplate(src_mac=TOPO.mac("H1"), dst_mac=TOPO.mac("H2"), src_ip=TOPO.ip("H1"), dst_ip=TOPO.ip("H2"),
                      flow=len(TOPO.flows) + 5, size=100)
    for engine_clock in (True, False):
        for h, call in ((fast := host(engine_clock), fast.receive), (slow := host(engine_clock), slow._receive_python)):
            call(t.frame(1, 0))
            assert h.net.counts["unknown_flow"] == 1 and not h.records


@pytest.mark.cpu_only
@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(0, 3_000_000), st.integers(0, 40), st.integers(-2_000_000, 2_000_000)),
                min_size=1, max_size=40), st.integers(0, 50_000_000))
def test_a_frame_taken_late_counts_as_it_would_have_when_it_arrived(
        steps: list[tuple[int, int, int]], lateness: int) -> None:
    """A netns host's frames reach its loop in batches, late (``HostRelay.take``) with their arrival
    times: received with ``at_ns``, each data packet is counted, played out and reported as a host
    that took it on arrival does (its record, buffer and report frames), whenever the loop gets to it."""
    on_time, late = host(False), host(False)
    advance(on_time.sched, 10_000_000)  # H1's clock (7 ms behind) stamps no time before 0
    arrivals = []
    for dt, seq, jitter in steps:
        advance(on_time.sched, dt)
        now = on_time.sched.now_ns()
        frame = frame_of(("data", 1, 0, seq, jitter), now)
        assert frame is not None
        on_time.receive(frame)
        arrivals.append((frame, now))
    end = on_time.sched.now_ns() + lateness
    advance(late.sched, end)
    for frame, at in arrivals:
        late.receive(frame, at)
    for h in (on_time, late):
        assert h.buffer is not None
        h.buffer.drain(end)
    sent = {h: [f for _, f in h.link.sent] for h in (on_time, late)}  # type: ignore[union-attr]
    assert sent[late] == sent[on_time] and snapshot(late)[:3] == snapshot(on_time)[:3]
    assert late.receive_counts() == on_time.receive_counts() == (len(steps), 0)
