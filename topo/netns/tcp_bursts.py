"""How bursty a netns TCP run's data reaches the bottleneck, against the ACKs that clock it.

    .venv/bin/hbh tcp-bursts RUN_DIR... [--rate-mbps 20]

(RUN_DIR: a netns run with pcaps, e.g. ``topo.experiments.tcp_validation --pcap``'s ``OUT/<case>/netns``.)

Why: with one bulk flow on H1 -- R1 -- H2 (``topo.experiments.tcp_validation``) the bottleneck's queue below
the bandwidth-delay product stays empty if every ACK releases its segments as the ACK clock
spaces them; a queue there (and a loss with the window below the path, as the kernel's 20 Mb/s,
200 ms runs show) needs data arriving in runs faster than the bottleneck drains it. R1's pcaps
(the switch's own capture of every frame on its ports) say where such runs are born: data
arriving from H1 (``p1_in``) in runs that the ACKs leaving R1 toward H1 (``p1_out``) do not have
were made on H1's side (its host process relaying the ACKs into its tun and its kernel's
segments out of it), not by the receiver or the switch. A run is a sequence of frames each
closer to the previous than half the bottleneck's frame time (faster than the bottleneck drains).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from scapy.error import Scapy_Exception
from scapy.utils import RawPcapReader

from hosts.tcp import MSS
from hosts.tcp.wire import data_frame_bytes
from runtime.arguments import ValueParser

__all__ = ["Profile", "runs", "profile", "pcap_times", "main", "DATA_MIN_BYTES"]

DATA_MIN_BYTES = 1000  # a full data segment's frame (ACKs, SYNs and reports are far shorter)


@dataclass(frozen=True)
class Profile:
    frames: int
    longest: int
    share_5: float  # of the frames, those in runs of at least 5
    share_10: float


def runs(times_s: list[float], gap_s: float) -> list[int]:
    """The lengths of the runs of ``times_s`` (sorted) whose neighbours are closer than ``gap_s``."""
    out: list[int] = []
    n = 0
    for i, t in enumerate(times_s):
        if i and t - times_s[i - 1] < gap_s:
            n += 1
        else:
            if n:
                out.append(n)
            n = 1
    if n:
        out.append(n)
    return out


def profile(times_s: list[float], gap_s: float) -> Profile:
    lengths = runs(times_s, gap_s)
    total = sum(lengths) or 1
    return Profile(sum(lengths), max(lengths, default=0), sum(n for n in lengths if n >= 5) / total,
                   sum(n for n in lengths if n >= 10) / total)


def pcap_times(path: Path, min_bytes: int = 0) -> list[float]:
    """The capture times (s) of the frames of at least ``min_bytes``; ValueError naming the file."""
    try:
        return [m.sec + m.usec / 1e6 for _pkt, m in RawPcapReader(str(path)) if m.wirelen >= min_bytes]
    except (OSError, EOFError, Scapy_Exception) as exc:
        raise ValueError(f"{path}: not a readable pcap ({exc})") from None


def _port_pcap(run_dir: Path, switch: str, suffix: str) -> Path:
    found = sorted((run_dir / "pcap" / switch).glob(f"*{suffix}"))
    if len(found) != 1:
        raise ValueError(f"{run_dir}: no single pcap/{switch}/*{suffix} (a netns run with pcaps writes one)")
    return found[0]


def run_profiles(run_dir: Path, rate_mbps: float, switch: str = "R1") -> tuple[Profile, Profile]:
    """(data arriving from H1, ACKs leaving toward H1) over the second half of the run's capture."""
    gap = data_frame_bytes(MSS) * 8 / (rate_mbps * 1e6) / 2
    data = pcap_times(_port_pcap(run_dir, switch, "p1_in.pcap"), DATA_MIN_BYTES)
    acks = pcap_times(_port_pcap(run_dir, switch, "p1_out.pcap"))
    if not data or not acks:
        raise ValueError(f"{run_dir}: R1's pcaps hold no TCP data or no ACKs")
    middle = (min(data[0], acks[0]) + max(data[-1], acks[-1])) / 2
    return (profile([t for t in data if t >= middle], gap), profile([t for t in acks if t >= middle], gap))


def table(rows: list[tuple[str, Profile, Profile]]) -> str:
    lines = ["| run | frames in runs of >= 5: data from H1 / ACKs toward H1 | >= 10 | longest run (frames) |",
             "|---|---|---|---|"]
    for name, d, a in rows:
        lines.append(f"| {name} | {d.share_5:.1%} / {a.share_5:.1%} | {d.share_10:.1%} / {a.share_10:.1%} "
                     f"| {d.longest} / {a.longest} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh tcp-bursts", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="netns run directories (with pcap/R1/)")
    p.add_argument("--rate-mbps", type=float, default=20.0, help="the bottleneck's rate (default 20)")
    args = p.parse_args(argv)
    try:
        rows = [(r.name, *run_profiles(r, args.rate_mbps)) for r in args.runs]
    except ValueError as exc:
        print(f"tcp_bursts: {exc}", file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
