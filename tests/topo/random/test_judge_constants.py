"""python -m tests.topo.judge_constants: the variants it tries and the tally it prints per variant."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.topo.judge_constants import main, tally, variants


def test_each_constant_is_tried_either_side_of_its_value_and_the_shipped_set_first() -> None:
    got = dict(variants({"FORECAST_BOOST": 7.0, "BRAKE_GAPS": 6, "OVERFLOW_DRAIN_SHARE": 0.9, "ONE": 1}))
    assert list(got)[0] == "base" and got["base"] == {}
    assert got["FORECAST_BOOST=3.5"] == {"FORECAST_BOOST": 3.5} and got["FORECAST_BOOST=14"] == {"FORECAST_BOOST": 14.0}
    assert got["BRAKE_GAPS=3"] == {"BRAKE_GAPS": 3} and got["BRAKE_GAPS=12"] == {"BRAKE_GAPS": 12}
    assert got["OVERFLOW_DRAIN_SHARE=0.8"] == {"OVERFLOW_DRAIN_SHARE": 0.8}
    assert got["OVERFLOW_DRAIN_SHARE=1"] == {"OVERFLOW_DRAIN_SHARE": 1.0}
    assert got["ONE=1"] == {"ONE": 1} and got["ONE=2"] == {"ONE": 2}  # an integer halved stays at least 1


runs = st.dictionaries(st.sampled_from("abcdef"), st.fixed_dictionaries({"lost": st.integers(0, 50),
                                                                          "warned": st.booleans()}))


@given(runs, runs)
def test_the_tally_counts_what_its_runs_hold(base: dict, rows: dict) -> None:
    t = tally("v", rows, base)
    assert t["runs"] == len(rows) and t["lost"] == sum(r["lost"] for r in rows.values())
    assert t["unwarned_runs"] == sum(1 for r in rows.values() if r["lost"] and not r["warned"]) <= t["lossy"]
    assert t["unwarned_lost"] <= t["lost"]
    shared = [k for k in rows if k in base]
    assert t["more"] + t["fewer"] == sum(1 for k in shared if rows[k]["lost"] != base[k]["lost"])
    assert tally("v", rows, rows)["more"] == 0


def test_it_refuses_to_run_compiled_or_without_topologies(monkeypatch, capsys) -> None:
    monkeypatch.delenv("HBH_INTERPRETED", raising=False)
    assert main(["--cases"]) == 2 and "HBH_INTERPRETED=1" in capsys.readouterr().err
    monkeypatch.setenv("HBH_INTERPRETED", "1")
    assert main([]) == 2 and "--cases" in capsys.readouterr().err
