//! The event heap and the virtual-time loop (runtime/sched.py's `VirtualScheduler`).
//!
//! Why here: every packet hop of a simulation is two to four events (delivery, TM service,
//! pipeline work scheduled for now); in Python the heap's bookkeeping and the loop around it cost
//! about a tenth of a run. Ordering is the contract of runtime/sched.py: due time, then the order
//! of scheduling (a sequence number), late events first, the clock never goes back.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::frame::Frame;

const PENDING: u8 = 0;
const CANCELLED: u8 = 1;
const DONE: u8 = 2;

/// A scheduled callback that can be cancelled before it runs; `when` is its due time in ns.
///
/// No PyO3 `freelist` here or on any class the collector must see: PyO3 0.23 hands out a reused
/// object without tracking it, and cycles through untracked objects are never collected.
#[pyclass(module = "hbh_engine", frozen)]
pub struct TimerHandle {
    #[pyo3(get)]
    when: i64,
    call: Call,
    token: Token,
}

impl TimerHandle {
    fn new(when: i64, call: Call, live: Arc<AtomicI64>) -> Self {
        TimerHandle {
            when,
            call,
            token: Token::new(live),
        }
    }
}

/// Whether an entry still runs: pending, cancelled or done, and the heap's count of live
/// entries that a cancel lowers.
///
/// Why apart from `TimerHandle`: the engine's own cancellable timers (a TM port's wake-up, one
/// per packet served) hold only this, in an `Arc`; as Python objects they were allocations the
/// collector tracks, and they set off most of a simulation's collections.
pub struct Token {
    state: AtomicU8,
    live: Arc<AtomicI64>,
}

impl Token {
    fn new(live: Arc<AtomicI64>) -> Self {
        Token {
            state: AtomicU8::new(PENDING),
            live,
        }
    }

    fn is_cancelled(&self) -> bool {
        self.state.load(Relaxed) == CANCELLED
    }

    /// Cancel; harmless if it already ran (or started) or was cancelled.
    pub fn cancel(&self) {
        if self
            .state
            .compare_exchange(PENDING, CANCELLED, Relaxed, Relaxed)
            .is_ok()
        {
            self.live.fetch_sub(1, Relaxed);
        }
    }

    /// Pending until now: marked done (true), or not (false: cancelled, or already run).
    fn take(&self) -> bool {
        self.state
            .compare_exchange(PENDING, DONE, Relaxed, Relaxed)
            .is_ok()
    }
}

/// The engine's own work a `Call::Engine` runs on its object and number (a TM's port, a link
/// direction): how to run it, and its name in a `TimerHandle`'s repr.
///
/// Why function pointers: each kind is a `static` in the module that does the work (`tm::SERVE`,
/// `host::PACE`, `txport::RELEASE`, `link::NIC_FREE`), so this module names none of them and
/// they can all use it; a call is still one entry with no allocation.
pub struct Work {
    pub run: fn(&Bound<'_, PyAny>, usize) -> PyResult<()>,
    pub name: fn(&Bound<'_, PyAny>, usize) -> String,
}

/// A link's delivery of `frame` to `target`, counted in `stats` (`link::deliver`).
pub type DeliverFn = fn(&Bound<'_, PyAny>, Frame, &Bound<'_, PyAny>) -> PyResult<()>;

/// What a handle runs: a Python callable with its arguments, or the engine's own work.
///
/// Why the second: in real time the TM's service of every packet is a timer; as a Python bound
/// method (`TrafficManager._serve`) it cost a method object, an argument tuple and a Python call
/// per packet, where the engine can call itself.
pub enum Call {
    Py(PyObject, Py<PyTuple>),
    /// The engine's own work on an object and a number: a TM port's service
    /// (`TrafficManager._serve(port)`), a modelled port's propagation delay, a paced sender's
    /// next packet, a link direction's free wire.
    Engine(&'static Work, PyObject, usize),
    /// A link's delivery of a frame to the far end (`target`), counted in the direction's stats.
    Deliver(DeliverFn, PyObject, Frame, PyObject),
}

impl Call {
    pub fn run(&self, py: Python<'_>) -> PyResult<()> {
        match self {
            Call::Py(cb, args) => cb.bind(py).call1(args.bind(py)).map(|_| ()),
            Call::Engine(work, obj, n) => (work.run)(obj.bind(py), *n),
            Call::Deliver(f, target, data, stats) => {
                f(target.bind(py), data.clone_ref(py), stats.bind(py))
            }
        }
    }

    /// `run`, moving what the call carries (a delivered frame's buffer goes on without a copy).
    /// Its objects are let go as `Bound`s: a `Py` dropped asks pyo3 whether this thread holds
    /// the GIL (a thread-local read) before its decref, which every event paid two or three times.
    pub fn run_owned(self, py: Python<'_>) -> PyResult<()> {
        match self {
            Call::Py(cb, args) => {
                let (cb, args) = (cb.into_bound(py), args.into_bound(py));
                cb.call1(&args).map(|_| ())
            }
            Call::Engine(work, obj, n) => (work.run)(&obj.into_bound(py), n),
            Call::Deliver(f, target, data, stats) => {
                f(&target.into_bound(py), data, &stats.into_bound(py))
            }
        }
    }

    fn name(&self, py: Python<'_>) -> String {
        match self {
            Call::Py(cb, _) => {
                let cb = cb.bind(py);
                cb.getattr("__qualname__")
                    .map(|n| n.to_string())
                    .unwrap_or_else(|_| cb.to_string())
            }
            Call::Engine(work, obj, n) => (work.name)(obj.bind(py), *n),
            Call::Deliver(..) => "InMemoryLink delivery".to_string(),
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Call::Py(cb, args) => {
                visit.call(cb)?;
                visit.call(args)
            }
            Call::Engine(_, obj, _) => visit.call(obj),
            Call::Deliver(_, target, data, stats) => {
                visit.call(target)?;
                data.traverse(visit)?;
                visit.call(stats)
            }
        }
    }
}

#[pymethods]
impl TimerHandle {
    /// True once cancelled before it ran.
    #[getter]
    fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Cancel; harmless if it already ran (or started) or was cancelled.
    pub fn cancel(&self) {
        self.token.cancel()
    }

    /// Call the callback (the real-time loop runs a popped handle this way).
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        self.call.run(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = ["pending", "cancelled", "done"][self.token.state.load(Relaxed) as usize];
        let name = self.call.name(py);
        format!("<TimerHandle when={} fn={} {}>", self.when, name, state)
    }

    /// No `__clear__`: what a handle holds is fixed when it is made, so it refers only to older
    /// objects; a cycle through it returns through whatever holds the handle (a heap, a TM's
    /// wake-up, a Python object), and that holder's clear breaks it.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.call.traverse(&visit)
    }
}

/// What an entry runs: a cancellable handle, or a call the engine made itself (a link's delivery),
/// which nobody can cancel and so needs no handle object.
enum Job {
    Handle(Py<TimerHandle>),
    Call(Call),
    /// The engine's own cancellable call (see `Token`).
    Token(Arc<Token>, Call),
    /// The head of a lane (see `Heap::push_lane`).
    Lane(u32, Call),
}

struct Entry {
    when: i64,
    seq: u64,
    job: Job,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.when, self.seq) == (other.when, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap, the smallest (when, seq) must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.when, other.seq).cmp(&(self.when, self.seq))
    }
}

/// A popped entry, ready to run outside the heap's lock.
pub enum Ready {
    Handle(Py<TimerHandle>),
    Call(i64, Call),
}

impl Ready {
    pub fn when(&self, py: Python<'_>) -> i64 {
        match self {
            Ready::Handle(h) => h.bind(py).get().when,
            Ready::Call(when, _) => *when,
        }
    }

    pub fn run(self, py: Python<'_>) -> PyResult<()> {
        match self {
            Ready::Handle(h) => h.into_bound(py).get().call.run(py),
            Ready::Call(_, call) => call.run_owned(py),
        }
    }
}

/// Deterministic timer queue (keys: due time, insertion number).
///
/// Why two containers: an event scheduled for the current virtual time (the TM serving a port
/// whose queue was empty) is due before everything in the heap except what is due now and was
/// scheduled earlier; a FIFO keeps such entries sorted at O(1) (time never goes back, `seq`
/// grows) and `pop` takes the smaller head, so the order is exactly one heap's.
///
/// Lanes: calls that come due in the order they were scheduled (a link direction's deliveries)
/// wait in their lane, and only each lane's head is in the heap. The order is still exactly one
/// heap's: a lane's head has the smallest (when, seq) of its lane. Why: at 1 Gb/s thousands of
/// frames are on the wires, and a heap of all of them cost each event a dozen cold levels.
#[derive(Default)]
pub struct Heap {
    heap: BinaryHeap<Entry>,
    now: VecDeque<Entry>,
    lanes: Vec<Lane>,
    seq: u64,
    live: Arc<AtomicI64>,
}

/// A lane's waiting calls after its head (which is in the heap while `active`).
#[derive(Default)]
struct Lane {
    active: bool,
    tail_when: i64,
    waiting: VecDeque<Entry>,
}

impl Heap {
    fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    fn insert(&mut self, entry: Entry, due_now: bool) {
        self.live.fetch_add(1, Relaxed);
        if due_now {
            self.now.push_back(entry);
        } else {
            self.heap.push(entry);
        }
    }

    /// A cancellable handle for `fn(*args)` at `when` (`due_now`: `when` is the current virtual time).
    pub fn push_handle(&mut self, handle: Py<TimerHandle>, when: i64, due_now: bool) {
        let seq = self.next_seq();
        self.insert(
            Entry {
                when,
                seq,
                job: Job::Handle(handle),
            },
            due_now,
        );
    }

    /// An engine-made call at `when`, without a handle.
    pub fn push_call(&mut self, when: i64, call: Call, due_now: bool) {
        let seq = self.next_seq();
        self.insert(
            Entry {
                when,
                seq,
                job: Job::Call(call),
            },
            due_now,
        );
    }

    /// An engine-made call at `when` that its maker may cancel through the token.
    pub fn push_token(&mut self, when: i64, call: Call, due_now: bool) -> Arc<Token> {
        let token = Arc::new(Token::new(self.live.clone()));
        let seq = self.next_seq();
        self.insert(
            Entry {
                when,
                seq,
                job: Job::Token(token.clone(), call),
            },
            due_now,
        );
        token
    }

    /// A new lane; its number for `push_lane`.
    pub fn new_lane(&mut self) -> u32 {
        self.lanes.push(Lane::default());
        (self.lanes.len() - 1) as u32
    }

    /// An engine-made call at `when` in lane `lane`. A call due before the lane's last one
    /// (a link's delay made shorter) goes into the heap itself.
    pub fn push_lane(&mut self, lane: u32, when: i64, call: Call) {
        let seq = self.next_seq();
        self.push_lane_seq(lane, when, seq, call)
    }

    /// `push_lane` with a place in the order taken earlier (`reserve_seq`): the call comes due
    /// as if it had been scheduled then (a frame that waited for its link's wire).
    pub fn push_lane_seq(&mut self, lane: u32, when: i64, seq: u64, call: Call) {
        let l = &mut self.lanes[lane as usize];
        if l.active && when < l.tail_when {
            return self.insert(
                Entry {
                    when,
                    seq,
                    job: Job::Call(call),
                },
                false,
            );
        }
        l.tail_when = when;
        let entry = Entry {
            when,
            seq,
            job: Job::Lane(lane, call),
        };
        if l.active {
            l.waiting.push_back(entry);
            self.live.fetch_add(1, Relaxed);
        } else {
            l.active = true;
            self.insert(entry, false);
        }
    }

    /// Lane `lane`'s head left the heap: its next call takes its place.
    fn advance_lane(&mut self, lane: u32) {
        let l = &mut self.lanes[lane as usize];
        match l.waiting.pop_front() {
            Some(next) => {
                if let Job::Lane(_, Call::Deliver(_, _, frame, _)) = &next.job {
                    frame.prefetch();
                }
                self.heap.push(next)
            }
            None => l.active = false,
        }
    }

    pub fn new_handle(&self, when: i64, call: Call) -> TimerHandle {
        TimerHandle::new(when, call, self.live.clone())
    }

    fn take_now_head(&self) -> bool {
        match (self.now.front(), self.heap.peek()) {
            (Some(n), Some(h)) => (n.when, n.seq) < (h.when, h.seq),
            (Some(_), None) => true,
            _ => false,
        }
    }

    fn pop_entry(&mut self) -> Option<Entry> {
        if self.take_now_head() {
            self.now.pop_front()
        } else {
            self.heap.pop()
        }
    }

    fn is_cancelled(entry: &Entry) -> bool {
        match &entry.job {
            Job::Handle(h) => h.get().token.is_cancelled(),
            Job::Token(t, _) => t.is_cancelled(),
            Job::Call(_) | Job::Lane(..) => false,
        }
    }

    fn drop_cancelled_heads(&mut self) {
        while self.heap.peek().is_some_and(Self::is_cancelled) {
            self.heap.pop();
        }
        while self.now.front().is_some_and(Self::is_cancelled) {
            self.now.pop_front();
        }
    }

    pub fn next_due(&mut self) -> Option<i64> {
        self.drop_cancelled_heads();
        if self.take_now_head() {
            self.now.front().map(|e| e.when)
        } else {
            self.heap.peek().map(|e| e.when)
        }
    }

    /// The next pending entry, marked done; None when nothing is pending.
    pub fn pop(&mut self) -> Option<Ready> {
        while let Some(entry) = self.pop_entry() {
            match entry.job {
                Job::Handle(h) => {
                    if h.get().token.take() {
                        self.live.fetch_sub(1, Relaxed);
                        return Some(Ready::Handle(h));
                    }
                }
                Job::Token(t, call) => {
                    if t.take() {
                        self.live.fetch_sub(1, Relaxed);
                        return Some(Ready::Call(entry.when, call));
                    }
                }
                Job::Call(call) => {
                    self.live.fetch_sub(1, Relaxed);
                    return Some(Ready::Call(entry.when, call));
                }
                Job::Lane(lane, call) => {
                    self.advance_lane(lane);
                    self.live.fetch_sub(1, Relaxed);
                    return Some(Ready::Call(entry.when, call));
                }
            }
        }
        None
    }

    pub fn len(&self) -> i64 {
        self.live.load(Relaxed)
    }

    /// Every entry taken out, for the caller to drop once the lock is released (the collector's
    /// clear: a finished run's heap holds the objects that hold its scheduler). The heap stays
    /// usable: its lanes keep their numbers (their links hold them), empty; the handles and
    /// tokens taken are cancelled and the count of live entries drops by what was taken.
    fn take_all(&mut self) -> Vec<Entry> {
        let mut taken = std::mem::take(&mut self.heap).into_vec();
        taken.extend(self.now.drain(..));
        for lane in &mut self.lanes {
            taken.extend(lane.waiting.drain(..));
            lane.active = false;
        }
        for entry in &taken {
            match &entry.job {
                Job::Handle(h) => h.get().token.cancel(),
                Job::Token(t, _) => t.cancel(),
                Job::Call(_) | Job::Lane(..) => {
                    self.live.fetch_sub(1, Relaxed);
                }
            }
        }
        taken
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        let waiting = self.lanes.iter().flat_map(|l| l.waiting.iter());
        for entry in self.heap.iter().chain(self.now.iter()).chain(waiting) {
            match &entry.job {
                Job::Handle(h) => visit.call(h)?,
                Job::Call(call) | Job::Token(_, call) | Job::Lane(_, call) => {
                    call.traverse(visit)?
                }
            }
        }
        Ok(())
    }
}

/// Integer ns only: a float here means a unit bug somewhere, say so at once.
pub fn check_time(value: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int number of nanoseconds, got {}",
            value.repr()?
        )));
    }
    value.extract::<i64>().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} {} is out of range (64-bit ns)",
            value.repr().unwrap()
        ))
    })
}

/// `sched` as the engine's scheduler when it is one (its time then read without a Python call).
pub fn engine_of(sched: &Bound<'_, PyAny>) -> Option<Py<VirtualScheduler>> {
    sched
        .downcast::<VirtualScheduler>()
        .ok()
        .map(|s| s.clone().unbind())
}

/// The current time of `sched`: read directly when it is the engine's (`engine`), else its `now_ns()`.
pub fn now_of(
    py: Python<'_>,
    engine: &Option<Py<VirtualScheduler>>,
    sched: &PyObject,
) -> PyResult<i64> {
    match engine {
        Some(s) => Ok(s.get().now()),
        None => sched
            .bind(py)
            .call_method0(pyo3::intern!(py, "now_ns"))?
            .extract(),
    }
}

/// CLOCK_MONOTONIC in ns: the clock of Python's `time.monotonic_ns` on Linux.
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Wait until `due_ns` on the clock `monotonic - origin_ns`, spinning (the core yielded each time
/// round), or until a file descriptor watched by the epoll instance `epfd` is ready; returns True
/// for the second. The GIL is free meanwhile.
///
/// Why: a real-time loop spins for a timer due within tens of µs, because a wake-up from sleep
/// comes that late; spun in Python, each time round was a loop turn of interpreter (the real-time
/// switch then used most of a core at 128 Mb/s links on its TM's timers alone).
#[pyfunction]
pub fn spin_until(py: Python<'_>, epfd: i32, origin_ns: i64, due_ns: i64) -> bool {
    py.allow_threads(|| {
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }];
        while monotonic_ns() - origin_ns < due_ns {
            // SAFETY: `ev` is a valid one-event array for the kernel to fill; level-triggered
            // readiness stays for the loop's own poll after this one.
            if unsafe { libc::epoll_wait(epfd, ev.as_mut_ptr(), 1, 0) } != 0 {
                return true;
            }
            // SAFETY: plain system call.
            unsafe { libc::sched_yield() };
        }
        false
    })
}

fn lock(heap: &Mutex<Heap>) -> MutexGuard<'_, Heap> {
    heap.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The heap's lock for a thread that holds the GIL: while another thread holds the lock, wait
/// with the GIL released. Why: the lock is taken by Python threads (a P4Runtime write's
/// `call_at`) and by the loop; a holder can lose the GIL inside (a Python object freed, an
/// allocation that runs the collector), and a waiter that kept the GIL would then deadlock.
fn lock_py<'a>(py: Python<'_>, heap: &'a Mutex<Heap>) -> MutexGuard<'a, Heap> {
    loop {
        match heap.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(TryLockError::WouldBlock) => py.allow_threads(|| drop(lock(heap))),
        }
    }
}

/// The collector's clear of a heap: its entries taken under the lock and dropped after it (a
/// dropped object's finaliser may schedule on this heap again). Another thread holding the lock
/// (it cannot, while this one holds the GIL, unless it waits for the GIL): nothing cleared.
fn clear_heap(heap: &Mutex<Heap>) {
    let taken = match heap.try_lock() {
        Ok(mut h) => h.take_all(),
        Err(TryLockError::Poisoned(p)) => p.into_inner().take_all(),
        Err(TryLockError::WouldBlock) => return,
    };
    drop(taken);
}

/// The heap for runtime/sched.py's `RealtimeScheduler` (which adds its own lock and threads).
#[pyclass(module = "hbh_engine", frozen)]
pub struct EventHeap {
    heap: Mutex<Heap>,
}

#[pymethods]
impl EventHeap {
    #[new]
    fn new() -> Self {
        EventHeap {
            heap: Mutex::new(Heap::default()),
        }
    }

    /// Schedule `fn(*args)` at `t_ns`; returns its cancellable handle.
    fn push(
        &self,
        py: Python<'_>,
        t_ns: i64,
        callback: PyObject,
        args: Py<PyTuple>,
    ) -> PyResult<Py<TimerHandle>> {
        self.push_call(py, t_ns, Call::Py(callback, args))
            .map(|(h, _)| h)
    }

    /// `push`, and whether the new entry is now the earliest (a loop asleep until the earlier
    /// one must be woken): one step under the heap's lock, so no other lock is needed around it.
    fn push_first(
        &self,
        py: Python<'_>,
        t_ns: i64,
        callback: PyObject,
        args: Py<PyTuple>,
    ) -> PyResult<(Py<TimerHandle>, bool)> {
        self.push_call(py, t_ns, Call::Py(callback, args))
    }

    fn next_due(&self, py: Python<'_>) -> Option<i64> {
        lock_py(py, &self.heap).next_due()
    }

    /// The next pending handle, marked done (None when nothing is pending).
    fn pop(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let ready = lock_py(py, &self.heap).pop();
        match ready {
            None => Ok(None),
            Some(Ready::Handle(h)) => Ok(Some(h.into_any())),
            Some(Ready::Call(when, call)) => {
                let handle = lock_py(py, &self.heap).new_handle(when, call);
                Ok(Some(Py::new(py, handle)?.into_any()))
            }
        }
    }

    /// Run the callbacks due on the monotonic clock (`time.monotonic_ns() - origin_ns`, the
    /// `RealtimeScheduler`'s `now_ns`), in order, including those they schedule for now, at
    /// most `max` of them or for `budget_ns`; returns True when the budget ended the run.
    /// Each pop holds the heap's own lock only (other threads' `push_first` compare with the
    /// earliest due time under it); a callback's exception goes to `on_error(exc)`.
    ///
    /// Why: this loop ran in Python, a few µs of interpreter per timer, and in real time the
    /// TM's service of every packet is a timer. The engine's own loop (rtloop.rs) calls it too.
    pub(crate) fn run_due(
        &self,
        py: Python<'_>,
        origin_ns: i64,
        max: u64,
        budget_ns: i64,
        on_error: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let start = monotonic_ns() - origin_ns;
        let mut now = start;
        for _ in 0..max {
            let ready = {
                let mut heap = lock_py(py, &self.heap);
                match heap.next_due() {
                    // `now` was read just before (at the start, or after the last callback): a
                    // second read here (one clock read per frame served, 1 % of the real-time
                    // switch's CPU) would only catch a timer falling due in the few ns between.
                    Some(due) if due <= now => heap.pop(),
                    _ => return Ok(false),
                }
            };
            if let Some(ready) = ready {
                match ready.run(py) {
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => {
                        on_error.call1((e.value(py),))?;
                    }
                    other => other?, // KeyboardInterrupt, SystemExit: out of the loop, as in Python
                }
            }
            now = monotonic_ns() - origin_ns;
            if now - start >= budget_ns {
                return Ok(true);
            }
        }
        Ok(true)
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        lock_py(py, &self.heap).len().max(0) as usize
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self.heap.try_lock() {
            Ok(heap) => heap.traverse(&visit),
            Err(_) => Ok(()),
        }
    }

    /// Why: its entries hold the objects that hold it (a TM's service, a channel's
    /// `call_later`), a cycle of engine objects the collector can break only here.
    fn __clear__(&self) {
        clear_heap(&self.heap)
    }
}

impl EventHeap {
    /// The earliest pending due time (the engine's own loop: rtloop.rs).
    pub(crate) fn next_due_ns(&self, py: Python<'_>) -> Option<i64> {
        lock_py(py, &self.heap).next_due()
    }

    /// Schedule `call` at `t_ns` (the engine's TM arms its ports' wake-ups this way, as a
    /// `RealtimeScheduler`'s `call_at` does on its loop thread, without the Python call);
    /// returns the handle and whether it is now the earliest entry.
    pub fn push_call(
        &self,
        py: Python<'_>,
        t_ns: i64,
        call: Call,
    ) -> PyResult<(Py<TimerHandle>, bool)> {
        // made outside the lock: an allocation may run the collector, and Python code with it
        let live = lock_py(py, &self.heap).live.clone();
        let handle = Py::new(py, TimerHandle::new(t_ns, call, live))?;
        let mut heap = lock_py(py, &self.heap);
        let first = heap.next_due().is_none_or(|due| t_ns < due);
        heap.push_handle(handle.clone_ref(py), t_ns, false);
        Ok((handle, first))
    }

    /// `push_call` without a handle object: the token cancels it.
    pub fn push_token(&self, py: Python<'_>, t_ns: i64, call: Call) -> (Arc<Token>, bool) {
        let mut heap = lock_py(py, &self.heap);
        let first = heap.next_due().is_none_or(|due| t_ns < due);
        (heap.push_token(t_ns, call, false), first)
    }
}

/// Deterministic virtual time: nothing happens between events, time jumps to the next one.
#[pyclass(module = "hbh_engine", frozen)]
pub struct VirtualScheduler {
    now: AtomicI64,
    heap: Mutex<Heap>,
}

impl VirtualScheduler {
    pub fn now(&self) -> i64 {
        self.now.load(Relaxed)
    }

    /// Schedule a cancellable call (what `call_at` does, for the engine's own objects).
    pub fn schedule(
        &self,
        py: Python<'_>,
        t_ns: i64,
        callback: PyObject,
        args: Py<PyTuple>,
    ) -> PyResult<Py<TimerHandle>> {
        self.schedule_job(py, t_ns, Call::Py(callback, args))
    }

    /// `schedule` of any `Call` (the TM's service of a port without a Python frame).
    pub fn schedule_job(&self, py: Python<'_>, t_ns: i64, call: Call) -> PyResult<Py<TimerHandle>> {
        let due_now = t_ns == self.now();
        let mut heap = lock(&self.heap);
        let handle = Py::new(py, heap.new_handle(t_ns, call))?;
        heap.push_handle(handle.clone_ref(py), t_ns, due_now);
        Ok(handle)
    }

    /// `schedule_job` without a handle object: the token cancels it.
    pub fn schedule_token(&self, t_ns: i64, call: Call) -> Arc<Token> {
        let due_now = t_ns == self.now();
        lock(&self.heap).push_token(t_ns, call, due_now)
    }

    /// A new lane of this scheduler (see `Heap::push_lane`).
    pub fn new_lane(&self) -> u32 {
        lock(&self.heap).new_lane()
    }

    /// `schedule_call` in lane `lane`: calls that come due in the order they are scheduled.
    pub fn schedule_lane(&self, lane: u32, t_ns: i64, call: Call) {
        lock(&self.heap).push_lane(lane, t_ns, call);
    }

    /// A place in the order of events, for a call scheduled later with it (`schedule_lane_seq`).
    pub fn reserve_seq(&self) -> u64 {
        lock(&self.heap).next_seq()
    }

    /// `schedule_lane` at a place in the order reserved earlier (`reserve_seq`).
    pub fn schedule_lane_seq(&self, lane: u32, t_ns: i64, seq: u64, call: Call) {
        lock(&self.heap).push_lane_seq(lane, t_ns, seq, call);
    }

    /// Schedule a call nobody will cancel (a link's delivery): no handle object.
    pub fn schedule_call(&self, t_ns: i64, call: Call) {
        let due_now = t_ns == self.now();
        lock(&self.heap).push_call(t_ns, call, due_now);
    }

    fn pop(&self) -> Option<Ready> {
        lock(&self.heap).pop()
    }

    fn run_one(&self, py: Python<'_>, ready: Ready) -> PyResult<()> {
        let when = ready.when(py);
        if when > self.now() {
            self.now.store(when, Relaxed);
        }
        ready.run(py)
    }
}

#[pymethods]
impl VirtualScheduler {
    #[new]
    #[pyo3(signature = (start_ns = None))]
    fn new(start_ns: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let start = match start_ns {
            Some(v) => check_time(v, "start_ns")?,
            None => 0,
        };
        Ok(VirtualScheduler {
            now: AtomicI64::new(start),
            heap: Mutex::new(Heap::default()),
        })
    }

    fn now_ns(&self) -> i64 {
        self.now()
    }

    #[pyo3(signature = (t_ns, callback, *args))]
    fn call_at(
        &self,
        py: Python<'_>,
        t_ns: &Bound<'_, PyAny>,
        callback: PyObject,
        args: Py<PyTuple>,
    ) -> PyResult<Py<TimerHandle>> {
        let t = check_time(t_ns, "t_ns")?;
        self.schedule(py, t, callback, args)
    }

    #[pyo3(signature = (dt_ns, callback, *args))]
    fn call_later(
        &self,
        py: Python<'_>,
        dt_ns: &Bound<'_, PyAny>,
        callback: PyObject,
        args: Py<PyTuple>,
    ) -> PyResult<Py<TimerHandle>> {
        let dt = check_time(dt_ns, "dt_ns")?;
        if dt < 0 {
            return Err(PyValueError::new_err(format!(
                "dt_ns must be >= 0, got {dt}"
            )));
        }
        self.schedule(py, self.now() + dt, callback, args)
    }

    /// Number of scheduled, not cancelled, not yet run callbacks.
    fn pending(&self) -> i64 {
        lock(&self.heap).len()
    }

    /// Due time of the next pending callback (None when idle).
    fn next_event_ns(&self) -> Option<i64> {
        lock(&self.heap).next_due()
    }

    /// Run the next callback (advancing time to it); False when nothing is pending.
    fn step(&self, py: Python<'_>) -> PyResult<bool> {
        match self.pop() {
            None => Ok(false),
            Some(ready) => self.run_one(py, ready).map(|_| true),
        }
    }

    /// Run every callback due at or before `t_ns`, then set the clock to `t_ns`; returns the
    /// number run. Callbacks scheduled meanwhile for times <= t_ns run too.
    fn run_until(&self, py: Python<'_>, t_ns: &Bound<'_, PyAny>) -> PyResult<u64> {
        let until = check_time(t_ns, "t_ns")?;
        self.run_until_ns(py, until)
    }

    /// `run_until(now + dt_ns)`.
    fn run_for(&self, py: Python<'_>, dt_ns: &Bound<'_, PyAny>) -> PyResult<u64> {
        let dt = check_time(dt_ns, "dt_ns")?;
        if dt < 0 {
            return Err(PyValueError::new_err(format!(
                "dt_ns must be >= 0, got {dt}"
            )));
        }
        self.run_until_ns(py, self.now() + dt)
    }

    /// Run until nothing is pending (or `max_events` ran); returns the count run.
    #[pyo3(signature = (max_events = None))]
    fn run(&self, py: Python<'_>, max_events: Option<u64>) -> PyResult<u64> {
        let mut count = 0u64;
        while max_events.is_none_or(|m| count < m) {
            let Some(ready) = self.pop() else { break };
            self.run_one(py, ready)?;
            count += 1;
        }
        Ok(count)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self.heap.try_lock() {
            Ok(heap) => heap.traverse(&visit),
            Err(_) => Ok(()),
        }
    }

    /// Why: its entries hold the objects that hold it (a TM's service, a channel's
    /// `call_later`), a cycle of engine objects the collector can break only here.
    fn __clear__(&self) {
        clear_heap(&self.heap)
    }
}

impl VirtualScheduler {
    fn run_until_ns(&self, py: Python<'_>, until: i64) -> PyResult<u64> {
        let mut count = 0u64;
        loop {
            let ready = {
                let mut heap = lock(&self.heap);
                match heap.next_due() {
                    Some(due) if due <= until => heap.pop(),
                    _ => None,
                }
            };
            let Some(ready) = ready else { break };
            self.run_one(py, ready)?;
            count += 1;
        }
        if until > self.now() {
            self.now.store(until, Relaxed);
        }
        Ok(count)
    }
}
