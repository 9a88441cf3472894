"""Whether a real-time run kept up (topo/keepup.py): the verdict from the run's wake-up lateness."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topo.keepup import LATE_LIMIT_NS, STALL_LIMIT_NS, keepup_summary, verdict
from topo.tcp_kernel import realtime_note


def test_punctual_wakeups_kept_up() -> None:
    rt = keepup_summary([100_000] * 500)
    assert rt["kept_up"] and verdict(rt) == "yes" and rt["wakeups"] == 500 and rt["late_over_limit"] == 0


def test_one_long_stall_is_enough_to_fall_behind() -> None:
    rt = keepup_summary([100_000] * 500 + [STALL_LIMIT_NS + 1_000_000])
    assert not rt["kept_up"] and verdict(rt).startswith("no: a ") and "stall" in verdict(rt)


def test_often_late_wakeups_fall_behind() -> None:
    rt = keepup_summary([100_000] * 90 + [2 * LATE_LIMIT_NS] * 10)
    assert not rt["kept_up"] and "late (p99)" in verdict(rt)


def test_no_measure_no_verdict() -> None:
    assert verdict(None) == verdict({}) == verdict(keepup_summary([])) == "-"


@given(st.lists(st.integers(0, 2 * STALL_LIMIT_NS), min_size=1, max_size=200))
def test_verdict_is_yes_exactly_within_both_limits(late: list[int]) -> None:
    rt = keepup_summary(late)
    within = max(late) <= STALL_LIMIT_NS and sorted(late)[min(len(late) - 1, int(0.99 * len(late)))] <= LATE_LIMIT_NS
    # (the summary rounds to µs: a value within a µs of a limit may go either way)
    if all(abs(x - lim) > 1000 for x in late for lim in (LATE_LIMIT_NS, STALL_LIMIT_NS)):
        assert rt["kept_up"] == within


def test_netns_rows_say_whether_they_kept_up() -> None:
    behind = {"realtime": {**keepup_summary([STALL_LIMIT_NS * 2]), "load_1min": 7.26}}
    assert realtime_note(behind, "netns").startswith("7.3, **behind** (a ")
    fine = {"realtime": {**keepup_summary([1000]), "load_1min": 1.0}}
    assert realtime_note(fine, "netns") == "1.0, kept up"
    assert realtime_note(fine, "sim") == "-"
