"""The simulator's TCP model against the kernel's: the same single bottleneck in both backends.

    sudo .venv/bin/hbh tcp-validation --duration 60s --seed 1 --save-kernel docs/tcp-kernel-runs --doc docs/howto/tcp.md
    .venv/bin/hbh tcp-validation --duration 60s --seed 1 --kernel-from docs/tcp-kernel-runs --doc docs/howto/tcp.md

Why: the model (``hosts/tcp``) is only worth running where it behaves as Linux does. This runs
H1 -- R1 -- H2 (access link ten times the bottleneck's rate, bottleneck R1 -> H2 with a
``BUFFER``-packet drop-tail FIFO, each link a quarter of the RTT's propagation delay) with one
bulk TCP flow, for reno and cubic at 2 and 20 Mb/s and 20 and 200 ms RTT, in the simulator and
in network namespaces with the kernel's TCP through p4switch, and tabulates goodput and the
bottleneck's mean occupancy (the summary's second half) with their relative differences. Both
sides run with SACK (the kernel's default; the model's RFC 6675 recovery), or both without it
(``--no-sack``: the kernel's ``net.ipv4.tcp_sack`` off, the model's NewReno recovery, RFC 6582).

The simulator's side runs over the path the kernel's run measured: the topology's links lengthened
by what the kernel's minimum RTT exceeds the topology's own (:func:`path_extra_ms`; the netns relays
add a fraction of a millisecond per hop), unless ``--topology-path``.

``--doc FILE`` rewrites the table between the ``<!-- tcp-validation -->`` markers of FILE (with
the command and the commit), so every number there comes from this command. Needs root (the
netns backend).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.units import parse_duration_ns
from hosts.tcp import MSS
from hosts.tcp.wire import ACK_FRAME_BYTES, data_frame_bytes
from runtime.arguments import ValueParser
from topo.experiments.tcp_trace import TRACE_SUFFIX, trace_of_run, write_trace
from topo.file.schema import load_topology_text
from topo.netns import tcp_ends
from topo.netns.host import relay_mode
from topo.netns.keepup import verdict
from topo.run.runner import run_experiment

__all__ = ["Case", "CASES", "topology_text", "run_case", "table", "main", "rewrite_doc", "soundness", "max_rtt_ms",
           "BUFFER", "TOLERANCE", "commit", "path_rtt_ms", "path_extra_ms", "pick_cases", "picked", "rewrite_section"]

ROOT = Path(__file__).resolve().parents[2]
BUFFER = 50
TOLERANCE = 0.10
MARK_BEGIN, MARK_END = "<!-- tcp-validation -->", "<!-- /tcp-validation -->"


@dataclass(frozen=True)
class Case:
    cc: str
    rate_mbps: int
    rtt_ms: int

    @property
    def name(self) -> str:
        return f"{self.cc}-{self.rate_mbps}mbps-{self.rtt_ms}ms"


CASES = tuple(Case(cc, rate, rtt) for cc in ("reno", "cubic") for rate in (2, 20) for rtt in (20, 200))


def topology_text(case: Case, buffer: int = BUFFER, sack: bool = True, extra_rtt_ms: float = 0.0) -> str:
    """The case's topology file: one bulk flow over a single bottleneck; ``extra_rtt_ms`` lengthens
    the path (a quarter on each link and direction), as measured of the netns path (``path_extra_ms``)."""
    d = round((case.rtt_ms + extra_rtt_ms) / 4, 6)
    return f"""\
name: tcp-{case.name}
description: "H1 - R1 - H2, {case.rate_mbps} Mb/s bottleneck R1-H2 ({buffer} packets), {case.rtt_ms} ms RTT, one {case.cc} flow"
defaults:
  link: {{rate: {case.rate_mbps}Mbps, delay: {d:g}ms, buffer: {buffer}}}
nodes:
  H1: {{kind: host}}
  R1: {{kind: switch}}
  H2: {{kind: host}}
links:
  - {{ends: [H1, R1], rate: {case.rate_mbps * 10}Mbps}}
  - {{ends: [R1, H2]}}
flows:
  - {{name: t1, src: H1, dst: H2, control: tcp, cc: {case.cc}, sack: {str(sack).lower()}}}
"""


def run_case(case: Case, backend: str, duration_ns: int, seed: int, out: Path | None,
             sack: bool = True, extra_rtt_ms: float = 0.0, pcap: bool = False) -> dict[str, Any]:
    """Goodput (b/s), the bottleneck's mean occupancy (fraction), retransmissions, RTT p50 (ms);
    ``pcap``: the netns run keeps its switch's pcaps (``topo.netns.tcp_bursts`` reads them)."""
    topo = load_topology_text(topology_text(case, sack=sack, extra_rtt_ms=extra_rtt_ms), f"<{case.name}>")
    s = run_experiment(topo, duration_ns, seed=seed, out=out, plots=False, backend=backend,
                       **({"pcap": pcap} if backend == "netns" else {})).summary
    return (measures(s) | ({"path_extra_ms": extra_rtt_ms} if extra_rtt_ms else {})
            | (sender_limits(out / "tcp.csv") if out is not None else {}))


def sender_limits(tcp_csv: Path) -> dict[str, Any]:
    """What else held the kernel's sender, from its TCP_INFO samples (tcp.csv): the time the receiver's
    window held it back (``rwnd_limited_ms``: the sink read late, which the model does not have) and
    the window at which it first left slow start (``slow_start_exit_pkts``: HyStart reads ACK spacing
    in real time, so a late relay can move it)."""
    if not tcp_csv.exists():
        return {}
    with tcp_csv.open() as f:
        rows = list(csv.DictReader(f))
    first_exit = next((r["ssthresh_pkts"] for r in rows if r.get("ssthresh_pkts")), None)
    rwnd = rows[-1].get("rwnd_limited_ms") if rows else None
    return {"rwnd_limited_ms": float(rwnd) if rwnd else 0.0,
            "slow_start_exit_pkts": int(first_exit) if first_exit else None}


def measures(s: dict[str, Any]) -> dict[str, Any]:
    """What the table compares, from a run's summary."""
    f = s["flows"]["t1"]
    return {"goodput_bps": f["goodput_bps"], "occupancy": s["buffers"]["H2<-R1"]["mean"],
            "retransmissions": f["tcp"]["retransmissions"], "rtt_p50_ms": f["tcp"]["rtt_ms"]["p50"],
            "rtt_p99_ms": f["tcp"]["rtt_ms"]["p99"], "min_rtt_ms": f["tcp"]["rtt_ms"].get("min"),
            "owd_p50_ms": f["owd_ms"]["p50"],
            "utilisation": (s["links"].get("R1->H2") or {}).get("utilisation"), "sack": f["tcp"].get("sack"),
            "realtime": s.get("realtime")}


def path_rtt_ms(case: Case) -> float:
    """The topology's own minimum RTT for a full data frame and its ACK: propagation plus each link's
    serialisation of the two (empty queues), what a data segment's RTT sample cannot go below."""
    bottleneck, access = case.rate_mbps * 1e6, case.rate_mbps * 10e6
    return case.rtt_ms + sum(data_frame_bytes(MSS) * 8 / r + ACK_FRAME_BYTES * 8 / r for r in (bottleneck, access)) * 1e3


def path_extra_ms(case: Case, run: dict[str, Any]) -> float:
    """How much longer the netns run's path is per round trip than its topology says: the kernel's
    minimum RTT (TCP_INFO's ``tcpi_min_rtt``, the run's ``min_rtt_ms``) less :func:`path_rtt_ms`.
    0 when not measured (runs stored without it) or not measurable from it: a minimum below any
    data frame's RTT is the SYN's (Linux takes an RTT sample from the SYN-ACK), which says nothing
    of a data frame's path; a minimum above it bounds the data path's extra from below. The simulator's side runs the case with its path lengthened by this
    much, so that both sides run over the same path: the user-space relays (the hosts' tun devices,
    p4switch) add a fraction of a millisecond per hop that the topology's links do not have."""
    measured = run.get("min_rtt_ms")
    if not measured:
        return 0.0
    return round(max(0.0, measured - path_rtt_ms(case)), 3)


def max_rtt_ms(case: Case, buffer: int = BUFFER) -> float:
    """The largest RTT the path can give: propagation plus a full bottleneck queue of 1514-byte frames."""
    return case.rtt_ms + buffer * 1514 * 8 / (case.rate_mbps * 1e6) * 1e3


def soundness(case: Case, run: dict[str, Any]) -> str:
    """Whether a real-time (netns) run kept up with its own emulation: "yes", or why not. Late
    wake-ups in the run (topo/netns/keepup.py; runs stored before it was measured lack it) or a smoothed
    RTT far above what the path can hold (propagation plus a full queue) mean the switch or host
    processes were not scheduled in time (a loaded machine), not TCP; so does a sender the receiver's
    window held back (the sink read late; the model's receiver reads at once). (An idle bottleneck beside a
    busy mean occupancy is no such sign: SACK-less recoveries drain the queue for a while.)"""
    said = verdict(run.get("realtime"))
    if said.startswith("no"):
        return said
    if run.get("rwnd_limited_ms"):
        return f"no: the receiver's window held the sender back {run['rwnd_limited_ms']:.0f} ms (the sink read late)"
    bound = max_rtt_ms(case)
    if run.get("rtt_p99_ms") is not None and run["rtt_p99_ms"] > 1.2 * bound:
        return f"no: RTT p99 {run['rtt_p99_ms']:.0f} ms > {bound:.0f} ms possible"
    return "yes"


def _path(case: Case, k: dict[str, Any], s: dict[str, Any]) -> str:
    """The kernel's minimum RTT, and by how much the simulator's path was lengthened to match it."""
    measured = k.get("min_rtt_ms")
    if not measured:
        return "-"
    if measured < path_rtt_ms(case):
        return f"{measured:.2f} (the SYN's; sim +0)"
    return f"{measured:.2f} (sim +{s.get('path_extra_ms', 0.0):.2f})"


def _diff(sim: float, kernel: float) -> float | None:
    return None if not kernel else (sim - kernel) / kernel


def table(rows: list[tuple[Case, dict[str, Any], dict[str, Any]]]) -> str:
    """Markdown: per case, both backends' numbers and the relative differences (flagged past 10 %);
    occupancy also as an absolute difference in percentage points of the buffer (a relative
    difference of two near-empty queues says little)."""
    def pct(x: float | None) -> str:
        if x is None:
            return "-"
        return f"{x:+.1%}" + (" **!**" if abs(x) > TOLERANCE else "")

    lines = ["| cc | bottleneck | RTT | min RTT kernel (ms), sim path + | goodput kernel | goodput sim | diff | occupancy kernel | occupancy sim | diff "
             "| retrans. kernel / sim | RTT p50 kernel / sim (ms) | kernel run sound? |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, k, s in rows:
        lines.append(
            f"| {case.cc} | {case.rate_mbps} Mb/s | {case.rtt_ms} ms | {_path(case, k, s)} "
            f"| {k['goodput_bps'] / 1e6:.3f} Mb/s "
            f"| {s['goodput_bps'] / 1e6:.3f} Mb/s | {pct(_diff(s['goodput_bps'], k['goodput_bps']))} "
            f"| {k['occupancy']:.1%} | {s['occupancy']:.1%} | {pct(_diff(s['occupancy'], k['occupancy']))} "
            f"({(s['occupancy'] - k['occupancy']) * 100:+.1f} pp) "
            f"| {k['retransmissions']} / {s['retransmissions']} | {k['rtt_p50_ms']} / {s['rtt_p50_ms']} "
            f"| {soundness(case, k)} |")
    return "\n".join(lines)


def pick_cases(names: str | None) -> list[Case]:
    """The cases a comma-separated ``--cases`` value names (all if None); ValueError naming the unknown."""
    if not names:
        return list(CASES)
    known = {c.name: c for c in CASES}
    wrong = [n for n in names.split(",") if n not in known]
    if wrong:
        raise ValueError(f"--cases: unknown {', '.join(wrong)} (known: {', '.join(known)})")
    return [known[n] for n in names.split(",")]


def sim_side(case: Case, kernel: dict[str, Any], duration_ns: int, seed: int, out: Path | None, sack: bool = True,
             topology_path: bool = False) -> dict[str, Any]:
    """The model's run of ``case`` over the path the kernel's run measured (unless ``topology_path``)."""
    return run_case(case, "sim", duration_ns, seed, out, sack,
                    extra_rtt_ms=0.0 if topology_path else path_extra_ms(case, kernel))


#: The kernel runs docs/howto/tcp.md and docs/results.md hold the model against (docs/howto/tcp.md, "Validation
#: against the kernel", says how they were made); ``no-sack/`` beside them, the runs with ``sack: false``.
LATEST_KERNEL_SET = ROOT / "docs" / "tcp-kernel-runs"
NO_SACK_KERNEL_SET = LATEST_KERNEL_SET / "no-sack"


def results_section(kernel_dir: Path = LATEST_KERNEL_SET, duration_ns: int = 60_000_000_000, seed: int = 1,
                    cases: list[Case] | None = None) -> list[str]:
    """docs/results.md's section: the model against the stored kernel runs, the model run now."""
    rows = []
    for case in cases or list(CASES):
        k = json.loads((kernel_dir / f"{case.name}.json").read_text())
        rows.append((case, k, sim_side(case, k, duration_ns, seed, None)))
    rel = kernel_dir.relative_to(ROOT) if kernel_dir.is_relative_to(ROOT) else kernel_dir
    return ["## TCP: the simulator's model against the kernel's", "",
            "Generated by `hbh results --only tcp-validation` (also part of `make results`) at commit "
            f"{commit()}. The model (hosts/tcp/, SACK on, as the kernel's default) against the kernel's TCP runs stored in "
            f"`{rel}` (netns + p4switch at real-time priority, each {duration_ns / 1e9:g} s; docs/howto/tcp.md, "
            "\"Validation against the kernel\", says how that set was made); the "
            "simulator's side run now over the path each kernel run measured, seed "
            f"{seed}; numbers over each run's second half; **!** marks a difference beyond 10 %. Issue 23's criterion: "
            "goodput and the bottleneck's mean occupancy within 10 % at 2 and 20 Mb/s, 20 and 200 ms RTT.", "",
            *table(rows).splitlines(), ""]


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def picked(cases: str | None, section: str, default_section: str) -> str:
    """The ``--cases`` and ``--section`` options a generated section's command line names (if not defaults)."""
    return (f" --cases {cases}" if cases else "") + (f" --section {section}" if section != default_section else "")


def rewrite_section(doc: Path, section: str, how: str, body: str) -> None:
    """Replace ``doc``'s ``<!-- section -->`` ... ``<!-- /section -->`` with the command line and the table."""
    rewrite_doc(doc, f"{how}\n\n{body}", marks=(f"<!-- {section} -->", f"<!-- /{section} -->"))


def rewrite_doc(doc: Path, body: str, marks: tuple[str, str] = (MARK_BEGIN, MARK_END)) -> None:
    """Replace what lies between ``marks`` in ``doc`` with ``body`` (ValueError if they are missing)."""
    begin, end = marks
    text = doc.read_text()
    if begin not in text or end not in text:
        raise ValueError(f"{doc}: no {begin} ... {end} section to rewrite")
    head, rest = text.split(begin, 1)
    _old, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{body}\n{end}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh tcp-validation", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", default="60s", help="each run's length (default 60s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "tcp-validation", help="run directories")
    p.add_argument("--doc", type=Path, help="rewrite this file's tcp-validation section with the table")
    p.add_argument("--cases", help="comma-separated case names (default: all), e.g. cubic-2mbps-20ms")
    p.add_argument("--save-kernel", type=Path, help="also keep each kernel run's measures as DIR/<case>.json and its "
                                                   "samples as DIR/<case>.trace.csv (topo/experiments/tcp_trace.py)")
    p.add_argument("--kernel-from", type=Path,
                   help="take the kernel's side from DIR/<case>.json (written by --save-kernel) instead of running "
                        "it: the simulator's side is recomputed, the kernel's is a stored measurement")
    p.add_argument("--section", default="tcp-validation", help="the doc's <!-- SECTION --> markers to rewrite")
    p.add_argument("--pcap", action="store_true",
                   help="keep the netns runs' pcaps (R1's ports, OUT/<case>/netns/pcap: topo.netns.tcp_bursts reads them)")
    p.add_argument("--topology-path", action="store_true",
                   help="run the simulator over the topology's path as given, not lengthened by what the netns run's "
                        "path measured longer (path_extra_ms)")
    p.add_argument("--no-sack", action="store_true",
                   help="both sides without SACK (default: with it, as the kernel by default)")
    args = p.parse_args(argv)
    try:
        duration_ns = parse_duration_ns(args.duration, "--duration")
    except ValueError as exc:
        print(f"tcp_validation: {exc}", file=sys.stderr)
        return 2
    try:
        cases = pick_cases(args.cases)
    except ValueError as exc:
        print(f"tcp_validation: {exc}", file=sys.stderr)
        return 2
    sack = not args.no_sack
    if args.kernel_from is None and os.geteuid() != 0:
        print("tcp_validation: the kernel's side runs in network namespaces: run as root", file=sys.stderr)
        return 2
    if args.kernel_from is not None:
        missing = [c.name for c in cases if not (args.kernel_from / f"{c.name}.json").is_file()]
        if missing:
            print(f"tcp_validation: --kernel-from {args.kernel_from}: no {', '.join(m + '.json' for m in missing)}",
                  file=sys.stderr)
            return 2
        wrong = [c.name for c in cases
                 if bool(json.loads((args.kernel_from / f"{c.name}.json").read_text()).get("sack")) != sack]
        if wrong:  # (runs stored before the key was recorded ran without SACK)
            print(f"tcp_validation: --kernel-from {args.kernel_from}: {', '.join(wrong)} ran "
                  f"{'without' if sack else 'with'} SACK; this comparison is {'with' if sack else 'without'} it "
                  f"({'give' if sack else 'drop'} --no-sack)", file=sys.stderr)
            return 2
    rows = []
    for case in cases:
        if args.kernel_from is not None:
            k = json.loads((args.kernel_from / f"{case.name}.json").read_text())
        else:
            k = run_case(case, "netns", duration_ns, args.seed, args.out / case.name / "netns", sack, pcap=args.pcap)
            if args.save_kernel is not None:
                args.save_kernel.mkdir(parents=True, exist_ok=True)
                stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
                k["measured"] = (f"netns run of `hbh tcp-validation --duration {args.duration} --seed "
                                 f"{args.seed}{' --no-sack' if args.no_sack else ''}` at commit {commit()}, {stamp}")
                k["tcp_ends"] = tcp_ends.describe()  # where the netns host ran the sockets (topo/netns/tcp_ends.py)
                k["frame_loop"] = relay_mode()  # where the hosts' frames ran (topo/netns/host.py, HBH_HOST_RELAY)
                (args.save_kernel / f"{case.name}.json").write_text(json.dumps(k, indent=1, sort_keys=True) + "\n")
                write_trace(trace_of_run(args.out / case.name / "netns"), args.save_kernel / f"{case.name}{TRACE_SUFFIX}")
        s = sim_side(case, k, duration_ns, args.seed, args.out / case.name / "sim", sack, args.topology_path)
        rows.append((case, k, s))
        print(f"{case.name}: kernel {json.dumps(k)}\n{' ' * len(case.name)}  sim    {json.dumps(s)}", flush=True)
    body = table(rows)
    print(body)
    load = os.getloadavg()
    if args.doc is not None:
        if args.kernel_from is not None:
            how = (f"Generated by `.venv/bin/hbh tcp-validation --duration {args.duration} --seed {args.seed}"
                   f"{f' --cases {args.cases}' if args.cases else ''}{' --no-sack' if args.no_sack else ''} "
                   f"--kernel-from {args.kernel_from} --section {args.section} "
                   f"--doc {args.doc}` at commit {commit()}: "
                   f"the simulator's side run now, the kernel's side the measurements stored in {args.kernel_from} "
                   f"(see there; each run {args.duration}, numbers over its second half).")
        else:
            options = (" --no-sack" if args.no_sack else "") + picked(args.cases, args.section, "tcp-validation")
            options += f" --save-kernel {args.save_kernel}" if args.save_kernel is not None else ""
            how = (f"Generated by `sudo .venv/bin/hbh tcp-validation --duration {args.duration} "
                   f"--seed {args.seed}{options} --doc {args.doc}` at commit {commit()} (each run {args.duration}, "
                   f"numbers over its second half; load average at the end {load[0]:.1f} / "
                   f"{load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs).")
        rewrite_section(args.doc, args.section, how, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
