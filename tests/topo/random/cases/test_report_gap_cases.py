"""A random topology that lost packets, unwarned, where a law ran at its packets' gap and not at its report
interval (topo/analysis/report_gap.py, issue 46). The file's first lines hold its run length and the problem
the judge reported when ``make fuzz-topo`` found it."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.helpers import capped_r_max
from tests.topo.randomcheck import case_seconds, judge, judge_case
from topo.analysis.check import law_loops
from topo.analysis.report_gap import sparse_reports
from topo.file.schema import load_topology_text

CASES = RANDOM_CASES
CASE = "report-gap-multicast.yaml"


def _case() -> tuple[str, float]:
    """The file's text, which ends with its alinea section (more items may be appended), and its run length."""
    text = (CASES / CASE).read_text()
    return text, case_seconds(text)


def _sparse(text: str) -> set[tuple[str, str]]:
    topo = load_topology_text(text, CASE)
    return set(sparse_reports(topo, law_loops(topo)))


def test_a_law_that_runs_at_its_packets_gap_is_warned() -> None:
    """Group m0 (1 Mb/s) crosses S3 -> S7, a 1 ms link whose derived report interval is 1.56 ms; S7 reports
    on arrivals, so once every 12 ms. A one-packet rise of S7's buffer cut S3's law to its floor for a gap,
    BMv2's queue stamped two packets 250 ms apart, S3's queue toward S7 froze for half a second, and S3's
    buffer from S1, whose group packets wait for their S7 copy, overflowed: 52 lost (seed 1), unwarned.
    Warned, on the law S3 -> S7."""
    text, seconds = _case()
    verdict = judge(text, seconds, all_alinea=True, source=CASE)
    assert verdict.problems == []
    assert any(w.startswith("law S3->S7") and "reports on arrivals" in w for w in verdict.warned), (
        verdict.warned
    )


def test_with_an_interval_its_reports_keep_the_law_is_not_warned_for_it() -> None:
    """The same file with S7's report interval toward S3 at the packets' gap (12 ms): the gains are derived for
    the loop the law runs (the run loses nothing), and the rule is silent."""
    text, _ = _case()
    assert ("S3", "S7") in _sparse(text)
    assert _sparse(text + "  - {node: S3, toward: S7, interval: 12ms}\n") == set()


def test_a_cut_that_the_buffers_above_absorb_is_not_warned() -> None:
    """A floor high enough that the cut stamps a short stall (r_floor 400 kb/s), or a buffer at S3 from S1
    with room for what S1 sends meanwhile: the rule is silent (both runs lose nothing)."""
    text, _ = _case()
    assert _sparse(text + "  - {node: S3, toward: S7, r_floor: 400kbps}\n") == set()
    roomy = text.replace("- {ends: [S1, S3], delay: 20ms}", "- {ends: [S1, S3], delay: 20ms, buffer: 300}")
    assert roomy != text
    assert _sparse(roomy) == set()


def test_on_a_shaper_a_cut_is_undone_and_not_warned() -> None:
    """On the shaper queue model a later rate applies to what is queued: no stamped stall to warn of."""
    text, _ = _case()
    shaper = text.replace("name: random-multicast", "name: random-multicast\noptions: {queue_model: shaper}")
    assert shaper != text
    assert _sparse(shaper) == set()


#: f0 (1 Mb/s law caps, a 500 kb/s exit) goes H1 -> S1 -> S3 -> S4 -> H2 by the switches' hash of its 5-tuple;
#: its tie-break (Flow.path) is S2. S3 -> S4 is a 1 ms link whose derived interval (1.56 ms) is far shorter than
#: the flow's packet gap (24 ms).
ECMP = """name: ecmp-report-gap
defaults:
  link: {rate: 100Mbps, delay: 20ms, buffer: 37}
nodes:
  S1: {kind: switch}
  S2: {kind: switch}
  S3: {kind: switch}
  S4: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, S2]}
  - {ends: [S1, S3]}
  - {ends: [S2, S4], delay: 1ms}
  - {ends: [S3, S4], delay: 1ms}
  - {ends: [S4, H2], rate: 500kbps}
flows:
  - {name: f9, src: H2, dst: H1, control: fixed, rate: 100kbps, packet_size: 1500B}
  - {name: f0, src: H1, dst: H2, control: alinea, start: 0s, packet_size: 1500B, r_max: 1Mbps}
options: {ecmp: true}
alinea:
  - {node: S1, r_max: 1Mbps}
  - {node: S2, r_max: 1Mbps}
  - {node: S3, r_max: 1Mbps}
"""


def test_under_ecmp_the_rule_reads_the_path_the_hash_gives() -> None:
    """The law that carries f0 is S3 -> S4, the hash's (topo/net/routes.py), as the loop analysis's laws
    (check.py's law_loops): it runs at f0's 24 ms gap, unstable there, and is named. Read on the tie-break,
    S3 -> S4 carried nothing (no gap, no rule) and S2 -> S4 is no law the analysis checks: nothing was named.
    (30 s of this file, seed 1: S4's buffer rises past its target at 6.58 s, S3's law cuts to 33 kb/s for a
    gap, and S4 drops 975 packets from 7 s; the laws-together model warns S3 -> S4 as well.)"""
    from topo.analysis.report_gap import arrivals_bps, forwards_bps
    from topo.net.routes import routed_paths

    topo = load_topology_text(ECMP, "ecmp-report-gap.yaml")
    assert topo.flows[1].path[2] == "S2" and routed_paths(topo)["f0"][2] == "S3"
    assert arrivals_bps(topo, "S3", "S4", 1e6) == forwards_bps(topo, "S3", "S4") == 500e3
    assert arrivals_bps(topo, "S2", "S4", 1e6) == 0.0
    assert _sparse(ECMP) == {("S3", "S4")}


def test_with_the_group_counted_once_in_r_max_the_law_is_not_warned() -> None:
    """The file without its alinea section: the loader counts m0 once in each law's R_max (S3 -> S7: 1 Mb/s,
    not 2, and its margin, topo/analysis/derive.py), S7 forwards all S3 may send it, its
    buffer never holds a backlog, and the rule is silent (the run, seed 1, loses nothing)."""
    text, _ = _case()
    plain = text[: text.index("alinea:\n")]
    topo = load_topology_text(plain, CASE)
    m0_r_max = next(f.r_max_bps for f in topo.flows if f.group == "m0")
    assert topo.law[("S3", "S7")].r_max == capped_r_max(topo, "S3", "S7", m0_r_max)
    assert _sparse(plain) == set()


def test_a_law_at_its_packets_gap_over_a_backlog_is_warned_for_its_own_buffer() -> None:
    """One 1448 B flow H1 -> S1 -> S2 -> H3, S2's exit 1 Mb/s (``make fuzz-topo`` seed 1). S2 reports on arrivals,
    once per 11.6 ms, not at the derived 1.448 ms interval, where S1's settled loop is unstable (root modulus
    1.107); k_p over S2's 30 packets is 1.2 Mb/s a packet, more than the 1 Mb/s drain. S1's buffer from H1 holds a
    backlog, so each report that finds a packet fewer raises what S1 sends (482 kb/s on average over 1.5-20 s)
    while each that finds one more cuts it no lower than the floor (140 kb/s): S2's buffer crept from 27 to 30
    packets and overflowed from 3.23 s (2 lost by 4 s, 33 by 20 s), unwarned, since the rule looked only at a
    stall of switch-fed buffers above S1, and S1's is fed by a host. Warned, for S2's own buffer."""
    verdict = judge_case("report-gap-own-buffer-line.yaml")
    assert verdict.problems == []
    assert any(w.startswith("law S1->S2") and "creeps to full" in w for w in verdict.warned), verdict.warned


def test_a_source_limited_group_holds_no_backlog_at_u() -> None:
    """report-gap-multicast's m0 comes at most at its 1 Mb/s R_max, all S7 forwards of it: S3 holds no backlog
    toward S7, a rise of S3's law sends nothing more, and only the upstream stall makes it a warning (the roomy
    and high-floor variants lose nothing over 20 s, seed 1)."""
    from topo.analysis.report_gap import forwards_bps, supply_bps

    text, _ = _case()
    topo = load_topology_text(text, CASE)
    assert supply_bps(topo, "S3", "S7") <= forwards_bps(topo, "S3", "S7")
