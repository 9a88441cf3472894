"""Where a netns TCP sender's runs of data are born: a timeline of its host process's frame loop.

    HBH_LOOP_TRACE=DIR sudo -E chrt -r 10 .venv/bin/hbh tcp-validation ... --pcap --out OUT
    .venv/bin/hbh loop-trace DIR/H1.trace.json [--rate-mbps 20] [--delay-ms 50]

Why: R1's pcaps (``topo.netns.tcp_bursts``) show data arriving from H1 in runs the ACKs leaving R1
toward H1 do not have; between the two captures are H1's host process and H1's kernel. With
``HBH_LOOP_TRACE`` set, every host process (topo/netns/host.py) records, on CLOCK_MONOTONIC,
each TCP frame it writes into its tun (``ack``), each read of its tun with the number of full
data segments read (``read``), each full data frame its uplink hands to the wire with how late
its loop ran the delivery (``out``), and each record its TCP sender thread writes to the socket
(``send``), and writes them to ``DIR/<host>.trace.json`` at the end. This module sorts the
runs of data frames leaving the host over the second half (frames closer than half the
bottleneck's frame time, as ``topo.netns.tcp_bursts``) by what started them:

* ``late``: the loop delivered the run's frames late (it did not run at their time: the
  machine's other real-time threads held the CPUs), so frames due apart left together;
* ``acks``: three or more ACKs written into the tun within 0.4 ms before the read (a bunch of
  ACKs, as they arrived or as the loop read them), which the kernel answered at once;
* ``app``: three or more records written by the sender thread within 0.4 ms before the read
  (the window had opened beyond what the socket held unsent, ``TCP_NOTSENT_LOWAT``);
* ``other``: one or two ACKs releasing five or more segments.
"""

from __future__ import annotations

import bisect
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hosts.tcp import MSS
from hosts.tcp.wire import data_frame_bytes
from runtime.arguments import ValueParser
from topo.net.stats import percentile
from topo.netns.tcp_bursts import DATA_MIN_BYTES, Profile, profile

__all__ = ["LoopTrace", "ENV", "load", "classify", "main", "WINDOW_NS", "KINDS"]

ENV = "HBH_LOOP_TRACE"
WINDOW_NS = 400_000  # what counts as "just before" a tun read
KINDS = ("late", "acks", "app", "other")


@dataclass
class LoopTrace:
    """The events of one host process (appends only; the loop and the sender thread append)."""

    ack: list[int] = field(default_factory=list)
    read: list[tuple[int, int]] = field(default_factory=list)
    out: list[tuple[int, int]] = field(default_factory=list)
    send: list[int] = field(default_factory=list)

    @staticmethod
    def from_env() -> LoopTrace | None:
        return LoopTrace() if os.environ.get(ENV) else None

    def on_ack(self) -> None:
        self.ack.append(time.monotonic_ns())

    def on_read(self, packets: list[bytes]) -> None:
        self.read.append((time.monotonic_ns(), sum(len(p) >= DATA_MIN_BYTES - 14 for p in packets)))

    def on_out(self, frame: bytes, late_ns: int) -> None:
        if len(frame) >= DATA_MIN_BYTES:
            self.out.append((time.monotonic_ns(), late_ns))

    def on_send(self) -> None:
        self.send.append(time.monotonic_ns())

    def write(self, host: str) -> Path:
        """``$HBH_LOOP_TRACE/<host>.trace.json``."""
        path = Path(os.environ[ENV]) / f"{host}.trace.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"ack": self.ack, "read": self.read, "out": self.out, "send": self.send}))
        return path


def load(path: Path) -> LoopTrace:
    try:
        raw = json.loads(path.read_text())
        return LoopTrace(list(raw["ack"]), [tuple(x) for x in raw["read"]], [tuple(x) for x in raw["out"]],
                         list(raw["send"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a loop trace written by topo/netns/host.py ({exc})") from None


@dataclass(frozen=True)
class Sorted:
    """The second half's data runs of >= 5 frames by cause (frames), and the profiles to compare."""

    frames: dict[str, int]
    outs: Profile  # data frames leaving the host
    acks: Profile  # ACKs written into its tun
    late_p99_us: float
    late_max_us: float


def _runs(times: list[tuple[int, int]], gap_ns: int) -> list[list[tuple[int, int]]]:
    out: list[list[tuple[int, int]]] = []
    for x in times:
        if out and x[0] - out[-1][-1][0] < gap_ns:
            out[-1].append(x)
        else:
            out.append([x])
    return out


def _cause(run: list[tuple[int, int]], tr: LoopTrace, reads: list[tuple[int, int]], gap_ns: int,
           delay_ns: int) -> str:
    if max(late for _t, late in run) > gap_ns:
        return "late"
    times = [t for t, _n in reads]
    # the tun reads the run's frames came from (a frame leaves its delay after its read), the largest first
    found = {bisect.bisect_right(times, t - late - delay_ns) - 1 for t, late in run} - {-1}
    if not found:
        return "other"
    t_read = reads[max(found, key=lambda j: reads[j][1])][0]

    def before(times: list[int]) -> int:
        return bisect.bisect_right(times, t_read) - bisect.bisect_left(times, t_read - WINDOW_NS)

    if before(tr.send) >= 3:
        return "app"
    return "acks" if before(tr.ack) >= 3 else "other"


def classify(tr: LoopTrace, rate_mbps: float, delay_ms: float) -> Sorted:
    """Sort the second half's runs of >= 5 data frames by cause; ValueError on an empty trace."""
    if not tr.out or not tr.ack:
        raise ValueError("the trace has no data frames out or no ACKs in (not a TCP sender's host?)")
    gap_ns = round(data_frame_bytes(MSS) * 8 / (rate_mbps * 1e6) / 2 * 1e9)
    middle = (min(tr.out[0][0], tr.ack[0]) + max(tr.out[-1][0], tr.ack[-1])) / 2
    outs = [x for x in sorted(tr.out) if x[0] >= middle]
    reads = [(t, n) for t, n in sorted(tr.read) if n]
    frames: Counter[str] = Counter({k: 0 for k in KINDS})
    for run in _runs(outs, gap_ns):
        if len(run) >= 5:
            frames[_cause(run, tr, reads, gap_ns, round(delay_ms * 1e6))] += len(run)
    late = sorted(x[1] for x in outs)
    return Sorted(dict(frames), profile([t / 1e9 for t, _l in outs], gap_ns / 1e9),
                  profile([t / 1e9 for t in tr.ack if t >= middle], gap_ns / 1e9),
                  percentile(late, 0.99) / 1e3, late[-1] / 1e3)


def long_runs(tr: LoopTrace, rate_mbps: float, min_frames: int) -> list[tuple[float, int, float]]:
    """The whole run's runs of at least ``min_frames`` data frames leaving the host: (when, in s
    from the trace's first TCP frame in, frames, how late the loop delivered the run's latest, ms).
    Why: a loss of a 200 ms run's is decided by one burst (docs/howto/tcp.md); this finds its time and
    whether the loop was stalled, to set beside the sender's TCP_INFO trace."""
    if not tr.out or not tr.ack:
        raise ValueError("the trace has no data frames out or no ACKs in (not a TCP sender's host?)")
    gap_ns = round(data_frame_bytes(MSS) * 8 / (rate_mbps * 1e6) / 2 * 1e9)
    return [((run[0][0] - tr.ack[0]) / 1e9, len(run), max(late for _t, late in run) / 1e6)
            for run in _runs(sorted(tr.out), gap_ns) if len(run) >= min_frames]


def arrivals(tr: LoopTrace, rate_mbps: float) -> Profile:
    """A TCP receiver's host: the second half's frames its loop wrote into its tun (the data, which
    the bottleneck hands over one frame time apart), as runs. Runs here are its loop's: the kernel
    ACKs each bunch at once, and the ACKs reach the sender bunched."""
    if len(tr.ack) < 2:
        raise ValueError("the trace has no TCP frames written into the tun (not a TCP host?)")
    gap_s = data_frame_bytes(MSS) * 8 / (rate_mbps * 1e6) / 2
    middle = (tr.ack[0] + tr.ack[-1]) / 2
    return profile([t / 1e9 for t in tr.ack if t >= middle], gap_s)


def report(name: str, s: Sorted) -> str:
    total = sum(s.frames.values()) or 1
    causes = ", ".join(f"{k} {s.frames[k] / total:.0%}" for k in KINDS)
    return (f"{name}: data out in runs of >= 5: {s.outs.share_5:.1%} (longest {s.outs.longest}); ACKs into the tun "
            f"in runs of >= 5: {s.acks.share_5:.1%} (longest {s.acks.longest}); delivery late p99 "
            f"{s.late_p99_us:.0f} us, max {s.late_max_us / 1e3:.1f} ms; the runs' frames by cause: {causes}")


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh loop-trace", description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+", type=Path, help="DIR/<host>.trace.json of TCP senders' hosts")
    p.add_argument("--rate-mbps", type=float, default=20.0, help="the bottleneck's rate (default 20)")
    p.add_argument("--delay-ms", type=float, default=50.0, help="the sender's uplink delay (default 50: 200 ms RTT)")
    p.add_argument("--long", type=int, metavar="N", help="list the sender's runs of at least N data frames instead")
    p.add_argument("--receiver", action="store_true",
                   help="a TCP receiver's host: how bunched its loop wrote the arriving data into its tun")
    args = p.parse_args(argv)
    try:
        for path in args.traces:
            tr = load(path)
            if args.receiver:
                a = arrivals(tr, args.rate_mbps)
                print(f"{path}: data written into the tun in runs of >= 5: {a.share_5:.1%}, >= 10: "
                      f"{a.share_10:.1%} (longest {a.longest})")
            elif args.long:
                for at, n, late in long_runs(tr, args.rate_mbps, args.long):
                    print(f"{path}: {n} frames at {at:.3f} s, delivered up to {late:.1f} ms late")
            else:
                print(report(str(path), classify(tr, args.rate_mbps, args.delay_ms)))
    except ValueError as exc:
        print(f"loop_trace: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
