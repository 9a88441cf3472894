//! A control channel in virtual time: calls made on one connection arrive after a latency, in
//! the order they were made (topo/control_latency.py `ControlLatency`).
//!
//! Why here: in a simulation every report reaches its switch's agent through such a channel
//! (the packet-in, then the agent's queue call back), and the channel's step per call, a
//! Python function and the scheduler's call, was a few percent of a run. The latency's
//! draw stays in Python when it has a spread (its random numbers are Python's); a fixed
//! latency is all here.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{PyTraverseError, PyVisit};

use crate::sched::{Call, VirtualScheduler};

/// When the previous call on a connection arrives: a call made at `now` that takes `draw`
/// arrives at `max(now + draw, previous)` (a late call holds back the ones behind it).
#[pyclass(module = "hbh_engine", frozen)]
#[derive(Default)]
pub struct FifoDelay {
    last_ns: AtomicI64,
}

impl FifoDelay {
    fn take(&self, now_ns: i64, draw_ns: i64) -> i64 {
        let arrive = (now_ns + draw_ns).max(self.last_ns.load(Relaxed));
        self.last_ns.store(arrive, Relaxed);
        arrive - now_ns
    }
}

#[pymethods]
impl FifoDelay {
    #[new]
    fn new() -> Self {
        FifoDelay::default()
    }

    /// The delay of a call made at `now_ns` that takes `draw_ns` on its own.
    fn delay(&self, now_ns: i64, draw_ns: i64) -> i64 {
        self.take(now_ns, draw_ns)
    }
}

/// `calls(*args)`: `target(*args)` after `median_ns` on the connection `fifo`; with `behind`,
/// the target is then scheduled once more at delay 0 (behind whatever is due at that time, as
/// an agent's `on_packet_in` does with `handle_report`). Before `connect`, calls are dropped
/// (a packet-in before its agent exists).
#[pyclass(module = "hbh_engine", frozen)]
pub struct DelayedCalls {
    sched: Py<VirtualScheduler>,
    call_later: PyObject,
    fifo: Py<FifoDelay>,
    median_ns: i64,
    behind: bool,
    target: std::sync::Mutex<Option<PyObject>>,
}

#[pymethods]
impl DelayedCalls {
    #[new]
    #[pyo3(signature = (sched, fifo, median_ns, target=None, behind=false))]
    fn new(
        sched: Bound<'_, VirtualScheduler>,
        fifo: Py<FifoDelay>,
        median_ns: i64,
        target: Option<PyObject>,
        behind: bool,
    ) -> PyResult<Self> {
        let call_later = sched.getattr("call_later")?.unbind();
        Ok(DelayedCalls {
            sched: sched.unbind(),
            call_later,
            fifo,
            median_ns,
            behind,
            target: std::sync::Mutex::new(target),
        })
    }

    /// The callable the calls go to from now on.
    fn connect(&self, target: PyObject) {
        *self.target.lock().unwrap_or_else(|p| p.into_inner()) = Some(target);
    }

    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: Bound<'_, PyTuple>) -> PyResult<()> {
        let Some(target) = self
            .target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|t| t.clone_ref(py))
        else {
            return Ok(());
        };
        let sched = self.sched.get();
        let now = sched.now();
        let at = now + self.fifo.get().take(now, self.median_ns);
        if self.behind {
            let mut inner: Vec<PyObject> = Vec::with_capacity(args.len() + 2);
            inner.push(0i64.into_pyobject(py)?.into_any().unbind());
            inner.push(target);
            inner.extend(args.iter().map(|a| a.unbind()));
            let inner = PyTuple::new(py, inner)?.unbind();
            sched.schedule_call(at, Call::Py(self.call_later.clone_ref(py), inner));
        } else {
            sched.schedule_call(at, Call::Py(target, args.unbind()));
        }
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.sched)?;
        visit.call(&self.call_later)?;
        visit.call(&self.fifo)?;
        if let Ok(t) = self.target.try_lock() {
            if let Some(t) = t.as_ref() {
                visit.call(t)?;
            }
        }
        Ok(())
    }

    /// Disconnected (calls dropped again, as before `connect`). Why: the target (an agent's
    /// method) leads back to the network that holds this channel; the other fields are fixed
    /// at creation and hold only older objects.
    fn __clear__(&self) {
        let target = match self.target.try_lock() {
            Ok(mut t) => t.take(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        drop(target);
    }
}
