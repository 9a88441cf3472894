"""The downstream buffer's forecast on BMv2's queues (controlplane/forecast.py)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from controlplane import native
from controlplane.forecast import (
    COMMAND_SHARE,
    DRAIN_FALL_PKTS,
    DRAIN_SHIFT_PPS,
    DRAIN_SHIFT_SHARE,
    DRAIN_SHIFT_SIGMAS,
    DRAIN_SHORT_PKTS,
    DRAIN_SPREAD_GAPS,
    DRAIN_WINDOW_S,
    IDLE_PKTS,
    SCHEDULE_BOUND_S,
    WINDOW_COMPACT,
    QueueForecast,
    drain_noise,
    round_even,
    schedule_floor_pps,
)

MS = 1_000_000


def steady(f: QueueForecast, reports: int, pps: int, occ: int, queued: int, t0: int = 0, fwd0: int = 0,
           period_ms: int = 10) -> int:
    """``pps`` in and out of this hop's queue (``queued`` packets); the downstream buffer holds ``occ``."""
    per = pps * period_ms // 1000
    t, fwd = t0, fwd0
    for _ in range(reports):
        f.update(t, occ, fwd + queued, fwd, pps)
        t += period_ms * MS
        fwd += per
    return t


def test_at_equilibrium_the_forecast_is_the_occupancy() -> None:
    f = QueueForecast()
    steady(f, 300, 200, 140, 140)
    assert f.queued == 140
    assert f.horizon_s == pytest.approx(140 / 200, abs=0.02)  # last_sent rebuilt: Q / r
    assert f.drain_pps == pytest.approx(200, abs=1)
    assert f.forecast_pkts == pytest.approx(140, abs=3)


def test_a_slower_drain_downstream_raises_the_forecast_before_the_buffer_rises() -> None:
    f = QueueForecast()
    t = steady(f, 300, 200, 140, 140)
    # the downstream buffer now drains 150 of our 200 packets/s: it gains 0.5 packet per report
    fwd, occ = 300 * 2, 140.0
    for _ in range(30):
        occ += 0.5
        f.update(t, int(occ), fwd + 140, fwd, 200)
        t += 10 * MS
        fwd += 2
    assert f.drain_pps == pytest.approx(150, abs=10)  # the short window took over
    assert f.forecast_pkts > occ + 20  # about 50 packets/s over the 0.7 s horizon


def test_an_empty_queue_has_no_horizon() -> None:
    f = QueueForecast()
    f.update(0, 5, 10, 10, 100)
    f.update(10 * MS, 5, 11, 11, 100)
    assert f.queued == 0 and f.horizon_s == 0


def test_schedule_floor_bounds_the_schedule_a_cut_can_stamp() -> None:
    link = 250.0
    for q in (0, 10, 140, 300):
        for h, n in ((0.0, 1.0), (q / link, 5.0), (q / link + 1.0, 20.0)):
            r = schedule_floor_pps(q, link, h, n)
            slack = (q + n) / link + SCHEDULE_BOUND_S - h  # the bound, less what is stamped already
            assert n / r == pytest.approx(n / link + COMMAND_SHARE * (slack - n / link))  # a share of it
            assert h + n / r < (q + n) / link + SCHEDULE_BOUND_S
            assert schedule_floor_pps(q, link, h, n / 2) < r or n == 1  # fewer arrivals: a deeper cut
    assert schedule_floor_pps(10, 0) == 0


def test_a_schedule_already_past_the_bound_is_left_to_the_caller() -> None:
    assert schedule_floor_pps(10, 250.0, 10 / 250 + SCHEDULE_BOUND_S + 0.5, 3.0) is None


def test_a_slow_control_channel_expects_more_arrivals_before_the_next_command() -> None:
    f, g = QueueForecast(), QueueForecast()
    t = 0
    for i in range(100):  # the same reports (reporter's clock), g's reach the agent in bunches
        f.update(t, 140, 280 + 2 * i, 140 + 2 * i, 200, recv_ns=t)
        g.update(t, 140, 280 + 2 * i, 140 + 2 * i, 200, recv_ns=t + (150 * MS if i % 20 == 0 else 0))
        t += 10 * MS
    assert f.arrival_pps == pytest.approx(g.arrival_pps)
    assert g.slow_gap_s > 5 * f.slow_gap_s
    assert g.arrivals_before_next_command() > 2 * f.arrivals_before_next_command()


def test_a_starved_buffer_is_not_forecast_to_fill() -> None:
    """Its measured drain is only what this hop sends: read as its capacity, the queued packets
    would look like an overflow to come and the law would hold the hop back (a trap)."""
    f = QueueForecast()
    steady(f, 100, 20, 1, 150)  # 150 queued here, 20 packets/s arriving, the buffer downstream empty
    assert f.forecast_pkts == 1


def test_the_laws_forecast_says_when_the_buffer_was_starved() -> None:
    """The law reads the drain of a starved buffer as a floor of what it can take (controlplane/alinea.py,
    settled_base), not as its capacity."""
    f = QueueForecast()
    steady(f, 100, 20, 1, 150)
    assert f.law_forecast(f.forecast_pkts, 100, 8000).starved
    g = QueueForecast()
    steady(g, 100, 200, 140, 140)
    assert not g.law_forecast(g.forecast_pkts, 200, 8000).starved


def test_the_arrivals_before_the_next_command_follow_the_measured_arrival_rate() -> None:
    f = QueueForecast()
    steady(f, 100, 200, 140, 140)  # 200 packets/s in, reports every 10 ms
    assert f.gap_s == pytest.approx(0.01, rel=0.01)
    assert f.arrival_pps == pytest.approx(200, rel=0.02)
    assert f.arrivals_before_next_command() == pytest.approx(4.0, rel=0.05)


@pytest.mark.cpu_only
def test_a_report_after_a_stall_scales_the_damping_down() -> None:
    """A stall of 60 ms lets the buffer drain six reports' worth; read as one report's change, the
    damping term would answer with six times the kick (seen in netns: R_max at two hops at once)."""
    f = QueueForecast()
    t = steady(f, 50, 200, 140, 140)
    assert f.span_scale() == pytest.approx(1.0)
    f.update(t + 50 * MS, 130, 500 * 2 + 140, 500 * 2, 200)  # the next report comes 60 ms after the last
    assert f.span_scale() == pytest.approx(10 / 60, rel=0.15)


def test_the_horizon_does_not_keep_an_old_error() -> None:
    """Rates that reached the queue later than the agent set them (here: the agent believed 100
    packets/s while the queue sent 200) must leave the rebuilt schedule once those packets have
    left: BMv2's schedule is the queued packets' spacings, nothing older."""
    f = QueueForecast()
    t, fwd = 0, 0
    for pps in [100] * 50 + [200] * 300:  # the queue sends 200/s throughout; 140 queued
        f.update(t, 140, fwd + 140, fwd, pps)
        t += 10 * MS
        fwd += 2
    assert f.horizon_s == pytest.approx(140 / 200, abs=0.02)


def test_a_noisy_drain_is_not_read_as_a_fall() -> None:
    """At 7,500 packets/s with one-gap short windows, a packet more or less in the reported
    occupancy is noise, not a capacity drop: the drain must not read low."""
    f = QueueForecast()
    t, fwd = 0, 0
    for i in range(400):
        f.update(t, 140 + (i % 2), fwd + 140, fwd, 7500)
        t += 10 * MS
        fwd += 75
    assert f.drain_pps == pytest.approx(7500, rel=0.002)


def departures(spacings_ns: list[int], t0: int = 0) -> list[int]:
    """The times the downstream buffer's packets leave, one per spacing after ``t0``."""
    out, t = [], t0
    for sp in spacings_ns:
        t += sp
        out.append(t)
    return out


def feed_exact(f: QueueForecast, leave: list[int], until_ns: int, pps: int = 150, queued: int = 140,
               occ: int = 140, period_ns: int = 10 * MS) -> list[float]:
    """Reports every ``period_ns`` carrying the drain the reporter saw: how many of ``leave`` have
    left and when the last of them did. Returns the drain after each report."""
    t, fwd, seen = period_ns, 0, []
    while t <= until_ns:
        gone = [x for x in leave if x <= t]
        f.update(t, occ, fwd + queued, fwd, pps, drained=len(gone), drained_ns=gone[-1] if gone else 0)
        seen.append(f.drain_pps)
        t += period_ns
        fwd = len(gone)
    return seen


def test_the_exact_drain_follows_a_capacity_drop_at_the_first_report_after_it() -> None:
    """7,500 packets/s leave (capacity-drop at x50), then the link behind the buffer falls to 6,250
    packets/s: the first report after the drop holds some 30 late departures and the drain reads
    the new rate there, where counts needed the buffer to gain packets first (docs/background/alinea.md, "The
    drain, exactly")."""
    before = departures([133_333] * 7500)
    after = departures([160_000] * 400, before[-1])
    f = QueueForecast()
    feed_exact(f, before + after, before[-1], pps=7500, period_ns=5 * MS)
    assert f.drain_pps == pytest.approx(7500, rel=0.01)
    seen = feed_exact(QueueForecast(), before + after, before[-1] + 6 * MS, pps=7500, period_ns=5 * MS)
    assert seen[-1] == pytest.approx(6250, rel=0.01)


def test_the_exact_drain_does_not_read_the_downstream_schedule_as_a_fall() -> None:
    """On BMv2's queues the downstream hop's packets leave at spacings it stamped up to a second
    before: single gaps of a third of the mean rate come and go. Only a fall beyond that spread
    counts (seen: one 53 packets/s gap of a 150 packets/s drain cut the hop upstream to 7)."""
    spacings = [6 * MS, 7 * MS, 9 * MS, 5 * MS, 8 * MS, 7 * MS, 6 * MS, 9 * MS]  # mean 7.125 ms
    leave = departures(spacings * 60)
    seen = feed_exact(QueueForecast(), leave, leave[-1])
    assert min(seen[50:]) > 0.9 * 1e9 / 7.125e6
    # a steady stream (no spread at all) with one rate step of the hop downstream: one late packet
    leave = departures([6_600_000] * 300 + [8_200_000] + [6_600_000] * 100)
    seen = feed_exact(QueueForecast(), leave, leave[-1])
    assert min(seen[50:]) > 0.9 * 1e9 / 6.6e6


def test_a_fall_of_the_drain_is_expected_to_last_as_long_again_as_it_has_lasted() -> None:
    """150 packets/s leave, then 60/s. Over a horizon of about a second the forecast at first
    expects the fall to end (a software switch short of CPU, not only a capacity drop), then, as it
    lasts, expects it over more and more of the horizon, until it is believed over all of it
    (docs/background/alinea.md, "On BMv2's egress queues")."""
    pps, queued = 150, 150  # a horizon of a second
    before = departures([int(1e9 / 150)] * 600)
    after = departures([int(1e9 / 60)] * 120, before[-1])
    f = QueueForecast()
    t, fwd, expected, lasted = 10 * MS, 0, [], []
    leave = before + after
    while t <= after[-1]:
        gone = [x for x in leave if x <= t]
        f.update(t, 140, fwd + queued, fwd, pps, drained=len(gone), drained_ns=gone[-1] if gone else 0)
        assert f.guessed_fall == f._falling  # what the law is told (no forecast gain for its cuts)
        if t > before[-1] and f._falling:  # the fall is followed
            assert f.drain_pps <= f.expected_pps <= 151  # between the fallen drain and the one before
            expected.append(f.expected_pps)
            lasted.append((gone[-1] - f._fall_start_ns) / 1e9)
            # (this queue of 150 at 150/s sends 60/s: its stamps lag its departures, and the drain over that counts)
            plain = 140 + queued - f.expected_pps * f.horizon_s
            assert f.forecast_pkts == pytest.approx(plain + f.expected_pps * f.stamp_lag_s, abs=1)
        t += 10 * MS
        fwd = len(gone)
    assert expected, "the fall was never followed"
    assert expected[0] > 100  # first believed only over the short time it has lasted
    assert all(b <= a + 1e-9 for a, b in zip(expected, expected[1:]))  # then over more of the horizon
    assert expected[-1] == pytest.approx(60, rel=0.1) and lasted[-1] > 0.5  # at last over all of it


def ramp_departures(rates_pps: list[float], t0: int = 0) -> list[int]:
    """Departures at a rate that changes packet by packet (``rates_pps``, one per packet)."""
    return departures([int(1e9 / r) for r in rates_pps], t0)


def test_the_exact_drain_follows_a_fall_that_ends_a_ramp() -> None:
    """At start-up the hop downstream forwards at its R_max until the buffer behind it fills, then is
    cut: the drain rises, then falls. The rise is a trend, not noise, and must not hide the fall
    (paper-5router at 100 Mb/s with 1 ms links: R1 kept reading R2's drain at R2's R_max while R2
    was cut, and R2's buffer overflowed; docs/background/analysis.md, "Reading the map")."""
    up = [3000 + 9000 * i / 1500 for i in range(1500)]  # 3,000 to 12,000 packets/s
    hold = [12000.0] * 600
    down = [12000 - 4500 * i / 700 for i in range(700)]  # cut toward 7,500 packets/s
    leave = ramp_departures(up + hold + down)
    seen = feed_exact(QueueForecast(), leave, leave[-1], pps=12500, queued=30, occ=60, period_ns=3 * MS)
    assert seen[-1] < 9000  # the fall is followed, where the long window still reads ~11,000


def test_drain_noise_is_the_spread_of_noise_and_not_of_a_trend() -> None:
    assert drain_noise([]) == drain_noise([5.0]) == 0.0
    assert drain_noise([7.0] * 10) == 0.0
    trend = [100.0 * i for i in range(20)]  # spread 577, successive steps of 100
    assert drain_noise(trend) == pytest.approx(100 / 2 ** 0.5)
    alternating = [100.0, 200.0] * 10  # noise: spread 50, the same seen either way
    assert drain_noise(alternating) == pytest.approx(100 / 2 ** 0.5)


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=2, max_size=40),
       st.floats(min_value=-1e6, max_value=1e6))
def test_drain_noise_does_not_move_with_the_level(rates: list[float], shift: float) -> None:
    assert drain_noise([r + shift for r in rates]) == pytest.approx(drain_noise(rates), rel=1e-6, abs=1e-3)


def rescanned_chunks(hist: list[tuple[int, int]]) -> list[tuple[float, int]]:
    """The drain's stretches as found by scanning the whole window back from its newest entry (the
    definition the stored stretches must give, whatever the order the window filled and emptied in)."""
    out: list[tuple[float, int]] = []
    end = len(hist) - 1
    for j in range(end - 1, -1, -1):
        (t1, d1), (t0, d0) = hist[end], hist[j]
        if d1 - d0 >= DRAIN_FALL_PKTS and t1 > t0:
            out.append(((d1 - d0) * 1_000_000_000 / (t1 - t0), t0))
            end = j
    return out


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 12), st.integers(0, 12), st.integers(0, 30),
                          st.integers(0, 9), st.integers(50, 2000), st.booleans()), min_size=1, max_size=150))
def test_the_stored_drain_stretches_are_those_of_a_rescan_of_the_window(
        steps: list[tuple[int, int, int, int, int, int, bool]]) -> None:
    """Reports of any pace, drain and rate (with the exact drain or the counted one, the horizon moving
    the window's length): after each, the stretches and the ledger are what a rescan of them gives."""
    f = QueueForecast()
    t = fwd = deq = drained = 0
    last_ts = 0
    for gap_ms, arrivals, departures, occ, drained_now, pps, exact in steps:
        t += gap_ms * MS
        fwd += arrivals
        deq += min(departures, fwd - deq)
        if drained_now:
            drained += drained_now
            last_ts = t - drained_now * 100_000
        f.update(t, occ, fwd, deq, pps, drained=drained if exact else None, drained_ns=last_ts if exact else 0)
        chunks = rescanned_chunks(f._hist[f._first:])
        for count in range(1, DRAIN_SPREAD_GAPS + 3):  # the newest of `count` stretches, or None
            assert f._newest_stretch(len(f._hist) - 1, count) == (chunks[0] if len(chunks) >= count else None)
        assert f._chunk_rates(len(f._hist) - 1) == chunks
        assert len(f._stretch_starts) == len(f._stretch_rates) == len(f._hist)  # a stretch's two lists, aligned
        head = f._ledger_first  # the ledger: the lists' entries from there on
        assert f._stamped == sum(f._counts[head:]) == f.queued
        assert len(f._counts) == len(f._spacings)
        # each entry's time, kept beside it, is its count times its spacing (the schedule sums them)
        assert f._products[head:] == [c * s for c, s in zip(f._counts[head:], f._spacings[head:])]


def _reports(f: QueueForecast, steps: list[tuple[int, int, int, int, int]]) -> Iterator[tuple[int, int, int, int]]:
    """Drive ``f`` with ``steps`` (gap in ms, arrivals, departures, the departures' counter stepping back, pps), one
    report each; after each, yield (its time, the packets queued, the packets it brought, its pps): the first
    report brings the whole queue."""
    t = fwd = deq = 0
    for n, (gap_ms, arrivals, departures, back, pps) in enumerate(steps):
        t += gap_ms * MS
        fwd += arrivals
        deq = max(0, deq + min(departures, fwd - deq) - back)
        f.update(t, 5, fwd, deq, pps)
        yield t, fwd - deq, (fwd - deq if n == 0 else arrivals), pps


@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from([0, 0, 0, 1, 2, 5]), st.integers(0, 6),
                          st.sampled_from([0, 0, 0, 0, 1, 3]), st.sampled_from([0, 7, 800, 1500, 8000])),
                min_size=1, max_size=120))
def test_the_schedule_is_that_of_a_ledger_of_every_report(steps: list[tuple[int, int, int, int, int]]) -> None:
    """Reports that bring no packet (most of a fluid model's) leave no entry in the ledger, yet the
    schedule is, to the bit, that of a ledger of every report's arrivals at its spacing: the newest
    ``Q`` packets at the spacings they were queued with, and packets beyond the ledger (the departures'
    counter stepping back) at the spacing of its oldest entry, empty or not."""
    f = QueueForecast()
    counts: list[int] = []
    spacings: list[float] = []
    stamped = 0
    for t, queued, new, pps in _reports(f, steps):
        counts.append(new)
        spacings.append(1_000_000_000 / pps if pps > 0 else 0.0)
        stamped += new
        extra = stamped - queued
        while extra > 0 and counts:
            if extra < counts[0]:
                counts[0] -= extra
                extra = 0
                break
            extra -= counts.pop(0)
            spacings.pop(0)
        if extra < 0:
            spacings.insert(0, spacings[0] if spacings else 0.0)
            counts.insert(0, -extra)
        stamped = queued
        assert f.last_sent_ns == t + int(sum(c * s for c, s in zip(counts, spacings)))
        assert f._counts[f._ledger_first:] == [c for c in counts if c]


def _folded(products: list[float]) -> float:
    """The products added one by one from 0.0, oldest first (the schedule's sum as specified)."""
    total = 0.0
    for p in products:
        total = total + p
    return total


@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from([0, 0, 1, 2, 3, 7]), st.sampled_from([0, 0, 0, 1, 2, 9]),
                          st.sampled_from([0, 0, 0, 0, 0, 0, 1, 4]), st.sampled_from([0, 7, 800, 1333, 8000, 3001])),
                min_size=1, max_size=400))
@example([(1, 1, 1, 0, 800)] * 200)  # an entry in, one out: the spent entries reach WINDOW_COMPACT
@example([(1, 2, 0, 0, 1333), (1, 2, 0, 0, 3001), (2, 0, 3, 0, 8000)] * 60 + [(1, 0, 0, 4, 7), (1, 1, 0, 0, 800)])
def test_the_schedule_summed_on_from_its_last_sum_is_the_whole_ledgers_sum_to_the_bit(
        steps: list[tuple[int, int, int, int, int]]) -> None:
    """The schedule goes on from its last sum while no packet leaves, and the ledger's spent entries stay in its
    lists until they are half of them (``_ledger_first``, ``_fold``): after every report, stalled or not, its
    ledger and schedule are, to the bit, those of a ledger kept as a list whose oldest entries are deleted as
    their packets leave, its products summed from 0.0 oldest first (``_schedule_ns`` as it was before: the
    reference). Runs of reports without departures (most of a queue's in the head-of-line fabric) and long
    ledgers that reach ``WINDOW_COMPACT`` included."""
    f = QueueForecast()
    counts: list[int] = []
    spacings: list[float] = []
    leads: list[float] = []
    tail = -1.0
    stamped = 0
    for t, queued, new, pps in _reports(f, steps):
        spacing = 1_000_000_000 / pps if pps > 0 else 0.0
        if new:  # the reference ledger: non-empty entries, the oldest spacing after each gone one kept in leads
            leads.append(spacing if tail < 0 else tail)
            tail = -1.0
            counts.append(new)
            spacings.append(spacing)
        elif tail < 0:
            tail = spacing
        stamped += new
        extra = stamped - queued
        while extra > 0 and counts:
            if extra < counts[0]:
                counts[0] -= extra
                leads[0] = spacings[0]
                extra = 0
                break
            extra -= counts.pop(0)
            spacings.pop(0)
            leads.pop(0)
        if extra > 0:
            tail = -1.0
        elif extra < 0:
            oldest = leads[0] if leads else (0.0 if tail < 0 else tail)
            counts.insert(0, -extra)
            spacings.insert(0, oldest)
            leads.insert(0, oldest)
        stamped = queued
        head = f._ledger_first
        assert f._counts[head:] == counts and f._spacings[head:] == spacings and f._leads[head:] == leads
        assert f._fold == _folded([c * s for c, s in zip(counts, spacings)])  # floats: == is to the bit here
        assert f.last_sent_ns == t + int(f._fold)
        assert head < WINDOW_COMPACT or 2 * head < len(f._counts)


# The lazy walk against the rescan, both from the source: a compiled class cannot be subclassed
# here (tests/controlplane/test_native.py compares the compiled build with the source).
SourceForecast = native.source_module("forecast").QueueForecast


class RescanningForecast(SourceForecast):  # type: ignore[misc,valid-type]
    """The exact drain's fall as first written: every stretch of the window rescanned and the spread
    of the earlier ones computed at every report (the reference of the lazy walk)."""

    def _follow_exact_fall(self) -> None:
        chunks = rescanned_chunks(self._hist[self._first:])
        if len(chunks) < DRAIN_SPREAD_GAPS + 1:
            self._falling = False
            return
        (short, start_ns), earlier = chunks[0], [r for r, _ in chunks[1:]]
        spread = 0.0 if self._falling else drain_noise(earlier)
        was_falling = self._falling
        self._falling = short < self.drain_pps - max(DRAIN_SHIFT_PPS, DRAIN_SHIFT_SHARE * self.drain_pps,
                                                     DRAIN_SHIFT_SIGMAS * spread)
        if not self._falling:
            return
        if not was_falling:
            self._fall_start_ns = start_ns
        self.expected_pps = self._over_horizon(short, self.drain_pps,
                                               (self._hist[-1][0] - self._fall_start_ns) / 1_000_000_000)
        self.drain_pps = short


@given(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 20), st.integers(0, 12), st.integers(0, 12),
                          st.integers(0, 30), st.integers(50, 2000)), min_size=1, max_size=12))
def test_the_fall_read_from_the_first_stretches_is_that_of_the_whole_window(
        segments: list[tuple[int, int, int, int, int, int]]) -> None:
    """Reports in segments of a steady pace, drain and rate (a fall between two, or a rise), with the
    exact drain: the forecast that walks only the newest stretches unless a fall is possible
    decides, drains and forecasts exactly (the same floats) as one that rescans the window and
    computes the spread at every report."""
    lazy, ref = QueueForecast(), RescanningForecast()
    t = fwd = deq = drained = 0
    for reports, gap_ms, arrivals, drains, occ, pps in segments:
        for _ in range(reports):
            t += gap_ms * MS
            fwd += arrivals
            deq += min(arrivals, fwd - deq)
            drained += drains
            got = [f.update(t, occ, fwd, deq, pps, drained=drained, drained_ns=t - MS // 2) for f in (lazy, ref)]
            assert got[0] == got[1]
            assert (lazy.guessed_fall, lazy.drain_pps, lazy.expected_pps) == (ref.guessed_fall, ref.drain_pps,
                                                                              ref.expected_pps)
    assert lazy._chunk_rates(len(lazy._hist) - 1) == rescanned_chunks(lazy._hist[lazy._first:])


class WalkingForecast(SourceForecast):  # type: ignore[misc,valid-type]
    """The backlog's drain and the earlier stretches' noise as first written (the reference of their searched and
    summed forms, issue 46): every backlogged gap in one list trimmed from its front one by one, ``_busy_since`` a
    walk back from the newest gap over it, the noise ``drain_noise`` of the list ``_earlier_rates`` walks; each
    answer checked against the forecast's own."""

    def _note_backlog_drain(self, t0: int, t1: int) -> None:
        pkts, ns = self._busy_pkts_total, self._busy_ns_total
        super()._note_backlog_drain(t0, t1)
        gaps = self.__dict__.setdefault("walked", [])
        if self._busy_ns_total != ns:  # a gap noted (its span is t1 - t0 > 0)
            gaps.append((t0, self._busy_pkts_total - pkts, self._busy_ns_total - ns))
            while len(gaps) > 1 and sum(p for _, p, _ in gaps[1:]) >= DRAIN_SHORT_PKTS:
                del gaps[0]

    def _busy_since(self, since_ns: float) -> float:
        n = span = 0
        for start, pkts, ns in reversed(self.__dict__.get("walked", [])):
            if start < since_ns:
                break
            n += pkts
            span += ns
        got = super()._busy_since(since_ns)
        assert got == (n * 1_000_000_000 / span if span > 0 else 0.0)
        self.__dict__["asked"] = self.__dict__.get("asked", 0) + (span > 0)
        return got

    def _earlier_noise(self, end: int) -> float:
        got = super()._earlier_noise(end)
        assert got == drain_noise(self._earlier_rates(end))
        return got


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(-3, 20), st.integers(0, 12), st.integers(0, 12),
                          st.integers(0, 30), st.integers(50, 2000), st.booleans()), min_size=1, max_size=12))
def test_the_backlog_s_drain_searched_and_the_noise_summed_are_the_walks(
        segments: list[tuple[int, int, int, int, int, int, bool]]) -> None:
    """Reports in segments of a pace (a reporter's clock that goes back now and then), drain, occupancy and rate, with
    the exact drain or without: the drain over the backlogged gaps within the window, searched and summed from running
    totals, is the walk's over every gap (the same integers, the same float), before and after the list's oldest go
    in bulk; and the noise of the window's earlier stretches, summed along the walk, is ``drain_noise``'s."""
    f = WalkingForecast()
    t, fwd, deq, drained = 1_000 * MS, 0, 0, 0
    for reports, gap_ms, arrivals, drains, occ, pps, exact in segments:
        for _ in range(reports):
            t += gap_ms * MS
            fwd += arrivals
            deq += min(arrivals, fwd - deq)
            drained += drains
            if exact:
                f.update(t, occ, fwd, deq, pps, drained=drained, drained_ns=t - MS // 2)
            else:
                f.update(t, occ, fwd, deq, pps)
    walked = f.__dict__.get("walked", [])
    assert f._busy_from[f._busy_first:] == [start for start, _, _ in walked]


def test_the_backlog_s_drain_is_searched_across_a_clock_that_went_back_and_a_bulk_deletion() -> None:
    """A backlog drained a packet every 4 ms, reports every 1 ms (the gaps pile up past the drain's window), the
    reporter's clock set back once: the searched drain is the walk's at every report (``WalkingForecast`` checks
    each), the search met gaps out of order, and the list's oldest went in bulk."""
    f = WalkingForecast()
    t, drained = 1_000 * MS, 0
    unsorted = compacted = 0
    for k in range(1_200):
        t += -40 * MS if k == 400 else MS
        drained += k % 4 == 0
        before = len(f._busy_from)
        f.update(t, 20, k + 1, k - 4, 1_000, drained=drained, drained_ns=t - MS // 2)
        unsorted += f._busy_sorted > f._busy_first
        compacted += len(f._busy_from) < before
    assert f.__dict__["asked"] > 1_000
    assert unsorted > 0 and compacted > 0
    assert len(f.__dict__["walked"]) > 100  # the drain's window (at most 1 s) searched within the gaps


def test_the_newest_drain_is_the_exact_drain_over_the_newest_two_departures() -> None:
    """150 packets/s leave, then the link behind the buffer falls to 125/s (capacity-drop): the
    newest drain reads the two newest spacings, so it shows the drop at the first report that
    holds two late departures, where the buffer has not yet gained a packet (docs/background/alinea.md,
    "The newest drain")."""
    before = departures([int(1e9 / 150)] * 300)
    after = departures([8 * MS] * 10, before[-1])
    f = QueueForecast()
    feed_exact(f, before, before[-1])
    assert f.newest_pps == pytest.approx(150, rel=0.01)
    f = QueueForecast()
    feed_exact(f, before + after, after[4])  # reports every 10 ms: the newest two spacings are late ones
    assert f.newest_pps == pytest.approx(125, rel=0.01)
    assert f.drain_pps > 1.1 * f.newest_pps  # the drain over the window is still well above it


def test_the_newest_drain_is_none_without_the_exact_drain_or_on_a_starved_buffer() -> None:
    leave = departures([int(1e9 / 150)] * 300)
    starved = QueueForecast()
    feed_exact(starved, leave, leave[-1], occ=1)
    assert starved.newest_pps == 0.0  # a starved buffer drains our own rate: it says nothing
    counted = QueueForecast()
    steady(counted, 300, 150, 140, 140)
    assert counted.newest_pps == 0.0


def test_the_window_s_list_keeps_what_left_it_only_until_that_is_half_of_it() -> None:
    """Thousands of reports, a short window: the entries that left the window are deleted in bulk
    (never more than the window's length plus WINDOW_COMPACT of them are kept), and the window and
    its stretches are what a rescan gives."""
    f = QueueForecast()
    drained = 0
    for i in range(1, 3001):
        drained += 3
        f.update(i * MS, 5, i * 3, i * 3, 3000, drained=drained, drained_ns=i * MS - MS // 2)
        window = f._hist[f._first:]
        assert len(f._hist) - len(window) < max(WINDOW_COMPACT, len(window) + 1)
    assert f._popped > 2000 and window[0][0] >= 3000 * MS - DRAIN_WINDOW_S * 1_000_000_000
    assert f._chunk_rates(len(f._hist) - 1) == rescanned_chunks(window)


# ---- a starved buffer behind a stamped queue (was test_committed_forecast.py; tests/controlplane holds 20 modules)
#: The forecast of a buffer whose drain is known only as a lower bound, while this hop's queue holds packets BMv2 has
#: stamped already (controlplane/forecast.py, ``QueueForecast._starved_forecast`` and ``_backlog_drain_pps``; issue 46,
#: tests/topo/random_cases/committed-starved-*.yaml).
#:
#: A starved buffer drains all that reaches it: its drain is what this hop sent, not what it takes. What it takes is
#: known from the gaps it held a backlog over (``busy_pps``). On a starved report the forecast is what the stamped queue
#: will leave in the buffer at that drain, the buffer never below empty; on a report that finds a backlog while the
#: drain's window still holds a starved report, the drain is the backlog's, not the window's mix of the two.
GAP_NS = 5 * MS  # a report every 5 ms
SOURCE_PPS = 1000  # what reaches this hop's queue
CAP_PPS = 800  # what the downstream buffer takes


class Line:
    """This hop's BMv2 queue (a packet's departure is fixed when it is queued: ``max(now, last + 1 / rate)``) in front
    of a downstream buffer that serves ``cap_pps``, no link delay; the forecast fed a report every ``GAP_NS``."""

    def __init__(self, cap_pps: float = CAP_PPS) -> None:
        self.f = QueueForecast()
        self.cap_ns = 1e9 / cap_pps
        self.source_pps: float = SOURCE_PPS
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
            arrival = start + 1e9 / self.source_pps
            while arrival <= self.t:
                stamp = max(arrival, self.last_stamp + spacing)
                self.stamps.append(stamp)
                self.last_stamp = stamp
                free = self.served[-1] if self.served else 0.0
                self.served.append(max(stamp, free) + self.cap_ns)
                arrival += 1e9 / self.source_pps
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


    def at_newest(self) -> int:
        """The downstream buffer's occupancy when this hop's newest stamped packet reaches it."""
        newest = self.stamps[-1]
        return len(self.stamps) - sum(1 for s in self.served if s <= newest)


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


def test_stamps_at_a_rate_the_starved_buffer_has_drained_since_its_backlog_forecast_its_occupancy() -> None:
    """The buffer held a backlog at 800 packets/s and starved; it then takes more (6,000/s) and drains the 3,000/s this
    hop sends it for 0.1 s, starved. The hop holds its queue at 1,000/s for 50 ms (its source still at 3,000/s: a
    backlog of its own builds), then stamps 3,000/s behind those. The buffer's drain since its backlog, 3,000/s over
    far more than a short window's departures, is a lower bound of what it takes that the backlog's drain, the newest
    gap's (1,000/s, the held stamps) and the window's mix of the two all fall below; read at those, the forecast
    counted the 3,000/s stamps as filling a buffer that takes them (lagging-mean-brake-tree.yaml, seed 1: S6's
    law held at a third of what S3 took, while its own FIFO's backlog overflowed H4's buffer at S6)."""
    line = Line()
    line.run(0.1, SOURCE_PPS)
    line.source_pps = 500
    line.run(0.1, 500)
    busy = line.f.busy_pps
    assert busy == pytest.approx(CAP_PPS, rel=0.05) and line.forecasts[-1][0] <= IDLE_PKTS
    line.cap_ns, line.source_pps = 1e9 / 6000, 3000
    line.run(0.1, 3000)
    line.run(0.05, 1000)
    line.run(0.01, 3000)
    occupancy, forecast = line.forecasts[-1]
    assert occupancy <= IDLE_PKTS and line.f.busy_pps == busy  # starved since the backlog
    assert line.f.queued > 50 and line.peak_ahead() <= IDLE_PKTS  # the stamps will not fill it
    assert forecast <= IDLE_PKTS


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


def test_the_fluid_models_forecast_leaves_the_stamps_of_a_starved_report_out() -> None:
    """The loop analysis's switch laws (controlplane/fluid_laws.py) forecast a starved report at its occupancy: the
    model's queue can hold a standing backlog stamped faster than the drain of a backlog long gone
    (stamped-mixed-backlog.yaml). The same reports into a forecast that counts the stamps read more."""
    from controlplane.fluid_laws import SwitchControl
    from controlplane.params import LawParams

    model = SwitchControl(LawParams(), 1000, fixed_departures=True).forecast
    assert model is not None and not model.counts_stamps and QueueForecast().counts_stamps
    line = starved_then_raised()
    replay = Line()
    replay.f = model
    replay.run(0.1, SOURCE_PPS)
    replay.run(0.1, 500)
    replay.run(0.05, 2000)
    assert replay.forecasts[-1][0] == line.forecasts[-1][0] <= IDLE_PKTS
    assert model.busy_pps > 0 and replay.forecasts[-1][1] == replay.forecasts[-1][0]
    assert line.forecasts[-1][1] > line.forecasts[-1][0] + 10


@pytest.mark.parametrize("period_ns", [1_060_000, 1_700_000, 3_100_000])
def test_a_backlogs_drain_is_timed_from_departure_to_departure(period_ns: int) -> None:
    """A playout of 1,250 packets/s (H2's 2 Mb/s in 200 B frames) holding a backlog, reported at gaps its spacing
    does not divide: each gap holds one or two departures more or less than its length at the spacing, and timed
    by the reports the first gap read up to 1,881 packets/s (busy-gap-multicast-receiver.yaml). Timed from the
    departure before the gap to the newest in it, the backlog's drain is its spacing's from the first gap on, and
    after a stall (a gap with no departure) too."""
    spacing = 800_000
    leave = departures([spacing] * 40)
    f = QueueForecast()
    t, fwd = 3 * spacing + period_ns // 3, 0
    readings = []
    while t <= leave[-1]:
        gone = [x for x in leave if x <= t]
        f.update(t, 5, fwd + 5, fwd, 1250, drained=len(gone), drained_ns=gone[-1] if gone else 0)
        if f.busy_pps > 0:
            readings.append(f.busy_pps)
        t += period_ns
        fwd = len(gone)
    assert readings and all(r == pytest.approx(1250, rel=1e-9) for r in readings)
    # a stall of 3 spacings, then the backlog again: the stall is in the drain once, not twice
    stalled = departures([4 * spacing] + [spacing] * 9, leave[-1])
    while t <= stalled[-1]:
        gone = [x for x in leave + stalled if x <= t]
        f.update(t, 5, fwd + 5, fwd, 1250, drained=len(gone), drained_ns=gone[-1])
        t += period_ns
        fwd = len(gone)
    gone = [x for x in leave + stalled if x <= t - period_ns]
    assert f.busy_pps == pytest.approx(f._busy_pkts_sum * 1e9 / (gone[-1] - (gone[-1 - f._busy_pkts_sum])), rel=1e-9)


finite = st.floats(-1e150, 1e150, allow_nan=False, allow_infinity=False)


@given(st.one_of(finite, st.integers(-2**60, 2**60).map(lambda n: n / 2), st.integers(-10**6, 10**6).map(lambda n: n + 0.5),
                 st.floats(-1e4, 1e4).map(lambda x: math.nextafter(math.floor(x) + 0.5, x))))
def test_round_even_is_the_builtin_round_of_a_float(x: float) -> None:
    """``round_even`` (the forecast's occupancy and the queue rate, compiled without the builtin's call) is
    ``round(x)``: the nearest whole number, halves to the even one, whatever the float."""
    assert round_even(x) == round(x) and type(round_even(x)) is int


@given(st.lists(finite, max_size=40))
def test_the_drain_noise_squares_are_those_of_the_power_operator(rates: list[float]) -> None:
    """``drain_noise`` squares each difference with ``math.pow(d, 2.0)``: to the bit, the formula's ``d ** 2``
    summed from 0 in order (each square, and the noise)."""
    for a, b in zip(rates, rates[1:]):
        assert math.pow(a - b, 2.0) == (a - b) ** 2
    expected = math.sqrt(sum((a - b) ** 2 for a, b in zip(rates, rates[1:])) / (2 * (len(rates) - 1))) \
        if len(rates) > 1 else 0.0
    assert drain_noise(rates) == expected


def stamped_queue(gaps_us: list[int], rates: list[int], wire_pps: float = 0.0,
                  occ: int = 10) -> Iterator[tuple[QueueForecast, float]]:
    """A BMv2 queue fed packets ``gaps_us`` apart, each stamped at the later of its arrival and the stamp before plus
    the spacing of the rate in force (``rates``, one per 10 ms report); each leaves at its stamp, or with ``wire_pps``
    no sooner than the wire has sent the one before. Yields the forecast after each report and BMv2's newest stamp."""
    f, t_arr, last, wire_free = QueueForecast(), 0.0, 0.0, 0.0
    departs: list[float] = []
    gaps = iter(gaps_us * (1 + 10_000 * len(rates) // sum(gaps_us)))
    pending = next(gaps, None)
    for k, pps in enumerate(rates):
        t_end = (k + 1) * 10 * MS
        while pending is not None and t_arr + pending * 1000 < t_end:
            t_arr += pending * 1000
            last = max(t_arr, last + 1e9 / pps)
            wire_free = max(last, wire_free + 1e9 / wire_pps) if wire_pps else last
            departs.append(wire_free)
            pending = next(gaps, None)
        f.update(t_end, occ, len(departs), sum(1 for d in departs if d <= t_end), pps)
        yield f, last


@given(st.lists(st.integers(50, 15_000), min_size=1, max_size=30), st.lists(st.sampled_from([100, 200, 500, 1000, 3000]),
                                                                             min_size=1, max_size=60))
def test_stamps_that_keep_the_wire_read_no_lag(gaps_us: list[int], rates: list[int]) -> None:
    """Packets leaving at their stamps: the stamps never lag the ledger, and the forecast is the ledger's alone."""
    for f, _ in stamped_queue(gaps_us, rates):
        assert f.stamp_lag_s == 0.0


def test_a_wire_slower_than_the_stamps_adds_the_drain_over_their_lag() -> None:
    """Stamped at 2,000/s and sent at 1,900/s (a mean frame that lags the frames leaving): the queue's packets wait for
    the wire with their stamps in the past, and a rate set now spaces packets from the newest stamp, earlier than the
    ledger's end. The lag read is no longer than the real one (the ledger's end less its oldest spacing, less BMv2's
    newest stamp), grows with the backlog, and the forecast holds the drain over it (not on a starved buffer)."""
    lags = []
    for f, last in stamped_queue([400], [2000] * 100, wire_pps=1900):
        real = (f.last_sent_ns - 1e9 / 2000 - last) / 1e9
        assert f.stamp_lag_s <= real + 1e-9
        lags.append(f.stamp_lag_s)
    assert lags[-1] > lags[50] > 0.0
    plain = f.occupancy + f.queued - f.expected_pps * f.horizon_s
    assert f.forecast_pkts == pytest.approx(plain + f.expected_pps * f.stamp_lag_s)
    # a starved buffer drains all that reaches it: its drain is no rate to count the lag at
    starved = [f for f, _ in stamped_queue([400], [2000] * 100, wire_pps=1900, occ=IDLE_PKTS)][-1]
    assert starved.stamp_lag_s > 0.0 and starved.forecast_pkts == IDLE_PKTS


def test_the_fluid_models_forecast_reads_no_stamp_lag() -> None:
    """The loop analysis's model (``counts_stamps`` False): its stamps keep the wire; the rule stays out of it."""
    f = QueueForecast(counts_stamps=False)
    fwd = deq = 0
    for k in range(50):
        fwd += 20
        deq += 19
        f.update(k * 10 * MS, 10, fwd, deq, 2000)
    assert f.queued > 0 and f.stamp_lag_s == 0.0


def held_then_hole_then_burst(hole_pps: int, burst_pps: int) -> Line:
    """0.3 s at the source's rate (the buffer gains 200 packets/s over what it takes: a backlog of 60), 50 ms cut to
    ``hole_pps`` (a hole in the queue's schedule: its stamps take longer than the backlog lasts), then 20 ms at
    ``burst_pps``, stamped behind the hole: the buffer still holds a backlog at the last report, empties in the hole,
    and the burst fills it again."""
    line = Line()
    line.run(0.3, SOURCE_PPS)
    line.run(0.05, hole_pps)
    line.run(0.02, burst_pps)
    return line


def test_a_hole_in_the_schedule_does_not_drain_the_burst_behind_it() -> None:
    """A buffer cannot go below empty: the drain it misses while a hole in the queue's schedule starves it is not
    taken off the packets stamped behind the hole. ``O + Q - mu h`` took it off, read the backlogged buffer as bound
    for empty, and the law raised its rate over stamps that would fill it: S4's law toward H4's 20-packet receive
    buffer, 19 packets there, read 0 and jumped from 1 to 2.8-3.3 Mb/s into its 1 Mb/s playout, which overflowed a
    horizon later (tests/topo/random_cases/hole-burst-receive-buffer-line.yaml; issue 46). The forecast is the
    buffer's occupancy when the newest stamped packet reaches it, with the buffer reflected at empty."""
    line = held_then_hole_then_burst(300, 3000)
    occupancy, forecast = line.forecasts[-1]
    f = line.f
    assert occupancy > IDLE_PKTS and not f.starved_in_window  # a backlog: the drain measures what the buffer takes
    assert f.expected_pps == pytest.approx(CAP_PPS, rel=0.02)
    assert occupancy + f.queued - f.expected_pps * f.horizon_s < 0  # the whole queue's excess: bound for empty
    truth = line.at_newest()
    assert truth > 10
    assert forecast == pytest.approx(truth, abs=2)


@given(st.integers(100, 700), st.integers(1000, 5000))
@example(300, 3000)
def test_the_forecast_is_the_reflected_buffer_when_the_newest_stamp_arrives(hole_pps: int, burst_pps: int) -> None:
    """Whatever the hole and the burst behind it: the forecast is the buffer's occupancy when the newest stamped packet
    reaches it (the fluid buffer never below empty), to within a few packets (a fluid buffer; the packets in service, a report's edges)."""
    line = held_then_hole_then_burst(hole_pps, burst_pps)
    occupancy, forecast = line.forecasts[-1]
    assert occupancy > IDLE_PKTS and not line.f.starved_in_window
    assert forecast == pytest.approx(line.at_newest(), abs=3)


def test_the_laws_forecast_says_what_the_stamped_arrivals_explain_of_the_buffers_change() -> None:
    """``Forecast.committed_change``: what reached the buffer over the newest report gap (its occupancy's change plus
    its departures: this hop's packets, stamped a horizon before) less the drain over the gap, a packet nearer none (a
    gap's count is known to a packet), as a fraction of the buffer. While a hole in the queue's schedule passes the
    backlogged buffer it explains the buffer's fall but for the drain's own noise, and the law damps only the rest
    (controlplane/alinea.py, ``unexplained``; tests/topo/random_cases/hole-burst-receive-buffer-line.yaml)."""
    line = Line()
    line.run(0.3, SOURCE_PPS)
    capacity = 100
    for _ in range(8):  # the hole: 300 packets/s against the 800 the buffer takes, which falls ~2.5 packets a gap
        before, t0 = line.forecasts[-1][0], line.t
        line.run(GAP_NS / 1e9, 300)
        occupancy, pkts = line.forecasts[-1]
        f = line.f
        arrived = sum(1 for s in line.stamps if t0 < s <= line.t)
        excess = arrived - f.expected_pps * GAP_NS / 1e9
        committed = f.law_forecast(pkts, capacity, 8000).committed_change * capacity
        assert occupancy > IDLE_PKTS and not f.starved_in_window
        assert committed == pytest.approx(excess + 1.0 if excess < -1.0 else 0.0) and committed < -0.5
        assert occupancy - before == pytest.approx(committed, abs=2.0)  # the drain's count and the packet of doubt
