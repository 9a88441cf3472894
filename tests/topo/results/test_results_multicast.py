"""topo/results/multicast.py: every case's file loads as pgmcc and as hop-by-hop ALINEA, and a short
case run reports f from the run's own records."""

from __future__ import annotations

import pytest

from hosts.tcp import MSS
from topo.file.schema import load_topology_text
from topo.results.multicast import CASES, case_text, run_case, table


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


def test_the_table_gives_fs_range_over_the_seeds() -> None:
    """Seed 1's f in its own column; every seed's range beside it, per TCP; one seed: no range."""
    def run(seed: int, f: dict[str, float]) -> dict[str, object]:
        return {"seed": seed, "seconds": 10.0, "f": f, "acker_switches": 0, "timeouts": 0}

    one = [run(1, {"tcp": 1.0}), run(3, {"tcp": 1.5}), run(2, {"tcp": 0.5})]
    two = [run(1, {"tcp1": 1.0, "tcp2": 2.0}), run(2, {"tcp1": 0.8, "tcp2": 2.2})]
    lines = table({"set3": {"pgmcc": one[0], "pgmcc-seeds": one}, "set2-low": {"pgmcc": two[0], "pgmcc-seeds": two},
                   "set4": {"pgmcc": run(1, {"tcp": 0.9})}})
    rows = {line.split(" | ")[0]: line.split(" | ") for line in lines[2:]}
    (set3,) = [r for k, r in rows.items() if "set 3" in k]
    assert set3[3] == "100 %" and set3[4] == "50-150 % (seeds 1,2,3)"
    (set2,) = [r for k, r in rows.items() if "set 2, low" in k]
    assert set2[4] == "tcp1 80-100 %, tcp2 200-220 % (seeds 1,2)"
    (set4,) = [r for k, r in rows.items() if "set 4, repr" in k]
    assert set4[4] == "-"
    same = table({"set3": {"pgmcc": one[0], "pgmcc-seeds": [one[0], run(2, {"tcp": 1.0})]}})
    assert same[2].split(" | ")[4] == "100 % (seeds 1,2)"  # one value when every seed gives it


def test_a_naks_loss_estimate_is_raised_by_the_loss_it_reports() -> None:
    """Set 2's many switches (docs/howto/multicast.md): the p a NAK carries includes its own loss, so on average it
    stands above the receiver's loss rate, the more so where losses are rare."""
    from topo.results.multicast import nak_estimates

    case = next(c for c in CASES if c.name == "set2-low")
    e = nak_estimates(case, 60.0)
    assert set(e) == {"MR1", "MR2"} and all(r["naks"] > 0 for r in e.values())
    for r in e.values():
        assert r["nak_p_mean"] > r["lost_fraction"] > 0
    ratio = {h: r["nak_p_mean"] / r["lost_fraction"] for h, r in e.items()}
    assert ratio["MR1"] > ratio["MR2"]  # 0.4 % against 1.6 %
