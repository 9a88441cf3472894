"""The forecast of a buffer whose drain is known only as a lower bound, while this hop's queue holds packets BMv2 has
stamped already (controlplane/forecast.py, ``QueueForecast._starved_forecast`` and ``_backlog_drain_pps``; issue 46,
tests/topo/random_cases/committed-starved-*.yaml).

A starved buffer drains all that reaches it: its drain is what this hop sent, not what it takes. What it takes is
known from the gaps it held a backlog over (``busy_pps``). On a starved report the forecast is what the stamped queue
will leave in the buffer at that drain, the buffer never below empty; on a report that finds a backlog while the
drain's window still holds a starved report, the drain is the backlog's, not the window's mix of the two."""

from __future__ import annotations

import pytest

from controlplane.forecast import IDLE_PKTS, QueueForecast

MS = 1_000_000
GAP_NS = 5 * MS  # a report every 5 ms
SOURCE_PPS = 1000  # what reaches this hop's queue
CAP_PPS = 800  # what the downstream buffer takes


class Line:
    """This hop's BMv2 queue (a packet's departure is fixed when it is queued: ``max(now, last + 1 / rate)``) in front
    of a downstream buffer that serves ``cap_pps``, no link delay; the forecast fed a report every ``GAP_NS``."""

    def __init__(self, cap_pps: float = CAP_PPS) -> None:
        self.f = QueueForecast()
        self.cap_ns = 1e9 / cap_pps
        self.t = 0
        self.last_stamp = 0.0
        self.stamps: list[float] = []  # departures from this hop, in order
        self.served: list[float] = []  # departures from the downstream buffer, in order
        self.forecasts: list[tuple[int, float]] = []  # (occupancy, forecast) at each report

    def run(self, seconds: float, rate_pps: float) -> None:
        """``seconds`` of reports with this hop's queue at ``rate_pps``."""
        spacing = 1e9 / rate_pps
        for _ in range(round(seconds * 1e9 / GAP_NS)):
            start, self.t = self.t, self.t + GAP_NS
            arrival = start + 1e9 / SOURCE_PPS
            while arrival <= self.t:
                stamp = max(arrival, self.last_stamp + spacing)
                self.stamps.append(stamp)
                self.last_stamp = stamp
                free = self.served[-1] if self.served else 0.0
                self.served.append(max(stamp, free) + self.cap_ns)
                arrival += 1e9 / SOURCE_PPS
            self.report(spacing)

    def report(self, spacing: float) -> None:
        fwd = len(self.stamps)
        deq = sum(1 for s in self.stamps if s <= self.t)
        arrived = deq
        drained = sum(1 for s in self.served if s <= self.t)
        occupancy = arrived - drained
        last_ns = int(max((s for s in self.served if s <= self.t), default=0.0))
        pkts = self.f.update(self.t, occupancy, fwd, deq, round(1e9 / spacing), drained=drained,
                             drained_ns=last_ns if drained else 0)
        self.forecasts.append((occupancy, pkts))

    def peak_ahead(self) -> int:
        """The downstream buffer's largest occupancy from now on (what the queued packets will do to it)."""
        events = sorted([(s, 1) for s in self.stamps] + [(s, -1) for s in self.served])
        occupancy = peak = 0
        for when, step in events:
            occupancy += step
            if when > self.t:
                peak = max(peak, occupancy)
        return peak


def starved_then_raised() -> Line:
    """0.1 s at the source's rate (the buffer fills at 200 packets/s over what it takes: a backlog), 0.1 s cut to
    500 packets/s (the buffer empties and starves), then 2000 packets/s for 50 ms: stamped behind the 500 packets/s
    ones, which leave first while the buffer stays starved."""
    line = Line()
    line.run(0.1, SOURCE_PPS)
    line.run(0.1, 500)
    line.run(0.05, 2000)
    return line


def test_a_starved_report_forecasts_what_the_stamped_queue_will_leave_in_the_buffer() -> None:
    line = starved_then_raised()
    occupancy, forecast = line.forecasts[-1]
    assert occupancy <= IDLE_PKTS  # starved: what it drains is what this hop sent
    assert line.f.busy_pps == pytest.approx(CAP_PPS, rel=0.05)  # what it takes, from the backlog
    truth = line.peak_ahead()  # the 2000 packets/s stamps, arriving after the 500 packets/s ones
    assert truth > 10
    assert forecast == pytest.approx(truth, abs=3)
    # more than the whole queue's excess (O + Q - mu h): the buffer empties before the fast stamps come
    f = line.f
    assert forecast > occupancy + f.queued - f.busy_pps * f.horizon_s + 5


def test_a_starved_report_without_a_backlog_seen_forecasts_its_occupancy() -> None:
    """Nothing is known of what the buffer takes (it never held a backlog): the forecast is the occupancy."""
    line = Line(cap_pps=5000)  # drains everything the source sends: never a backlog
    line.run(0.1, SOURCE_PPS)
    line.run(0.05, 2000)
    assert line.f.busy_pps == 0.0
    occupancy, forecast = line.forecasts[-1]
    assert occupancy <= IDLE_PKTS and forecast == occupancy


def test_stamps_the_buffer_takes_forecast_its_occupancy() -> None:
    """Starved behind a queue stamped below what the buffer takes: nothing to add."""
    line = Line()
    line.run(0.1, SOURCE_PPS)
    line.run(0.15, 500)
    occupancy, forecast = line.forecasts[-1]
    assert occupancy <= IDLE_PKTS and line.f.busy_pps > 0
    assert forecast == occupancy


def test_a_backlog_after_a_starved_report_is_forecast_at_the_backlogs_drain() -> None:
    """The fast stamps arrive: the buffer holds a backlog while the drain's window still holds the starved reports.
    The window's drain mixes what this hop sent the starved buffer (500 packets/s) with what it takes; the forecast
    and the law's drain are the backlog's."""
    line = starved_then_raised()
    line.run(0.07, CAP_PPS)
    occupancy, forecast = line.forecasts[-1]
    f = line.f
    assert occupancy > IDLE_PKTS and f.starved_in_window
    assert f.expected_pps < 0.9 * CAP_PPS  # the window's mix
    law = f.law_forecast(forecast, 100, 8)
    assert law.drain_bps / 8 == pytest.approx(CAP_PPS, rel=0.05)
    assert forecast == pytest.approx(line.peak_ahead(), abs=3)
