"""docs/results.md's section "Hop-by-hop ALINEA against the end-to-end controls" (issue 48, item 3;
``hbh results --only e2e``, part of ``make results``).

Every control a unicast flow can have -- hop-by-hop ALINEA, CVIHIS RTM and BLM, TCP reno and cubic
(the simulator's model), TFRC, LEDBAT and GCC -- on the same bottleneck: ``hbh compare`` on
paper-5router (steady) and capacity-drop (R3-R4 falls from 3 to 1 Mb/s at 30 s), the cells as
``hbh compare`` computes them (topo/experiments/compare.py, docs/reference/metrics.md), and one figure per topology (seed 1:
one-way delay and the throughput delivered to the receiver over time, and delay against utilisation
for every run). A control the simulator refuses on a topology keeps its column and the section says
why in one line; so does a control whose runs failed.

Why a module of its own beside results_compare.py: it draws a figure from the comparison's series
and its runs are the comparison's alone (``--only e2e`` reruns nothing else).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from topo.experiments.compare import CompareError, Comparison, _check_backend, compare
from topo.experiments.compare_report import flow_table, markdown_table
from topo.file.schema import TopologyError, load_topology
from topo.file.settings import SweepError

__all__ = ["HEADING", "CONTROLS", "TOPOLOGIES", "results_section", "figure"]

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Hop-by-hop ALINEA against the end-to-end controls"
#: every control a unicast flow can have (pgmcc is multicast's: docs/howto/multicast.md)
CONTROLS = ("alinea", "cvihis-rtm", "cvihis-blm", "tcp-reno", "tcp-cubic", "tfrc", "ledbat", "gcc")
TOPOLOGIES = ("paper-5router", "capacity-drop")
SEEDS = "1-2"
DURATION = "60s"
NOT_RUN = "not run (below)"


def _short(text: str) -> str:
    """A message with the repository's absolute paths made relative (the doc is the same on any machine)."""
    return text.replace(str(ROOT) + "/", "")


def refusal(topology: Path, control: str, duration: str) -> str | None:
    """Why ``hbh compare TOPOLOGY --controls CONTROL`` would refuse to run in the simulator, or None."""
    from topo.sweep.run import plan_sweep

    try:
        _check_backend(plan_sweep(str(topology), [], control, "1", duration), "sim")
    except (CompareError, SweepError, TopologyError) as exc:
        return _short(str(exc))
    return None


def _failures(out: Path, control: str) -> list[str]:
    """The errors of this control's failed runs in a comparison's directory (the sweep keeps them)."""
    errors = []
    for path in sorted((out / "failed").glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if record.get("params", {}).get("control") == control:
            errors.append(_short(str(record.get("error", "no error recorded")).strip().splitlines()[-1]))
    return errors


def run_topology(
    name: str, raw: Path, seeds: str, duration: str, controls: tuple[str, ...]
) -> tuple[Comparison | None, dict[str, str]]:
    """The comparison of the controls the simulator runs on topo/NAME.yaml, and why each other one
    has no runs (refused, or its runs failed)."""
    path = ROOT / "topo" / f"{name}.yaml"
    why = {c: f"refused: {r}" for c in controls if (r := refusal(path, c, duration))}
    ran = [c for c in controls if c not in why]
    if not ran:
        return None, why
    out = raw / f"e2e-{name}"
    print(f"comparing {', '.join(ran)} on {name} ...", file=sys.stderr, flush=True)
    result = compare(
        str(path),
        ",".join(ran),
        seeds,
        duration,
        out,
        serial=True,
        progress=False,
        plots=False,
        command=f"hbh compare topo/{name}.yaml --controls {','.join(ran)} --seeds {seeds} "
        f"--duration {duration}",
    )
    for c in ran:
        missing = len(result.seeds) - len(result.summaries[c])
        if missing:
            errors = _failures(out, c)
            why[c] = f"{missing} of {len(result.seeds)} runs failed" + (
                f": {errors[0]}" if errors else f" (see {out}/sweep.md)"
            )
    return result, why


def _table(result: Comparison | None, controls: tuple[str, ...], why: dict[str, str]) -> tuple[Any, Any, Any]:
    """The comparison's metrics, summaries and reasons with a column for every control: one with no
    runs says in each cell that it did not run."""
    metrics: dict[str, list[dict[str, float | None]]] = {}
    summaries: dict[str, list[dict[str, Any]]] = {}
    reasons: dict[str, list[dict[str, str]]] = {}
    for c in controls:
        have = result is not None and c in result.metrics and result.metrics[c]
        metrics[c] = result.metrics[c] if have else [{}]  # type: ignore[union-attr]
        summaries[c] = result.summaries[c] if have else []  # type: ignore[union-attr]
        reasons[c] = result.reasons.get(c, []) if have else []  # type: ignore[union-attr]
    return metrics, summaries, reasons


def results_section(
    raw: Path,
    figures: Path,
    doc_dir: Path,
    seeds: str = SEEDS,
    duration: str = DURATION,
    topologies: tuple[str, ...] = TOPOLOGIES,
    controls: tuple[str, ...] = CONTROLS,
) -> list[str]:
    """The section's lines (one ``## `` heading, a ``### `` per topology with its table and figure)."""
    figures.mkdir(parents=True, exist_ok=True)
    rel = figures.relative_to(doc_dir) if figures.is_relative_to(doc_dir) else figures
    out = [
        HEADING,
        "",
        f"`hbh compare TOPO --controls {','.join(controls)} --seeds {seeds} --duration {duration}` "
        "(`hbh results --only e2e`; the control replaces the flow's control; same topology, same "
        "seeds, the simulator). Cells: mean ± 95 % Student-t half-width over the seeds; docs/reference/metrics.md defines "
        "every row, docs/howto/compare.md how to read them. Hop by hop every switch models a buffer per ingress port and "
        "ALINEA sets the rate toward it; end to end the same switches are drop-tail FIFOs as deep as their link's "
        "buffer and no rate is ever set. Loss is split into the network (and NIC queues) and the receivers' "
        "playout buffers, which only hop-by-hop control sees (docs/howto/compare.md). The sources' reaction is, for "
        "every control, their sending rate, read from their packets, falling 5 % after the drop; the hop's "
        "reaction, ALINEA's alone, is the rate of the hop in front of the shrunken link falling 5 %. TCP's "
        "one-way delay is per application record, from the write to its in-order delivery (the wait in the "
        "socket and behind a retransmission included; docs/howto/tcp.md), and TCP starts on time whatever the seed. "
        "The figure: seed 1 of each control; the one-way delay (0.5 s means, log scale) and the rate delivered "
        "at the receiver (a datagram on arrival, before the playout buffer; TCP in order, to the application) "
        "over time, beside the slowest link on the path and the receiver's playout; on the right every run's OWD "
        "p50 against its bottleneck utilisation. docs/background/e2e.md reads it.",
        "",
    ]
    for name in topologies:
        topo = load_topology(ROOT / "topo" / f"{name}.yaml")
        result, why = run_topology(name, raw, seeds, duration, controls)
        metrics, summaries, reasons = _table(result, controls, why)
        out += [
            f"### {name}",
            "",
            f"topo/{name}.yaml: {topo.description}.",
            "",
            *_table_text(controls, metrics, reasons, why).split("\n"),
            "",
        ]
        if len(topo.flows) > 1:
            out += [*flow_table(controls, summaries).split("\n"), ""]
        out += [f"{c}: {w}." for c, w in why.items()]
        out += [line for line in [_tcp_note(topo, tuple(c for c in controls if summaries[c]))] if line]
        png = figures / f"e2e-{name}.png"
        figure(
            topo,
            {c: s for c, s in summaries.items() if s},
            {c: metrics[c] for c in controls if summaries[c]},
            png,
        )
        out += ["", f"![{name}: one-way delay and delivered rate per control]({rel}/{png.name})", ""]
    return out


def _table_text(controls: tuple[str, ...], metrics: Any, reasons: Any, why: dict[str, str]) -> str:
    """hbh compare's table with a column for every control: a control with no runs says so in each
    cell (the lines under the table say why); the note on rows no control has a value in is the runs'."""
    lines = markdown_table(controls, metrics, reasons).split("\n")
    gone = {1 + controls.index(c) for c in why if not metrics[c] or metrics[c] == [{}]}
    for i, line in enumerate(lines):
        if line.startswith("| ") and i >= 2:
            cells = line[2:-2].split(" | ")
            lines[i] = "| " + " | ".join(NOT_RUN if k in gone else v for k, v in enumerate(cells)) + " |"
    return "\n".join(lines)


def _tcp_note(topo: Any, controls: tuple[str, ...]) -> str:
    """TCP's application reads its socket at once: on a receiver with a playout its bottleneck is another."""
    tcp = [c for c in controls if c.startswith("tcp")]
    hosts = sorted({f.dst for f in topo.flows if topo.nodes[f.dst].playout_bps})
    if not tcp or not hosts:
        return ""
    rates = ", ".join(f"{h}'s {topo.nodes[h].playout_bps / 1e6:g} Mb/s" for h in hosts)
    names = ", ".join(tcp[:-1]) + (" and " if len(tcp) > 1 else "") + tcp[-1]
    return (
        f"{names}: the receiving application reads its socket at once, so the playout ({rates}) does "
        "not limit TCP; its bottleneck, where its utilisation is read, is the slowest link it crosses, and its "
        "goodput is not capped by the playout (docs/howto/compare.md)."
    )


def _label_groups(places: list[tuple[float, float, str]]) -> list[tuple[float, float, list[str]]]:
    """Controls whose mean points are close (utilisation within 0.005, OWD within 15 %) share one
    label, at the group's first point, so that labels of coinciding points do not overwrite each other."""
    groups: list[tuple[float, float, list[str]]] = []
    for x, y, name in sorted(places, key=lambda p: (p[1], p[0])):
        near = next((g for g in groups if abs(g[0] - x) < 0.005 and max(g[1], y) / min(g[1], y) < 1.15), None)
        if near is None:
            groups.append((x, y, [name]))
        else:
            near[2].append(name)
    return groups


def _capacity(topo: Any, t_s: list[float]) -> tuple[list[float], float | None]:
    """Per time: the slowest link on the first flow's path (Mb/s, rate events applied); the playout of
    its receiver (Mb/s) or None."""
    f = topo.flows[0]
    hops = {frozenset(p) for p in zip(f.path, f.path[1:])}
    rates = {frozenset(link.ends): link.rate_bps for link in topo.links if frozenset(link.ends) in hops}
    events = sorted(
        (e for e in topo.events if e.kind == "link_rate" and frozenset(e.link) in hops), key=lambda e: e.at_ns
    )
    out = []
    for t in t_s:
        now = dict(rates)
        for e in events:
            if e.at_ns <= t * 1e9:
                now[frozenset(e.link)] = e.rate_bps
        out.append(min(now.values()) / 1e6)
    playout = topo.nodes[f.dst].playout_bps
    return out, None if not playout else playout / 1e6


def figure(
    topo: Any,
    summaries: dict[str, list[dict[str, Any]]],
    metrics: dict[str, list[dict[str, Any]]],
    path: Path,
) -> Path:
    """Left: one-way delay (top, log) and the rate delivered to the receivers (bottom) over time, seed 1
    of each control; right: OWD p50 against bottleneck utilisation, every run (one colour per control)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(11, 6))
    grid = fig.add_gridspec(2, 2, width_ratios=[2.6, 1])
    owd_ax = fig.add_subplot(grid[0, 0])
    rate_ax = fig.add_subplot(grid[1, 0], sharex=owd_ax)
    scatter = fig.add_subplot(grid[:, 1])
    t_s: list[float] = []
    places: list[tuple[float, float, str]] = []
    for i, (control, runs) in enumerate(summaries.items()):
        series = runs[0]["series"]
        t_s = series["t_s"]
        flows = list(series["flows"].values())
        owd = [[v for v in (f["owd_ms"][k] for f in flows) if v is not None] for k in range(len(t_s))]
        owd_ax.plot(
            t_s, [sum(v) / len(v) if v else float("nan") for v in owd], color=f"C{i}", lw=0.9, label=control
        )
        rate_ax.plot(
            t_s,
            [sum(f["receive_bps"][k] for f in flows) / 1e6 for k in range(len(t_s))],
            color=f"C{i}",
            lw=0.9,
            label=control,
        )
        points = [
            (m["utilisation"], m["owd_p50_ms"])
            for m in metrics[control]
            if m.get("utilisation") is not None and m.get("owd_p50_ms")
        ]
        for x, y in points:
            scatter.plot(x, y, "o", color=f"C{i}", ms=6, alpha=0.8)
        if points:
            places.append((*(sum(v) / len(v) for v in zip(*points)), control))
    for x, y, names in _label_groups(places):
        scatter.annotate(
            "\n".join(names),
            (x, y),
            xytext=(-7, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=7,
        )
    if places:
        low = min(x for x, _, _ in places)
        scatter.set_xlim(min(low - 0.3 * (1.0 - low), low - 0.02) - 0.01, 1.005)
    top, clipped = 0.0, False
    if t_s:
        link, playout = _capacity(topo, t_s)
        rate_ax.plot(
            t_s, link, color="k", ls=":", lw=1.2, drawstyle="steps-post", label="slowest link on the path"
        )
        if playout is not None:
            rate_ax.axhline(playout, color="0.4", ls="--", lw=1.0, label=f"{topo.flows[0].dst}'s playout")
        top = 1.5 * max(link + [playout or 0.0])
        clipped = any(y > top for line in rate_ax.get_lines() for y in line.get_ydata())
        rate_ax.set_ylim(0, top)
    owd_ax.set_yscale("log")
    owd_ax.set_ylabel("one-way delay (ms)")
    owd_ax.set_title(f"{topo.name}: one-way delay (0.5 s means, seed 1)", fontsize=9, loc="left")
    rate_ax.set_ylabel("delivered (Mb/s)")
    rate_ax.set_xlabel("time (s)")
    rate_ax.set_title(
        "rate delivered at the receiver, 0.5 s bins" + (f" (clipped at {top:g} Mb/s)" if clipped else ""),
        fontsize=9,
        loc="left",
    )
    scatter.set_yscale("log")
    scatter.set_xlabel("bottleneck utilisation (second half)")
    scatter.set_ylabel("OWD p50 (ms)")
    scatter.set_title("every run: delay against utilisation", fontsize=9, loc="left")
    for ax in (owd_ax, rate_ax, scatter):
        ax.grid(alpha=0.3, which="both")
    handles, labels = rate_ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=5, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path
