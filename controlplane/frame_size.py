"""Bits, not packets: the frame size that turns a law's b/s into packets, and a buffer into bytes.

The ALINEA law's rate is in bits/s, but BMv2's egress queue rate (``set_queue_rate``) is in
packets/s, and a modelled buffer counts packets. Two consequences when a port's frames are not all
of one size (docs/background/alinea.md, "Bits, not packets"):

* **The queue rate.** ``rate / (8 * frame)`` packets/s carries ``rate`` bits/s only if ``frame``
  is the mean size of the frames the queue actually sends. :class:`FrameSizeWindow` measures it
  from the port's counters (``MyEgress.tx_routed``, the routed frames that left the port: packets
  and bytes, read through P4Runtime), over the last ``WINDOW_SAMPLES`` reads; a second window the
  frames queued for the port (``MyIngress.fwd_routed``), which a law at its R_max converts at when
  they are smaller (BMv2 stamps a packet's departure when it is queued, at the rate set then). Before the port has
  sent, the smallest frame expected through it; and a law at its R_max converts at no more than ``open_mean``, in
  which the bits of the rate the port did not send count as frames of the flows it has not seen, so
  that a flow that starts or joins is not sent slower than the rate's bits until a read sees it.
* **What the port sent.** A neighbour's report counts this port's packets (in its buffer, drained
  from it); :meth:`FrameSizeWindow.sent_frame` is their frame at the rate they came: as many per
  second as the reads saw the port send are frames of the mean, the rest frames of flows the reads
  have not seen (those ``open_mean`` counts unsent bits in), never above the mean.
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
    """The mean size (whole bytes) of the frames a port sent over the last reads of its counters, and the
    frame a queue rate at the port's whole R_max is set at.

    ``mean``: until the window holds ``MIN_FRAMES`` frames it is the smallest of ``sizes``, or without them
    ``initial`` (what the topology expects); afterwards the mean of the window, kept through a silence (no
    frames, no news). Integer arithmetic: frames of one size give exactly that size.

    ``open_mean`` (with ``sizes``, the data frame sizes expected through the port, and the bits its queue may
    send, ``rate_bps`` at each read): the window's frames with the bits they carried, and the bits the rate
    allowed over the window's span that the port did not send in the frames of flows it has not seen: of the
    smallest size until the window has held ``MIN_FRAMES`` frames (the first flow may be any; the smallest
    makes every later correction, at this hop and the next, one to fewer packets/s), then of ``initial``, the
    topology's expected mean; never above ``mean``. Its packets/s at the rate are never below the packets the
    port sent, and a flow of smaller frames that starts beside a few larger ones is not held to their packet
    rate. Once the port sends its rate (no bits unused), ``mean``. Without ``sizes``: ``mean``."""

    def __init__(self, initial: int, sizes: tuple[int, ...] = ()) -> None:
        if initial <= 0:
            raise ValueError(f"frame size {initial} bytes: must be > 0")
        if any(size <= 0 for size in sizes):
            raise ValueError(f"frame sizes {sizes} bytes: each must be > 0")
        self.smallest = min(sizes) if sizes else 0
        self.mean = self.open_mean = self.smallest or initial
        self.expected = initial
        self.measured = False  # the window has held MIN_FRAMES frames: the mean is the port's, not the smallest
        self._samples: list[tuple[int, int, int]] = []  # (time ns, packets, bytes), oldest first
        self._span: tuple[int, int, int] | None = None  # the window at the last read: frames, bytes sent, ns

    def update(self, packets: int, nbytes: int, now_ns: int = 0, rate_bps: float = 0.0) -> int:
        """One read of the port's counters (cumulative packets and bytes) at ``now_ns``, when its queue may
        send ``rate_bps``; returns the mean."""
        samples = self._samples
        if samples and (packets < samples[-1][1] or nbytes < samples[-1][2]):
            samples.clear()  # the counters were reset (a pipeline pushed again): start over
        samples.append((now_ns, packets, nbytes))
        if len(samples) > WINDOW_SAMPLES + 1:
            del samples[0]
        t0, p0, b0 = samples[0]
        frames, sent = packets - p0, nbytes - b0
        if frames >= MIN_FRAMES:
            self.mean = (sent + frames // 2) // frames
            self.measured = True
        self._span = (frames, sent, now_ns - t0)
        self.open_mean = self.open_frame(rate_bps)
        return self.mean

    @property
    def has_read(self) -> bool:
        """Whether any read of the counters has reached the window."""
        return self._span is not None

    def open_frame(self, rate_bps: float) -> int:
        """``open_mean`` for a queue that may send ``rate_bps``: the window of the last read, with the bits that rate
        allowed over its span and the port did not send in the frames of flows not seen. At the rate of the read,
        ``open_mean`` itself; a rate the port sent all of (or less), the mean; fewer than ``MIN_FRAMES`` frames and
        no bits unused, the open frame kept from before."""
        span = self._span
        if span is None or not self.smallest:
            return self.open_mean if span is None else self.mean
        frames, sent, span_ns = span
        unused = int(rate_bps * span_ns / 8e9) - sent
        if unused > 0:  # the bits the rate allowed and the port did not send, in the frames of flows not seen
            unit = self.expected if self.measured else self.smallest
            whole = frames * unit + unused
            return min(((sent + unused) * unit + whole // 2) // whole, self.mean)
        return self.mean if frames >= MIN_FRAMES else self.open_mean

    def sent_frame(self, pps: float) -> int:
        """The mean frame of ``pps`` packets/s the port sent (a drain of its packets downstream, read in packets):
        as many per second as the window's reads saw the port send are frames of the window's mean, the rest frames
        of flows the reads have not seen, the frames ``open_frame`` counts the bits the port did not send in (the
        smallest until the window has held ``MIN_FRAMES`` frames, then the topology's expected mean); never above
        the mean. With one frame size, exactly that size. Without ``sizes``, before any read, or at ``pps`` no
        higher than the window's: the mean."""
        span = self._span
        if span is None or not self.smallest or pps <= 0:
            return self.mean
        frames, _, span_ns = span
        seen = frames * 1e9 / span_ns if span_ns > 0 else 0.0
        if pps <= seen:
            return self.mean
        unit = self.expected if self.measured else self.smallest
        frame = round((seen * self.mean + (pps - seen) * unit) / pps)
        return frame if frame < self.mean else self.mean


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
