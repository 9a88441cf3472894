"""docs/results.md's sections with TCP in the network (issue 23, items 4 and 5): TCP crossing a
hop-by-hop ALINEA network, ALINEA's one-way delay beside TCP's (Chen et al.), CVIHIS BLM and RTM
against TCP, the thesis' LEDBAT case, and the fairness seed's method.

Why a module of its own: these are many short simulator runs (about 10 min of wall time in all)
that the rest of `make results` does not need, so ``make results-tcp`` (``python -m
topo.results.doc --only tcp``) regenerates just these sections and their figure. Time is scaled
down from the papers' runs where they are long; each section says by how much.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from runtime.arguments import ValueParser
from topo.experiments.compare import jain
from topo.file.points import Base, Point, point_topology
from topo.file.schema import load_topology_text
from topo.file.settings import parse_settings
from topo.net.model import Topology
from topo.net.stats import percentile
from topo.results.cvihis_rows import NEVER, ROWS, in_link_units
from topo.run.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
SEED = 1
S = 1_000_000_000
COMMAND = "make results-tcp  (hbh results --only tcp)"

__all__ = ["sections", "scenario", "owd_stats", "share", "window", "rtm_topology"]


def scenario(name: str, sets: tuple[str, ...] = (), replace: tuple[tuple[str, str], ...] = (),
             control: str | None = None) -> Topology:
    """topo/NAME.yaml with text replacements (a flow's control or cc), ``--set`` lines and ``--controls``
    applied as ``hbh sweep`` applies them, so a variant passes the loader's checks."""
    path = ROOT / "topo" / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    for old, new in replace:
        if old not in text:
            raise ValueError(f"{path}: {old!r} not found (the variant no longer matches the file)")
        text = text.replace(old, new)
    base = Base(str(path), text, load_topology_text(text, str(path)))
    return point_topology(base, Point(tuple((s, s.values[0]) for s in parse_settings(list(sets))), control))


def _run(topo: Topology, seconds: float) -> Any:
    print(f"running {topo.name} ({seconds:g} s virtual) ...", file=sys.stderr, flush=True)
    return run_experiment(topo, int(seconds * S), seed=SEED, plots=False)


def window(summary: dict[str, Any], flow: str, a: float, b: float, series: str = "receive_bps") -> float:
    """A flow's mean receive rate (b/s) over (a, b], from the summary's 0.5 s bins (``series="send_bps"``: its
    sending rate)."""
    se = summary["series"]
    xs = [v for t, v in zip(se["t_s"], se["flows"][flow][series]) if a < t <= b]
    return statistics.fmean(xs) if xs else 0.0


def share(summary: dict[str, Any], flow: str, a: float, b: float) -> float:
    """``flow``'s fraction of what all flows received over (a, b]."""
    total = sum(window(summary, f, a, b) for f in summary["series"]["flows"])
    return window(summary, flow, a, b) / total if total else 0.0


def owd_stats(rows: list[tuple[int, int, int]], start_ns: int) -> dict[str, float]:
    """One-way delay (ms) of the packets received after ``start_ns``: p50, p99, standard deviation, and
    jitter as RFC 3550 defines its D: the mean |difference| of consecutive packets' one-way delays."""
    owd = [(recv - sent) / 1e6 for _, sent, recv in sorted(rows, key=lambda r: r[2]) if recv > start_ns]
    if len(owd) < 2:
        return {"p50": 0.0, "p99": 0.0, "std": 0.0, "jitter": 0.0, "n": float(len(owd))}
    return {"p50": percentile(owd, 0.5), "p99": percentile(owd, 0.99), "std": statistics.pstdev(owd),
            "jitter": statistics.fmean(abs(b - a) for a, b in zip(owd, owd[1:])), "n": float(len(owd))}


# ---- item 5: TCP across a hop-by-hop network ----------------------------------------------------------------
CROSS_SECONDS = 60


def cross_rows() -> list[tuple[str, tuple[str, ...]]]:
    """(label, --set lines): 0, 1 and 4 TCP flows beside the ALINEA flow; then 1 TCP flow with the ALINEA
    flow off (the network stays hop by hop), with reports every 10 ms and every 100 ms."""
    off = [f"flow[t{i}].start={NEVER}" for i in range(1, 5)]
    alone = (f"flow[f1].start={NEVER}", *off[1:])
    return [("0", tuple(off)), ("1", tuple(off[1:])), ("4", ()), ("1, ALINEA flow off", alone),
            ("1, ALINEA flow off, reports every 100 ms", (*alone, "alinea.interval=100ms"))]


def cross_section() -> list[str]:
    out = ["## Hop-by-hop with TCP cross traffic", "",
           f"`topo/alinea-tcp-cross.yaml`: an ALINEA flow H1 -> H2 and 0, 1 or 4 TCP reno flows H3 -> H4 (from 5 s) "
           f"across R1 -> R2 (2 Mb/s, 100-packet buffers, targets 30 %, 1514-byte frames for all). Seed {SEED}, "
           f"{CROSS_SECONDS} s; goodput, delay and utilisation over the second half.", "",
           "| TCP flows | ALINEA goodput (Mb/s) | ALINEA OWD p50 / p99 (ms) | TCP goodput (Mb/s, sum) | TCP "
           "retransmissions | TCP RTT p50 (ms) | loss (packets) | buffers that reached 100 % | R1 -> R2 used |",
           "|---|---|---|---|---|---|---|---|---|"]
    used: list[float] = []
    for label, sets in cross_rows():
        s = _run(scenario("alinea-tcp-cross", sets), CROSS_SECONDS).summary
        f1, tcp = s["flows"]["f1"], [f for f in s["flows"].values() if f["control"] == "tcp" and f["received"]]
        full = [k for k, b in s["buffers"].items() if b["max"] >= 1.0] or ["none"]
        rtt = percentile([f["tcp"]["rtt_ms"]["p50"] for f in tcp], 0.5) if tcp else None
        delay = f"{f1['owd_ms']['p50']:.0f} / {f1['owd_ms']['p99']:.0f}" if f1["received"] else "-"
        used.append(100 * s["links"]["R1->R2"]["utilisation"])
        out.append(f"| {label} | {f1['goodput_bps'] / 1e6:.3f} | {delay} "
                   f"| {sum(f['goodput_bps'] for f in tcp) / 1e6:.3f} | "
                   f"{sum(f['tcp']['retransmissions'] for f in tcp)} | {'-' if rtt is None else f'{rtt:.0f}'} | "
                   f"{s['loss']['total']} | {', '.join(full)} | {100 * s['links']['R1->R2']['utilisation']:.0f} % |")
    return out + ["", cross_reading(used), ""]


CROSS_READING = (
    "Reading it. TCP's host runs no law (TCP reads no report), so its packets are admitted into R1's buffer fed "
    "by H3 until it is full: that ingress buffer is the one place they are dropped, a drop-tail buffer of 100 "
    "packets that TCP keeps nearly full (its RTT is that queue). Downstream every hop is regulated and no buffer "
    "overflows: a queue that never drops hides congestion from a loss-based sender, so TCP learns of the "
    "bottleneck only at its first hop, through a buffer ALINEA does not regulate, with a round trip of a full "
    "buffer. The ALINEA flow shares R1's egress FIFO with TCP's packets: its own buffer never overflows, "
    "but its delay rises with the TCP queue it waits behind and its share falls (R1's regulated rate is one for "
    "the egress queue, taken in arrival order). TCP's ACKs enter R1 from R2, so R1 reports that buffer every "
    "10 ms through its egress toward R2, whose queue rate BMv2 counts in packets of any size: the agents add "
    "their own reports' packets/s to the rate they set (controlplane/agent.py, `report_pps`; before that, 68 % "
    "of R1 -> R2 was used with the ALINEA flow off).")


def cross_reading(used: list[float]) -> str:
    """The reading, with what the rows say of R1 -> R2's use (BMv2's queues, the file's default)."""
    lo, hi = min(used), max(used)
    span = f"{hi:.0f} %" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} %"
    return (f"{CROSS_READING} On BMv2's queues R1 -> R2 is {span} used over these rows; on p4switch's shaper at "
            "dequeue, this file's queue model until the switch to BMv2's, part of it went unused with TCP "
            "although packets waited (docs/howto/bmv2.md).")


# ---- Chen et al.: one-way delay of ALINEA and TCP on paper-5router --------------------------------------------
CHEN_SECONDS = 60
#: H1's own link at 10 Mb/s for both runs: TCP's first bottleneck is then a router's drop-tail FIFO (R1 -> R2,
#: 200 packets) and not H1's NIC queue (the model has no TCP Small Queues; docs/howto/tcp.md).
CHEN_SETS = ("link[H1-R1].rate=10Mbps",)


def chen_section(figures: Path, rel: Path) -> list[str]:
    runs = {"ALINEA (hop by hop)": _run(scenario("paper-5router", CHEN_SETS), CHEN_SECONDS),
            "TCP reno (end to end, drop-tail)": _run(scenario("paper-5router", CHEN_SETS, control="tcp-reno"),
                                                     CHEN_SECONDS)}
    half = CHEN_SECONDS * S // 2
    stats = {k: owd_stats(r.recorder.packets["f1"], half) for k, r in runs.items()}
    _chen_figure(runs, figures / "tcp-chen-delay.png", half)
    out = ["## One-way delay: ALINEA against TCP on paper-5router (Chen et al.)", "",
           f"Chen et al. claim hop-by-hop ALINEA gives smoother end-to-end delay than TCP (SOURCES.md A). "
           f"paper-5router with H1's link at 10 Mb/s (`--set {CHEN_SETS[0]}`, so that TCP's first bottleneck is a "
           "router's 200-packet drop-tail FIFO rather than H1's own NIC queue), once with its ALINEA flow and once "
           f"with the flow as TCP reno (`--controls tcp-reno`: end to end, every output port a drop-tail FIFO). "
           f"Seed {SEED}, {CHEN_SECONDS} s, packets received in the second half. TCP's one-way delay is per "
           "1448-byte application record, from the write to its in-order delivery (docs/howto/tcp.md); TCP's application "
           "reads at once, ALINEA's flow is drained by H2's 1.2 Mb/s playout. Jitter: the mean |difference| of "
           "consecutive packets' one-way delays (RFC 3550's D).", "",
           "| flow | goodput (Mb/s) | OWD p50 (ms) | OWD p99 (ms) | p99 - p50 (ms) | std (ms) | jitter (ms) | loss |",
           "|---|---|---|---|---|---|---|---|"]
    for k, r in runs.items():
        st, f = stats[k], r.summary["flows"]["f1"]
        out.append(f"| {k} | {f['goodput_bps'] / 1e6:.3f} | {st['p50']:.0f} | {st['p99']:.0f} | "
                   f"{st['p99'] - st['p50']:.0f} | {st['std']:.1f} | {st['jitter']:.2f} | {r.summary['loss']['total']} |")
    a, t = stats["ALINEA (hop by hop)"], stats["TCP reno (end to end, drop-tail)"]
    smoother = a["jitter"] < t["jitter"] and a["p99"] - a["p50"] < t["p99"] - t["p50"]
    out += ["", f"![one-way delay, ALINEA and TCP]({rel}/tcp-chen-delay.png)", "",
            ("Smoother, as claimed: ALINEA's one-way delay varies less (spread p99 - p50 and jitter) than TCP's." if
             smoother else "Not smoother on both measures: see the table."),
            "ALINEA's delay is high but flat: its queues sit at the 70-95 % targets (docs/results.md, 'What the "
            "70-95 % targets cost in delay'). TCP's moves with its window in the drop-tail FIFOs: a ramp through "
            "congestion avoidance, one packet more queued per round trip (the CDF's steps), and jumps when records "
            "wait for a retransmission (head-of-line blocking; the left figure's first seconds). docs/howto/tcp.md "
            "('ALINEA's one-way delay against TCP reno's (Chen et al.)') runs the same comparison on the kernel's "
            "TCP beside the model's.", ""]
    return out


def _chen_figure(runs: dict[str, Any], path: Path, half: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, cdf) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [2, 1]})
    for label, r in runs.items():
        rows = sorted(r.recorder.packets["f1"], key=lambda x: x[2])
        ax.plot([rv / 1e9 for _, _, rv in rows], [(rv - sn) / 1e6 for _, sn, rv in rows], lw=0.6, label=label)
        owd = sorted((rv - sn) / 1e6 for _, sn, rv in rows if rv > half)
        mid = percentile(owd, 0.5)
        cdf.plot([o - mid for o in owd], [i / len(owd) for i in range(len(owd))], label=label)
    ax.set(xlabel="time (s)", ylabel="one-way delay (ms)", title="paper-5router: one-way delay per packet")
    cdf.set(xlabel="OWD minus its median (ms)", ylabel="fraction of packets",
            title="second half: CDF of the variation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---- CVIHIS BLM against TCP ----------------------------------------------------------------------------------
BLM_SECONDS, TCP_ON, TCP_OFF = 200, 50, 170  # the paper's figure: TCP from about 50 s to about 170 s
BLM_RTTS = (("10 ms", "3ms"), ("100 ms", "48ms"), ("200 ms", "98ms"))
BLM_SETS = (f"flow[tcp].start={TCP_ON}s", f"flow[tcp].stop={TCP_OFF}s")
BLM_MAX_SHARE, BLM_BACK, BLM_BACK_WITHIN = 0.20, 0.90, 30  # the targets (issue 48): yields, then takes it back
CAPACITY_BPS = 3e6


def _blm_run(delay: str) -> dict[str, Any]:
    """The BLM-against-TCP run with BLM's access delay ``delay`` (its summary)."""
    return _run(scenario("cvihis-blm-vs-tcp", (f"link[H1-R1].delay={delay}", *BLM_SETS)), BLM_SECONDS).summary


def blm_section(jobs: int = 1) -> list[str]:
    out = ["## CVIHIS BLM against TCP", "",
           "`topo/cvihis-blm-vs-tcp.yaml` with the paper's timing (`--set flow[tcp].start=50s --set "
           "flow[tcp].stop=170s`): BLM and one TCP reno connection (RTT 200 ms) on a 3 Mb/s bottleneck with a "
           "50-packet drop-tail FIFO; BLM's RTT 10, 100 or 200 ms (`--set link[H1-R1].delay=...`); "
           f"{BLM_SECONDS} s, seed {SEED}, CVIHIS's default reading (docs/background/cvihis.md, 'Readings'); this section and "
           "the next are regenerated alone by `hbh results-tcp --only blm,rtm`. Mean receive "
           "rates (Mb/s) per window; BLM's share of what the two received while TCP runs; *back within*: the "
           "first 0.5 s bin after TCP stops from which BLM's 5 s mean stays within 10 % of the capacity.", "",
           f"| BLM RTT | BLM alone (40-50 s) | TCP's first 20 s (50-70 s): BLM / TCP | while TCP runs ({TCP_ON}-"
           f"{TCP_OFF} s): BLM / TCP | BLM's share ({TCP_ON}-{TCP_OFF} s) | its last 60 s | after ({TCP_OFF + 20}-"
           f"{BLM_SECONDS} s): BLM | back within (s) | loss |", "|---|---|---|---|---|---|---|---|---|"]
    worst_share, slowest = 0.0, 0.0
    delays = [delay for _label, delay in BLM_RTTS]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            summaries = list(pool.map(_blm_run, delays))
    else:
        summaries = [_blm_run(delay) for delay in delays]
    for (label, _delay), s in zip(BLM_RTTS, summaries):
        during = share(s, "blm", TCP_ON, TCP_OFF)
        back = back_within(s, "blm", TCP_OFF, BLM_BACK * CAPACITY_BPS)
        worst_share, slowest = max(worst_share, during), max(slowest, back)
        out.append(f"| {label} | {window(s, 'blm', 40, TCP_ON) / 1e6:.2f} | {_pair(s, TCP_ON, TCP_ON + 20)} | "
                   f"{_pair(s, TCP_ON, TCP_OFF)} | {100 * during:.0f} % | {100 * share(s, 'blm', TCP_OFF - 60, TCP_OFF):.0f} % "
                   f"| {window(s, 'blm', TCP_OFF + 20, BLM_SECONDS) / 1e6:.2f} | {back:.1f} | {s['loss']['total']} |")
    return out + ["", "Published: BLM yields while TCP runs and takes the capacity back after, faster when its RTT "
                  f"is short. Here BLM's share while TCP runs is at most {100 * worst_share:.0f} % (target: at most "
                  f"{100 * BLM_MAX_SHARE:.0f} %) and it is back within 10 % of the capacity at most {slowest:.1f} s "
                  f"after TCP stops (target: within {BLM_BACK_WITHIN} s). TCP reno at 200 ms grows one segment per "
                  "200 ms after its first loss, so it needs some 20 s to fill the path: BLM gives way as TCP's "
                  "window grows (its first 20 s), not at once.", ""]


def back_within(summary: dict[str, Any], flow: str, after: float, level_bps: float, span: float = 5.0) -> float:
    """Seconds after ``after`` until ``flow``'s mean receive rate over the next ``span`` s reaches ``level_bps``
    and stays there to the end (inf: never)."""
    se = summary["series"]
    pts = [(t, v) for t, v in zip(se["t_s"], se["flows"][flow]["receive_bps"]) if t > after]
    means = [(t, statistics.fmean(v for u, v in pts if t <= u < t + span)) for t, _ in pts if t + span <= pts[-1][0]]
    good = [m >= level_bps for _, m in means]
    for i, (t, _) in enumerate(means):
        if all(good[i:]):
            return t - after
    return float("inf")


def _pair(s: dict[str, Any], a: float, b: float) -> str:
    return f"{window(s, 'blm', a, b) / 1e6:.2f} / {window(s, 'tcp', a, b) / 1e6:.2f}"


# ---- CVIHIS RTM against TCP: the TCP-friendliness grid ----------------------------------------------------------
RTM_SECONDS = 40
RTM_RATES = ("2Mbps", "3Mbps", "4.5Mbps")
RTM_RTTS = ((20, "8ms"), (80, "38ms"), (140, "68ms"), (200, "98ms"))
PUBLISHED_WORST = 1.6
TARGET_WORST = 2.0
#: RTM's starting rates (the paper varied them): CVIHIS's default (400 kb/s, the paper's initial rate), half the
#: bottleneck's capacity and the capacity; the target is set from the first, the others are reported beside it
#: (docs/background/cvihis.md, "Readings")
RTM_STARTS = ("", "half", "capacity")
START_LABELS = {"": "400 kb/s", "half": "half the capacity", "capacity": "the capacity"}
#: the names ``--starts`` takes, in RTM_STARTS's order
START_NAMES = ("default", "half", "capacity")


def rtm_topology(rate: str, delay: str, cc: str = "reno", reading: str = "", start: str = "") -> Topology:
    """One cell of the grid as ``rtm_cell`` runs it (either backend: topo/results/rtm_kernel.py runs it in
    netns): topo/cvihis-rtm-vs-tcp.yaml with the bottleneck's ``rate``, both access links' one-way ``delay``, TCP's
    ``cc``, a ``cvihis:`` reading's text and RTM's starting rate (empty: the defaults)."""
    sets = (f"link[R1-R2].rate={rate}", f"link[H1-R1].delay={delay}", f"link[H3-R1].delay={delay}")
    replace = (("cc: reno", f"cc: {cc}"),)
    if reading:
        replace += (("\nnodes:", f"\ncvihis: {reading}\nnodes:"),)
    if start:
        replace += (("control: cvihis-rtm}", f"control: cvihis-rtm, cvihis: {{start_rate: {start}}}}}"),)
    return scenario("cvihis-rtm-vs-tcp", sets, replace)


def rtm_cell(rate: str, delay: str, cc: str, seed: int = SEED, seconds: float = RTM_SECONDS,
             reading: str = "", start: str = "") -> tuple[float, float]:
    """(RTM, TCP) mean receive rates (b/s) over the second half of one grid run; ``reading``: a ``cvihis:``
    mapping's text for the file (e.g. ``{variant: shifted}``), empty for the default; ``start``: RTM's
    starting rate (``cvihis: {start_rate: ...}`` on its flow), empty for CVIHIS's default."""
    topo = rtm_topology(rate, delay, cc, reading, start)
    print(f"running {topo.name} {rate} {delay} {cc} start {start or 'default'} seed {seed} ({seconds:g} s virtual) ...",
          file=sys.stderr, flush=True)
    s = run_experiment(topo, int(seconds * S), seed=seed, plots=False).summary
    return window(s, "rtm", seconds / 2, seconds), window(s, "tcp", seconds / 2, seconds)


def rtm_cells(specs: list[tuple[Any, ...]], jobs: int = 1) -> list[tuple[float, float]]:
    """``rtm_cell(*spec)`` for every spec, in order; with ``jobs`` > 1 in that many processes (each run is seeded,
    so the numbers are the same either way: only the wall time changes)."""
    if jobs <= 1:
        return [rtm_cell(*spec) for spec in specs]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(_rtm_cell_star, specs))


def _rtm_cell_star(spec: tuple[Any, ...]) -> tuple[float, float]:
    return rtm_cell(*spec)


def start_rate(start: str, rate: str) -> str:
    """A grid row's RTM starting rate: ``""`` (CVIHIS's default), ``"capacity"`` (the bottleneck's rate, e.g.
    ``4.5Mbps``) or ``"half"`` (half of it, ``2.25Mbps``)."""
    if start == "half":
        return f"{float(rate.removesuffix('Mbps')) / 2:g}Mbps"
    return rate if start == "capacity" else start


def rtm_section(jobs: int = 1) -> list[str]:
    out = ["## CVIHIS RTM against TCP: the TCP-friendliness grid", "",
           "`topo/cvihis-rtm-vs-tcp.yaml`: one RTM flow (CVIHIS's default reading, docs/background/cvihis.md 'Readings') and "
           "one TCP flow (the simulator's model, SACK on as Linux NewReno has it), both with the same RTT, on a "
           "bottleneck with a 50-packet drop-tail FIFO; the paper's grid (2-4.5 Mb/s, RTT 20/80/140/200 ms, starting "
           "rates varied, 26 tests against NewReno): 2, 3 and 4.5 Mb/s, four RTTs, RTM starting at CVIHIS's default "
           "400 kb/s, at half the bottleneck's capacity or at the capacity (`cvihis: {start_rate: ...}`; against cubic "
           "at 400 kb/s only), "
           "reno then cubic, "
           f"{RTM_SECONDS} s each (seed {SEED}), shares over {RTM_SECONDS // 2}-{RTM_SECONDS} s. The shares are those "
           "of one run, not converged means; docs/background/cvihis.md ('Readings') has seeds 1-5 on the reno grid.", "",
           "| cc | bottleneck | RTM starts at | RTT 20 ms | RTT 80 ms | RTT 140 ms | RTT 200 ms |",
           "|---|---|---|---|---|---|---|"]
    worst: dict[tuple[str, str], float] = {}
    by_rtt: dict[tuple[str, int], list[tuple[float, float]]] = {}
    rows = [(cc, rate, start) for cc in ("reno", "cubic") for rate in RTM_RATES
            for start in (RTM_STARTS if cc == "reno" else RTM_STARTS[:1])]
    specs = [(rate, delay, cc, SEED, RTM_SECONDS, "", start_rate(start, rate))
             for cc, rate, start in rows for _rtt, delay in RTM_RTTS]
    results = iter(rtm_cells(specs, jobs))
    for cc, rate, start in rows:
        cells = []
        for rtt, _delay in RTM_RTTS:
            rtm, tcp = next(results)
            ratio = max(rtm, tcp) / min(rtm, tcp) if min(rtm, tcp) > 0 else float("inf")
            worst[cc, start] = max(worst.get((cc, start), 0.0), ratio)
            by_rtt.setdefault((cc, rtt), []).append((rtm / 1e6, tcp / 1e6))
            cells.append(f"{100 * rtm / (rtm + tcp):.0f} % (x{ratio:.1f})" if rtm + tcp else "-")
        out.append(f"| {cc} | {rate.replace('Mbps', ' Mb/s')} | {START_LABELS[start]} | {' | '.join(cells)} |")
    reno = [(rtt, statistics.fmean(r for r, _ in v), statistics.fmean(t for _, t in v))
            for (cc, rtt), v in by_rtt.items() if cc == "reno"]
    out += ["", "Cells: RTM's share of what the two received, and the larger over the smaller rate. "
            f"Worst ratio against reno, RTM starting at 400 kb/s: **{worst['reno', '']:.1f}** (target: at most "
            f"{TARGET_WORST}); starting at "
            + ", at ".join(f"{START_LABELS[s]} {worst['reno', s]:.1f}" for s in RTM_STARTS[1:])
            + " (reported beside the target; docs/background/cvihis.md, 'Readings', has them over seeds 1-5); against "
            "cubic "
            f"{worst['cubic', '']:.1f}; published: about {PUBLISHED_WORST} against NewReno, the worst of 26 tests, and "
            "CUBIC somewhat more aggressive than NewReno. How RTT affects each (reno rows, mean rate over the "
            "bottlenecks and starting rates, Mb/s, RTM / TCP): "
            + ", ".join(f"{rtt} ms {r:.2f} / {t:.2f}" for rtt, r, t in reno)
            + f"; from 20 to 200 ms RTM's rate changes by {_change(reno, 1)}, TCP's by {_change(reno, 2)} "
            "(published: RTT affects CVIHIS less than TCP; seed 1's grid, over seeds 1-5 not at 2 Mb/s: "
            "docs/background/cvihis.md, 'RTT and RTM's share'). docs/background/cvihis.md ('Readings') gives the other readings "
            "of the paper on this grid and why the default is the one above.", ""]
    return out


def _change(rows: list[tuple[int, float, float]], col: int) -> str:
    first, last = rows[0][col], rows[-1][col]
    return f"{100 * (last - first) / first:+.0f} %" if first else "-"


# ---- the thesis' LEDBAT case -----------------------------------------------------------------------------------
SCAV_SECONDS, SCAV_ON, SCAV_OFF = 70, 20, 50
SCAVENGERS = (("LEDBAT, target 60 ms", ()), ("LEDBAT, target 55 ms", (("target: 60ms", "target: 55ms"),)),
              ("CVIHIS BLM", (("control: ledbat, target: 60ms", "control: cvihis-blm"),)))


def scavenger_section() -> list[str]:
    out = ["## LEDBAT and BLM against the same TCP cross traffic (the thesis' case)", "",
           "`topo/ledbat-vs-tcp.yaml`: 600 kb/s bottleneck, one-way propagation delay 90 ms, a 30-packet drop-tail "
           f"queue; the scavenger alone, then TCP reno from {SCAV_ON} s to {SCAV_OFF} s ({SCAV_SECONDS} s, seed "
           f"{SEED}). Rates in kb/s; *yields within*: the first 0.5 s bin after TCP starts from which the "
           "scavenger stays below half its rate alone; *back within*: the first bin after TCP stops at 80 % of "
           "its rate alone; oscillation: the coefficient of variation of its rate alone (10-20 s).", "",
           "| scavenger | alone (10-20 s) | oscillation alone | with TCP (35-50 s): scavenger / TCP | yields within "
           "(s) | after (60-70 s) | back within (s) |", "|---|---|---|---|---|---|---|"]
    seen: dict[str, tuple[str, float]] = {}
    for label, replace in SCAVENGERS:
        s = _run(scenario("ledbat-vs-tcp", replace=replace), SCAV_SECONDS).summary
        alone = window(s, "scavenger", 10, 20)
        seen[label] = (_after(s, SCAV_ON, below=0.5 * alone), _cv(s, "scavenger", 10, 20))
        out.append(f"| {label} | {alone / 1e3:.0f} | {_cv(s, 'scavenger', 10, 20):.3f} | "
                   f"{window(s, 'scavenger', 35, 50) / 1e3:.0f} / {window(s, 'tcp', 35, 50) / 1e3:.0f} | "
                   f"{_after(s, SCAV_ON, below=0.5 * alone)} | {window(s, 'scavenger', 60, 70) / 1e3:.0f} | "
                   f"{_after(s, SCAV_OFF, above=0.8 * alone)} |")
    (ly, lcv), (by, bcv) = seen[SCAVENGERS[0][0]], seen[SCAVENGERS[2][0]]
    return out + ["", "The thesis: LEDBAT and BLM both settle at capacity; LEDBAT oscillates slightly (its target is "
                  f"a value, not a range) and reacts faster. Here LEDBAT (60 ms) gives way within {ly} s of TCP's "
                  f"start and BLM within {by} s; alone, LEDBAT's rate varies by a coefficient of {lcv:.3f} and BLM's "
                  f"by {bcv:.3f} (over 0.5 s bins).", ""]


def _cv(s: dict[str, Any], flow: str, a: float, b: float) -> float:
    se = s["series"]
    xs = [v for t, v in zip(se["t_s"], se["flows"][flow]["receive_bps"]) if a < t <= b]
    return statistics.pstdev(xs) / statistics.fmean(xs) if xs and statistics.fmean(xs) else 0.0


def _after(s: dict[str, Any], at: float, *, below: float = float("inf"), above: float = 0.0) -> str:
    """Seconds after ``at`` until the scavenger's rate is in [above, below) and stays there for 5 s."""
    se = s["series"]
    pts = [(t, v) for t, v in zip(se["t_s"], se["flows"]["scavenger"]["receive_bps"]) if t > at]
    for i, (t, _) in enumerate(pts):
        if all(above <= v < below for tt, v in pts[i:] if tt <= t + 5):
            return f"{t - at:.1f}"
    return "never"


# ---- the fairness seed's method (Seada & Helmy) -----------------------------------------------------------------
FAIR_SECONDS = 120
FAIR_SCHEMES = ("tfrc", "cvihis-rtm")
FAIR_COUNTS = (1, 2, 8)


def fairness_section() -> list[str]:
    out = ["## An end-to-end scheme against TCP flows with diverse RTTs (the fairness seed's method)", "",
           "`topo/e2e-vs-tcp-flows.yaml`: one flow of the scheme (RTT 110 ms) against 1, 2 or 8 TCP reno flows "
           "(RTTs 20 ms; 20 and 200 ms; 20-200 ms) on a 5 Mb/s bottleneck, 60-packet drop-tail FIFO. Seed "
           f"{SEED}, {FAIR_SECONDS} s, goodput over the second half. Why {FAIR_SECONDS} s: Seada & Helmy ask for "
           "runs long enough that unfairness shows; the slowest TCP flow (200 ms, from 2 flows on) with a third of "
           "5 Mb/s and its part of the queue has a window of about 45 segments, so a Reno sawtooth of some 20 RTTs "
           "(~4.5 s): the 60 s measured hold about 13 of its cycles, past its slow start and first recoveries. "
           "*Ratio*: the scheme's goodput over the mean TCP flow's.", "",
           "| scheme | TCP flows | scheme (Mb/s) | TCP flows (Mb/s) | ratio | Jain (all flows) |",
           "|---|---|---|---|---|---|"]
    for scheme in FAIR_SCHEMES:
        for n in FAIR_COUNTS:
            sets = tuple(f"flow[t{i}].start={NEVER}" for i in range(n + 1, 9))
            replace = () if scheme == "tfrc" else (("control: tfrc", f"control: {scheme}"),)
            s = _run(scenario("e2e-vs-tcp-flows", sets, replace), FAIR_SECONDS).summary
            g = {k: f["goodput_bps"] for k, f in s["flows"].items() if k == "s" or int(k[1:]) <= n}
            tcp = [v for k, v in g.items() if k != "s"]
            out.append(f"| {scheme} | {n} | {g['s'] / 1e6:.3f} | {', '.join(f'{v / 1e6:.2f}' for v in tcp)} | "
                       f"{g['s'] / statistics.fmean(tcp):.2f} | {jain(list(g.values())):.3f} |")
    return out + [""]


def sections(figures: Path, doc_dir: Path) -> list[str]:
    from topo.results.splice import commit

    rel = figures.relative_to(doc_dir) if figures.is_relative_to(doc_dir) else figures
    header = ["## TCP in the network", "", f"The sections up to the next part are generated by `{COMMAND}` (also "
              f"part of `make results`) at commit {commit()}: the simulator (short versions of the BLM, Chen and RTM runs on the kernel's "
              "TCP in netns are in docs/howto/tcp.md, 'The sources' experiments on the kernel's TCP'; "
              "tests/topo/results/test_tcp_experiments.py runs the cross-traffic case in netns too), seed "
              f"{SEED}. Issue 23: TCP crossing a hop-by-hop network, and the sources' experiments against TCP.", ""]
    return header + (cross_section() + chen_section(figures, rel) + blm_section() + rtm_section()
                     + scavenger_section() + fairness_section())


CVIHIS_SECTIONS = {"blm": blm_section, "rtm": rtm_section}


def grid_cells(text: str = "") -> list[tuple[str, int, str]]:
    """The grid's cells (bottleneck, RTT in ms, one-way access delay), all of them or those ``text`` names as
    ``MBPS/RTT`` pairs (``2/200,4.5/20``); ValueError naming a cell that is not on the grid."""
    cells = [(rate, rtt, delay) for rate in RTM_RATES for rtt, delay in RTM_RTTS]
    if not text:
        return cells
    by_name = {f"{rate.removesuffix('Mbps')}/{rtt}": (rate, rtt, delay) for rate, rtt, delay in cells}
    names = [n.strip() for n in text.split(",") if n.strip()]
    wrong = [n for n in names if n not in by_name]
    if wrong or not names:
        raise ValueError(f"--cells {text}: {', '.join(wrong) or 'no cell'} not on the grid (e.g. {', '.join(by_name)})")
    return [c for c in cells if f"{c[0].removesuffix('Mbps')}/{c[1]}" in names]


def grid_table(readings: list[str], seeds: list[int], seconds: float = RTM_SECONDS, jobs: int = 1,
               starts: tuple[str, ...] = RTM_STARTS, cells: list[tuple[str, int, str]] | None = None) -> list[str]:
    """The reno grid per reading, seed and RTM starting rate (docs/background/cvihis.md, "Readings"): RTM's share in each
    cell, the worst ratio per row, and per reading the worst over its seeds and starting rates (``cells``: some of
    the grid's cells only, as ``grid_cells`` names them)."""
    cells = cells or grid_cells()
    out = ["| reading | seed | RTM starts at | " + " | ".join(f"{r.replace('Mbps', '')}/{rtt}" for r, rtt, _ in cells)
           + " | worst |", "|---|---|---|" + "---|" * (len(cells) + 1)]
    rows = [(reading, seed, start) for reading in readings for seed in seeds for start in starts]
    specs = [(rate, delay, "reno", seed, seconds, "" if reading == "default" else reading, start_rate(start, rate))
             for reading, seed, start in rows for rate, _rtt, delay in cells]
    results = iter(rtm_cells(specs, jobs))
    worst_all: dict[str, float] = {}
    for reading, seed, start in rows:
        shares, worst = [], 0.0
        for _cell in cells:
            rtm, tcp = next(results)
            worst = max(worst, max(rtm, tcp) / min(rtm, tcp) if min(rtm, tcp) > 0 else float("inf"))
            shares.append(f"{100 * rtm / (rtm + tcp):.0f} %" if rtm + tcp else "-")
        worst_all[reading] = max(worst_all.get(reading, 0.0), worst)
        out.append(f"| `{reading}` | {seed} | {start or '400 kb/s'} | {' | '.join(shares)} | {worst:.2f} |")
        if (seed, start) == (seeds[-1], starts[-1]):
            out.append(f"| `{reading}` | all | |{' |' * len(cells)} **{worst_all[reading]:.2f}** |")
    return out


#: the two-bottleneck rows (SOURCES.md part B) as tests/topo/experiments/test_cvihis_published.py runs them: --set lines,
#: each flow's published rate in the links' accounting (kb/s; topo/results/cvihis_rows.py says why it is converted)
TARGET_ROWS = tuple((r.name, r.sets, in_link_units(r)) for r in ROWS)
#: BLM against TCP as the test runs it (time scaled down: TCP from 10 s to 70 s of 100 s), and the capacity drops
#: (topology, the drop's time, the new capacity, the run's length)
TARGET_BLM_SETS, TARGET_BLM = ("flow[tcp].start=10s", "flow[tcp].stop=70s"), (10, 70, 100)
TARGET_DROPS = (("capacity-drop", 30, 1.0e6, 45), ("bottleneck-drop", 20, 1.5e6, 35))


def _with_reading(name: str, reading: str, sets: tuple[str, ...] = (), control: str | None = None) -> Topology:
    replace = (("\nnodes:", f"\ncvihis: {reading}\nnodes:"),) if reading else ()
    return scenario(name, sets, replace, control)


def _seeded(topo: Topology, seconds: float, seed: int) -> dict[str, Any]:
    print(f"running {topo.name} seed {seed} ({seconds:g} s virtual) ...", file=sys.stderr, flush=True)
    return run_experiment(topo, int(seconds * S), seed=seed, plots=False).summary


def targets_table(readings: list[str], seeds: list[int], row_seeds: tuple[int, ...] = (SEED,)) -> list[str]:
    """Issue 48's other CVIHIS targets per reading (docs/background/cvihis.md, "Readings"), as the tests of
    tests/topo/experiments/test_cvihis_published.py measure them: the two-bottleneck rows (goodput over 60-120 s of 120 s; the
    worst deviation from the published rate in the links' accounting, topo/results/cvihis_rows.py), three RTM flows (30-60 s of 60 s: Jain), BLM against RTM (RTM / BLM
    over 35-50 s), each for every seed of ``row_seeds`` (a line each; seed 1 alone by default), then BLM against
    TCP over ``seeds`` (the largest share while TCP runs, the slowest return), BLM after a capacity drop over
    ``seeds`` (the furthest from the new capacity) and RTM after it (its sending rate: what arrives is capped by the
    link), on the reading's first line."""
    out = ["| reading | seed | rows 1-6: flow kb/s (deviation) | worst row | three RTM flows: Jain | BLM vs RTM: RTM / "
           "BLM | BLM vs TCP: largest share, slowest back (s) | BLM after a drop: furthest from the capacity | RTM after a "
           "drop: sending, furthest from the capacity |",
           "|---|---|---|---|---|---|---|---|---|"]
    for reading in readings:
        for i, seed in enumerate(row_seeds):
            out.append(_targets_line(reading, seed, seeds if i == 0 else []))
    return out


def _targets_line(reading: str, seed: int, seeds: list[int]) -> str:
    """One line of ``targets_table``: the rows, three flows and BLM against RTM on ``seed``; the BLM runs against
    TCP and after a drop over ``seeds`` (none: "-")."""
    a, b, seconds = TARGET_BLM
    text = "" if reading == "default" else reading
    cells, worst = [], 0.0
    for row, sets, published in TARGET_ROWS:
        s = _seeded(_with_reading("cvihis-two-bottleneck", text, sets), 120, seed)
        got = [s["flows"][f]["goodput_bps"] / 1e3 for f in ("f1", "f2", "f3")[:len(published)]]
        dev = [100 * (g / p - 1) for g, p in zip(got, published)]
        worst = max(worst, *(abs(d) for d in dev))
        cells.append(f"{row}: " + ", ".join(f"{g:.0f} ({d:+.1f} %)" for g, d in zip(got, dev)))
    s = _seeded(_with_reading("cvihis-three-flows", text), 60, seed)
    three = jain([f["goodput_bps"] for f in s["flows"].values()])
    s = _seeded(_with_reading("cvihis-blm-vs-rtm", text), 75, seed)
    blm_rtm = window(s, "rtm", 35, 50) / max(window(s, "blm", 35, 50), 1.0)
    most, slowest = 0.0, 0.0
    for blm_seed in seeds:
        for _label, delay in BLM_RTTS:
            s = _seeded(_with_reading("cvihis-blm-vs-tcp", text, (f"link[H1-R1].delay={delay}",
                                                                  *TARGET_BLM_SETS)), seconds, blm_seed)
            most = max(most, share(s, "blm", a, b))
            slowest = max(slowest, back_within(s, "blm", b, BLM_BACK * CAPACITY_BPS))
    furthest, rtm_furthest = 0.0, 0.0
    for blm_seed in seeds:
        for name, at, capacity, length in TARGET_DROPS:
            s = _seeded(_with_reading(name, text, control="cvihis-blm"), length, blm_seed)
            furthest = max(furthest, abs(window(s, "f1", at + 10, length) / capacity - 1))
            s = _seeded(_with_reading(name, text, control="cvihis-rtm"), length, blm_seed)
            rtm_furthest = max(rtm_furthest, abs(window(s, "f1", at + 10, length, "send_bps") / capacity - 1))
    blm = (f"{100 * most:.1f} %, {slowest:.1f} | {100 * furthest:.1f} % | {100 * rtm_furthest:.1f} %" if seeds
           else "- | - | -")
    return (f"| `{reading}` | {seed} | {'; '.join(cells)} | {worst:.1f} % | {three:.4f} | {blm_rtm:.2f} "
            f"| {blm} |")


def _starts(ap: Any, text: str) -> tuple[str, ...]:
    """``--starts``: the grid's starting rates by name ("default" is CVIHIS's own, the empty string here)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or any(n not in START_NAMES for n in names):
        ap.error(f"--starts {text}: use one or more of {', '.join(START_NAMES)}")
    return tuple("" if n == "default" else n for n in names)


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main(argv: list[str] | None = None) -> int:
    """``hbh results-tcp --only blm,rtm``: regenerate CVIHIS's sections of docs/results.md alone
    (they are part of ``make results-tcp`` too; the whole TCP part takes several times as long). A change of
    CVIHIS's reading moves these two and, where an RTM flow runs, ``hbh results --only compare,e2e,gcc,tcp``'s."""

    from topo.results.splice import splice_sections

    ap = ValueParser(prog="hbh results-tcp", description=main.__doc__)
    ap.add_argument("--only", default=",".join(CVIHIS_SECTIONS), help=f"of: {', '.join(CVIHIS_SECTIONS)}")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "results.md"))
    ap.add_argument("--grid", metavar="READINGS", help="instead: print the reno grid for these readings, ';'-"
                    "separated cvihis: mappings (e.g. '{variant: shifted};{md: per-packet}'; 'default' for none)")
    ap.add_argument("--seeds", default="1", help="with --grid: seeds, e.g. 1-5")
    ap.add_argument("--starts", default=",".join(START_NAMES), help="with --grid: RTM's starting rates, of "
                    "default (CVIHIS's 400 kb/s), half (half the bottleneck's rate) and capacity (the bottleneck's rate)")
    ap.add_argument("--jobs", type=int, default=1, help="run this many simulations at once (the same numbers)")
    ap.add_argument("--seconds", type=float, default=RTM_SECONDS, help="with --grid: each run's length (s); the "
                    "shares are over its second half")
    ap.add_argument("--cells", default="", help="with --grid: only these cells, MBPS/RTT pairs (e.g. 2/200,4.5/20)")
    ap.add_argument("--row-seeds", default="1", help="with --targets: the seeds of the two-bottleneck rows, the three "
                    "RTM flows and BLM against RTM (a line each)")
    ap.add_argument("--targets", metavar="READINGS", help="instead: print issue 48's other CVIHIS targets (the "
                    "two-bottleneck rows, three RTM flows, BLM against RTM, TCP and a capacity drop) for these "
                    "readings, as --grid takes them; --seeds for the BLM runs")
    args = ap.parse_args(argv)
    from topo.file.yaml_tree import TopologyError

    try:
        if args.targets:
            print("\n".join(targets_table([r.strip() for r in args.targets.split(";") if r.strip()],
                                           _seeds(args.seeds), tuple(_seeds(args.row_seeds)))))
            return 0
        if args.grid:
            try:
                cells = grid_cells(args.cells)
            except ValueError as exc:
                ap.error(str(exc))
            print("\n".join(grid_table([r.strip() for r in args.grid.split(";") if r.strip()], _seeds(args.seeds),
                                         args.seconds, args.jobs, _starts(ap, args.starts), cells)))
            return 0
    except TopologyError as exc:  # a reading the loader refuses: its one line, naming the file and the key
        ap.error(str(exc).splitlines()[0])
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CVIHIS_SECTIONS]
    if unknown or not names:
        ap.error(f"--only {args.only}: unknown section {', '.join(unknown) or '(none)'} "
                 f"(known: {', '.join(CVIHIS_SECTIONS)})")
    lines = [line for n in names for line in CVIHIS_SECTIONS[n](args.jobs)]
    doc = Path(args.doc)
    doc.write_text(splice_sections(doc.read_text(encoding="utf-8"), lines), encoding="utf-8")
    print(f"wrote the {', '.join(names)} sections of {doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
