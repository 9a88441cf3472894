"""The cycle trace of one RTM-against-reno cell (tests/topo/cvihis_cycles.py), the fill trace of one two-bottleneck
row (tests/topo/cvihis_fills.py) and the overflow trace of reno-grid cells (tests/topo/cvihis_overflows.py): their
tables, what they count and their refusals."""

from __future__ import annotations

import pytest

from tests.topo import cvihis_cycles, cvihis_fills, cvihis_overflows


def test_cycles_follow_renos_losses(capsys):
    assert cvihis_cycles.main(["--cell", "4.5/200", "--start", "half", "--seconds", "12"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines[2:] if line.startswith("| ")]
    assert rows, "reno loses a packet within 12 s at 4.5 Mb/s: at least one cycle"
    starts = [float(r.split("|")[1].split("-")[0]) for r in rows]
    assert starts == sorted(starts) and all(r.count("|") == 9 for r in rows)
    assert any(line.startswith("second half (6-12 s): RTM ") for line in lines)


def test_cycles_areas_count_every_decision():
    cycles, (rtm, tcp) = cvihis_cycles.trace("4.5Mbps", "98ms", "2.25Mbps", 1, 12.0, 20_000_000)
    assert rtm > 0 and tcp > 0
    for before, after in zip(cycles, cycles[1:]):
        assert (
            before.end_s == after.start_s and before.hist == after.hist0
        )  # no decision falls between two cycles


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--cell", "5/200"], "5/200 not on the grid"),
        (["--start", "twice"], "--start twice"),
        (["--seconds", "0"], "must be > 0"),
    ],
)
def test_cycles_refuse_bad_arguments(capsys, argv, says):
    with pytest.raises(SystemExit) as exc:
        cvihis_cycles.main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


# ---- tests/topo/cvihis_fills.py: a two-bottleneck row traced by where its FIFOs overflow -----------------------
def test_fills_table_puts_every_md_somewhere(capsys):
    assert cvihis_fills.main(["--row", "6", "--seconds", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines[2:] if line.startswith("| f")]
    assert [r.split("|")[1].strip() for r in rows] == ["f1", "f2", "f3"]
    for r in rows:
        shares = [int(c.strip().removesuffix(" %")) for c in r.split("|")[4:-1]]
        assert len(shares) == 3 and abs(sum(shares) - 100) <= 2, r  # rounding of three shares
    assert any(line.startswith("fills (drops): R1-R2 ") for line in lines)


def test_fills_without_flow_3_leave_r2_r3_alone():
    """Row 4 (no flow 3): R2-R3 (9 Mb/s) carries only what R1-R2 (6 Mb/s) lets through, so it never overflows and
    no MD can follow one of its fills; R1-R2's idle time is what it did not send of its capacity."""
    tr = cvihis_fills.trace("4", 1, 20.0, 10_000_000)
    assert set(tr.mds) == {"f1", "f2"} and tr.fills["R2-R3"] == []
    assert tr.fills["R1-R2"], "two RTM flows overflow a 40-packet FIFO within 10 s"
    idle = sum(s for _, s in tr.idle)
    assert 0 <= idle < tr.seconds
    # what R1-R2 sent bounds what arrived (1 %: the packets on their way at the window's ends)
    assert sum(tr.goodput.values()) <= tr.capacity_bps * (1 - idle / tr.seconds) * 1.01


@pytest.mark.parametrize(("argv", "says"), [(["--row", "7"], "--row 7"), (["--seconds", "0"], "must be > 0")])
def test_fills_refuse_bad_arguments(capsys, argv, says):
    with pytest.raises(SystemExit) as exc:
        cvihis_fills.main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


# ---- tests/topo/cvihis_overflows.py: reno-grid cells traced by the overflows of their FIFO ---------------------
def test_overflows_table_has_a_row_per_cell(capsys):
    assert cvihis_overflows.main(["--cells", "2/20,2/200", "--seconds", "12"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines[2:] if line.startswith("| 2/")]
    assert [r.split("|")[1].strip() for r in rows] == ["2/20", "2/200"]
    assert all(r.count("|") == len(cvihis_overflows.COLUMNS) + 2 for r in rows)
    assert any(line.startswith("seeds 1, 12 s runs read over 6-12 s") for line in lines)


def test_overflows_count_rtms_losses_among_the_drops():
    """RTM's losses are drops of the one bottleneck it crosses, so never more than the drops; the receiver decides
    three times per RTT (its RTT hint is the sender's SRTT, read here a sample apart)."""
    m = cvihis_overflows.measure(cvihis_overflows.trace("2Mbps", "98ms", 1, 16.0, 10_000_000), 4.0)
    assert m["overflows_min"] > 0, "reno's slow start overflows the 50-packet FIFO"
    assert 0 <= m["rtm_lost"] <= m["drops"] and 0 <= m["rtm_part"] <= 100 and 0 <= m["spared"] <= 100
    assert 0 < m["share"] < 100 and 2.5 < m["decisions_per_rtt"] < 3.5


@pytest.mark.parametrize(("argv", "says"), [(["--cells", "5/200"], "5/200 not on the grid"),
                                            (["--seeds", "x"], "--seeds x"), (["--seconds", "0"], "must be > 0")])
def test_overflows_refuse_bad_arguments(capsys, argv, says):
    with pytest.raises(SystemExit) as exc:
        cvihis_overflows.main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err
