"""Where a sweep's runs execute: in this process one after another, or as Ray tasks.

Both yield ``(spec, result)`` as runs finish and call the same :func:`topo.sweep.task.run_one`,
so a sweep's results do not depend on which was used (runs are deterministic by seed).

Ray, local (no ``--address``): a private instance on this machine with ``jobs`` CPUs, a small
object store, no dashboard and no usage reporting, in its own temporary directory; it is shut
down when the sweep ends, fails or is interrupted (Ctrl-C, SIGTERM), so no Ray process outlives
the command. With ``--address`` the sweep joins an existing cluster and only disconnects.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from topo.sweep.task import RunSpec, run_one

__all__ = ["serial_runs", "ray_runs", "ray_session", "OBJECT_STORE_BYTES"]

#: Ray's smallest object store is 75 MiB; a run's arguments and summary are a few kB.
OBJECT_STORE_BYTES = 80 * 1024 * 1024

Result = tuple[RunSpec, dict[str, Any]]


def serial_runs(source: str, text: str, specs: list[RunSpec]) -> Iterator[Result]:
    for spec in specs:
        yield spec, run_one(source, text, spec)


def ray_runs(source: str, text: str, specs: list[RunSpec], *, address: str | None = None, jobs: int | None = None,
             temp_root: Path | None = None) -> Iterator[Result]:
    """Run every spec as a Ray task; results in the order they finish."""
    if not specs:
        return
    import ray

    with ray_session(address, jobs, temp_root):
        task = ray.remote(num_cpus=1, max_retries=0)(run_one)
        text_ref = ray.put(text)
        pending = {task.remote(source, text_ref, spec): spec for spec in specs}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    spec = pending.pop(ref)
                    yield spec, _get(ray, ref)
        finally:
            for ref in pending:
                _cancel(ray, ref)


def _get(ray: Any, ref: Any) -> dict[str, Any]:
    try:
        return ray.get(ref)
    except Exception as exc:  # noqa: BLE001 -- a worker that died: this run failed, the others go on
        return {"error": f"Ray: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}"}


def _cancel(ray: Any, ref: Any) -> None:
    with contextlib.suppress(Exception):  # already finished, or the cluster is going away
        ray.cancel(ref, force=True)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def ray_session(address: str | None, jobs: int | None, temp_root: Path | None) -> Iterator[None]:
    import ray

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # never phone home (CI, air-gapped clusters)
    temp_dir = None
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if address is None:
            os.environ.pop("RAY_ADDRESS", None)  # no --address: always a private local instance
            # A short private directory: the session's sockets live below it (108-byte path limit),
            # and every process of this instance carries it on its command line.
            temp_dir = tempfile.mkdtemp(prefix="hbh-ray-", dir=temp_root)
            ray.init(num_cpus=jobs or os.cpu_count() or 1, object_store_memory=OBJECT_STORE_BYTES,
                     include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                     _temp_dir=temp_dir)
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        yield
    finally:
        try:
            ray.shutdown()
        finally:
            signal.signal(signal.SIGTERM, previous)
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)
