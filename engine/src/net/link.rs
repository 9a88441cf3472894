//! Links: how long a frame occupies a wire, and the in-memory full-duplex link of the simulator
//! (runtime/link.py documents the model: wire bytes, rounding, delivery order).
//!
//! Why here: every packet hop is one `send` and one delivery; the delivery is scheduled on the
//! engine's own heap without a handle object when the scheduler is the engine's.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3::{intern, wrap_pyfunction, PyTraverseError, PyVisit};

use crate::frame::Frame;
use crate::sched::{engine_of, now_of, Call, VirtualScheduler, Work};

/// A link direction's wire is free (`Call::Engine`): its waiting frames' turn.
static NIC_FREE: Work = Work {
    run: |link, dir| InMemoryLink::nic_free(link.downcast::<InMemoryLink>()?, dir),
    name: |_, _| "InMemoryLink wire free".to_string(),
};

const NS_PER_S: i128 = 1_000_000_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The lock for the collector's clear: None while another thread holds it (then nothing is
/// cleared: waiting could deadlock on the GIL the clear holds).
fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Bits a frame of `nbytes` occupies on the wire (padding to `min_frame_bytes`, plus overhead).
#[pyfunction]
pub fn wire_bits(nbytes: i64, min_frame_bytes: i64, overhead_bytes: i64) -> i64 {
    8 * (nbytes.max(min_frame_bytes) + overhead_bytes)
}

/// Serialization time of a frame, rounded up to whole ns (0 on an infinite link).
#[pyfunction]
pub fn wire_time_ns(
    nbytes: i64,
    bitrate_bps: i64,
    min_frame_bytes: i64,
    overhead_bytes: i64,
) -> i64 {
    if bitrate_bps == 0 {
        return 0;
    }
    let bits = wire_bits(nbytes, min_frame_bytes, overhead_bytes) as i128;
    -((-bits * NS_PER_S).div_euclid(bitrate_bps as i128)) as i64
}

/// The numbers of a `runtime.link.LinkModel` the engine works with (read once per change).
#[derive(Clone, Copy, Default)]
pub(crate) struct Model {
    pub bitrate_bps: i64,
    pub delay_ns: i64,
    pub overhead_bytes: i64,
    pub min_frame_bytes: i64,
}

impl Model {
    fn read(model: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = model.py();
        Ok(Model {
            bitrate_bps: model.getattr(intern!(py, "bitrate_bps"))?.extract()?,
            delay_ns: model.getattr(intern!(py, "delay_ns"))?.extract()?,
            overhead_bytes: model.getattr(intern!(py, "overhead_bytes"))?.extract()?,
            min_frame_bytes: model.getattr(intern!(py, "min_frame_bytes"))?.extract()?,
        })
    }
}

#[derive(Clone, Default)]
pub(crate) struct TxState {
    pub model: Model,
    pub free_at_ns: i64,
    rem: i128, // (bitrate * true_end - free_at_ns * bitrate), in [0, bitrate)
}

impl TxState {
    pub(crate) fn new(model: Model) -> Self {
        TxState {
            model,
            ..TxState::default()
        }
    }

    /// Start a frame at `max(now, free)`: `(start_ns, end_ns)` of its serialization.
    pub(crate) fn transmit(&mut self, now_ns: i64, nbytes: i64) -> (i64, i64) {
        let m = self.model;
        let bits = wire_bits(nbytes, m.min_frame_bytes, m.overhead_bytes) as i128;
        let (start, rem) = if now_ns > self.free_at_ns {
            (now_ns, 0)
        } else {
            (self.free_at_ns, self.rem)
        };
        let rate = m.bitrate_bps as i128;
        if rate == 0 {
            (self.free_at_ns, self.rem) = (start, 0);
            return (start, start);
        }
        let total = bits * NS_PER_S - rem; // ns*rate still to go, counted from the rounded-up start
        let end = start + (-((-total).div_euclid(rate))) as i64;
        (self.free_at_ns, self.rem) = (end, (end - start) as i128 * rate - total);
        (start, end)
    }
}

/// One direction of a link: frames are serialized back to back, in order.
///
/// Keeps the exact end of the current transmission as `free_at_ns` plus a remainder in units of
/// 1/bitrate ns, so no rounding accumulates while the transmitter stays busy.
#[pyclass(module = "hbh_engine", frozen)]
pub struct Transmitter {
    model_obj: Mutex<PyObject>,
    state: Mutex<TxState>,
}

impl Transmitter {
    fn create(model: &Bound<'_, PyAny>) -> PyResult<Self> {
        let state = TxState {
            model: Model::read(model)?,
            ..TxState::default()
        };
        Ok(Transmitter {
            model_obj: Mutex::new(model.clone().unbind()),
            state: Mutex::new(state),
        })
    }
}

#[pymethods]
impl Transmitter {
    #[new]
    fn new(model: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::create(model)
    }

    /// The link model in force (setting it changes the rate from the next frame on).
    #[getter]
    fn model(&self, py: Python<'_>) -> PyObject {
        lock(&self.model_obj).clone_ref(py)
    }

    #[setter]
    fn set_model(&self, model: &Bound<'_, PyAny>) -> PyResult<()> {
        let numbers = Model::read(model)?;
        lock(&self.state).model = numbers;
        *lock(&self.model_obj) = model.clone().unbind();
        Ok(())
    }

    #[getter]
    fn free_at_ns(&self) -> i64 {
        lock(&self.state).free_at_ns
    }

    #[setter]
    fn set_free_at_ns(&self, value: i64) {
        let mut s = lock(&self.state);
        (s.free_at_ns, s.rem) = (value, 0);
    }

    /// Start a frame at `max(now, free)`; returns `(start_ns, end_ns)` of its serialization.
    fn transmit(&self, now_ns: i64, nbytes: i64) -> PyResult<(i64, i64)> {
        if nbytes < 0 {
            return Err(PyValueError::new_err(format!(
                "frame length must be an int >= 0, got {nbytes}"
            )));
        }
        Ok(lock(&self.state).transmit(now_ns, nbytes))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self.model_obj.try_lock() {
            Ok(m) => visit.call(&*m),
            Err(_) => Ok(()),
        }
    }

    /// The model object becomes None (the numbers read from it stay: frames still serialize).
    /// Why: a model is any Python object, which may hold the link.
    fn __clear__(&self) {
        Python::with_gil(|py| {
            let old = try_lock(&self.model_obj).map(|mut m| std::mem::replace(&mut *m, py.None()));
            drop(old);
        })
    }
}

/// Frames per direction: sent into the link, delivered out of it, lost by the loss hook.
#[pyclass(module = "hbh_engine", eq, get_all, set_all)]
#[derive(Clone, Default, PartialEq)]
pub struct LinkStats {
    sent: i64,
    delivered: i64,
    lost: i64,
    sent_bytes: i64,
}

#[pymethods]
impl LinkStats {
    #[new]
    #[pyo3(signature = (sent = 0, delivered = 0, lost = 0, sent_bytes = 0))]
    fn new(sent: i64, delivered: i64, lost: i64, sent_bytes: i64) -> Self {
        LinkStats {
            sent,
            delivered,
            lost,
            sent_bytes,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "LinkStats(sent={}, delivered={}, lost={}, sent_bytes={})",
            self.sent, self.delivered, self.lost, self.sent_bytes
        )
    }
}

/// A delivery: count it, then hand the frame to the far end.
#[pyfunction]
fn link_deliver(
    target: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    stats: &Bound<'_, LinkStats>,
) -> PyResult<()> {
    stats.borrow_mut().delivered += 1;
    match data.downcast::<PyBytes>() {
        Ok(b) => deliver_to(target, Frame::Py(b.clone().unbind())),
        Err(_) => target
            .call_method1(intern!(target.py(), "receive"), (data,))
            .map(|_| ()),
    }
}

/// `link_deliver`, as the engine's scheduler runs it (`sched::Call::Deliver`): no argument tuple,
/// no Python call.
fn deliver(target: &Bound<'_, PyAny>, data: Frame, stats: &Bound<'_, PyAny>) -> PyResult<()> {
    stats.downcast::<LinkStats>()?.borrow_mut().delivered += 1;
    deliver_to(target, data)
}

/// A far end that takes a frame without a Python call: the frame back when `target` is not
/// of its kind.
pub(crate) type FastEnd = fn(&Bound<'_, PyAny>, Frame) -> Result<PyResult<()>, Frame>;

/// The engine's far ends, tried in order (`linkport::fast_end`, `hostrecv::fast_end`): set by
/// lib.rs when the module loads, since both are above this module.
pub(crate) static FAST_ENDS: OnceLock<[FastEnd; 2]> = OnceLock::new();

/// The far end's `receive(frame)`: the engine's ports and hosts without a Python call.
fn deliver_to(target: &Bound<'_, PyAny>, mut data: Frame) -> PyResult<()> {
    let py = target.py();
    for end in FAST_ENDS.get().into_iter().flatten() {
        match end(target, data) {
            Ok(done) => return done,
            Err(back) => data = back,
        }
    }
    target
        .call_method1(intern!(py, "receive"), (data.into_py(py),))
        .map(|_| ())
}

const DIRECTIONS: [&str; 2] = ["a->b", "b->a"];

/// A frame handed to a direction while its wire was busy: it waits in the direction's queue.
/// The loss and delay hooks were asked at hand-over (their draws keep the order of the sends).
struct Waiting {
    data: Frame,
    nbytes: i64,
    lost: bool,
    /// Its propagation delay, fixed at hand-over (the link's delay then plus the delay hook's;
    /// netem's delay too is set when a packet enters its queue).
    delay_ns: i64,
    /// Its delivery's place among the scheduler's events, taken at hand-over (the engine's
    /// scheduler; None: lost, or another scheduler): the same order as had it been scheduled then.
    seq: Option<u64>,
}

/// What waits for one direction's wire: a FIFO (the qdisc in front of a NIC, or a port's frame
/// the TM did not pace), each frame serialized at the rate in force when it reaches the wire.
///
/// Why: a host hands its frames over faster than its link may carry them (a sender above its
/// link's rate, a TCP window); timed at hand-over, the frames waiting when a `link_rate` event
/// changed the rate kept the old one (issue 46: a host link carried its old rate for 1000 frames
/// after a fall). A frame on the wire finishes as it started; what waits is re-timed
/// (`InMemoryLink::retime`). The queue has no bound of its own: a host's senders refuse a data
/// frame while `backlog_ns` exceeds `HOST_TX_QUEUE` frames (topo/simnet.py, host.rs `put`).
#[derive(Default)]
struct Nic {
    queue: VecDeque<Waiting>,
    queued_bytes: i64,
    /// The transmitter as it will be once every waiting frame is serialized at the current
    /// rate (`backlog_ns`); the wire's own state when nothing waits.
    tail: TxState,
    /// A wire-free call (`nic_free`) is scheduled (always, while something waits).
    armed: bool,
}

/// A full-duplex link joining two endpoints in one process (virtual-time binding).
///
/// `send(from_end, frame)` serializes the frame on that direction's transmitter and calls
/// `other_end.receive(frame)` at end of serialization + delay. Deliveries of one direction happen
/// in sending order. `loss(frame, direction)`, if set, returns True to lose a frame in transit (it
/// still occupies the wire); direction is `"a->b"` or `"b->a"`. `extra_delay(frame, direction)`,
/// if set, returns ns added to that frame's propagation delay (a later frame may then overtake it).
#[pyclass(module = "hbh_engine", frozen, subclass)]
pub struct InMemoryLink {
    sched: PyObject,
    /// The engine's scheduler, and a lane of it per direction (deliveries come due in order).
    engine_sched: Option<(Py<VirtualScheduler>, [u32; 2])>,
    #[pyo3(get)]
    a_end: PyObject,
    #[pyo3(get)]
    b_end: PyObject,
    loss: Mutex<Option<PyObject>>,
    extra_delay: Mutex<Option<PyObject>>,
    tx: [Py<Transmitter>; 2],
    nic: [Mutex<Nic>; 2],
    link_stats: [Py<LinkStats>; 2],
    #[pyo3(get)]
    stats: Py<PyDict>,
    deliver: PyObject,
}

impl InMemoryLink {
    fn direction(&self, from_end: &Bound<'_, PyAny>) -> PyResult<usize> {
        if from_end.is(&self.a_end) {
            Ok(0)
        } else if from_end.is(&self.b_end) {
            Ok(1)
        } else {
            Err(PyValueError::new_err(format!(
                "InMemoryLink.send: {} is not an end of this link",
                from_end.repr()?
            )))
        }
    }

    /// The numbers of the model the direction from `from_end` sends with.
    pub(crate) fn model_numbers(&self, from_end: &Bound<'_, PyAny>) -> PyResult<Model> {
        Ok(lock(&self.tx[self.direction(from_end)?].get().state).model)
    }

    fn now(&self, py: Python<'_>) -> PyResult<i64> {
        match &self.engine_sched {
            Some((s, _)) => Ok(s.get().now()),
            None => now_of(py, &None, &self.sched),
        }
    }

    /// `send` for a frame the engine holds (an owned buffer goes on to the far end as it is):
    /// onto the wire if it is free and nothing waits, else into the direction's queue (`Nic`).
    /// Returns ns until the frames handed to this side so far are all serialized.
    pub(crate) fn transmit(
        slf: &Bound<'_, Self>,
        from_end: &Bound<'_, PyAny>,
        mut data: Frame,
    ) -> PyResult<i64> {
        let py = from_end.py();
        let me = slf.get();
        let dir = me.direction(from_end)?;
        let nbytes = data.bytes(py).len() as i64;
        let now = me.now(py)?;
        let stats = me.link_stats[dir].bind(py);
        {
            let mut s = stats.borrow_mut();
            s.sent += 1;
            s.sent_bytes += nbytes;
        }
        let lost = match me.loss(py) {
            Some(hook) => hook
                .bind(py)
                .call1((data.as_py(py), DIRECTIONS[dir]))?
                .is_truthy()?,
            None => false,
        };
        let extra_ns: i64 = match (lost, me.extra_delay(py)) {
            (false, Some(hook)) => hook
                .bind(py)
                .call1((data.as_py(py), DIRECTIONS[dir]))?
                .extract()?,
            _ => 0,
        };
        if lost {
            stats.borrow_mut().lost += 1;
        }
        let mut nic = lock(&me.nic[dir]);
        let mut tx = lock(&me.tx[dir].get().state);
        if nic.queue.is_empty() && tx.free_at_ns <= now {
            let end = tx.transmit(now, nbytes).1;
            nic.tail = tx.clone();
            let delay = tx.model.delay_ns;
            drop((tx, nic));
            if !lost {
                me.schedule_delivery(py, dir, end + delay + extra_ns, data, None)?;
            }
            return Ok(end - now);
        }
        let end = nic.tail.transmit(now, nbytes).1;
        let delay_ns = tx.model.delay_ns + extra_ns;
        let seq = match (&me.engine_sched, lost) {
            (Some((s, _)), false) => Some(s.get().reserve_seq()),
            _ => None,
        };
        nic.queue.push_back(Waiting {
            data,
            nbytes,
            lost,
            delay_ns,
            seq,
        });
        nic.queued_bytes += nbytes;
        let arm = !nic.armed;
        nic.armed = true;
        let free = tx.free_at_ns;
        drop((tx, nic));
        if arm {
            Self::arm_free(slf, dir, free)?;
        }
        Ok(end - now)
    }

    /// The frame's delivery to the far end at `when` (in the direction's lane, at `seq` if given).
    fn schedule_delivery(
        &self,
        py: Python<'_>,
        dir: usize,
        when: i64,
        data: Frame,
        seq: Option<u64>,
    ) -> PyResult<()> {
        let stats = self.link_stats[dir].bind(py);
        let target = if dir == 0 { &self.b_end } else { &self.a_end };
        match &self.engine_sched {
            Some((s, lanes)) => {
                let call = Call::Deliver(
                    deliver,
                    target.clone_ref(py),
                    data,
                    stats.clone().into_any().unbind(),
                );
                match seq {
                    Some(seq) => s.get().schedule_lane_seq(lanes[dir], when, seq, call),
                    None => s.get().schedule_lane(lanes[dir], when, call),
                }
            }
            None => {
                let all = [
                    when.into_pyobject(py)?.into_any(),
                    self.deliver.bind(py).clone(),
                    target.bind(py).clone(),
                    data.into_py(py).into_bound(py).into_any(),
                    stats.clone().into_any(),
                ];
                self.sched
                    .bind(py)
                    .call_method1(intern!(py, "call_at"), PyTuple::new(py, all)?)?;
            }
        }
        Ok(())
    }

    /// `nic_free` of direction `dir` at `when` (the end of the frame on the wire).
    fn arm_free(slf: &Bound<'_, Self>, dir: usize, when: i64) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        match &me.engine_sched {
            Some((s, _)) => s.get().schedule_call(
                when,
                Call::Engine(&NIC_FREE, slf.clone().into_any().unbind(), dir),
            ),
            None => {
                let f = wrap_pyfunction!(link_nic_free, py)?;
                me.sched
                    .bind(py)
                    .call_method1(intern!(py, "call_at"), (when, f, slf, dir))?;
            }
        }
        Ok(())
    }

    /// Direction `dir`'s wire is free: the frames due on it now go on, each at the rate in
    /// force (`NIC_FREE`); the next wire-free call is armed if any frame still waits.
    pub(crate) fn nic_free(slf: &Bound<'_, Self>, dir: usize) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let now = me.now(py)?;
        let mut started = Vec::new();
        let rearm = {
            let mut nic = lock(&me.nic[dir]);
            let mut tx = lock(&me.tx[dir].get().state);
            while tx.free_at_ns <= now {
                let Some(w) = nic.queue.pop_front() else {
                    break;
                };
                nic.queued_bytes -= w.nbytes;
                let end = tx.transmit(now, w.nbytes).1;
                if !w.lost {
                    started.push((end + w.delay_ns, w.data, w.seq));
                }
            }
            if nic.queue.is_empty() {
                nic.armed = false;
                nic.tail = tx.clone();
                None
            } else {
                Some(tx.free_at_ns)
            }
        };
        for (when, data, seq) in started {
            me.schedule_delivery(py, dir, when, data, seq)?;
        }
        match rearm {
            Some(when) => Self::arm_free(slf, dir, when),
            None => Ok(()),
        }
    }

    /// The waiting frames of every direction re-timed at the model in force: each starts where
    /// the one before ends, the first where the frame on the wire ends (it finishes as it was).
    fn retime(&self) {
        for (nic, tx) in self.nic.iter().zip(&self.tx) {
            let mut nic = lock(nic);
            let tx = lock(&tx.get().state);
            let mut tail = tx.clone();
            for w in &nic.queue {
                tail.transmit(tx.free_at_ns, w.nbytes);
            }
            nic.tail = tail;
        }
    }
}

/// `InMemoryLink::nic_free` for a scheduler other than the engine's.
#[pyfunction]
fn link_nic_free(link: &Bound<'_, InMemoryLink>, dir: usize) -> PyResult<()> {
    InMemoryLink::nic_free(link, dir)
}

#[pymethods]
impl InMemoryLink {
    #[new]
    #[pyo3(signature = (sched, a_end, b_end, model, loss = None, extra_delay = None))]
    fn new(
        py: Python<'_>,
        sched: &Bound<'_, PyAny>,
        a_end: PyObject,
        b_end: PyObject,
        model: &Bound<'_, PyAny>,
        loss: Option<PyObject>,
        extra_delay: Option<PyObject>,
    ) -> PyResult<Self> {
        let tx = [
            Py::new(py, Transmitter::create(model)?)?,
            Py::new(py, Transmitter::create(model)?)?,
        ];
        let link_stats = [
            Py::new(py, LinkStats::default())?,
            Py::new(py, LinkStats::default())?,
        ];
        let stats = PyDict::new(py);
        for (name, s) in DIRECTIONS.iter().zip(&link_stats) {
            stats.set_item(name, s)?;
        }
        let nic = || {
            Ok::<_, PyErr>(Mutex::new(Nic {
                tail: TxState::new(Model::read(model)?),
                ..Nic::default()
            }))
        };
        Ok(InMemoryLink {
            sched: sched.clone().unbind(),
            engine_sched: engine_of(sched).map(|s| {
                let lanes = [s.get().new_lane(), s.get().new_lane()];
                (s, lanes)
            }),
            a_end,
            b_end,
            loss: Mutex::new(loss),
            extra_delay: Mutex::new(extra_delay),
            tx,
            nic: [nic()?, nic()?],
            link_stats,
            stats: stats.unbind(),
            deliver: wrap_pyfunction!(link_deliver, py)?.into_any().unbind(),
        })
    }

    /// The link model in force (both directions).
    #[getter]
    fn model(&self, py: Python<'_>) -> PyObject {
        self.tx[0].get().model(py)
    }

    /// Change the model of both directions from now on: a frame on the wire finishes as it
    /// was, the frames waiting for the wire are serialized at the new rate.
    #[setter]
    fn set_model(&self, model: &Bound<'_, PyAny>) -> PyResult<()> {
        self.tx
            .iter()
            .try_for_each(|tx| tx.get().set_model(model))?;
        self.retime();
        Ok(())
    }

    #[getter]
    fn loss(&self, py: Python<'_>) -> Option<PyObject> {
        lock(&self.loss).as_ref().map(|l| l.clone_ref(py))
    }

    #[setter]
    fn set_loss(&self, loss: Option<PyObject>) {
        *lock(&self.loss) = loss;
    }

    #[getter]
    fn extra_delay(&self, py: Python<'_>) -> Option<PyObject> {
        lock(&self.extra_delay).as_ref().map(|h| h.clone_ref(py))
    }

    #[setter]
    fn set_extra_delay(&self, hook: Option<PyObject>) {
        *lock(&self.extra_delay) = hook;
    }

    fn direction_from(&self, from_end: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        Ok(DIRECTIONS[self.direction(from_end)?])
    }

    /// Put `frame` on the wire from `from_end`; returns ns until this side's transmitter is
    /// free again (what a TM service callback returns as wire time).
    pub(crate) fn send(
        slf: &Bound<'_, Self>,
        from_end: &Bound<'_, PyAny>,
        frame: &Bound<'_, PyAny>,
    ) -> PyResult<i64> {
        Self::transmit(slf, from_end, Frame::from_any(frame)?)
    }

    /// How long the frames already handed to this side still occupy its transmitter (the
    /// waiting ones at the rate in force).
    pub(crate) fn backlog_ns(&self, from_end: &Bound<'_, PyAny>, now_ns: i64) -> PyResult<i64> {
        let dir = self.direction(from_end)?;
        Ok((lock(&self.nic[dir]).tail.free_at_ns - now_ns).max(0))
    }

    /// `(frames, bytes)` handed to this side that wait for its wire (not started yet).
    fn waiting(&self, from_end: &Bound<'_, PyAny>) -> PyResult<(usize, i64)> {
        let nic = lock(&self.nic[self.direction(from_end)?]);
        Ok((nic.queue.len(), nic.queued_bytes))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.sched)?;
        if let Some((s, _)) = &self.engine_sched {
            visit.call(s)?;
        }
        for (tx, stats) in self.tx.iter().zip(&self.link_stats) {
            visit.call(tx)?;
            visit.call(stats)?;
        }
        for nic in &self.nic {
            if let Ok(nic) = nic.try_lock() {
                for w in &nic.queue {
                    w.data.traverse(&visit)?;
                }
            }
        }
        visit.call(&self.deliver)?;
        visit.call(&self.a_end)?;
        visit.call(&self.b_end)?;
        for hook in [&self.loss, &self.extra_delay] {
            if let Ok(hook) = hook.try_lock() {
                if let Some(h) = hook.as_ref() {
                    visit.call(h)?;
                }
            }
        }
        visit.call(&self.stats)
    }

    /// No loss or delay hook any more (frames sent afterwards go through untouched). Why: a
    /// hook (a method of the network's loss model) leads back to the network holding the link;
    /// the other fields are fixed at creation and hold only older objects.
    fn __clear__(&self) {
        let loss = try_lock(&self.loss).and_then(|mut h| h.take());
        let delay = try_lock(&self.extra_delay).and_then(|mut h| h.take());
        drop((loss, delay));
    }
}

/// Sends `frame` from `end` on `link`: the engine's in-memory link without a Python call, any
/// other link (a netns uplink, a test's stand-in) through its Python `send`.
pub(crate) fn send_frame(
    link: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    frame: Vec<u8>,
) -> PyResult<()> {
    let py = link.py();
    match link.downcast::<InMemoryLink>() {
        Ok(l) => InMemoryLink::transmit(l, end, Frame::Owned(frame)).map(|_| ()),
        Err(_) => link
            .call_method1(intern!(py, "send"), (end, PyBytes::new(py, &frame)))
            .map(|_| ()),
    }
}
