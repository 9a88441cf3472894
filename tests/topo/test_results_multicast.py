"""topo/results_multicast.py: every case's file loads as pgmcc and as hop-by-hop ALINEA, and a short
case run reports f from the run's own records."""

from __future__ import annotations

import pytest

from hosts.tcp import MSS
from topo.results_multicast import CASES, case_text, run_case, table
from topo.schema import load_topology_text


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_case_loads_both_ways(case: object) -> None:
    pg = load_topology_text(case_text(case), "t.yaml")  # type: ignore[arg-type]
    al = load_topology_text(case_text(case, "alinea"), "t.yaml")  # type: ignore[arg-type]
    assert {f.control for f in pg.flows if f.group} == {"pgmcc"}
    assert {f.control for f in al.flows if f.group} == {"alinea"} and al.options.nak_aggregation_ns == 0
    assert [f.name for f in pg.flows] == [f.name for f in al.flows]
    assert {f.name for f in pg.flows if f.control == "tcp"} == set(case.tcps)  # type: ignore[attr-defined]


def test_a_case_edit_that_misses_its_file_is_an_error() -> None:
    from dataclasses import replace
    bad = replace(CASES[0], edits=(("no such text", "x"),))
    with pytest.raises(ValueError, match="no such text"):
        case_text(bad)


def test_a_short_case_run_reports_f_from_its_records() -> None:
    case = next(c for c in CASES if c.name == "set3")
    r = run_case(case, "pgmcc", seconds=8)
    assert r["session_packets"] > 0 and r["violations"] == 0
    assert r["f"]["tcp"] == pytest.approx(r["tcp_segments"]["tcp"] / r["session_packets"])
    a = run_case(case, "alinea", seconds=8)
    assert a["session_packets"] > 0 and a["acker_switches"] is None
    assert all(lost >= 0 for lost in a["session_lost"].values())
    lines = table({"set3": {"pgmcc": r, "alinea": a}})
    assert len(lines) == 3 and case.seed_f in lines[2]
    assert MSS == 1448  # f counts TCP in full segments of this size, pgmcc in 1514-byte frames (1452 bytes of data)
