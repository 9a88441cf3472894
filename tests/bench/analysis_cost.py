"""The loop analysis's cost before a run against that run's wall time (issue 46, docs/performance.md).

Why: ``hbh run`` runs the loop analysis (topo/analysis/check.py ``warnings``: one law at a time, then every
law together in topo/analysis/fluid_network.py's fluid model) before it simulates; it is cached, but the
first run of a topology pays it. Its cost must stay at most a tenth of the run's wall time, or 2 s,
whichever is larger. This measures, for each case, in the same process and one after the other: the
analysis's CPU seconds (uncached, as a first run pays them) and the wall and CPU seconds of the
same ``hbh run`` (simulator backend, ``run_experiment`` without figures: the smallest wall time, so
the strictest bound), and the ratio of the analysis to its bound. Cases: every shipped topo/*.yaml
and the user cases of tests/topo/user_cases/ at ``hbh run``'s default length (60 s), the
head-of-line experiment on a 6 x 3 fabric and a larger one (topo/experiments/hol.py; the experiment's own
length and 60 s), and seeded random topologies of tests/topo/topogen.py at their own lengths.

    python -m tests.bench.analysis_cost [--quick] [--only NAME,...] [--no-run] [--json FILE]
    python -m tests.bench.analysis_cost --digests [--randoms N]

``--no-run`` measures the analysis alone (its rows then have no run time). Part ``analysis`` of
``python -m tests.bench.run`` writes the same rows to docs/performance.md. ``--digests`` prints one
SHA-256 per case of what the analysis says (every buffer's peak, loss and first loss in the
laws-together model, its warnings): run it on a tree and on its base (a ``git worktree`` with its
own engine) to check that a change to the model's cost kept every answer (docs/background/engine.md, "How it
is checked"). A command, not a test: digests typed into a test would pin every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: ``hbh run``'s default length (topo/run/runner.py ``--duration``)
DEFAULT_S = 60.0
#: the bound of issue 46: a tenth of the run's wall time, or this, whichever is larger
FLOOR_S = 2.0
SHARE = 0.1
RANDOM_SEED = 1
SECTION = "loop analysis before a run (hbh run, simulator)"


@dataclass
class Case:
    name: str
    load: Callable[[], Any]  # -> Topology
    seconds: float


@dataclass
class Measured:
    name: str
    seconds: float  # the run's length (virtual)
    laws: int  # laws the analysis checks
    buffers: int  # buffers the laws-together model steps
    model_runs: int  # runs of the laws-together model (1, more with the buffers' remedy)
    model_steps: int  # their steps together
    warnings: int
    analysis_cpu_s: float
    analysis_wall_s: float
    run_wall_s: float | None = None
    run_cpu_s: float | None = None

    @property
    def bound_s(self) -> float | None:
        return None if self.run_wall_s is None else max(SHARE * self.run_wall_s, FLOOR_S)

    @property
    def of_bound(self) -> float | None:
        """The analysis's CPU time over its bound (at most 1 meets it; the aim is at most 0.5)."""
        b = self.bound_s
        return None if b is None else self.analysis_cpu_s / b

    @property
    def of_idle_bound(self) -> float | None:
        """... over the bound the run's CPU time sets (its wall time on an idle machine: on a loaded
        one the wall time grows and the bound with it)."""
        return None if self.run_cpu_s is None else self.analysis_cpu_s / max(SHARE * self.run_cpu_s, FLOOR_S)


def _hol(leaves: int, spines: int, hosts: int, senders: int) -> Callable[[], Any]:
    def load() -> Any:
        from topo.experiments.fabric import FabricSpec
        from topo.experiments.hol import HolSetup, hol_topology

        spec = FabricSpec(leaves=leaves, spines=spines, hosts_per_leaf=hosts, delay="250us", buffer=100)
        return hol_topology(HolSetup(fabric=spec, senders=senders), "alinea", True)
    return load


def _file(path: Path) -> Callable[[], Any]:
    def load() -> Any:
        from topo.file.schema import load_topology

        return load_topology(path)
    return load


def _text(text: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        from topo.file.schema import load_topology_text

        return load_topology_text(text, name)
    return load


def multicast_tree(depth: int) -> str:
    """A binary tree of ``2^depth - 1`` switches, one sender at its root and a receiver (100-packet
    receive buffer, 8 Mb/s playout) on each leaf switch, one ALINEA multicast flow to all of them;
    10 Mb/s links of 2 ms, the last leaf's at 2 Mb/s (a slow branch, as in topo/multicast-tree.yaml)."""
    n = 2 ** depth - 1
    leaves = range(2 ** (depth - 1), n + 1)
    nodes = [f"  S{i}: {{kind: switch}}\n" for i in range(1, n + 1)] + ["  H0: {kind: host}\n"]
    nodes += [f"  H{i}: {{kind: host, receive_buffer: 100, playout: 8Mbps}}\n" for i in leaves]
    links = ["  - {ends: [H0, S1]}\n"] + [f"  - {{ends: [S{i // 2}, S{i}]}}\n" for i in range(2, n + 1)]
    links += [f"  - {{ends: [S{i}, H{i}]{', rate: 2Mbps' if i == n else ''}}}\n" for i in leaves]
    receivers = ", ".join(f"H{i}" for i in leaves)
    return (f"name: multicast-tree-{n}\ndefaults:\n  link: {{rate: 10Mbps, delay: 2ms, buffer: 100}}\n"
            f"nodes:\n{''.join(nodes)}links:\n{''.join(links)}"
            f"flows:\n  - {{name: m1, src: H0, dst: [{receivers}], control: alinea}}\n")


def random_cases(count: int, seed: int = RANDOM_SEED) -> list[Case]:
    """``count`` topologies of tests/topo/topogen.py as hypothesis draws them with ``seed`` (the
    same seed draws the same ones), each at its own run length; those without an ALINEA law left out
    (the analysis has nothing to run)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    from tests.topo.topogen import Drawn, topologies

    drawn: list[Drawn] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(topologies())
    def draw(d: Drawn) -> None:
        if "control: alinea" in d.text:
            drawn.append(d)

    draw()
    return [Case(f"random {i + 1} ({d.shape})", _text(d.text, f"<random-{d.shape}-{i + 1}>"), d.seconds)
            for i, d in enumerate(drawn)]


def cases(quick: bool = False, randoms: int = 12) -> list[Case]:
    out = [Case(p.name, _file(p), DEFAULT_S) for p in sorted((ROOT / "topo").glob("*.yaml"))]
    out += [Case(f"user case {p.name}", _file(p), DEFAULT_S)
            for p in sorted((ROOT / "tests" / "topo" / "user_cases").glob("*.yaml"))]
    out.append(Case("head-of-line fabric 6 x 3, 4 hosts a leaf (topo/experiments/hol.py)", _hol(6, 3, 4, 3), 3.0))
    if not quick:
        out.append(Case("head-of-line fabric 6 x 3, 4 hosts a leaf (topo/experiments/hol.py)", _hol(6, 3, 4, 3), DEFAULT_S))
        out.append(Case("head-of-line fabric 12 x 4, 8 hosts a leaf, 7 senders", _hol(12, 4, 8, 7), 3.0))
        out.append(Case("head-of-line fabric 12 x 4, 8 hosts a leaf, 7 senders", _hol(12, 4, 8, 7), DEFAULT_S))
        out.append(Case("multicast tree of 31 switches, 16 receivers", _text(multicast_tree(5), "<multicast-31>"),
                        DEFAULT_S))
    out += random_cases(3 if quick else randoms)
    return out


def _counting() -> tuple[dict[str, int], Callable[[], None]]:
    """Counts the laws-together model's runs and steps (wraps ``_Network.run``); returns the counts
    and the function that restores it."""
    import topo.analysis.fluid_network as fn

    counts = {"runs": 0, "steps": 0, "buffers": 0}
    original = fn._Network.run

    def run(self: Any) -> Any:
        out = original(self)
        counts["runs"] += 1
        counts["steps"] += self.steps_run
        counts["buffers"] = max(counts["buffers"], len(self.buffers))
        return out

    fn._Network.run = run  # type: ignore[method-assign]

    def restore() -> None:
        fn._Network.run = original  # type: ignore[method-assign]
    return counts, restore


def measure(case: Case, run: bool = True) -> Measured:
    from topo.analysis.check import law_loops, warnings
    from topo.run.runner import run_experiment

    topo = case.load()
    laws = len(law_loops(topo))
    counts, restore = _counting()
    try:
        c0, w0 = time.process_time(), time.perf_counter()
        said = warnings(topo, case.seconds)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    finally:
        restore()
    m = Measured(case.name, case.seconds, laws, counts["buffers"], counts["runs"], counts["steps"], len(said), cpu,
                 wall)
    if run:
        with tempfile.TemporaryDirectory(prefix="hbh-analysis-cost-") as out:
            c0, w0 = time.process_time(), time.perf_counter()
            run_experiment(case.load(), int(case.seconds * 1e9), seed=1, out=Path(out), plots=False)
            m.run_cpu_s, m.run_wall_s = time.process_time() - c0, time.perf_counter() - w0
    return m


def digest(case: Case) -> str:
    """SHA-256 of what the analysis says of ``case``: the laws-together model's peaks, then the warnings."""
    import hashlib

    from topo.analysis.check import warnings
    from topo.analysis.fluid_network import network_peaks

    topo = case.load()
    said = [repr(p) for p in network_peaks(topo, case.seconds)] + warnings(topo, case.seconds)
    return hashlib.sha256("\n".join(said).encode()).hexdigest()


def _row(m: Measured) -> tuple[str, str, str]:
    what = f"{m.name}, {m.seconds:g} s"
    size = f"{m.laws} laws, {m.buffers} buffers, {m.model_runs} model runs of {m.model_steps:,} steps"
    if m.run_wall_s is None:
        return what, f"{m.analysis_cpu_s:.2f} s", f"analysis CPU; {size}; {m.warnings} warnings"
    return (what, f"{m.analysis_cpu_s / m.run_wall_s:.3f}",
            f"analysis {m.analysis_cpu_s:.2f} s CPU / run {m.run_wall_s:.1f} s wall ({m.run_cpu_s:.1f} s CPU); "
            f"{m.of_bound:.2f} of the bound ({m.bound_s:.1f} s), {m.of_idle_bound:.2f} of the bound the run's CPU "
            f"time sets; {size}; {m.warnings} warnings")


def bench_analysis_cost(rep: Any, quick: bool) -> None:
    """Part ``analysis`` of tests/bench/run.py: one row per case, then the worst."""
    done = []
    for case in cases(quick):
        m = measure(case)
        done.append(m)
        rep.add(SECTION, *_row(m))
    worst = max(done, key=lambda m: m.of_idle_bound or 0.0)
    rep.add(SECTION, "worst: analysis CPU over its bound (max(run time / 10, 2 s), the run's CPU time as its idle "
                     "wall time); at most 1 meets issue 46, the aim is 0.5", f"{worst.of_idle_bound:.2f}",
            f"{worst.name}, {worst.seconds:g} s ({worst.of_bound:.2f} with the run's wall time)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.analysis_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="", help="comma-separated fragments of case names")
    p.add_argument("--randoms", type=int, default=12, help="random topologies drawn (those with ALINEA kept)")
    p.add_argument("--no-run", action="store_true", help="the analysis alone")
    p.add_argument("--json", type=Path, default=None, help="append one JSON line per case")
    p.add_argument("--digests", action="store_true", help="one SHA-256 per case of what the analysis says")
    args = p.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    if args.digests:
        for case in cases(args.quick, args.randoms):
            if not only or any(o in f"{case.name}, {case.seconds:g} s" for o in only):
                print(f"{digest(case)}  {case.name}, {case.seconds:g} s", flush=True)
        return 0
    print(f"# load average at start {os.getloadavg()[0]:.1f}", flush=True)
    for case in cases(args.quick, args.randoms):
        if only and not any(o in f"{case.name}, {case.seconds:g} s" for o in only):
            continue
        m = measure(case, run=not args.no_run)
        print(" | ".join(_row(m)), flush=True)
        if args.json is not None:
            with args.json.open("a") as f:
                f.write(json.dumps({**asdict(m), "bound_s": m.bound_s, "of_bound": m.of_bound,
                                    "of_idle_bound": m.of_idle_bound, "load": os.getloadavg()[0]}) + "\n")
    print(f"# load average at end {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
