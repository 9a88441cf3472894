"""Loss, reordering and duplicates from data sequence numbers (receiver side).

A gap in the sequence numbers is only *missing* at first: a packet that fills it later was
reordered, not lost, and must never cost the sender a multiplicative decrease. A missing
number becomes a loss once a number at least ``reorder_window`` above it has arrived (TCP's
three-duplicate-ACK threshold, as a sequence distance). A packet that arrives after it was declared lost is
"late": the loss is taken back (lost - 1) and it counts as reordered, since the rate
decision it caused cannot be undone.

Memory is bounded: missing numbers all lie within the last ``reorder_window`` numbers (older
ones are lost), and only the last ``LATE_MEMORY`` lost ranges are remembered. Sequence
numbers are unbounded integers (the caller unwraps any wire field). The lowest number
received so far is the start: nothing before it counts as lost, and a packet older than it
is reordered (numbers between it and the start become missing).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum

LATE_MEMORY = 64


class Arrival(Enum):
    """How one sequence number relates to those seen before it."""

    IN_ORDER = "in_order"  # a new highest number (maybe after a gap)
    REORDERED = "reordered"  # filled a gap before it was declared lost
    LATE = "late"  # filled a gap after it was declared lost
    DUPLICATE = "duplicate"  # seen before


@dataclass(frozen=True)
class SeqResult:
    """What one arrival told: its kind, packets newly declared lost, and maxDelay's sample."""

    arrival: Arrival
    newly_lost: int = 0
    loss_owd: int | None = None  # OWD of the last packet received before the first new loss


@dataclass
class _Gap:
    start: int  # first missing number
    end: int  # one past the last missing number
    before_owd: int  # OWD of the packet received just before the gap opened


class SeqTracker:
    """Counts received, lost, reordered, late and duplicate packets."""

    def __init__(self, reorder_window: int) -> None:
        self._window = reorder_window
        self._highest: int | None = None
        self._highest_owd = 0
        self._lowest = 0  # lowest number seen (valid once _highest is set)
        self._gaps: list[_Gap] = []
        self._lost_ranges: deque[tuple[int, int]] = deque(maxlen=LATE_MEMORY)
        self.received = 0
        self.lost = 0
        self.reordered = 0
        self.late = 0
        self.duplicates = 0

    @property
    def highest(self) -> int | None:
        """Highest sequence number received so far."""
        return self._highest

    def on_packet(self, seq: int, owd: int) -> SeqResult:
        """Account one arrival of ``seq`` whose one-way delay (any offset) is ``owd``."""
        if self._highest is None or seq > self._highest:
            self._advance(seq, owd)
            self.received += 1
            lost, loss_owd = self._declare_losses()
            return SeqResult(Arrival.IN_ORDER, lost, loss_owd)
        if seq < self._lowest:
            self._before_start(seq, owd)
            self.received += 1
            self.reordered += 1
            lost, loss_owd = self._declare_losses()
            return SeqResult(Arrival.REORDERED, lost, loss_owd)
        if self._fill_gap(seq):
            self.received += 1
            self.reordered += 1
            return SeqResult(Arrival.REORDERED)
        if self._take_back_loss(seq):
            self.received += 1
            self.reordered += 1
            self.late += 1
            self.lost -= 1
            return SeqResult(Arrival.LATE)
        self.duplicates += 1
        return SeqResult(Arrival.DUPLICATE)

    def _before_start(self, seq: int, owd: int) -> None:
        """A packet older than every one seen: what lies between it and them is missing."""
        if seq + 1 < self._lowest:
            self._gaps.insert(0, _Gap(seq + 1, self._lowest, owd))
        self._lowest = seq

    def _advance(self, seq: int, owd: int) -> None:
        if self._highest is None:
            self._lowest = seq
        elif seq > self._highest + 1:
            self._gaps.append(_Gap(self._highest + 1, seq, self._highest_owd))
        self._highest = seq
        self._highest_owd = owd

    def _declare_losses(self) -> tuple[int, int | None]:
        """Missing numbers at least ``window`` below the highest become losses."""
        assert self._highest is not None
        limit = self._highest - self._window + 1  # numbers below this are lost
        lost = 0
        loss_owd: int | None = None
        while self._gaps and self._gaps[0].start < limit:
            gap = self._gaps[0]
            cut = min(gap.end, limit)
            lost += cut - gap.start
            self._lost_ranges.append((gap.start, cut))
            if loss_owd is None:
                loss_owd = gap.before_owd
            if cut == gap.end:
                self._gaps.pop(0)
            else:
                gap.start = cut
        self.lost += lost
        return lost, loss_owd

    def _fill_gap(self, seq: int) -> bool:
        for i, gap in enumerate(self._gaps):
            if gap.start <= seq < gap.end:
                parts = [_Gap(s, e, gap.before_owd) for s, e in ((gap.start, seq), (seq + 1, gap.end)) if s < e]
                self._gaps[i:i + 1] = parts
                return True
        return False

    def _take_back_loss(self, seq: int) -> bool:
        for i, (start, end) in enumerate(self._lost_ranges):
            if start <= seq < end:
                ranges = list(self._lost_ranges)
                ranges[i:i + 1] = [(s, e) for s, e in ((start, seq), (seq + 1, end)) if s < e]
                self._lost_ranges = deque(ranges[-LATE_MEMORY:], maxlen=LATE_MEMORY)
                return True
        return False
