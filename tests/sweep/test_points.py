"""A point's topology: the file with the point's values, read (and refused) by the loader itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.topo.helpers import capped_r_max
from topo.file.points import Base, grid, point_topology
from topo.file.schema import TopologyError, load_topology_text
from topo.file.settings import SweepError, parse_settings

ROOT = Path(__file__).resolve().parents[2]
#: H1 -- R1 -- R2 -- H2; one override on R1, an alinea flow and a fixed one.
TEXT = """\
defaults:
  alinea: {o_max: 70%, interval: 10ms}
nodes:
  H1: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  H2: {kind: host, receive_buffer: 100, playout: 1Mbps}
  H3: {kind: host}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2], rate: 3Mbps}
  - {ends: [R2, H2]}
  - {ends: [R2, H3]}
flows:
  - {name: a, src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}
  - {name: b, src: H1, dst: H3, control: fixed, rate: 300kbps}
alinea:
  - {toward: R2, o_max: 90%}
"""


@pytest.fixture
def base() -> Base:
    return Base("t.yaml", TEXT, load_topology_text(TEXT, "t.yaml"))


def one(base: Base, setting: str, control: str | None = None):
    [point] = grid(parse_settings([setting]), (control,) if control else None)
    return point_topology(base, point)


def test_every_law_gets_the_value_even_over_a_file_override(base):
    t = one(base, "alinea.o_max=0.5")
    assert t.law and {p.o_max for p in t.law.values()} == {0.5}


def test_a_selector_changes_only_its_laws(base):
    t = one(base, "alinea[toward=R2].interval=5ms")
    assert {p.interval_us for (v, _), p in t.ports.items() if v == "R2"} == {5000}
    assert {p.interval_us for (v, _), p in t.ports.items() if v != "R2"} == {10_000}
    others = [k for k in t.law if k != ("R1", "R2")]
    assert others and all(t.law[k] == base.topo.law[k] for k in others)
    # R1 -> R2's gains follow its new interval when the file leaves them to be derived (topo/analysis/derive.py),
    # and so does its derived R_max: a switch's margin above its flows' caps (a's 1.5 Mb/s, b's 300 kb/s) is one
    # frame per report interval
    kept = ("o_min", "o_max")
    assert all(getattr(t.law[("R1", "R2")], k) == getattr(base.topo.law[("R1", "R2")], k) for k in kept)
    for topo in (base.topo, t):
        assert topo.law[("R1", "R2")].r_max == pytest.approx(capped_r_max(topo, "R1", "R2", 1.8e6))
    assert t.law[("R1", "R2")].r_max > base.topo.law[("R1", "R2")].r_max


def test_links_flows_nodes_options(base):
    assert one(base, "link[R2-H2].rate=1Mbps").link_between("R2", "H2").rate_bps == 1e6
    assert {ln.buffer for ln in one(base, "link.buffer=50").links} == {50}
    assert one(base, "flow[a].r_max=1Mbps").flows[0].r_max_bps == 1e6
    assert one(base, "node[H2].playout=800kbps").nodes["H2"].playout_bps == 8e5
    assert one(base, "options.report_loss=5%").options.report_loss == pytest.approx(0.05)


def test_controls_replace_every_flows_control_and_carry_the_cap(base):
    t = one(base, "options.report_loss=0", control="fixed")
    assert [(f.control, f.rate_bps) for f in t.flows] == [("fixed", 1.5e6), ("fixed", 3e5)]
    t = one(base, "options.report_loss=0", control="alinea")
    assert [(f.control, f.r_max_bps) for f in t.flows] == [("alinea", 1.5e6), ("alinea", 3e5)]


def test_the_base_file_is_not_changed_by_a_point(base):
    one(base, "alinea.o_max=0.5")
    assert load_topology_text(TEXT, "t.yaml").law == base.topo.law


@pytest.mark.parametrize(("setting", "needle"), [
    ("alinea.o_max=1.5", "o_max = 1.5: a fraction must be in (0, 1]"),
    ("alinea.o_min=95%", "o_min = 0.95 is above o_max"),
    ("alinea[node=R9].o_max=0.5", "unknown node 'R9'"),
    ("link.buffer=0", "capacity = 0"),
    ("link[R1-H2].rate=1Mbps", "no link between R1 and H2"),
    ("flow[zz].r_max=1Mbps", "unknown flow 'zz'"),
    ("flow[b].r_max=1Mbps", "a fixed flow has no r_max"),
    ("options.report_loss=1", "a loss fraction must be in [0, 1)"),
    ("alinea.interval=1.5us", "not a whole number of microseconds"),
    ("link.rate=fast", "link"),
])
def test_an_invalid_point_is_refused_naming_the_setting(base, setting, needle):
    with pytest.raises(SweepError) as info:
        one(base, setting)
    message = str(info.value)
    assert needle in message and "\n" not in message
    assert f"--set {setting}" in message


def test_the_message_is_the_files_own(base):
    """The same value written into the file gives the same complaint (minus where it is)."""
    with pytest.raises(SweepError) as swept:
        one(base, "options.report_loss=1")
    with pytest.raises(TopologyError) as written:
        load_topology_text(TEXT + "options: {report_loss: 1}\n", "t.yaml")
    assert str(written.value).split(": ", 1)[1] in str(swept.value)


MULTI = """\
nodes:
  S: {kind: host}
  R1: {kind: switch}
  X1: {kind: host}
  X2: {kind: host}
  X3: {kind: host}
links:
  - {ends: [S, R1]}
  - {ends: [R1, X1]}
  - {ends: [R1, X2]}
  - {ends: [R1, X3]}
flows:
"""


@given(st.integers(0, 3), st.integers(2, 3), st.data())
@settings(max_examples=40, deadline=None)
def test_a_flow_setting_edits_the_files_flow_of_that_name_beside_a_multicast_one(where: int, receivers: int,
                                                                                 data: st.DataObject) -> None:
    """A multicast flow resolves to one branch per receiver, so the resolved flows no longer line up
    with the file's items: ``flow[u3]`` failed with an IndexError or set another flow's rate. Every
    unicast flow named gets the value, and no other flow changes."""
    unicast = [f"  - {{name: u{i}, src: S, dst: X{1 + i % 3}, control: fixed, rate: {100 + i}kbps}}\n"
               for i in range(4)]
    group = ", ".join(f"X{j + 1}" for j in range(receivers))
    items = unicast[:where] + [f"  - {{name: m, src: S, dst: [{group}], control: fixed, rate: 50kbps}}\n"] + unicast[where:]
    text = MULTI + "".join(items)
    base = Base("t.yaml", text, load_topology_text(text, "t.yaml"))
    target = data.draw(st.sampled_from([f"u{i}" for i in range(4)] + ["m"]))
    t = one(base, f"flow[{target}].rate=777kbps")
    for f in t.flows:
        mine = f.name == target or f.name.startswith(f"{target}@")
        before = next(g for g in base.topo.flows if g.name == f.name)
        assert f.rate_bps == (777e3 if mine else before.rate_bps), (f.name, target)
    with pytest.raises(SweepError, match="branch of multicast flow m|unknown flow"):
        one(base, "flow[zz].rate=1Mbps")
