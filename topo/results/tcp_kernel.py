"""``hbh tcp-kernel``: the sources' TCP experiments (docs/results.md, topo/results/tcp.py) in
short versions on both backends, the kernel's TCP through p4switch in netns beside the simulator's
model, and the runs that explain CVIHIS RTM's distance from its published TCP-friendliness.

Why a module apart from ``topo.results.tcp``: netns runs take real time and root, and measure the
machine as well as TCP, so they cannot be part of ``make results``; each netns row here carries the
load average at the end of its run and whether the run kept real time (``topo/netns/keepup.py``: a row that
did not is marked **behind**, with why), and docs/howto/tcp.md keeps the tables with the command that made them:

    sudo chrt -r 10 .venv/bin/hbh tcp-kernel --doc docs/howto/tcp.md     # ~35 min; --only to pick

Sections (``--only``): ``blm`` (BLM against kernel reno), ``chen`` (ALINEA's one-way delay against
kernel reno's), ``rtm`` (RTM against kernel reno and the model, each with and without SACK, on the
reno grid), ``ablation`` (simulator only: which of RTM's choices makes it unfriendly to the model's TCP).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from runtime.arguments import ValueParser
from topo.net.model import Topology
from topo.netns.keepup import verdict
from topo.results import tcp as R
from topo.run.runner import run_experiment

__all__ = ["main", "SECTIONS", "rtm_variant"]

SEED = 1
S = 1_000_000_000
COMMAND = "sudo chrt -r 10 .venv/bin/hbh tcp-kernel --doc docs/howto/tcp.md"


def _run(topo: Topology, seconds: float, backend: str) -> tuple[Any, str]:
    """The run, and for netns the load average at its end and whether it kept real time ("-" for the
    simulator: it does not care)."""
    print(f"running {topo.name} ({seconds:g} s, {backend}) ...", file=sys.stderr, flush=True)
    kw = {"pcap": False} if backend == "netns" else {}
    result = run_experiment(topo, int(seconds * S), seed=SEED, plots=False, backend=backend, **kw)
    return result, realtime_note(result.summary, backend)


def realtime_note(summary: dict[str, Any], backend: str) -> str:
    """"-" for the simulator; for netns the load average at the end, and "kept up" or "**behind**: why"."""
    if backend == "sim":
        return "-"
    rt = summary.get("realtime") or {}
    said = verdict(rt)
    load = rt.get("load_1min", os.getloadavg()[0])
    return f"{load:.1f}, " + ("kept up" if said == "yes" else f"**behind** ({said.removeprefix('no: ')})")


# ---- BLM against kernel reno ----------------------------------------------------------------------------------
BLM_SECONDS, BLM_ON, BLM_OFF = 60, 10, 50


def blm_section(backends: tuple[str, ...]) -> list[str]:
    out = [f"`topo/cvihis-blm-vs-tcp.yaml` shortened: TCP reno (RTT 200 ms) from {BLM_ON} s to {BLM_OFF} s of a "
           f"{BLM_SECONDS} s run, seed {SEED}; BLM's RTT 10, 100, 200 ms. Mean receive rates (Mb/s).", "",
           f"| BLM RTT | backend | BLM alone (5-{BLM_ON} s) | last 15 s of TCP ({BLM_OFF - 15}-{BLM_OFF} s): BLM / TCP | "
           f"BLM's share | after ({BLM_OFF + 5}-{BLM_SECONDS} s): BLM | loss | load, real time |", "|---|---|---|---|---|---|---|---|"]
    for label, delay in R.BLM_RTTS:
        sets = (f"link[H1-R1].delay={delay}", f"flow[tcp].start={BLM_ON}s", f"flow[tcp].stop={BLM_OFF}s")
        for backend in backends:
            r, load = _run(R.scenario("cvihis-blm-vs-tcp", sets, _reading()), BLM_SECONDS, backend)
            s = r.summary
            a, b = BLM_OFF - 15, BLM_OFF
            out.append(f"| {label} | {_who(backend)} | {R.window(s, 'blm', 5, BLM_ON) / 1e6:.2f} | "
                       f"{R.window(s, 'blm', a, b) / 1e6:.2f} / {R.window(s, 'tcp', a, b) / 1e6:.2f} | "
                       f"{100 * R.share(s, 'blm', a, b):.0f} % | "
                       f"{R.window(s, 'blm', BLM_OFF + 5, BLM_SECONDS) / 1e6:.2f} | {s['loss']['total']} | {load} |")
    return out


def _who(backend: str) -> str:
    return "kernel (netns)" if backend == "netns" else "model (sim)"


# ---- Chen et al.: ALINEA's one-way delay against kernel reno's -------------------------------------------------
CHEN_SECONDS = 30


def chen_section(backends: tuple[str, ...]) -> list[str]:
    out = [f"paper-5router with `--set {R.CHEN_SETS[0]}`, its flow as ALINEA and as TCP reno, {CHEN_SECONDS} s, seed "
           f"{SEED}, packets received in the second half; one-way delay and jitter as in docs/results.md.", "",
           "| flow | backend | goodput (Mb/s) | OWD p50 (ms) | OWD p99 (ms) | p99 - p50 (ms) | jitter (ms) | loss "
           "| load, real time |",
           "|---|---|---|---|---|---|---|---|---|"]
    half = CHEN_SECONDS * S // 2
    for label, control in (("ALINEA (hop by hop)", None), ("TCP reno (end to end)", "tcp-reno")):
        for backend in backends:
            r, load = _run(R.scenario("paper-5router", R.CHEN_SETS, control=control), CHEN_SECONDS, backend)
            st, f = R.owd_stats(r.recorder.packets["f1"], half), r.summary["flows"]["f1"]
            out.append(f"| {label} | {_who(backend)} | {f['goodput_bps'] / 1e6:.3f} | {st['p50']:.0f} | {st['p99']:.0f} "
                       f"| {st['p99'] - st['p50']:.0f} | {st['jitter']:.2f} | {r.summary['loss']['total']} | {load} |")
    return out


# ---- RTM against TCP: the reno grid -------------------------------------------------------------------------
#: docs/results.md's reno grid: 2 and 4.5 Mb/s, RTTs 20, 80, 140 and 200 ms (the paper's RTTs).
RTM_GRID = tuple((rate, rtt, delay) for rate in ("2Mbps", "4.5Mbps")
                 for rtt, delay in ((20, "8ms"), (80, "38ms"), (140, "68ms"), (200, "98ms")))
#: (label, backend, text replacements of the file): the kernel and the model, each with its default SACK
#: and without it.
NO_SACK = (("cc: reno", "cc: reno, sack: false"),)
RTM_TCPS = (("kernel reno, SACK (netns)", "netns", ()),
            ("kernel reno, no SACK (netns)", "netns", NO_SACK),
            ("model reno, SACK (sim)", "sim", ()),
            ("model reno, no SACK (sim)", "sim", NO_SACK))


#: ``--reading``: the CVIHIS reading (a variant of hosts/cvihis/variants.py) the blm and rtm sections run;
#: empty: the file's (the default, ``reprobe-overload``)
READING = {"variant": ""}


def _reading() -> tuple[tuple[str, str], ...]:
    """The text replacement that gives the file ``cvihis: {variant: ...}`` (none for the default)."""
    v = READING["variant"]
    return (("\nnodes:", f"\ncvihis: {{variant: {v}}}\nnodes:"),) if v else ()


def _rtm_sets(rate: str, delay: str) -> tuple[str, ...]:
    return (f"link[R1-R2].rate={rate}", f"link[H1-R1].delay={delay}", f"link[H3-R1].delay={delay}")


def _rtm_cell(s: dict[str, Any]) -> tuple[str, float]:
    """RTM's share over the second half of the run and the larger rate over the smaller."""
    half = R.RTM_SECONDS / 2
    rtm, tcp = (R.window(s, f, half, R.RTM_SECONDS) for f in ("rtm", "tcp"))
    ratio = max(rtm, tcp) / min(rtm, tcp) if min(rtm, tcp) > 0 else float("inf")
    return (f"{100 * rtm / (rtm + tcp):.0f} % (x{ratio:.1f})" if rtm + tcp else "-"), ratio


def rtm_section(backends: tuple[str, ...]) -> list[str]:
    out = [f"`topo/cvihis-rtm-vs-tcp.yaml` on docs/results.md's reno grid, {R.RTM_SECONDS} s, seed {SEED}, shares over "
           f"{R.RTM_SECONDS // 2}-{R.RTM_SECONDS} s; cells: RTM's share (the larger rate over the smaller), then for "
           "netns the load average at the end of the run and whether it kept real time. Columns: bottleneck (Mb/s) / "
           "RTT (ms).", "",
           "| TCP | " + " | ".join(f"{r.replace('Mbps', '')}/{rtt}" for r, rtt, _ in RTM_GRID) + " | worst |",
           "|---|" + "---|" * (len(RTM_GRID) + 1)]
    for label, backend, replace in RTM_TCPS:
        if backend not in backends:
            continue
        cells, worst = [], 0.0
        for rate, _rtt, delay in RTM_GRID:
            r, load = _run(R.scenario("cvihis-rtm-vs-tcp", _rtm_sets(rate, delay), replace + _reading()),
                           R.RTM_SECONDS, backend)
            text, ratio = _rtm_cell(r.summary)
            worst = max(worst, ratio)
            cells.append(text if backend == "sim" else f"{text}, load {load}")
        out.append(f"| {label} | {' | '.join(cells)} | {worst:.1f} |")
    return out


# ---- ablation: which of RTM's choices makes it unfriendly (simulator) ---------------------------------------------
#: (label, CvihisParams changes): the readings of hosts/cvihis/variants.py (the default first), then the default
#: with one choice changed (PF at every decision, one decision per RTT), and TCP's decrease in place of MD 1.10 on
#: the shifted reading.
def reading_changes(variant: str, **choices: object) -> dict[str, object]:
    """The CvihisParams values a reading sets (every field a choice of hosts/cvihis/variants.py decides)."""
    from hosts.cvihis import CvihisParams
    from hosts.cvihis.variants import CvihisReading

    p = CvihisReading(variant, tuple(choices.items())).apply(CvihisParams())
    return {k: getattr(p, k) for k in ("rtm_shift_areas", "rtm_shift_until_loss", "rtm_reprobe", "pf_per_rtt",
                                       "pf_pushes_per_rtt", "md_per_packet", "md_per_fill", "md_fill_overload", "max_delay_gain",
                                       "updates_per_rtt")}


ABLATION = (("`reprobe-overload`, the default (areas re-probed, 3 decisions per RTT, PF 1.25 times per RTT, MD 1.10 "
              "per lost packet, up to two per fill of the queue, a sustained overload the next fill)",
              reading_changes("reprobe-overload")),
             ("`reprobe-fill`, the default before reprobe-overload (as it, a fill only until the queue drains)",
              reading_changes("reprobe-fill")),
            ("`reprobe-slow`, the default before reprobe-fill (as it, one MD per loss event)",
             reading_changes("reprobe-slow")),
            ("`probe`, the default until issue 48 (areas probe then squeezed, 3 decisions per RTT, PF per decision)",
             reading_changes("probe")),
            ("`shifted` (areas shifted with the push, PF per decision)", reading_changes("shifted")),
            ("`squeezed` (only minDelay pushed, PF per decision)", reading_changes("squeezed")),
            ("`reprobe` (areas re-probed, 2 decisions per RTT, PF per decision)", reading_changes("reprobe")),
            ("probe, PF once per RTT", reading_changes("probe", push="per-rtt")),
            ("probe, one decision per RTT", reading_changes("probe", decisions_per_rtt=1)),
            ("shifted, MD 2 (TCP's halving) in place of 1.10", {**reading_changes("shifted"), "md_factor": 2.0}))


@contextlib.contextmanager
def rtm_variant(**changes: Any) -> Iterator[None]:
    """Simulator runs inside get CVIHIS flows with ``changes`` to their parameters (the loader has no
    key for them: they are the scheme's constants, varied here only to attribute a result)."""
    from topo.sim import network as simnet

    base: Callable[..., Any] = simnet.cvihis_params
    with mock.patch.object(simnet, "cvihis_params", lambda t, f: dataclasses.replace(base(t, f), **changes)):
        yield


def ablation_section(backends: tuple[str, ...]) -> list[str]:
    del backends  # simulator only
    out = [f"The simulator, `topo/cvihis-rtm-vs-tcp.yaml` against the model's reno, {R.RTM_SECONDS} s, seed {SEED}, "
           "RTM's share over the second half (the larger rate over the smaller), the reno rows of docs/results.md's grid "
           "with one of RTM's choices changed at a time.", "",
           "| RTM | " + " | ".join(f"{r.replace('Mbps', '')}/{rtt}" for r, rtt, _ in RTM_GRID) + " | worst |",
           "|---|" + "---|" * (len(RTM_GRID) + 1)]
    for label, changes in ABLATION:
        cells, worst = [], 0.0
        with rtm_variant(**changes):
            for rate, _rtt, delay in RTM_GRID:
                r, _ = _run(R.scenario("cvihis-rtm-vs-tcp", _rtm_sets(rate, delay)), R.RTM_SECONDS, "sim")
                text, ratio = _rtm_cell(r.summary)
                worst = max(worst, ratio)
                cells.append(text)
        out.append(f"| {label} | {' | '.join(cells)} | {worst:.1f} |")
    return out + ["", "Columns: bottleneck (Mb/s) / RTT (ms)."]


SECTIONS: dict[str, Callable[[tuple[str, ...]], list[str]]] = {
    "blm": blm_section, "chen": chen_section, "rtm": rtm_section, "ablation": ablation_section}


def main(argv: list[str] | None = None) -> int:
    p = ValueParser(prog="hbh tcp-kernel", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma list of {', '.join(SECTIONS)} (default all)")
    p.add_argument("--backends", default="netns,sim", help="netns,sim (default), or one of them")
    p.add_argument("--doc", type=Path, help="rewrite this file's <!-- tcp-kernel-SECTION --> sections")
    p.add_argument("--reading", default="", help="the CVIHIS variant the blm and rtm sections run (default: the "
                   "file's, reprobe-overload)")
    args = p.parse_args(argv)
    from hosts.cvihis.variants import VARIANTS

    if args.reading and args.reading not in VARIANTS:
        print(f"hbh tcp-kernel: --reading {args.reading}: not one of {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    READING["variant"] = args.reading
    only = [s.strip() for s in args.only.split(",")]
    backends = tuple(b.strip() for b in args.backends.split(","))
    wrong = [s for s in only if s not in SECTIONS] + [b for b in backends if b not in ("netns", "sim")]
    if wrong:
        print(f"hbh tcp-kernel: unknown {', '.join(wrong)} (sections: {', '.join(SECTIONS)}; backends: netns, sim)",
              file=sys.stderr)
        return 2
    if "netns" in backends and os.geteuid() != 0 and only != ["ablation"]:
        print("hbh tcp-kernel: the kernel's side runs in network namespaces: run as root (or --backends sim)",
              file=sys.stderr)
        return 2
    from topo.experiments.tcp_validation import rewrite_doc
    from topo.results.splice import commit

    for name in only:
        body = SECTIONS[name](backends)
        load = os.getloadavg()
        reading = f" --reading {args.reading}" if args.reading else ""
        how = (f"Generated by `{COMMAND.replace(' --doc', f' --only {name} --backends {args.backends}{reading} --doc')}` "
               "at commit "
               f"{commit()} (load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on "
               f"{os.cpu_count()} CPUs).")
        text = "\n".join([how, "", *body])
        print(text, flush=True)
        if args.doc is not None:
            rewrite_doc(args.doc, text, marks=(f"<!-- tcp-kernel-{name} -->", f"<!-- /tcp-kernel-{name} -->"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
