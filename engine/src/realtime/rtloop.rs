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
//! The ports' transmit side (`TxPort`) and wire clock (`RealtimeWire`) are txport.rs's.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};

use crate::afpacket::RxBatch;
use crate::sched::{monotonic_ns, EventHeap};
use crate::txport::{lock, CaptureLog, TxPort};
use crate::v1walk::{Hooks, V1Walk};

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
