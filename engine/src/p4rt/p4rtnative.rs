//! A compiled front end's Write or keyed Read answered in the engine, no Python run (issue 49,
//! item 7): on the front end's own runtime thread, with the GIL held only for the call.
//!
//! Why: a one-update Write the entry store applies (p4switch/p4runtime/fast_writes.py) went from
//! the runtime's thread to the front end's caller thread and back (`P4RuntimeServer.write_now`,
//! `RealtimeScheduler.try_now`, `P4RuntimeCore.write_wire`, `FastWriter.apply`), two thread
//! wake-ups and some Python around an engine call of a few µs: 3.3 context switches and 78 µs of
//! the server's CPU per Write where simple_switch_grpc's performance build takes 1.0 and 33.
//! Here the same steps are taken in the same order, reading the same Python objects:
//!
//! * the switch state is taken as `RealtimeScheduler.try_now` takes it (its loop running and not
//!   waiting for it; its `_state` lock free, else the engine loop's lend while that waits) and
//!   given back the same way, the loop woken if work was queued for it meanwhile. Nothing here
//!   schedules timers, so `try_now`'s look at the next due time has nothing to find;
//! * the core's checks are `P4RuntimeCore.write_wire`'s (`read_keyed_wire`'s for a Read): one-pass
//!   writes on, no saved config, a pipeline loaded, a primary with an election id, the
//!   FastWriter of the state; the store applies the request as `FastWriter.apply` has it do, and
//!   the tables it touched are marked `_pending` as there.
//!
//! Whatever is not so - the state busy, the core's digests not attached to this state yet (its
//! `state` property would attach them), no FastWriter yet, a request the store does not take -
//! answers None with nothing done, and the request goes on to the Python path as before, which
//! then decides it afresh. tests/p4runtime/server/test_front_native.py holds the answers and the
//! switch's state equal to that path's.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::p4rtwrite::TableWritePlan;

/// The switch's objects the engine's answers read (`P4RuntimeFront(native=...)`): the switch
/// loop's `RealtimeScheduler`, the server's `P4RuntimeCore`, the largest Write the store is
/// tried with (`STORE_WRITE_BYTES`) and the most updates it applies (`STORE_MAX_UPDATES`), and
/// `failed(exception)`, which logs a failure inside the store's apply and gives the status
/// (code, message, details) the Python path answers it with.
pub(crate) struct Native {
    sched: Py<PyAny>,
    core: Py<PyAny>,
    max_bytes: usize,
    max_updates: usize,
    failed: Py<PyAny>,
}

/// How the switch state was taken: the scheduler's lock, or the engine loop's lend.
enum Lent<'py> {
    Lock(Bound<'py, PyAny>),
    Engine(Bound<'py, PyAny>),
}

/// A Write's answer here: the response's bytes (an empty WriteResponse) or the status of a
/// failure in the store.
pub(crate) type WriteAnswer = Result<Vec<u8>, (i32, String, Vec<u8>)>;

fn truthy(obj: &Bound<'_, PyAny>, name: &Bound<'_, pyo3::types::PyString>) -> PyResult<bool> {
    obj.getattr(name)?.is_truthy()
}

impl Native {
    pub(crate) fn new(parts: &Bound<'_, PyAny>) -> PyResult<Native> {
        let (sched, core, max_bytes, max_updates, failed): (
            Py<PyAny>,
            Py<PyAny>,
            usize,
            usize,
            Py<PyAny>,
        ) = parts.extract()?;
        Ok(Native {
            sched,
            core,
            max_bytes,
            max_updates,
            failed,
        })
    }

    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Native {
        Native {
            sched: self.sched.clone_ref(py),
            core: self.core.clone_ref(py),
            max_bytes: self.max_bytes,
            max_updates: self.max_updates,
            failed: self.failed.clone_ref(py),
        }
    }

    pub(crate) fn traverse(&self, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.sched)?;
        visit.call(&self.core)?;
        visit.call(&self.failed)
    }

    /// `RealtimeScheduler.try_now`'s way in: the state, or None (the loop has it).
    fn lend<'py>(&self, py: Python<'py>) -> PyResult<Option<Lent<'py>>> {
        let sched = self.sched.bind(py);
        if !truthy(sched, intern!(py, "_running"))?
            || truthy(sched, intern!(py, "_loop_wants_state"))?
        {
            return Ok(None);
        }
        let lock = sched.getattr(intern!(py, "_state"))?;
        if lock
            .call_method1(intern!(py, "acquire"), (false,))?
            .is_truthy()?
        {
            return Ok(Some(Lent::Lock(lock)));
        }
        if !truthy(sched, intern!(py, "_in_timers"))? {
            return Ok(None);
        }
        let engine = sched.getattr(intern!(py, "_engine_loop"))?;
        if engine.is_none() || !engine.call_method0(intern!(py, "try_lend"))?.is_truthy()? {
            return Ok(None);
        }
        Ok(Some(Lent::Engine(engine)))
    }

    /// `try_now`'s way out: the state back to its owner, the loop woken if work was queued.
    fn give_back(&self, py: Python<'_>, lent: Lent<'_>) -> PyResult<()> {
        match lent {
            Lent::Lock(lock) => lock.call_method0(intern!(py, "release"))?,
            Lent::Engine(engine) => engine.call_method0(intern!(py, "end_lend"))?,
        };
        let sched = self.sched.bind(py);
        if truthy(sched, intern!(py, "_soon"))? {
            sched.call_method0(intern!(py, "_wake"))?;
        }
        Ok(())
    }

    /// `f` with the switch state lent (None: not lent, `f` not run).
    fn lent<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce() -> PyResult<Option<T>>,
    ) -> PyResult<Option<T>> {
        let Some(lent) = self.lend(py)? else {
            return Ok(None);
        };
        let out = f();
        self.give_back(py, lent)?;
        out
    }

    /// The core's state and FastWriter where `write_wire`/`read_keyed_wire` would use them
    /// without building anything first; None: the Python path takes the call.
    fn writer<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let core = self.core.bind(py);
        if !truthy(core, intern!(py, "fast_writes"))?
            || !core.getattr(intern!(py, "_saved"))?.is_none()
        {
            return Ok(None);
        }
        let st = core
            .getattr(intern!(py, "device"))?
            .getattr(intern!(py, "state"))?;
        // `core.state` would attach the core to a new state first: the Python path does that
        if st.is_none() || !core.getattr(intern!(py, "_attached"))?.is(&st) {
            return Ok(None);
        }
        let fast = core.getattr(intern!(py, "_fast"))?;
        if fast.is_none() || !fast.getattr(intern!(py, "state"))?.is(&st) {
            return Ok(None);
        }
        Ok(Some(fast))
    }

    /// A Write's bytes applied in the entry store, as `P4RuntimeServer.write_now` answers them
    /// when it is lent the state; None: not answered here, nothing done.
    pub(crate) fn write(&self, py: Python<'_>, body: &[u8]) -> Option<WriteAnswer> {
        if body.len() > self.max_bytes {
            return None;
        }
        // Some once the store was asked: the Write's answer whatever happens after
        let mut answer: Option<Result<(), PyErr>> = None;
        let _ = self.lent(py, || {
            let Some(fast) = self.writer(py)? else {
                return Ok(None);
            };
            let core = self.core.bind(py);
            let primary = core
                .getattr(intern!(py, "arbitration"))?
                .getattr(intern!(py, "primary"))?;
            if primary.is_none() {
                return Ok(None);
            }
            let election = primary.getattr(intern!(py, "election_id"))?;
            if election.is_none() {
                return Ok(None);
            }
            let stored = fast.getattr(intern!(py, "stored"))?;
            let stored = stored.downcast::<PyDict>()?;
            if stored.is_empty() {
                return Ok(None);
            }
            let election: u128 = election.extract()?;
            let device_id: u64 = core.getattr(intern!(py, "device_id"))?.extract()?;
            let wire = fast.getattr(intern!(py, "wire"))?;
            let wire = wire.downcast::<TableWritePlan>()?;
            let mut plan = wire.try_borrow_mut()?;
            let touched = plan.apply(py, body, device_id, election, self.max_updates);
            drop(plan);
            answer = match touched {
                Ok(None) => None,
                Ok(Some(touched)) => Some(touched.into_iter().try_for_each(|tid| {
                    if let Some(table) = stored.get_item(tid)? {
                        table.setattr(intern!(py, "_pending"), true)?;
                    }
                    Ok(())
                })),
                Err(e) => Some(Err(e)),
            };
            Ok(Some(()))
        });
        match answer? {
            Ok(()) => Some(Ok(Vec::new())), // an empty WriteResponse
            Err(e) => Some(self.failure(py, e)),
        }
    }

    /// A Read's bytes answered by the entry store, as `P4RuntimeServer.read_now` answers them
    /// when the store does (one ReadResponse's bytes); None: not answered here, nothing done.
    pub(crate) fn read_keyed(&self, py: Python<'_>, body: &[u8]) -> Option<Vec<u8>> {
        let out = self.lent(py, || {
            let Some(fast) = self.writer(py)? else {
                return Ok(None);
            };
            if !truthy(&fast, intern!(py, "reads"))? {
                return Ok(None);
            }
            let device_id: u64 = self
                .core
                .bind(py)
                .getattr(intern!(py, "device_id"))?
                .extract()?;
            let wire = fast.getattr(intern!(py, "wire"))?;
            let wire = wire.downcast::<TableWritePlan>()?;
            let answer = wire.try_borrow()?.read_keyed(py, body, device_id);
            Ok(answer.map(|b: Bound<'_, PyBytes>| b.as_bytes().to_vec()))
        });
        out.ok().flatten()
    }

    /// The status of a failure inside the store's apply, logged as the Python path logs it.
    fn failure(&self, py: Python<'_>, e: PyErr) -> WriteAnswer {
        let status = self
            .failed
            .bind(py)
            .call1((e.value(py),))
            .and_then(|s| s.extract::<(i32, String, Vec<u8>)>());
        Err(status.unwrap_or_else(|e2| (13, format!("internal error: {e2}"), Vec::new())))
    }
}
