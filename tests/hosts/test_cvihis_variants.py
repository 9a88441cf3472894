"""The named readings of CVIHIS (hosts/cvihis/variants.py) and the choices they select in the cores:
RTM's areas probing until the first loss, maxDelay from the newest loss, a loss without queueing delay
teaching no maxDelay, an MD per lost packet, up to two per fill of the queue, and the next fill at a sustained
overload."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.cvihis import Command, CvihisParams, CvihisReceiver, CvihisSender, Feedback, Mode
from hosts.cvihis.variants import (
    AREAS,
    CHOICE_KEYS,
    MAX_DELAY,
    MD,
    PUSH,
    VARIANTS,
    CvihisReading,
    ReadingError,
    push_values,
)

MS = 1_000_000
BASE = 10**9


def test_the_default_reading_is_the_parameters_defaults() -> None:
    """Code that builds ``CvihisParams()`` directly runs the default reading, as a topology file does."""
    assert CvihisReading().apply(CvihisParams()) == CvihisParams()


def test_the_default_is_reprobe_slow_with_two_mds_per_fill_and_sustained_overloads() -> None:
    """``reprobe-overload`` (the default since issue 48's capacity drop) is ``reprobe-slow`` with one choice changed,
    the MD (``two-per-fill-overload``); ``reprobe-fill``, the default before it, differs from it in the one
    parameter that tells a sustained overload from a long fill; both former defaults keep running as they did."""
    assert CvihisReading("reprobe-slow", (("md", "two-per-fill-overload"),)).apply(CvihisParams()) == CvihisParams()

    def changed(p: CvihisParams) -> list[str]:
        return [f.name for f in dataclasses.fields(p) if getattr(p, f.name) != getattr(CvihisParams(), f.name)]

    slow, fill = _reading("reprobe-slow"), _reading("reprobe-fill")
    assert changed(slow) == ["md_per_fill", "md_fill_overload"] and slow.md_per_fill == 0
    assert changed(fill) == ["md_fill_overload"] and not fill.md_fill_overload


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_names_a_choice_for_every_key_and_gives_valid_parameters(variant: str) -> None:
    reading = CvihisReading(variant)
    assert set(reading.choices()) == set(CHOICE_KEYS)
    params = reading.apply(CvihisParams())
    assert params.updates_per_rtt == reading.choices()["decisions_per_rtt"]


@settings(deadline=None)
@given(st.sampled_from(list(VARIANTS)), st.sampled_from(list(AREAS)), st.integers(1, 10), st.sampled_from(list(MD)),
       st.sampled_from(list(MAX_DELAY)), st.floats(80_000, 10e6), st.sampled_from([500, 1000, 1500]),
       st.sampled_from([*PUSH, 0.5, 2, 2.5]))
def test_a_reading_changes_only_its_choices(variant: str, areas: str, per_rtt: int, md: str, max_delay: str,
                                            cap: float, size: int, push: str | float) -> None:
    """Rates and sizes set by the network (a flow's cap, its packet size) survive any reading; each key's
    choice lands in the parameters its table names, whatever the variant under it."""
    base = CvihisParams(max_rate_bps=cap, initial_rate_bps=min(400_000.0, cap), packet_size_bytes=size)
    changes = (("areas", areas), ("decisions_per_rtt", per_rtt), ("push", push), ("md", md), ("max_delay", max_delay))
    p = CvihisReading(variant, changes).apply(base)
    assert (p.max_rate_bps, p.initial_rate_bps, p.packet_size_bytes) == (cap, base.initial_rate_bps, size)
    assert p.updates_per_rtt == per_rtt
    for values in (AREAS[areas], push_values(push), MD[md], MAX_DELAY[max_delay]):
        assert all(getattr(p, k) == v for k, v in values.items())
    untouched = {f.name for f in dataclasses.fields(p)} - {"updates_per_rtt", *AREAS["probe"], *PUSH["per-rtt"],
                                                           *MD["per-rtt"], *MAX_DELAY["ewma"]}
    assert all(getattr(p, k) == getattr(base, k) for k in untouched)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"variant": "fast"}, "variant: 'fast' is not one of reprobe-overload, reprobe-fill, reprobe-slow, probe, shifted, "
                          "squeezed, reprobe, reprobe-ewma"),
    ({"variant": "published"}, "variant: 'published' was the default until issue 48 and is now named 'probe'; the "
                               "default is now 'reprobe-overload'"),
    ({"changes": (("md", "sometimes"),)}, "md: 'sometimes' is not one of per-rtt, per-packet, two-per-fill, "
                                          "two-per-fill-overload"),
    ({"changes": (("decisions_per_rtt", 0),)}, "decisions_per_rtt: 0 is not an integer in 1..10"),
    ({"changes": (("decisions_per_rtt", True),)}, "decisions_per_rtt: True is not an integer"),
    ({"changes": (("colour", "red"),)}, "colour: unknown choice"),
    ({"changes": (("push", 0),)}, "push: 0 is not one of per-decision, per-rtt or a number of pushes per RTT in (0, 10]"),
    ({"changes": (("push", True),)}, "push: True is not one of"),
    ({"changes": (("push", "hourly"),)}, "push: 'hourly' is not one of per-decision, per-rtt or a number"),
])
def test_an_unknown_reading_is_refused_in_one_line_naming_the_key(kwargs: dict, message: str) -> None:
    with pytest.raises(ReadingError) as info:
        CvihisReading(**kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_describe_names_the_variant_and_its_changes() -> None:
    assert CvihisReading().describe() == "reprobe-overload"
    assert CvihisReading("shifted", (("md", "per-packet"),)).describe() == "shifted (md per-packet)"


def _queue_trace(lost: tuple[int, ...] = (), n: int = 60, grow_ms: int = 1) -> list[tuple[int, int, int]]:
    """(seq, send_ts, arrival): a packet every 5 ms, the queue growing ``grow_ms`` per packet, ``lost`` dropped."""
    return [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + grow_ms * s * MS) for s in range(n) if s not in lost]


def _feed(rx: CvihisReceiver, trace: list[tuple[int, int, int]], hint: int = 40 * MS) -> list[Feedback]:
    out: list[Feedback] = []
    for seq, ts, arrival in trace:
        out += rx.on_timer(arrival)
        out += rx.on_data(arrival, seq, ts, 1000, hint)
    return out


def _reading(variant: str, **changes: object) -> CvihisParams:
    return CvihisReading(variant, tuple(changes.items())).apply(CvihisParams())


def test_probe_moves_the_areas_up_with_the_push_until_the_first_loss_then_squeezes_them() -> None:
    """areas probe: with no loss yet there is no learned maxDelay, so RTM keeps the guessed width above its
    pushed minDelay (it probes for the loss point); once a loss has set maxDelay, only minDelay is pushed."""
    probe = CvihisReceiver(_reading("probe"), Mode.RTM)
    shift = CvihisReceiver(_reading("shifted"), Mode.RTM)
    blm = CvihisReceiver(_reading("probe"), Mode.BLM)
    before = _queue_trace(n=45)
    for rx in (probe, shift, blm):
        _feed(rx, before)
    assert probe.min_delay_ns > blm.min_delay_ns  # pushed
    assert probe.max_delay_ns - probe.min_delay_ns == pytest.approx(shift.max_delay_ns - shift.min_delay_ns)
    # packet 50 lost at the top of the queue, which then drains: only minDelay moves with the push
    after = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + (s if s < 50 else 100 - s) * MS)
             for s in range(45, 90) if s != 50]
    for rx in (probe, blm):
        _feed(rx, after)
    assert probe.lost == blm.lost == 1
    assert probe.max_delay_ns == blm.max_delay_ns  # the learned loss point, not moved with the push
    assert probe.min_delay_ns > blm.min_delay_ns
    # the queue then rises above that point with no loss: the top follows the delays that went through
    rising = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + (s - 30) * MS) for s in range(90, 140)]
    _feed(probe, rising)
    _feed(blm, rising)
    assert probe.lost == 1 and probe.max_delay_ns > blm.max_delay_ns
    assert probe.max_delay_ns <= blm.min_delay_ns + (139 - 30) * MS  # at most the highest delay seen


def test_reprobe_puts_the_top_one_push_above_a_delay_that_passed_the_loss_point_without_loss() -> None:
    """areas reprobe: as probe until the queue passes the learned loss point with no loss; then the top is the
    highest delay seen pushed once by PF (on half the smallest RTT plus its height above the smallest OWD, as
    minDelay's push), so RTM probes for the loss point again instead of reading the highest delay yet as ---."""
    probe, reprobe = (CvihisReceiver(_reading("probe", areas=a), Mode.RTM) for a in ("probe", "reprobe"))
    blm = CvihisReceiver(_reading("probe", areas="reprobe"), Mode.BLM)
    # the queue grows, packet 50 is lost at its top, the queue drains: the same areas as probe
    grow_and_drain = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + (s if s < 50 else 100 - s) * MS)
                      for s in range(90) if s != 50]
    for rx in (probe, reprobe, blm):
        _feed(rx, grow_and_drain)
    assert reprobe.max_delay_ns == probe.max_delay_ns
    # the queue then rises past the learned loss point with no loss
    rising = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + (s - 30) * MS) for s in range(90, 140)]
    for rx in (probe, reprobe, blm):
        _feed(rx, rising)
    peak = probe.max_delay_ns - blm.min_delay_ns  # probe's top: the highest delay seen, above the smallest OWD
    pushed = peak + (CvihisParams().pf - 1) * (40 * MS / 2 + peak)  # the hint: a 40 ms RTT
    assert reprobe.max_delay_ns - blm.min_delay_ns == pytest.approx(pushed, rel=1e-9)
    assert blm.max_delay_ns - blm.min_delay_ns == 49 * MS  # BLM keeps the learned loss point


def test_max_delay_follows_the_newest_loss_or_an_average() -> None:
    """max_delay last-loss: the OWD before the newest loss; ewma: half way from the previous estimate."""
    trace = _queue_trace(lost=(20, 50))
    last, ewma = (CvihisReceiver(_reading("probe", max_delay=m), Mode.BLM) for m in ("last-loss", "ewma"))
    _feed(last, trace)
    _feed(ewma, trace)
    first, second = 19 * MS, 49 * MS  # the OWDs above the smallest before each loss
    assert last.max_delay_ns - last.min_delay_ns == second
    assert ewma.max_delay_ns - ewma.min_delay_ns == first + 0.5 * (second - first)


def test_reprobe_ewma_is_reprobe_slow_with_max_delay_an_average() -> None:
    """``reprobe-ewma`` changes one choice of ``reprobe-slow`` (the default before ``reprobe-fill``), maxDelay, and so
    no parameter but its gain; a receiver of each, fed the same two losses, differs only in its top: the EWMA sits
    below the newest loss (BLM: RTM's top over a rising queue is the re-probed delay, the same in both)."""
    ewma, default = _reading("reprobe-ewma"), _reading("reprobe-slow")
    assert ewma == CvihisReading("reprobe-slow", (("max_delay", "ewma"),)).apply(CvihisParams())
    assert [f.name for f in dataclasses.fields(ewma) if getattr(ewma, f.name) != getattr(default, f.name)] == [
        "max_delay_gain"]
    trace = _queue_trace(lost=(20, 50))
    a, b = CvihisReceiver(ewma, Mode.BLM), CvihisReceiver(default, Mode.BLM)
    _feed(a, trace)
    _feed(b, trace)
    assert a.min_delay_ns == b.min_delay_ns and a.max_delay_ns < b.max_delay_ns


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_loss_without_queueing_delay_teaches_no_max_delay(variant: str) -> None:
    """Packets dropped where the delays do not show (a receiver's full buffer): the MD still comes, the areas
    keep their width, so a later lasting rise of the path's delay (a slower link) is not read as congestion
    beyond the loss point."""
    flat = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS) for s in range(80) if s not in (20, 40, 60)]
    rx = CvihisReceiver(_reading(variant), Mode.BLM)
    feedback = _feed(rx, flat)
    assert rx.lost == 3 and any(fb.command is Command.MD for fb in feedback)
    assert rx.max_delay_ns - rx.min_delay_ns == CvihisParams().initial_span_ns
    # the path's delay then rises 5 ms for good: the flow still increases (lower areas), it does not hold ---
    later = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 15 * MS) for s in range(80, 200)]
    commands = [fb.command for fb in _feed(rx, later)]
    assert Command.STRONG_DECREASE not in commands[-10:]


def test_md_per_packet_divides_the_rate_once_per_lost_packet() -> None:
    """md per-packet: the receiver sends an MD at every new loss (no once-per-RTT guard) and the sender
    divides its rate by MD for each packet lost since the feedback before (``lost_total``)."""
    params = _reading("probe", md="per-packet")
    tx = CvihisSender(params)
    t = BASE
    tx.on_feedback(t, Feedback(1, Command.HOLD, 3, 0, 0, False, True, t - 40 * MS, 0, lost_total=0))
    rate = tx.rate_pps
    tx.on_feedback(t + MS, Feedback(2, Command.MD, None, 0, 0, True, True, t - 39 * MS, 0, lost_total=3))
    assert tx.rate_pps == pytest.approx(rate / params.md_factor ** 3)
    tx.on_feedback(t + 2 * MS, Feedback(3, Command.MD, None, 0, 0, True, True, t - 38 * MS, 0, lost_total=4))
    assert tx.rate_pps == pytest.approx(rate / params.md_factor ** 4)  # within the RTT: applied anyway
    per_rtt = CvihisSender(_reading("probe"))
    per_rtt.on_feedback(t, Feedback(1, Command.MD, None, 0, 0, True, True, t - 40 * MS, 0, lost_total=3))
    per_rtt.on_feedback(t + MS, Feedback(2, Command.MD, None, 0, 0, True, True, t - 39 * MS, 0, lost_total=4))
    assert per_rtt.md_applied == 1 and per_rtt.md_suppressed == 1


def test_md_per_packet_receiver_sends_an_md_at_every_new_loss() -> None:
    trace = _queue_trace(lost=(20, 24, 28), grow_ms=0)
    per_packet = _feed(CvihisReceiver(_reading("probe", md="per-packet"), Mode.RTM), trace)
    per_rtt = _feed(CvihisReceiver(_reading("probe"), Mode.RTM), trace)
    assert sum(fb.command is Command.MD for fb in per_packet) == 3  # 20 ms apart, inside one 40 ms RTT
    assert sum(fb.command is Command.MD for fb in per_rtt) == 2


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(5, 115), min_size=1, max_size=12, unique=True), st.sampled_from(["probe", "reprobe-slow"]),
       st.sampled_from(list(Mode)))
def test_two_per_fill_sends_one_md_per_lost_packet_up_to_two_while_the_queue_fills(lost: list[int], variant: str,
                                                                                    mode: Mode) -> None:
    """md two-per-fill on a queue that only grows (one fill, never back below the target area): one MD command
    per lost packet up to two, wherever the losses fall; per-rtt sends one per RTT hint, per-packet one per
    loss."""
    trace = _queue_trace(lost=tuple(lost), n=120)
    mds = sum(fb.command is Command.MD for fb in _feed(CvihisReceiver(_reading(variant, md="two-per-fill"), mode),
                                                        trace))
    assert mds == min(len(lost), 2)


def test_two_per_fill_starts_a_new_fill_once_the_queue_has_drained_below_the_target() -> None:
    """Two losses in a rising queue: two MDs (the fill's allowance); two more losses in the same fill: none; the
    queue then drains (decisions below the target area) and rises again: the next fill's two losses bring two MDs.
    Per-rtt gives one MD per 40 ms RTT hint instead."""
    rise = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + s * MS) for s in range(60) if s not in (30, 31, 40, 45)]
    drain = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + max(0, 59 - 2 * (s - 59)) * MS) for s in range(60, 120)]
    again = [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + (s - 120) * MS)
             for s in range(120, 180) if s not in (150, 151)]
    rx = CvihisReceiver(_reading("reprobe-slow", md="two-per-fill"), Mode.RTM)
    counts = [sum(fb.command is Command.MD for fb in _feed(rx, part)) for part in (rise, drain, again)]
    assert rx.lost == 6 and counts == [2, 0, 2]
    assert rx.area_histogram[:3] != (0, 0, 0)


def test_two_per_fill_sender_applies_every_md_command_within_an_rtt() -> None:
    """The receiver counts a fill's MDs (it alone sees the delays), so the sender applies each MD command, even
    two within one RTT where per-rtt suppresses the second."""
    t = BASE
    fill, per_rtt = CvihisSender(_reading("reprobe-slow", md="two-per-fill")), CvihisSender(_reading("reprobe-slow"))
    for tx in (fill, per_rtt):
        tx.on_feedback(t, Feedback(1, Command.HOLD, 3, 0, 0, False, True, t - 40 * MS, 0, lost_total=0))
    rate = fill.rate_pps
    for tx in (fill, per_rtt):
        for i in (2, 3):
            tx.on_feedback(t + i * MS, Feedback(i, Command.MD, None, 0, 0, True, True, t - 39 * MS, 0, lost_total=i))
    assert fill.rate_pps == pytest.approx(rate / CvihisParams().md_factor ** 2) and fill.md_suppressed == 0
    assert per_rtt.md_applied == 1 and per_rtt.md_suppressed == 1


@settings(deadline=None, max_examples=60)
@given(st.integers(1, 10), st.integers(1, 6), st.integers(5, 250),
       st.one_of(st.sampled_from(list(PUSH)), st.floats(0.1, 10), st.integers(1, 10)))
def test_push_per_rtt_lifts_min_delay_by_pf_once_per_rtt_whatever_the_decision_rate(n: int, rtts: int, rtt_ms: int,
                                                                                   push: str | float) -> None:
    """Differential against the closed form: after ``rtts`` RTTs of ``n`` decisions each (no OWD below the
    pushed value), the offset-free estimate of the pushed minDelay is PF^rtts times half the smallest RTT with
    ``push: per-rtt``, PF^(n * rtts) times it with ``push: per-decision``, and PF^(k * rtts) with ``push: k``
    (k pushes per RTT, whatever the decision rate)."""
    rx = CvihisReceiver(_reading("probe", decisions_per_rtt=n, push=push), Mode.RTM)
    rx._min_rtt_hint = rtt_ms * MS  # the sender's smallest RTT, as a data packet's hint sets it
    for _ in range(n * rtts):
        rx._push_min()
    estimate = rtt_ms * MS / 2 + (rx._rtm_min - rx._min)
    pushes = rtts if push == "per-rtt" else n * rtts if push == "per-decision" else push * rtts
    assert estimate == pytest.approx(rtt_ms * MS / 2 * CvihisParams().pf ** pushes, rel=1e-9)


@settings(deadline=None, max_examples=40)
@given(st.sampled_from(list(AREAS)), st.one_of(st.sampled_from(list(PUSH)), st.floats(0.1, 10)),
       st.lists(st.integers(5, 115), max_size=6, unique=True), st.integers(0, 3))
def test_blm_decides_alike_whatever_rtms_push_and_areas(areas: str, push: str | float, lost: list[int],
                                                        grow_ms: int) -> None:
    """BLM reads neither the push nor RTM's areas: at the same decision rate a BLM receiver gives the same feedback,
    bit for bit, under any ``areas`` and ``push`` (so a push rate apart from the decision rate leaves BLM as it is)."""
    trace = _queue_trace(lost=tuple(lost), n=120, grow_ms=grow_ms)
    reference = _feed(CvihisReceiver(_reading("probe"), Mode.BLM), trace)
    assert _feed(CvihisReceiver(_reading("probe", areas=areas, push=push), Mode.BLM), trace) == reference


def _overload_trace(first: int, last: int, lost_every: int, held_until: int | None = None) -> list[tuple[int, int, int]]:
    """A packet every 5 ms (RTT hint 40 ms): the queue grows 1 ms per packet to a 50 ms FIFO, then stays full (a
    sustained overload) or, from ``held_until`` on, drains 1 ms per packet; every ``lost_every``-th packet from
    ``first`` to ``last`` is lost."""
    def queue(s: int) -> int:
        if s < 50:
            return s
        if held_until is None or s < held_until:
            return 50
        return max(0, 50 - (s - held_until))
    lost = set(range(first, last, lost_every))
    return [(s, BASE + 5 * s * MS, BASE + 5 * s * MS + 10 * MS + queue(s) * MS) for s in range(last + 40) if s not in lost]


def _md_times(rx: CvihisReceiver, trace: list[tuple[int, int, int]]) -> list[int]:
    times: list[int] = []
    for seq, ts, arrival in trace:
        feedback = rx.on_timer(arrival) + rx.on_data(arrival, seq, ts, 1000, 40 * MS)
        times += [arrival for fb in feedback if fb.command is Command.MD]
    return times


@pytest.mark.parametrize("mode", list(Mode))
def test_a_sustained_overload_keeps_bringing_mds_where_one_fill_brings_two(mode: Mode) -> None:
    """md two-per-fill-overload (the default): a queue held full for 0.6 s (15 RTT hints) with losses all along is a
    sustained overload (a capacity drop): two MDs at its first loss and two more every time losses still come
    ``OVERLOAD_RTTS`` RTTs into a fill whose delay has stayed at its peak, so the MDs keep coming to the end.
    ``md: two-per-fill`` (``reprobe-fill``, the default before) reads it as one fill: two MDs (RTM's push squeezes
    its areas below the target later, ending the fill, where BLM's never end it)."""
    from hosts.cvihis.receiver import OVERLOAD_RTTS  # noqa: PLC0415

    trace = _overload_trace(60, 180, 10)
    new = _md_times(CvihisReceiver(CvihisParams(), mode), trace)
    assert len(_md_times(CvihisReceiver(_reading("reprobe-fill"), mode), trace)) == 2
    fills = new[::2]  # two MDs per fill, at its first two losses (the last fill's second may fall past the end)
    assert len(fills) >= 4 and len(new) >= 2 * len(fills) - 1
    assert all(b - a >= OVERLOAD_RTTS * 40 * MS for a, b in zip(fills, fills[1:]))
    assert new[-1] >= BASE + 5 * 150 * MS  # still coming at the end of the overload


@settings(deadline=None, max_examples=40)
@given(st.integers(59, 70), st.integers(2, 6), st.sampled_from(list(Mode)))
def test_one_long_fill_whose_queue_drains_brings_two_mds(held: int, lost_every: int, mode: Mode) -> None:
    """A fill whose queue stays full less than ``OVERLOAD_RTTS`` RTT hints after its first loss (packet 55; 8
    packets an RTT) and then drains, losses still coming past those RTTs while it drains, still above the target
    area (a shared queue the other flows keep full a little longer): one fill, two MDs, as under ``md:
    two-per-fill``."""
    trace = _overload_trace(55, held + 21, lost_every, held_until=held)
    for params in (CvihisParams(), _reading("reprobe-fill")):
        assert len(_md_times(CvihisReceiver(params, mode), trace)) == 2
