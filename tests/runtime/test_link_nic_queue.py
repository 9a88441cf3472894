"""The queue in front of an in-memory link's wire (engine/src/net/link.rs, ``Nic``): frames handed over
while the wire is busy wait in a FIFO and are serialized at the rate in force when they reach the
wire, so a rate change re-times what waits; the frame on the wire finishes as it started (issue 46,
tests/topo/random_cases/host-nic-rate-fall.yaml)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.link import InMemoryLink, LinkModel
from runtime.sched import VirtualScheduler
from tests.runtime.test_link import NS, Sink  # the timestamping receiver the link tests share

RAW = {"overhead_bytes": 0, "min_frame_bytes": 0}  # wire bytes = frame bytes, as the simulator's links


def frame(ident: int, nbytes: int) -> bytes:
    return ident.to_bytes(4, "big") + bytes(nbytes - 4)


def test_frames_waiting_when_the_rate_falls_leave_at_the_new_rate() -> None:
    """Ten 1000-byte frames at once on 8 Mb/s (1 ms each); at 2.5 ms the rate falls to 4 Mb/s: the
    frame on the wire (the third) ends at 3 ms as it started, the seven waiting take 2 ms each."""
    s = VirtualScheduler()
    host, far = Sink(s), Sink(s)
    link = InMemoryLink(s, host, far, model=LinkModel(bitrate_bps=8_000_000, **RAW))
    for i in range(10):
        link.send(host, frame(i, 1000))
    assert link.waiting(host) == (9, 9000)
    assert link.backlog_ns(host, 0) == 10_000_000
    s.call_at(2_500_000, link.set_bitrate, 4_000_000)
    s.run_until(2_500_000)
    assert link.waiting(host) == (7, 7000)
    s.run_until(2_500_001)
    assert link.backlog_ns(host, 2_500_000) == 500_000 + 7 * 2_000_000  # re-timed at the new rate
    s.run()
    ends = [t for t, _ in far.got]
    assert ends == [1_000_000, 2_000_000, 3_000_000] + [3_000_000 + 2_000_000 * k for k in range(1, 8)]
    assert [f[:4] for _, f in far.got] == [frame(i, 1000)[:4] for i in range(10)]
    assert link.waiting(host) == (0, 0)


def test_a_rise_speeds_the_waiting_frames_up_and_the_far_side_is_untouched() -> None:
    s = VirtualScheduler()
    host, far = Sink(s), Sink(s)
    link = InMemoryLink(s, host, far, model=LinkModel(bitrate_bps=1_000_000, delay_ns=1000, **RAW))
    for i in range(4):
        link.send(host, frame(i, 125))  # 1 ms each at 1 Mb/s
    s.call_at(500_000, link.set_bitrate, 10_000_000)  # 0.1 ms each
    s.run()
    assert [t for t, _ in far.got] == [1_001_000, 1_101_000, 1_201_000, 1_301_000]
    assert link.waiting(far) == (0, 0) and link.stats["b->a"].sent == 0


def test_without_a_rate_change_the_times_are_those_of_the_hand_over() -> None:
    """What waited keeps the exact ends (the sub-ns remainder carried) it had when timed at
    hand-over: the queue changes nothing while the rate stays (the shipped topologies' results)."""
    s = VirtualScheduler()
    host, far = Sink(s), Sink(s)
    rate = 3_000_001
    link = InMemoryLink(s, host, far, model=LinkModel(bitrate_bps=rate, delay_ns=7, **RAW))
    busy = [link.send(host, frame(i, 100 + i)) for i in range(20)]
    s.run()
    exact = Fraction(0)
    for (t, _), i, b in zip(far.got, range(20), busy, strict=True):
        exact += Fraction(8 * (100 + i) * NS, rate)
        assert t == -(-exact.numerator // exact.denominator) + 7
        assert b == t - 7  # send returns ns until everything handed over is serialized


# ---- the property ---------------------------------------------------------------------------------
RATES = st.sampled_from([100_000, 1_000_000, 5_000_000, 10_000_000, 50_000_000, 1_000_000_000])


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[tuple[int, int, bool]], list[tuple[int, int]], int, int, int]:
    """(sends: (time ns, bytes, lost), rate changes: (time ns, b/s), first rate, delay ns, end ns)."""
    n = draw(st.integers(1, 60))
    gaps = draw(
        st.lists(st.sampled_from([0, 0, 0, 8, 1_000, 50_000, 400_000, 3_000_000]), min_size=n, max_size=n)
    )
    sizes = draw(st.lists(st.integers(64, 1514), min_size=n, max_size=n))
    lost = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [False] * n
    times, t = [], 0
    for g in gaps:
        t += g
        times.append(t)
    # every wire time here is a multiple of 8 ns, and so is every send: a change at 4 mod 8 never falls
    # on a frame's start, where the rate it takes depends on the order of two events at one instant
    at = st.integers(0, t + 5_000_000).map(lambda c: c // 8 * 8 + 4)
    changes = sorted(draw(st.lists(st.tuples(at, RATES), max_size=6)))
    return (
        list(zip(times, sizes, lost, strict=True)),
        changes,
        draw(RATES),
        draw(st.sampled_from([0, 1, 10_000])),
        draw(st.integers(0, t + 5_000_000)),
    )


def allowed_bits(first: int, changes: list[tuple[int, int]], t0: int, t1: int) -> Fraction:
    """The integral of the link's rate over [t0, t1] (events at one instant: the last one stays)."""
    steps = [(0, first), *changes]
    bits = Fraction(0)
    for k, (at, rate) in enumerate(steps):
        end = steps[k + 1][0] if k + 1 < len(steps) else t1
        lo, hi = max(at, t0), min(end, t1)
        if hi > lo:
            bits += Fraction(rate * (hi - lo), NS)
    return bits


@settings(max_examples=300, deadline=None)
@given(schedules())
def test_a_host_link_never_carries_more_than_its_rate_and_a_rate_change_loses_no_frame(case) -> None:
    """Frames handed to a link at random times (a sender faster than its link), its rate changed at
    random times: over any window the bits whose serialization ends in it are at most the integral
    of the rate over it plus one frame, and one more per rate change inside it (a frame on the wire
    at a fall finishes at the old rate); at any moment every frame handed over is delivered, lost by
    the loss hook, or held (waiting, on the wire, or propagating), and at the end each frame not
    lost has arrived once, in order."""
    sends, changes, first, delay, stop = case
    s = VirtualScheduler()
    host, far = Sink(s), Sink(s)
    lose = {i for i, (_, _, lost) in enumerate(sends) if lost}
    link = InMemoryLink(
        s,
        host,
        far,
        model=LinkModel(bitrate_bps=first, delay_ns=delay, **RAW),
        loss=lambda f, _d: int.from_bytes(f[:4], "big") in lose,
    )
    for i, (t, nbytes, _) in enumerate(sends):
        s.call_at(t, link.send, host, frame(i, nbytes))
    for t, rate in changes:
        s.call_at(t, link.set_bitrate, rate)
    s.run_until(stop)
    st_ = link.stats["a->b"]
    waiting, waiting_bytes = link.waiting(host)
    handed = sum(1 for t, _, _ in sends if t <= stop)
    assert st_.sent == handed and st_.delivered == len(far.got)
    arrived = {int.from_bytes(f[:4], "big") for _, f in far.got}
    in_flight = [i for i in range(handed) if i not in lose and i not in arrived]
    assert waiting <= len(in_flight) + len([i for i in lose if i < handed])
    assert st_.sent - st_.delivered - st_.lost == len(in_flight)
    # the waiting frames are the last ones handed over, none of them delivered yet
    assert waiting_bytes == sum(sends[i][1] for i in range(handed - waiting, handed))
    assert not arrived & set(range(handed - waiting, handed))
    s.run()
    ids = [int.from_bytes(f[:4], "big") for _, f in far.got]
    assert ids == [i for i in range(len(sends)) if i not in lose]  # once each, in order
    assert link.waiting(host) == (0, 0) and st_.sent == st_.delivered + st_.lost == len(sends)
    # each delivered frame's end of serialization, and the bits ending in every window
    ends = [(t - delay, len(f) * 8) for t, f in far.got]
    peak = max([first] + [r for _, r in changes])
    before = [0]  # bits ending before each frame's end
    for _, b in ends:
        before.append(before[-1] + b)
    for i in range(len(ends)):
        for j in range(i, len(ends)):
            t0, t1 = ends[i][0], ends[j][0]
            carried = before[j + 1] - before[i]  # frames ending in [t0, t1]: the first is the +1
            inside = sum(1 for at, _ in changes if t0 - 1 <= at <= t1)
            slack = 1514 * 8 * inside + Fraction(2 * peak, NS)  # ends are rounded up to whole ns
            assert carried - ends[i][1] <= allowed_bits(first, changes, t0, t1) + slack, (i, j)


class Port:
    """A socket port's stand-in: what went out, and when."""

    def __init__(self, sched: VirtualScheduler) -> None:
        self.sched = sched
        self.sent: list[tuple[int, bytes]] = []

    def send(self, frame: bytes) -> None:
        self.sent.append((self.sched.now_ns(), frame))


@settings(max_examples=100, deadline=None)
@given(schedules())
def test_the_netns_python_uplink_times_its_frames_as_the_simulators_link(case) -> None:
    """topo/netns/host.py's HostUplink (the netns host's uplink on its Python loop) against the engine's
    link on one schedule of sends and rate changes: every frame leaves at the same time."""
    from topo.netns.host import HostUplink

    sends, changes, first, delay, _stop = case
    lose = {i for i, (_, _, lost) in enumerate(sends) if lost}
    out = {}
    for kind in ("sim", "netns"):
        s = VirtualScheduler()
        model = LinkModel(bitrate_bps=first, delay_ns=delay, **RAW)
        if kind == "sim":
            host, far = Sink(s), Sink(s)
            link = InMemoryLink(
                s, host, far, model=model, loss=lambda f, _d: int.from_bytes(f[:4], "big") in lose
            )
            send, got = (lambda f, link=link, host=host: link.send(host, f)), far.got
        else:
            port = Port(s)
            link = HostUplink(s, port, model)  # the scheduler stands in for the run's clock
            link.loss = lambda f: int.from_bytes(f[:4], "big") in lose
            send, got = (lambda f, link=link: link.send(None, f)), port.sent
        for i, (t, nbytes, _) in enumerate(sends):
            s.call_at(t, send, frame(i, nbytes))
        for t, rate in changes:
            s.call_at(t, link.set_bitrate, rate)
        s.run()
        out[kind] = got
    assert [f for _, f in out["sim"]] == [f for _, f in out["netns"]]
    assert out["sim"] == out["netns"]
