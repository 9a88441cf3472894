"""BMv2 against p4switch: the same topology and seed in netns on both targets, compared.

Why: p4switch stands in for BMv2 on machines without p4c and BMv2; its numbers are only worth
that much if, where BMv2 exists, a run on it gives the same physics. So each topology is run twice
in network namespaces (``--backend netns``), once per ``--target``, and these are compared:

* loss: zero on both (any loss is a failure of the loop, on either target);
* every buffer's mean and standard deviation: within :data:`BUFFER_POINTS` percentage points;
* every flow's goodput: within :data:`GOODPUT_REL` of p4switch's;
* every link-rate event's reaction: within :data:`REACTION_INTERVALS` report intervals on both;
* on BMv2, that no link emulator held more than a few frames outside the switch
  (topo/netns/link_pacing.py), and on both that the run kept real time (a run that fell behind measured
  the machine, not the target).

The tolerances are argued in docs/howto/bmv2.md ("The differential"): BMv2 forwards on four egress
threads and dates departures with its own clock, so single departures jitter by tens of
microseconds to a few milliseconds where p4switch's port dates each frame exactly; a buffer's mean
and spread move by a point or two with that, not by more.

    hbh bmv2-diff [TOPOLOGY.yaml ...] [--duration 40s] [--seed 1] [--out DIR]
    hbh bmv2-diff --from DIR        # compare runs already made (DIR/NAME/TARGET/summary.json)
    hbh bmv2-diff --only bmv2 --out DIR   # one target's runs (redo one side; then --from DIR)

Prints one markdown table (its bounds are docs/howto/bmv2.md's) and exits 1 when a check fails, 2 on bad
input. Needs root, and ``simple_switch_grpc`` and ``p4c`` on PATH for the BMv2 runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser

__all__ = ["Check", "compare", "table", "cpu_table", "SwitchCpu", "load_average", "DEFAULT_TOPOLOGIES", "BUFFER_POINTS", "GOODPUT_REL", "REACTION_INTERVALS",
           "main"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOPOLOGIES = ("paper-1router", "paper-5router", "capacity-drop", "alinea-merge-2")
TARGETS = ("p4switch", "bmv2")
#: a buffer's mean and its standard deviation, BMv2 against p4switch (percentage points)
BUFFER_POINTS = 3.0
#: a flow's goodput, BMv2 against p4switch (relative)
GOODPUT_REL = 0.02
#: an event's reaction on each target (report intervals)
REACTION_INTERVALS = 3.0


@dataclass(frozen=True)
class Check:
    """One compared quantity of one topology."""

    topology: str
    what: str
    p4switch: str
    bmv2: str
    bound: str
    ok: bool


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _num(x: Any, fmt: str = "{:.2f}") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def compare(name: str, p4: dict[str, Any], bm: dict[str, Any]) -> list[Check]:
    """The checks of one topology from its two summaries (summary.json of each target's run)."""
    out: list[Check] = []
    lost = [s.get("loss", {}).get("total") for s in (p4, bm)]
    out.append(Check(name, "packets lost", _num(lost[0], "{}"), _num(lost[1], "{}"), "0 on both",
                     lost[0] == 0 and lost[1] == 0))
    bufs_p4, bufs_bm = p4.get("buffers", {}), bm.get("buffers", {})
    for buf in sorted(set(bufs_p4) | set(bufs_bm)):
        a, b = bufs_p4.get(buf), bufs_bm.get(buf)
        for stat in ("mean", "std"):
            x = a.get(stat) if a else None
            y = b.get(stat) if b else None
            ok = x is not None and y is not None and abs(100 * (y - x)) <= BUFFER_POINTS + 1e-9
            out.append(Check(name, f"{buf} {stat}", _pct(x), _pct(y), f"±{BUFFER_POINTS:g} points", ok))
    flows_p4, flows_bm = p4.get("flows", {}), bm.get("flows", {})
    for flow in sorted(set(flows_p4) | set(flows_bm)):
        x = (flows_p4.get(flow) or {}).get("goodput_bps")
        y = (flows_bm.get(flow) or {}).get("goodput_bps")
        ok = bool(x) and y is not None and abs(y - x) <= GOODPUT_REL * x
        out.append(Check(name, f"{flow} goodput", _num(x and x / 1e6, "{:.3f} Mb/s"),
                         _num(y and y / 1e6, "{:.3f} Mb/s"), f"±{100 * GOODPUT_REL:g} %", ok))
    ev_p4 = [e for e in p4.get("events", []) if e.get("kind") == "link_rate"]
    ev_bm = [e for e in bm.get("events", []) if e.get("kind") == "link_rate"]
    for i in range(max(len(ev_p4), len(ev_bm))):
        e1 = ev_p4[i] if i < len(ev_p4) else {}
        e2 = ev_bm[i] if i < len(ev_bm) else {}
        x, y = e1.get("reaction_intervals"), e2.get("reaction_intervals")
        ok = x is not None and y is not None and x <= REACTION_INTERVALS and y <= REACTION_INTERVALS
        what = f"reaction to {e1.get('link') or e2.get('link')} at {e1.get('at_s', e2.get('at_s'))} s (intervals)"
        out.append(Check(name, what, _num(x), _num(y), f"≤ {REACTION_INTERVALS:g} on both", ok))
    backlog = bm.get("link_backlog")
    if backlog is not None:
        peak = max(backlog.get("peak_backlog", {}).values(), default=0)
        left = max(backlog.get("final_backlog", {}).values(), default=0)
        out.append(Check(name, "frames waiting in a link emulator: most, at the end", "–", f"{peak}, {left}",
                         f"≤ {backlog.get('threshold_frames', 4)}", not backlog.get("hidden_queue", False)))
    kept = [(s.get("realtime") or {}).get("kept_up") for s in (p4, bm)]
    out.append(Check(name, "kept real time", _yes(kept[0]), _yes(kept[1]), "yes on both", kept[0] is True
                     and kept[1] is True))
    if p4.get("load_average") or bm.get("load_average"):  # what else the machine ran meanwhile: not a check
        out.append(Check(name, "load average, start-end (1 min)", _loads(p4), _loads(bm), "–", True))
    return out


def _loads(summary: dict[str, Any]) -> str:
    loads = summary.get("load_average") or []
    return "-".join(_num(x, "{:.1f}") for x in loads) or "–"


def _yes(v: Any) -> str:
    return "–" if v is None else ("yes" if v else "no")


def table(checks: list[Check]) -> str:
    lines = ["| topology | quantity | p4switch | BMv2 | bound | |", "|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c.topology} | {c.what} | {c.p4switch} | {c.bmv2} | {c.bound} | {'ok' if c.ok else '**no**'} |")
    return "\n".join(lines)


def _topology_path(arg: str) -> Path:
    p = Path(arg)
    if p.suffix not in (".yaml", ".yml"):
        p = ROOT / "topo" / f"{arg}.yaml"
    if not p.is_file():
        raise ValueError(f"{arg}: no such topology file (give a .yaml path or one of topo/*.yaml's names)")
    return p


def _run(path: Path, target: str, duration_ns: int, seed: int, out: Path) -> dict[str, Any]:
    from topo.file.schema import load_topology
    from topo.run.runner import run_experiment

    meter = SwitchCpu(out / "network.json")
    load0 = load_average()
    meter.start()
    try:
        res = run_experiment(load_topology(path), duration_ns, seed=seed, out=out, plots=False, backend="netns",
                             target=target, pcap=False)
    finally:
        meter.stop()
    cores = meter.cores()
    extra = {"switch_cores": cores, "load_average": [load0, load_average()]}
    (out / "switch_cores.json").write_text(json.dumps(extra) + "\n")
    return {**res.summary, **extra}


def load_average() -> float | None:
    """The machine's 1-minute load average (/proc/loadavg), None where it cannot be read.

    Why: the two targets share a two-core machine with whatever else runs; a difference between them
    is worth only as much as the load it was measured under, so each run keeps it, at its start and end."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class SwitchCpu(threading.Thread):
    """Each switch process's CPU over a run, in cores (1.0: one core kept busy), read from /proc.

    Why here: the run's own meter (topo/netns/keepup.py) adds the switches up; what a BMv2 process costs
    the machine (docs/howto/bmv2.md) is per process. It waits for the run's ``network.json`` to name the
    switches and the start, then reads each one's CPU time every 0.5 s; the last reading before a
    process ends is its total."""

    def __init__(self, network_json: Path) -> None:
        super().__init__(daemon=True)
        self.path = network_json
        self._halt = threading.Event()
        self.first: dict[str, tuple[float, float]] = {}  # switch -> (monotonic s, cpu s)
        self.last: dict[str, tuple[float, float]] = {}

    def run(self) -> None:
        pids: dict[str, int] = {}
        while not self._halt.wait(0.5):
            if not pids:
                try:
                    info = json.loads(self.path.read_text())
                except (OSError, ValueError):
                    continue
                if not info.get("t0_monotonic_ns"):
                    continue
                pids = {n: sw["pid"] for n, sw in info.get("switches", {}).items() if sw.get("pid")}
            now = time.monotonic()
            for name, pid in pids.items():
                cpu = _cpu_s(pid)
                if cpu is None:
                    continue
                self.first.setdefault(name, (now, cpu))
                self.last[name] = (now, cpu)

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

    def cores(self) -> dict[str, float]:
        out = {}
        for name, (t0, c0) in self.first.items():
            t1, c1 = self.last[name]
            if t1 > t0:
                out[name] = round((c1 - c0) / (t1 - t0), 3)
        return out


def _cpu_s(pid: int) -> float | None:
    """utime + stime of ``pid`` in seconds, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_table(pairs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> str:
    """Each switch process's cores on each target."""
    lines = ["| topology | switch | p4switch (cores) | BMv2 (cores) |", "|---|---|---|---|"]
    for name, p4, bm in pairs:
        a, b = p4.get("switch_cores") or {}, bm.get("switch_cores") or {}
        for sw in sorted(set(a) | set(b)):
            lines.append(f"| {name} | {sw} | {_num(a.get(sw))} | {_num(b.get(sw))} |")
    return "\n".join(lines)


def _load(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "summary.json"
    try:
        summary = dict(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read a run's summary ({exc})") from None
    cores = run_dir / "switch_cores.json"
    if cores.exists():
        extra = json.loads(cores.read_text())
        # {"switch_cores": ..., "load_average": [start, end]}; a bare {switch: cores} before the load was kept
        summary.update(extra if "switch_cores" in extra else {"switch_cores": extra})
    return summary


def build_parser() -> argparse.ArgumentParser:
    p = ValueParser(prog="hbh bmv2-diff", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("topologies", nargs="*", metavar="TOPOLOGY",
                   help=f"topology files or names (default: {', '.join(DEFAULT_TOPOLOGIES)})")
    p.add_argument("--duration", default="40s", help="run time of each run (default 40s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, help="where the runs go (DIR/NAME/TARGET); default: a temporary directory")
    p.add_argument("--from", dest="from_dir", type=Path, metavar="DIR",
                   help="compare the runs already in DIR/NAME/{p4switch,bmv2} instead of running")
    p.add_argument("--only", choices=TARGETS, help="run this target only, into --out (compare later with --from)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names = args.topologies or list(DEFAULT_TOPOLOGIES)
    try:
        paths = [_topology_path(n) for n in names] if args.from_dir is None else []
        if args.from_dir is not None:
            pairs = [(Path(n).stem, _load(args.from_dir / Path(n).stem / "p4switch"),
                      _load(args.from_dir / Path(n).stem / "bmv2")) for n in names]
        else:
            from controlplane.units import UnitError, parse_duration_ns

            try:
                duration = parse_duration_ns(args.duration, "--duration")
            except UnitError as exc:
                raise ValueError(str(exc)) from None
            if args.only is not None:
                if args.out is None:
                    raise ValueError("--only needs --out (the runs are compared later with --from)")
                _run_all(paths, duration, args.seed, args.out, (args.only,))
                print(f"runs of {args.only} in {args.out}; compare with --from {args.out}")
                return 0
            pairs = _run_all(paths, duration, args.seed, args.out)
    except ValueError as exc:
        print(f"bmv2-diff: {exc}", file=sys.stderr)
        return 2
    checks = [c for name, p4, bm in pairs for c in compare(name, p4, bm)]
    print(table(checks))
    if any(p4.get("switch_cores") or bm.get("switch_cores") for _, p4, bm in pairs):
        print()
        print(cpu_table(pairs))
    failed = [c for c in checks if not c.ok]
    print(f"\n{len(checks) - len(failed)} of {len(checks)} checks hold" + (
        "" if not failed else f"; failed: {'; '.join(f'{c.topology} {c.what}' for c in failed)}"))
    return 1 if failed else 0


def _run_all(paths: list[Path], duration_ns: int, seed: int, out: Path | None,
             targets: tuple[str, ...] = TARGETS) -> list[tuple[str, Any, Any]]:
    import contextlib
    import tempfile

    from topo.netns.plumbing import NetnsError

    with contextlib.ExitStack() as stack:
        base = out if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bmv2-diff-")))
        pairs = []
        for path in paths:
            summaries = {}
            for target in targets:
                try:
                    summaries[target] = _run(path, target, duration_ns, seed, base / path.stem / target)
                except NetnsError as exc:
                    raise ValueError(f"{path.stem} on {target}: {exc}") from None
            pairs.append((path.stem, summaries.get("p4switch", {}), summaries.get("bmv2", {})))
        return pairs


if __name__ == "__main__":
    sys.exit(main())
