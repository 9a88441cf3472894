"""Where a netns host's kernel TCP endpoints run: threads of the host process, or a process of their own.

By default (``HBH_TCP_ENDS=thread``) they are threads of the host process (topo/netns/host.py),
which also emulates its uplink in Python (serialisation, propagation, the frames' due times), so
they share the frame loop's interpreter lock. ``HBH_TCP_ENDS=process`` runs them in a child
process in the same network namespace (inherited), with an interpreter of its own, one real-time
priority above the host's; the loop and the tun stay in the host process. Why it is not the
default: it was built to test whether the shared lock and the application's stalls cause the
bursts that keep the kernel's bottleneck occupancy from the model's at 20 Mb/s, 200 ms. It made
the kernel's sender app-limited about half as often, but did not move the occupancy, which
scatters as much either way (docs/howto/netns.md, "Kernel TCP flows").

The child (``multiprocessing``'s spawn: a fresh interpreter, not a fork of a threaded process)
binds the listeners before it says ``ready``, starts the endpoints on the run's ``start``, publishes
each flow's running counts (records sent, records received and their summed one-way delay) in
shared memory for the host's 100 ms samples, and sends everything else (TCP_INFO samples, the
records' rows, the totals) over its pipe at the end. Every wait is bounded: the child ends at
the run's end plus a margin, or when the host's end of the pipe closes, whichever first; the host
kills it if it has not ended after that.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from topo.net.model import Flow, Topology
from topo.netns.tcpflow import TcpReceiver, TcpSender

__all__ = ["TcpEnds", "TcpEndsProcess", "open_tcp_ends", "mode", "describe", "ENV", "MODES"]

ENV = "HBH_TCP_ENDS"
MODES = ("thread", "process")
READY_TIMEOUT_S = 30.0  # the child's interpreter start and imports, on a loaded machine
RESULTS_TIMEOUT_S = 20.0
END_MARGIN_S = 60.0  # the child outlives the run by at most this much
#: the child's endpoint threads run this much above the host process's real-time priority
RAISE, RAISE_ENV = 1, "HBH_TCP_ENDS_RAISE"
COUNTERS = 3  # per flow: records sent, records received, their one-way delays summed (ns)
#: an endpoint's thread starts this long before its flow does (a listener is up since before time 0)
START_LEAD_NS = 100_000_000


class TcpEnds:
    """A host's TCP senders and receivers as threads of the calling process.

    ``flows``: flow id -> flow, those this host sends or receives; ``kernel_cc``: flow id -> the
    kernel congestion control of a paced flow (topo/netns/pace.py), else the flow's own.

    Each endpoint's thread starts ``START_LEAD_NS`` before its flow, from one starter thread, not
    all at time 0: a workload of thousands of flows (docs/howto/fabric.md, "Spine balance") would
    otherwise start thousands of threads at once, in the host's start (which its runner bounds),
    and keep them all waking every ``POLL_S`` until their flows begin."""

    def __init__(self, topo: Topology, host: str, flows: dict[int, Flow], kernel_cc: dict[int, str | None],
                 on_progress: Callable[[int, int, int, int], None] | None = None) -> None:
        self.topo, self.host, self.flows, self.kernel_cc = topo, host, flows, kernel_cc
        self.on_progress = on_progress  # (fid, records sent, records received, owd sum): the child's counters
        self.senders: dict[int, TcpSender] = {}
        self._starter: threading.Thread | None = None
        self._halt = threading.Event()
        self.send_times: list[int] | None = None  # CLOCK_MONOTONIC of every record written (HBH_LOOP_TRACE)
        # listeners up before time 0; run times are set at start
        self.receivers = {fid: TcpReceiver(f, fid, topo.ip(host), 0, 0) for fid, f in flows.items() if f.dst == host}

    def start(self, t0_ns: int, duration_ns: int, pacing: dict[int, int], trace: bool = False,
              priority: int = 0) -> None:
        """Start every endpoint on the run's clock; ``pacing``: a paced flow's initial rate (bytes/s);
        ``priority``: the endpoints' threads' SCHED_FIFO priority (0: as the calling thread's)."""
        if trace:
            self.send_times = []
        for fid, f in self.flows.items():
            if f.src == self.host:
                sender = TcpSender(f, fid, self.topo.ip(f.dst), t0_ns, duration_ns, kernel_cc=self.kernel_cc.get(fid))
                sender.max_pacing_rate = pacing.get(fid)
                sender.on_record = self._recorded(fid, sender)
                self.senders[fid] = sender
        for fid, r in self.receivers.items():
            r.t0_ns, r.end_ns = t0_ns, duration_ns
            r.on_rows = self._received(fid, r)
        for end in self.ends():
            end.priority = priority
        self._starter = threading.Thread(target=self._start_in_time, args=(t0_ns,), name="tcp-starter", daemon=True)
        self._starter.start()

    def _start_in_time(self, t0_ns: int) -> None:
        """Start each endpoint's thread ``START_LEAD_NS`` before its flow, in start order."""
        for end in sorted(self.ends(), key=lambda e: e.flow.start_ns):
            left_s = (t0_ns + end.flow.start_ns - START_LEAD_NS - time.monotonic_ns()) / 1e9
            if (left_s > 0 and self._halt.wait(left_s)) or self._halt.is_set():
                return
            end.start()

    def _recorded(self, fid: int, sender: TcpSender) -> Callable[[], None]:
        def on_record() -> None:
            if self.send_times is not None:
                self.send_times.append(time.monotonic_ns())
            if self.on_progress is not None:
                self.on_progress(fid, sender.records_sent, -1, -1)
        return on_record

    def _received(self, fid: int, r: TcpReceiver) -> Callable[[], None] | None:
        if self.on_progress is None:
            return None
        progress = self.on_progress
        return lambda: progress(fid, -1, r.records, r.owd_sum_ns)

    def ends(self) -> list[TcpSender | TcpReceiver]:
        return [*self.senders.values(), *self.receivers.values()]

    def set_pacing(self, fid: int, bytes_per_s: int) -> None:
        self.senders[fid].set_max_pacing_rate(bytes_per_s)

    def sent(self) -> dict[str, int]:
        return {s.flow.name: s.records_sent for s in self.senders.values()}

    def received(self) -> dict[int, tuple[int, int]]:
        return {fid: (r.records, r.owd_sum_ns) for fid, r in self.receivers.items()}

    def stop(self) -> None:
        self._halt.set()
        if self._starter is not None:
            self._starter.join()
        ends = self.ends()
        for end in ends:
            end.halt.set()
        for end in ends:
            if end.is_alive():
                end.join(2)

    def results(self) -> dict[str, Any]:
        """Per flow this end's totals; the senders' TCP_INFO samples; the receivers' record rows."""
        self.stop()
        flows: dict[str, dict[str, Any]] = {}
        for end in self.ends():
            flows.setdefault(end.flow.name, {}).update(end.result())
        return {"flows": flows, "samples": [x for s in self.senders.values() for x in s.samples],
                "rows": {r.flow.name: list(r.rows) for r in self.receivers.values()},
                "send_times": list(self.send_times or [])}

    def close(self) -> None:
        self.stop()
        for r in self.receivers.values():
            if not r.is_alive():
                r.listener.close()


def _child(conn: Any, topo: Topology, host: str, flows: dict[int, Flow], kernel_cc: dict[int, str | None],
           counters: Any) -> None:
    """The child process: the endpoints, driven by the host's messages; bounded by the run's end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the host, which asks for the results
    order = sorted(flows)

    def publish(fid: int, sent: int, received: int, owd: int) -> None:
        base = COUNTERS * order.index(fid)
        for k, v in enumerate((sent, received, owd)):
            if v >= 0:
                counters[base + k] = v

    try:
        ends = TcpEnds(topo, host, flows, kernel_cc, on_progress=publish)
    except OSError as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    try:
        conn.send(("ready", os.getpid()))
        deadline = time.monotonic() + 3600.0  # before the start: the host's own wait is far shorter
        while time.monotonic() < deadline:
            if not conn.poll(min(1.0, max(0.0, deadline - time.monotonic()))):
                continue
            msg = conn.recv()
            if msg[0] == "start":
                _t, t0, duration_ns, pacing, trace = msg
                ends.start(t0, duration_ns, pacing, trace, priority=_raised_priority())
                deadline = (t0 + duration_ns) / 1e9 - time.monotonic_ns() / 1e9 + time.monotonic() + END_MARGIN_S
            elif msg[0] == "pace":
                ends.set_pacing(msg[1], msg[2])
            elif msg[0] == "stop":
                conn.send(("results", ends.results()))
                return
    except (EOFError, OSError):  # the host is gone: end the endpoints and go
        pass
    finally:
        ends.close()


def _raised_priority() -> int:
    """``RAISE`` above the real-time priority this process inherited from the host's (0: not real time)."""
    raise_by = int(os.environ.get(RAISE_ENV, RAISE))
    if raise_by <= 0 or os.sched_getscheduler(0) not in (os.SCHED_FIFO, os.SCHED_RR):
        return 0
    return min(os.sched_getparam(0).sched_priority + raise_by, os.sched_get_priority_max(os.SCHED_FIFO))


class TcpEndsProcess:
    """The same endpoints in a child process of the host (see the module's docstring)."""

    def __init__(self, topo: Topology, host: str, flows: dict[int, Flow], kernel_cc: dict[int, str | None]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.host, self.flows = host, flows
        self.order = sorted(flows)
        self.counters = ctx.Array("q", COUNTERS * max(1, len(flows)), lock=False)
        self.conn, child_conn = ctx.Pipe()
        self.proc = ctx.Process(target=_child, args=(child_conn, topo, host, flows, kernel_cc, self.counters),
                                name=f"tcp-ends-{host}", daemon=True)
        self.proc.start()
        child_conn.close()
        self._results: dict[str, Any] | None = None
        try:
            kind, detail = self._recv(READY_TIMEOUT_S, "ready")
        except BaseException:
            self._kill()
            raise
        if kind != "ready":
            self._kill()
            raise RuntimeError(f"{host}'s TCP endpoints process could not open its sockets: {detail}")
        self.pid: int = detail

    def _recv(self, timeout_s: float, what: str) -> tuple[str, Any]:
        if not self.conn.poll(timeout_s):
            raise RuntimeError(f"{self.proc.name}: no {what!r} from the TCP endpoints process within {timeout_s:g} s")
        try:
            return self.conn.recv()  # type: ignore[no-any-return]
        except EOFError:
            raise RuntimeError(f"{self.proc.name}: the TCP endpoints process ended (exit code "
                               f"{self.proc.exitcode}) before its {what!r}") from None

    def start(self, t0_ns: int, duration_ns: int, pacing: dict[int, int], trace: bool = False) -> None:
        self.conn.send(("start", t0_ns, duration_ns, pacing, trace))

    def set_pacing(self, fid: int, bytes_per_s: int) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(("pace", fid, bytes_per_s))

    def _counter(self, fid: int, k: int) -> int:
        return int(self.counters[COUNTERS * self.order.index(fid) + k])

    def sent(self) -> dict[str, int]:
        return {f.name: self._counter(fid, 0) for fid, f in self.flows.items() if f.src == self.host}

    def received(self) -> dict[int, tuple[int, int]]:
        return {fid: (self._counter(fid, 1), self._counter(fid, 2)) for fid, f in self.flows.items()
                if f.dst == self.host}

    def results(self) -> dict[str, Any]:
        """The child's results; if it cannot give them, each flow's error says why (the summary's
        ``tcp.errors``), and the host's other results are kept."""
        if self._results is None:
            try:
                self.conn.send(("stop",))
                kind, detail = self._recv(RESULTS_TIMEOUT_S, "results")
            except (OSError, RuntimeError) as exc:
                kind, detail = "error", str(exc)
            if kind == "results":
                self._results = detail
            else:
                error = f"no TCP results: {detail}"
                side = {fid: "sender_error" if f.src == self.host else "receiver_error" for fid, f in self.flows.items()}
                self._results = {"flows": {f.name: {side[fid]: error} for fid, f in self.flows.items()},
                                 "samples": [], "rows": {}, "send_times": []}
        return self._results

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        self.proc.join(5)
        self._kill()

    def _kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


def mode() -> str:
    """Where ``$HBH_TCP_ENDS`` puts the endpoints: ``thread`` (the default) or ``process``."""
    chosen = os.environ.get(ENV, "thread") or "thread"
    if chosen not in MODES:
        raise ValueError(f"{ENV}={chosen!r}: not one of {', '.join(MODES)}")
    return chosen


def describe() -> str:
    """The endpoints' place as a stored kernel run records it (topo/experiments/tcp_validation.py)."""
    if mode() == "thread":
        return "threads of the host process"
    return f"a process of their own, {int(os.environ.get(RAISE_ENV, RAISE))} real-time priority above the host's"


def open_tcp_ends(topo: Topology, host: str, flows: dict[int, Flow],
                  kernel_cc: dict[int, str | None]) -> TcpEnds | TcpEndsProcess:
    """The endpoints where ``$HBH_TCP_ENDS`` says (:func:`mode`)."""
    if mode() == "thread":
        return TcpEnds(topo, host, flows, kernel_cc)
    return TcpEndsProcess(topo, host, flows, kernel_cc)
