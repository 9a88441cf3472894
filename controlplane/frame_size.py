"""Bits, not packets: the frame size that turns a law's b/s into packets, and a buffer into bytes.

The ALINEA law's rate is in bits/s, but BMv2's egress queue rate (``set_queue_rate``) is in
packets/s, and a modelled buffer counts packets. Two consequences when a port's frames are not all
of one size (docs/background/alinea.md, "Bits, not packets"):

* **The queue rate.** ``rate / (8 * frame)`` packets/s carries ``rate`` bits/s only if ``frame``
  is the mean size of the frames the queue actually sends. :class:`FrameSizeWindow` measures it
  from the port's counters (``MyEgress.tx_routed``, the routed frames that left the port: packets
  and bytes, read through P4Runtime), over the last ``WINDOW_SAMPLES`` reads.
* **The buffer.** A switch's egress queue is one FIFO shared by the flows of every ingress port;
  by Little's law each port's packets in it are its packet rate times the common wait, so laws
  that hold every port's buffer at one *packet* occupancy share the link equally in packets, not
  in bits. :func:`capacity_in_frames` makes the law read its neighbour's buffer in bytes: a buffer
  of ``capacity`` frames of the neighbour's unit size (the smallest data frame that enters it) holds
  ``capacity * unit`` bytes, which is fewer of this node's larger frames. Never more than
  ``capacity`` frames: the data plane admits packets, not bytes.

With one frame size everywhere both are the identity (the mean is that size, exactly, and the
unit is that size), so such runs are what they were with sizes from the topology file.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FrameSizeWindow", "capacity_in_frames", "packets_for_frames", "WINDOW_SAMPLES", "MIN_FRAMES", "READ_PERIOD_NS"]

#: The agent reads its regulated ports' counters this often (both bindings).
READ_PERIOD_NS: Final = 50_000_000
#: The mean spans the frames sent over the last this many reads (0.2 s): long enough for a
#: steady mean at a few hundred frames/s, short enough to follow a flow that starts or stops.
WINDOW_SAMPLES: Final = 4
#: Fewer frames than this in the window: too few to say what the port sends; the mean is kept.
MIN_FRAMES: Final = 8


class FrameSizeWindow:
    """The mean size (whole bytes) of the frames a port sent over the last reads of its counters.

    Until the window holds ``MIN_FRAMES`` frames it is ``initial`` (what the topology expects);
    afterwards the mean of the window, kept through a silence (no frames, no news). Integer
    arithmetic: frames of one size give exactly that size."""

    def __init__(self, initial: int) -> None:
        if initial <= 0:
            raise ValueError(f"frame size {initial} bytes: must be > 0")
        self.mean = initial
        self._samples: list[tuple[int, int]] = []  # (packets, bytes), oldest first

    def update(self, packets: int, nbytes: int) -> int:
        """One read of the port's counters (cumulative packets and bytes); returns the mean."""
        samples = self._samples
        if samples and (packets < samples[-1][0] or nbytes < samples[-1][1]):
            samples.clear()  # the counters were reset (a pipeline pushed again): start over
        samples.append((packets, nbytes))
        if len(samples) > WINDOW_SAMPLES + 1:
            del samples[0]
        frames = packets - samples[0][0]
        if frames >= MIN_FRAMES:
            self.mean = (nbytes - samples[0][1] + frames // 2) // frames
        return self.mean


def capacity_in_frames(capacity: int, unit_bytes: int, frame_bytes: int) -> int:
    """A buffer of ``capacity`` frames of ``unit_bytes`` bytes, counted in frames of ``frame_bytes``:
    ``capacity * unit / frame`` rounded, at least 1 and at most ``capacity`` (the data plane admits
    ``capacity`` packets whatever their size). ``unit_bytes`` 0: the buffer is in packets."""
    if unit_bytes <= 0 or frame_bytes <= unit_bytes or capacity <= 0:
        return capacity
    frames = (capacity * unit_bytes + frame_bytes // 2) // frame_bytes
    return frames if frames > 1 else 1


def packets_for_frames(frames: int, unit_bytes: int, frame_bytes: int) -> int:
    """The fewest packets of capacity that :func:`capacity_in_frames` counts as at least ``frames`` frames of
    ``frame_bytes``: its rounding, ``(capacity * unit + frame // 2) // frame >= frames``, solved for the
    capacity (a remedy the loop analysis words in the packets a topology file's ``buffer:`` sets)."""
    if unit_bytes <= 0 or frame_bytes <= unit_bytes or frames <= 1:  # in packets, or at least one frame anyway
        return frames
    return max(frames, -(-(frames * frame_bytes - frame_bytes // 2) // unit_bytes))
