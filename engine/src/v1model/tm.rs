//! The traffic manager (p4switch/tm.py documents the model: BMv2's `QueueingLogicPriRL` by
//! default, a shaper at dequeue as an option).
//!
//! Why here: the TM runs twice per packet (enqueue, service) and arms a timer each time; in Python
//! that was a sixth of a simulation's time. Its scheduler is the engine's `VirtualScheduler` when
//! it is one (timers armed without a Python call), any `Scheduler` otherwise (the real-time loop).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::prefetch;
use crate::sched::{
    engine_of, monotonic_ns, now_of, Call, EventHeap, Token, VirtualScheduler, Work,
};

/// The scheduled service of a port (`Call::Engine`'s `TrafficManager._serve(port)`).
static SERVE: Work = Work {
    run: |tm, port| TrafficManager::serve_port(tm.downcast::<TrafficManager>()?, port),
    name: |_, port| format!("TrafficManager._serve({port})"),
};
use crate::v1copies::WalkPacket;

const NS_PER_S: i64 = 1_000_000_000;
pub const DEFAULT_QUEUE_DEPTH: i64 = 64;
pub const MAX_QUEUE_DEPTH: i64 = (1 << 19) - 1;

/// One queued packet and the queueing metadata the TM stamps on it.
#[pyclass(module = "hbh_engine", subclass)]
pub struct TMItem {
    #[pyo3(get, set)]
    packet: PyObject,
    #[pyo3(get, set)]
    port: i64,
    #[pyo3(get, set)]
    prio: i64,
    #[pyo3(get, set)]
    enq_ns: i64,
    #[pyo3(get, set)]
    deq_ns: i64,
    #[pyo3(get, set)]
    enq_timestamp_us: i64,
    #[pyo3(get, set)]
    enq_qdepth: i64,
    #[pyo3(get, set)]
    deq_timedelta_us: i64,
    #[pyo3(get, set)]
    deq_qdepth: i64,
    /// bmv2 model: the departure time fixed at enqueue
    #[pyo3(get, set)]
    depart_ns: i64,
    /// When the TM's model served it (`TrafficManager::dequeue`): queued, its slot come, the
    /// port's wire free; `deq_ns` is when the service ran, later on a real-time loop.
    #[pyo3(get, set)]
    due_ns: i64,
    /// A packet of the engine's walk, held here as Rust data (`packet` is None then). Why: as a
    /// Python object it was one more allocation the collector tracks, per packet.
    pub(crate) walk: Option<WalkPacket>,
}

#[pymethods]
impl TMItem {
    #[new]
    #[pyo3(signature = (packet, port = -1, prio = 0, enq_ns = 0, deq_ns = 0, enq_timestamp_us = 0, enq_qdepth = 0,
                        deq_timedelta_us = 0, deq_qdepth = 0, depart_ns = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        packet: PyObject,
        port: i64,
        prio: i64,
        enq_ns: i64,
        deq_ns: i64,
        enq_timestamp_us: i64,
        enq_qdepth: i64,
        deq_timedelta_us: i64,
        deq_qdepth: i64,
        depart_ns: i64,
    ) -> Self {
        TMItem {
            packet,
            walk: None,
            port,
            prio,
            enq_ns,
            deq_ns,
            enq_timestamp_us,
            enq_qdepth,
            deq_timedelta_us,
            deq_qdepth,
            depart_ns,
            due_ns: 0,
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "TMItem(packet={}, port={}, prio={}, enq_ns={}, deq_ns={}, enq_qdepth={}, deq_qdepth={}, depart_ns={})",
            self.packet.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
            self.port, self.prio, self.enq_ns, self.deq_ns, self.enq_qdepth, self.deq_qdepth, self.depart_ns
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.packet)?;
        if let Some(w) = &self.walk {
            w.traverse(&visit)?;
        }
        Ok(())
    }

    /// `packet` None, no walk packet. Why: `packet` may be set to anything, the item itself
    /// or an object that holds it.
    fn __clear__(&mut self) {
        let packet = Python::with_gil(|py| std::mem::replace(&mut self.packet, py.None()));
        let walk = self.walk.take();
        drop((packet, walk));
    }
}

/// Counters of one egress port (all its priority queues together).
#[pyclass(module = "hbh_engine", eq, get_all, set_all)]
#[derive(Clone, Default, PartialEq)]
pub struct PortStats {
    enqueued: i64,
    dequeued: i64,
    dropped_full: i64,
    max_depth: i64,
}

#[pymethods]
impl PortStats {
    #[new]
    #[pyo3(signature = (enqueued = 0, dequeued = 0, dropped_full = 0, max_depth = 0))]
    fn new(enqueued: i64, dequeued: i64, dropped_full: i64, max_depth: i64) -> Self {
        PortStats {
            enqueued,
            dequeued,
            dropped_full,
            max_depth,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "PortStats(enqueued={}, dequeued={}, dropped_full={}, max_depth={})",
            self.enqueued, self.dequeued, self.dropped_full, self.max_depth
        )
    }
}

/// BMv2's spacing of a queue at `pps`: `duration_cast<ns>(duration<double>(1. / pps))`.
#[pyfunction]
pub fn bmv2_interval_ns(pps: i64) -> i64 {
    if pps == 0 {
        0
    } else {
        ((1.0 / pps as f64) * NS_PER_S as f64) as i64
    }
}

fn ceil_div(a: i128, b: i128) -> i128 {
    -((-a).div_euclid(b))
}

/// The rate limiter of one queue: BMv2's departure stamped at push, or a shaper at dequeue.
enum Limiter {
    Stamped { interval_ns: i64, last_sent: i64 },
    Shaped { anchor_ns: i64, k: i64, fresh: bool },
}

/// A packet of the engine's walk in a queue, with the stamps egress reads: Rust data in the
/// queue's own ring. Why not a `TMItem`: a Python object per packet is an allocation the
/// collector tracks, whose untracking at dequeue touched two more cold lines of memory.
pub(crate) struct WalkItem {
    pub(crate) pkt: WalkPacket,
    enq_ns: i64,
    deq_ns: i64,
    depart_ns: i64,
    enq_timestamp_us: i64,
    enq_qdepth: i64,
    deq_timedelta_us: i64,
    deq_qdepth: i64,
    /// `TMItem::due_ns`: what a real-time port dates its wire time from (`TxPort::send`).
    pub(crate) due_ns: i64,
}

impl WalkItem {
    /// The stamps egress reads: (enq_timestamp_us, enq_qdepth, deq_timedelta_us, deq_qdepth).
    pub(crate) fn stamps(&self) -> [i64; 4] {
        [
            self.enq_timestamp_us,
            self.enq_qdepth,
            self.deq_timedelta_us,
            self.deq_qdepth,
        ]
    }

    /// As a `TMItem`, for a service that is not the walk's.
    fn into_item(self, py: Python<'_>, port: usize, prio: usize) -> TMItem {
        let mut item = TMItem::new(
            py.None(),
            port as i64,
            prio as i64,
            self.enq_ns,
            self.deq_ns,
            self.enq_timestamp_us,
            self.enq_qdepth,
            self.deq_timedelta_us,
            self.deq_qdepth,
            self.depart_ns,
        );
        item.due_ns = self.due_ns;
        item.walk = Some(self.pkt);
        item
    }
}

/// What a queue holds: a Python `TMItem`, or a packet of the engine's walk.
enum Queued {
    Py(Py<TMItem>),
    Walk(Box<WalkItem>),
}

struct Queue {
    items: VecDeque<(Queued, i64)>, // (item, departure stamp of the bmv2 model)
    limit: i64,
    pps: i64,
    limiter: Limiter,
}

impl Queue {
    fn new(shaper: bool, limit: i64, pps: i64, now: i64) -> Self {
        let limiter = if shaper {
            Limiter::Shaped {
                anchor_ns: 0,
                k: 0,
                fresh: true,
            }
        } else {
            // BMv2: last_sent is the queue's creation time (its first set_* call or push)
            Limiter::Stamped {
                interval_ns: bmv2_interval_ns(pps),
                last_sent: now,
            }
        };
        Queue {
            items: VecDeque::new(),
            limit,
            pps,
            limiter,
        }
    }

    /// Ask for the memory of the packets served next: the item after the new head (its box), and
    /// the new head's PHV and headers (its box was asked for one service ago).
    fn prefetch_next(&self) {
        if let Some((Queued::Walk(after), _)) = self.items.get(1) {
            prefetch::lines(&**after as *const WalkItem, std::mem::size_of::<WalkItem>());
        }
        if let Some((Queued::Walk(head), _)) = self.items.front() {
            head.pkt.prefetch();
        }
    }

    fn slot(anchor_ns: i64, k: i64, pps: i64) -> i64 {
        anchor_ns + ceil_div(k as i128 * NS_PER_S as i128, pps as i128) as i64
    }

    /// Earliest time the head may leave (the queue is not empty); None: no constraint.
    fn ready_at(&self) -> Option<i64> {
        match self.limiter {
            Limiter::Stamped { .. } => self.items.front().map(|(_, depart)| *depart),
            Limiter::Shaped {
                anchor_ns,
                k,
                fresh,
            } => {
                if self.pps == 0 || fresh {
                    None
                } else {
                    Some(Self::slot(anchor_ns, k + 1, self.pps))
                }
            }
        }
    }

    /// Queue `item` at `now`; returns its departure stamp (bmv2 model; 0 for the shaper).
    fn push(&mut self, item: Queued, now: i64) -> i64 {
        let idle_past_slot =
            self.items.is_empty() && self.pps != 0 && self.ready_at().is_some_and(|t| t < now);
        let depart = match &mut self.limiter {
            Limiter::Stamped {
                interval_ns,
                last_sent,
            } => {
                let t = *last_sent + *interval_ns;
                *last_sent = if now > t { now } else { t };
                *last_sent
            }
            Limiter::Shaped { fresh, .. } => {
                if idle_past_slot {
                    *fresh = true; // idle past its slot: start a new schedule, no burst credit
                }
                0
            }
        };
        self.items.push_back((item, depart));
        depart
    }

    /// The head left at `t_ns`.
    fn on_serve(&mut self, t_ns: i64) {
        let pps = self.pps;
        let Limiter::Shaped {
            anchor_ns,
            k,
            fresh,
        } = &mut self.limiter
        else {
            return;
        };
        if pps == 0 {
            return;
        }
        let interval = ceil_div(NS_PER_S as i128, pps as i128) as i64;
        if *fresh || t_ns - Self::slot(*anchor_ns, *k + 1, pps) >= interval {
            // no slot yet, or more than a slot late: anchor here, no catching up in a burst
            (*anchor_ns, *k, *fresh) = (t_ns, 0, false);
            return;
        }
        *k += 1;
        if *k == pps {
            // exactly one second later: keep the integers small
            *anchor_ns += NS_PER_S;
            *k = 0;
        }
    }

    fn set_rate(&mut self, pps: i64) {
        let old = self.pps;
        match &mut self.limiter {
            Limiter::Stamped { interval_ns, .. } => *interval_ns = bmv2_interval_ns(pps),
            Limiter::Shaped {
                anchor_ns,
                k,
                fresh,
            } => {
                if pps == old {
                    return;
                }
                if old != 0 && !*fresh && pps != 0 {
                    // the last service keeps its time; new spacing after it
                    *anchor_ns = Self::slot(*anchor_ns, *k, old);
                    *k = 0;
                } else {
                    *fresh = true;
                }
            }
        }
        self.pps = pps;
    }
}

/// A port's pending wake-up: an engine timer, or a handle of another scheduler.
enum Wake {
    Engine(Arc<Token>),
    Other(PyObject),
}

struct Port {
    queues: Vec<Queue>,
    wire_free_ns: i64,
    wake: Option<Wake>,
    wake_at: i64,
    stats: PortStats,
    occupancy: i64,
}

/// The engine's walk as a TM's service: its owner when a service is the walk's bound `service`,
/// and its egress of a walk's packet and its service of any item, called without Python.
pub(crate) struct WalkService {
    pub(crate) owner: fn(&Bound<'_, PyAny>) -> Option<PyObject>,
    pub(crate) egress: fn(&Bound<'_, PyAny>, usize, WalkItem) -> PyResult<i64>,
    pub(crate) service: fn(&Bound<'_, PyAny>, usize, &Bound<'_, TMItem>) -> PyResult<i64>,
}

/// v1walk's `TM_SERVICE`, set by lib.rs when the module loads (the walk is above this module).
pub(crate) static WALK_SERVICE: OnceLock<&'static WalkService> = OnceLock::new();

/// Who serves a dequeued item: a Python callable, or the engine's walk itself (a `V1Walk`'s
/// bound `service`, called here without a Python call per packet).
enum Service {
    Py(PyObject),
    Walk(PyObject, &'static WalkService),
}

impl Service {
    fn clone_ref(&self, py: Python<'_>) -> Service {
        match self {
            Service::Py(f) => Service::Py(f.clone_ref(py)),
            Service::Walk(w, s) => Service::Walk(w.clone_ref(py), s),
        }
    }

    /// `service`, or the walk's bound `service` recognised as the walk's.
    fn of(py: Python<'_>, service: PyObject) -> Service {
        let walk = WALK_SERVICE
            .get()
            .and_then(|s| (s.owner)(service.bind(py)).map(|w| (w, *s)));
        match walk {
            Some((w, s)) => Service::Walk(w, s),
            None => Service::Py(service),
        }
    }

    fn call(&self, py: Python<'_>, port: usize, item: Queued, prio: usize) -> PyResult<i64> {
        match (self, item) {
            (Service::Walk(w, s), Queued::Walk(item)) => (s.egress)(w.bind(py), port, *item),
            (Service::Walk(w, s), Queued::Py(item)) => (s.service)(w.bind(py), port, item.bind(py)),
            (Service::Py(f), item) => {
                let item = match item {
                    Queued::Py(item) => item,
                    Queued::Walk(item) => Py::new(py, item.into_item(py, port, prio))?,
                };
                f.bind(py)
                    .call1((port, item))
                    .and_then(|wire| TrafficManager::check_wire_ns(&wire))
            }
        }
    }
}

struct Inner {
    service: Option<Service>,
    ports: Vec<Option<Port>>,
    order: Vec<usize>, // ports in order of creation (the order set_all_* re-arms them in)
    default_depth: i64,
    default_pps: i64,
}

/// Egress queues of a switch, served on an injected scheduler.
///
/// `service(port, item) -> int` is called on the scheduler for every dequeued item and returns
/// how long (ns) the port's transmitter is busy with it from now (negative: a real-time port's
/// wire time, dated from `item.due_ns`, ended that long ago). It may be bound later with
/// `bind_service`, but before the first packet is served.
#[pyclass(module = "hbh_engine", frozen)]
pub struct TrafficManager {
    sched: PyObject,
    engine_sched: Option<Py<VirtualScheduler>>,
    /// A `RealtimeScheduler`'s `monotonic_origin_ns`: its `now_ns()` read here, without a call.
    monotonic_origin: Option<i64>,
    /// A `RealtimeScheduler`'s `engine_heap`: wake-ups pushed here directly.
    realtime_heap: Option<Py<EventHeap>>,
    #[pyo3(get)]
    queue_model: String,
    /// `queue_model` is BMv2's: items keep the departure stamped at enqueue.
    bmv2: bool,
    #[pyo3(get)]
    pub(crate) num_ports: i64,
    #[pyo3(get)]
    pub(crate) num_priorities: i64,
    inner: Mutex<Inner>,
}

fn int_arg(value: &Bound<'_, PyAny>) -> Option<i64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return None;
    }
    value.extract::<i64>().ok()
}

fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn check_depth(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match int_arg(value) {
        Some(d) if (0..=MAX_QUEUE_DEPTH).contains(&d) => Ok(d),
        _ => Err(PyValueError::new_err(format!(
            "queue depth {} must be an int in 0..{MAX_QUEUE_DEPTH} packets",
            repr(value)
        ))),
    }
}

fn check_rate(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match int_arg(value) {
        Some(r) if r >= 0 => Ok(r),
        _ => Err(PyValueError::new_err(format!(
            "queue rate {} must be an int >= 0 packets/s (0 = unlimited)",
            repr(value)
        ))),
    }
}

impl TrafficManager {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn check_port(&self, value: &Bound<'_, PyAny>) -> PyResult<usize> {
        match int_arg(value) {
            Some(p) if (0..self.num_ports).contains(&p) => Ok(p as usize),
            _ => Err(PyValueError::new_err(format!(
                "egress port {} out of range 0..{}",
                repr(value),
                self.num_ports - 1
            ))),
        }
    }

    fn check_prio(&self, value: &Bound<'_, PyAny>) -> PyResult<usize> {
        match int_arg(value) {
            Some(p) if (0..self.num_priorities).contains(&p) => Ok(p as usize),
            _ => Err(PyValueError::new_err(format!(
                "queue priority {} out of range 0..{}",
                repr(value),
                self.num_priorities - 1
            ))),
        }
    }

    fn now(&self, py: Python<'_>) -> PyResult<i64> {
        match self.monotonic_origin {
            Some(origin) => Ok(monotonic_ns() - origin),
            None => now_of(py, &self.engine_sched, &self.sched),
        }
    }

    /// The port's state, created with the defaults at first use.
    fn port<'a>(&self, inner: &'a mut Inner, port: usize, now: i64) -> &'a mut Port {
        if inner.ports[port].is_none() {
            let shaper = self.queue_model == "shaper";
            let queues = (0..self.num_priorities)
                .map(|_| Queue::new(shaper, inner.default_depth, inner.default_pps, now))
                .collect();
            inner.ports[port] = Some(Port {
                queues,
                wire_free_ns: 0,
                wake: None,
                wake_at: 0,
                stats: PortStats::default(),
                occupancy: 0,
            });
            inner.order.push(port);
        }
        inner.ports[port].as_mut().expect("created above")
    }

    /// (Re)arm the port's single wake-up at the earliest time a queue may be served.
    fn arm(slf: &Bound<'_, Self>, p: &mut Port, port: usize, now: i64) -> PyResult<()> {
        let py = slf.py();
        let t = p
            .queues
            .iter()
            .filter(|q| !q.items.is_empty())
            .map(|q| {
                q.ready_at()
                    .map_or(p.wire_free_ns, |nxt| nxt.max(p.wire_free_ns))
            })
            .min();
        let Some(t) = t else {
            if let Some(wake) = p.wake.take() {
                cancel(py, wake)?;
            }
            return Ok(());
        };
        let t = t.max(now);
        if let Some(wake) = p.wake.take() {
            if p.wake_at <= t {
                p.wake = Some(wake);
                return Ok(());
            }
            cancel(py, wake)?;
        }
        p.wake_at = t;
        let this = slf.get();
        let serve = || Call::Engine(&SERVE, slf.clone().into_any().unbind(), port);
        p.wake = Some(match (&this.engine_sched, &this.realtime_heap) {
            (Some(s), _) => Wake::Engine(s.get().schedule_token(t, serve())),
            (None, Some(heap)) => Wake::Engine(heap.get().push_token(py, t, serve()).0),
            (None, None) => Wake::Other(
                this.sched
                    .bind(py)
                    .call_method1(
                        intern!(py, "call_at"),
                        (t, slf.getattr(intern!(py, "_serve"))?, port),
                    )?
                    .unbind(),
            ),
        });
        Ok(())
    }

    /// Re-arm `port` (if it exists) at the scheduler's current time.
    fn arm_port(slf: &Bound<'_, Self>, port: usize) -> PyResult<()> {
        let this = slf.get();
        let now = this.now(slf.py())?;
        let mut inner = this.lock();
        match inner.ports[port].as_mut() {
            Some(p) => Self::arm(slf, p, port, now),
            None => Ok(()),
        }
    }

    /// Queues of `port` selected by `prio` (all when None), creating the port.
    fn selected(
        &self,
        inner: &mut Inner,
        port: usize,
        prio: Option<usize>,
        now: i64,
    ) -> Vec<usize> {
        self.port(inner, port, now);
        match prio {
            Some(q) => vec![q],
            None => (0..self.num_priorities as usize).collect(),
        }
    }

    fn check_wire_ns(value: &Bound<'_, PyAny>) -> PyResult<i64> {
        match int_arg(value) {
            Some(w) => Ok(w),
            _ => Err(PyValueError::new_err(format!(
                "TM service callback must return a wire time in int ns, got {}",
                repr(value)
            ))),
        }
    }

    /// Pop the head of the first eligible queue of `port` and stamp it; None: nothing may leave.
    fn dequeue(
        &self,
        py: Python<'_>,
        inner: &mut Inner,
        port: usize,
        now: i64,
    ) -> Option<(Queued, usize)> {
        let p = inner.ports[port].as_mut()?;
        p.wake = None;
        if p.wire_free_ns > now {
            return None;
        }
        // strict priority: highest number first
        let (prio, q) = p
            .queues
            .iter_mut()
            .enumerate()
            .rev()
            .find(|(_, q)| !q.items.is_empty() && q.ready_at().is_none_or(|t| t <= now))?;
        // the model serves the head once its slot came and the wire was free (and it was queued)
        let ready = q.ready_at().unwrap_or(i64::MIN).max(p.wire_free_ns);
        let (mut item, _) = q.items.pop_front()?;
        q.prefetch_next();
        q.on_serve(now);
        let left = q.items.len() as i64;
        p.occupancy -= 1;
        p.stats.dequeued += 1;
        p.wire_free_ns = now;
        match &mut item {
            Queued::Py(item) => {
                let mut it = item.bind(py).borrow_mut();
                it.deq_ns = now;
                it.deq_timedelta_us = now.div_euclid(1000) - it.enq_timestamp_us;
                it.deq_qdepth = left;
                it.due_ns = ready.max(it.enq_ns).min(now);
            }
            Queued::Walk(it) => {
                it.deq_ns = now;
                it.deq_timedelta_us = now.div_euclid(1000) - it.enq_timestamp_us;
                it.deq_qdepth = left;
                it.due_ns = ready.max(it.enq_ns).min(now);
            }
        }
        Some((item, prio))
    }
}

impl TrafficManager {
    /// `enqueue` of an item whose port and priority are in range (the engine's v1model walk
    /// calls it directly).
    pub(crate) fn push(
        slf: &Bound<'_, Self>,
        port: usize,
        item: &Bound<'_, TMItem>,
        prio: usize,
    ) -> PyResult<bool> {
        Self::push_queued(slf, port, prio, |now, depth| {
            let mut it = item.borrow_mut();
            (it.port, it.prio, it.enq_ns) = (port as i64, prio as i64, now);
            it.enq_timestamp_us = now.div_euclid(1000);
            it.enq_qdepth = depth;
            Queued::Py(item.clone().unbind())
        })
    }

    /// `push` of a packet of the engine's walk (it stays Rust data in the queue).
    pub(crate) fn push_walk(
        slf: &Bound<'_, Self>,
        port: usize,
        pkt: WalkPacket,
        prio: usize,
    ) -> PyResult<bool> {
        Self::push_queued(slf, port, prio, |now, depth| {
            let item = WalkItem {
                pkt,
                enq_ns: now,
                deq_ns: 0,
                depart_ns: 0,
                enq_timestamp_us: now.div_euclid(1000),
                enq_qdepth: depth,
                deq_timedelta_us: 0,
                deq_qdepth: 0,
                due_ns: now,
            };
            Queued::Walk(Box::new(item))
        })
    }

    /// Into queue `prio` of `port` (full: dropped, false): `make(now, depth)` gives the entry.
    fn push_queued(
        slf: &Bound<'_, Self>,
        port: usize,
        prio: usize,
        make: impl FnOnce(i64, i64) -> Queued,
    ) -> PyResult<bool> {
        let py = slf.py();
        let this = slf.get();
        let now = this.now(py)?;
        let mut inner = this.lock();
        let p = this.port(&mut inner, port, now);
        let q = &mut p.queues[prio];
        if q.items.len() as i64 >= q.limit {
            p.stats.dropped_full += 1;
            return Ok(false);
        }
        let depth = q.items.len() as i64;
        let bmv2 = this.bmv2;
        q.push(make(now, depth), now);
        if let (true, Some((item, depart))) = (bmv2, q.items.back_mut()) {
            match item {
                Queued::Py(it) => it.bind(py).borrow_mut().depart_ns = *depart,
                Queued::Walk(it) => it.depart_ns = *depart,
            }
        }
        p.occupancy += 1;
        p.stats.enqueued += 1;
        p.stats.max_depth = p.stats.max_depth.max(p.occupancy);
        Self::arm(slf, p, port, now).map(|_| true)
    }

    /// The scheduler's time (ns).
    pub(crate) fn now_ns(&self, py: Python<'_>) -> PyResult<i64> {
        self.now(py)
    }
}

impl TrafficManager {
    /// The scheduled service of `port` (`_serve`, and the engine's timers call it directly).
    pub(crate) fn serve_port(slf: &Bound<'_, Self>, port: usize) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let now = this.now(py)?;
        let ((item, prio), service) = {
            let mut inner = this.lock();
            match this.dequeue(py, &mut inner, port, now) {
                Some(item) => (item, inner.service.as_ref().map(|s| s.clone_ref(py))),
                None => {
                    drop(inner);
                    return Self::arm_port(slf, port);
                }
            }
        };
        let result = match service {
            Some(service) => service.call(py, port, item, prio),
            None => Err(PyRuntimeError::new_err(
                "TrafficManager: no service callback bound (bind_service)",
            )),
        };
        if let Ok(wire_ns) = result {
            if let Some(p) = this.lock().ports[port].as_mut() {
                p.wire_free_ns = now + wire_ns;
            }
        }
        let armed = Self::arm_port(slf, port);
        result.and(armed)
    }
}

impl TMItem {
    /// The stamps egress reads: (enq_timestamp_us, enq_qdepth, deq_timedelta_us, deq_qdepth).
    pub(crate) fn stamps(&self) -> [i64; 4] {
        [
            self.enq_timestamp_us,
            self.enq_qdepth,
            self.deq_timedelta_us,
            self.deq_qdepth,
        ]
    }
}

fn cancel(py: Python<'_>, wake: Wake) -> PyResult<()> {
    match wake {
        Wake::Engine(h) => {
            h.cancel();
            Ok(())
        }
        Wake::Other(h) => h.bind(py).call_method0(intern!(py, "cancel")).map(|_| ()),
    }
}

#[pymethods]
impl TrafficManager {
    #[new]
    #[pyo3(signature = (sched, service = None, num_ports = 512, num_priorities = 1, default_depth = None,
                        default_rate_pps = None, queue_model = "bmv2"))]
    fn new(
        sched: &Bound<'_, PyAny>,
        service: Option<PyObject>,
        num_ports: i64,
        num_priorities: i64,
        default_depth: Option<&Bound<'_, PyAny>>,
        default_rate_pps: Option<&Bound<'_, PyAny>>,
        queue_model: &str,
    ) -> PyResult<Self> {
        if num_ports < 1 {
            return Err(PyValueError::new_err(format!(
                "num_ports must be >= 1, got {num_ports}"
            )));
        }
        if !(1..=8).contains(&num_priorities) {
            return Err(PyValueError::new_err(format!(
                "num_priorities must be in 1..8, got {num_priorities}"
            )));
        }
        if queue_model != "bmv2" && queue_model != "shaper" {
            return Err(PyValueError::new_err(format!(
                "queue model '{queue_model}': expected one of bmv2, shaper"
            )));
        }
        let default_depth = default_depth
            .map(check_depth)
            .transpose()?
            .unwrap_or(DEFAULT_QUEUE_DEPTH);
        let default_pps = default_rate_pps.map(check_rate).transpose()?.unwrap_or(0);
        let engine_sched = engine_of(sched);
        let monotonic_origin = match sched.getattr(intern!(sched.py(), "monotonic_origin_ns")) {
            Ok(v) => Some(v.extract::<i64>()?),
            Err(_) => None,
        };
        let realtime_heap = match sched.getattr(intern!(sched.py(), "engine_heap")) {
            Ok(v) => Some(v.downcast_into::<EventHeap>()?.unbind()),
            Err(_) => None,
        };
        Ok(TrafficManager {
            sched: sched.clone().unbind(),
            engine_sched,
            monotonic_origin,
            realtime_heap,
            queue_model: queue_model.to_string(),
            bmv2: queue_model == "bmv2",
            num_ports,
            num_priorities,
            inner: Mutex::new(Inner {
                service: service.map(|s| Service::of(sched.py(), s)),
                ports: (0..num_ports).map(|_| None).collect(),
                order: Vec::new(),
                default_depth,
                default_pps,
            }),
        })
    }

    /// Set the service callback (called directly per packet: no wrapper in between; a
    /// `V1Walk`'s `service` is called in the engine, without a Python call).
    fn bind_service(&self, py: Python<'_>, service: PyObject) {
        self.lock().service = Some(Service::of(py, service));
    }

    /// Depth limit (packets) of one port's queue `prio`, or of all its queues (None).
    #[pyo3(signature = (port, depth, prio = None))]
    fn set_queue_depth(
        &self,
        py: Python<'_>,
        port: &Bound<'_, PyAny>,
        depth: &Bound<'_, PyAny>,
        prio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let depth = check_depth(depth)?;
        let port = self.check_port(port)?;
        let now = self.now(py)?;
        let prio = prio.map(|p| self.check_prio(p)).transpose()?;
        let mut inner = self.lock();
        for q in self.selected(&mut inner, port, prio, now) {
            inner.ports[port]
                .as_mut()
                .expect("selected creates it")
                .queues[q]
                .limit = depth;
        }
        Ok(())
    }

    /// Depth limit of every queue of every port (also the default for ports used later).
    fn set_all_queue_depths(&self, depth: &Bound<'_, PyAny>) -> PyResult<()> {
        let depth = check_depth(depth)?;
        let mut inner = self.lock();
        inner.default_depth = depth;
        for p in inner.ports.iter_mut().flatten() {
            p.queues.iter_mut().for_each(|q| q.limit = depth);
        }
        Ok(())
    }

    /// Service rate (packets/s, 0 = unlimited) of one port's queue `prio` or all (None).
    #[pyo3(signature = (port, pps, prio = None))]
    fn set_queue_rate(
        slf: &Bound<'_, Self>,
        port: &Bound<'_, PyAny>,
        pps: &Bound<'_, PyAny>,
        prio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let this = slf.get();
        let pps = check_rate(pps)?;
        let port = this.check_port(port)?;
        let now = this.now(slf.py())?;
        let prio = prio.map(|p| this.check_prio(p)).transpose()?;
        {
            let mut inner = this.lock();
            for q in this.selected(&mut inner, port, prio, now) {
                inner.ports[port]
                    .as_mut()
                    .expect("selected creates it")
                    .queues[q]
                    .set_rate(pps);
            }
        }
        Self::arm_port(slf, port)
    }

    /// Service rate of every queue of every port (also the default for ports used later).
    fn set_all_queue_rates(slf: &Bound<'_, Self>, pps: &Bound<'_, PyAny>) -> PyResult<()> {
        let this = slf.get();
        let pps = check_rate(pps)?;
        let order = {
            let mut inner = this.lock();
            inner.default_pps = pps;
            for p in inner.ports.iter_mut().flatten() {
                p.queues.iter_mut().for_each(|q| q.set_rate(pps));
            }
            inner.order.clone()
        };
        for port in order {
            Self::arm_port(slf, port)?;
        }
        Ok(())
    }

    /// Current occupancy (packets) of queue `prio` of `port`.
    #[pyo3(signature = (port, prio = None))]
    fn depth(&self, port: &Bound<'_, PyAny>, prio: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let prio = prio.map(|p| self.check_prio(p)).transpose()?.unwrap_or(0);
        let port = self.check_port(port)?;
        Ok(self.lock().ports[port]
            .as_ref()
            .map_or(0, |p| p.queues[prio].items.len()))
    }

    /// Current occupancy of all queues of `port`.
    fn port_depth(&self, port: &Bound<'_, PyAny>) -> PyResult<i64> {
        let port = self.check_port(port)?;
        Ok(self.lock().ports[port].as_ref().map_or(0, |p| p.occupancy))
    }

    #[pyo3(signature = (port, prio = None))]
    fn queue_depth_limit(
        &self,
        port: &Bound<'_, PyAny>,
        prio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<i64> {
        let prio = prio.map(|p| self.check_prio(p)).transpose()?.unwrap_or(0);
        let port = self.check_port(port)?;
        let inner = self.lock();
        Ok(inner.ports[port]
            .as_ref()
            .map_or(inner.default_depth, |p| p.queues[prio].limit))
    }

    #[pyo3(signature = (port, prio = None))]
    fn queue_rate(
        &self,
        port: &Bound<'_, PyAny>,
        prio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<i64> {
        let prio = prio.map(|p| self.check_prio(p)).transpose()?.unwrap_or(0);
        let port = self.check_port(port)?;
        let inner = self.lock();
        Ok(inner.ports[port]
            .as_ref()
            .map_or(inner.default_pps, |p| p.queues[prio].pps))
    }

    /// Counters of `port` (a copy).
    fn stats(&self, port: &Bound<'_, PyAny>) -> PyResult<PortStats> {
        let port = self.check_port(port)?;
        Ok(self.lock().ports[port]
            .as_ref()
            .map_or_else(PortStats::default, |p| p.stats.clone()))
    }

    /// Queue `item` for `port`; False (and counted) when that queue is full.
    #[pyo3(signature = (port, item, prio = None))]
    fn enqueue(
        slf: &Bound<'_, Self>,
        port: &Bound<'_, PyAny>,
        item: &Bound<'_, PyAny>,
        prio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let this = slf.get();
        let item = item.downcast::<TMItem>().map_err(|_| {
            let name = item
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            PyTypeError::new_err(format!(
                "TrafficManager.enqueue expects a TMItem, got {name}"
            ))
        })?;
        let prio = prio.map(|p| this.check_prio(p)).transpose()?.unwrap_or(0);
        let port = this.check_port(port)?;
        Self::push(slf, port, item, prio)
    }

    /// The scheduled service of `port`: one packet out to the service callback, then re-arm.
    fn _serve(slf: &Bound<'_, Self>, port: usize) -> PyResult<()> {
        Self::serve_port(slf, port)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.sched)?;
        if let Some(s) = &self.engine_sched {
            visit.call(s)?;
        }
        if let Some(heap) = &self.realtime_heap {
            visit.call(heap)?;
        }
        let Ok(inner) = self.inner.try_lock() else {
            return Ok(());
        };
        match &inner.service {
            Some(Service::Py(s)) => visit.call(s)?,
            Some(Service::Walk(w, _)) => visit.call(w)?,
            None => {}
        }
        for p in inner.ports.iter().flatten() {
            for q in &p.queues {
                for (item, _) in &q.items {
                    match item {
                        Queued::Py(item) => visit.call(item)?,
                        Queued::Walk(item) => item.pkt.traverse(&visit)?,
                    }
                }
            }
            match &p.wake {
                Some(Wake::Engine(_)) => {}
                Some(Wake::Other(h)) => visit.call(h)?,
                None => {}
            }
        }
        Ok(())
    }

    /// No service, nothing queued, no wake-up pending (counters kept): serving a port
    /// afterwards finds it empty, a packet queued afterwards is served with "no service
    /// callback bound". Why: the service (a `V1Walk` holding this TM) and the queued packets
    /// are the cycles through a TM; its scheduler fields are fixed at creation.
    fn __clear__(&self) {
        let mut inner = match self.inner.try_lock() {
            Ok(inner) => inner,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let mut taken: Vec<Queued> = Vec::new();
        let mut wakes: Vec<Wake> = Vec::new();
        let service = inner.service.take();
        for p in inner.ports.iter_mut().flatten() {
            for q in &mut p.queues {
                taken.extend(q.items.drain(..).map(|(item, _)| item));
            }
            p.occupancy = 0;
            wakes.extend(p.wake.take());
        }
        drop(inner);
        for wake in &wakes {
            if let Wake::Engine(token) = wake {
                token.cancel();
            }
        }
        drop((service, taken, wakes));
    }
}
