"""The --set / --controls / --seeds grammar: what it accepts, and one-line refusals naming the thing."""

from __future__ import annotations

import pytest

from topo.file.settings import (
    SweepError,
    parse_controls,
    parse_seeds,
    parse_setting,
    parse_settings,
    split_control,
)
from topo.net.model import CONTROLS


@pytest.mark.parametrize(("text", "target", "selector", "key", "values", "name"), [
    ("alinea.o_max=0.5,0.7,0.9", "alinea", (), "o_max", ("0.5", "0.7", "0.9"), "alinea.o_max"),
    ("alinea[toward=R1].interval=5ms,10ms", "alinea", (("toward", "R1"),), "interval", ("5ms", "10ms"),
     "alinea[toward=R1].interval"),
    ("alinea[node=R1,toward=R2].k_p=0", "alinea", (("node", "R1"), ("toward", "R2")), "k_p", ("0",),
     "alinea[node=R1,toward=R2].k_p"),
    ("link[R3-R4].rate=1Mbps, 2Mbps", "link", (("ends", "R3-R4"),), "rate", ("1Mbps", "2Mbps"), "link[R3-R4].rate"),
    ("options.report_loss=0,10%", "options", (), "report_loss", ("0", "10%"), "options.report_loss"),
    ("flow[f1].r_max=1Mbps", "flow", (("name", "f1"),), "r_max", ("1Mbps",), "flow[f1].r_max"),
    ("node[H2].playout=1Mbps", "node", (("name", "H2"),), "playout", ("1Mbps",), "node[H2].playout"),
])
def test_accepted(text, target, selector, key, values, name):
    s = parse_setting(text)
    assert (s.target, s.selector, s.key, s.values, s.name) == (target, selector, key, values, name)


@pytest.mark.parametrize(("text", "needle"), [
    ("alinea.o_mx=0.5", "unknown parameter alinea.o_mx"),
    ("alinea.o_max", "expected TARGET.KEY=V1,V2"),
    ("queue.rate=1", "unknown target 'queue'"),
    ("alinea.o_max=0.5,,0.7", "empty value"),
    ("alinea.o_max=0.5,0.5", "listed twice"),
    ("alinea[via=R1].o_max=0.5", "node=NAME and/or toward=NAME"),
    ("node.playout=1Mbps", "needs a name in brackets"),
    ("options[x].report_loss=0", "takes no selector"),
    ("link[R1].rate=1Mbps", "takes the two ends"),
])
def test_refused_with_the_setting_named(text, needle):
    with pytest.raises(SweepError) as info:
        parse_setting(text)
    assert needle in str(info.value) and text in str(info.value)
    assert "\n" not in str(info.value)


def test_the_same_parameter_twice_is_refused():
    with pytest.raises(SweepError, match="already swept"):
        parse_settings(["alinea.o_max=0.5", "alinea.o_max=0.7"])


def test_controls_known_and_unknown():
    assert parse_controls(None, CONTROLS) is None
    assert parse_controls(",".join(CONTROLS), CONTROLS) == CONTROLS
    assert parse_controls("alinea,tcp-reno", CONTROLS) == ("alinea", "tcp-reno")  # tcp with its cc
    assert split_control("tcp-cubic") == ("tcp", "cubic") and split_control("ledbat") == ("ledbat", None)
    with pytest.raises(SweepError) as info:
        parse_controls("alinea,quic-reno", CONTROLS)
    assert "unknown control 'quic-reno'" in str(info.value)
    assert all(c in str(info.value) for c in CONTROLS)  # the list of known ones
    with pytest.raises(SweepError, match="unknown control 'tcp-reno'"):
        parse_controls("tcp-reno", ("alinea", "fixed"))  # tcp-CC only where tcp is known


@pytest.mark.parametrize(("text", "seeds"), [("1-4", (1, 2, 3, 4)), ("3", (3,)), ("1,5-6", (1, 5, 6))])
def test_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["5-1", "a", "1,1", "", "1-"])
def test_bad_seeds(text):
    with pytest.raises(SweepError, match="--seeds"):
        parse_seeds(text)
