"""A flow's ``send_bps`` over the run window is its source's count there, not a count interpolated
between the 100 ms samples (docs/reference/metrics.md, `send_bps`; issue 46): the simulator samples
the flows' counters at the run window's start too when it is off the grid (an event at 2.05 s, half
of a 2.5 s run), and ends its run with a sample."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment

LINE = """
name: send-rate
defaults: {link: {rate: 10Mbps, delay: 1ms, buffer: 100}}
nodes: {H1: {kind: host}, H2: {kind: host}, S1: {kind: switch}, H3: {kind: host}}
links:
  - {ends: [H1, S1]}
  - {ends: [H2, S1]}
  - {ends: [S1, H3]}
flows:
  - {name: f, src: H1, dst: H3, control: fixed, rate: RATE, packet_size: 576B, start: 0s}
  - {name: a, src: H2, dst: H3, control: alinea, start: 0s}
"""


@settings(max_examples=5, deadline=None)
@given(st.integers(20, 30), st.one_of(st.none(), st.integers(1, 99)), st.sampled_from(["1Mbps", "3Mbps", "4.7Mbps"]))
def test_a_flows_send_rate_over_the_run_window_is_its_count_there(tenths: int, event_pct: int | None,
                                                                   rate: str) -> None:
    """A fixed-rate flow on a lossless line: the packets it sent by the window's start are those of its
    packet rows sent by then (every one arrived), and by the run's end its last flows.csv count."""
    duration_ns = tenths * 100_000_000 + 50_000_000  # off the grid: its half is too
    text = LINE.replace("RATE", rate)
    if event_pct is not None:  # a link-rate event in the run's second half, off the grid
        at = duration_ns // 2 + (duration_ns // 2) * event_pct // 100 + 7_000_000
        text += f"events:\n  - {{at: {at / 1e9}s, link: [H2, S1], rate: 8Mbps}}\n"
    run = run_experiment(load_topology_text(text, "user.yaml"), duration_ns, 1, None, plots=False)
    s, rec = run.summary["flows"]["f"], run.recorder
    assert s["window"] != "lifetime" and rec.tcp_flows == {}
    a, b = (round(x * 1e9) for x in s["window_s"])
    rows = rec.packets["f"]
    assert max(seq for seq, _, _ in rows) + 1 == len(rows)  # lossless: every packet sent before the end arrived
    final = [x.sent for x in rec.flows if x.flow == "f"][-1]
    # a packet sent at the window's start's very ns may be counted on either side of it
    before = {sum(1 for _, sent, _ in rows if sent < a), sum(1 for _, sent, _ in rows if sent <= a)}
    exact = [8 * 576 * (final - k) / ((b - a) / 1e9) for k in before]
    assert any(abs(s["send_bps"] - e) <= 0.5 + 1e-9 * e for e in exact), (s["send_bps"], exact)
