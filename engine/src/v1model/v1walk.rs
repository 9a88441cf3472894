//! The v1model walk of a packet in the engine: receive, parser to ingress, the TM, egress to
//! deparser, the port, with the PHV held here (a `Vec<u64>`) from the first block to the last.
//!
//! Why: after the blocks moved into the engine, the walk around them (p4switch/v1model_arch.py)
//! and the PHV built and read across the Python boundary per block were the largest share of a
//! packet-hop (docs/performance.md). The walk here is `V1ModelSwitchCore`'s, in its order, with
//! everything simple_switch does between the blocks: unicast to one queue, clones (I2E, E2E)
//! through the PRE's clone sessions (pre.rs), multicast groups, resubmit and recirculation
//! (re-entering through the scheduler), drops, out on a port or to the CPU port; the copies are
//! made as v1copies.rs says. A block that fails drops the packet (the core counts it). While
//! the loaded pipeline is not one the engine runs wholly (`V1Pipeline.walk_form()` says None),
//! every frame goes to the Python walk instead, as under `HBH_P4_ORACLE=1`, where that walk is
//! the differential oracle. Python sees a packet here only where it must: the port's `send`
//! (the link) and `to_cpu` (a packet-in).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes};
use pyo3::{PyTraverseError, PyVisit};

use crate::afpacket::{RxBatch, BUF};
use crate::ctrlheader::HeaderSplit;
use crate::frame::Frame;
use crate::linkport::{method_owner, LinkPort, WalkReceive};
use crate::p4vm::STATUS_REJECT;
use crate::tm::{TMItem, TrafficManager, WalkItem, WalkService};
use crate::txport::TxPort;
use crate::v1copies::{
    clone_of, fresh, reentry, replica, WalkPacket, WalkProgram, PKT_EGRESS_CLONE,
    PKT_INGRESS_CLONE, PKT_RECIRC, PKT_REPLICATION, PKT_RESUBMIT,
};

/// The walk as a `LinkPort`'s `on_receive` (`linkport::WALK_RECEIVE`, set by lib.rs).
pub(crate) static PORT_RECEIVE: WalkReceive = WalkReceive {
    owner: |f| method_owner::<V1Walk>(f, "receive").map(Py::into_any),
    receive: |w, port, frame| {
        w.downcast::<V1Walk>()?
            .get()
            .receive_frame(w.py(), port, frame)
    },
};

/// The walk as a TM's service (`tm::WALK_SERVICE`, set by lib.rs).
pub(crate) static TM_SERVICE: WalkService = WalkService {
    owner: |f| {
        let py = f.py();
        let walk = f
            .getattr(intern!(py, "__self__"))
            .ok()
            .and_then(|o| o.downcast_into::<V1Walk>().ok());
        let named = f
            .getattr(intern!(py, "__name__"))
            .is_ok_and(|n| n.to_string() == "service");
        walk.filter(|_| named).map(|w| w.into_any().unbind())
    },
    egress: |w, port, item| w.downcast::<V1Walk>()?.get().egress(w.py(), port, item),
    service: |w, port, item| w.downcast::<V1Walk>()?.get().service(w.py(), port, item),
};

const DROP_PORT: u64 = 511;
const MASK32: i64 = (1 << 32) - 1;
const MASK48: u64 = (1 << 48) - 1;

/// Where a port's frames go: a Python `send(frame) -> wire ns`, the engine's transmitter, or
/// the engine's port on an in-memory link (its `send`, called without Python).
enum Out {
    Py(PyObject),
    Tx(Py<TxPort>),
    Link(Py<LinkPort>),
}

impl Out {
    fn clone_ref(&self, py: Python<'_>) -> Out {
        match self {
            Out::Py(f) => Out::Py(f.clone_ref(py)),
            Out::Tx(t) => Out::Tx(t.clone_ref(py)),
            Out::Link(p) => Out::Link(p.clone_ref(py)),
        }
    }
}

#[derive(Default)]
struct State {
    /// The pipeline the walk last looked at, and its form (None: the Python walk runs it).
    seen: Option<PyObject>,
    current: Option<Py<WalkProgram>>,
    /// Per port number: how a frame leaves on it.
    ports: Vec<Option<Out>>,
    counts: BTreeMap<&'static str, u64>,
    packet_ins: Option<PacketInRoute>,
}

/// Where packet-ins go without `to_cpu` while `pipeline` is the holder's: split by `split` (the
/// packet_in header in force with it), `sink(payload, metadata)`. Set by the device for a
/// P4Runtime primary in the same process (p4switch/device.py `route_packet_ins`).
struct PacketInRoute {
    pipeline: PyObject,
    split: Py<HeaderSplit>,
    sink: PyObject,
}

/// The walk of one switch: `receive(port, frame)` for its ports, `service(port, item)` for
/// its TM.
#[pyclass(module = "hbh_engine", frozen)]
pub struct V1Walk {
    tm: Py<TrafficManager>,
    /// V1ModelSwitchCore: its `holder`, `sched`, `walk`, `receive`, `service`, `_pipeline_error`.
    core: PyObject,
    holder: PyObject,
    /// The core's scheduler: resubmitted and recirculated packets re-enter through it.
    sched: PyObject,
    to_cpu: PyObject,
    cpu_port: Option<u64>,
    /// egress_spec that drops a packet at the end of ingress (the core's `drop_port`)
    drop_port: u64,
    /// The ingress port of a recirculated packet (None: its own; the core's `recirc_port`).
    recirc_port: Option<u64>,
    /// Resubmits in one chain before the packet is dropped (the core's `max_reentries`).
    max_reentries: u32,
    state: Mutex<State>,
    /// Frames sent ("tx" of `counts`): apart from the other counts, which take the state's
    /// lock and a map lookup by name, since this one is counted for every frame.
    tx: AtomicU64,
    /// The buffers `receive_socket` reads into (taken out while in use).
    rx: Mutex<Option<Box<RxBatch>>>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counter names: the drop causes of v1model_arch.py's DropCause, and the walk's stats.
const INGRESS_DROP: &str = "ingress_mark_to_drop";
const EGRESS_DROP: &str = "egress_mark_to_drop";
const TM_FULL: &str = "tm_queue_full";
const NO_PORT: &str = "egress_port_missing";
const CPU_NO_CONTROLLER: &str = "packet_in_dropped";
const NO_MCAST_GROUP: &str = "mcast_group_missing";
const REENTRY_LIMIT: &str = "reentry_limit";
const DROPS: [&str; 7] = [
    INGRESS_DROP,
    EGRESS_DROP,
    TM_FULL,
    NO_PORT,
    CPU_NO_CONTROLLER,
    NO_MCAST_GROUP,
    REENTRY_LIMIT,
];

/// Clone kinds as the `CLONE` instruction records them: 0 I2E, 1 E2E (stats names as the
/// Python walk's).
const CLONE_STATS: [(&str, &str, &str, u64); 2] = [
    (
        "I2E clone",
        "clone_I2E",
        "clone_session_missing_I2E",
        PKT_INGRESS_CLONE,
    ),
    (
        "E2E clone",
        "clone_E2E",
        "clone_session_missing_E2E",
        PKT_EGRESS_CLONE,
    ),
];

impl V1Walk {
    fn count(&self, what: &'static str) {
        *lock(&self.state).counts.entry(what).or_default() += 1;
    }

    /// One more frame sent (every caller holds the GIL: a load and a store suffice).
    fn count_tx(&self) {
        self.tx.store(self.tx.load(Relaxed) + 1, Relaxed);
    }

    /// The packet-in route, if one is set for the holder's pipeline.
    fn packet_in_route(&self, py: Python<'_>) -> PyResult<Option<(Py<HeaderSplit>, PyObject)>> {
        let pipeline = self.holder.bind(py).getattr(intern!(py, "pipeline"))?;
        let st = lock(&self.state);
        Ok(st
            .packet_ins
            .as_ref()
            .filter(|r| r.pipeline.is(&pipeline))
            .map(|r| (r.split.clone_ref(py), r.sink.clone_ref(py))))
    }

    /// A frame for the CPU port down the route: `sink(payload, metadata)`; a frame shorter
    /// than the header goes to `to_cpu`, whose split refuses it as it does any.
    fn packet_in(
        &self,
        py: Python<'_>,
        frame: &[u8],
        split: &HeaderSplit,
        sink: PyObject,
    ) -> PyResult<i64> {
        let taken = match split.split_bytes(py, frame)? {
            Some((meta, payload)) => sink.bind(py).call1((payload, meta))?,
            None => self.to_cpu.bind(py).call1((PyBytes::new(py, frame),))?,
        };
        if taken.is(&*PyBool::new(py, false)) {
            self.count(CPU_NO_CONTROLLER);
        }
        Ok(0)
    }

    /// The walk's form of the holder's pipeline (rebuilt when the pipeline changed).
    fn program(&self, py: Python<'_>) -> PyResult<Option<Py<WalkProgram>>> {
        let pipeline = self.holder.bind(py).getattr(intern!(py, "pipeline"))?;
        {
            let st = lock(&self.state);
            if st.seen.as_ref().is_some_and(|p| p.is(&pipeline)) {
                return Ok(st.current.as_ref().map(|c| c.clone_ref(py)));
            }
        }
        let form = if pipeline.is_none() {
            None
        } else {
            let f = pipeline.call_method0(intern!(py, "walk_form"))?;
            if f.is_none() {
                None
            } else {
                Some(f.downcast_into::<WalkProgram>()?.unbind())
            }
        };
        let mut st = lock(&self.state);
        st.seen = Some(pipeline.unbind());
        st.current = form.as_ref().map(|c| c.clone_ref(py));
        Ok(form)
    }

    /// Parser, checksum verification and ingress, then the end of ingress in simple_switch's
    /// order: the clones of an I2E request, a resubmit, a multicast group, a drop, unicast.
    fn walk_ingress(&self, py: Python<'_>, mut pkt: WalkPacket) -> PyResult<()> {
        let prog = pkt.prog.bind(py).clone(); // a `Bound`: let go without pyo3's GIL check
        let wp = prog.get();
        let s = &wp.slots;
        if let Some(t) = s.igts {
            pkt.phv[t] = pkt.now_us as u64 & MASK48;
        }
        let res = {
            let mut p = wp.program.bind(py).borrow_mut();
            let data = pkt.data.bytes(py);
            p.run_owned(py, &wp.ingress, &mut pkt.phv, Some(data), s.parser_error)
        };
        let req = match res {
            Ok((status, _, _)) if status < STATUS_REJECT => {
                let e = pyo3::exceptions::PyValueError::new_err(format!(
                    "parser (engine): unknown status {status}"
                ));
                return self.pipeline_error(py, "ingress", e);
            }
            Ok((_, cursor, req)) => {
                pkt.cursor = cursor;
                req
            }
            Err(e) => return self.pipeline_error(py, "ingress", e),
        };
        if let Some(t) = req.truncate {
            pkt.truncate = Some(t);
        }
        if let Some(c) = req.clone {
            let data = pkt.data.clone_ref(py);
            self.clone(py, &pkt, c, data, pkt.now_us)?;
        }
        if let Some(fl) = req.preserve[0] {
            return self.resubmit(py, &pkt, fl);
        }
        let prio = self.priority(&pkt);
        if let Some(m) = s.mcast_grp.filter(|&m| pkt.phv[m] != 0) {
            return self.multicast(py, pkt, m, prio);
        }
        let egress_spec = pkt.phv[s.egress_spec];
        if egress_spec == self.drop_port {
            self.count(INGRESS_DROP);
            return Ok(());
        }
        self.enqueue(py, egress_spec, pkt, prio)
    }

    /// Into the TM: the queue `prio` of `port` (no such port, or a full queue: dropped).
    fn enqueue(&self, py: Python<'_>, port: u64, pkt: WalkPacket, prio: usize) -> PyResult<()> {
        let tm = self.tm.bind(py);
        if port >= tm.get().num_ports as u64 {
            self.count(NO_PORT);
            return Ok(());
        }
        if !TrafficManager::push_walk(tm, port as usize, pkt, prio)? {
            self.count(TM_FULL);
        }
        Ok(())
    }

    /// One clone of `pkt` per replica of the clone session (`data`: what the clone is parsed
    /// from), queued on the replica's port at the session's class of service.
    fn clone(
        &self,
        py: Python<'_>,
        pkt: &WalkPacket,
        (kind, session, field_list): (u32, u64, i64),
        data: Frame,
        now_us: i64,
    ) -> PyResult<()> {
        let (what, made, missing, itype) = CLONE_STATS[kind.min(1) as usize];
        let Some(session) = pkt.prog.get().pre.get().session(session) else {
            self.count(missing);
            return Ok(());
        };
        let trunc = (session.packet_length_bytes > 0).then_some(session.packet_length_bytes);
        let nprio = self.tm.get().num_priorities.max(1) as u64;
        let prio = session.class_of_service.min(nprio - 1) as usize;
        for (port, rid) in session.replicas {
            let mut c = match clone_of(py, pkt, data.clone_ref(py), itype, field_list, now_us) {
                Ok(c) => c,
                Err(e) => return self.pipeline_error(py, what, e),
            };
            c.egress_rid = rid;
            c.session_trunc = trunc;
            self.count(made);
            self.enqueue(py, port, c, prio)?;
        }
        Ok(())
    }

    /// One copy per replica of multicast group `mgid` (instance type REPLICATION); no such
    /// group, or an empty one: dropped.
    fn multicast(
        &self,
        py: Python<'_>,
        mut pkt: WalkPacket,
        slot: usize,
        prio: usize,
    ) -> PyResult<()> {
        let group = pkt.prog.get().pre.get().group(pkt.phv[slot]);
        let Some(replicas) = group.filter(|g| !g.is_empty()) else {
            self.count(NO_MCAST_GROUP);
            return Ok(());
        };
        pkt.phv[pkt.prog.get().slots.instance_type] = PKT_REPLICATION;
        for &(port, rid) in &replicas {
            self.enqueue(py, port, replica(py, &pkt, rid), prio)?;
        }
        Ok(())
    }

    /// The packet as received re-enters ingress through the scheduler (a chain is cut after
    /// `max_reentries`).
    fn resubmit(&self, py: Python<'_>, pkt: &WalkPacket, field_list: i64) -> PyResult<()> {
        if pkt.reentries >= self.max_reentries {
            self.count(REENTRY_LIMIT);
            return Ok(());
        }
        self.count("resubmit");
        let port = pkt.phv[pkt.prog.get().slots.ingress_port];
        let data = pkt.data.clone_ref(py);
        let mut new = reentry(py, pkt, data, port, PKT_RESUBMIT, field_list);
        new.reentries = pkt.reentries + 1;
        self.reenter(py, new)
    }

    /// The frame as deparsed after egress re-enters ingress through the scheduler (paced by
    /// the queues: no chain limit but `max_reentries` 0, as the Python walk's).
    fn recirculate(
        &self,
        py: Python<'_>,
        pkt: &WalkPacket,
        frame: Frame,
        field_list: i64,
    ) -> PyResult<()> {
        if self.max_reentries == 0 {
            self.count(REENTRY_LIMIT);
            return Ok(());
        }
        self.count("recirculate");
        let own = pkt.phv[pkt.prog.get().slots.ingress_port];
        let mut new = reentry(
            py,
            pkt,
            frame,
            self.recirc_port.unwrap_or(own),
            PKT_RECIRC,
            field_list,
        );
        new.reentries = 1;
        self.reenter(py, new)
    }

    /// `new` enters ingress at the scheduler's now, after what is due before it.
    fn reenter(&self, py: Python<'_>, new: WalkPacket) -> PyResult<()> {
        let sched = self.sched.bind(py);
        let now = sched.call_method0(intern!(py, "now_ns"))?;
        let walk = self.core.bind(py).getattr(intern!(py, "walk"))?;
        let again = walk.getattr(intern!(py, "_reenter"))?;
        sched.call_method1(intern!(py, "call_at"), (now, again, Py::new(py, new)?))?;
        Ok(())
    }

    fn priority(&self, pkt: &WalkPacket) -> usize {
        let n = self.tm.get().num_priorities;
        match pkt.prog.get().slots.priority {
            Some(s) if n > 1 => (pkt.phv[s] as i64).min(n - 1) as usize,
            _ => 0,
        }
    }

    fn pipeline_error(&self, py: Python<'_>, what: &str, err: PyErr) -> PyResult<()> {
        let msg = err.value(py).str()?.to_string();
        let name = err.get_type(py).name()?.to_string();
        self.core.bind(py).call_method1(
            intern!(py, "_pipeline_error"),
            (
                what,
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "{what} (engine): {name}: {msg}"
                ))
                .value(py),
            ),
        )?;
        Ok(())
    }

    /// Egress of a walk's packet handed over in a `TMItem` (see `egress_packet`).
    fn service_item(&self, py: Python<'_>, port: usize, item: &Bound<'_, TMItem>) -> PyResult<i64> {
        let (walked, stamps) = {
            let mut it = item.borrow_mut();
            (it.walk.take(), it.stamps())
        };
        let Some(pkt) = walked else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "egress (engine): the item's packet was already served",
            ));
        };
        self.egress_packet(py, port, pkt, stamps, None)
    }

    /// Egress of a packet the TM dequeued as the walk's own (see `egress_packet`).
    pub(crate) fn egress(&self, py: Python<'_>, port: usize, item: WalkItem) -> PyResult<i64> {
        let stamps = item.stamps();
        self.egress_packet(py, port, item.pkt, stamps, Some(item.due_ns))
    }

    /// Egress to deparser for a packet the TM serves on `port`, then simple_switch's end of
    /// egress: the clones of an E2E request, a drop, a recirculation, the port (`due`: when the
    /// TM's model served it, for a real-time port's wire).
    fn egress_packet(
        &self,
        py: Python<'_>,
        port: usize,
        mut pkt: WalkPacket,
        stamps: [i64; 4],
        due: Option<i64>,
    ) -> PyResult<i64> {
        let wp = pkt.prog.bind(py).clone(); // a `Bound`: let go without pyo3's GIL check
        let wp = wp.get();
        let s = &wp.slots;
        let now_us = self.tm.get().now_ns(py)?.div_euclid(1000);
        pkt.now_us = now_us;
        pkt.phv[s.egress_spec] = 0;
        let vals = [
            port as i64,
            now_us,
            stamps[0] & MASK32,
            stamps[1],
            stamps[2] & MASK32,
            stamps[3],
            pkt.egress_rid as i64,
        ];
        for (f, v) in s.egress.iter().zip(vals) {
            if let Some((slot, mask)) = *f {
                pkt.phv[slot] = (v as u64) & mask;
            }
        }
        let res = {
            let mut prog = wp.program.bind(py).borrow_mut();
            prog.run_owned(py, &wp.egress, &mut pkt.phv, None, None)
                .map(|(_, _, req)| (req, prog.emitted_bytes().to_vec(), pkt.phv[s.egress_spec]))
        };
        let (req, head, egress_spec) = match res {
            Ok(r) => r,
            Err(e) => {
                drop(pkt);
                self.pipeline_error(py, "egress", e)?;
                return Ok(0);
            }
        };
        if let Some(t) = req.truncate {
            pkt.truncate = Some(pkt.truncate.map_or(t, |u| u.min(t)));
        }
        let off = pkt.payload_offset(py);
        let head = head.as_slice();
        let whole_len = head.len() + pkt.data.bytes(py).len() - off;
        // The frame as deparsed, before any truncation: what an E2E clone and a recirculated
        // packet are made of.
        let whole = |pkt: &WalkPacket| {
            Frame::Owned(pkt.data.clone_ref(py).deparsed(py, head, off, whole_len))
        };
        if let Some(c) = req.clone {
            self.clone(py, &pkt, c, whole(&pkt), now_us)?;
        }
        if egress_spec == DROP_PORT {
            self.count(EGRESS_DROP);
            return Ok(0);
        }
        if let Some(fl) = req.preserve[1] {
            self.recirculate(py, &pkt, whole(&pkt), fl)?;
            return Ok(0);
        }
        let mut len = whole_len;
        for t in [pkt.truncate, pkt.session_trunc].into_iter().flatten() {
            len = len.min(t as usize);
        }
        let out = lock(&self.state)
            .ports
            .get(port)
            .and_then(|p| p.as_ref().map(|p| p.clone_ref(py)));
        let is_cpu = Some(port as u64) == self.cpu_port;
        let data = std::mem::replace(&mut pkt.data, Frame::Owned(Vec::new()));
        drop(pkt);
        let frame = data.deparsed(py, head, off, len);
        if is_cpu {
            self.count("to_cpu");
            if let Some((split, sink)) = self.packet_in_route(py)? {
                return self.packet_in(py, &frame, split.get(), sink);
            }
            if self
                .to_cpu
                .bind(py)
                .call1((PyBytes::new(py, &frame),))?
                .is(&*PyBool::new(py, false))
            {
                self.count(CPU_NO_CONTROLLER);
            }
            return Ok(0);
        }
        self.count_tx();
        match out {
            Some(Out::Tx(tx)) => TxPort::send(&tx, py, frame, due),
            Some(Out::Py(send)) => send.bind(py).call1((PyBytes::new(py, &frame),))?.extract(),
            Some(Out::Link(port)) => LinkPort::transmit(port.bind(py), Frame::Owned(frame)),
            None => {
                self.count(NO_PORT);
                Ok(0)
            }
        }
    }
}

/// What a port's reader does around each frame: `capture(frame)` before its walk,
/// `before_slow()` before a frame goes to the Python port, `after()` once it was walked.
pub(crate) struct Hooks<'a> {
    pub(crate) capture: &'a dyn Fn(Python<'_>, &[u8]) -> PyResult<()>,
    pub(crate) before_slow: &'a dyn Fn(Python<'_>) -> PyResult<()>,
    pub(crate) after: &'a dyn Fn(Python<'_>) -> PyResult<()>,
}

fn lock_rx(m: &Mutex<Option<Box<RxBatch>>>) -> MutexGuard<'_, Option<Box<RxBatch>>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl V1Walk {
    /// A frame arrived on `port`: ingress and the TM here, or the Python walk.
    pub(crate) fn receive_frame(&self, py: Python<'_>, port: u64, frame: Frame) -> PyResult<()> {
        let Some(prog) = self.program(py)? else {
            self.core
                .bind(py)
                .call_method1(intern!(py, "receive"), (port, frame.into_py(py)))?;
            return Ok(());
        };
        self.count("rx");
        let now_us = self.tm.get().now_ns(py)?.div_euclid(1000);
        let pkt = fresh(py, &prog, frame, port, 0, now_us);
        self.walk_ingress(py, pkt)
    }

    /// `receive_socket`'s loop: read a batch, hand each frame on, until `max` or none waiting.
    /// `hooks` around each frame. Returns the frames walked, the frames read, and the errno
    /// that ended the read (0: none).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn walk_batches(
        &self,
        py: Python<'_>,
        batch: &mut RxBatch,
        (port, fd): (u64, i32),
        max: usize,
        hdr_len: usize,
        slow: &PyObject,
        hooks: &Hooks<'_>,
    ) -> PyResult<(usize, usize, i32)> {
        let (mut read, mut walked) = (0, 0);
        // A callback's error does not cost the rest of the batch its walk: the first one is
        // raised (the scheduler logs it) once every frame read has been handed on.
        let mut failed: Option<PyErr> = None;
        while read < max {
            let got = match batch.recv(fd, max - read) {
                Ok(got) => got,
                Err(e) if failed.is_none() => {
                    return Ok((walked, read, e.raw_os_error().unwrap_or(libc::EIO)))
                }
                Err(_) => break,
            };
            for i in 0..got {
                let (buf, len) = batch.frame(i);
                let offload = hdr_len > 0 && buf.len() >= 2 && (buf[0] & 1 != 0 || buf[1] != 0);
                let done = if len > BUF || offload || buf.len() < hdr_len {
                    (hooks.before_slow)(py).and_then(|_| {
                        slow.bind(py)
                            .call1((PyBytes::new(py, buf), len))
                            .map(|_| ())
                    })
                } else {
                    walked += 1;
                    let frame = &buf[hdr_len..];
                    (hooks.capture)(py, frame)
                        .and_then(|_| self.receive_frame(py, port, Frame::Owned(frame.to_vec())))
                        .and_then(|_| (hooks.after)(py))
                };
                if let Err(e) = done {
                    failed.get_or_insert(e);
                }
            }
            read += got;
            if got == 0 {
                break;
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok((walked, read, 0)),
        }
    }
}

#[pymethods]
impl V1Walk {
    /// `core`: the switch's V1ModelSwitchCore (its `holder` gives the pipeline); `tm` the
    /// core's traffic manager, which this walk serves from now on; `to_cpu(frame)` as the
    /// core's.
    #[new]
    #[pyo3(signature = (core, tm, to_cpu, cpu_port=None, drop_port=DROP_PORT))]
    fn new(
        py: Python<'_>,
        core: PyObject,
        tm: Py<TrafficManager>,
        to_cpu: PyObject,
        cpu_port: Option<u64>,
        drop_port: u64,
    ) -> PyResult<Self> {
        let c = core.bind(py);
        let holder = c.getattr(intern!(py, "holder"))?.unbind();
        let sched = c.getattr(intern!(py, "sched"))?.unbind();
        let recirc_port = c.getattr(intern!(py, "recirc_port"))?.extract()?;
        let max_reentries = c.getattr(intern!(py, "max_reentries"))?.extract()?;
        let nports = tm.get().num_ports as usize;
        Ok(V1Walk {
            tm,
            core,
            holder,
            sched,
            recirc_port,
            max_reentries,
            to_cpu,
            cpu_port,
            drop_port,
            state: Mutex::new(State {
                ports: (0..nports).map(|_| None).collect(),
                ..State::default()
            }),
            tx: AtomicU64::new(0),
            rx: Mutex::new(None),
        })
    }

    /// Port `number` sends with `send(frame) -> wire ns`, or with the engine's `TxPort`
    /// (None: the port has no link).
    #[pyo3(signature = (number, send=None))]
    fn set_port(&self, py: Python<'_>, number: usize, send: Option<PyObject>) -> PyResult<()> {
        let send = send.map(|s| match s.downcast_bound::<TxPort>(py) {
            Ok(t) => Out::Tx(t.clone().unbind()),
            Err(_) => match method_owner::<LinkPort>(s.bind(py), "send") {
                Some(p) => Out::Link(p),
                None => Out::Py(s),
            },
        });
        let mut st = lock(&self.state);
        let slot = st.ports.get_mut(number).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "V1Walk.set_port: port {number} past the traffic manager's ports"
            ))
        })?;
        *slot = send;
        Ok(())
    }

    /// A frame arrived on `port`: ingress and the TM here, or the Python walk.
    pub(crate) fn receive(
        &self,
        py: Python<'_>,
        port: u64,
        frame: Bound<'_, PyBytes>,
    ) -> PyResult<()> {
        self.receive_frame(py, port, Frame::Py(frame.unbind()))
    }

    /// A resubmitted or recirculated packet enters ingress (scheduled by the walk itself).
    fn _reenter(&self, py: Python<'_>, pkt: PyRef<'_, WalkPacket>) -> PyResult<()> {
        let mut new = replica(py, &pkt, 0);
        drop(pkt);
        new.now_us = self.tm.get().now_ns(py)?.div_euclid(1000);
        self.walk_ingress(py, new)
    }

    /// Read up to `max` frames from port `port`'s non-blocking AF_PACKET socket `fd` (frames
    /// the socket sent itself already filtered by PACKET_IGNORE_OUTGOING), several per system
    /// call, and walk each (`receive`), in the order they arrived. `hdr_len`: the length of the
    /// virtio_net_hdr before each frame (0: none). A frame whose header asks for a checksum
    /// or a segmentation to be finished, or that was longer than the buffer, goes to
    /// `slow(buffer, length on the wire)` (the Python port's offload handling) at its place in
    /// the order. Before each walked frame `capture(frame)`, after it `run_due()`, if given (the
    /// scheduler's due timers: the TM's service of the packet just queued). Returns the number
    /// of frames walked and the errno that ended the read (0: `max` read or none waiting), so
    /// that the caller counts both even when an error came after some frames.
    #[pyo3(signature = (port, fd, max, hdr_len, slow, capture=None, run_due=None))]
    #[allow(clippy::too_many_arguments)]
    fn receive_socket(
        &self,
        py: Python<'_>,
        port: u64,
        fd: i32,
        max: usize,
        hdr_len: usize,
        slow: PyObject,
        capture: Option<PyObject>,
        run_due: Option<PyObject>,
    ) -> PyResult<(usize, i32)> {
        let mut batch = lock_rx(&self.rx)
            .take()
            .unwrap_or_else(|| Box::new(RxBatch::new()));
        let after = |py: Python<'_>| match &run_due {
            Some(f) => f.bind(py).call0().map(|_| ()),
            None => Ok(()),
        };
        let capture = |py: Python<'_>, frame: &[u8]| match &capture {
            Some(f) => f.bind(py).call1((PyBytes::new(py, frame),)).map(|_| ()),
            None => Ok(()),
        };
        let hooks = Hooks {
            capture: &capture,
            before_slow: &|_| Ok(()),
            after: &after,
        };
        let result = self.walk_batches(py, &mut batch, (port, fd), max, hdr_len, &slow, &hooks);
        *lock_rx(&self.rx) = Some(batch);
        result.map(|(walked, _, err)| (walked, err))
    }

    /// The TM's service: egress here for the walk's packets, the core's for the others.
    pub(crate) fn service(
        &self,
        py: Python<'_>,
        port: usize,
        item: &Bound<'_, TMItem>,
    ) -> PyResult<i64> {
        let ours = item.borrow().walk.is_some();
        if ours {
            self.service_item(py, port, item)
        } else {
            self.core
                .bind(py)
                .call_method1(intern!(py, "service"), (port, item))?
                .extract()
        }
    }

    /// Hand packet-ins to `sink(payload, metadata)` itself, split by `split`, while `pipeline`
    /// is the holder's (None: through `to_cpu` again).
    #[pyo3(signature = (pipeline=None, split=None, sink=None))]
    fn route_packet_ins(
        &self,
        pipeline: Option<PyObject>,
        split: Option<Py<HeaderSplit>>,
        sink: Option<PyObject>,
    ) {
        lock(&self.state).packet_ins = match (pipeline, split, sink) {
            (Some(pipeline), Some(split), Some(sink)) => Some(PacketInRoute {
                pipeline,
                split,
                sink,
            }),
            _ => None,
        };
    }

    /// Drops by cause and the walk's rx/tx/to_cpu counts so far (V1ModelSwitchCore adds them to its own).
    fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut counts = lock(&self.state).counts.clone();
        let tx = self.tx.load(Relaxed);
        if tx > 0 {
            counts.insert("tx", tx);
        }
        counts
    }

    /// The drop causes this walk counts.
    #[staticmethod]
    fn drop_causes() -> Vec<&'static str> {
        DROPS.to_vec()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.tm)?;
        visit.call(&self.core)?;
        visit.call(&self.holder)?;
        visit.call(&self.sched)?;
        visit.call(&self.to_cpu)?;
        let Ok(st) = self.state.try_lock() else {
            return Ok(());
        };
        if let Some(p) = &st.seen {
            visit.call(p)?;
        }
        if let Some(p) = &st.current {
            visit.call(p)?;
        }
        if let Some(r) = &st.packet_ins {
            visit.call(&r.pipeline)?;
            visit.call(&r.split)?;
            visit.call(&r.sink)?;
        }
        for p in st.ports.iter().flatten() {
            match p {
                Out::Py(f) => visit.call(f)?,
                Out::Tx(t) => visit.call(t)?,
                Out::Link(p) => visit.call(p)?,
            }
        }
        Ok(())
    }

    /// No port wired (a frame out on one is then dropped as `egress_port_missing`), no
    /// pipeline seen, no packet-in route; counts kept. Why: ports lead to links and back to
    /// the switch; the fields fixed at creation (tm, core, ...) hold only older objects, and
    /// the TM's clear breaks the cycle through its service.
    fn __clear__(&self) {
        let mut st = match self.state.try_lock() {
            Ok(st) => st,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let ports: Vec<Option<Out>> = st.ports.iter_mut().map(Option::take).collect();
        let taken = (st.seen.take(), st.current.take(), st.packet_ins.take());
        drop(st);
        drop((ports, taken));
    }
}
