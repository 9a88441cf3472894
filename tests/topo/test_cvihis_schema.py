"""``cvihis:`` in topology files (the file's reading, a flow's on top of it), the parameters a run's
CVIHIS cores get from it, and bad readings refused in one line with the file's line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.cvihis import CvihisParams
from hosts.cvihis.variants import AREAS, MAX_DELAY, MD, VARIANTS, CvihisReading
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.schema import load_topology_text
from topo.simnet import cvihis_params

ALINEA = "  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}"


def cvihis(top: str = "", flow: str = "", control: str = "cvihis-rtm") -> str:
    text = BASE.replace(ALINEA, f"  - {{src: H1, dst: H2, control: {control}{flow}}}")
    return (f"cvihis: {top}\n" if top else "") + text


def test_without_the_key_every_cvihis_flow_runs_the_published_reading() -> None:
    topo = load_topology_text(cvihis(), SOURCE)
    (f,) = topo.flows
    assert f.cvihis == CvihisReading() and f.cvihis.variant == "published"
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
       st.sampled_from(list(MAX_DELAY)), st.sampled_from(["cvihis-rtm", "cvihis-blm"]))
def test_any_reading_written_in_a_file_is_the_one_the_cores_run(variant: str, areas: str, per_rtt: int, md: str,
                                                              max_delay: str, control: str) -> None:
    """Differential: the parameters a flow's cores get equal the reading applied by hand to the defaults."""
    top = f"{{variant: {variant}, areas: {areas}, decisions_per_rtt: {per_rtt}, md: {md}, max_delay: {max_delay}}}"
    topo = load_topology_text(cvihis(top, control=control), SOURCE)
    (f,) = topo.flows
    expected = CvihisReading(variant, (("areas", areas), ("decisions_per_rtt", per_rtt), ("md", md),
                                       ("max_delay", max_delay))).apply(CvihisParams())
    got = cvihis_params(topo, f)
    assert all(getattr(got, k) == getattr(expected, k) for k in
               ("rtm_shift_areas", "rtm_shift_until_loss", "updates_per_rtt", "md_per_packet", "max_delay_gain"))


def test_bad_readings_are_refused_with_the_line() -> None:
    expect_error(cvihis("{variant: fast}"), "cvihis:", "cvihis.variant", "'fast' is not one of published")
    expect_error(cvihis("{md: sometimes}"), "cvihis:", "cvihis.md", "'sometimes' is not one of per-rtt, per-packet")
    expect_error(cvihis("{decisions_per_rtt: 0}"), "cvihis:", "cvihis.decisions_per_rtt", "not an integer in 1..10")
    expect_error(cvihis("{decisions_per_rtt: 2.5}"), "cvihis:", "cvihis.decisions_per_rtt", "not an integer")
    expect_error(cvihis("{areas: [shift]}"), "cvihis:", "cvihis.areas", "expected a single value")
    expect_error(cvihis("{colour: red}"), "cvihis:", "cvihis.colour", "unknown key 'colour'")
    expect_error(cvihis("{}"), "cvihis:", "cvihis", "changes nothing")
    expect_error(cvihis(flow=", cvihis: {max_delay: newest}"), "control: cvihis-rtm", "flows[0].cvihis.max_delay",
                 "'newest' is not one of last-loss, ewma")
    expect_error(cvihis(flow=", cvihis: {md: per-rtt}", control="tfrc"), "control: tfrc", "flows[0].cvihis",
                 "only cvihis-rtm and cvihis-blm flows have cvihis")
