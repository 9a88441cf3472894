//! A real-time switch port's transmit side in the engine (`TxPort`) and the wire clock of a
//! modelled port (`RealtimeWire`; runtime/link.py documents the rule; the Python fallback, with
//! captures, `--link-loss` or `--port-delay`, uses the same class).
//!
//! Why apart from the forwarding loop (rtloop.rs): the walk (v1walk.rs) hands its frames to a
//! `TxPort`, and the loop drives the walk; here, below both, neither imports the other's module.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::{PyTraverseError, PyVisit};

use crate::afpacket::{open_tx_socket, send_batch, BATCH};
use crate::link::wire_time_ns;
use crate::sched::{monotonic_ns, Call, EventHeap, Work};

/// A lock that a panic elsewhere does not poison for good (the state stays usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A modelled port's propagation delay (`Call::Engine`): the frames now due go to its socket.
static RELEASE: Work = Work {
    run: |tx, _| TxPort::release(tx.downcast::<TxPort>()?.as_unbound(), tx.py()),
    name: |tx, _| match tx.downcast::<TxPort>() {
        Ok(tx) => format!("TxPort.release({})", tx.get().name()),
        Err(_) => "TxPort.release".to_string(),
    },
};

/// A modelled wire in real time: when each frame starts, given when it was served (the rule
/// and why: runtime/link.py's docstring of `RealtimeWire`).
#[pyclass(module = "hbh_engine", get_all, set_all, eq)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct RealtimeWire {
    free_ns: i64,
    last_wire_ns: i64,
}

/// How late a frame's service may come and still start on the wire when the TM's model served it
/// (`RealtimeWire::busy_due`); a later one starts when it was served.
pub const DATE_BACK_MAX_NS: i64 = 1_000_000;

impl RealtimeWire {
    /// The frame served at `now_ns` takes `wire_ns`: how long the wire stays busy from now.
    pub fn busy(&mut self, now_ns: i64, wire_ns: i64) -> i64 {
        let window = wire_ns.min(self.last_wire_ns);
        let late = now_ns - self.free_ns;
        let start = if (0..window).contains(&late) {
            self.free_ns
        } else {
            now_ns
        };
        (self.start(start, wire_ns) - now_ns).max(0)
    }

    /// `busy` for a frame the TM's model served at `due_ns` (<= `now_ns`): it starts then, or
    /// when the wire is free if that is later, unless that was more than `DATE_BACK_MAX_NS` ago.
    ///
    /// Why: a real-time loop wakes 15-25 µs after its timer in a virtual machine, longer than a
    /// frame's wire time at hundreds of Mb/s (16 µs for 1000 bytes at 500 Mb/s). `busy` credits
    /// a late service only within one frame time of the wire's end, so each late wake-up cost
    /// the port its lateness: a 500 Mb/s port the TM served at 250 Mb/s carried 220. The TM
    /// knows when its model served the frame (queued, its rate slot come, the wire free: no
    /// idle gap of its own spacing is taken for lateness); the frame is dated from then, as the
    /// simulator would have sent it. With the link's delay behind it the far end still sees it
    /// at its modelled time.
    ///
    /// Returns when the frame's wire time ends, from now: negative when it ended before now (the
    /// TM then dates its next service from that end, and the delay line the frame's arrival).
    pub fn busy_due(&mut self, now_ns: i64, due_ns: i64, wire_ns: i64) -> i64 {
        let start = due_ns.max(self.free_ns);
        if now_ns - start > DATE_BACK_MAX_NS {
            return self.busy(now_ns, wire_ns);
        }
        self.start(start, wire_ns) - now_ns
    }

    /// The frame starts at `start`: when it ends.
    fn start(&mut self, start: i64, wire_ns: i64) -> i64 {
        self.free_ns = start + wire_ns;
        self.last_wire_ns = wire_ns;
        self.free_ns
    }
}

#[pymethods]
impl RealtimeWire {
    #[new]
    #[pyo3(signature = (free_ns=0, last_wire_ns=0))]
    fn new(free_ns: i64, last_wire_ns: i64) -> Self {
        RealtimeWire {
            free_ns,
            last_wire_ns,
        }
    }

    /// The frame served at `now_ns` takes `wire_ns`: how long the wire stays busy from now.
    fn busy_ns(&mut self, now_ns: i64, wire_ns: i64) -> i64 {
        self.busy(now_ns, wire_ns)
    }

    /// `busy_ns` for a frame the TM's model served at `due_ns` (see `busy_due`).
    fn busy_due_ns(&mut self, now_ns: i64, due_ns: i64, wire_ns: i64) -> i64 {
        self.busy_due(now_ns, due_ns, wire_ns)
    }

    fn __repr__(&self) -> String {
        format!(
            "RealtimeWire(free_ns={}, last_wire_ns={})",
            self.free_ns, self.last_wire_ns
        )
    }
}

/// One captured frame: port, out (else in), switch-clock ns, the bytes.
type Record = (u64, bool, i64, Vec<u8>);

/// Frames the loop captured (`--pcap`), handed to Python in batches: `sink(records)`, a list of
/// `(port, out, t_ns, frame)`, each stamped with the switch clock when it was seen.
pub(crate) struct CaptureLog {
    pub(crate) records: Mutex<Vec<Record>>,
    pub(crate) sink: PyObject,
    pub(crate) origin_ns: i64,
}

impl CaptureLog {
    pub(crate) fn record(&self, port: u64, out: bool, data: &[u8]) {
        let t = monotonic_ns() - self.origin_ns;
        lock(&self.records).push((port, out, t, data.to_vec()));
    }

    /// Hand what was captured so far to Python (nothing: no call).
    pub(crate) fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let records = std::mem::take(&mut *lock(&self.records));
        if records.is_empty() {
            return Ok(());
        }
        let list = PyList::empty(py);
        for (port, out, t, data) in records {
            list.append((port, out, t, PyBytes::new(py, &data)))?;
        }
        self.sink.bind(py).call1((list,))?;
        Ok(())
    }
}

/// runtime/ports.py's `MIN_FRAME`: a raw socket cannot send less than an Ethernet header.
const MIN_FRAME: usize = 14;
/// runtime/offload.py's `NO_OFFLOAD`: a virtio_net_hdr asking the kernel for nothing.
const NO_OFFLOAD: [u8; 10] = [0; 10];

pub(crate) struct TxState {
    /// The socket frames are sent on: one of the port's own (`open_tx_socket`), else the Python
    /// port's.
    tx_fd: i32,
    bitrate_bps: i64,
    wire: RealtimeWire,
    pending: Vec<Vec<u8>>,
    /// The link's propagation delay: frames wait in `held` until the end of their wire time
    /// plus this, in order (switch-clock ns), and a timer on `heap` releases them (`armed`).
    delay_ns: i64,
    held: VecDeque<(i64, Vec<u8>)>,
    heap: Option<Py<EventHeap>>,
    armed: bool,
    /// Inside `PortServer.serve`: frames wait for the end of the turn (else sent at once).
    batching: bool,
    closed: bool,
    sent: u64,
    dropped: u64,
    refused: u64,
    /// The port's number and the loop's capture log, when captures are on.
    pub(crate) capture: Option<(u64, Arc<CaptureLog>)>,
}

/// The transmit side of a switch's AF_PACKET port in the engine: the link model's wire time,
/// the real-time wire clock, and `sendmmsg` of the frames a turn sends. The port's socket stays
/// the Python port's (runtime/ports.py opens and closes it; `close()` here first); frames go out
/// on a send-only socket of the TxPort's own on the same interface (`open_tx_socket`: why), or
/// on the port's socket where that cannot be had.
#[pyclass(module = "hbh_engine", frozen)]
pub struct TxPort {
    name: String,
    pub(crate) fd: i32,
    /// `tx_fd` is ours to close.
    own_tx: bool,
    vnet_hdr: bool,
    origin_ns: i64,
    overhead_bytes: i64,
    min_frame_bytes: i64,
    pub(crate) state: Mutex<TxState>,
}

/// What `TxPort::queue` leaves to do once its lock is let go.
struct Queued {
    /// The ns the TM waits before it serves the port again.
    busy: i64,
    /// The capture log to flush (the frame went out at once).
    log: Option<Arc<CaptureLog>>,
    /// The delay line's first frame: arm its release at this time.
    arm: Option<(i64, Py<EventHeap>)>,
}

impl TxPort {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Queue (or send) one frame the walk put out on port `me` (`due`: when the TM's model
    /// served it); returns the ns the TM waits before it serves the port again (0 without a
    /// bit rate; negative: the frame's wire time, dated from `due`, ended that long ago).
    pub(crate) fn send(
        me: &Py<TxPort>,
        py: Python<'_>,
        frame: Vec<u8>,
        due: Option<i64>,
    ) -> PyResult<i64> {
        let q = me.get().queue(py, frame, due)?;
        if let Some(log) = q.log {
            log.flush(py)?;
        }
        if let Some((at, heap)) = q.arm {
            heap.get().push_token(
                py,
                at,
                Call::Engine(&RELEASE, me.clone_ref(py).into_any(), 0),
            );
        }
        Ok(q.busy)
    }

    /// `send` but what needs no lock: the busy ns, the log to flush, the release to arm.
    fn queue(&self, py: Python<'_>, frame: Vec<u8>, due: Option<i64>) -> PyResult<Queued> {
        let mut st = lock(&self.state);
        let none = Queued {
            busy: 0,
            log: None,
            arm: None,
        };
        if frame.len() < MIN_FRAME {
            st.refused += 1; // the Python port's error (`port_send_error`)
            return Ok(none);
        }
        if st.closed {
            st.dropped += 1;
            return Ok(none);
        }
        let wire = wire_time_ns(
            frame.len() as i64,
            st.bitrate_bps,
            self.min_frame_bytes,
            self.overhead_bytes,
        );
        let now = monotonic_ns() - self.origin_ns;
        let busy = match due {
            _ if wire <= 0 => 0,
            Some(due) => st.wire.busy_due(now, due, wire),
            None => st.wire.busy(now, wire),
        };
        if let Some((port, log)) = &st.capture {
            log.record(*port, true, &frame);
        }
        if st.delay_ns > 0 {
            // the far end sees the frame at the end of its wire time plus the delay
            let due = now + busy + st.delay_ns;
            st.held.push_back((due, frame));
            let arm = if st.armed {
                None
            } else {
                st.armed = true;
                st.heap.as_ref().map(|h| (due, h.clone_ref(py)))
            };
            return Ok(Queued {
                busy,
                log: None,
                arm,
            });
        }
        st.pending.push(frame);
        if !st.batching || st.pending.len() >= BATCH {
            self.flush_locked(&mut st)?;
        }
        let log = (!st.batching).then(|| st.capture.as_ref().map(|c| c.1.clone()));
        Ok(Queued {
            busy,
            log: log.flatten(),
            arm: None,
        })
    }

    /// The delay line's timer: the frames due now go out (with the turn's, inside
    /// `PortServer.serve`), and the timer is armed again for the next one.
    pub(crate) fn release(me: &Py<TxPort>, py: Python<'_>) -> PyResult<()> {
        let this = me.get();
        let now = monotonic_ns() - this.origin_ns;
        let next = {
            let mut st = lock(&this.state);
            while st.held.front().is_some_and(|(due, _)| *due <= now) {
                let (_, frame) = st.held.pop_front().expect("front");
                st.pending.push(frame);
            }
            if !st.batching || st.pending.len() >= BATCH {
                this.flush_locked(&mut st)?;
            }
            let next = st.held.front().map(|(due, _)| *due);
            st.armed = next.is_some() && !st.closed;
            next.filter(|_| st.armed)
                .zip(st.heap.as_ref().map(|h| h.clone_ref(py)))
        };
        if let Some((at, heap)) = next {
            heap.get().push_token(
                py,
                at,
                Call::Engine(&RELEASE, me.clone_ref(py).into_any(), 0),
            );
        }
        Ok(())
    }

    fn flush_locked(&self, st: &mut TxState) -> PyResult<()> {
        if st.pending.is_empty() {
            return Ok(());
        }
        let prefix: &[u8] = if self.vnet_hdr { &NO_OFFLOAD } else { &[] };
        let out = send_batch(st.tx_fd, prefix, &st.pending);
        st.pending.clear();
        st.sent += out.sent;
        st.dropped += out.dropped;
        st.refused += out.refused;
        match out.error {
            None => Ok(()),
            Some(e) => Err(PyOSError::new_err((
                e,
                format!(
                    "port {}: send failed: {}",
                    self.name,
                    std::io::Error::from_raw_os_error(e)
                ),
            ))),
        }
    }

    pub(crate) fn set_batching(&self, on: bool) -> PyResult<()> {
        let mut st = lock(&self.state);
        st.batching = on;
        self.flush_locked(&mut st)
    }
}

#[pymethods]
impl TxPort {
    /// `fd`: the port's non-blocking AF_PACKET socket; `vnet_hdr`: it takes a virtio_net_hdr
    /// before each frame; `origin_ns`: `time.monotonic_ns()` at the switch clock's 0; the link
    /// model's numbers (bit rate 0: no wire model, the veth paces itself); `delay_ns`: its
    /// propagation delay, held here and released by timers on `heap` (the loop's `engine_heap`).
    #[new]
    #[pyo3(signature = (name, fd, vnet_hdr, origin_ns, bitrate_bps, overhead_bytes, min_frame_bytes,
                        delay_ns=0, heap=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: String,
        fd: i32,
        vnet_hdr: bool,
        origin_ns: i64,
        bitrate_bps: i64,
        overhead_bytes: i64,
        min_frame_bytes: i64,
        delay_ns: i64,
        heap: Option<Py<EventHeap>>,
    ) -> PyResult<Self> {
        if delay_ns < 0 || (delay_ns > 0 && heap.is_none()) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "port {name}: a delay of {delay_ns} ns needs a delay >= 0 and, when > 0, the loop's heap"
            )));
        }
        let own = open_tx_socket(fd, vnet_hdr).ok();
        Ok(TxPort {
            name,
            fd,
            own_tx: own.is_some(),
            vnet_hdr,
            origin_ns,
            overhead_bytes,
            min_frame_bytes,
            state: Mutex::new(TxState {
                tx_fd: own.unwrap_or(fd),
                bitrate_bps,
                wire: RealtimeWire::default(),
                pending: Vec::new(),
                delay_ns,
                held: VecDeque::new(),
                heap,
                armed: false,
                batching: false,
                closed: false,
                sent: 0,
                dropped: 0,
                refused: 0,
                capture: None,
            }),
        })
    }

    /// True when frames go out on a send-only socket of the TxPort's own (`open_tx_socket`).
    #[getter]
    fn own_socket(&self) -> bool {
        self.own_tx
    }

    /// The wire's bit rate from the next frame on (0: no rate).
    fn set_bitrate(&self, bitrate_bps: i64) {
        lock(&self.state).bitrate_bps = bitrate_bps;
    }

    /// Send what waits now.
    pub(crate) fn flush(&self) -> PyResult<()> {
        let mut st = lock(&self.state);
        self.flush_locked(&mut st)
    }

    /// Frames sent, frames dropped (a full socket buffer, a downed interface, sent after close)
    /// and frames refused (shorter than an Ethernet header, longer than the MTU: the errors
    /// Python's port raised; the switch counts them as `port_send_error`).
    fn stats(&self) -> (u64, u64, u64) {
        let st = lock(&self.state);
        (st.sent, st.dropped, st.refused)
    }

    /// Frames on the modelled wire's delay, not yet handed to the socket.
    fn held(&self) -> usize {
        lock(&self.state).held.len()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(st) = self.state.try_lock() {
            if let Some(heap) = &st.heap {
                visit.call(heap)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        lock(&self.state).heap = None;
    }

    /// Send nothing more (the Python port closes the socket after this; our own closes here).
    fn close(&self) {
        let mut st = lock(&self.state);
        st.pending.clear();
        st.held.clear();
        self.close_own(&mut st);
        st.closed = true;
    }
}

impl TxPort {
    fn close_own(&self, st: &mut TxState) {
        if self.own_tx && !st.closed {
            // SAFETY: our socket, closed once (`closed` is set with it).
            unsafe { libc::close(st.tx_fd) };
        }
    }
}

impl Drop for TxPort {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if self.own_tx && !st.closed {
            // SAFETY: our socket, not closed yet.
            unsafe { libc::close(st.tx_fd) };
            st.closed = true;
        }
    }
}
