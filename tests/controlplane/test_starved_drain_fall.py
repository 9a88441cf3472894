"""The start-up brake's drain when the drain's window holds a starved report and the buffer holds no more than
this hop sent it since the last report (controlplane/forecast.py, ``QueueForecast._lower_bound_pps``): the buffer
then drains whatever reaches it, so a stretch of fewer departures is this hop's own spacing (a few large frames
among small ones, or its own cut seen back), not a fall of what the buffer takes, and the brake keeps the window's
drain. A buffer holding a backlog (more than a gap brought) or never starved: the fall is the brake's drain."""

from __future__ import annotations

from controlplane.forecast import IDLE_PKTS, QueueForecast

MS = 1_000_000
GAP_NS = 1_600_000  # the report gap (fail-2's S1 <- S2: 1.59 ms)
PPS = 17_000  # this hop's packets, as the buffer drains them
DIPPED_PPS = 14_000  # over the newest gap only: 82 % of it (fail-2: 14,801 of 16,825 at 0.957 s)


def feed(occupancies: list[int]) -> QueueForecast:
    """Reports every GAP_NS, the buffer holding ``occupancies[k]`` at report k, its departures at PPS and over the
    last gap at DIPPED_PPS; this hop's own queue holds 2 packets at its rate."""
    f = QueueForecast()
    t, drained, last_ns = 0, 0, 0
    for k, occ in enumerate(occupancies):
        rate = DIPPED_PPS if k == len(occupancies) - 1 else PPS
        t += GAP_NS
        while last_ns + 1e9 / rate <= t:
            last_ns += round(1e9 / rate)
            drained += 1
        f.update(t, occ, drained + 2, drained, PPS, drained=drained, drained_ns=last_ns)
    return f


def reports(starved_at: int | None, last: int = 5) -> list[int]:
    """0.2 s of reports finding 3-5 packets, one of them (``starved_at``) finding the buffer starved, the last ``last``
    (a gap brings about 22 packets at DIPPED_PPS)."""
    occ = [3 + k % 3 for k in range(125)]
    if starved_at is not None:
        occ[starved_at] = IDLE_PKTS
    occ[-1] = last
    return occ


def brake_drain_pps(f: QueueForecast) -> float:
    """The start-up brake's drain the law gets from ``f`` (packets/s: its bits over one packet's)."""
    return f.law_forecast(f.forecast_pkts, 18, 8).brake().drain_bps / 8


def test_a_dip_of_the_drain_of_a_buffer_passing_what_it_gets_is_not_the_brakes_drain() -> None:
    """fail-2 of issue 46 (tests/topo/random_cases/starved-drain-dip-tree.yaml): S2's law toward S1, whose
    29-packet buffer drained all S2 sent at 1-5 packets, read one gap of 23 departures where 27 were usual as a
    fall, its ramp's brake cut from 44.4 to 39.3 Mb/s, read its own cut back as the next fall (35.7 Mb/s), and
    climbed back 0.6 Mb/s a report while S5 behind it still sent 44 Mb/s into S2's 66-packet buffer: 43 lost."""
    f = feed(reports(starved_at=110))  # starved 15 reports (24 ms) before the dip: within the 0.1 s window
    assert brake_drain_pps(f) > 0.95 * PPS  # the brake keeps the window's drain, a higher lower bound ...
    assert f.guessed_fall and f.expected_pps < 0.9 * PPS  # ... while the forecast still follows the dip
    assert f.starved_in_window and f.passing


def test_the_same_dip_behind_a_backlog_is_the_brakes_drain() -> None:
    """The buffer holds more than the gap brought (the head-of-line fabric: a spine's packets wait in a leaf's FIFO
    behind another's, and its drain falls while its buffer there gains): the fall is what the buffer takes."""
    f = feed(reports(starved_at=110, last=40))
    assert f.starved_in_window and not f.passing
    assert brake_drain_pps(f) < 0.9 * PPS


def test_the_same_dip_of_a_buffer_never_starved_in_the_window_is_the_brakes_drain() -> None:
    f = feed(reports(starved_at=None))
    assert not f.starved_in_window and f.guessed_fall
    assert brake_drain_pps(f) < 0.9 * PPS
