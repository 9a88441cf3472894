//! A simulated host's receive of data datagrams: the base class of topo/simnet.py's `SimHostNode`.
//!
//! Why here: every data packet that reached a host crossed five Python steps (the host's
//! `receive`, the kind's dispatch, the flow's record, the play-out buffer, the reporter's
//! interval check), each a Python frame around an engine call. Now the link's delivery calls
//! `receive` in Rust: an ordinary data datagram (kind 0) of a flow registered with
//! `receive_flow` (a flow with no end-to-end sink at this host) is counted in its `FlowRecord`
//! and the host's `PlayoutBuffer` here, in the order and with the values of the subclass's
//! `_receive_python`. Python runs for that packet only when the host's reporter is due
//! (`_report(now_ns)`, once per report interval: the report's fields, its encoding and its send
//! stay Python's), and every other frame goes to `_receive_python(frame)` whole: reports,
//! CVIHIS, TFRC and LEDBAT feedback and data, TCP segments, flows not registered, frames that
//! are not datagrams, times that do not fit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::datagram::Header;
use crate::host::{FlowRecord, PlayoutBuffer};
use crate::sched::VirtualScheduler;

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
    reporter: Option<PyObject>,
    counts: Py<PyDict>,
    flows: HashMap<u16, Flow>,
}

fn lock(m: &Mutex<Option<Binding>>) -> MutexGuard<'_, Option<Binding>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A host's receive path (see the module). Subclass it in Python, give it the host's pieces
/// with `bind_receive`, name the flows it accounts with `receive_flow`, and define
/// `_receive_python(frame)` (every frame the engine leaves) and `_report(now_ns)` (the reporter
/// is due). Unbound, every frame goes to `_receive_python`. `receive_counts()` is (frames
/// accounted here, frames handed to `_receive_python`).
#[pyclass(module = "hbh_engine", frozen, subclass)]
pub struct HostReceiver {
    bound: Mutex<Option<Binding>>,
    in_engine: AtomicI64,
    to_python: AtomicI64,
}

impl HostReceiver {
    /// The clock's time if `flow` is one the engine accounts (None: the frame is Python's).
    fn now_for(&self, py: Python<'_>, flow: u16) -> PyResult<Option<i64>> {
        let sched = {
            let g = lock(&self.bound);
            let Some(b) = g.as_ref().filter(|b| b.flows.contains_key(&flow)) else {
                return Ok(None);
            };
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
    /// Some(the reporter, when the host has one and a buffer) once done; None when the frame is
    /// Python's after all (nothing changed then).
    fn account(&self, py: Python<'_>, h: &Header, now: i64) -> PyResult<Option<Option<PyObject>>> {
        let mut g = lock(&self.bound);
        let Some(b) = g.as_mut() else {
            return Ok(None);
        };
        let Some(flow) = b.flows.get_mut(&h.flow) else {
            return Ok(None);
        };
        // the send time on the receiver's clock must be a Python int the record takes (an i64)
        let Ok(sent_ns) = i64::try_from(i128::from(h.ts_ns) - i128::from(flow.offset_ns)) else {
            return Ok(None);
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
            Some(buf) => buf.bind(py).try_borrow_mut()?.on_arrival(now),
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
        let reporter = match (&b.reporter, &b.buffer) {
            (Some(r), Some(_)) => Some(r.clone_ref(py)),
            _ => None,
        };
        Ok(Some(reporter))
    }

    /// `_report(now)` when the reporter's `due_us` (None: the next arrival) has come.
    fn report_if_due(slf: &Bound<'_, Self>, reporter: &Bound<'_, PyAny>, now: i64) -> PyResult<()> {
        let py = slf.py();
        let due = reporter.getattr(intern!(py, "due_us"))?;
        if due.is_none() || now.div_euclid(1000) >= due.extract::<i64>()? {
            slf.call_method1(intern!(py, "_report"), (now,))?;
        }
        Ok(())
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
        reporter: Option<PyObject>,
        counts: Py<PyDict>,
    ) {
        *lock(&self.bound) = Some(Binding {
            sched: sched.clone().unbind(),
            engine_sched: sched
                .downcast::<VirtualScheduler>()
                .ok()
                .map(|s| s.clone().unbind()),
            records,
            buffer,
            reporter: reporter.filter(|r| !r.is_none(sched.py())),
            counts,
            flows: HashMap::new(),
        });
    }

    /// Flow `flow_id`'s data is accounted here: its record is named `name`, its send times are
    /// on a clock `offset_ns` ahead of the receiver's. A `ValueError` before `bind_receive`.
    fn receive_flow(&self, flow_id: u16, name: String, offset_ns: i64) -> PyResult<()> {
        let mut g = lock(&self.bound);
        let Some(b) = g.as_mut() else {
            return Err(pyo3::exceptions::PyValueError::new_err(
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

    /// A frame from the link (see the class).
    pub(crate) fn receive(slf: &Bound<'_, Self>, frame: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let header = frame
            .downcast::<PyBytes>()
            .ok()
            .and_then(|b| Header::read(b.as_bytes()).ok())
            .filter(|h| h.kind == KIND_DATA);
        let done = match &header {
            Some(h) => match me.now_for(py, h.flow)? {
                Some(now) => me.account(py, h, now)?.map(|r| (now, r)),
                None => None,
            },
            None => None,
        };
        match done {
            Some((now, reporter)) => {
                me.in_engine.fetch_add(1, Ordering::Relaxed);
                match reporter {
                    Some(r) => Self::report_if_due(slf, r.bind(py), now),
                    None => Ok(()),
                }
            }
            None => {
                me.to_python.fetch_add(1, Ordering::Relaxed);
                slf.call_method1(intern!(py, "_receive_python"), (frame,))
                    .map(|_| ())
            }
        }
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
