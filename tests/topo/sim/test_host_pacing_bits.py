"""A host's paced sender sends its law's bits, whatever its flows' frame sizes (docs/background/alinea.md, "Bits,
not packets"): in a run, the bits a host of 500- and 1500-byte ALINEA flows hands its NIC per second
are the integral of its law's rate (laws.csv's rows) over the same time. Spaced as its largest frame,
it sent two thirds of them. The topology is written from docs/reference/topologies.md, as a user would."""

from __future__ import annotations

from topo.file.schema import load_topology_text
from topo.net.record import FlowSample, LawRow
from topo.run.runner import run_experiment

S = 1_000_000_000

#: One host, two ALINEA flows of 500 and 1500 bytes to two sinks behind R1; R1's links to the sinks
#: are slower than the host's, so its law regulates (the rate moves with R1's buffer).
ONE_HOST_TWO_SIZES = """\
defaults:
  link: {rate: 4Mbps, delay: 2ms, buffer: 100}
  alinea: {o_max: 70%}
nodes:
  H1: {kind: host}
  R1: {kind: switch}
  D1: {kind: host}
  D2: {kind: host}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, D1], rate: 1Mbps}
  - {ends: [R1, D2], rate: 2Mbps}
flows:
  - {name: small, src: H1, dst: D1, control: alinea, packet_size: 500B}
  - {name: large, src: H1, dst: D2, control: alinea, packet_size: 1500B}
"""


def sent_bits(flows: list[FlowSample], t0_ns: int, t1_ns: int) -> int:
    """Bits of every flow handed to the NIC between the samples at t0 and t1 (flows.csv's sent_pkts)."""
    at = {(s.flow, s.t_ns): s for s in flows}
    names = {s.flow for s in flows}
    return sum(8 * at[(f, t1_ns)].packet_bytes * (at[(f, t1_ns)].sent - at[(f, t0_ns)].sent) for f in names)


def law_integral(rows: list[LawRow], t0_ns: int, t1_ns: int) -> tuple[float, float]:
    """The law's rate (a step: each report's rate holds until the next) integrated over [t0, t1] in
    bits, and the sum over the rate's changes inside of |change| / max(before, after)."""
    rows = sorted(rows, key=lambda r: r.t_ns)
    before = [r for r in rows if r.t_ns <= t0_ns]
    assert before, "no report before the window"
    rate, t, bits, moves = before[-1].rate_bps, t0_ns, 0.0, 0.0
    for r in rows:
        if t0_ns < r.t_ns < t1_ns:
            bits += rate * (r.t_ns - t) / S
            moves += abs(r.rate_bps - rate) / max(r.rate_bps, rate)
            rate, t = r.rate_bps, r.t_ns
    return bits + rate * (t1_ns - t) / S, moves


def test_a_host_of_two_frame_sizes_sends_its_laws_bits() -> None:
    """Tolerance, argued from the pacer (gap after a frame = its bits / the rate in force): while the
    rate holds, the time from one frame to the next carries exactly that frame's bits (to 1/2 ns a
    gap: negligible); a rate change inside a gap moves that gap's bits by at most L * |change| / max(before,
    after) (L: the largest frame); and the window's two ends cut a gap each (at most 2 L). So
    |sent - integral| <= L * (2 + sum of the relative changes), computed from the run itself. The
    bug this catches: 500-byte frames spaced as 1500-byte ones, alternating, carry (500 + 1500) /
    (2 x 1500) = 2/3 of the law's bits, a shortfall of a third, which the run checks lies outside
    that tolerance (the law's changes are small enough)."""
    t = load_topology_text(ONE_HOST_TWO_SIZES, "one-host-two-sizes.yaml")
    rec = run_experiment(t, 4 * S, seed=1, plots=False).recorder
    laws = [r for r in rec.laws if r.node == "H1" and r.toward == "R1"]
    t0, t1 = 1 * S, 4 * S
    expected, moves = law_integral(laws, t0, t1)
    bits = sent_bits(rec.flows, t0, t1)
    largest = 8 * 1500
    tolerance = largest * (2 + moves)
    assert tolerance < expected / 6, (tolerance, expected)  # the bug's shortfall, a third, stays outside
    assert abs(bits - expected) <= tolerance, (bits, expected, tolerance)
