"""A host process's frame-loop timeline and the causes of its data runs (topo/netns/loop_trace.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topo.netns import loop_trace as L

MS = 1_000_000
DELAY_MS = 5.0
DATA = b"x" * 1500  # a full segment as read from the tun (IPv4, no Ethernet header)
FRAME = b"x" * 1514


def _clocked(n: int = 200) -> L.LoopTrace:
    """An ACK every 1.2 ms, each answered by two segments read at once and sent 60 us apart,
    delivered on time after the uplink's delay."""
    tr = L.LoopTrace()
    for i in range(n):
        t = i * 12 * MS // 10
        tr.ack.append(t)
        tr.read.append((t + 10_000, 2))
        tr.send += [t + 20_000, t + 21_000]
        tr.out += [(t + 10_000 + round(DELAY_MS * MS) + k * 60_000, 0) for k in (1, 2)]
    return tr


def _with_run(tr: L.LoopTrace, at: int, late: int = 0, acks: int = 0, sends: int = 0) -> L.LoopTrace:
    """Eight data frames read at once at ``at`` and leaving back to back (``late`` ns late)."""
    tr.ack += [at - 100_000 + k * 10_000 for k in range(acks)]
    tr.send += [at - 100_000 + k * 10_000 for k in range(sends)]
    tr.read.append((at, 8))
    tr.out += [(at + round(DELAY_MS * MS) + late + k * 60_000, late) for k in range(8)]
    for seq in (tr.ack, tr.read, tr.out, tr.send):
        seq.sort()
    return tr


def test_an_ack_clock_has_no_runs() -> None:
    s = L.classify(_clocked(), 20.0, DELAY_MS)
    assert s.outs.share_5 == 0 and sum(s.frames.values()) == 0 and s.late_max_us == 0


@pytest.mark.parametrize(("kw", "cause"), [({"late": 3 * MS}, "late"), ({"acks": 4}, "acks"),
                                           ({"sends": 5}, "app"), ({}, "other")])
def test_a_run_is_put_down_to_its_cause(kw: dict[str, int], cause: str) -> None:
    tr = _with_run(_clocked(), 200 * MS - 500_000, **kw)
    s = L.classify(tr, 20.0, DELAY_MS)
    assert s.frames[cause] >= 8 and all(n == 0 for k, n in s.frames.items() if k != cause)
    assert s.outs.longest >= 8


def test_the_hooks_record_and_a_trace_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(L.ENV, raising=False)
    assert L.LoopTrace.from_env() is None  # off unless asked for
    monkeypatch.setenv(L.ENV, str(tmp_path / "t"))
    tr = L.LoopTrace.from_env()
    assert tr is not None
    tr.on_ack()
    tr.on_read([DATA, b"ack" * 20, DATA])
    tr.on_out(FRAME, 1234)
    tr.on_out(b"short", 0)  # ACKs and reports are not data
    tr.on_send()
    back = L.load(tr.write("H1"))
    assert back == tr and back.read[0][1] == 2 and len(back.out) == 1 and back.out[0][1] == 1234


def test_a_bad_trace_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "H1.trace.json"
    bad.write_text("{}")
    assert L.main([str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err
    with pytest.raises(ValueError, match="no data frames"):
        L.classify(L.LoopTrace(), 20.0, DELAY_MS)


def test_long_runs_are_listed_with_the_loops_lateness(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tr = _with_run(_clocked(), 100 * MS, late=30 * MS)
    runs = L.long_runs(tr, 20.0, 5)
    assert len(runs) == 1 and runs[0][1] >= 8 and runs[0][2] == 30.0  # the clocked pairs alone are not runs
    assert runs[0][0] > 0.1  # from the first ACK in, after the read and the uplink's delay
    assert L.long_runs(tr, 20.0, runs[0][1] + 1) == []
    assert L.main([str(_saved(tr, tmp_path)), "--long", "5"]) == 0
    assert f"{runs[0][1]} frames at" in capsys.readouterr().out


def test_a_receivers_bunched_arrivals_show() -> None:
    smooth = L.LoopTrace(ack=[i * 600_000 for i in range(400)])  # one data frame per 20 Mb/s frame time
    assert L.arrivals(smooth, 20.0).share_5 == 0
    bunched = L.LoopTrace(ack=sorted(smooth.ack + [300 * 600_000 + 1000 * k for k in range(1, 30)]))
    a = L.arrivals(bunched, 20.0)
    assert a.longest >= 30 and a.share_5 > 0
    with pytest.raises(ValueError, match="no TCP frames"):
        L.arrivals(L.LoopTrace(), 20.0)


def _saved(tr: L.LoopTrace, tmp_path: Path) -> Path:
    path = tmp_path / "H1.trace.json"
    path.write_text(json.dumps({"ack": tr.ack, "read": tr.read, "out": tr.out, "send": tr.send}))
    return path
