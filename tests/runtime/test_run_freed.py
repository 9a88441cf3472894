"""A finished simulator run is freed in a long-lived process (issue 46).

Why: a run's engine objects sit on reference cycles (a TM and the walk it serves; a scheduler and
the heap entries that hold the objects holding it), which the collector can break only through
the engine's clears. Without them every run of a sweep's worker, of the test suite or of an
in-process fuzz kept its whole network (1.4 GB after 200 fuzz topologies). The last test pins the
other half of the rule: an engine object the collector cleared may still be used (a finaliser
may touch it) and gives at worst a Python error, never a panic.
"""

from __future__ import annotations

import collections
import ctypes
import gc
from typing import Any

import pytest

from p4switch.tm import TMItem
from topo.file.schema import load_topology
from topo.run.runner import run_experiment
from topo.sim.network import SimNetwork

pytestmark = pytest.mark.cpu_only

ENGINE_TYPES = (
    "SimNetwork",
    "VirtualScheduler",
    "TrafficManager",
    "V1Walk",
    "DelayedCalls",
    "InMemoryLink",
    "TimerHandle",
)


def engine_counts(collect: bool = True) -> collections.Counter[str]:
    """The run's objects alive now, by type (``collect``: after a full collection). Counted, not
    weakly referenced: the collector clears the weak references to a cycle it then fails to free."""
    if collect:
        gc.collect()
    return collections.Counter(n for o in gc.get_objects() if (n := type(o).__name__) in ENGINE_TYPES)


def test_two_runs_in_one_process_leave_nothing_behind() -> None:
    topo = load_topology("topo/capacity-drop.yaml")
    before = engine_counts()
    for _ in range(2):
        summary = run_experiment(topo, 3 * 10**9, 1, plots=False).summary
        assert summary["flows"], "the run carried no flow"
    after = engine_counts()
    left = {name: after[name] - before[name] for name in ENGINE_TYPES if after[name] > before[name]}
    assert not left, f"engine objects of finished runs still alive: {left}"


def test_a_run_collects_what_the_runs_before_it_left() -> None:
    """Without a collection of the caller's: the runner's own, before each run, frees the last
    one's network (the collector's own full passes come too rarely in a process that runs many)."""
    topo = load_topology("topo/paper-1router.yaml")
    before = engine_counts()["SimNetwork"]
    for seed in range(1, 5):
        run_experiment(topo, 100_000_000, seed, plots=False)
        alive = engine_counts(collect=False)["SimNetwork"] - before
        assert alive <= 1, f"{alive} networks of finished runs still alive after run {seed}"


def test_many_runs_keep_less_than_one_run() -> None:
    """10 runs leave fewer objects behind than a 900th of what one run's network holds per run (a
    ninetieth in all), and none of the engine's. Per run the bound of 30 runs within a thirtieth;
    what one run leaves does not change with the number of runs before it (the same count after
    runs 1, 2, 3, 5, 10, 20 and 30 of a 30-run loop)."""
    topo = load_topology("topo/paper-1router.yaml")
    duration_ns = 200_000_000
    run_experiment(topo, duration_ns, 1, plots=False)  # imports and caches filled once
    engines = engine_counts()
    base = len(gc.get_objects())
    net = SimNetwork(topo, seed=1).build()
    net.run_until(duration_ns)
    gc.collect()
    one_run = len(gc.get_objects()) - base
    del net
    runs = 10
    for seed in range(1, runs + 1):
        run_experiment(topo, duration_ns, seed, plots=False)
    assert engine_counts() == engines
    grown = len(gc.get_objects()) - base
    assert grown < runs * one_run / 900, f"{runs} runs left {grown} objects; one run's network holds {one_run}"


def _tp_clear(obj: Any) -> None:
    """What the collector does to an object of a garbage cycle: its type's tp_clear."""
    get_slot = ctypes.pythonapi.PyType_GetSlot
    get_slot.restype = ctypes.c_void_p
    get_slot.argtypes = [ctypes.py_object, ctypes.c_int]
    slot = get_slot(type(obj), 51)  # Py_tp_clear
    if slot:
        ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(slot)(obj)  # the GIL held, as in gc


def test_engine_objects_stay_usable_after_the_collector_cleared_them() -> None:
    topo = load_topology("topo/capacity-drop.yaml")
    gc.collect()
    old = {id(o) for o in gc.get_objects() if type(o).__module__ == "hbh_engine"}
    net = SimNetwork(topo, seed=1).build()
    net.run_until(300_000_000)
    ours = [o for o in gc.get_objects() if type(o).__module__ == "hbh_engine" and id(o) not in old]
    kinds = {type(o).__name__ for o in ours}
    assert {"VirtualScheduler", "TrafficManager", "V1Walk", "DelayedCalls"} <= kinds
    sched = next(o for o in ours if type(o).__name__ == "VirtualScheduler")
    assert sched.pending() > 0
    for o in ours:
        _tp_clear(o)
    assert sched.pending() == 0, "the scheduler's clear left entries"
    # every object's own use, then the run on: Python errors at worst (a panic is a BaseException)
    for o in ours:
        name = type(o).__name__
        try:
            if name == "VirtualScheduler":
                seen: list[int] = []
                o.call_later(5, seen.append, 1)
                assert o.run() == 1 and seen == [1] and o.pending() == 0
            elif name == "TrafficManager":
                assert o.port_depth(0) == 0
                o.enqueue(0, TMItem(b"\x00" * 64))
            elif name == "V1Walk":
                o.receive(1, b"\xff" * 64)
            elif name == "DelayedCalls":
                o("report")
            elif name == "Transmitter":
                assert o.model is None
                o.transmit(0, 100)
        except Exception:  # noqa: BLE001, S112 - an error is allowed here, a panic is not
            continue
    try:
        net.run_until(600_000_000)
        net.sched.run(max_events=1000)
    except Exception:  # noqa: BLE001, S110 - the run may fail on what was cleared, without a panic
        pass
