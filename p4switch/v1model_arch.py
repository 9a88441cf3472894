"""The v1model architecture around the pipeline: what simple_switch does between the blocks.

Why a module of its own: the pipeline (``p4switch.pipeline``) only runs P4 code and *records*
what the program asked for (clone, resubmit, recirculate, truncate); the traffic manager only
queues. Someone must act on those records in BMv2's order, with BMv2's instance types, and feed
the queues - that is this sans-I/O core. It never reads a clock or touches a socket: time comes
from the injected scheduler, frames leave through ``emit(port, frame) -> wire ns`` and
``to_cpu(frame)``, and everything runs on the scheduler's one thread.

End of ingress (simple_switch's order):

1. I2E clone requested -> one clone per replica of the PRE clone session (the packet *as
   received*, re-parsed, metadata reset but the field list, ``instance_type`` 1,
   ``egress_rid`` = replica instance), enqueued to the replica's port; the session's
   ``packet_length_bytes`` truncates it on output. A missing session makes no clone (counted).
2. Resubmit requested -> the packet as received re-enters ingress (``instance_type`` 6, field
   list kept); the original ends there.
3. ``mcast_grp`` != 0 -> one copy per replica of the multicast group (``instance_type`` 5,
   ``egress_rid`` = replica instance); a missing group drops the packet.
4. ``egress_spec`` == drop port (511, set by ``mark_to_drop``) -> dropped.
5. Otherwise unicast: enqueued to ``egress_spec`` (queue ``priority``); a full queue drops it.

Digests need no step here: the pipeline adds them to the state's digest buffers at the
``digest`` call and the P4Runtime core polls those buffers on the scheduler.

End of egress (the TM's service callback): the TM's queue metadata are passed to egress with
``egress_spec`` reset to 0 (so a ``mark_to_drop`` *in egress* is what drops); then E2E clone,
drop check, recirculate (the deparsed frame re-enters ingress, ``instance_type`` 4), deparse,
truncate (the smaller of ``truncate()`` and the clone session's length), and the frame leaves:
to the controller if the egress port is the CPU port, else on the port's link.

So a clone is made even when the original is then resubmitted, multicast or dropped, and
resubmit wins over multicast and unicast.

The engine walks the packets itself (``use_engine_walk``: ``hbh_engine.V1Walk``,
engine/src/v1model/v1walk.rs, the same steps in the same order over a PHV held in Rust, reading the
PRE's copy in the engine, ``PacketReplicationEngine.engine``). This walk is the whole walk for
a pipeline the engine does not run wholly, and under ``HBH_P4_ORACLE=1``, where it is the
differential oracle of the engine's.

Choices where BMv2 is silent or different: a resubmitted or recirculated packet re-enters
ingress through the scheduler (like BMv2's input queue); a chain of resubmits is cut after
``max_reentries`` (counted; recirculation passes the queues, so it is paced, not cut); a
recirculated packet keeps its ingress port unless ``recirc_port`` is given; a packet whose
block raises (a pipeline bug) is dropped and counted, never taken down with the switch.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from p4switch.pipeline import Packet, PipelineRuntimeError
from p4switch.pipeline.packet import (
    DROP_PORT,
    PKT_INSTANCE_TYPE_COALESCED,
    PKT_INSTANCE_TYPE_EGRESS_CLONE,
    PKT_INSTANCE_TYPE_INGRESS_CLONE,
    PKT_INSTANCE_TYPE_NORMAL,
    PKT_INSTANCE_TYPE_RECIRC,
    PKT_INSTANCE_TYPE_REPLICATION,
    PKT_INSTANCE_TYPE_RESUBMIT,
    CloneRequest,
)
from p4switch.tm import TMItem, TrafficManager
from runtime.sched import Scheduler

log = logging.getLogger(__name__)

__all__ = ["V1ModelSwitchCore", "DropCause", "INSTANCE_TYPES", "PKT_INSTANCE_TYPE_NORMAL",
           "PKT_INSTANCE_TYPE_INGRESS_CLONE", "PKT_INSTANCE_TYPE_EGRESS_CLONE", "PKT_INSTANCE_TYPE_COALESCED",
           "PKT_INSTANCE_TYPE_RECIRC", "PKT_INSTANCE_TYPE_REPLICATION", "PKT_INSTANCE_TYPE_RESUBMIT"]

INSTANCE_TYPES = {PKT_INSTANCE_TYPE_NORMAL: "NORMAL", PKT_INSTANCE_TYPE_INGRESS_CLONE: "INGRESS_CLONE",
                  PKT_INSTANCE_TYPE_EGRESS_CLONE: "EGRESS_CLONE", PKT_INSTANCE_TYPE_COALESCED: "COALESCED",
                  PKT_INSTANCE_TYPE_RECIRC: "RECIRC", PKT_INSTANCE_TYPE_REPLICATION: "REPLICATION",
                  PKT_INSTANCE_TYPE_RESUBMIT: "RESUBMIT"}
_MASK32 = (1 << 32) - 1  # enq_timestamp, deq_timedelta: bit<32> in standard_metadata
_MAX_LOGGED_ERRORS = 20


class DropCause:
    """Names of the drop counters (strings, so logs and the CLI print them as they are)."""

    NO_PIPELINE = "no_pipeline"                  # a frame arrived before any program was loaded
    INGRESS_DROP = "ingress_mark_to_drop"        # egress_spec == drop port at the end of ingress
    EGRESS_DROP = "egress_mark_to_drop"          # mark_to_drop in egress
    TM_FULL = "tm_queue_full"                    # the egress queue was full
    NO_MCAST_GROUP = "mcast_group_missing"       # mcast_grp names no multicast group
    PIPELINE_ERROR = "pipeline_error"            # a block raised (a pipeline bug): packet dropped
    REENTRY_LIMIT = "reentry_limit"              # too many resubmits/recirculations in a chain
    NO_PORT = "egress_port_missing"              # the egress port has no interface or link
    CPU_NO_CONTROLLER = "packet_in_dropped"      # sent to the CPU port, no controller took it


class _Job(TMItem):
    """What waits in the TM: the packet (``packet``) and the per-copy facts egress needs.

    A TMItem itself, so that queueing a packet costs one object, not a wrapper in a wrapper.
    """

    __slots__ = ("egress_rid", "trunc")

    def __new__(cls, packet: Packet, egress_rid: int = 0, trunc: int | None = None) -> _Job:
        job = super().__new__(cls, packet)
        job.egress_rid = egress_rid
        job.trunc = trunc  # clone session packet_length_bytes (None: no truncation)
        return job


class V1ModelSwitchCore:
    """Ingress -> PRE -> TM -> egress -> port, as simple_switch strings them together.

    ``holder`` has ``.pipeline`` and ``.state`` (swapped together on a pipeline load, see
    ``p4switch.device.PipelineHolder``). ``tm`` None builds a TrafficManager served by this core;
    a TM given is bound to ``core.service`` (``TrafficManager.bind_service``).
    ``emit(port, frame)`` transmits and returns the wire time in ns; ``to_cpu(frame)`` takes a
    frame for the controller (packet_in header first) and returns False if nobody took it.
    """

    def __init__(self, sched: Scheduler, tm: TrafficManager | None, holder: Any,
                 emit: Callable[[int, bytes], int], to_cpu: Callable[[bytes], Any], *,
                 cpu_port: int | None = None, drop_port: int = DROP_PORT, recirc_port: int | None = None,
                 max_reentries: int = 32) -> None:
        self.sched = sched
        self.holder = holder
        self.emit = emit
        self.to_cpu = to_cpu
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.recirc_port = recirc_port
        self.max_reentries = max_reentries
        self.tm = tm if tm is not None else TrafficManager(sched)
        self.tm.bind_service(self.service)
        self._drops: Counter[str] = Counter()
        self._stats: Counter[str] = Counter()
        self._errors_logged = 0
        self.walk: Any = None  # hbh_engine.V1Walk, when the engine walks the packets (use_engine_walk)
        # drops counted outside the core and the walk (the real-time switch's ports, on send), by cause
        self.extra_drops: Callable[[], Mapping[str, int]] | None = None

    def use_engine_walk(self, cpu_port: int | None = None) -> Any:
        """Let the engine walk the packets it can (``hbh_engine.V1Walk``, engine/src/v1model/v1walk.rs):
        it serves the TM from now on and hands this core what it does not walk itself. The
        caller feeds received frames to ``walk.receive`` and gives it each port's ``send``."""
        import hbh_engine

        self.walk = hbh_engine.V1Walk(self, self.tm, self.to_cpu, self.cpu_port if cpu_port is None else cpu_port,
                                      self.drop_port)
        self.tm.bind_service(self.walk.service)
        return self.walk

    @property
    def drops(self) -> Counter[str]:
        """Drops so far by cause, the engine walk's included (a copy: count with count_drop)."""
        return self._merged(True)

    @property
    def stats(self) -> Counter[str]:
        """rx, tx, to_cpu, clones, resubmits, ... so far, the engine walk's included (a copy)."""
        return self._merged(False)

    @property
    def python_walk_counts(self) -> Counter[str]:
        """What this core's own walk counted (rx, clones, drops, ...), the engine walk's left
        out: empty while the engine walks every packet (a copy)."""
        return self._stats + self._drops

    def _merged(self, drops: bool) -> Counter[str]:
        out = Counter(self._drops if drops else self._stats)
        if self.walk is not None:
            causes = set(self.walk.drop_causes())
            out.update({k: v for k, v in self.walk.counts().items() if (k in causes) == drops})
        if drops and self.extra_drops is not None:
            out.update({k: v for k, v in self.extra_drops().items() if v})
        return out

    def count_drop(self, cause: str) -> None:
        """One more drop of ``cause`` (the switch's port errors)."""
        self._drops[cause] += 1

    # ---- public --------------------------------------------------------------------------
    def receive(self, port: int, frame: bytes) -> None:
        """A frame arrived on ``port``: run it through ingress now."""
        self._stats["rx"] += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("port %d: received %d bytes: %s", port, len(frame), frame[:64].hex())
        pipeline = self.holder.pipeline
        if pipeline is None:
            self._drop(DropCause.NO_PIPELINE, port)
            return
        try:
            pkt = pipeline.new_packet(frame, port, self.sched.now_ns() // 1000)
        except Exception as exc:  # noqa: BLE001 - never let one frame stop the switch
            self._pipeline_error("new_packet", exc)
            return
        self._ingress(pkt, 0)

    def packet_out(self, frame: bytes) -> None:
        """A controller frame (packet_out header first) enters ingress on the CPU port."""
        if self.cpu_port is None:
            raise ValueError("packet-out refused: the switch has no CPU port")
        self._stats["packet_out"] += 1
        self.receive(self.cpu_port, frame)

    def service(self, port: int, job: _Job) -> int:
        """TM callback: egress for one dequeued packet; returns the port's wire time (ns)."""
        pkt = job.packet
        pipeline = pkt.pipeline  # the pipeline it entered with, even across a reload
        now_us = self.sched.now_ns() // 1000
        try:
            pkt.phv[pipeline.std_slots["egress_spec"]] = 0
            pipeline.run_egress(pkt, port, now_us, job.enq_timestamp_us & _MASK32, job.enq_qdepth,
                                job.deq_timedelta_us & _MASK32, job.deq_qdepth, job.egress_rid)
        except PipelineRuntimeError as exc:
            self._pipeline_error("egress", exc)
            return 0
        return self._after_egress(port, pkt, job, now_us)

    def _after_egress(self, port: int, pkt: Packet, job: _Job, now_us: int) -> int:
        req = pkt.clone_request
        if req is not None:
            self._clone(pkt, req, now_us)
        if pkt.marked_to_drop:
            self._drop(DropCause.EGRESS_DROP, port)
            return 0
        if pkt.recirculate is not None:
            self._recirculate(pkt, now_us)
            return 0
        return self._transmit(port, pkt, job)

    def drop_counts(self) -> dict[str, int]:
        """Drops so far by cause (for the CLI, logs and tests)."""
        return dict(self.drops)

    # ---- ingress -------------------------------------------------------------------------
    def _ingress(self, pkt: Packet, reentries: int) -> None:
        pipeline = pkt.pipeline
        try:
            pipeline.run_ingress(pkt)
        except PipelineRuntimeError as exc:
            self._pipeline_error("ingress", exc)
            return
        self._after_ingress(pkt, reentries)

    def _after_ingress(self, pkt: Packet, reentries: int) -> None:
        pipeline = pkt.pipeline
        now_us = pkt.now_us
        if pkt.clone_request is not None:
            self._clone(pkt, pkt.clone_request, now_us)
        if pkt.resubmit is not None:
            self._reenter(lambda: pipeline.copy_for_resubmit(pkt, now_us=self.sched.now_ns() // 1000),
                          reentries, "resubmit")
            return
        phv, slots = pkt.phv, pipeline.std_slots
        mcast_slot = slots.get("mcast_grp")
        if mcast_slot is not None and phv[mcast_slot]:
            self._multicast(pkt, phv[mcast_slot])
            return
        egress_spec = phv[slots["egress_spec"]]
        if egress_spec == self.drop_port:
            self._drop(DropCause.INGRESS_DROP, pkt.std("ingress_port"))
            return
        if log.isEnabledFor(logging.DEBUG):
            log.debug("port %d: ingress done, unicast to port %d", pkt.std("ingress_port"), egress_spec)
        self._enqueue(egress_spec, _Job(pkt), self._priority(pkt))

    def _multicast(self, pkt: Packet, mgid: int) -> None:
        group = pkt.pipeline.state.pre.multicast_group(mgid)
        if group is None or not group.replicas:
            self._drop(DropCause.NO_MCAST_GROUP, pkt.std("ingress_port"))
            return
        prio = self._priority(pkt)
        pkt.set_std("instance_type", PKT_INSTANCE_TYPE_REPLICATION)
        last = len(group.replicas) - 1
        for i, replica in enumerate(group.replicas):
            copy = pkt if i == last else pkt.pipeline.copy_packet(pkt)
            self._enqueue(replica.port, _Job(copy, egress_rid=replica.instance), prio)

    def _clone(self, pkt: Packet, req: CloneRequest, now_us: int) -> None:
        """Clones of ``pkt`` for every replica of the session (I2E or E2E)."""
        pipeline = pkt.pipeline
        session = pipeline.state.pre.clone_session(req.session)
        if session is None:
            self._stats[f"clone_session_missing_{req.kind}"] += 1
            return
        trunc = session.packet_length_bytes or None
        for replica in session.replicas:
            try:
                clone = pipeline.copy_for_request(pkt, req, now_us=now_us)
            except (PipelineRuntimeError, ValueError) as exc:
                self._pipeline_error(f"{req.kind} clone", exc)
                return
            self._stats[f"clone_{req.kind}"] += 1
            self._enqueue(replica.port, _Job(clone, egress_rid=replica.instance, trunc=trunc),
                          min(session.class_of_service, self.tm.num_priorities - 1))

    def _enqueue(self, port: int, job: _Job, prio: int) -> None:
        if not 0 <= port < self.tm.num_ports:
            self._drop(DropCause.NO_PORT, port)
            return
        if not self.tm.enqueue(port, job, prio):
            self._drop(DropCause.TM_FULL, port)

    def _priority(self, pkt: Packet) -> int:
        if self.tm.num_priorities == 1 or "priority" not in pkt.pipeline.std_slots:
            return 0
        return min(pkt.std("priority"), self.tm.num_priorities - 1)

    # ---- re-entry (resubmit, recirculate) ------------------------------------------------
    def _reenter(self, make: Callable[[], Packet], reentries: int, what: str) -> None:
        if reentries >= self.max_reentries:
            self._drop(DropCause.REENTRY_LIMIT, -1)
            return
        self._stats[what] += 1

        def again() -> None:
            try:
                new = make()
            except (PipelineRuntimeError, ValueError) as exc:
                self._pipeline_error(what, exc)
                return
            self._ingress(new, reentries + 1)

        self.sched.call_at(self.sched.now_ns(), again)

    def _recirculate(self, pkt: Packet, now_us: int) -> None:
        pipeline = pkt.pipeline
        recirc_port = self.recirc_port

        def make() -> Packet:
            new = pipeline.copy_for_recirculate(pkt, now_us=self.sched.now_ns() // 1000)
            if recirc_port is not None:
                new.set_std("ingress_port", recirc_port)
            return new

        self._reenter(make, 0, "recirculate")  # paced by the queues: no chain limit, as BMv2

    # ---- output --------------------------------------------------------------------------
    def _transmit(self, port: int, pkt: Packet, job: _Job) -> int:
        try:
            frame = pkt.pipeline.deparse(pkt)
        except PipelineRuntimeError as exc:
            self._pipeline_error("deparser", exc)
            return 0
        limit = pkt.truncate_len
        if job.trunc is not None:
            limit = job.trunc if limit is None else min(limit, job.trunc)
        if limit is not None and limit < len(frame):
            frame = frame[:limit]
        if log.isEnabledFor(logging.DEBUG):
            log.debug("port %d: sending %d bytes (%s): %s", port, len(frame),
                      INSTANCE_TYPES.get(pkt.std("instance_type"), "?"), frame[:64].hex())
        if port == self.cpu_port:
            self._stats["to_cpu"] += 1
            if self.to_cpu(frame) is False:
                self._drop(DropCause.CPU_NO_CONTROLLER, port)
            return 0
        self._stats["tx"] += 1
        return self.emit(port, frame)

    # ---- accounting ----------------------------------------------------------------------
    def _drop(self, cause: str, port: int) -> None:
        self._drops[cause] += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("drop (%s) port %d", cause, port)

    def _pipeline_error(self, where: str, exc: BaseException) -> None:
        self._drops[DropCause.PIPELINE_ERROR] += 1
        if self._errors_logged < _MAX_LOGGED_ERRORS:
            self._errors_logged += 1
            log.warning("packet dropped: %s failed: %s%s", where, exc,
                        " (further pipeline errors are counted, not logged)"
                        if self._errors_logged == _MAX_LOGGED_ERRORS else "")
