"""`hbh run TOPO`: one experiment, its time series, summary and figures.

The backend runs the network; this module drives it in slices of virtual time (for the
progress bar), then writes ``DIR/*.csv`` (:mod:`topo.net.record`), ``DIR/summary.json``
(:mod:`topo.run.summary`) and ``DIR/*.png`` (:mod:`topo.run.plots`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from controlplane.units import UnitError, parse_duration_ns
from topo.analysis.cache import cached_warnings
from topo.net.multicast import multicast_lines
from topo.netns.keepup import verdict

__all__ = ["register", "run_experiment", "RunResult", "InvariantsFailed", "STRICT_EXIT"]

SLICE_NS = 250_000_000
BACKENDS = ("sim", "netns")


STRICT_EXIT = 3  # `hbh run --strict`: the run's invariants failed (topo/net/invariants.py)


class RunResult:
    def __init__(self, summary: dict[str, Any], recorder: Any, files: list[Path]) -> None:
        self.summary = summary
        self.recorder = recorder
        self.files = files

    @property
    def violations(self) -> list[dict[str, str]]:
        """The invariants the run broke (summary.json's ``invariants.violations``)."""
        return list(self.summary.get("invariants", {}).get("violations", []))


class InvariantsFailed(Exception):
    """``run_experiment(..., strict=True)`` on a run that broke an invariant: its results were
    written all the same (``result``), so that the failing run can be looked at."""

    def __init__(self, result: RunResult) -> None:
        self.result = result
        super().__init__("; ".join(f"{v['name']}: {v['detail']}" for v in result.violations))


def run_experiment(topo: Any, duration_ns: int, seed: int = 1, out: Path | None = None, *, progress: bool = False,
                   plots: bool = True, backend: str = "sim", target: str = "p4switch",
                   pcap: bool = True, strict: bool = False, settings: list[str] | None = None) -> RunResult:
    """Run ``topo`` for ``duration_ns`` of (virtual or real) time; write results to ``out`` if given.

    ``backend="netns"`` runs real processes in network namespaces (root only, see
    :mod:`topo.netns.network`; ``target`` p4switch or bmv2); its logs, pcaps and ``network.json`` go to
    ``out`` (a temporary directory when None). The network is always torn down, also on errors,
    Ctrl-C and SIGTERM. Its invariants (topo/net/invariants.py) are checked at the end and recorded
    in the summary; ``strict``: a violation raises :class:`InvariantsFailed` (results written).
    ``settings``: the ``--set`` lines ``topo`` was made with, recorded in the summary (``settings``),
    so that a run of a variant says which.
    """
    given = {"settings": list(settings)} if settings else {}
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend == "sim":
        from topo.sim.network import SimNetwork

        return _strict(_drive(SimNetwork(topo, seed=seed).build(), topo, duration_ns, seed, out, progress, plots,
                              backend, given), strict)
    import tempfile

    from topo.netns.network import NetnsNetwork
    from topo.netns.switches import child_rt_priority, realtime_run

    with contextlib.ExitStack() as stack:
        run_dir = out if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hbh-")))
        stack.enter_context(_sigterm_as_interrupt())
        stack.enter_context(realtime_run(child_rt_priority()))
        net = stack.enter_context(NetnsNetwork(topo, seed, duration_ns=duration_ns, run_dir=run_dir, target=target,
                                               pcap=pcap))
        net.build()
        if out is not None:
            _print_network(net)
        return _strict(_drive(net, topo, duration_ns, seed, out, progress, plots, backend,
                              {"target": target, "notices": net.notices, **given}), strict)


def _strict(result: RunResult, strict: bool) -> RunResult:
    if strict and result.violations:
        raise InvariantsFailed(result)
    return result


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Any:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` (the network's teardown) runs."""
    def handler(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt("SIGTERM")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _print_network(net: Any) -> None:
    info = net.network_info()
    print(f"netns run {info['prefix']} ({info['target']}); switches:", file=sys.stderr)
    for name, sw in info["switches"].items():
        ports = ", ".join(f"{p}@{i}" for p, i in sw["interfaces"].items())
        print(f"  {name}: P4Runtime {sw['grpc_addr']} (device {sw['device_id']}), {sw['thrift_cli']}, ports {ports}",
              file=sys.stderr)
    print(f"  live: hbh params show --run {net.run_dir} --switch NAME; hbh shell NAME --run {net.run_dir}",
          file=sys.stderr, flush=True)


def _drive(net: Any, topo: Any, duration_ns: int, seed: int, out: Path | None, progress: bool, plots: bool,
           backend: str, extra: dict[str, Any] | None = None) -> RunResult:
    """Run, summarize and write; the objects frozen during the run are thawed at the end.

    Why thawed: frozen objects are never examined by the cyclic collector, and a network is full of
    cycles, so a process that runs many experiments (``make fuzz-topo``, a sweep's worker, the test
    suite) kept every finished run's network: ``make fuzz-topo`` grew by ~10 MB a topology and was
    killed for memory after 1,072 of its 2,000.

    Why a full collection first: what earlier runs left (their networks' cycles, collectable since
    the engine's objects clear theirs) is not counted toward the collector's own next full pass
    once frozen and thawed, so that pass came rarely (the in-process fuzz grew to ~1 GB between
    two); collected here, before this run freezes what exists, a process holds at most the last
    finished run's network."""
    gc.collect()
    try:
        return _drive_frozen(net, topo, duration_ns, seed, out, progress, plots, backend, extra)
    finally:
        gc.unfreeze()


def _drive_frozen(net: Any, topo: Any, duration_ns: int, seed: int, out: Path | None, progress: bool,
                  plots: bool, backend: str, extra: dict[str, Any] | None = None) -> RunResult:
    wall0 = time.perf_counter()
    bar = _bar(duration_ns, topo.name, backend) if progress else None
    if hasattr(net, "sample_flows_at"):  # the simulator: its flows' counters at the run window's start too
        from topo.run.summary import run_window_start

        net.sample_flows_at(run_window_start(topo, duration_ns))
    t = 0
    while t < duration_ns:
        t = min(duration_ns, t + SLICE_NS)
        net.run_until(t)
        # What the run keeps (records, switch state) is long-lived: move it out of the cyclic
        # collector's view so that its passes do not rescan it (measured: a 60 s run slowed
        # down by ~1.5x towards its end without this).
        gc.freeze()
        if bar is not None:
            wall = time.perf_counter() - wall0
            bar.update(SLICE_NS / 1e9 if t % SLICE_NS == 0 else (t % SLICE_NS) / 1e9)
            bar.set_postfix_str(f"wall {wall:.1f}s, {t / 1e9 / wall if wall else 0:.1f}x real time")
    if bar is not None:
        bar.close()
    net.finish()
    wall = time.perf_counter() - wall0
    from topo.run.summary import summarize

    hops = net.packet_hops() if hasattr(net, "packet_hops") else sum(s.sent for s in _link_stats(net))
    summary = summarize(topo, net.recorder, duration_ns,
                        {"backend": backend, "seed": seed, "reports_lost_on_links": net.counts["reports_lost"],
                         **(extra or {}), **net.summary_extra()})
    host_full = net.counts.get("host_tx_queue_full", 0)
    summary["loss"]["host_tx_queue_full"] = host_full
    summary["loss"]["total"] += host_full
    # frames a link's `reorder` held back (the reordering TCP and TFRC may read as loss; docs/background/e2e.md)
    summary["loss"]["reordered_by_links"] = net.counts.get("reordered_frames", 0)
    from topo.net.invariants import check_invariants, invariants_block

    end_state = net.end_state() if hasattr(net, "end_state") else None
    summary["invariants"] = invariants_block(check_invariants(topo, net.recorder, summary, end_state))
    summary["performance"] = {"wall_s": round(wall, 3), "speedup": round(duration_ns / 1e9 / wall, 2),
                              "packet_hops": hops, "packet_hops_per_wall_s": round(hops / wall)}
    files: list[Path] = []
    if out is not None:
        files = net.recorder.write(out)
        (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        files.append(out / "summary.json")
        if plots:
            from topo.run.plots import plot_run

            files += plot_run(net.recorder, summary, out, topo.name, topo)
    return RunResult(summary, net.recorder, files)


def _link_stats(net: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    for link in net.links.values():
        seen[id(link)] = link
    return [s for link in seen.values() for s in link.stats.values()]


def _bar(duration_ns: int, name: str, backend: str = "sim") -> Any:
    from tqdm import tqdm

    clock = "virtual time" if backend == "sim" else "real time"
    return tqdm(total=duration_ns / 1e9, unit="s", desc=f"{name} ({clock})", file=sys.stderr, disable=None,
                mininterval=0.5,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s [{postfix}]")


# ---- command line ------------------------------------------------------------------------------------
def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run one experiment on a topology file",
                       description="Run a topology (topo/*.yaml) and write CSV time series, summary.json and "
                                   "figures to --out.")
    p.add_argument("topology", help="topology file, e.g. topo/paper-5router.yaml")
    p.add_argument("--duration", default="60s", help="length of the run (virtual time in the simulator), e.g. 60s")
    p.add_argument("--seed", type=int, default=1, help="random seed (report loss, start jitter)")
    p.add_argument("--out", default=None, help="results directory (default results/<topology>)")
    p.add_argument("--backend", default="sim", choices=list(BACKENDS),
                   help="sim: virtual time, in one process; netns: real processes in network namespaces, "
                        "real time (root)")
    p.add_argument("--target", default="p4switch", choices=["p4switch", "bmv2"],
                   help="netns: the switch program to run (bmv2 needs p4c and simple_switch_grpc on PATH)")
    p.add_argument("--no-pcap", action="store_true", help="netns: no per-port pcaps")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    p.add_argument("--no-analysis", action="store_true",
                   help="skip the loop analysis before the run (its warnings; it is cached per topology, "
                        "duration, seed and backend: docs/background/analysis.md)")
    p.add_argument("--strict", action="store_true",
                   help=f"exit with status {STRICT_EXIT} if the run breaks an invariant (docs/reference/metrics.md, Invariants)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="TARGET.KEY=VALUE",
                   help="change one value of the file, as hbh sweep's --set does (docs/howto/sweeps.md), e.g. "
                        "alinea.o_max=0.7 or link[R1-H2].rate=1Mbps; repeatable")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from topo.file.overrides import topology_with
    from topo.file.schema import TopologyError
    from topo.file.settings import SweepError

    try:
        duration = parse_duration_ns(args.duration, "--duration")
        if duration <= 0:
            raise UnitError(f"--duration: must be > 0, got {args.duration!r}")
        topo = topology_with(args.topology, args.sets)
    except (UnitError, TopologyError, SweepError, OSError) as exc:
        print(f"hbh run: {exc}", file=sys.stderr)
        return 2
    if args.backend == "sim":
        from topo.sim.network import sim_refusal

        if (why := sim_refusal(topo)) is not None:
            print(f"hbh run: {why}", file=sys.stderr)
            return 2
    out = Path(args.out or f"results/{topo.name}")
    # the flows where this run's hosts start them, the simulator's draws or the netns hosts' (topo/net/starts.py)
    for warning in ([] if args.no_analysis else cached_warnings(topo, duration / 1e9, seed=args.seed,
                                                                  backend=args.backend)[0]):
        print(f"hbh run: warning: {warning}", file=sys.stderr)
    if args.backend != "sim" or args.target != "p4switch":
        from topo.netns.plumbing import NetnsError, require_root
        from topo.netns.switches import check_bmv2_tools

        try:
            if args.backend != "netns":
                raise NetnsError("--target is only used with --backend netns")
            require_root()
            if args.target == "bmv2":
                check_bmv2_tools()
        except NetnsError as exc:
            print(f"hbh run: {exc}", file=sys.stderr)
            return 2
    try:
        result = run_experiment(topo, duration, args.seed, out, progress=not args.no_progress,
                                plots=not args.no_plots, backend=args.backend, target=args.target,
                                pcap=not args.no_pcap, strict=args.strict, settings=args.sets)
    except InvariantsFailed as failed:
        result = failed.result
    except KeyboardInterrupt:
        print("hbh run: interrupted; the network was torn down", file=sys.stderr)
        return 130
    except Exception as exc:
        from topo.netns.plumbing import NetnsError

        if not isinstance(exc, NetnsError):
            raise
        print(f"hbh run: {exc}", file=sys.stderr)
        return 2
    print(format_summary(result.summary))
    for v in result.violations:
        print(f"hbh run: invariant violated: {v['name']}: {v['detail']}", file=sys.stderr)
    print(f"\nresults: {out}/ (laws.csv, flows.csv, buffers.csv, links.csv, drops.csv, packets_*.csv, "
          f"{'tcp.csv, ' if result.recorder.tcp else ''}"
          f"summary.json{', *.png' if not args.no_plots else ''})")
    return STRICT_EXIT if args.strict and result.violations else 0


def realtime_line(rt: dict[str, Any] | None) -> str | None:
    """Whether a real-time run kept up with its emulation (topo/netns/keepup.py), and the cores its
    processes kept busy: a run that did not measured the machine as much as the network. None
    without the measure (the simulator)."""
    said = verdict(rt)
    if said == "-":
        return None
    assert rt is not None
    cores = rt.get("cpu_cores") or {}
    busy = f"; its processes kept {cores['total']:g} of {cores['cpus']} cores busy" if cores else ""
    if said == "yes":
        return f"real time: kept up{busy}"
    return f"real time: fell behind ({said.removeprefix('no: ')}){busy}: these results measure the machine too"


def format_summary(s: dict[str, Any]) -> str:
    """What ``hbh run`` prints: every number is defined in docs/reference/metrics.md."""
    lines = [f"{s['topology']}: {s['duration_s']:g} s, seed {s.get('seed')}, backend {s.get('backend')}"
             + "".join(f", --set {line}" for line in s.get("settings", []))]
    lines += _loss_lines(s["loss"])
    lines += _buffer_lines(s)
    lines += _flow_lines(s)
    for ev in s["events"]:
        lines.append(_event_line(ev))
    if (said := realtime_line(s.get("realtime"))) is not None:
        lines.append(said)
    perf = s.get("performance", {})
    if perf:
        lines.append(f"wall time {perf['wall_s']:.1f} s ({perf['speedup']:.1f}x real time, "
                     f"{perf['packet_hops_per_wall_s']:,} packet-hops/s)")
    return "\n".join(lines)


def _loss_lines(loss: dict[str, Any]) -> list[str]:
    """Loss in the network and loss at the receivers' playout buffers, apart (docs/reference/metrics.md)."""
    lines = [f"loss: {loss['total']} packets (sent {loss['data_packets_sent']}, received "
             f"{loss['data_packets_received']}; missing sequence numbers {loss['lost_by_sequence']}; "
             f"reordered {loss['reordered']})",
             f"  in the network: {loss['dropped_in_network']}"
             + (f" ({', '.join(f'{r} {n}' for r, n in loss['dropped_by_reason'].items())})"
                if loss.get("dropped_by_reason") else "")]
    by_host = loss.get("receiver_buffer_overflow_by_host") or {}
    where = f" ({', '.join(f'{h} {n}' for h, n in by_host.items())})" if by_host else ""
    lines.append(f"  at receivers' playout buffers (the application's buffer, not the network): "
                 f"{loss['receiver_buffer_overflow']}{where}")
    return lines


def _buffer_lines(s: dict[str, Any]) -> list[str]:
    if not s["buffers"]:
        return []
    width = max(14, 2 + max(len(n) for n in s["buffers"]))
    lines = [f"{'buffer':<{width}}{'target':>8}{'mean':>8}{'std':>7}{'max':>7}{'conv. (s)':>10}"]
    for name, b in s["buffers"].items():
        conv = "-" if b["convergence_s"] is None else f"{b['convergence_s']:.2f}"
        if b["target"] is None:
            conv = "no law"
        elif "cannot_reach" in b:
            conv = "cannot"
        target = "-" if b["target"] is None else f"{100 * b['target']:.1f}%"
        # an idle buffer's mean of 0.0 % measured no traffic: the column says so (summary: ``idle``)
        mean, std = ("idle", "-") if "idle" in b else (f"{100 * b['mean']:.1f}%", f"{100 * b['std']:.2f}")
        lines.append(f"{name:<{width}}{target:>8}{mean:>8}{std:>6}{100 * b['max']:>6.1f}%{conv:>10}")
    conv = s.get("convergence") or {}
    for name, why in conv.get("cannot_reach", {}).items():
        lines.append(f"  {name} cannot reach its target: {why}")
    lines += [f"  {name} idle: {b['idle']}" for name, b in s["buffers"].items()
              if "idle" in b and not str(b.get("cannot_reach", "")).startswith("idle")]
    if conv.get("over"):
        said = f"{conv['s']:.2f} s" if conv.get("s") is not None else f"none ({conv.get('why')})"
        lines.append(f"convergence (over {', '.join(conv['over'])}): {said}")
    return lines


def _flow_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    for name, f in s["flows"].items():
        owd = f["owd_ms"]
        what = "played out" if f.get("goodput_of") == "played" else "received"
        window = f.get("window_s")
        over = (f", over {f.get('window')} {window[0]:.2f}-{window[1]:.2f} s" if window else "")
        fct = f"; FCT {f['fct_s']:g} s" if f.get("fct_s") is not None else (
            "; not completed" if "fct_s" in f else "")
        # no packet received in its window (a flow that starts at the end, or one starved): no delay was
        # measured, and the summary's p50 and p99 of no values are not one
        delay = ("no packet received in its window" if owd.get("mean") is None
                 else f"one-way delay p50 {owd['p50']:.1f} ms, p99 {owd['p99']:.1f} ms")
        lines.append(f"flow {name} {f['src']}->{f['dst']} ({f['control']}): goodput {f['goodput_bps'] / 1e6:.3f} Mb/s "
                     f"({what}{over}), {delay}{fct}")
        if (t := f.get("tcp")) is not None:
            rtt = t["rtt_ms"]
            done = f", completed in {t['completion_s']:g} s" if t["completed"] else ""
            lines.append(f"  tcp {t['cc']}: {t['retransmissions']} retransmissions, smoothed RTT p50 {rtt['p50']} ms, "
                         f"p99 {rtt['p99']} ms, {t['bytes_received']} bytes received{done}"
                         + (f"; errors: {'; '.join(t['errors'])}" if t["errors"] else ""))
    lines += multicast_lines(s.get("multicast", {}))
    neck = s.get("bottleneck")
    if neck and neck.get("link"):
        jain = f"{neck['jain']:.4f}" if neck.get("jain") is not None else neck.get("why")
        util = neck.get("utilisation")
        lines.append(f"bottleneck {neck['link']}: utilisation {util if util is None else f'{util:.3f}'}, "
                     f"Jain's index over its flows ({', '.join(neck['flows']) or '-'}): {jain}")
    return lines


def _recovery(recovery_s: float | None) -> str:
    """The buffer's way back, in the reaction's unit (ms): "-" read as a time, and a duration in seconds beside one
    in ms, confused the users who met them (issue 46's audit)."""
    if recovery_s is None:
        return "not back within 3 points of its target by the run's end"
    return f"back within 3 points after {1000 * recovery_s:.1f} ms"


def _event_line(ev: dict[str, Any]) -> str:
    head = f"event at {ev['at_s']:g} s, link {ev['link']} -> {ev['rate_bps'] / 1e6:g} Mb/s:"
    parts = []
    if ev.get("reaction_s") is not None:
        parts.append(f"{ev['regulator']} cut its rate after {1000 * ev['reaction_s']:.1f} ms "
                     f"({ev['reaction_intervals']} report intervals); {ev['buffer']} peaked at "
                     f"{100 * ev['max_occupancy_after']:.1f}%, {_recovery(ev['recovery_s'])}")
    if ev.get("source_reaction_s") is not None:
        parts.append(f"the sources cut their sending rate after {1000 * ev['source_reaction_s']:.1f} ms "
                     f"(from the packets, {1000 * ev['source_reaction_window_s']:.0f} ms window)")
    return f"{head} {'; '.join(parts) if parts else 'no reaction measured'}"
