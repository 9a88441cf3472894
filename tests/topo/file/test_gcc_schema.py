"""``control: gcc`` in topology files: its ``gcc:`` parameters, and bad values refused with the line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.gcc import GccParams
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.file.schema import TopologyError, load_topology_text

ALINEA = "  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}"


def gcc(extra: str) -> str:
    return BASE.replace(ALINEA, "  - {src: H1, dst: H2, control: gcc" + extra + "}")


def test_defaults_and_given_values() -> None:
    (f,) = load_topology_text(gcc(""), SOURCE).flows
    assert f.control == "gcc" and f.gcc == GccParams()
    (f,) = load_topology_text(gcc(", gcc: {min_rate: 100kbps, start_rate: 500kbps, max_rate: 2Mbps, filter: kalman}"),
                              SOURCE).flows
    assert f.gcc == GccParams(100e3, 500e3, 2e6, "kalman")
    (f,) = load_topology_text(gcc(", gcc: {gains: libwebrtc}"), SOURCE).flows
    assert f.gcc is not None and (f.gcc.gains, f.gcc.filter) == ("libwebrtc", "trendline")
    (f,) = load_topology_text(gcc(", r_max: 1Mbps"), SOURCE).flows
    assert f.gcc is not None and f.gcc.max_rate_bps == 1e6
    (f,) = load_topology_text(gcc(", r_max: 45kbps, gcc: {filter: kalman}"), SOURCE).flows
    assert f.gcc == GccParams(45e3, 45e3, 45e3, "kalman")  # the default floor and start follow a low cap down
    (f,) = load_topology_text(gcc(", gcc: {start_rate: 20kbps}"), SOURCE).flows
    assert f.gcc is not None and f.gcc.min_rate_bps == 20e3  # the default floor follows a lower start down
    (f,) = load_topology_text(gcc(", gcc: {max_rate: 30kbps}"), SOURCE).flows
    assert f.gcc is not None and (f.gcc.min_rate_bps, f.gcc.start_bps()) == (30e3, 30e3)  # and a lower max


def test_bad_values_are_refused_with_the_line() -> None:
    expect_error(gcc(", gcc: {min_rate: 0kbps}"), "control: gcc", "flows[0].gcc.min_rate", "must be > 0")
    expect_error(gcc(", gcc: {max_rate: fast}"), "control: gcc", "flows[0].gcc.max_rate", "")
    expect_error(gcc(", gcc: {min_rate: 2Mbps, max_rate: 1Mbps}"), "control: gcc", "flows[0].gcc.max_rate",
                 "max_rate (1e+06 b/s) is below min_rate (2e+06 b/s)")
    expect_error(gcc(", gcc: {start_rate: 3Mbps, max_rate: 1Mbps}"), "control: gcc", "flows[0].gcc.max_rate",
                 "is below start_rate")
    expect_error(gcc(", gcc: {min_rate: 500kbps, start_rate: 100kbps}"), "control: gcc",
                 "flows[0].gcc.start_rate", "is below min_rate")
    expect_error(gcc(", gcc: {filter: median}"), "control: gcc", "flows[0].gcc.filter",
                 "unknown filter 'median' (known: trendline, kalman)")
    expect_error(gcc(", gcc: {beta: 0.9}"), "control: gcc", "flows[0].gcc.beta",
                 "unknown key 'beta' (allowed: min_rate, max_rate, start_rate, filter, gains)")
    expect_error(gcc(", gcc: {gains: strong}"), "control: gcc", "flows[0].gcc.gains",
                 "unknown gains 'strong' (known: draft, libwebrtc)")
    expect_error(gcc(", gcc: 2Mbps"), "control: gcc", "flows[0].gcc", "expected a mapping")
    expect_error(gcc(", r_max: 1Mbps, gcc: {max_rate: 2Mbps}"), "control: gcc", "flows[0].gcc.max_rate",
                 "give its cap once")
    expect_error(gcc(", r_max: 100kbps, gcc: {min_rate: 200kbps}"), "control: gcc", "flows[0].gcc.min_rate",
                 "is above the flow's r_max")
    expect_error(gcc(", rate: 1Mbps"), "control: gcc", "flows[0].rate", "only fixed flows have a rate")
    expect_error(BASE.replace(ALINEA, "  - {src: H1, dst: H2, control: tfrc, gcc: {min_rate: 1Mbps}}"),
                 "control: tfrc", "flows[0].gcc", "only gcc flows have gcc (this one is tfrc)")


def test_multi_line_flow_points_at_the_bad_line() -> None:
    text = BASE.replace(ALINEA, "  - src: H1\n    dst: H2\n    control: gcc\n    gcc:\n      min_rate: 1Mbps\n"
                               "      max_rate: 500kbps\n")
    expect_error(text, "max_rate: 500kbps", "flows[0].gcc.max_rate", "is below min_rate")


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.none(), st.integers(1, 5000)), st.one_of(st.none(), st.integers(1, 5000)),
       st.one_of(st.none(), st.integers(1, 5000)), st.one_of(st.none(), st.integers(60, 5000)))
def test_any_rates_load_in_order_or_are_refused_in_one_line(lo, start, hi, r_max) -> None:
    """Whatever rates a file gives (kb/s), either the flow loads with min <= start <= max (the cap r_max
    included) or the file is refused with its line; never a traceback."""
    keys = {"min_rate": lo, "start_rate": start, "max_rate": hi}
    body = ", ".join(f"{k}: {v}kbps" for k, v in keys.items() if v is not None)
    text = gcc((f", r_max: {r_max}kbps" if r_max else "") + (f", gcc: {{{body}}}" if body else ""))
    try:
        (f,) = load_topology_text(text, SOURCE).flows
    except TopologyError as e:
        assert str(e).startswith(f"{SOURCE}:11: flows[0]") and "\n" not in str(e)
        return
    p = f.gcc
    assert p is not None
    top = p.max_rate_bps if p.max_rate_bps is not None else float("inf")
    assert p.min_rate_bps <= p.start_bps() <= top
    for k, v in keys.items():
        if v is not None and k != "max_rate":
            assert getattr(p, f"{k}_bps") == v * 1e3 or (r_max is not None and getattr(p, f"{k}_bps") == r_max * 1e3)
    if r_max is not None:
        assert p.max_rate_bps == r_max * 1e3


def test_show_prints_a_gcc_flows_parameters() -> None:
    from topo.file.show import describe

    out = describe(load_topology_text(gcc(", gcc: {min_rate: 100kbps, max_rate: 2Mbps, filter: kalman}"), SOURCE))
    assert "gcc 100kbps .. 2Mbps from 300kbps, kalman filter, draft gains" in out
    out = describe(load_topology_text(gcc(""), SOURCE))
    assert "gcc 50kbps .. its first link's rate from 300kbps, trendline filter, draft gains" in out
