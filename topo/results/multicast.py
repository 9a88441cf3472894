"""The fairness seed's four experiment sets (Seada & Helmy, SOURCES.md F) in the simulator: pgmcc against
TCP, then the same sets with hop-by-hop ALINEA carrying the multicast session.

    .venv/bin/hbh results-multicast            # every case; prints the section
    .venv/bin/hbh results --only multicast  # the same, spliced into docs/results.md

f is the seed's metric: a TCP session's throughput as a fraction of the multicast session's, over the
whole run, from final sequence numbers: TCP's bytes received / MSS against the multicast session's
distinct data packets delivered at its slowest receiver (pgmcc: the receivers' cores; ALINEA: the
branches' records). Both send 1514-byte frames (pgmcc's packet size is TCP's full segment frame), so
packets compare like with like. f < 100 % means the multicast session took more than TCP.

Run length: every run lasts RUN_S (3000 s) of virtual time, the seed's length: it found Reno's share falling
from fair over 300 s to 74 % over 3000 s, and pgmcc's drift (timeouts, acker switches) and a TCP's slow
build-up beside a session that fills the bottleneck (set 1's f over 60 s is a fraction of its f over 3000 s,
with either control: docs/howto/multicast.md) are what long runs show; one length for every row keeps the rows
comparable. What it costs (measured with `--seconds 300`, nice 10, beside a load of 7-9 on 2 cores): a 300 s
pgmcc run took 2-10 s of wall time (set 2's 10 Mb/s paths the most), an ALINEA one 2-12 s (set 2's random-loss
cases the most, the session filling 10 Mb/s links), and the whole section at 3000 s took 674-967 s (two runs),
the process peaking at 6.7 GB of memory. The table's row is seed SEED's run; the seed's eight pgmcc cases also run
with EXTRA_SEEDS (a pgmcc run is the cheap half: one window, no switch agents), and the table gives their range of
f beside seed SEED's, so a row that one seed's luck decides shows as a wide range. The ALINEA run of set 1 with the
fixed timeout would repeat the adaptive one (the timeout is pgmcc's): it is not run; nor are set 4's readings
(pgmcc's own choices).

Each run's numbers are kept as JSON under ``--raw`` (results/docs/multicast/, not committed: <case>-<control>.json
for seed SEED, <case>-<control>-s<seed>.json for the others); ``results_section(reuse=True)`` (what
``results_doc --only multicast`` calls) takes a run's JSON when it holds the same case, control, length and seed and was made by the
same commit with no tracked file changed (``code_version``), and runs it otherwise, so that cases may be run in parallel first (``--only``) and the section written after.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hosts.tcp import MSS
from runtime.arguments import ValueParser
from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment

__all__ = ["CASES", "Case", "case_text", "run_case", "run_all", "table", "results_section", "main", "RUN_S", "SEED",
           "EXTRA_SEEDS"]

ROOT = Path(__file__).resolve().parents[2]
SETS = ROOT / "topo" / "pgmcc"
SEED = 1
#: The other seeds of the seed's eight pgmcc cases (Case.seeds)
EXTRA_SEEDS = (2, 3)
RUN_S = 3000.0
#: pgmcc's fixed timeout in the fixed-timeout case (the seed names no value; ours: long enough that
#: it fires on a stall only, not on a queue's delay: RTTs here reach 1.3 s with a full 50-packet queue)
FIXED_TIMEOUT = "3s"


_PG = "control: pgmcc}"


def _pg(options: str) -> str:
    return f"control: pgmcc, pgmcc: {{{options}}}}}"


_BRANCH_LOSS = tuple((f"{{ends: [{a}, {b}]}}", f"{{ends: [{a}, {b}], loss: 0.5%}}")
                     for a, b in (("R1", "MR1"), ("R1", "MR2"), ("R3", "MR3")))


@dataclass(frozen=True)
class Case:
    name: str
    file: str  # topo/pgmcc/<file>.yaml
    title: str
    tcps: tuple[str, ...]
    seed_f: str  # the seed's f values, as it gives them
    edits: tuple[tuple[str, str], ...] = ()
    alinea: bool = True  # also run with hop-by-hop ALINEA carrying the session
    seeds: bool = True  # pgmcc also runs with EXTRA_SEEDS


CASES = (
    Case("set1-fixed", "set1-window", "set 1: pgmcc (fixed 3 s timeout) vs TCP newreno-like (no SACK)", ("tcp",),
         "74 % (Reno, 3000 s; fair over 300 s)",
         (("pgmcc: {timeout: adaptive}", f"pgmcc: {{timeout: {FIXED_TIMEOUT}}}"), ("sack: true", "sack: false")),
         alinea=False),
    Case("set1-adaptive", "set1-window", "set 1: pgmcc (adaptive timeout) vs TCP newreno-like (no SACK)", ("tcp",),
         "96 % (Reno, adaptive timeout)", (("sack: true", "sack: false"),)),
    Case("set1-sack", "set1-window", "set 1: pgmcc (adaptive timeout) vs TCP SACK", ("tcp",), "92 % (SACK)"),
    Case("set2-low", "set2-losses", "set 2, low loss: MR1 400 ms 0.4 %, MR2 200 ms 1.6 %", ("tcp1", "tcp2"),
         "f1 82 %, f2 85 %"),
    Case("set2-high", "set2-losses", "set 2, high loss: MR1 400 ms 2 %, MR2 200 ms 8 %", ("tcp1", "tcp2"),
         "f1 78 %, f2 54 %", (("loss: 0.4%", "loss: 2%"), ("loss: 1.6%", "loss: 8%"))),
    Case("set2-congestion", "set2-congestion", "set 2, congestion losses: 1 Mb/s 400 ms and 500 kb/s 200 ms paths",
         ("tcp1", "tcp2"), "f1 56 %, f2 96 %"),
    # set 2 against TCP without SACK: the seed does not say which TCP its set 2 ran (set 1 shows the flavour
    # alone moves f by about 20 points)
    Case("set2-low-nosack", "set2-losses", "set 2, low loss, TCP without SACK", ("tcp1", "tcp2"), "f1 82 %, f2 85 %",
         (("sack: true", "sack: false"),), alinea=False, seeds=False),
    Case("set2-high-nosack", "set2-losses", "set 2, high loss, TCP without SACK", ("tcp1", "tcp2"),
         "f1 78 %, f2 54 %", (("loss: 0.4%", "loss: 2%"), ("loss: 1.6%", "loss: 8%"), ("sack: true", "sack: false")),
         alinea=False, seeds=False),
    Case("set2-congestion-nosack", "set2-congestion", "set 2, congestion losses, TCP without SACK",
         ("tcp1", "tcp2"), "f1 56 %, f2 96 %", (("sack: true", "sack: false"),), alinea=False, seeds=False),
    Case("set3", "set3-suppression", "set 3, feedback suppression: MR3 50 ms farther, NAK aggregation", ("tcp",),
         "23 %"),
    Case("set4", "set4-representatives", "set 4, representatives: MR3 200 ms farther, NAK aggregation", ("tcp",),
         "164 %"),
    # set 4 under the readings that decide whether the acker goes back and forth (docs/howto/multicast.md, "Set 4"):
    # the RTT counted in packets (the pgmcc draft's section 2.5.3), a short loss filter, both, and losses that differ
    # between the branches (each receiver's own link loses 0.5 % more, independently)
    Case("set4-rtt-packets", "set4-representatives", "set 4, the election's RTT in packets", ("tcp",),
         "164 % (set 4)", ((_PG, _pg("rtt: packets")),), alinea=False, seeds=False),
    Case("set4-filter16", "set4-representatives", "set 4, receivers' loss filter 1/16", ("tcp",), "164 % (set 4)",
         ((_PG, _pg("loss_weight: 0.0625")),), alinea=False, seeds=False),
    Case("set4-rtt-packets-filter16", "set4-representatives", "set 4, RTT in packets and loss filter 1/16",
         ("tcp",), "164 % (set 4)", ((_PG, _pg("rtt: packets, loss_weight: 0.0625")),), alinea=False, seeds=False),
    Case("set4-branch-loss", "set4-representatives", "set 4, each receiver's link 0.5 % more loss, independent",
         ("tcp",), "164 % (set 4)", _BRANCH_LOSS, alinea=False, seeds=False),
)


def case_text(case: Case, control: str = "pgmcc") -> str:
    """The case's topology text; ``alinea``: the multicast session hop-by-hop ALINEA instead of pgmcc
    (its pgmcc parameters and the switches' NAK aggregation dropped with it)."""
    text = (SETS / f"{case.file}.yaml").read_text()
    for old, new in case.edits:
        if old not in text:
            raise ValueError(f"{case.name}: {old!r} is not in {case.file}.yaml")
        text = text.replace(old, new)
    if control == "alinea":
        lines = []
        for line in text.splitlines():
            if "control: pgmcc" in line:
                line = line.split(", control: pgmcc")[0] + ", control: alinea}"
            if line.strip() in ("options:",) or line.strip().startswith("nak_aggregation:"):
                continue
            lines.append(line)
        text = "\n".join(lines) + "\n"
    return text


def run_case(case: Case, control: str = "pgmcc", seconds: float | None = None, out: Path | None = None,
             seed: int = SEED) -> dict[str, Any]:
    """One run's numbers: f per TCP, the session's packets, and its control's own counts."""
    if seconds is None:
        seconds = _length(None)
    topo = load_topology_text(case_text(case, control), f"{case.file}.yaml ({case.name}, {control})")
    t0 = time.perf_counter()
    result = run_experiment(topo, round(seconds * 1e9), seed, out, plots=False)
    wall = time.perf_counter() - t0
    rec, s = result.recorder, result.summary
    branches = [f for f in topo.flows if f.group is not None]
    last = {r.flow: r for r in rec.flows}
    if control == "pgmcc":
        delivered = {f.dst: int(rec.control_stats[f.name]["delivered"]) for f in branches}
    else:
        delivered = {f.dst: last[f.name].received for f in branches}
    session = min(delivered.values())
    tcp = {name: int(rec.tcp_flows[name]["bytes_received"]) // MSS for name in case.tcps}
    lead = rec.control_stats.get(branches[0].name, {})
    sent = last[branches[0].name].sent
    return {
        "case": case.name, "control": control, "seconds": seconds, "seed": seed, "wall_s": round(wall, 1),
        "session_packets": session, "tcp_segments": tcp,
        "f": {name: (n / session if session else None) for name, n in tcp.items()},
        "acker_switches": lead.get("acker_switches"), "timeouts": lead.get("timeouts"),
        "initial_rto_timeouts": lead.get("initial_rto_timeouts"), "switch_tokens": lead.get("switch_tokens"),
        "unreported": lead.get("unreported"),
        "acker": lead.get("acker"), "repairs": lead.get("repairs_sent"),
        "session_sent": sent, "session_lost": {r: sent - n for r, n in delivered.items()} if control != "pgmcc" else None,
        "owd_p50_ms": {f.dst: s["flows"][f.name]["owd_ms"]["p50"] for f in branches if f.name in s["flows"]},
        "violations": len(result.violations),
    }


def nak_estimates(case: Case, seconds: float, seed: int = SEED) -> dict[str, dict[str, float]]:
    """Per receiver of the pgmcc session: the fraction of transmissions it lost, and the mean loss estimate p
    its NAKs and its ACKs carried to the sender (docs/howto/multicast.md, set 2: a NAK's p is the estimate its own
    loss has just raised)."""
    from hosts.pgmcc import sender as pgmcc_sender
    from topo.sim.network import SimNetwork

    topo = load_topology_text(case_text(case), f"{case.file}.yaml ({case.name})")
    carried: dict[tuple[int, bool], list[float]] = {}
    original = pgmcc_sender.PgmccSender.on_feedback

    def on_feedback(self: Any, now_ns: int, fb: Any) -> None:
        carried.setdefault((fb.rid, fb.is_ack), []).append(fb.p)
        original(self, now_ns, fb)

    pgmcc_sender.PgmccSender.on_feedback = on_feedback  # type: ignore[method-assign]
    try:
        net = SimNetwork(topo, seed=seed).build()
        net.run_until(round(seconds * 1e9))
        net.finish()
    finally:
        pgmcc_sender.PgmccSender.on_feedback = original  # type: ignore[method-assign]
    out = {}
    for f in topo.flows:
        if f.group is None or f.control != "pgmcc":
            continue
        core = net.hosts[f.dst].pgmcc.sinks[net.wire_ids[f.name]].core  # type: ignore[union-attr]
        rid = topo.nodes[f.dst].index
        naks, acks = carried.get((rid, False), []), carried.get((rid, True), [])
        out[f.dst] = {"lost_fraction": core.lost / max(1, core.lost + core.received),
                      "nak_p_mean": sum(naks) / len(naks) if naks else float("nan"), "naks": len(naks),
                      "ack_p_mean": sum(acks) / len(acks) if acks else float("nan"), "acks": len(acks)}
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _fs(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {_pct(v)}" for k, v in r["f"].items()) if len(r["f"]) > 1 else _pct(next(iter(r["f"].values())))


def _range(runs: list[dict[str, Any]]) -> str:
    """f's range over the seeds' runs, per TCP ("-" with one run)."""
    if len(runs) < 2:
        return "-"
    seeds = ",".join(str(r["seed"]) for r in sorted(runs, key=lambda r: r["seed"]))
    parts = []
    for name in runs[0]["f"]:
        fs = [r["f"][name] for r in runs if r["f"].get(name) is not None]
        lo, hi = (f"{100 * x:.0f}" for x in (min(fs), max(fs))) if fs else ("-", "-")
        span = "-" if not fs else f"{lo} %" if lo == hi else f"{lo}-{hi} %"
        parts.append(span if len(runs[0]["f"]) == 1 else f"{name} {span}")
    return f"{', '.join(parts)} (seeds {seeds})"


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    rows = ["| case | pgmcc run | seed's f | f with pgmcc | f with pgmcc, other seeds too | acker switches | pgmcc "
            "timeouts | f with hop-by-hop ALINEA | ALINEA session lost (worst receiver) | ALINEA receivers' OWD p50 (ms) |",
            "|---|---:|---|---|---|---:|---:|---|---:|---|"]
    for case in CASES:
        pg, al = results.get(case.name, {}).get("pgmcc"), results.get(case.name, {}).get("alinea")
        if pg is None:
            continue
        runs = results.get(case.name, {}).get("pgmcc-seeds") or [pg]
        lost = "-" if al is None or al["session_lost"] is None else str(max(al["session_lost"].values()))
        owd = "-" if al is None else ", ".join(f"{k} {v:.0f}" for k, v in al["owd_p50_ms"].items())
        rows.append(f"| {case.title} | {pg['seconds']:g} s | {case.seed_f} | {_fs(pg)} | {_range(runs)} | "
                    f"{pg['acker_switches']} | {pg['timeouts']} | {'-' if al is None else _fs(al)} | {lost} | {owd} |")
    return rows


def _length(seconds: float | None) -> float:
    return RUN_S if seconds is None else seconds


def _raw_name(case: Case, control: str, seed: int) -> str:
    return f"{case.name}-{control}.json" if seed == SEED else f"{case.name}-{control}-s{seed}.json"


def code_version() -> str | None:
    """HEAD's commit when git's tracked files are unchanged, else None. A kept run is reused only when it was made
    by the same code: a run kept from an older commit would publish that commit's numbers under this one's."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return None if dirty or not head else head


def reusable(old: dict[str, Any], length: float, seed: int, code: str | None) -> dict[str, Any] | None:
    """A kept run's numbers if it holds this length and seed and was made by this code (``code`` not None)."""
    if code is None or old.get("code") != code:
        return None
    return old if (old.get("seconds"), old.get("seed")) == (length, seed) else None


def run_all(raw: Path | None = None, seconds: float | None = None, reuse: bool = False,
            cases: tuple[Case, ...] | None = None, extra_seeds: bool = True) -> dict[str, dict[str, Any]]:
    """Every case's runs: ``out[case][control]`` is seed SEED's, ``out[case]["pgmcc-seeds"]`` every seed's
    pgmcc run (SEED first)."""
    out: dict[str, dict[str, Any]] = {}
    code = code_version() if reuse else None
    for case in CASES if cases is None else cases:
        out[case.name] = {}
        runs = [("pgmcc", SEED)] + ([("alinea", SEED)] if case.alinea else [])
        if case.seeds and extra_seeds:
            runs += [("pgmcc", s) for s in EXTRA_SEEDS]
        for control, seed in runs:
            length = _length(seconds)
            kept = raw / _raw_name(case, control, seed) if raw is not None else None
            r = None
            if reuse and kept is not None and kept.is_file():
                r = reusable(json.loads(kept.read_text()), length, seed, code)
            if r is None:
                print(f"running {case.name} with {control}, seed {seed} ...", file=sys.stderr, flush=True)
                r = dict(run_case(case, control, length, seed=seed), code=code)
                print(f"  f {r['f']}, {r['wall_s']} s wall", file=sys.stderr, flush=True)
                if kept is not None:
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    kept.write_text(json.dumps(r, indent=1, sort_keys=True))
            if seed == SEED:
                out[case.name][control] = r
            if control == "pgmcc":
                out[case.name].setdefault("pgmcc-seeds", []).append(r)
    return out


def results_section(raw: Path | None = None, reuse: bool = True) -> list[str]:
    """docs/results.md's multicast section (topo.results.doc's "multicast")."""
    results = run_all(raw, reuse=reuse)
    return ["## Multicast: pgmcc and hop-by-hop ALINEA against TCP on the fairness seed's sets", "",
            "Generated by `hbh results --only multicast` (topo/results/multicast.py: simulator, seed "
            f"{SEED}; the seed's eight pgmcc cases also with seeds {', '.join(map(str, EXTRA_SEEDS))}; every run "
            f"{RUN_S:g} s, the seed's length; the module says why). f = TCP's "
            "throughput as a fraction of the multicast session's over the whole run (packets of the same frame "
            "size; below 100 %: the session took more). The TCP model has no plain Reno: the seed's Reno runs are "
            "set beside our Reno congestion control with NewReno's recovery (no SACK). pgmcc runs with the seed's "
            "acker switch ratio c = 2/3 (the draft's suggestion is 0.75: `pgmcc: {switch_ratio: 0.75}`), the "
            "adaptive timeout restarted at each election from the RTT the electing report measured, and one token "
            "for a newly chosen acker "
            "(docs/howto/multicast.md, \"pgmcc as implemented\"). docs/howto/multicast.md, \"Results on the seed's four "
            "sets\", reads the rows.", "", *table(results), ""]


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh results-multicast", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, help="every case this long instead of its own length (a quick look)")
    p.add_argument("--raw", type=Path, default=ROOT / "results" / "docs" / "multicast", help="per-run JSON")
    p.add_argument("--only", help="comma-separated case names")
    p.add_argument("--reuse", action="store_true", help="take a run's JSON in --raw when it holds the same run")
    p.add_argument("--one-seed", action="store_true", help=f"seed {SEED} only (not the cases' other seeds)")
    p.add_argument("--nak-p", metavar="CASE", help="instead of f: each receiver's loss against the p its NAKs and ACKs "
                   "carried, over --seconds (default 300) of CASE, seed 1")
    args = p.parse_args(argv)
    if args.seconds is not None and args.seconds <= 0:
        print(f"hbh results-multicast: --seconds {args.seconds:g}: must be > 0", file=sys.stderr)
        return 2
    if args.nak_p is not None:
        case = next((c for c in CASES if c.name == args.nak_p), None)
        if case is None:
            print(f"hbh results-multicast: --nak-p: unknown case {args.nak_p}", file=sys.stderr)
            return 2
        for host, e in nak_estimates(case, args.seconds or 300.0).items():
            print(f"{host}: lost {e['lost_fraction']:.4f} of its transmissions; p in its {e['naks']} NAKs "
                  f"{e['nak_p_mean']:.4f} on average, in its {e['acks']} ACKs {e['ack_p_mean']:.4f}")
        return 0
    cases = CASES
    if args.only:
        names = [n.strip() for n in args.only.split(",")]
        unknown = sorted(set(names) - {c.name for c in CASES})
        if unknown:
            print(f"hbh results-multicast: --only: unknown case {', '.join(unknown)} (known: "
                  f"{', '.join(c.name for c in CASES)})", file=sys.stderr)
            return 2
        cases = tuple(c for c in CASES if c.name in names)
    print("\n".join(table(run_all(args.raw, args.seconds, reuse=args.reuse, cases=cases,
                                  extra_seeds=not args.one_seed))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
