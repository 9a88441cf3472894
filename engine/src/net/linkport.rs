//! A switch port on an in-memory link (the simulator's binding): runtime/ports.py's `LinkPort`.
//!
//! Why here: every switch hop of the simulator went through two Python calls of this port, the
//! link's delivery into `receive` and the walk's frame out through `send`, each a Python frame
//! around one engine call. With the port in the engine, a delivery reaches the switch's walk
//! and the walk reaches the link without a Python frame. What is done per frame is the same:
//! count it, then hand it on (`on_receive(number, frame)`, `link.send(port, frame)`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::{intern, PyClass, PyTraverseError, PyVisit};

use crate::frame::Frame;
use crate::link::InMemoryLink;

/// The switch's walk as a port's `on_receive`: its owner when `on_receive` is the walk's bound
/// `receive`, and that `receive` (ingress port, frame) called without Python.
pub(crate) struct WalkReceive {
    pub(crate) owner: fn(&Bound<'_, PyAny>) -> Option<PyObject>,
    pub(crate) receive: fn(&Bound<'_, PyAny>, u64, Frame) -> PyResult<()>,
}

/// v1walk's `PORT_RECEIVE`, set by lib.rs when the module loads (the walk is above this module).
pub(crate) static WALK_RECEIVE: OnceLock<&'static WalkReceive> = OnceLock::new();

/// `link::FastEnd` for a `LinkPort`: its `deliver`.
pub(crate) fn fast_end(target: &Bound<'_, PyAny>, frame: Frame) -> Result<PyResult<()>, Frame> {
    match target.downcast::<LinkPort>() {
        Ok(port) => Ok(LinkPort::deliver(port, frame)),
        Err(_) => Err(frame),
    }
}

/// What the port is wired to; each engine object beside the Python one it was read from.
#[derive(Default)]
struct Wiring {
    on_receive: Option<PyObject>,
    /// `on_receive` is the walk's bound `receive`: the walk, called without Python.
    walk: Option<(PyObject, &'static WalkReceive)>,
    link: Option<PyObject>,
    /// `link` is the engine's `InMemoryLink` (or a subclass that keeps its `send`).
    engine_link: Option<Py<InMemoryLink>>,
}

fn lock(m: &Mutex<Wiring>) -> MutexGuard<'_, Wiring> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `bound` is the method `name` of an engine object of type `T`: that object.
pub(crate) fn method_owner<T: PyClass>(bound: &Bound<'_, PyAny>, name: &str) -> Option<Py<T>> {
    let owner = bound.getattr(intern!(bound.py(), "__self__")).ok()?;
    let owner = owner.downcast::<T>().ok()?;
    let same = bound
        .getattr(intern!(bound.py(), "__name__"))
        .ok()
        .and_then(|n| n.extract::<String>().ok())
        .is_some_and(|n| n == name);
    same.then(|| owner.clone().unbind())
}

/// A switch port on an `InMemoryLink`: the link's endpoint (`receive`) and the switch's port
/// (`send` returns the link's busy time, which the TM waits). Create it, create the link with it
/// as one end, then `attach(link)`. Counters: `counts()` is (frames received, sent, dropped on
/// send for want of a link).
#[pyclass(module = "hbh_engine", frozen, subclass)]
pub struct LinkPort {
    #[pyo3(get)]
    number: i64,
    #[pyo3(get)]
    name: String,
    wiring: Mutex<Wiring>,
    rx_frames: AtomicI64,
    tx_frames: AtomicI64,
    tx_dropped: AtomicI64,
}

impl LinkPort {
    /// A frame from the link: counted, then to `on_receive(number, frame)`.
    pub(crate) fn deliver(slf: &Bound<'_, Self>, frame: Frame) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        me.rx_frames.fetch_add(1, Ordering::Relaxed);
        // What the frame goes to, taken as `Bound`s (the lock is not held over the call; a
        // `Bound` let go is a plain decref, where a `Py` first asks pyo3 whether this thread
        // holds the GIL), and only the one the frame takes.
        let to = {
            let w = lock(&me.wiring);
            match (&w.walk, me.number) {
                (Some((x, r)), n) if n >= 0 => Ok((x.bind(py).clone(), *r, n as u64)),
                _ => Err(w.on_receive.as_ref().map(|x| x.bind(py).clone())),
            }
        };
        match to {
            Ok((walk, r, n)) => (r.receive)(&walk, n, frame),
            Err(Some(f)) => f.call1((me.number, frame.into_py(py))).map(|_| ()),
            Err(None) => Ok(()),
        }
    }

    /// A frame out of the switch onto the link; the ns until the link's side is free again.
    pub(crate) fn transmit(slf: &Bound<'_, Self>, frame: Frame) -> PyResult<i64> {
        let py = slf.py();
        let me = slf.get();
        // as `deliver`: `Bound`s, and only the one the frame takes
        let to = {
            let w = lock(&me.wiring);
            match (&w.link, &w.engine_link) {
                (None, _) => None,
                (Some(_), Some(l)) => Some(Ok(l.bind(py).clone())),
                (Some(link), None) => Some(Err(link.bind(py).clone())),
            }
        };
        let Some(to) = to else {
            me.tx_dropped.fetch_add(1, Ordering::Relaxed); // an unconnected port, like a cable-less NIC
            return Ok(0);
        };
        me.tx_frames.fetch_add(1, Ordering::Relaxed);
        match to {
            Ok(l) => InMemoryLink::transmit(&l, slf.as_any(), frame),
            Err(link) => link
                .call_method1(intern!(py, "send"), (slf, frame.into_py(py)))?
                .extract(),
        }
    }
}

#[pymethods]
impl LinkPort {
    #[new]
    #[pyo3(signature = (number, name, on_receive = None))]
    fn new(py: Python<'_>, number: i64, name: String, on_receive: Option<PyObject>) -> Self {
        let port = LinkPort {
            number,
            name,
            wiring: Mutex::new(Wiring::default()),
            rx_frames: AtomicI64::new(0),
            tx_frames: AtomicI64::new(0),
            tx_dropped: AtomicI64::new(0),
        };
        port.set_on_receive(py, on_receive);
        port
    }

    /// `on_receive(number, frame)`, called for each frame the link delivers (None: none).
    #[getter]
    fn on_receive(&self, py: Python<'_>) -> Option<PyObject> {
        lock(&self.wiring)
            .on_receive
            .as_ref()
            .map(|f| f.clone_ref(py))
    }

    #[setter]
    fn set_on_receive(&self, py: Python<'_>, on_receive: Option<PyObject>) {
        let walk = on_receive.as_ref().and_then(|f| {
            let r = *WALK_RECEIVE.get()?;
            (r.owner)(f.bind(py)).map(|walk| (walk, r))
        });
        let mut w = lock(&self.wiring);
        w.on_receive = on_receive;
        w.walk = walk;
    }

    /// The link attached (None before `attach`).
    #[getter]
    fn link(&self, py: Python<'_>) -> Option<PyObject> {
        lock(&self.wiring).link.as_ref().map(|l| l.clone_ref(py))
    }

    /// Send through `link` from now on; it raises unless this port is one of its ends.
    fn attach(slf: &Bound<'_, Self>, link: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        link.call_method1(intern!(py, "direction_from"), (slf,))?;
        let engine = link
            .getattr(intern!(py, "send"))
            .ok()
            .and_then(|s| method_owner::<InMemoryLink>(&s, "send"));
        let mut w = lock(&slf.get().wiring);
        w.link = Some(link.clone().unbind());
        w.engine_link = engine;
        Ok(())
    }

    fn receive(slf: &Bound<'_, Self>, frame: &Bound<'_, PyAny>) -> PyResult<()> {
        match frame.downcast::<PyBytes>() {
            Ok(b) => LinkPort::deliver(slf, Frame::Py(b.clone().unbind())),
            Err(_) => match slf.get().on_receive(slf.py()) {
                Some(f) => f
                    .bind(slf.py())
                    .call1((slf.get().number, frame))
                    .map(|_| ()),
                None => Ok(()),
            },
        }
    }

    fn send(slf: &Bound<'_, Self>, frame: &Bound<'_, PyAny>) -> PyResult<i64> {
        LinkPort::transmit(slf, Frame::from_any(frame)?)
    }

    /// (frames received, frames sent, frames dropped on send: no link).
    fn counts(&self) -> (i64, i64, i64) {
        (
            self.rx_frames.load(Ordering::Relaxed),
            self.tx_frames.load(Ordering::Relaxed),
            self.tx_dropped.load(Ordering::Relaxed),
        )
    }

    fn __repr__(&self) -> String {
        format!("<LinkPort {} {}>", self.number, self.name)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(w) = self.wiring.try_lock() {
            for o in [&w.on_receive, &w.link].into_iter().flatten() {
                visit.call(o)?;
            }
            if let Some((x, _)) = &w.walk {
                visit.call(x)?;
            }
            if let Some(x) = &w.engine_link {
                visit.call(x)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        // dropped once the lock is released: a finaliser run by the drop may use this port
        let old = std::mem::take(&mut *lock(&self.wiring));
        drop(old);
    }
}
