"""A host law that cannot cut within its loop's delay when its frames shrink faster than a switch's queue rate
follows them, and a switch's law whose backlog, stamped behind its wire on BMv2's queues, leaves in them at the
wire's bits (topo/analysis/mix_step.py); and a drain that falls in the start-up under a backlog a switch stamped
before it (topo/analysis/drain_fall.py); and a forecast over a long stamped horizon, whose commands take effect a
control latency after their reports (topo/analysis/stamp_lag.py)."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from tests.paths import RANDOM_CASES
from topo.analysis.check import check_topology
from topo.analysis.drain_fall import drain_falls
from topo.analysis.stamp_lag import EXCURSION, stamp_lags, walk_pkts
from topo.file.schema import load_topology_text

CASE = (RANDOM_CASES / "stop-frame-mix-line.yaml").read_text()
H2_S1 = "  - {ends: [H2, S1], rate: 10Mbps, delay: 2ms}"


def _step(text: str):  # type: ignore[no-untyped-def]
    checks = check_topology(load_topology_text(text, "stop-frame-mix-line.yaml"), 1.9, seed=1)  # f2 from 0.153 s
    return {c.key: c for c in checks}[("H2", "S1")].step


def test_a_large_frame_flow_stopping_beside_small_frames_fills_the_switch_buffer_within_the_loop_delay() -> None:
    step = _step(CASE)
    assert step is not None
    assert step.at_s == 1.52 and step.hop == "S2" and step.frame_bytes == 200
    assert step.drain_bps < step.push_bps and step.share < 1
    assert step.gained_pkts > step.room_pkts


def test_the_buffer_it_names_holds_the_gain() -> None:
    step = _step(CASE)
    assert step is not None
    bigger = CASE.replace(H2_S1, H2_S1[:-1] + f", buffer: {step.need_pkts}}}")
    assert bigger != CASE
    assert _step(bigger) is None
    smaller = CASE.replace(H2_S1, H2_S1[:-1] + f", buffer: {step.need_pkts - 1}}}")
    assert _step(smaller) is not None


def test_one_frame_size_has_no_step() -> None:
    assert _step(re.sub(r"packet_size: \d+B", "packet_size: 200B", CASE)) is None


def test_a_flow_started_before_the_law_has_climbed_is_not_blamed() -> None:
    """f2's start beside f1 (0.153 s at seed 1) shrinks the mix too, but H2's law is still climbing from its floor
    (a report per 1500 B frame at 0.2 Mb/s): without f1's stop there is no step; with a start as late as the stop,
    there is."""
    assert _step(CASE.replace(", stop: 1.52s", "")) is None
    late = CASE.replace(", stop: 1.52s", "").replace("start: 0s, packet_size: 200B", "start: 1.52s, packet_size: 200B")
    assert late != CASE and _step(late) is not None


BACKLOG = (RANDOM_CASES / "stamped-backlog-mix-short-fabric.yaml").read_text()
H2_BUFFER = "  - {ends: [H2, S1], buffer: 242}"


def _switch_step(text: str):  # type: ignore[no-untyped-def]
    checks = check_topology(load_topology_text(text, "stamped-backlog-mix-short-fabric.yaml"), 2.4, seed=1)
    return {c.key: c for c in checks}[("S1", "S3")].step  # f2 from 0.873 s


def test_a_switch_backlog_stamped_behind_its_wire_is_counted_over_its_wait() -> None:
    step = _switch_step(BACKLOG)
    assert step is not None
    assert abs(step.at_s - 0.8727945) < 1e-6 and step.hop == "S2"
    assert step.backlog_s > 0 and step.delay_s > step.backlog_s
    assert step.gained_pkts > step.room_pkts


def test_a_switch_on_the_shaper_sends_no_backlog_at_its_wire() -> None:
    shaper = BACKLOG.replace("options: {ecmp: true}", "options: {ecmp: true, queue_model: shaper}")
    assert shaper != BACKLOG
    assert _switch_step(shaper) is None


def test_a_small_backlog_upstream_is_sent_within_the_room() -> None:
    small = BACKLOG.replace(H2_BUFFER, "  - {ends: [H2, S1], buffer: 20}")
    assert small != BACKLOG
    assert _switch_step(small) is None


RAMP = (RANDOM_CASES / "ramp-drain-fall-tree.yaml").read_text()
S2_S5 = "  - {ends: [S2, S5], rate: 50Mbps, delay: 0.25ms}"


def _fall(text: str):  # type: ignore[no-untyped-def]
    """S5's law toward S2 in ramp-drain-fall-tree.yaml (topo/analysis/drain_fall.py), the rule alone: the seed's
    model decides only whether check.py keeps it."""
    return drain_falls(load_topology_text(text, "ramp-drain-fall-tree.yaml"), 4.0).get(("S5", "S2"))


def test_a_drain_that_falls_under_a_stamped_backlog_overfills_the_buffer() -> None:
    """H3's law holds 80 % of S5's 1,086-packet buffer, stamped at S5's 50 Mb/s; S2 passes it at first, then
    forwards the 20 Mb/s of H9's exit: S2's buffer from S5 gains 60 % of the backlog."""
    fall = _fall(RAMP)
    assert fall is not None and fall.feeders == ("H3",)
    assert fall.stamp_bps == fall.start_bps == 50e6 and fall.drain_bps == 20e6
    assert abs(fall.backlog_pkts - 0.8 * 1086) < 1
    assert abs(fall.gained_pkts - 0.6 * fall.backlog_pkts) < 1e-6 and fall.gained_pkts > fall.room_pkts


def test_the_fall_is_warned_before_the_run_at_every_seed() -> None:
    topo = load_topology_text(RAMP, "ramp-drain-fall-tree.yaml")
    for seed in (1, 2, 3):
        check = {c.key: c for c in check_topology(topo, 4.0, seed=seed)}[("S5", "S2")]
        assert check.fall is not None and not check.lossless


def test_no_backlog_or_no_fall_gains_nothing() -> None:
    """H3 no faster than S5's link: S5 passes what reaches it. H9's exit at S5's rate: S2's drain need not fall.
    The buffer the warning names: its room holds the gain."""
    h3 = "  - {ends: [H3, S5], delay: 0.5ms}"
    slow = RAMP.replace(h3, "  - {ends: [H3, S5], rate: 50Mbps, delay: 0.5ms}")
    h9 = "  - {ends: [H9, S1], rate: 20Mbps, delay: 0.1ms, buffer: 50ms}"
    fast = RAMP.replace(h9, h9.replace("20Mbps", "50Mbps"))
    assert slow != RAMP and fast != RAMP
    assert _fall(slow) is None and _fall(fast) is None
    fall = _fall(RAMP)
    assert fall is not None
    assert _fall(RAMP.replace(S2_S5, S2_S5[:-1] + f", buffer: {fall.need_pkts}}}")) is None
    assert _fall(RAMP.replace(S2_S5, S2_S5[:-1] + f", buffer: {fall.need_pkts - 1}}}")) is not None


HORIZON = (RANDOM_CASES / "long-horizon-multicast-branch.yaml").read_text()


def _lag(text: str):  # type: ignore[no-untyped-def]
    """S1's law toward S3 in long-horizon-multicast-branch.yaml (topo/analysis/stamp_lag.py), the rule alone."""
    return stamp_lags(load_topology_text(text, "long-horizon-multicast-branch.yaml"), 4.0).get(("S1", "S3"))


def _with_latency(ms: float) -> str:
    return HORIZON + f"\noptions: {{control_latency: {ms}ms}}\n"


def test_a_forecast_over_a_long_stamped_horizon_errs_by_more_than_the_buffer_holds() -> None:
    """H1's law holds 80 % of S1's 190-packet buffer, all of it in S1's queue toward S3 (m0's tree drains at 1 Mb/s);
    S3 reports at each packet of the drain (its 2.9 ms interval is shorter than a 1448 B frame at 1 Mb/s), and a
    command takes the 1 ms control latency: the packets queued meanwhile, one in 11.6 of the horizon's, keep the
    rate before a one-packet cut of k_p / 20, and their misplaced spacings walk the forecast further than S3's
    buffer holds above its target, even by one typical excursion."""
    topo = load_topology_text(HORIZON, "long-horizon-multicast-branch.yaml")
    lag = _lag(HORIZON)
    assert lag is not None and lag.feeders == ("H1",)
    assert abs(lag.backlog_pkts - 0.8 * 190) < 1e-6 and lag.drain_bps == 1e6
    assert lag.step_bps == topo.law[("S1", "S3")].k_p / 20
    assert abs(lag.gap_s - 1448 * 8 / 1e6) < 1e-12 and lag.latency_s == 1e-3
    walk = math.sqrt(lag.backlog_pkts * lag.latency_s / lag.gap_s) * (lag.drain_bps / (lag.drain_bps - lag.step_bps) - 1)
    expected = EXCURSION * walk
    assert abs(lag.gained_pkts - expected) < 1e-9 and walk > lag.room_pkts == 4


def test_the_long_horizon_is_warned_before_the_run_at_every_seed() -> None:
    """The model keeps S3's buffer from S1 below its target (a fluid's law swings by no whole packet), with less room
    left than the forecast's error; H1's buffer at S1 at its target: the horizon is there."""
    topo = load_topology_text(HORIZON, "long-horizon-multicast-branch.yaml")
    for seed in (1, 2, 3):
        check = {c.key: c for c in check_topology(topo, 4.0, seed=seed)}[("S1", "S3")]
        assert check.lag is not None and not check.lossless
        assert "control latency" in (check.warning() or "")


@given(st.floats(0.0, 1e4), st.floats(0.0, 3.0), st.floats(0.0, 3.0), st.floats(1e3, 1e9), st.floats(0.0, 1.0),
       st.floats(1e-3, 1.0))
def test_the_error_grows_with_the_latency_the_horizon_and_the_step(backlog: float, a: float, b: float, drain: float,
                                                                    step: float, floor: float) -> None:
    """No latency, no error: a command in force at its report spaces every packet as the ledger does. The share of a
    report gap's packets stamped at the rate before grows with the latency up to the whole gap, and the error with it,
    with the horizon and with the cut; a cut is never below the law's floor (above 0: controlplane/params.py)."""
    step_bps, floor_bps = step * drain, floor * drain
    lo, hi = sorted((a, b))
    assert walk_pkts(backlog, 0.0, drain, step_bps, floor_bps) == 0.0
    assert walk_pkts(backlog, lo, drain, step_bps, floor_bps) <= walk_pkts(backlog, hi, drain, step_bps, floor_bps)
    assert walk_pkts(backlog, hi, drain, step_bps, floor_bps) == walk_pkts(backlog, min(hi, 1.0), drain, step_bps, floor_bps)
    assert walk_pkts(backlog / 2, hi, drain, step_bps, floor_bps) <= walk_pkts(backlog, hi, drain, step_bps, floor_bps)
    assert walk_pkts(backlog, hi, drain, step_bps / 2, floor_bps) <= walk_pkts(backlog, hi, drain, step_bps, floor_bps)
    deepest = walk_pkts(backlog, hi, drain, 2 * drain, floor_bps)  # a cut through the floor stops there
    assert deepest == (EXCURSION * math.sqrt(backlog * min(hi, 1.0)) * (drain / floor_bps - 1) if backlog * hi > 0 else 0.0)


def test_no_latency_no_lag() -> None:
    """The same file with the control latency near none (its gains derived again) finds nothing at S1."""
    assert _lag(_with_latency(0.01)) is None


def test_a_buffer_the_warning_names_holds_the_error() -> None:
    lag = _lag(HORIZON)
    assert lag is not None
    s1_s3 = "  - {ends: [S1, S3], rate: 10Mbps}"
    assert s1_s3 in HORIZON
    assert _lag(HORIZON.replace(s1_s3, f"  - {{ends: [S1, S3], rate: 10Mbps, buffer: {lag.need_pkts}}}")) is None
    assert _lag(HORIZON.replace(s1_s3, f"  - {{ends: [S1, S3], rate: 10Mbps, buffer: {lag.need_pkts - 1}}}")) is not None
