//! The real-time switch's forwarding loop: its AF_PACKET ports served in one engine call.
//!
//! Why: the real-time p4switch read its ports in batches in the engine, but every frame still
//! crossed Python on its way out (the switch's `_emit`, the port's `send` and one `send` system
//! call per frame, the wire clock) and between two frames (the scheduler's `run_due`). Here
//! `PortServer.serve` reads every port (`recvmmsg`), walks each frame (v1walk.rs), runs the
//! timers due between two frames on the scheduler's heap without a Python frame (the TM's
//! service: egress, then the port), and hands what leaves to each port's `TxPort`, which sends
//! a turn's frames with `sendmmsg`. It returns to Python when the ports have nothing more, when
//! the turn's budget is spent, or when another thread queued work for the loop (the
//! scheduler's wake-up pipe is readable), so P4Runtime and Thrift writes keep running on the
//! loop thread between two calls. The GIL is released while it polls the ports.
//!
//! `RealtimeWire` is the wire clock of a modelled port (runtime/link.py documents the rule);
//! the Python fallback (captures, `--link-loss`, `--port-delay`) uses the same class.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::{PyTraverseError, PyVisit};

use crate::afpacket::{open_tx_socket, send_batch, RxBatch, BATCH};
use crate::link::wire_time_ns;
use crate::sched::{monotonic_ns, Call, EventHeap, Work};

/// A modelled port's propagation delay (`Call::Engine`): the frames now due go to its socket.
static RELEASE: Work = Work {
    run: |tx, _| TxPort::release(tx.downcast::<TxPort>()?.as_unbound(), tx.py()),
    name: |tx, _| match tx.downcast::<TxPort>() {
        Ok(tx) => format!("TxPort.release({})", tx.get().name()),
        Err(_) => "TxPort.release".to_string(),
    },
};
use crate::v1walk::{Hooks, V1Walk};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

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
    records: Mutex<Vec<Record>>,
    sink: PyObject,
    origin_ns: i64,
}

impl CaptureLog {
    fn record(&self, port: u64, out: bool, data: &[u8]) {
        let t = monotonic_ns() - self.origin_ns;
        lock(&self.records).push((port, out, t, data.to_vec()));
    }

    /// Hand what was captured so far to Python (nothing: no call).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
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

struct TxState {
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
    capture: Option<(u64, Arc<CaptureLog>)>,
}

/// The transmit side of a switch's AF_PACKET port in the engine: the link model's wire time,
/// the real-time wire clock, and `sendmmsg` of the frames a turn sends. The port's socket stays
/// the Python port's (runtime/ports.py opens and closes it; `close()` here first); frames go out
/// on a send-only socket of the TxPort's own on the same interface (`open_tx_socket`: why), or
/// on the port's socket where that cannot be had.
#[pyclass(module = "hbh_engine", frozen)]
pub struct TxPort {
    name: String,
    fd: i32,
    /// `tx_fd` is ours to close.
    own_tx: bool,
    vnet_hdr: bool,
    origin_ns: i64,
    overhead_bytes: i64,
    min_frame_bytes: i64,
    state: Mutex<TxState>,
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

    fn set_batching(&self, on: bool) -> PyResult<()> {
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
    fn flush(&self) -> PyResult<()> {
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

/// The descriptors an `epoll_wait` that returned `n` found ready in `evs` (an interrupted wait: none).
fn ready_fds(n: i32, evs: &[libc::epoll_event]) -> PyResult<Vec<i32>> {
    if n < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            return Ok(Vec::new());
        }
        return Err(err.into());
    }
    Ok(evs[..n as usize].iter().map(|e| e.u64 as i32).collect())
}

/// While it keeps serving, a call lets the other Python threads have the GIL this often (the
/// first turn does not: the loop thread just had it back from its poll).
const GIL_HOLD_NS: i64 = 1_000_000;

/// One port the server reads.
struct RxPort {
    number: u64,
    fd: i32,
    hdr_len: usize,
    /// `slow(buffer, length)`: the Python port's offload handling of a frame.
    slow: PyObject,
    /// `served(walked, errno)`: the Python port's counts and read-error handling.
    served: PyObject,
}

impl RxPort {
    fn clone_ref(&self, py: Python<'_>) -> RxPort {
        RxPort {
            slow: self.slow.clone_ref(py),
            served: self.served.clone_ref(py),
            ..*self
        }
    }
}

struct Ports {
    rx: Vec<RxPort>,
    tx: Vec<Py<TxPort>>,
}

/// The forwarding loop of a real-time switch (see the module's docstring).
#[pyclass(module = "hbh_engine", frozen)]
pub struct PortServer {
    walk: Py<V1Walk>,
    heap: Py<EventHeap>,
    on_error: PyObject,
    origin_ns: i64,
    max_timers: u64,
    budget_ns: i64,
    batch: usize,
    epfd: i32,
    wake_fd: i32,
    ports: Mutex<Ports>,
    rx: Mutex<Option<Box<RxBatch>>>,
    capture: Option<Arc<CaptureLog>>,
    /// The switch state while `run` waits (`LEND_*`): lent to another thread (`try_lend`) for
    /// one short call, as the scheduler lends it while its own poll sleeps.
    lend: AtomicU8,
}

/// `PortServer.lend`: the loop is at work (the state is its own)...
const LEND_BUSY: u8 = 0;
/// ... it waits, the GIL free, touching nothing: `try_lend` may take the state ...
const LEND_FREE: u8 = 1;
/// ... another thread has it: the loop, woken, waits for `end_lend`.
const LEND_TAKEN: u8 = 2;

impl PortServer {
    fn run_due(&self, py: Python<'_>) -> PyResult<bool> {
        self.heap.get().run_due(
            py,
            self.origin_ns,
            self.max_timers,
            self.budget_ns,
            self.on_error.bind(py),
        )
    }

    /// A callback's exception goes to the scheduler's `on_error`, as the loop's do.
    fn report(&self, py: Python<'_>, result: PyResult<()>) -> PyResult<()> {
        match result {
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => {
                self.on_error.bind(py).call1((e.value(py),))?;
                Ok(())
            }
            other => other,
        }
    }

    /// The ready fds, without blocking; with the GIL released when `release` (the other
    /// threads' turn: a hand-over of the GIL costs a frame tens of µs when a thread takes it).
    fn poll(&self, py: Python<'_>, release: bool) -> PyResult<Vec<i32>> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        let epfd = self.epfd;
        let (buf, len) = (evs.as_mut_ptr() as usize, evs.len() as i32);
        // SAFETY: `buf` is `evs`, a valid array of `len` events for the kernel to fill, alive
        // across the call.
        let wait = || unsafe { libc::epoll_wait(epfd, buf as *mut libc::epoll_event, len, 0) };
        let n = if release {
            py.allow_threads(wait)
        } else {
            wait()
        };
        ready_fds(n, &evs)
    }

    fn flush_capture(&self, py: Python<'_>) -> PyResult<()> {
        match &self.capture {
            Some(log) => log.flush(py),
            None => Ok(()),
        }
    }

    /// One port's waiting frames, walked; returns how many were read.
    fn serve_port(&self, py: Python<'_>, batch: &mut RxBatch, p: &RxPort) -> PyResult<usize> {
        let after = |py: Python<'_>| self.run_due(py).map(|_| ());
        let capture = |_py: Python<'_>, frame: &[u8]| {
            if let Some(log) = &self.capture {
                log.record(p.number, false, frame);
            }
            Ok(())
        };
        // a frame the Python port finishes is captured there: what was captured before it first
        let before_slow = |py: Python<'_>| self.flush_capture(py);
        let hooks = Hooks {
            capture: &capture,
            before_slow: &before_slow,
            after: &after,
        };
        let res = self.walk.get().walk_batches(
            py,
            batch,
            (p.number, p.fd),
            self.batch,
            p.hdr_len,
            &p.slow,
            &hooks,
        );
        self.report(py, self.flush_capture(py))?;
        match res {
            Ok((walked, read, err)) => {
                if walked > 0 || err != 0 {
                    let r = p.served.bind(py).call1((walked, err)).map(|_| ());
                    self.report(py, r)?;
                }
                Ok(read)
            }
            Err(e) => {
                self.report(py, Err(e))?;
                Ok(1)
            }
        }
    }

    fn flush(&self, py: Python<'_>, txs: &[Py<TxPort>], batching: bool) -> PyResult<()> {
        for tx in txs {
            self.report(py, tx.get().set_batching(batching))?;
        }
        Ok(())
    }

    fn serve_turns(&self, py: Python<'_>, batch: &mut RxBatch, rx: &[RxPort]) -> PyResult<u64> {
        let start = monotonic_ns();
        let mut released = start;
        let mut total = 0u64;
        loop {
            let now = monotonic_ns();
            let release = now - released >= GIL_HOLD_NS;
            if release {
                released = now;
            }
            let ready = self.poll(py, release)?;
            let mut read = 0;
            for fd in ready.iter().copied().filter(|&fd| fd != self.wake_fd) {
                if let Some(p) = rx.iter().find(|p| p.fd == fd) {
                    read += self.serve_port(py, batch, p)?;
                }
            }
            total += read as u64;
            let more = self.run_due(py)?;
            let ports = lock(&self.ports)
                .tx
                .iter()
                .map(|t| t.clone_ref(py))
                .collect::<Vec<_>>();
            for tx in &ports {
                self.report(py, tx.get().flush())?;
            }
            self.report(py, self.flush_capture(py))?;
            let woken = ready.contains(&self.wake_fd);
            if woken || more || read == 0 || monotonic_ns() - start >= self.budget_ns {
                return Ok(total);
            }
        }
    }
}

#[pymethods]
impl PortServer {
    /// `walk`: the switch's V1Walk; `heap`, `origin_ns`, `on_error`: the
    /// RealtimeScheduler's (`engine_heap`, `monotonic_origin_ns`, `on_error`); `wake_fd`: its
    /// wake-up pipe's read end (readable: work queued for the loop, `serve` returns);
    /// `max_timers`, `budget_ns`: a loop turn's budget; `batch`: frames read per port per turn;
    /// `capture(records)`: the frames in and out of the ports, when captures are on (a list of
    /// `(port, out, t_ns, frame)` after each port's read and each turn's sends).
    #[new]
    #[pyo3(signature = (walk, heap, origin_ns, on_error, wake_fd, max_timers, budget_ns, batch, capture=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        walk: Py<V1Walk>,
        heap: Py<EventHeap>,
        origin_ns: i64,
        on_error: PyObject,
        wake_fd: i32,
        max_timers: u64,
        budget_ns: i64,
        batch: usize,
        capture: Option<PyObject>,
    ) -> PyResult<Self> {
        // SAFETY: plain system call; the fd is closed in Drop.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        let server = PortServer {
            walk,
            heap,
            on_error,
            origin_ns,
            max_timers,
            budget_ns,
            batch: batch.max(1),
            epfd,
            wake_fd,
            ports: Mutex::new(Ports {
                rx: Vec::new(),
                tx: Vec::new(),
            }),
            rx: Mutex::new(None),
            lend: AtomicU8::new(LEND_BUSY),
            capture: capture.map(|sink| {
                Arc::new(CaptureLog {
                    records: Mutex::new(Vec::new()),
                    sink,
                    origin_ns,
                })
            }),
        };
        server.watch(wake_fd, libc::EPOLL_CTL_ADD)?;
        Ok(server)
    }

    /// Serve port `number`: its socket `fd` (with a virtio_net_hdr of `hdr_len` bytes before
    /// each frame), `slow(buffer, length)` for frames whose offloads are left to finish,
    /// `served(walked, errno)` after each read, and `tx` its transmit side in the engine
    /// (None: it sends through Python).
    #[pyo3(signature = (number, fd, hdr_len, slow, served, tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_port(
        &self,
        number: u64,
        fd: i32,
        hdr_len: usize,
        slow: PyObject,
        served: PyObject,
        tx: Option<Py<TxPort>>,
    ) -> PyResult<()> {
        self.watch(fd, libc::EPOLL_CTL_ADD)?;
        if let (Some(tx), Some(log)) = (&tx, &self.capture) {
            lock(&tx.get().state).capture = Some((number, log.clone()));
        }
        let mut ports = lock(&self.ports);
        ports.rx.push(RxPort {
            number,
            fd,
            hdr_len,
            slow,
            served,
        });
        ports.tx.extend(tx);
        Ok(())
    }

    /// Stop serving the port on `fd` (before its socket is closed).
    fn remove_port(&self, fd: i32) -> PyResult<()> {
        let mut ports = lock(&self.ports);
        ports.rx.retain(|p| p.fd != fd);
        ports.tx.retain(|t| t.get().fd != fd);
        drop(ports);
        self.watch(fd, libc::EPOLL_CTL_DEL)
    }

    /// Serve the ports until none has a frame waiting, the turn's budget is spent, or work
    /// was queued for the loop; returns the number of frames read.
    fn serve(&self, py: Python<'_>) -> PyResult<u64> {
        self.with_ports(py, |rx, _txs, batch| self.serve_turns(py, batch, rx))
    }

    /// The loop's turns while only the engine has work (runtime/sched.py's `RealtimeScheduler`
    /// hands its loop over here between two turns of its own): the timers due, the ports' frames,
    /// and the waits between them, a timer due within `spin_ns` waited for by spinning, the GIL
    /// free. Returns when a descriptor of Python's own watched by the epoll instance `sel_epfd`
    /// (the scheduler's selector) is ready: its wake-up pipe (work handed over by other threads,
    /// a timer they scheduled sooner, a stop), or any other reader.
    ///
    /// Why: each of those turns was a turn of the Python loop (its timers, its poll, a reader's
    /// callback): a frame cost three turns in all (its arrival, its TM service, its release after
    /// the port's delay), about 75 µs of a core per packet in each switch of a netns run.
    fn run(&self, py: Python<'_>, sel_epfd: i32, spin_ns: i64) -> PyResult<()> {
        self.with_ports(py, |rx, txs, batch| loop {
            let more = self.run_due(py)?;
            for tx in txs {
                self.report(py, tx.get().flush())?;
            }
            self.report(py, self.flush_capture(py))?;
            let ready = self.wait(py, sel_epfd, if more { None } else { Some(spin_ns) })?;
            if ready.iter().any(|fd| !rx.iter().any(|p| p.fd == *fd)) {
                return Ok(());
            }
            if !ready.is_empty() {
                self.serve_turns(py, batch, rx)?;
            }
        })
    }

    /// Take the switch state while `run` waits (True), for one short call on the calling
    /// thread, which then calls `end_lend`; False: the loop is at work. Why: a one-update
    /// P4Runtime Write handed to the loop thread and its answer handed back cost two thread
    /// wake-ups and a wait for the GIL, more than the Write itself (runtime/sched.py's
    /// `try_call` lends its own poll's sleep the same way).
    fn try_lend(&self) -> bool {
        self.lend
            .compare_exchange(LEND_FREE, LEND_TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The call `try_lend` allowed has ended: the loop may take its state back.
    fn end_lend(&self) {
        let _ =
            self.lend
                .compare_exchange(LEND_TAKEN, LEND_FREE, Ordering::Release, Ordering::Relaxed);
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.walk)?;
        visit.call(&self.heap)?;
        visit.call(&self.on_error)?;
        if let Some(log) = &self.capture {
            visit.call(&log.sink)?;
        }
        let Ok(ports) = self.ports.try_lock() else {
            return Ok(());
        };
        for p in &ports.rx {
            visit.call(&p.slow)?;
            visit.call(&p.served)?;
        }
        for t in &ports.tx {
            visit.call(t)?;
        }
        Ok(())
    }
}

/// The longest the engine's loop sleeps without looking again (it wakes for whatever is ready).
const IDLE_NS: i64 = 100_000_000;

impl PortServer {
    /// `f(rx ports, tx ports, read buffer)` with the TxPorts batching their sends meanwhile.
    fn with_ports<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&[RxPort], &[Py<TxPort>], &mut RxBatch) -> PyResult<T>,
    ) -> PyResult<T> {
        let (rx, txs) = {
            let p = lock(&self.ports);
            let rx: Vec<RxPort> = p.rx.iter().map(|r| r.clone_ref(py)).collect();
            let tx: Vec<Py<TxPort>> = p.tx.iter().map(|t| t.clone_ref(py)).collect();
            (rx, tx)
        };
        let mut batch = lock(&self.rx)
            .take()
            .unwrap_or_else(|| Box::new(RxBatch::new()));
        self.flush(py, &txs, true)?;
        let result = f(&rx, &txs, &mut batch);
        *lock(&self.rx) = Some(batch);
        self.flush(py, &txs, false)?;
        self.report(py, self.flush_capture(py))?;
        result
    }

    /// The descriptors of `sel_epfd` that are ready, after a wait for the heap's next timer
    /// (`spin_ns`: spin for one due that soon; None: do not wait), the GIL free.
    fn wait(&self, py: Python<'_>, sel_epfd: i32, spin_ns: Option<i64>) -> PyResult<Vec<i32>> {
        let next = self.heap.get().next_due_ns(py);
        let origin = self.origin_ns;
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        let (buf, len) = (evs.as_mut_ptr() as usize, evs.len() as i32);
        // SAFETY: `buf` is `evs`, a valid array of `len` events for the kernel to fill, alive
        // across the call; readiness is level-triggered, so the selector still sees it after.
        let ready_now =
            || unsafe { libc::epoll_wait(sel_epfd, buf as *mut libc::epoll_event, len, 0) };
        let wait_ready = || {
            let Some(spin) = spin_ns else {
                return ready_now();
            };
            let left = next
                .map_or(IDLE_NS, |due| due - (monotonic_ns() - origin))
                .min(IDLE_NS);
            if left <= spin {
                while monotonic_ns() - origin < next.unwrap_or(0) {
                    let n = ready_now();
                    if n != 0 {
                        return n;
                    }
                    // SAFETY: plain system call.
                    unsafe { libc::sched_yield() };
                }
                return ready_now();
            }
            let mut pfd = libc::pollfd {
                fd: sel_epfd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ts = libc::timespec {
                tv_sec: (left - spin) / 1_000_000_000,
                tv_nsec: (left - spin) % 1_000_000_000,
            };
            // SAFETY: `pfd` and `ts` live across the call; no signal mask change.
            unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
            ready_now()
        };
        // the state is free for `try_lend` while this waits; taken back (after a lent call
        // ends) before anything else runs
        self.lend.store(LEND_FREE, Ordering::Release);
        let n = py.allow_threads(|| {
            let n = wait_ready();
            while self
                .lend
                .compare_exchange(LEND_FREE, LEND_BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                // SAFETY: plain system call.
                unsafe { libc::sched_yield() };
            }
            n
        });
        ready_fds(n, &evs)
    }

    fn watch(&self, fd: i32, op: i32) -> PyResult<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: `ev` is a valid event for the call; the kernel checks the fds.
        if unsafe { libc::epoll_ctl(self.epfd, op, fd, &mut ev) } < 0 {
            let err = std::io::Error::last_os_error();
            if op == libc::EPOLL_CTL_DEL {
                return Ok(()); // already gone with its socket
            }
            return Err(err.into());
        }
        Ok(())
    }
}

impl Drop for PortServer {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.epfd) };
    }
}
