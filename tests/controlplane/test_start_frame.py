"""The frame a port's queue rate is set at when a flow starts (controlplane/frame_size.py, ``FrameSizeWindow`` with the
frame sizes expected through the port; controlplane/agent.py, ``SwitchAgentCore._queue_frame``): before the port has
sent, the smallest; while its law is at R_max, the bits of R_max it did not send go to the frames of flows it has not
seen (the smallest until it has sent a window's frames, then the topology's expected mean; never above what it sent),
so that the queue's packets/s never fall below the packets a flow that starts brings; once a law holds the port below
R_max, the frame of what it sent (the mean, while its drain downstream is no faster than its reads saw it send).
The frame of what a port sent (``FrameSizeWindow.sent_frame``, ``SwitchAgentCore._sent_frame``) is also what its
neighbour's report, read in packets, is turned into bits at: the drain and the buffer.

Two random topologies lost packets, unwarned, to the former start (tests/topo/random/cases/test_mix_change_line_cases.py):
a port that had sent nothing converted its law's b/s at the topology's expected mean frame, over flows not started
yet (start-frame-expected-fabric.yaml: 576 B frames at 824 B's packet rate), and a port that had sent a few large
frames of a 1 Mb/s flow converted at their size when a 100 Mb/s flow of small ones joined
(start-frame-shrink-merge.yaml)."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from controlplane.agent import RegulatedPort, SwitchAgentCore, SwitchPlan, rate_to_pps
from controlplane.frame_size import MIN_FRAMES, READ_PERIOD_NS, WINDOW_SAMPLES, FrameSizeWindow
from controlplane.params import LawParams
from controlplane.report import Report

sizes = st.integers(64, 9000)
rates = st.floats(1e5, 1e10)


def agent(rate_bps: float, expected: int, frame_sizes: tuple[int, ...]) -> SwitchAgentCore:
    law = LawParams(r_max=rate_bps, r_floor=min(LawParams().r_floor, rate_bps))
    c = SwitchAgentCore(SwitchPlan(name="S4", node_id=4, neighbours=((3, "S3"),),
                                   regulated=(RegulatedPort(3, law, expected, frame_sizes=frame_sizes),)))
    c.start()
    return c


def run(c: SwitchAgentCore, reads: list[list[int]], start_ns: int = 0) -> int:
    """The port sends each read period's frames; its counters are read after each; the queue rate then."""
    packets = nbytes = 0
    for i, frames in enumerate(reads):
        ports = c.counters_due(start_ns + i * READ_PERIOD_NS)
        packets, nbytes = packets + len(frames), nbytes + sum(frames)
        c.on_frame_counters([(p, packets, nbytes) for p in ports])
    return c.ports[(3, 0)].pps


@given(sizes, sizes, rates)
def test_a_port_that_has_sent_nothing_lets_the_smallest_frames_through_at_its_rate(small, large, rate) -> None:
    """Before its counters say anything, the queue's packets/s carry the law's rate in the smallest frame expected,
    whatever mean the topology expects over flows that may not have started."""
    assume(small <= large)
    c = agent(rate, (small + large) // 2, (small, large))
    assert c.ports[(3, 0)].pps == rate_to_pps(rate, small)


@given(st.lists(st.lists(sizes, max_size=60), min_size=2, max_size=10), sizes, rates)
def test_the_open_frame_never_sets_fewer_packets_than_the_port_sent(reads, smallest, rate) -> None:
    """Property: after each read, the rate's bits over the window's span at ``open_mean`` are no fewer packets than
    the port sent over it (to a byte of rounding), never a frame below the smallest expected nor above the mean."""
    reads = [[max(f, smallest) for f in frames] for frames in reads]
    window = FrameSizeWindow(9000, (smallest, 9000))
    packets = nbytes = 0
    samples: list[tuple[int, int, int]] = []  # the reads the window spans: the last WINDOW_SAMPLES + 1
    for i, frames in enumerate(reads):
        packets, nbytes = packets + len(frames), nbytes + sum(frames)
        now = (i + 1) * READ_PERIOD_NS
        window.update(packets, nbytes, now, rate)
        samples = (samples + [(now, packets, nbytes)])[-(WINDOW_SAMPLES + 1):]
        t0, p0, b0 = samples[0]
        allowed = rate * (now - t0) / 8e9
        if allowed >= nbytes - b0 + 1:  # under its rate: the packets it sent fit in the rate's bits
            assert allowed / (window.open_mean - 0.5) >= packets - p0
        assert smallest - 0.5 <= window.open_mean <= window.mean


@given(st.lists(st.tuples(sizes, st.integers(MIN_FRAMES, 200)), min_size=1, max_size=4), sizes)
def test_a_port_at_its_rate_reads_the_mean_of_what_it_sent(mix, smallest) -> None:
    """A port that sends all its rate allows (or more) has no unused bits: the open frame is the window's mean."""
    frames = [max(size, smallest) for size, n in mix for _ in range(n)]
    mean = sum(frames) / len(frames)
    rate = 8 * sum(frames) * 1e9 / READ_PERIOD_NS / 2  # half of what the port sends per read period
    window = FrameSizeWindow(9000, (smallest,))
    for i in range(WINDOW_SAMPLES + 2):
        window.update(i * len(frames), i * sum(frames), i * READ_PERIOD_NS, rate)
    assert abs(window.open_mean - mean) <= 0.5 and window.open_mean == window.mean


def test_a_flow_that_starts_before_the_one_the_topology_also_expects_is_sent_at_its_bits() -> None:
    """start-frame-expected-fabric.yaml's S4: 100 Mb/s toward S3, f1's 576 B frames and f2's 1448 B ones expected (824 B
    at their shares), f1 alone for its first 0.6 s. The queue's packets/s carry 100 Mb/s of f1's frames from the
    first (it sent 576 B ones at 824 B's packet rate, 70 Mb/s, while S2, whose counters had been read, filled S4's
    9-packet buffer at 100)."""
    c = agent(100e6, 824, (576, 1448))
    per_read = [576] * round(100e6 * READ_PERIOD_NS / 1e9 / 8 / 576)  # f1 at the link's rate
    pps = [c.ports[(3, 0)].pps] + [run(c, [per_read] * k) for k in range(1, WINDOW_SAMPLES + 2)]
    assert all(p * 8 * 576 >= 100e6 - 8 * 576 for p in pps), pps


def test_a_small_frame_flow_joining_a_port_that_sent_a_few_large_frames_is_sent_at_its_bits() -> None:
    """start-frame-shrink-merge.yaml's S5 toward S6: its law at its R_max, 101 Mb/s, f1's 576 B frames at 1 Mb/s for
    its first 0.15 s, then f2's 200 B ones at 100 Mb/s. The reads of f1 alone leave the queue rate for 200 B frames,
    not 576 B ones (which sent f2's at 35 Mb/s while S1 filled S5's 146-packet buffer at 100)."""
    c = agent(101e6, 201, (200, 576))
    f1 = [576] * round(1e6 * READ_PERIOD_NS / 1e9 / 8 / 576)
    pps = run(c, [f1] * (WINDOW_SAMPLES + 2))
    assert pps * 8 * 200 >= 100e6


def test_a_law_that_holds_the_port_back_sends_at_the_mean_the_port_sent() -> None:
    """A port that sent 1448 B frames at a tenth of its R_max, 200 B ones expected too (255 B the expected mean): at R_max
    its queue lets the other nine tenths through in the expected frames; once the neighbour's buffer makes the law cut, the cut is in 1448 B frames, what the port sends
    (the open frame there sent a backlog of large frames at several times the law's bits: stamped-mixed-backlog.yaml
    lost 181 at seed 3)."""
    c = agent(100e6, 255, (200, 1448))
    per_read = [1448] * round(10e6 * READ_PERIOD_NS / 1e9 / 8 / 1448)
    at_r_max = run(c, [per_read] * (WINDOW_SAMPLES + 2))
    assert at_r_max >= rate_to_pps(90e6, 255)  # the nine tenths it did not send fit in the expected frames
    pl = c.ports[(3, 0)]
    c.on_report((WINDOW_SAMPLES + 2) * READ_PERIOD_NS, 3, {},
                Report(node_id=3, port=1, occupancy=30, capacity=33, timestamp_us=0, seq=1, interval_us=1000))
    assert pl.law.rate < 100e6
    assert pl.pps == rate_to_pps(pl.law.rate, 1448)


# ---- the frame of the packets a port sent (FrameSizeWindow.sent_frame; SwitchAgentCore._sent_frame) ----------------


@given(sizes, st.lists(st.integers(0, 400), min_size=1, max_size=8), st.floats(0, 1e6))
def test_packets_of_one_frame_size_are_that_size_at_any_rate(size, counts, pps) -> None:
    """With one frame size the frame of the packets a port sent is that size, whatever their rate: every run whose
    flows have one size converts as before."""
    window = FrameSizeWindow(size, (size,))
    packets = 0
    for i, n in enumerate(counts):
        packets += n
        window.update(packets, packets * size, i * READ_PERIOD_NS, 8 * size * pps)
        assert window.sent_frame(pps) == size


@given(st.lists(st.lists(sizes, max_size=60), min_size=2, max_size=10), sizes, st.floats(1, 1e6))
def test_packets_beyond_what_the_reads_saw_are_frames_of_flows_not_seen(reads, smallest, pps) -> None:
    """Property: no more packets/s than the window's reads saw the port send are frames of its mean; beyond them the
    rest are frames of the flows not seen (the smallest until measured, then the expected), never above the mean."""
    reads = [[max(f, smallest) for f in frames] for frames in reads]
    window = FrameSizeWindow(9000, (smallest, 9000))
    packets = nbytes = 0
    for i, frames in enumerate(reads):
        packets, nbytes = packets + len(frames), nbytes + sum(frames)
        window.update(packets, nbytes, i * READ_PERIOD_NS)
    frame = window.sent_frame(pps)
    unit = window.expected if window.measured else smallest
    assert min(unit, window.mean) <= frame <= window.mean
    first = max(0, len(reads) - 1 - WINDOW_SAMPLES)
    seen = sum(len(f) for f in reads[first + 1:]) * 1e9 / ((len(reads) - 1 - first) * READ_PERIOD_NS)
    if pps <= seen:
        assert frame == window.mean


def test_a_drain_faster_than_the_port_was_seen_to_send_is_read_in_the_frames_of_flows_not_seen() -> None:
    """lagging-mean-brake-tree.yaml's S6 toward S3 (issue 46): its reads saw f3's 1500 B frames at ~20 Mb/s, its law
    at its 100 Mb/s R_max sets its queue at the open frame, and f2's 200 B frames (410 B the expected mean) join at
    ~30,000/s before the next read. S3 drains S6's packets at 17,000/s: read at the 1500 B mean that was 200 Mb/s,
    above the link, and S6's law did not cut while S3's buffer overflowed. The drain's packets beyond the ~1,700/s
    the reads saw are frames of flows not seen: never more bits than those."""
    law = LawParams(r_max=100e6, r_floor=2e6)
    c = SwitchAgentCore(SwitchPlan(name="S6", node_id=6, neighbours=((3, "S3"),),
                                   regulated=(RegulatedPort(3, law, 410, frame_sizes=(200, 1500)),)))
    traces: list = []
    c.on_trace = traces.append
    c.start()
    per_read = round(20e6 * READ_PERIOD_NS / 1e9 / 8 / 1500)
    run(c, [[1500] * per_read] * (WINDOW_SAMPLES + 1))
    assert c.frame_sizes[3].mean == 1500
    t0 = (WINDOW_SAMPLES + 1) * READ_PERIOD_NS
    seen_pps, pps, gap_us = per_read * 1e9 / READ_PERIOD_NS, 17_000, 600
    fwd = drained = 0
    for k in range(1, 400):
        fwd += round(pps * gap_us / 1e6)
        drained += round(pps * gap_us / 1e6)
        t_us = t0 // 1000 + k * gap_us
        c.on_report(t_us * 1000, 3, {"fwd_pkts": fwd, "deq_pkts": fwd},
                    Report(node_id=3, port=1, occupancy=2, capacity=79, timestamp_us=t_us, seq=k, interval_us=gap_us,
                           drained=drained, drained_ts_us=t_us))
    drain = traces[-1].drain_bps
    assert drain > 0
    assert drain <= 8 * (seen_pps * 1500 + (pps - seen_pps) * 410) * 1.05


def test_a_buffer_filled_by_frames_the_reads_have_not_seen_is_read_in_their_frames() -> None:
    """lagging-mean-brake-tree.yaml's S6 toward S3 at seed 1 (issue 46): its reads saw f3's 1500 B frames at
    ~1,700/s; f2's 200 B frames (410 B the expected mean) join at ~30,000/s before the next read and S3's 79-packet
    buffer (200 B its unit: 15,800 B) drains S6's packets at 5,000/s. The packets in the buffer are the newest S6 sent,
    at the rate it sent them: no more than the ~1,700/s the reads saw are 1500 B frames, the rest frames of flows not
    seen. Read in the frame of the drain's packets (~1,100 B in the run: the drain's window is nearer what the reads
    saw), 26 packets were 186 % of the buffer, and S6's law cut to its 2 Mb/s floor, a cut BMv2's queue stamped for
    ~80 ms while S3 starved."""
    law = LawParams(r_max=100e6, r_floor=2e6)
    c = SwitchAgentCore(SwitchPlan(name="S6", node_id=6, neighbours=((3, "S3"),),
                                   regulated=(RegulatedPort(3, law, 410, unit_bytes=200, frame_sizes=(200, 1500)),)))
    traces: list = []
    c.on_trace = traces.append
    c.start()
    per_read = round(20e6 * READ_PERIOD_NS / 1e9 / 8 / 1500)
    run(c, [[1500] * per_read] * (WINDOW_SAMPLES + 1))
    t0_us = (WINDOW_SAMPLES + 1) * READ_PERIOD_NS // 1000
    seen_pps, sent_pps, drain_pps, gap_us = per_read * 1e9 / READ_PERIOD_NS, 30_000, 5_000, 600
    sent = drained = 0
    for k in range(1, 60):
        sent += round(sent_pps * gap_us / 1e6)
        drained = sent - 1 if k < 50 else drained + round(drain_pps * gap_us / 1e6)  # starved, then filling
        t_us = t0_us + k * gap_us
        c.on_report(t_us * 1000, 3, {"fwd_pkts": sent, "deq_pkts": sent},
                    Report(node_id=3, port=1, occupancy=sent - drained, capacity=79, timestamp_us=t_us, seq=k,
                           interval_us=gap_us, drained=drained, drained_ts_us=t_us))
        if sent - drained >= 15:
            break
    held = (seen_pps * 1500 + (sent_pps - seen_pps) * 410) / sent_pps  # the frame of what S6 sent into the buffer
    occupancy = traces[-1].occupancy
    assert occupancy >= 15
    assert traces[-1].forecast <= occupancy * held / (79 * 200) + 1 / traces[-1].capacity < law.o_max
