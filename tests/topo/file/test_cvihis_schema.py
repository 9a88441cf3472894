"""``cvihis:`` in topology files (the file's reading, a flow's on top of it), the parameters a run's
CVIHIS cores get from it, and bad readings refused in one line with the file's line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.cvihis import CvihisParams
from hosts.cvihis.variants import AREAS, MAX_DELAY, MD, PUSH, VARIANTS, CvihisReading
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.file.schema import load_topology_text
from topo.sim.network import cvihis_params

ALINEA = "  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}"


def cvihis(top: str = "", flow: str = "", control: str = "cvihis-rtm") -> str:
    text = BASE.replace(ALINEA, f"  - {{src: H1, dst: H2, control: {control}{flow}}}")
    return (f"cvihis: {top}\n" if top else "") + text


def test_without_the_key_every_cvihis_flow_runs_the_default_reading() -> None:
    topo = load_topology_text(cvihis(), SOURCE)
    (f,) = topo.flows
    assert f.cvihis == CvihisReading() and f.cvihis.variant == "reprobe-overload"
    p = cvihis_params(topo, f)
    assert (p.rtm_shift_areas, p.rtm_shift_until_loss, p.updates_per_rtt, p.md_per_packet, p.max_delay_gain) == (
        CvihisParams().rtm_shift_areas, CvihisParams().rtm_shift_until_loss, 3, False, CvihisParams().max_delay_gain)


def test_the_files_reading_and_a_flows_on_top_reach_the_cores() -> None:
    topo = load_topology_text(cvihis("{variant: shifted}", ", cvihis: {md: per-packet, decisions_per_rtt: 1}"), SOURCE)
    (f,) = topo.flows
    assert f.cvihis == CvihisReading("shifted", (("decisions_per_rtt", 1), ("md", "per-packet")))
    p = cvihis_params(topo, f)
    assert p.rtm_shift_areas and p.md_per_packet and p.updates_per_rtt == 1 and p.max_delay_gain == 0.5
    # a flow's variant replaces the file's reading, whatever order its keys come in
    (f,) = load_topology_text(cvihis("{md: per-packet}", ", cvihis: {areas: shift, variant: squeezed}"), SOURCE).flows
    assert f.cvihis == CvihisReading("squeezed", (("areas", "shift"),))


@settings(deadline=None, max_examples=40)
@given(st.sampled_from(list(VARIANTS)), st.sampled_from(list(AREAS)), st.integers(1, 10), st.sampled_from(list(MD)),
       st.sampled_from(list(MAX_DELAY)), st.sampled_from(["cvihis-rtm", "cvihis-blm"]), st.sampled_from(list(PUSH)))
def test_any_reading_written_in_a_file_is_the_one_the_cores_run(variant: str, areas: str, per_rtt: int, md: str,
                                                              max_delay: str, control: str, push: str) -> None:
    """Differential: the parameters a flow's cores get equal the reading applied by hand to the defaults."""
    top = (f"{{variant: {variant}, areas: {areas}, decisions_per_rtt: {per_rtt}, push: {push}, md: {md}, "
           f"max_delay: {max_delay}}}")
    topo = load_topology_text(cvihis(top, control=control), SOURCE)
    (f,) = topo.flows
    expected = CvihisReading(variant, (("areas", areas), ("decisions_per_rtt", per_rtt), ("push", push), ("md", md),
                                       ("max_delay", max_delay))).apply(CvihisParams())
    got = cvihis_params(topo, f)
    assert all(getattr(got, k) == getattr(expected, k) for k in ("rtm_shift_areas", "rtm_shift_until_loss",
               "updates_per_rtt", "pf_per_rtt", "pf_pushes_per_rtt", "md_per_packet", "md_per_fill", "max_delay_gain"))


@pytest.mark.parametrize(("push", "factor"), [("2", 1.05 ** (2 / 3)), ("1.5", 1.05 ** 0.5), ("per-rtt", 1.05 ** (1 / 3))])
def test_a_push_rate_in_a_file_reaches_the_cores_apart_from_the_decision_rate(push: str, factor: float) -> None:
    """``push: k`` in a file: PF k times per RTT, spread over the reading's decisions (three by default)."""
    topo = load_topology_text(cvihis(f"{{push: {push}, decisions_per_rtt: 3}}"), SOURCE)
    (f,) = topo.flows
    p = cvihis_params(topo, f)
    assert p.updates_per_rtt == 3 and p.push_factor == pytest.approx(factor, rel=1e-12)


def test_bad_readings_are_refused_with_the_line() -> None:
    expect_error(cvihis("{variant: fast}"), "cvihis:", "cvihis.variant", "'fast' is not one of reprobe-overload, reprobe-fill, reprobe-slow, probe")
    expect_error(cvihis("{variant: published}"), "cvihis:", "cvihis.variant",
                 "'published' was the default until issue 48 and is now named 'probe'")
    expect_error(cvihis("{md: sometimes}"), "cvihis:", "cvihis.md", "'sometimes' is not one of per-rtt, per-packet, two-per-fill")
    expect_error(cvihis("{push: hourly}"), "cvihis:", "cvihis.push", "'hourly' is not one of per-decision, per-rtt")
    expect_error(cvihis("{push: 0}"), "cvihis:", "cvihis.push", "0 is not one of per-decision, per-rtt or a number "
                 "of pushes per RTT in (0, 10]")
    expect_error(cvihis("{decisions_per_rtt: 0}"), "cvihis:", "cvihis.decisions_per_rtt", "not an integer in 1..10")
    expect_error(cvihis("{decisions_per_rtt: 2.5}"), "cvihis:", "cvihis.decisions_per_rtt", "not an integer")
    expect_error(cvihis("{areas: [shift]}"), "cvihis:", "cvihis.areas", "expected a single value")
    expect_error(cvihis("{colour: red}"), "cvihis:", "cvihis.colour", "unknown key 'colour'")
    expect_error(cvihis("{}"), "cvihis:", "cvihis", "changes nothing")
    expect_error(cvihis(flow=", cvihis: {max_delay: newest}"), "control: cvihis-rtm", "flows[0].cvihis.max_delay",
                 "'newest' is not one of last-loss, ewma")
    expect_error(cvihis(flow=", cvihis: {md: per-rtt}", control="tfrc"), "control: tfrc", "flows[0].cvihis",
                 "only cvihis-rtm and cvihis-blm flows have cvihis")


@settings(deadline=None, max_examples=30)
@given(st.integers(80, 100_000), st.sampled_from(["cvihis-rtm", "cvihis-blm"]), st.booleans())
def test_a_start_rate_is_the_rate_the_sender_starts_at_capped_by_its_first_link(kbps: int, control: str,
                                                                                in_flow: bool) -> None:
    """The paper's TCP-friendliness tests varied CVIHIS's starting rate: ``start_rate`` sets it (at most the
    sender's first link, as every CVIHIS rate) and changes nothing else of the reading."""
    top, flow = ("", f", cvihis: {{start_rate: {kbps}kbps}}") if in_flow else (f"{{start_rate: {kbps}kbps}}", "")
    topo = load_topology_text(cvihis(top, flow, control), SOURCE)
    (f,) = topo.flows
    p = cvihis_params(topo, f)
    first_link = topo.link_between(f.path[0], f.path[1]).rate_bps
    assert p.initial_rate_bps == min(kbps * 1e3, first_link)
    assert p.rtm_shift_until_loss == CvihisParams().rtm_shift_until_loss and f.cvihis.variant == "reprobe-overload"
    assert f.cvihis.describe() == f"reprobe-overload (start_rate {kbps * 1e3})"


def test_bad_start_rates_are_refused_with_the_line() -> None:
    expect_error(cvihis("{start_rate: 10kbps}"), "cvihis:", "cvihis.start_rate", "not in 80000..1e+08 b/s")
    expect_error(cvihis("{start_rate: fast}"), "cvihis:", "cvihis.start_rate", "got 'fast'")
    expect_error(cvihis(flow=", cvihis: {start_rate: 0Mbps}"), "control: cvihis-rtm", "flows[0].cvihis.start_rate",
                 "must be > 0")
