"""CVIHIS RTM against the kernel's reno (netns) beside the model's (simulator), cell by cell of the reno grid.

    sudo .venv/bin/hbh rtm-kernel --cells 4.5/200,4.5/140,3/200 --starts default,half --seconds 240 \\
        --windows 40,240 --seeds 1-3 --save-kernel docs/tcp-kernel-runs/rtm
    .venv/bin/hbh rtm-kernel --cells 4.5/200,4.5/140,3/200 --starts default,half --seconds 240 \\
        --windows 40,240 --seeds 1-3 --kernel-from docs/tcp-kernel-runs/rtm       # no root

Why: ``hbh results-tcp --grid`` measures RTM's share against the simulator's reno, and where the
bandwidth-delay product reaches the 50-packet FIFO RTM ends above reno (docs/background/cvihis.md,
"Why RTM from half the capacity ends above reno"). Whether that is RTM's or the model's, only the
kernel's reno can say: this runs the grid's own cell (``topo.results.tcp.rtm_topology``, the file
``rtm_cell`` runs) with the kernel's TCP through p4switch in netns and in the simulator, and reads
both runs the same way.

Each (seed, cell, start) is one run of ``--seconds`` per backend; each window W of ``--windows`` is
read from it over (W/2, W], as ``hbh results-tcp --grid --seconds W`` reads a W-second run (a run's
first W seconds do not depend on its length: in the simulator bit for bit,
tests/topo/results/test_rtm_kernel.py). Per window: RTM's and reno's mean receive rates and their ratio
(the larger over the smaller), the bottleneck's utilisation, how often the FIFO was empty (its
100 ms samples at most ``EMPTY_PACKETS``) and reno's window at its reductions (twice each new
ssthresh: Linux's and the model's reno halve). A netns run carries the load average before and after
it and whether it kept real time (topo/netns/keepup.py).

Netns runs take real time and root: run them one at a time on a machine as quiet as it gets.
``--save-kernel DIR`` keeps each kernel run's measures as ``DIR/<run>.json`` (written as soon as the
run ends; a run already there is not run again), ``--kernel-from DIR`` tabulates them without root,
the simulator's side run now.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.netns.keepup import verdict
from topo.results.tcp import START_LABELS, START_NAMES, grid_cells, rtm_topology, start_rate
from topo.run.runner import run_experiment

__all__ = ["Spec", "measure", "record_of_run", "table", "main", "EMPTY_PACKETS", "FRAME_BITS"]

ROOT = Path(__file__).resolve().parents[2]
S = 1_000_000_000
#: a FIFO holding at most this many packets counts as empty (one in service, one arriving), as
#: tests/topo/cvihis_cycles.py counts it
EMPTY_PACKETS = 2
#: a data frame of either flow (1514 bytes), for the bandwidth-delay product in frames
FRAME_BITS = 1514 * 8
#: the reading of the runs stored before a run recorded its own (``reading``): the default from c72e5d4 on
STORED_BEFORE_READING = "reprobe-slow"
BOTTLENECK = ("R1", "R2")


@dataclass(frozen=True)
class Spec:
    """One run: a grid cell (bottleneck rate, RTT, access delay), RTM's start by name, a seed."""

    rate: str
    rtt_ms: int
    delay: str
    start: str  # a name of START_NAMES
    seed: int
    reading: str = ""  # a variant of hosts/cvihis/variants.py; empty: the default


    @property
    def cell(self) -> str:
        return f"{self.rate.removesuffix('Mbps')}/{self.rtt_ms}"

    @property
    def rate_bps(self) -> float:
        return float(self.rate.removesuffix("Mbps")) * 1e6

    def name(self, seconds: float) -> str:
        return (
            f"{self.rate.removesuffix('Mbps')}mbps-{self.rtt_ms}ms-{self.start}-seed{self.seed}-{seconds:g}s"
        )

    def topology(self) -> Any:
        return rtm_topology(
            self.rate,
            self.delay,
            "reno",
            f"{{variant: {self.reading}}}" if self.reading else "",
            start_rate("" if self.start == "default" else self.start, self.rate),
        )

    @property
    def variant(self) -> str:
        """The reading's name, the default's resolved: what a stored run records (``reading``)."""
        from hosts.cvihis.variants import DEFAULT_VARIANT

        return self.reading or DEFAULT_VARIANT


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def measure(run_dir: Path, rate_bps: float, windows: list[float]) -> dict[str, dict[str, Any]]:
    """Per window W (its text, e.g. "40"), over (W/2, W] of the run in ``run_dir`` (either backend's files):
    RTM's and reno's mean receive rates (b/s, the summary's 0.5 s bins), utilisation of ``rate_bps``, the
    fraction of laws.csv's samples of the bottleneck with the FIFO empty, reno's reductions and its mean
    window at them (twice each new ssthresh of tcp.csv). ValueError naming a missing file."""
    for name in ("summary.json", "laws.csv", "tcp.csv"):
        if not (run_dir / name).is_file():
            raise ValueError(f"{run_dir}: no {name} (not a run of topo/cvihis-rtm-vs-tcp.yaml?)")
    series = json.loads((run_dir / "summary.json").read_text())["series"]
    occ = [
        (float(r["t_s"]), int(r["occupancy_pkts"]))
        for r in _rows(run_dir / "laws.csv")
        if (r["node"], r["toward"]) == BOTTLENECK
    ]
    reductions, previous = [], None
    for r in _rows(run_dir / "tcp.csv"):
        if r["flow"] != "tcp" or not r.get("ssthresh_pkts"):
            continue
        ss = int(r["ssthresh_pkts"])
        if ss != previous and ss < 2**30:  # TCP_INFO's "infinite" ssthresh before the first loss
            reductions.append((float(r["t_s"]), 2 * ss))
        previous = ss
    out = {}
    for w in windows:
        a, b = w / 2, w
        rates = {
            f: statistics.fmean(
                [v for t, v in zip(series["t_s"], series["flows"][f]["receive_bps"]) if a < t <= b] or [0.0]
            )
            for f in ("rtm", "tcp")
        }
        samples = [o for t, o in occ if a < t <= b]
        peaks = [p for t, p in reductions if a < t <= b]
        rtm, tcp = rates["rtm"], rates["tcp"]
        out[f"{w:g}"] = {
            "rtm_bps": rtm,
            "tcp_bps": tcp,
            "ratio": max(rtm, tcp) / min(rtm, tcp) if min(rtm, tcp) > 0 else float("inf"),
            "rtm_share": rtm / (rtm + tcp) if rtm + tcp else 0.0,
            "utilisation": (rtm + tcp) / rate_bps,
            "fifo_empty": sum(o <= EMPTY_PACKETS for o in samples) / len(samples) if samples else 0.0,
            "reductions": len(peaks),
            "reno_peak": statistics.fmean(peaks) if peaks else None,
        }
    return out


def record_of_run(
    spec: Spec, seconds: float, windows: list[float], run_dir: Path, **extra: Any
) -> dict[str, Any]:
    """A run's measures (``measure``) with what says how it ran: the summary's realtime block (netns),
    its verdict, reno's minimum RTT, and ``extra`` (loads, wall time, how it was made)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    rt = summary.get("realtime") or {}
    tcp = summary["flows"]["tcp"].get("tcp") or {}
    return {
        "cell": spec.cell,
        "rate": spec.rate,
        "rtt_ms": spec.rtt_ms,
        "delay": spec.delay,
        "start": spec.start,
        "seed": spec.seed,
        "seconds": seconds,
        "backend": summary.get("backend"),
        "windows": measure(run_dir, spec.rate_bps, windows),
        "reno_min_rtt_ms": (tcp.get("rtt_ms") or {}).get("min"),
        "loss": summary["loss"]["total"],
        "realtime": (
            {
                "verdict": verdict(rt),
                "load_1min": rt.get("load_1min"),
                "cores": (rt.get("cpu_cores") or {}).get("total"),
            }
            if rt
            else None
        ),
        **extra,
    }


def _run(spec: Spec, seconds: float, windows: list[float], backend: str, out: Path) -> dict[str, Any]:
    run_dir = out / spec.name(seconds) / backend
    before, t0 = os.getloadavg(), time.time()
    print(
        f"{time.strftime('%H:%M:%S')} {spec.name(seconds)} ({backend}, load {before[0]:.2f}) ...",
        file=sys.stderr,
        flush=True,
    )
    kw = {"pcap": False} if backend == "netns" else {}
    run_experiment(
        spec.topology(), int(seconds * S), seed=spec.seed, out=run_dir, plots=False, backend=backend, **kw
    )
    extra = {}
    if backend == "netns":
        extra = {
            "load_before": [round(v, 2) for v in before],
            "load_after": [round(v, 2) for v in os.getloadavg()],
            "wall_s": round(time.time() - t0, 1),
            "measured": f"netns run of `hbh rtm-kernel` at commit {_commit()}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t0))}",
            "reading": spec.variant,
        }
    return record_of_run(spec, seconds, windows, run_dir, **extra)


def _commit() -> str:
    from topo.experiments.tcp_validation import commit  # noqa: PLC0415 (git, only when a run is recorded)

    return commit()


def _cell(w: dict[str, Any]) -> str:
    return f"{100 * w['rtm_share']:.0f} % (x{w['ratio']:.2f})"


def _util(w: dict[str, Any] | None) -> str:
    return f"{w['utilisation']:.2f}" if w else "-"


def _mech(w: dict[str, Any]) -> str:
    peak = "-" if w["reno_peak"] is None else f"{w['reno_peak']:.0f}"
    return f"{100 * w['fifo_empty']:.0f} % / {peak} ({w['reductions']})"


def _load(k: dict[str, Any]) -> str:
    rt = k.get("realtime") or {}
    said = rt.get("verdict", "?")
    before, after = k.get("load_before"), k.get("load_after")
    loads = f"{before[0]:.1f} -> {after[0]:.1f}" if before and after else f"{rt.get('load_1min') or 0:.1f}"
    cores = f", {rt['cores']:.2f} cores" if rt.get("cores") is not None else ""
    return f"{loads}{cores}, " + ("kept up" if said == "yes" else f"**behind** ({said.removeprefix('no: ')})")


def table(
    rows: list[tuple[Spec, float, dict[str, Any] | None, dict[str, Any] | None]], windows: list[float]
) -> str:
    """One line per (cell, start, window, seed): the kernel's and the model's RTM share (ratio), utilisation,
    FIFO empty / reno's window at its reductions (how many), and the kernel run's load and real-time verdict;
    then per (cell, start, window) the mean and worst ratio over the seeds."""
    lines = [
        "| cell (Mb/s / ms), BDP | RTM starts at | length | seed | kernel: RTM share (ratio) | model: RTM share "
        "(ratio) | utilisation kernel / model | FIFO empty / reno's window at losses (losses) kernel | the same, "
        "model | kernel run: load (1 min) before -> after, its cores, real time |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[tuple[str, str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for w in windows:
        key = f"{w:g}"
        for spec, _seconds, k, s in rows:
            kw, sw = (k or {}).get("windows", {}).get(key), (s or {}).get("windows", {}).get(key)
            bdp = spec.rate_bps * spec.rtt_ms / 1000 / FRAME_BITS
            lines.append(
                f"| {spec.cell}, {bdp:.0f} | {START_LABELS['' if spec.start == 'default' else spec.start]} "
                f"| {key} s | {spec.seed} | {_cell(kw) if kw else '-'} | {_cell(sw) if sw else '-'} | "
                f"{_util(kw)} / {_util(sw)} | "
                f"{_mech(kw) if kw else '-'} | {_mech(sw) if sw else '-'} | {_load(k) if k else '-'} |"
            )
            both = summary.setdefault((spec.cell, spec.start, key), ([], []))
            for side, w_ in zip(both, (kw, sw)):
                if w_:
                    side.append(w_)
    lines += [
        "",
        "| cell | RTM starts at | length | seeds kernel / model | kernel: RTM's mean share, mean ratio (worst) | "
        "model: the same |",
        "|---|---|---|---|---|---|",
    ]
    for (cell, start, key), (ks, ss) in summary.items():
        lines.append(
            f"| {cell} | {START_LABELS['' if start == 'default' else start]} | {key} s | {len(ks)} / {len(ss)} | "
            f"{_over(ks)} | {_over(ss)} |"
        )
    return "\n".join(lines)


def _over(ws: list[dict[str, Any]]) -> str:
    """RTM's mean share and the mean (worst) ratio over some runs' windows, "-" for none."""
    if not ws:
        return "-"
    ratios = [w["ratio"] for w in ws]
    share = statistics.fmean(w["rtm_share"] for w in ws)
    return f"{100 * share:.0f} %, {statistics.fmean(ratios):.2f} ({max(ratios):.2f})"


def _numbers(text: str, what: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{what} {text}: not a comma list of numbers") from None
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"{what} {text}: give one or more positive numbers")
    return values


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    try:
        seeds = list(range(int(a), int(b or a) + 1))
    except ValueError:
        raise ValueError(f"--seeds {text}: not N or N-M") from None
    if not seeds:
        raise ValueError(f"--seeds {text}: an empty range")
    return seeds


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(
        prog="hbh rtm-kernel",
        description="CVIHIS RTM against the kernel's reno (netns) "
        "beside the model's (simulator), cell by cell of the reno grid",
    )
    p.add_argument(
        "--cells",
        default="4.5/200,4.5/140,3/200",
        help="grid cells, MBPS/RTT (default the three where the bandwidth-delay product reaches the FIFO)",
    )
    p.add_argument(
        "--starts", default="default,half", help=f"RTM's starting rates, of {', '.join(START_NAMES)}"
    )
    p.add_argument("--seconds", type=float, default=240.0, help="each run's length (s)")
    p.add_argument(
        "--windows", default="40,240", help="run lengths W to read, each over (W/2, W], at most --seconds"
    )
    p.add_argument("--seeds", default="1", help="seeds, N or N-M")
    p.add_argument("--backends", default="netns,sim", help="netns,sim (default), or one of them")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "rtm-kernel", help="the runs' directories")
    p.add_argument(
        "--save-kernel",
        type=Path,
        help="keep each kernel run's measures as DIR/<run>.json (a run already there is not run again)",
    )
    p.add_argument(
        "--kernel-from", type=Path, help="take the kernel's side from DIR/<run>.json instead of running it"
    )
    p.add_argument("--reading", default="", help="the CVIHIS variant RTM runs (default: the default reading); a "
                   "stored run of another reading is refused")
    args = p.parse_args(argv)
    try:
        cells = grid_cells(args.cells)
        windows = _numbers(args.windows, "--windows")
        seeds = _seeds(args.seeds)
        starts = [s.strip() for s in args.starts.split(",") if s.strip()]
        if not starts or any(s not in START_NAMES for s in starts):
            raise ValueError(f"--starts {args.starts}: use one or more of {', '.join(START_NAMES)}")
        if args.seconds <= 0 or max(windows) > args.seconds:
            raise ValueError(f"--windows {args.windows}: each at most --seconds {args.seconds:g}")
        from hosts.cvihis.variants import VARIANTS

        if args.reading and args.reading not in VARIANTS:
            raise ValueError(f"--reading {args.reading}: not one of {', '.join(VARIANTS)}")
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        if not backends or any(b not in ("netns", "sim") for b in backends):
            raise ValueError(
                f"--backends {args.backends}: unknown {', '.join(b for b in backends if b not in ('netns', 'sim')) or '(none)'} (netns, sim)"
            )
    except ValueError as exc:
        print(f"hbh rtm-kernel: {exc}", file=sys.stderr)
        return 2
    specs = [
        Spec(rate, rtt, delay, start, seed, args.reading)
        for seed in seeds
        for rate, rtt, delay in cells
        for start in starts
    ]
    kernel_dir = args.kernel_from or args.save_kernel
    if "netns" in backends:
        if args.kernel_from is not None:
            missing = [
                s.name(args.seconds)
                for s in specs
                if not (args.kernel_from / f"{s.name(args.seconds)}.json").is_file()
            ]
            if missing:
                print(
                    f"hbh rtm-kernel: --kernel-from {args.kernel_from}: no {', '.join(m + '.json' for m in missing)}",
                    file=sys.stderr,
                )
                return 2
        elif os.geteuid() != 0 and not all(
            args.save_kernel and (args.save_kernel / f"{s.name(args.seconds)}.json").is_file() for s in specs
        ):
            print(
                "hbh rtm-kernel: the kernel's side runs in network namespaces: run as root (or --kernel-from DIR, "
                "or --backends sim)",
                file=sys.stderr,
            )
            return 2
    rows = []
    for spec in specs:
        k = s = None
        stored = kernel_dir / f"{spec.name(args.seconds)}.json" if kernel_dir is not None else None
        if "netns" in backends:
            if stored is not None and stored.is_file():
                k = json.loads(stored.read_text())
                if k.get("reading", STORED_BEFORE_READING) != spec.variant:
                    print(f"hbh rtm-kernel: {stored}: a run of {k.get('reading', STORED_BEFORE_READING)}, not of "
                          f"{spec.variant} (--reading)", file=sys.stderr)
                    return 2
                missing = [f"{w:g}" for w in windows if f"{w:g}" not in k["windows"]]
                if missing:  # a window not read when it was stored: read it from the run, if kept
                    try:
                        k["windows"].update(
                            measure(args.out / spec.name(args.seconds) / "netns", spec.rate_bps, windows)
                        )
                    except ValueError as exc:
                        print(
                            f"hbh rtm-kernel: {stored}: window(s) {', '.join(missing)} not stored and {exc}",
                            file=sys.stderr,
                        )
                        return 2
            else:
                k = _run(spec, args.seconds, windows, "netns", args.out)
                if args.save_kernel is not None:
                    args.save_kernel.mkdir(parents=True, exist_ok=True)
                    stored.write_text(json.dumps(k, indent=1, sort_keys=True) + "\n")  # type: ignore[union-attr]
        if "sim" in backends:
            s = _run(spec, args.seconds, windows, "sim", args.out)
        rows.append((spec, args.seconds, k, s))
    print(table(rows, windows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
