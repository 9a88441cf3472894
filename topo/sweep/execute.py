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
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from topo.file.settings import SweepError
from topo.sweep.task import RunSpec, run_one

__all__ = ["serial_runs", "ray_runs", "ray_session", "OBJECT_STORE_BYTES"]

#: Ray's smallest object store is 75 MiB; a run's arguments and summary are a few kB.
OBJECT_STORE_BYTES = 80 * 1024 * 1024
PROBE_TIMEOUT_S = 5.0

Result = tuple[RunSpec, dict[str, Any]]

#: Where Ray logs its token-authentication notice, and the notice's first words.
RAY_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
RAY_TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"


class _WithoutTokenNotice(logging.Filter):
    """Drops Ray's "Token authentication is enabled ... Set RAY_AUTH_MODE=disabled to opt out" line.

    Why only that line, at its logger: Ray prints it at every ``ray.init`` that leaves the mode to
    its default, and a sweep's user has nothing to do about it (the private instance keeps Ray's
    token authentication, on 127.0.0.1 only); every other Ray warning still reaches the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(RAY_TOKEN_NOTICE)


def _quiet_token_notice() -> None:
    logger = logging.getLogger(RAY_TOKEN_LOGGER)
    if not any(isinstance(f, _WithoutTokenNotice) for f in logger.filters):
        logger.addFilter(_WithoutTokenNotice())


def serial_runs(source: str, text: str, specs: list[RunSpec]) -> Iterator[Result]:
    for spec in specs:
        yield spec, run_one(source, text, spec)


def ray_runs(source: str, text: str, specs: list[RunSpec], *, address: str | None = None, jobs: int | None = None,
             temp_root: Path | None = None) -> Iterator[Result]:
    """Run every spec as a Ray task; results in the order they finish."""
    if not specs:
        return
    import ray

    with ray_session(address, jobs, temp_root) as interrupted:
        task = ray.remote(num_cpus=1, max_retries=0)(run_one)
        text_ref = ray.put(text)
        pending = {task.remote(source, text_ref, spec): spec for spec in specs}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    spec = pending.pop(ref)
                    yield spec, _get(ray, ref, interrupted)
        finally:
            if interrupted.signum is None:  # the consumer stopped early: free the CPUs the rest hold
                for ref in pending:
                    _cancel(ray, ref)
            # On Ctrl-C/SIGTERM nothing is cancelled: ray.shutdown() stops a local instance's
            # workers, and a cluster ends a job's tasks when its driver leaves. Cancelling here
            # raced with task replies still in flight, and Ray's core worker aborted on a check
            # ("Tried to complete task that was not pending") instead of the sweep exiting 130.


def _get(ray: Any, ref: Any, interrupted: _Interrupt) -> dict[str, Any]:
    try:
        return ray.get(ref)
    except Exception as exc:  # noqa: BLE001 -- a worker that died: this run failed, the others go on
        if interrupted.signum is not None:  # Ray turned our Ctrl-C into an error of the task: stop
            raise KeyboardInterrupt(f"signal {interrupted.signum}") from None
        return {"error": f"Ray: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}"}


def _cancel(ray: Any, ref: Any) -> None:
    """Not forced: a forced cancel marks the task done before its worker's reply arrives (the race above)."""
    with contextlib.suppress(Exception):  # already finished, or the cluster is going away
        ray.cancel(ref)


class _Interrupt:
    """SIGINT/SIGTERM during a Ray sweep: remembered (Ray may report it as a task error) and raised."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self, signum: int, frame: Any) -> None:
        self.signum = signum
        raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def ray_session(address: str | None, jobs: int | None, temp_root: Path | None) -> Iterator[_Interrupt]:
    """A connected Ray for the ``with`` body; always shut down (and the local instance stopped) after."""
    import ray

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # never phone home (CI, air-gapped clusters)
    temp_dir = None
    interrupted = _Interrupt()
    # Signal handlers belong to the main thread; a sweep driven from another thread keeps Ray's.
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        if address is None:
            os.environ.pop("RAY_ADDRESS", None)  # no --address: always a private local instance
            _loopback_only(ray)
            # A short private directory: the session's sockets live below it (108-byte path limit),
            # and every process of this instance carries it on its command line.
            temp_dir = tempfile.mkdtemp(prefix="hbh-ray-", dir=temp_root)
        _quiet_token_notice()
        _init(ray, address, jobs, temp_dir)
        for sig in previous:  # after ray.init, which installs its own SIGTERM handler (sys.exit)
            signal.signal(sig, interrupted)
        yield interrupted
    finally:
        try:
            ray.shutdown()
        except Exception as exc:  # noqa: BLE001 -- must not hide the error or Ctrl-C that got us here
            print(f"hbh sweep: warning: Ray shutdown: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)


def _probe(address: str) -> None:
    """Fail in seconds on a HOST:PORT nobody listens on (ray.init would retry for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", ray:// client addresses: Ray's own resolution
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise SweepError(f"--address {address}: no Ray head answers there ({exc.strerror or exc}); "
                         "start one with `ray start --head`") from None


def _loopback_only(ray: Any) -> None:
    """Keep a private instance on 127.0.0.1: Ray otherwise advertises (and dials) this machine's
    outward address even for a local instance. Ray's own switch for that is the single-machine
    mode it uses on macOS and Windows; set for this process and inherited by its workers."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def _init(ray: Any, address: str | None, jobs: int | None, temp_dir: str | None) -> None:
    """Start the private local instance (address None) or join ``address``; one-line SweepError if not."""
    try:
        if address is None:
            # address="local": a new instance even when another runs on this machine (ray.init()
            # without an address joins the latest cluster started here); on loopback only.
            ray.init(address="local", num_cpus=jobs or os.cpu_count() or 1, object_store_memory=OBJECT_STORE_BYTES,
                     include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                     _temp_dir=temp_dir, _node_ip_address="127.0.0.1")
        else:
            _probe(address)
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except SweepError:
        raise
    except Exception as exc:  # noqa: BLE001 -- Ray raises many kinds; the user needs one line
        what = f"--address {address}: cannot join the Ray cluster" if address else "cannot start a local Ray instance"
        hint = "" if address else " (--serial runs the sweep without Ray)"
        raise SweepError(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}{hint}") from None
