"""docs/reference/topologies.md's defaults table says, for every key, what the loader does when a file leaves
it out: a built-in value (checked against what the loader resolves) or a value derived per law
(checked against the loader's own record of where each value came from, ``Topology.provenance``)."""

from __future__ import annotations

import re

from controlplane.units import parse_bytes, parse_duration_ns, parse_fraction, parse_rate
from tests.paths import ROOT
from topo.file.schema import load_topology_text

DOC = ROOT / "docs" / "reference" / "topologies.md"

# One ALINEA flow H1 -> H2 through R1 and R2 (laws H1->R1, R1->R2, R2->H2), and R1 -- R3, a switch
# link no flow crosses: its laws keep the built-in values.
FILE = """
nodes:
  H1: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  R3: {kind: switch}
  H2: {kind: host, receive_buffer: 100, playout: 1Mbps}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2]}
  - {ends: [R2, H2]}
  - {ends: [R1, R3]}
flows:
  - {name: f1, src: H1, dst: H2, control: alinea}
"""


def table() -> dict[str, str]:
    """key -> the "left out:" cell of the defaults table."""
    section = DOC.read_text(encoding="utf-8").split("### `defaults`", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([a-z_.]+)`[^|]*\| ([^|]+) \|", section, re.M)
    return {key: cell for key, cell in rows}


def builtin(cell: str) -> str:
    match = re.search(r"built-in `([^`]+)`", cell)
    assert match, cell
    return match.group(1)


def test_every_law_key_the_loader_derives_is_marked_derived_and_the_others_built_in() -> None:
    t = load_topology_text(FILE, "t.yaml")
    rows = table()
    carried, idle = ("R1", "R2"), ("R1", "R3")
    for field, origin in t.provenance[carried].items():
        key = field if field == "r_max" else f"alinea.{field}"
        assert key in rows, f"{key} is not in the defaults table"
        assert ("**derived**" in rows[key]) == (origin == "derived"), (key, origin, rows[key])
    for field in ("o_min", "o_max", "w_max", "w_min", "k_p", "r_floor"):
        value = getattr(t.law[idle], field)
        cell = builtin(rows[f"alinea.{field}"])
        expected = parse_fraction(cell) if field.startswith("o_") else parse_rate(cell)
        assert value == expected and t.provenance[idle][field] == "default", field
    assert t.ports[("R3", "R1")].interval_us * 1000 == parse_duration_ns(builtin(rows["alinea.interval"]))


def test_the_link_and_packet_defaults_are_the_built_ins_the_table_gives() -> None:
    t = load_topology_text(FILE, "t.yaml")
    rows = table()
    link = t.link_between("R1", "R2")
    assert link.rate_bps == parse_rate(builtin(rows["link.rate"]))
    assert link.delay_ns == parse_duration_ns(builtin(rows["link.delay"]))
    assert link.buffer == int(builtin(rows["link.buffer"]))
    assert t.flows[0].packet_size == parse_bytes(builtin(rows["packet_size"]))
