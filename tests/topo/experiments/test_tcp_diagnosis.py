"""The kernel runs' traces and the diagnosis read from them (topo/experiments/tcp_trace.py, topo/experiments/tcp_diagnosis.py)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topo.experiments import tcp_diagnosis as D
from topo.experiments.tcp_trace import TRACE_SUFFIX, TracePoint, read_trace, trace_of_run, write_trace
from topo.experiments.tcp_validation import CASES, LATEST_KERNEL_SET

STORED = LATEST_KERNEL_SET


def sawtooth(pipe: int, low: int, high: int, periods: int, step_s: float = 0.1) -> list[TracePoint]:
    """A reno-like window over a path of ``pipe`` packets: +1 per sample from ``low`` to ``high``,
    then a loss (one retransmission) back to ``low``; the queue holds what the pipe does not."""
    out, t = [], 0.0
    for retrans in range(periods):
        for cwnd in range(low, high + 1):
            out.append(TracePoint(round(t, 3), cwnd, retrans, 20.0, max(cwnd - pipe, 0)))
            t += step_s
    return out


@given(st.integers(10, 60), st.integers(5, 30), st.integers(2, 5))
@settings(max_examples=25, deadline=None)
def test_a_smooth_sawtooth_gives_its_pipe_its_losses_and_its_reduction(pipe: int, extra: int, periods: int) -> None:
    low, high = pipe // 2 + 1, pipe + extra + D.BUSY
    d = D.diagnose(sawtooth(pipe, low, high, periods), from_s=0.0)
    assert d.pipe == pipe
    assert d.burst_queue == 0  # below the pipe a smooth window leaves the queue empty
    assert d.losses == periods - 1
    assert d.deepest == pytest.approx(low / high)


def test_bursts_show_as_a_queue_below_the_pipe() -> None:
    smooth = sawtooth(30, 16, 50, 3)
    bursty = [TracePoint(p.t_s, p.cwnd, p.retrans, p.rtt_ms, p.occupancy + 2) for p in smooth]
    assert D.diagnose(bursty, 0.0).burst_queue == pytest.approx(2)
    assert D.diagnose(bursty, 0.0).pipe == 28  # the same window keeps two more packets queued


def test_a_trace_without_samples_in_the_half_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples after 30 s"):
        D.diagnose(sawtooth(30, 16, 50, 1), from_s=30.0)


def test_a_trace_survives_its_file(tmp_path: Path) -> None:
    points = sawtooth(20, 11, 40, 2)
    write_trace(points, tmp_path / "t.trace.csv")
    assert read_trace(tmp_path / "t.trace.csv") == points
    with_state = [TracePoint(p.t_s, p.cwnd, p.retrans, p.rtt_ms, p.occupancy, p.cwnd // 2, 3) for p in points]
    write_trace(with_state, tmp_path / "s.trace.csv")  # TCP_INFO's ssthresh and ca_state, when sampled
    assert read_trace(tmp_path / "s.trace.csv") == with_state


def test_the_stored_traces_tell_a_loss_recovery_from_cwr() -> None:
    """The stored runs' traces sample TCP_INFO's state: the kernel's reductions there are loss
    recoveries (ca_state 3), none a CWR (2), which the model does not have (docs/howto/tcp.md)."""
    traces = sorted(STORED.glob(f"*{TRACE_SUFFIX}"))
    assert len(traces) == len(CASES)
    for trace in traces:
        states = {p.ca_state for p in read_trace(trace)}
        assert 3 in states and 2 not in states and None not in states, trace


def test_a_bad_trace_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace.csv"
    bad.write_text("t_s,cwnd\n1,2\n")
    with pytest.raises(ValueError, match="bad.trace.csv: not a trace"):
        read_trace(bad)
    with pytest.raises(ValueError, match="missing.trace.csv"):
        read_trace(tmp_path / "missing.trace.csv")
    with pytest.raises(ValueError, match="no tcp.csv"):
        trace_of_run(tmp_path)


def test_the_command_names_a_missing_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert D.main(["--kernel-from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tcp_diagnosis: ") and TRACE_SUFFIX in err and err.count("\n") == 1


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_stored_kernel_run_has_its_trace(case: object) -> None:
    """The traces are the stored runs' own samples: their second half's mean occupancy is the
    run's measured one."""
    name = case.name  # type: ignore[attr-defined]
    measured = json.loads((STORED / f"{name}.json").read_text())
    trace = read_trace(STORED / f"{name}{TRACE_SUFFIX}")
    half = [p.occupancy for p in trace if p.t_s >= trace[-1].t_s / 2]
    assert statistics.fmean(half) / 50 == pytest.approx(measured["occupancy"], abs=0.005)
    assert trace[-1].retrans == measured["retransmissions"]
