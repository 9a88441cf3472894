"""One sweep run, as a Ray task or a plain call: a point's topology, run for one seed (simulated, or
in namespaces for ``hbh compare --backend netns``).

Why the arguments are the file's text and the point (not a resolved Topology): they are small
and plain to ship to a worker on another machine, and the worker resolves the point through
the same :func:`topo.file.points.point_topology` the driver validated it with.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from topo.file.points import Base, Point

__all__ = ["RunSpec", "run_key", "run_one"]

#: Bump when what a run computes changes, so that old result files are not reused.
RESULT_VERSION = 2  # 2: summaries carry series, rate_cv, source_reaction_s


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a point, a seed, and its stable key (the result file's name); ``backend``
    "sim" (virtual time) or "netns" (real time, root: ``hbh compare --backend netns``)."""

    key: str
    point: Point
    seed: int
    duration_ns: int
    backend: str = "sim"


def run_key(text: str, point: Point, seed: int, duration_ns: int, backend: str = "sim") -> str:
    """A stable hash of everything that decides a run's result: file text, point, seed, duration, and
    the backend when it is not the simulator (so a directory never mixes kernel and model runs, and
    the simulator's keys stay those of older result directories)."""
    ident = {"version": RESULT_VERSION, "topology_sha256": hashlib.sha256(text.encode()).hexdigest(),
             "params": [[s.target, list(s.selector), s.key, v] for s, v in point.values],
             "control": point.control, "seed": seed, "duration_ns": duration_ns}
    if backend != "sim":
        ident["backend"] = backend
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


_BASES: dict[str, Base] = {}


def _base(source: str, text: str) -> Base:
    """The resolved base file, kept per worker process (a worker runs many points of one file)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    if digest not in _BASES:
        from topo.file.schema import load_topology_text

        _BASES.clear()
        _BASES[digest] = Base(source, text, load_topology_text(text, source))
    return _BASES[digest]


def run_one(source: str, text: str, spec: RunSpec) -> dict[str, Any]:
    """The run's summary, or its error as one line; never raises (one failed run must not stop a sweep)."""
    try:
        from topo.file.points import point_topology
        from topo.run.runner import run_experiment

        topo = point_topology(_base(source, text), spec.point)
        result = run_experiment(topo, spec.duration_ns, spec.seed, out=None, progress=False, plots=False,
                                backend=spec.backend, pcap=False)
        return {"summary": result.summary}
    except Exception as exc:  # noqa: BLE001 -- reported with the run's parameters, the others go on
        return {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
