//! A simulated host's receive of data datagrams (the base class of topo/simnet.py's
//! `SimHostNode`) and the host's report of its play-out buffer.
//!
//! Why here: every data packet that reached a host crossed Python several times (the host's
//! `receive`, the kind's dispatch, the flow's record, the play-out buffer, the reporter, and on
//! about every second packet the report built, encoded and sent: the report interval is scaled
//! with the link rate, so a host reports after one or two packets at every rate of the line).
//! Now the link's delivery calls `receive` in Rust: an ordinary data datagram (kind 0) of a flow
//! registered with `receive_flow` (a flow with no end-to-end sink at this host) is counted in
//! its `FlowRecord` and the host's `PlayoutBuffer`, and the host's `HostReporter` makes its
//! report when one is due, which goes out on the host's `link`, in the order and with the values
//! of the subclass's `_receive_python`. Every other frame goes to `_receive_python(frame)` whole:
//! reports from the switch (the law: control logic), CVIHIS, TFRC and LEDBAT feedback and data,
//! TCP segments, flows not registered, frames that are not datagrams, send times that do not fit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::datagram::Header;
use crate::frame::Frame;
use crate::host::{FlowRecord, PlayoutBuffer};
use crate::link::send_frame;
use crate::sched::{engine_of, VirtualScheduler};

/// The datagram kind of ordinary data (hosts/datagram.py's `KIND_DATA`).
const KIND_DATA: u8 = 0;

/// A flow whose data the engine accounts: its record's name, its source's clock offset, and
/// its record once the first packet made it (or found it in the host's `records`).
struct Flow {
    name: String,
    offset_ns: i64,
    record: Option<Py<FlowRecord>>,
}

/// What `bind_receive` gave: the host's clock, its records, buffer, reporter and counters.
struct Binding {
    sched: PyObject,
    engine_sched: Option<Py<VirtualScheduler>>,
    records: Py<PyDict>,
    buffer: Option<Py<PlayoutBuffer>>,
    reporter: Option<Py<HostReporter>>,
    counts: Py<PyDict>,
    flows: HashMap<u16, Flow>,
}

fn lock(m: &Mutex<Option<Binding>>) -> MutexGuard<'_, Option<Binding>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A host's receive path (see the module). Subclass it in Python, give it the host's pieces
/// with `bind_receive`, name the flows it accounts with `receive_flow`, and define
/// `_receive_python(frame)` (every frame the engine leaves; its data packets end with
/// `report(now_ns)`) and the attribute `link` (what reports go out on; None: not sent).
/// Unbound, every frame goes to `_receive_python`. `receive_counts()` is (frames accounted
/// here, frames handed to `_receive_python`).
#[pyclass(module = "hbh_engine", frozen, subclass)]
pub struct HostReceiver {
    bound: Mutex<Option<Binding>>,
    in_engine: AtomicI64,
    to_python: AtomicI64,
}

/// `link::FastEnd` for a `HostReceiver`: its `receive_frame`.
pub(crate) fn fast_end(target: &Bound<'_, PyAny>, frame: Frame) -> Result<PyResult<()>, Frame> {
    match target.downcast::<HostReceiver>() {
        Ok(host) => Ok(HostReceiver::receive_frame(host, frame, None)),
        Err(_) => Err(frame),
    }
}

impl HostReceiver {
    /// A frame from the link, as the engine holds it (see the class), arrived now or `at` ns.
    pub(crate) fn receive_frame(
        slf: &Bound<'_, Self>,
        frame: Frame,
        at: Option<i64>,
    ) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let header = Header::read(frame.bytes(py))
            .ok()
            .filter(|h| h.kind == KIND_DATA);
        let now = match &header {
            Some(h) => match me.now_for(py, h.flow, at)? {
                Some(now) if me.account(py, h, now)? => Some(now),
                _ => None,
            },
            None => None,
        };
        match now {
            Some(now) => {
                me.in_engine.fetch_add(1, Ordering::Relaxed);
                Self::report_due(slf, now)
            }
            None => {
                me.to_python.fetch_add(1, Ordering::Relaxed);
                slf.call_method1(intern!(py, "_receive_python"), (frame.into_py(py),))
                    .map(|_| ())
            }
        }
    }

    /// `at`, or the clock's time, if `flow` is one the engine accounts (None: the frame is Python's).
    fn now_for(&self, py: Python<'_>, flow: u16, at: Option<i64>) -> PyResult<Option<i64>> {
        let sched = {
            let g = lock(&self.bound);
            let Some(b) = g.as_ref().filter(|b| b.flows.contains_key(&flow)) else {
                return Ok(None);
            };
            if at.is_some() {
                return Ok(at);
            }
            match &b.engine_sched {
                Some(s) => return Ok(Some(s.get().now())),
                None => b.sched.clone_ref(py),
            }
        };
        sched
            .bind(py)
            .call_method0(intern!(py, "now_ns"))?
            .extract()
            .map(Some)
    }

    /// `h`'s packet counted as `_receive_python` counts it: its flow's record (made on the
    /// first packet), the buffer's arrival (full: `receiver_overflow`), the record's packet.
    /// False when the frame is Python's after all (nothing changed then).
    fn account(&self, py: Python<'_>, h: &Header, now: i64) -> PyResult<bool> {
        let mut g = lock(&self.bound);
        let Some(b) = g.as_mut() else {
            return Ok(false);
        };
        let Some(flow) = b.flows.get_mut(&h.flow) else {
            return Ok(false);
        };
        // the send time on the receiver's clock must be a Python int the record takes (an i64)
        let Ok(sent_ns) = i64::try_from(i128::from(h.ts_ns) - i128::from(flow.offset_ns)) else {
            return Ok(false);
        };
        let record = match &flow.record {
            Some(r) => r.clone_ref(py),
            None => {
                let records = b.records.bind(py);
                let r: Py<FlowRecord> = match records.get_item(h.flow)? {
                    Some(r) => r.downcast_into::<FlowRecord>()?.unbind(),
                    None => {
                        let r = Py::new(py, FlowRecord::new(flow.name.clone()))?;
                        records.set_item(h.flow, &r)?;
                        r
                    }
                };
                flow.record = Some(r.clone_ref(py));
                r
            }
        };
        let accepted = match &b.buffer {
            Some(buf) => buf
                .bind(py)
                .try_borrow_mut()?
                .arrive(now, h.flow, h.size as i64),
            None => true,
        };
        if accepted {
            record.bind(py).try_borrow_mut()?.on_packet(
                i64::from(h.seq),
                sent_ns,
                now,
                h.size as i64,
            );
        } else {
            let counts = b.counts.bind(py);
            let key = intern!(py, "receiver_overflow");
            let n: i64 = match counts.get_item(key)? {
                Some(v) => v.extract()?,
                None => 0,
            };
            counts.set_item(key, n + 1)?;
        }
        Ok(true)
    }

    /// The reporter's report, when the host has a reporter and a buffer and a report is due,
    /// out on the host's `link` (`_receive_python`'s data packets end so too).
    fn report_due(slf: &Bound<'_, Self>, now: i64) -> PyResult<()> {
        let py = slf.py();
        let frame = {
            let g = lock(&slf.get().bound);
            let Some((Some(reporter), Some(buffer))) = g.as_ref().map(|b| (&b.reporter, &b.buffer))
            else {
                return Ok(());
            };
            let values = buffer.bind(py).try_borrow()?.report_values();
            let frame = reporter.bind(py).try_borrow_mut()?.arrival(now, values)?;
            frame
        };
        let Some(frame) = frame else {
            return Ok(());
        };
        let link = slf.getattr(intern!(py, "link"))?;
        if link.is_none() {
            return Ok(());
        }
        send_frame(&link, slf.as_any(), frame.to_vec())
    }
}

#[pymethods]
impl HostReceiver {
    /// Takes (and ignores) the subclass's constructor arguments: its `__init__` has them.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        HostReceiver {
            bound: Mutex::new(None),
            in_engine: AtomicI64::new(0),
            to_python: AtomicI64::new(0),
        }
    }

    /// The host's pieces: its scheduler (the clock), its records (flow id -> `FlowRecord`, which
    /// the engine fills with the first packet of a flow as the Python path does), its play-out
    /// buffer and reporter (either may be None), its counters (`receiver_overflow`). Forgets the
    /// flows named before.
    #[pyo3(signature = (sched, records, buffer, reporter, counts))]
    fn bind_receive(
        &self,
        sched: &Bound<'_, PyAny>,
        records: Py<PyDict>,
        buffer: Option<Py<PlayoutBuffer>>,
        reporter: Option<Py<HostReporter>>,
        counts: Py<PyDict>,
    ) {
        *lock(&self.bound) = Some(Binding {
            sched: sched.clone().unbind(),
            engine_sched: engine_of(sched),
            records,
            buffer,
            reporter,
            counts,
            flows: HashMap::new(),
        });
    }

    /// Flow `flow_id`'s data is accounted here: its record is named `name`, its send times are
    /// on a clock `offset_ns` ahead of the receiver's. A `ValueError` before `bind_receive`.
    fn receive_flow(&self, flow_id: u16, name: String, offset_ns: i64) -> PyResult<()> {
        let mut g = lock(&self.bound);
        let Some(b) = g.as_mut() else {
            return Err(PyValueError::new_err(
                "HostReceiver.receive_flow before bind_receive",
            ));
        };
        b.flows.insert(
            flow_id,
            Flow {
                name,
                offset_ns,
                record: None,
            },
        );
        Ok(())
    }

    /// A frame from the link (see the class). `at_ns`: when it arrived, if that was before now
    /// (a netns host's frames, stamped by the kernel and taken in batches: runtime/hostrelay.py);
    /// a data packet is then counted, played out and reported as of that time. The frames a
    /// host receives must come in the order of their times.
    #[pyo3(signature = (frame, at_ns = None))]
    fn receive(
        slf: &Bound<'_, Self>,
        frame: &Bound<'_, PyAny>,
        at_ns: Option<i64>,
    ) -> PyResult<()> {
        match frame.downcast::<PyBytes>() {
            Ok(b) => Self::receive_frame(slf, Frame::Py(b.clone().unbind()), at_ns),
            Err(_) => {
                slf.get().to_python.fetch_add(1, Ordering::Relaxed);
                slf.call_method1(intern!(slf.py(), "_receive_python"), (frame,))
                    .map(|_| ())
            }
        }
    }

    /// A data packet's arrival at `now_ns`: the report, when one is due (see `report_due`).
    fn report(slf: &Bound<'_, Self>, now_ns: i64) -> PyResult<()> {
        Self::report_due(slf, now_ns)
    }

    /// (frames accounted in the engine, frames handed to `_receive_python`).
    fn receive_counts(&self) -> (i64, i64) {
        (
            self.in_engine.load(Ordering::Relaxed),
            self.to_python.load(Ordering::Relaxed),
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(g) = self.bound.try_lock() {
            if let Some(b) = g.as_ref() {
                visit.call(&b.sched)?;
                if let Some(s) = &b.engine_sched {
                    visit.call(s)?;
                }
                visit.call(&b.records)?;
                if let Some(buf) = &b.buffer {
                    visit.call(buf)?;
                }
                if let Some(r) = &b.reporter {
                    visit.call(r)?;
                }
                visit.call(&b.counts)?;
                for f in b.flows.values() {
                    if let Some(r) = &f.record {
                        visit.call(r)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        if let Ok(mut g) = self.bound.try_lock() {
            *g = None;
        }
    }
}

/// The report's EtherType and its first byte: version 2, message type 1 (occupancy).
const ETHERTYPE_ALINEA: u16 = 0x88B5;
const VERSION_AND_TYPE: u8 = (2 << 4) | 1;
const FLAG_OVERFLOW: u8 = 0x01;
/// Ethernet header and the 42-byte report (docs/reference/wire-format.md).
pub const REPORT_FRAME_BYTES: usize = 14 + 42;
const MAC_MASK: u64 = (1 << 48) - 1;
const TS_MASK: u64 = (1 << 48) - 1;

/// A value of a report's field: `what` (for the error) fits in `bits`.
fn field(value: i64, bits: u32, what: &str) -> PyResult<u64> {
    u64::try_from(value)
        .ok()
        .filter(|&v| v >> bits == 0)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "host report: {what} {value} does not fit its {bits}-bit field"
            ))
        })
}

/// The report of a host's buffer to its last-hop switch, exactly as a switch port reports
/// (docs/reference/wire-format.md): at the first arrival after `interval_us` has elapsed since the last
/// report, a report with the occupancy, the capacity, a sequence number (`seq`, the last one
/// sent), the drops since the previous report (flag overflow when any) and the packets the
/// application has taken, the last at `drained_ns`. `on_arrival` gives the report's frame
/// (Ethernet and report, the bytes controlplane/report.py's `encode` writes for it), or None.
#[pyclass(module = "hbh_engine")]
pub struct HostReporter {
    #[pyo3(get)]
    node_id: i64,
    #[pyo3(get)]
    capacity: i64,
    #[pyo3(get)]
    interval_us: i64,
    #[pyo3(get)]
    port: i64,
    #[pyo3(get)]
    src_mac: i64,
    #[pyo3(get)]
    dst_mac: i64,
    #[pyo3(get)]
    seq: i64,
    last_us: Option<i64>,
    drops_reported: i64,
}

impl HostReporter {
    /// The frame of a report due at `now` ns (None: not due), the buffer's `(occupancy,
    /// dropped, played, last played ns)` in it.
    pub(crate) fn arrival(
        &mut self,
        now_ns: i64,
        (occupancy, drops_total, drained, drained_ns): (i64, i64, i64, i64),
    ) -> PyResult<Option<[u8; REPORT_FRAME_BYTES]>> {
        let now_us = now_ns.div_euclid(1000);
        if self
            .last_us
            .is_some_and(|last| now_us - last < self.interval_us)
        {
            return Ok(None);
        }
        self.last_us = Some(now_us);
        self.seq = (self.seq + 1) & 0xFFFF_FFFF;
        let drops = drops_total - self.drops_reported;
        self.drops_reported = drops_total;
        let mut f = [0u8; REPORT_FRAME_BYTES];
        f[0..6].copy_from_slice(&(self.dst_mac as u64).to_be_bytes()[2..]);
        f[6..12].copy_from_slice(&(self.src_mac as u64).to_be_bytes()[2..]);
        f[12..14].copy_from_slice(&ETHERTYPE_ALINEA.to_be_bytes());
        let ts = now_us as u64 & TS_MASK;
        let dts = drained_ns.div_euclid(1000) as u64 & TS_MASK;
        let r = &mut f[14..];
        r[0] = VERSION_AND_TYPE;
        r[1] = if drops != 0 { FLAG_OVERFLOW } else { 0 };
        r[2..4].copy_from_slice(&(self.node_id as u16).to_be_bytes());
        r[4..6].copy_from_slice(&(self.port as u16).to_be_bytes());
        r[6..10].copy_from_slice(&(field(occupancy, 32, "occupancy")? as u32).to_be_bytes());
        r[10..14].copy_from_slice(&(self.capacity as u32).to_be_bytes());
        r[14..16].copy_from_slice(&((ts >> 32) as u16).to_be_bytes());
        r[16..20].copy_from_slice(&(ts as u32).to_be_bytes());
        r[20..24].copy_from_slice(&(self.seq as u32).to_be_bytes());
        r[24..28].copy_from_slice(&(field(drops, 32, "drops")? as u32).to_be_bytes());
        r[28..32].copy_from_slice(&(self.interval_us as u32).to_be_bytes());
        r[32..36].copy_from_slice(&(drained as u32).to_be_bytes());
        r[36..38].copy_from_slice(&((dts >> 32) as u16).to_be_bytes());
        r[38..42].copy_from_slice(&(dts as u32).to_be_bytes());
        Ok(Some(f))
    }
}

#[pymethods]
impl HostReporter {
    #[new]
    #[pyo3(signature = (node_id, capacity, interval_us, port = 1, src_mac = 0, dst_mac = 0, seq = 0))]
    fn new(
        node_id: i64,
        capacity: i64,
        interval_us: i64,
        port: i64,
        src_mac: i64,
        dst_mac: i64,
        seq: i64,
    ) -> PyResult<Self> {
        field(node_id, 16, "node_id")?;
        field(port, 16, "port")?;
        field(capacity, 32, "capacity")?;
        field(interval_us, 32, "interval_us")?;
        field(seq, 32, "seq")?;
        for (mac, what) in [(src_mac, "src_mac"), (dst_mac, "dst_mac")] {
            if u64::try_from(mac).map_or(true, |m| m & !MAC_MASK != 0) {
                return Err(PyValueError::new_err(format!(
                    "host report: {what} {mac} is not a 48-bit MAC address"
                )));
            }
        }
        Ok(HostReporter {
            node_id,
            capacity,
            interval_us,
            port,
            src_mac,
            dst_mac,
            seq,
            last_us: None,
            drops_reported: 0,
        })
    }

    /// A new interval (µs): the next report is due that long after the last one.
    #[setter]
    fn set_interval_us(&mut self, value: i64) -> PyResult<()> {
        self.interval_us = field(value, 32, "interval_us")? as i64;
        Ok(())
    }

    /// A packet arrives at `now_ns`; `drops_total`: the buffer's drops so far; `drained`: packets
    /// the application has taken so far, the last at `drained_ns`. The report's frame, or None.
    #[pyo3(signature = (now_ns, occupancy, drops_total, drained = 0, drained_ns = 0))]
    fn on_arrival<'py>(
        &mut self,
        py: Python<'py>,
        now_ns: i64,
        occupancy: i64,
        drops_total: i64,
        drained: i64,
        drained_ns: i64,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let frame = self.arrival(now_ns, (occupancy, drops_total, drained, drained_ns))?;
        Ok(frame.map(|f| PyBytes::new(py, &f)))
    }
}
