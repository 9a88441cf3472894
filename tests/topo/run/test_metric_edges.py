"""The buffer and reaction metrics at their edges, on generated inputs (docs/reference/metrics.md).

Found by recomputing a user's runs from their CSVs (issue 46): a report exactly 3 points below its
target counted as outside the band and one 3 points above as inside (floating point), which moved
convergence times by up to 1.7 s; a capacity drop's hop reaction went missing when a TFRC flow was
listed before the ALINEA one; and a buffer whose flow had stopped before the steady window stood as
"did not settle", taking the run's convergence with it.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.agent import LawTrace
from topo.file.schema import load_topology_text
from topo.net.record import Recorder
from topo.run.runner import run_experiment
from topo.run.summary_buffers import BufferRows, buffer_rows, buffer_stats, convergence, in_band
from topo.run.summary_reaction import reaction

S = 1_000_000_000


def _row(t_ns: int, occupancy: int, capacity: int, o_max: float | None, node: str = "U", toward: str = "V",
         rate: float = 1e6) -> LawTrace:
    return LawTrace(t_ns, node, toward, occupancy, capacity, 0, rate, 0.15, 1e6, o_max=o_max)


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 1000), st.integers(1, 100), st.data())
def test_the_band_is_three_points_either_side_exactly(capacity: int, percent: int, data: st.DataObject) -> None:
    """A report of n packets of C against a p % target is within the band iff |n/C - p/100| <= 3/100,
    in exact arithmetic: the same on both sides of the target."""
    n = data.draw(st.integers(0, capacity))
    target = percent / 100
    exact = abs(Fraction(n, capacity) - Fraction(percent, 100)) <= Fraction(3, 100)
    assert in_band(n / capacity - target) == exact
    got = convergence([_row(S, n, capacity, target)], [target], 2 * S)
    assert (got is not None) == exact


@settings(max_examples=100, deadline=None)
@given(st.integers(3, 300), st.integers(10, 97))
def test_reports_three_points_below_and_above_converge_alike(capacity: int, percent: int) -> None:
    """Below or above by the same whole number of packets: the same convergence time."""
    k = (3 * capacity) // 100  # the most packets within 3 points
    target = percent / 100
    centre = round(target * capacity)
    if abs(Fraction(centre, capacity) - Fraction(percent, 100)) > Fraction(1, 10**9):
        return  # the target is not a whole number of packets here: no symmetric pair
    times = {}
    for sign in (-1, 1):
        n = centre + sign * k
        if not 0 <= n <= capacity:
            return
        rows = [_row(S, capacity, capacity, target), _row(2 * S, n, capacity, target)]
        times[sign] = convergence(rows, [target, target], 3 * S)
    assert times[-1] == times[1] == 2.0


MIXED = """
name: mixed
defaults: {link: {rate: 10Mbps, delay: 2ms, buffer: 100}}
nodes: {A: {kind: host}, B: {kind: host}, C: {kind: host}, R1: {kind: switch}, R2: {kind: switch},
        D: {kind: host}}
links:
  - {ends: [A, R1]}
  - {ends: [B, R1]}
  - {ends: [C, R1]}
  - {ends: [R1, R2], rate: 5Mbps}
  - {ends: [R2, D]}
flows:
FLOWS
events:
  - {at: 2s, link: [R1, R2], rate: 2Mbps}
"""


@settings(max_examples=40, deadline=None)
@given(st.permutations(["alinea", "tfrc", "ledbat"]), st.integers(0, 40))
def test_the_hop_reaction_is_the_regulated_hops_whatever_the_flows_order(controls: list[str], cut_at: int) -> None:
    """Three senders into one drop, one of them ALINEA: the hop that reacts is the ALINEA host's (the
    only one whose buffer at R1 a law regulates), in whatever order the file lists the flows."""
    hosts = ["A", "B", "C"]
    lines = "\n".join(f"  - {{name: f{i}, src: {h}, dst: D, control: {c}}}" for i, (h, c) in enumerate(zip(hosts, controls)))
    topo = load_topology_text(MIXED.replace("FLOWS", lines), "user.yaml")
    regulated = hosts[controls.index("alinea")]
    rec = Recorder()
    for h, c in zip(hosts, controls):
        for i in range(100):  # a report every 40 ms; the regulated host cuts by half at report cut_at
            t = i * 40_000_000
            rate = 5e6 if h != regulated or t <= 2 * S + cut_at * 1_000_000 else 2.5e6
            if c == "alinea":
                rec.laws.append(_row(t, 80, 100, 0.8, node=h, toward="R1", rate=rate))
            else:  # a lawless host keeps the reports as measurements: rate 0, no O_max
                rec.laws.append(_row(t, 10, 100, None, node=h, toward="R1", rate=0.0))
    (ev,) = topo.events
    got = reaction(topo, buffer_rows(topo, rec), ev, 4 * S)
    assert got["regulator"] == regulated and got["buffer"] == f"R1<-{regulated}"
    assert got["reaction_s"] is not None and 0 < got["reaction_s"] <= cut_at / 1000 + 0.04


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 999), min_size=1, max_size=30), st.integers(0, 100))
def test_a_buffer_nothing_reached_in_the_steady_window_is_idle_not_unsettled(before_ms: list[int],
                                                                              occupancy: int) -> None:
    """Reports only before the window (its flow stopped): the buffer is named idle with why, so the
    run's convergence is over the buffers that were measured, not "did not settle"."""
    topo = load_topology_text(MIXED.replace("FLOWS", "  - {name: f0, src: A, dst: D, control: alinea, stop: 1s}"),
                              "user.yaml")
    rows = [_row(t * 1_000_000, occupancy, 100, 0.8, node="A", toward="R1") for t in sorted(before_ms)]
    b = BufferRows("R1<-A", "R1", "A", "regulated", "R1->R2", rows, [0.8] * len(rows))
    got = buffer_stats(topo, b, 2 * S, 4 * S)
    assert got["cannot_reach"].startswith("idle")


SINK = """
name: sink
defaults: {link: {rate: 10Mbps, delay: 1ms, buffer: 100}}
nodes: {A: {kind: host}, B: {kind: host}, C: {kind: host}, R1: {kind: switch},
        S: {kind: host, receive_buffer: 150, playout: PLAYOUTMbps}}
links:
  - {ends: [A, R1]}
  - {ends: [B, R1]}
  - {ends: [C, R1]}
  - {ends: [R1, S], rate: 8Mbps}
flows:
  - {name: a, src: A, dst: S, control: alinea}
  - {name: b, src: B, dst: S, control: CONTROL, STOP}
  - {name: c, src: C, dst: S, control: fixed, rate: 500kbps, start: 0.5s}
"""


@settings(max_examples=6, deadline=None)
@given(st.integers(3, 6), st.sampled_from(["alinea", "fixed, rate: 3Mbps"]), st.integers(5, 35))
def test_the_total_goodput_is_over_one_window_and_never_above_the_playout(playout: int, control: str,
                                                                            stop_ds: int) -> None:
    """Flows into one playout, one stopping inside the run (measured over its lifetime): the total is
    what the application took over the run window, at most the playout rate; the sum of the flows'
    goodputs, each over its own window, summed above it (6.9 Mb/s into a 6 Mb/s playout)."""
    from topo.experiments.compare import run_metrics

    text = SINK.replace("PLAYOUT", str(playout)).replace("CONTROL", control).replace("STOP", f"stop: {stop_ds / 10}s")
    s = run_experiment(load_topology_text(text, "user.yaml"), 4 * S, 1, None, plots=False).summary
    total = run_metrics(s, {}, list(s["flows"]))["goodput_kbps"] * 1e3
    assert total <= playout * 1e6 * 1.005 + 8 * 1000 / 2  # one packet over the 2 s window
    assert total == s["goodput_total_bps"]


@settings(max_examples=6, deadline=None)
@given(st.integers(3, 6), st.sampled_from(["alinea", "fixed, rate: 3Mbps"]), st.integers(5, 35),
       st.sampled_from([0.8, 1.3, 2.0]))
def test_the_total_goodputs_invariant_holds_and_catches_a_total_off_by_a_fifth(playout: int, control: str,
                                                                              stop_ds: int, factor: float) -> None:
    """The run keeps the goodput_total invariant (issue 46); the same summary with its total scaled (the
    playout saturated: the counters' 100 ms samples around the 2 s window's ends pin it within a tenth),
    or set to the old sum of the flows' goodputs where that sum passes the playout, breaks it."""
    from topo.net.invariants import goodput_total

    text = SINK.replace("PLAYOUT", str(playout)).replace("CONTROL", control).replace("STOP", f"stop: {stop_ds / 10}s")
    topo = load_topology_text(text, "user.yaml")
    run = run_experiment(topo, 4 * S, 1, None, plots=False)
    s = run.summary
    assert [v for v in s["invariants"]["violations"] if v["name"] == "goodput_total"] == []
    assert goodput_total(topo, run.recorder, s | {"goodput_total_bps": round(factor * s["goodput_total_bps"])}, None)
    summed = sum(f["goodput_bps"] for f in s["flows"].values())
    if summed > playout * 1e6 + 2 * 8 * 1000 / 2:
        assert goodput_total(topo, run.recorder, s | {"goodput_total_bps": summed}, None)


IDLE = """
name: idle
defaults: {link: {rate: 10Mbps, delay: 1ms, buffer: 100}}
nodes: {A: {kind: host}, B: {kind: host}, R1: {kind: switch}, R2: {kind: switch},
        S: {kind: host, receive_buffer: 150, playout: 4Mbps}}
links:
  - {ends: [A, R1]}
  - {ends: [B, R2]}
  - {ends: [R2, R1]}
  - {ends: [R1, S], rate: 8Mbps}
flows:
  - {name: a, src: A, dst: S, control: CONTROL}
  - {name: b, src: B, dst: S, control: CONTROL, stop: STOPs}
"""


@settings(max_examples=4, deadline=None)
@given(st.sampled_from(["alinea", "tfrc"]), st.integers(2, 9))
def test_an_idle_buffer_says_so_where_its_mean_read_zero(control: str, stop_ds: int) -> None:
    """b stops before the steady window (2-4 s): its buffers at R2 and R1 carry nothing then, and only
    they are idle. Hop by hop they send no report (no report over the window), end to end their FIFOs
    (and those its feedback took back) are sampled empty with no packet of their flows arriving
    (a's feedback FIFO toward A, empty too, carried a's feedback: not idle); either way the summary keeps mean 0.0 and marks ``idle``, and
    ``hbh run`` prints idle, where it printed a mean of 0.0 % as if a law kept them empty."""
    from topo.run.runner import format_summary

    text = IDLE.replace("CONTROL", control).replace("STOP", str(stop_ds / 10))
    s = run_experiment(load_topology_text(text, "user.yaml"), 4 * S, 1, None, plots=False).summary
    idle = ("R2<-B", "R1<-R2") if control == "alinea" else ("R1<-R2", "R2<-R1", "B<-R2")  # TFRC: its feedback's too
    assert {n for n, b in s["buffers"].items() if "idle" in b} == set(idle)
    for name in idle:
        b = s["buffers"][name]
        assert b["mean"] == 0.0 and b["idle"]
        row = next(line for line in format_summary(s).splitlines() if line.startswith(name + " "))
        assert row.split()[2] == "idle" and "0.0%" not in row.split()[2:4]


SIZES = """
name: sizes
defaults: {link: {rate: 100Mbps, delay: 1ms, buffer: 100}}
nodes: {A: {kind: host}, B: {kind: host}, R1: {kind: switch}, R2: {kind: switch}, D: {kind: host}}
links:
  - {ends: [A, R1]}
  - {ends: [B, R1]}
  - {ends: [R1, R2], rate: 50Mbps}
  - {ends: [R2, D]}
flows:
  - {name: small, src: A, dst: D, control: fixed, rate: 8Mbps, packet_size: 200B}
  - {name: big, src: B, dst: D, control: fixed, rate: 6Mbps, packet_size: 1500B}
events:
  - {at: 2s, link: [R1, R2], rate: 10Mbps}
"""


@settings(max_examples=30, deadline=None)
@given(st.integers(5000, 6000), st.integers(300, 450), st.integers(0, 200), st.floats(0.45, 0.6))
def test_the_sources_reaction_counts_bits_not_packets(small_pps: int, big_pps: int, cut_ms: int, keep: float) -> None:
    """A steady flow of 200-byte packets beside one of 1500-byte packets that cuts its packet rate by
    half or so: in bits the sources cut by 10 % or more; counted in packets the cut was
    under 5 % (the small packets outnumber the big ones ten to one) and went unseen."""
    from topo.run.summary_reaction import source_reaction

    topo = load_topology_text(SIZES, "user.yaml")
    rec = Recorder()
    cut = 2 * S + cut_ms * 1_000_000
    small = [round(i * S / small_pps) for i in range(4 * small_pps)]
    big, t = [], 0
    while t < 4 * S:
        big.append(t)
        t += round(S / big_pps) if t < cut else round(S / (big_pps * keep))
    rec.packets["small"] = [(i, t, t + 1_000_000) for i, t in enumerate(small)]
    rec.packets["big"] = [(i, t, t + 1_000_000) for i, t in enumerate(big)]
    (ev,) = topo.events
    got = source_reaction(topo, rec, ev)
    assert got["source_reaction_s"] is not None
    assert cut_ms / 1000 <= got["source_reaction_s"] <= cut_ms / 1000 + got["source_reaction_window_s"] + 0.01


@given(st.one_of(st.none(), st.floats(0.0, 100.0)))
def test_an_events_line_names_the_way_back_in_the_reactions_unit(recovery_s: float | None) -> None:
    """``hbh run``'s event line: the reaction and the way back both in ms, or a sentence where the buffer never came
    back (it printed "after - s")."""
    from topo.run.runner import _event_line

    ev = {"at_s": 30.0, "link": "R3-R4", "rate_bps": 1e6, "regulator": "R2", "reaction_s": 0.02,
          "reaction_intervals": 2.0, "buffer": "R3<-R2", "max_occupancy_after": 0.83, "recovery_s": recovery_s}
    line = _event_line(ev)
    assert "- s" not in line and "cut its rate after 20.0 ms" in line
    if recovery_s is None:
        assert "not back within 3 points of its target by the run's end" in line
    else:
        assert f"back within 3 points after {1000 * recovery_s:.1f} ms" in line
