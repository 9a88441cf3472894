"""The sweep benchmark (docs/performance.md, "hbh sweep"): serial vs local Ray, Ray's per-task cost.

Why these three numbers: a sweep's runs are independent, so on N workers the wall time should
approach serial / N plus Ray's fixed cost (starting and stopping the local instance) and a
per-task cost (scheduling, argument and result transfer); the no-op tasks isolate the latter.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TOPO = ROOT / "topo" / "paper-1router.yaml"
SETS = ["alinea.o_max=0.6,0.7,0.8,0.9"]
SEEDS = "1-4"  # 4 points x 4 seeds = 16 runs
WORKERS = 2


def _noop() -> None:
    return None


def bench_sweep(rep: Any, duration: str, noop_tasks: int) -> None:
    from topo.sweep.execute import ray_session
    from topo.sweep.run import plan_sweep, run_sweep

    section = "hbh sweep (paper-1router, 16 runs)"
    load = os.getloadavg()[0]
    sweep = plan_sweep(TOPO, SETS, None, SEEDS, duration)
    with tempfile.TemporaryDirectory(prefix="sweepbench") as tmp:
        t0 = time.perf_counter()
        serial = run_sweep(sweep, Path(tmp) / "serial", serial=True, progress=False, plots=False)
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        on_ray = run_sweep(sweep, Path(tmp) / "ray", jobs=WORKERS, progress=False, plots=False)
        t_ray = time.perf_counter() - t0
        same = (Path(tmp) / "serial" / "runs.csv").read_bytes() == (Path(tmp) / "ray" / "runs.csv").read_bytes()
    runs = serial.ran
    rep.add(section, f"{runs} runs of {duration} virtual time, serial (--serial)", f"{t_serial:.1f} s",
            f"{t_serial / runs:.2f} s per run")
    rep.add(section, f"the same on local Ray, {WORKERS} workers (start and shutdown included)", f"{t_ray:.1f} s",
            f"speed-up {t_serial / t_ray:.2f}x; runs.csv identical to serial: {'yes' if same else 'NO'}; "
            f"{len(on_ray.failures)} failed")
    import ray

    t0 = time.perf_counter()
    session = ray_session(None, WORKERS, None)
    session.__enter__()
    try:
        started = time.perf_counter() - t0
        t0 = time.perf_counter()
        ray.get(ray.remote(num_cpus=1)(_noop).remote())  # workers warm
        warm = time.perf_counter() - t0
        task = ray.remote(num_cpus=1)(_noop)
        t0 = time.perf_counter()
        ray.get([task.remote() for _ in range(noop_tasks)])
        batch = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(noop_tasks // 10):
            ray.get(task.remote())
        one_by_one = time.perf_counter() - t0
    finally:
        t0 = time.perf_counter()
        session.__exit__(None, None, None)
        stopped = time.perf_counter() - t0
    rep.add(section, f"local Ray start ({WORKERS} CPUs, 80 MiB object store, no dashboard) / shutdown",
            f"{started:.1f} s / {stopped:.1f} s", f"load average before the section {load:.1f} "
            f"on {os.cpu_count()} CPUs (a shared machine slows the start)")
    rep.add(section, f"Ray per-task overhead: {noop_tasks} no-op tasks submitted at once, {WORKERS} workers",
            f"{batch / noop_tasks * 1e3:.2f} ms/task", f"first task (worker start) {warm:.2f} s")
    rep.add(section, f"Ray per-task round trip: {noop_tasks // 10} no-op tasks one after another",
            f"{one_by_one / (noop_tasks // 10) * 1e3:.2f} ms/task",
            f"vs {t_serial / runs * 1e3:.0f} ms of simulation per run")
