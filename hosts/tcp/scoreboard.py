"""The SACK sender's scoreboard and RFC 6675's conservative loss recovery rules, in segments.

Why a scoreboard: with SACK (RFC 2018) the receiver says which segments above the cumulative ACK
it holds, so the sender can retransmit every hole of a window in about one RTT instead of one hole
per RTT (NewReno without SACK, RFC 6582), and can estimate how much is still in the network
(``pipe``) from what has left it rather than from the flight.

RFC 6675's rules as they read when every segment is one MSS (the model counts segments):

* **IsLost(S)**: DupThresh discontiguous SACKed sequences above S, or more than
  (DupThresh - 1) * SMSS bytes SACKed above S. With whole segments both mean "at least DupThresh
  SACKed segments above S", so an unSACKed segment is lost exactly when it lies below the
  DupThresh-th highest SACKed segment (:attr:`Scoreboard.lost_edge`); a SACKed one never is.
* **pipe** (SetPipe): over the unSACKed segments from HighACK to HighData, one for each not
  lost, and one more for each retransmitted (at or below HighRxt).
* **NextSeg**: (1) the first unSACKed segment above HighRxt that is lost; else (2) new data if
  the receive window allows; else (3) the first unSACKed segment above HighRxt with a SACKed
  segment above it. Rule (4), the rescue retransmission, is a MAY and is not modelled (Linux
  does not do it either; it has tail loss probes, not modelled either).
"""

from __future__ import annotations

from bisect import bisect_left, insort

__all__ = ["Scoreboard", "DUPTHRESH", "MAX_SACK_BLOCKS"]

DUPTHRESH = 3
MAX_SACK_BLOCKS = 3  # with the timestamp option, 40 option bytes hold three blocks (RFC 2018 3)


class Scoreboard:
    """The segments SACKed above the cumulative ACK, and HighRxt."""

    def __init__(self, dupthresh: int = DUPTHRESH) -> None:
        self.dupthresh = dupthresh
        self._sorted: list[int] = []  # SACKed segments at or above snd_una, ascending
        self._set: set[int] = set()
        self.high_rxt = -1  # the highest segment retransmitted in this recovery

    def __len__(self) -> int:
        return len(self._sorted)

    def __contains__(self, seq: int) -> bool:
        return seq in self._set

    def clear(self) -> None:
        self._sorted.clear()
        self._set.clear()

    def update(self, una: int, snd_max: int, blocks: tuple[tuple[int, int], ...]) -> int:
        """Forget what the cumulative ACK ``una`` covers; mark the blocks' segments (``[start, end)``,
        clamped to what was sent) SACKed; returns how many were newly SACKed."""
        cut = bisect_left(self._sorted, una)
        if cut:
            self._set.difference_update(self._sorted[:cut])
            del self._sorted[:cut]
        new = 0
        for start, end in blocks:
            for seq in range(max(start, una), min(end, snd_max)):
                if seq not in self._set:
                    self._set.add(seq)
                    insort(self._sorted, seq)
                    new += 1
        return new

    def between(self, a: int, b: int) -> int:
        """SACKed segments in ``[a, b)``."""
        return max(bisect_left(self._sorted, b) - bisect_left(self._sorted, a), 0)

    @property
    def lost_edge(self) -> int:
        """UnSACKed segments below this one are lost (IsLost); -1 when fewer than DupThresh are SACKed."""
        return self._sorted[-self.dupthresh] if len(self._sorted) >= self.dupthresh else -1

    @property
    def highest(self) -> int:
        """The highest SACKed segment, -1 if none."""
        return self._sorted[-1] if self._sorted else -1

    def is_lost(self, seq: int) -> bool:
        return seq not in self._set and seq < self.lost_edge

    def pipe(self, una: int, snd_max: int) -> int:
        """RFC 6675 SetPipe over ``[una, snd_max)``."""
        edge = min(max(self.lost_edge, una), snd_max)
        not_lost = (snd_max - edge) - self.between(edge, snd_max)
        top = min(self.high_rxt + 1, snd_max)
        retransmitted = (top - una) - self.between(una, top) if top > una else 0
        return not_lost + retransmitted

    def next_seg(self, una: int, new_data: bool) -> int | None:
        """RFC 6675 NextSeg: the segment to retransmit, -1 for new data (rule 2), None for nothing."""
        seq = max(self.high_rxt + 1, una)
        while seq in self._set:
            seq += 1
        if seq < self.lost_edge:
            return seq
        if new_data:
            return -1
        return seq if seq < self.highest else None
