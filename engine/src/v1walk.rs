//! The v1model walk of a packet in the engine: receive, parser to ingress, the TM, egress to
//! deparser, the port, with the PHV held here (a `Vec<u64>`) from the first block to the last.
//!
//! Why: after the blocks moved into the engine, the walk around them (p4switch/v1model_arch.py)
//! and the PHV built and read across the Python boundary per block were the largest share of a
//! packet-hop (docs/performance.md). The walk here is the same as `V1ModelSwitchCore`'s, in its
//! order, for the packets that need nothing but the engine: unicast from ingress to one queue,
//! a drop in ingress or egress, a full queue, out on a port or to the CPU port. An I2E clone is
//! made by the Python walk (`core._engine_clone`: the PRE's sessions are its state) while the
//! packet itself goes on here. A packet that asks for more (a resubmit, a multicast group, an
//! E2E clone or a recirculation in egress) or makes a block fail is handed to the Python walk
//! at that point, as a `Packet` with the PHV as a list
//! (`core._from_engine_ingress` / `_from_engine_egress`), which carries on exactly as if it had
//! run the blocks itself; so is everything while the loaded pipeline is not one the engine runs
//! wholly (`V1Pipeline.walk_form()` says None). Python sees a packet here only where it must:
//! the port's `send` (the link), `to_cpu` (a packet-in), and those hand-overs.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList};
use pyo3::{PyTraverseError, PyVisit};

use crate::afpacket::{RxBatch, BUF};
use crate::p4vm::{P4Program, Requests, STATUS_REJECT};
use crate::tm::{TMItem, TrafficManager};

const DROP_PORT: u64 = 511;
const MASK32: i64 = (1 << 32) - 1;
const MASK48: u64 = (1 << 48) - 1;
const PKT_RESERVED: usize = 4; // SLOT_PKT, SLOT_DATA, SLOT_CURSOR, SLOT_OUT (layout.py)

/// The standard_metadata slots the walk reads and writes, and the masks of the egress ones.
struct Slots {
    ingress_port: usize,
    instance_type: usize,
    packet_length: usize,
    egress_spec: usize,
    igts: Option<usize>,
    parser_error: Option<u32>,
    mcast_grp: Option<usize>,
    priority: Option<usize>,
    /// egress_port, egress_global_timestamp, enq_timestamp, enq_qdepth, deq_timedelta,
    /// deq_qdepth, egress_rid: (slot, mask), None when the program's struct lacks it.
    egress: [Option<(usize, u64)>; 7],
}

/// One loaded pipeline as the walk runs it (`V1Pipeline.walk_form()`).
#[pyclass(module = "hbh_engine", frozen)]
pub struct WalkProgram {
    pipeline: PyObject,
    program: Py<P4Program>,
    ingress: Vec<usize>,
    egress: Vec<usize>,
    template: Vec<u64>,
    /// Per slot: the Python pipeline holds a bool there.
    bools: Vec<bool>,
    slots: Slots,
}

#[pymethods]
impl WalkProgram {
    /// `ingress`/`egress`: the block indexes of each half (`run_seq`'s); `template`: the initial
    /// PHV (every slot an int); `std`: the slots of ingress_port, instance_type, packet_length,
    /// egress_spec, ingress_global_timestamp, parser_error, mcast_grp, priority (-1: absent);
    /// `egress_fields`: (slot or -1, mask) of the seven fields egress gets from the TM;
    /// `bools`: the slots the Python pipeline holds bools in.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        pipeline: PyObject,
        program: Py<P4Program>,
        ingress: Vec<usize>,
        egress: Vec<usize>,
        template: Vec<u64>,
        std: [i64; 8],
        egress_fields: [(i64, u64); 7],
        bools: Vec<usize>,
    ) -> PyResult<Self> {
        let opt = |v: i64| (v >= 0).then_some(v as usize);
        let need = |v: i64, what: &str| {
            opt(v).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "WalkProgram: standard_metadata has no {what}"
                ))
            })
        };
        let slots = Slots {
            ingress_port: need(std[0], "ingress_port")?,
            instance_type: need(std[1], "instance_type")?,
            packet_length: need(std[2], "packet_length")?,
            egress_spec: need(std[3], "egress_spec")?,
            igts: opt(std[4]),
            parser_error: opt(std[5]).map(|s| s as u32),
            mcast_grp: opt(std[6]),
            priority: opt(std[7]),
            egress: egress_fields.map(|(s, m)| opt(s).map(|s| (s, m))),
        };
        let n = template.len();
        let mut bool_at = vec![false; n];
        for b in bools {
            *bool_at.get_mut(b).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "WalkProgram: bool slot {b} past the PHV"
                ))
            })? = true;
        }
        let all = [
            slots.ingress_port,
            slots.instance_type,
            slots.packet_length,
            slots.egress_spec,
        ];
        let optional = [
            slots.igts,
            slots.mcast_grp,
            slots.priority,
            slots.parser_error.map(|s| s as usize),
        ];
        if all.iter().chain(optional.iter().flatten()).any(|&s| s >= n)
            || slots.egress.iter().flatten().any(|&(s, _)| s >= n)
        {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "WalkProgram: a standard_metadata slot past the PHV",
            ));
        }
        Ok(WalkProgram {
            pipeline,
            program,
            ingress,
            egress,
            template,
            bools: bool_at,
            slots,
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.pipeline)?;
        visit.call(&self.program)
    }
}

/// A packet on the engine's walk: its PHV, the bytes it arrived with, where the payload starts.
#[pyclass(module = "hbh_engine")]
pub struct WalkPacket {
    prog: Py<WalkProgram>,
    phv: Vec<u64>,
    data: Py<PyBytes>,
    cursor: u64,
    truncate: Option<u64>,
    now_us: i64,
}

impl WalkPacket {
    fn payload_offset(&self, py: Python<'_>) -> usize {
        let n = self.data.bind(py).as_bytes().len();
        n.min(((self.cursor + 7) >> 3) as usize)
    }
}

#[pymethods]
impl WalkPacket {
    /// The PHV as the Python pipeline holds it (p4switch/pipeline/layout.py): the reserved
    /// slots (None, the data, the parser cursor, None), then every slot's value, bools as bools.
    fn phv_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let bools = &self.prog.get().bools;
        let out = PyList::empty(py);
        out.append(py.None())?;
        out.append(self.data.bind(py))?;
        out.append(self.cursor)?;
        out.append(py.None())?;
        for (i, &v) in self.phv.iter().enumerate().skip(PKT_RESERVED) {
            if bools[i] {
                out.append(PyBool::new(py, v != 0))?;
            } else {
                out.append(v)?;
            }
        }
        Ok(out)
    }

    #[getter]
    fn pipeline(&self, py: Python<'_>) -> PyObject {
        self.prog.get().pipeline.clone_ref(py)
    }

    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    #[getter(payload_offset)]
    fn get_payload_offset(&self, py: Python<'_>) -> usize {
        self.payload_offset(py)
    }

    #[getter]
    fn truncate_len(&self) -> Option<u64> {
        self.truncate
    }

    #[getter]
    fn now_us(&self) -> i64 {
        self.now_us
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.prog)?;
        visit.call(&self.data)
    }
}

#[derive(Default)]
struct State {
    /// The pipeline the walk last looked at, and its form (None: the Python walk runs it).
    seen: Option<PyObject>,
    current: Option<Py<WalkProgram>>,
    /// Per port number: the port's `send(frame) -> wire ns`.
    ports: Vec<Option<PyObject>>,
    counts: BTreeMap<&'static str, u64>,
}

/// The walk of one switch: `receive(port, frame)` for its ports, `service(port, item)` for
/// its TM.
#[pyclass(module = "hbh_engine", frozen)]
pub struct V1Walk {
    tm: Py<TrafficManager>,
    /// V1ModelSwitchCore: its `holder`, `receive`, `service`, `_from_engine_*`, `_pipeline_error`.
    core: PyObject,
    holder: PyObject,
    to_cpu: PyObject,
    cpu_port: Option<u64>,
    /// egress_spec that drops a packet at the end of ingress (the core's `drop_port`)
    drop_port: u64,
    state: Mutex<State>,
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
const DROPS: [&str; 5] = [
    INGRESS_DROP,
    EGRESS_DROP,
    TM_FULL,
    NO_PORT,
    CPU_NO_CONTROLLER,
];

enum Ingress {
    /// On to the TM here, after the Python walk made the clones of this clone request if any.
    Done(Option<(u32, u64, i64)>),
    /// Hand the packet to the Python walk after ingress (its requests with it).
    Python(Requests),
    Error(PyErr),
}

impl V1Walk {
    fn count(&self, what: &'static str) {
        *lock(&self.state).counts.entry(what).or_default() += 1;
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

    fn ingress(&self, py: Python<'_>, pkt: &mut WalkPacket) -> Ingress {
        let wp = pkt.prog.get();
        let s = &wp.slots;
        let res = {
            let mut prog = wp.program.bind(py).borrow_mut();
            prog.run_owned(
                py,
                &wp.ingress,
                &mut pkt.phv,
                Some(pkt.data.bind(py).as_bytes()),
                s.parser_error,
            )
        };
        let (status, cursor, req) = match res {
            Ok(r) => r,
            Err(e) => return Ingress::Error(e),
        };
        pkt.cursor = cursor;
        if status < STATUS_REJECT {
            return Ingress::Error(pyo3::exceptions::PyValueError::new_err(format!(
                "parser (engine): unknown status {status}"
            )));
        }
        if let Some(t) = req.truncate {
            pkt.truncate = Some(t);
        }
        let mcast = s.mcast_grp.is_some_and(|m| pkt.phv[m] != 0);
        if req.preserve[0].is_some() || mcast {
            return Ingress::Python(req);
        }
        Ingress::Done(req.clone)
    }

    fn priority(&self, pkt: &WalkPacket) -> usize {
        let n = self.tm.get().num_priorities;
        match pkt.prog.get().slots.priority {
            Some(s) if n > 1 => (pkt.phv[s] as i64).min(n - 1) as usize,
            _ => 0,
        }
    }

    /// Hand a packet to the Python walk: `core.<method>(packet, requests, *more)`.
    fn to_python(
        &self,
        py: Python<'_>,
        method: &Bound<'_, pyo3::types::PyString>,
        pkt: PyObject,
        req: Requests,
        more: Vec<PyObject>,
    ) -> PyResult<PyObject> {
        let req = req.into_result().into_pyobject(py)?.into_any().unbind();
        let mut args: Vec<PyObject> = vec![pkt, req];
        args.extend(more);
        Ok(self
            .core
            .bind(py)
            .call_method1(method, pyo3::types::PyTuple::new(py, args)?)?
            .unbind())
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

    fn egress(&self, py: Python<'_>, port: usize, item: &Bound<'_, TMItem>) -> PyResult<i64> {
        let (packet, stamps) = {
            let it = item.borrow();
            let (p, s) = it.stamps();
            (p.clone_ref(py), s)
        };
        let cell = packet.bind(py).downcast::<WalkPacket>()?.clone();
        let mut pkt = cell.borrow_mut();
        let wp = pkt.prog.clone_ref(py);
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
            0,
        ];
        for (f, v) in s.egress.iter().zip(vals) {
            if let Some((slot, mask)) = *f {
                pkt.phv[slot] = (v as u64) & mask;
            }
        }
        let res = {
            let mut prog = wp.program.bind(py).borrow_mut();
            prog.run_owned(py, &wp.egress, &mut pkt.phv, None, None)
                .map(|(_, _, req)| (req, PyBytes::new(py, prog.emitted_bytes()).unbind()))
        };
        let (req, head) = match res {
            Ok(r) => r,
            Err(e) => {
                drop(pkt);
                self.pipeline_error(py, "egress", e)?;
                return Ok(0);
            }
        };
        if req.clone.is_some() || req.preserve[1].is_some() {
            drop(pkt);
            let more = vec![port.into_pyobject(py)?.into_any().unbind(), head.into_any()];
            let r = self.to_python(
                py,
                intern!(py, "_from_engine_egress"),
                cell.into_any().unbind(),
                req,
                more,
            )?;
            return r.extract(py);
        }
        if let Some(t) = req.truncate {
            pkt.truncate = Some(pkt.truncate.map_or(t, |u| u.min(t)));
        }
        if pkt.phv[s.egress_spec] == DROP_PORT {
            self.count(EGRESS_DROP);
            return Ok(0);
        }
        let data = pkt.data.bind(py).as_bytes();
        let payload = &data[pkt.payload_offset(py)..];
        let head = head.bind(py).as_bytes();
        let mut len = head.len() + payload.len();
        if let Some(t) = pkt.truncate {
            len = len.min(t as usize);
        }
        let frame = PyBytes::new_with(py, len, |buf| {
            let h = head.len().min(len);
            buf[..h].copy_from_slice(&head[..h]);
            buf[h..].copy_from_slice(&payload[..len - h]);
            Ok(())
        })?;
        drop(pkt);
        if Some(port as u64) == self.cpu_port {
            self.count("to_cpu");
            if self
                .to_cpu
                .bind(py)
                .call1((frame,))?
                .is(&*PyBool::new(py, false))
            {
                self.count(CPU_NO_CONTROLLER);
            }
            return Ok(0);
        }
        let send = lock(&self.state)
            .ports
            .get(port)
            .and_then(|p| p.as_ref().map(|p| p.clone_ref(py)));
        match send {
            Some(send) => {
                self.count("tx");
                send.bind(py).call1((frame,))?.extract()
            }
            None => {
                self.count("tx");
                self.count(NO_PORT);
                Ok(0)
            }
        }
    }
}

fn lock_rx(m: &Mutex<Option<Box<RxBatch>>>) -> MutexGuard<'_, Option<Box<RxBatch>>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl V1Walk {
    /// `receive_socket`'s loop: read a batch, hand each frame on, until `max` or none waiting.
    #[allow(clippy::too_many_arguments)]
    fn walk_batches(
        &self,
        py: Python<'_>,
        batch: &mut RxBatch,
        port: u64,
        fd: i32,
        max: usize,
        hdr_len: usize,
        slow: &PyObject,
        [capture, run_due]: [Option<&PyObject>; 2],
    ) -> PyResult<(usize, i32)> {
        let (mut read, mut walked) = (0, 0);
        // A callback's error does not cost the rest of the batch its walk: the first one is
        // raised (the scheduler logs it) once every frame read has been handed on.
        let mut failed: Option<PyErr> = None;
        while read < max {
            let got = match batch.recv(fd, max - read) {
                Ok(got) => got,
                Err(e) if failed.is_none() => {
                    return Ok((walked, e.raw_os_error().unwrap_or(libc::EIO)))
                }
                Err(_) => break,
            };
            for i in 0..got {
                let (buf, len) = batch.frame(i);
                let offload = hdr_len > 0 && buf.len() >= 2 && (buf[0] & 1 != 0 || buf[1] != 0);
                let done = if len > BUF || offload || buf.len() < hdr_len {
                    slow.bind(py)
                        .call1((PyBytes::new(py, buf), len))
                        .map(|_| ())
                } else {
                    walked += 1;
                    self.walk_frame(py, port, &buf[hdr_len..], capture, run_due)
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
            None => Ok((walked, 0)),
        }
    }

    /// One frame a port read: captured, walked, then the due timers.
    fn walk_frame(
        &self,
        py: Python<'_>,
        port: u64,
        data: &[u8],
        capture: Option<&PyObject>,
        run_due: Option<&PyObject>,
    ) -> PyResult<()> {
        let frame = PyBytes::new(py, data);
        if let Some(capture) = capture {
            capture.bind(py).call1((frame.clone(),))?;
        }
        self.receive(py, port, frame)?;
        if let Some(run_due) = run_due {
            run_due.bind(py).call0()?;
        }
        Ok(())
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
        let holder = core.bind(py).getattr(intern!(py, "holder"))?.unbind();
        let nports = tm.get().num_ports as usize;
        Ok(V1Walk {
            tm,
            core,
            holder,
            to_cpu,
            cpu_port,
            drop_port,
            state: Mutex::new(State {
                ports: (0..nports).map(|_| None).collect(),
                ..State::default()
            }),
            rx: Mutex::new(None),
        })
    }

    /// Port `number` sends with `send(frame) -> wire ns` (None: the port has no link).
    #[pyo3(signature = (number, send=None))]
    fn set_port(&self, number: usize, send: Option<PyObject>) -> PyResult<()> {
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
    fn receive(&self, py: Python<'_>, port: u64, frame: Bound<'_, PyBytes>) -> PyResult<()> {
        let Some(prog) = self.program(py)? else {
            self.core
                .bind(py)
                .call_method1(intern!(py, "receive"), (port, frame))?;
            return Ok(());
        };
        self.count("rx");
        let now_us = self.tm.get().now_ns(py)?.div_euclid(1000);
        let wp = prog.get();
        let s = &wp.slots;
        let mut phv = wp.template.clone();
        phv[s.ingress_port] = port & 0x1FF;
        phv[s.instance_type] = 0;
        phv[s.packet_length] = frame.as_bytes().len() as u64;
        if let Some(t) = s.igts {
            phv[t] = now_us as u64 & MASK48;
        }
        let mut pkt = WalkPacket {
            prog: prog.clone_ref(py),
            phv,
            data: frame.unbind(),
            cursor: 0,
            truncate: None,
            now_us,
        };
        let clone = match self.ingress(py, &mut pkt) {
            Ingress::Done(clone) => clone,
            Ingress::Python(req) => {
                let pkt = Py::new(py, pkt)?.into_any();
                self.to_python(
                    py,
                    intern!(py, "_from_engine_ingress"),
                    pkt,
                    req,
                    Vec::new(),
                )?;
                return Ok(());
            }
            Ingress::Error(e) => return self.pipeline_error(py, "ingress", e),
        };
        let egress_spec = pkt.phv[s.egress_spec];
        let prio = self.priority(&pkt);
        let pkt = Py::new(py, pkt)?;
        if let Some(c) = clone {
            // The clones first (V1ModelSwitchCore's order), by the Python walk: the PRE's
            // sessions are its state. The packet itself goes on here.
            self.core
                .bind(py)
                .call_method1(intern!(py, "_engine_clone"), (pkt.clone_ref(py), c))?;
        }
        if egress_spec == self.drop_port {
            self.count(INGRESS_DROP);
            return Ok(());
        }
        let tm = self.tm.bind(py);
        if egress_spec >= tm.get().num_ports as u64 {
            self.count(NO_PORT);
            return Ok(());
        }
        let item = Bound::new(py, TMItem::for_packet(pkt.into_any()))?;
        if !TrafficManager::push(tm, egress_spec as usize, &item, prio)? {
            self.count(TM_FULL);
        }
        Ok(())
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
        let hooks = [capture.as_ref(), run_due.as_ref()];
        let result = self.walk_batches(py, &mut batch, port, fd, max, hdr_len, &slow, hooks);
        *lock_rx(&self.rx) = Some(batch);
        result
    }

    /// The TM's service: egress here for the walk's packets, the core's for the others.
    fn service(&self, py: Python<'_>, port: usize, item: &Bound<'_, TMItem>) -> PyResult<i64> {
        let ours = item
            .borrow()
            .stamps()
            .0
            .bind(py)
            .is_instance_of::<WalkPacket>();
        if ours {
            self.egress(py, port, item)
        } else {
            self.core
                .bind(py)
                .call_method1(intern!(py, "service"), (port, item))?
                .extract()
        }
    }

    /// Drops by cause and the walk's rx/tx/to_cpu counts so far (V1ModelSwitchCore adds them to its own).
    fn counts(&self) -> BTreeMap<&'static str, u64> {
        lock(&self.state).counts.clone()
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
        for p in st.ports.iter().flatten() {
            visit.call(p)?;
        }
        Ok(())
    }
}
