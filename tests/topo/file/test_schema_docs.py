"""The example in docs/reference/topologies.md is a valid file that means what the doc says."""

from __future__ import annotations

import re

import pytest

from tests.paths import ROOT
from tests.topo.helpers import capped_r_max
from topo.file.schema import TopologyError, load_topology_text
from topo.file.show import describe
from topo.net.plan import buffer_unit_bytes, port_unit_bytes

DOC = ROOT / "docs" / "reference" / "topologies.md"


def format_example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The format", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_documented_example_loads():
    t = load_topology_text(format_example(), "docs/reference/topologies.md")
    assert t.name == "paper-5router" and list(t.nodes) == ["H1", "R1", "H2"]
    assert [f.name for f in t.flows] == ["f1", "bg"]
    # f1 (r_max 1.8 Mb/s) and bg (fixed 500 kb/s) cross R1 -> H2, a 3 Mb/s link: 2.3 Mb/s and its margin
    # (one 1000 B frame per 10 ms report interval, 800 kb/s), capped at the link.
    assert t.law[("R1", "H2")].r_max == capped_r_max(t, "R1", "H2", 2.3e6) == t.link_between("R1", "H2").rate_bps
    assert t.law[("R1", "H2")].o_max == 0.95 and t.law[("R1", "H2")].w_min == 1e6
    assert t.ports[("R1", "H1")].interval_us == 10_000
    assert [e.kind for e in t.events] == ["alinea", "link_rate"]
    assert t.options.report_loss == 0.1



def test_the_buffer_duration_example_shows_what_the_doc_says():
    section = DOC.read_text(encoding="utf-8").split("### Buffers given as durations", 1)[1].split("\n### ", 1)[0]
    example, shown, errors = re.findall(r"```(?:yaml)?\n(.*?)```", section, re.S)
    out = describe(load_topology_text(example, "t.yaml"))
    assert all(line + "\n" in out for line in shown.splitlines())
    edits = [("buffer: 50}", "buffer: -5ms}"), ("buffer: 50}", "buffer: 5MS}"), ("buffer: 5ms}", "buffer: 5s}")]
    for line, (old, new) in zip(errors.splitlines(), edits, strict=True):
        with pytest.raises(TopologyError) as info:
            load_topology_text(example.replace(old, new), "t.yaml")
        assert str(info.value) == line


def test_the_mixed_frame_merge_example_resolves_the_capacities_the_doc_names() -> None:
    """docs/reference/topologies.md, "Buffers at a merge of mixed frame sizes": equal durations give the merging
    ports 63, 13 and 9 packets (each link's largest frame), which each law reads in its own frame, the duration's
    bytes; given in packets, equal capacities, read in the merge's 200 B unit, the same bytes for every port."""
    section = DOC.read_text(encoding="utf-8").split("### Buffers at a merge of mixed frame sizes", 1)[1]
    example = re.findall(r"```yaml\n(.*?)```", section.split("\n### ", 1)[0], re.S)[0]
    out = describe(load_topology_text(example, "t.yaml"))
    for host, packets, size in (("H1", 63, 200), ("H2", 13, 1000), ("H3", 9, 1500)):
        assert f"{host} -- R1: 20Mbps, 2ms, buffer {packets} packets (5ms at 20Mbps, {size} B)" in out
    assert "get 63, 13 and 9 packets" in section
    timed = load_topology_text(example, "t.yaml")
    assert [port_unit_bytes(timed, h, "R1") for h in ("H1", "H2", "H3")] == [200, 1000, 1500]
    topo = load_topology_text(example.replace("- {ends: [H2, R1]}", "- {ends: [H2, R1], buffer: 63}")
                              .replace("- {ends: [H3, R1]}", "- {ends: [H3, R1], buffer: 63}"), "t.yaml")
    assert buffer_unit_bytes(topo, "R1") == 200
    assert {topo.ports[("R1", h)].capacity for h in ("H1", "H2", "H3")} == {63}
    assert {port_unit_bytes(topo, h, "R1") for h in ("H1", "H2", "H3")} == {200}
