//! Hosts' per-packet work: a sender paced at its rate (hosts/sender.py's `Pacer`), a flow's
//! receive accounting and the receiver's play-out buffer (hosts/receiver.py).
//!
//! Why here: a paced sender is one event per packet (take a flow in turn, stamp the frame,
//! the NIC queue's check, the link's send, the next event); the rate it keeps is control logic
//! and stays in Python (the ALINEA law per report, `set_rate` then `rearm`). With the engine's
//! scheduler and link, a packet sent crosses no Python at all.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::{intern, PyTraverseError, PyVisit};

use crate::datagram::{SEQ_AT, TS_AT};
use crate::link::{send_frame, wire_time_ns, InMemoryLink};
use crate::sched::{engine_of, now_of, Call, Token, VirtualScheduler, Work};

/// A paced sender's next packet (`Call::Engine`'s `PacedSender()`).
static PACE: Work = Work {
    run: |sender, _| PacedSender::fire(sender.downcast::<PacedSender>()?),
    name: |_, _| "PacedSender".to_string(),
};

const NS_PER_S: i64 = 1_000_000_000;
/// How far behind its schedule a real-time sender may catch up (see `State::take`): at most
/// `CATCH_UP_GAPS` gaps and at most `CATCH_UP_NS`, and at least one gap. One gap was enough at
/// 22 Mb/s, where a gap (364 µs) outlasts a wake-up's lateness; at 128 Mb/s a gap is 62 µs and
/// wake-ups on a busy two-core machine come later than that often enough that the relay-paced
/// host sent 93 % of its law's rate. The bound in gaps keeps what a stall gives back to a burst
/// of a few packets at any rate (at 500 Mb/s 1 ms is 62 packets, a third of a 200-packet buffer).
const CATCH_UP_NS: i64 = 1_000_000;
const CATCH_UP_GAPS: i64 = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A rate in b/s, > 0 (`what`: whose, for the error).
/// The time (ns, rounded half to even) a frame of `nbytes` takes at `rate_bps`: the pacer's gap, a
/// flow's gap at its ceiling, a playout's time.
fn frame_gap_ns(nbytes: i64, rate_bps: f64) -> i64 {
    ((nbytes * 8 * NS_PER_S) as f64 / rate_bps).round_ties_even() as i64
}

fn check_rate(rate_bps: f64, what: &str) -> PyResult<f64> {
    if rate_bps.is_nan() || rate_bps <= 0.0 {
        return Err(PyValueError::new_err(format!(
            "{what} rate must be > 0 b/s, got {rate_bps}"
        )));
    }
    Ok(rate_bps)
}

struct Flow {
    id: i64,
    start_ns: i64,
    stop_ns: Option<i64>,
    next_seq: i64,
    sent: i64,
    frame: Vec<u8>,
    /// Bytes this flow may still send in its turn (deficit round-robin: `take`).
    deficit: i64,
    /// Its own ceiling (b/s; the flow's `r_max`): it sends no faster, its share left to the others.
    cap_bps: Option<f64>,
    /// When its ceiling lets it send its next frame (ns).
    ready_ns: i64,
}

impl Flow {
    fn active(&self, now: i64) -> bool {
        now >= self.start_ns && self.stop_ns.is_none_or(|s| now < s)
    }

    /// When it can send next (its start, or when its ceiling lets it; None: it has stopped by then,
    /// or by `now`). May be before `now`: a late wake-up catches up from there (`take`).
    fn next_at(&self, now: i64) -> Option<i64> {
        let t = self.start_ns.max(self.ready_ns);
        self.stop_ns.is_none_or(|s| now.max(t) < s).then_some(t)
    }
}

/// The next packet's timer: the engine scheduler's token, or another scheduler's handle.
enum Pending {
    Engine(Arc<Token>),
    Other(PyObject),
}

#[derive(Default)]
struct State {
    rate_bps: f64,
    /// The largest frame (bytes): the catch-up bound's gap (`take`).
    packet_bytes: i64,
    last_ns: Option<i64>,
    /// The last frame's length (bytes; `packet_bytes` before the first): the gap after it.
    last_bytes: i64,
    start_ns: i64,
    flows: Vec<Flow>,
    turn: usize,
    taken: i64,
    /// Bytes of the frames taken so far (every flow): what the host's law reads its frames from.
    taken_bytes: i64,
    pending: Option<Pending>,
    /// When the pending packet was due (the time `arm` scheduled it for).
    due_ns: Option<i64>,
}

impl State {
    /// How long a frame of `nbytes` occupies the rate: its bits / `rate_bps` (at least 1 ns).
    ///
    /// Why per frame: the law's rate is in bits/s (docs/background/alinea.md, "Bits, not packets"); a
    /// 500-byte frame given a 1500-byte frame's gap carries a third of the bits that gap allows.
    fn gap_of(&self, nbytes: i64) -> i64 {
        frame_gap_ns(nbytes, self.rate_bps).max(1)
    }

    /// The gap after the last frame sent (its own bits at the rate).
    fn gap_ns(&self) -> i64 {
        self.gap_of(self.last_bytes)
    }

    fn pacer_next(&self) -> i64 {
        match self.last_ns {
            None => self.start_ns,
            Some(last) => self.start_ns.max(last + self.gap_ns()),
        }
    }

    /// When the next packet goes out: one flow stops at its stop time (`stop_at_pacer`, a fixed
    /// sender), several share the pacer until every one has stopped.
    fn next_send(&self, now: i64, stop_at_pacer: bool) -> Option<i64> {
        if stop_at_pacer {
            let t = self.pacer_next();
            return match self.flows.first().and_then(|f| f.stop_ns) {
                Some(stop) if t >= stop => None,
                _ => Some(t),
            };
        }
        let earliest = self.flows.iter().filter_map(|f| f.next_at(now)).min()?;
        Some(self.pacer_next().max(earliest))
    }

    /// The next packet's frame, if a flow is active: its template with the flow's sequence
    /// number and the send time `now` (+ `offset_ns`) written in (`take` says which flow).
    fn fire(&mut self, now: i64, due: i64, offset_ns: i64) -> Option<Vec<u8>> {
        let i = self.take(now, due)?;
        Some(self.frame_of(i, now + offset_ns))
    }

    /// `fire` as the relay thread does it: the frame stamped with the time `take` marked it
    /// sent (its due time, or as far back as a late wake-up may catch up), and that time.
    fn fire_marked(&mut self, now: i64, due: i64, offset_ns: i64) -> Option<(Vec<u8>, i64)> {
        let i = self.take(now, due)?;
        let at = self.last_ns.unwrap_or(now);
        Some((self.frame_of(i, at + offset_ns), at))
    }

    /// Flow `i`'s next frame: its template with its sequence number and the send time `stamp`.
    fn frame_of(&mut self, i: usize, stamp: i64) -> Vec<u8> {
        let f = &mut self.flows[i];
        let seq = f.next_seq;
        f.next_seq += 1;
        f.sent += 1;
        let mut frame = f.frame.clone();
        frame[SEQ_AT..SEQ_AT + 4].copy_from_slice(&(seq as u32).to_be_bytes());
        frame[TS_AT..TS_AT + 8].copy_from_slice(&(stamp as u64).to_be_bytes());
        frame
    }

    /// The flow whose packet goes now, marked sent at `due`,
    /// the time it was scheduled for, or at most `CATCH_UP_GAPS` gaps and `CATCH_UP_NS` (at
    /// least one gap) before `now`: in real time the loop wakes late, and spacing the next packet from the late
    /// wake-up instead would lose that lateness at every packet (a host paced at 22 Mb/s sent
    /// 19: docs/howto/netns.md, "At higher link rates"); the packets a late wake-up owes then go at
    /// once, onto the host's modelled uplink, which spaces them at its bit rate. The bound keeps
    /// a long stall from becoming a burst. On a virtual clock `due` is `now`.
    ///
    /// The active flows share the rate in bits, by deficit round-robin in bytes: a flow's turn
    /// grants it the largest active frame's bytes (when what it has left is less than its frame),
    /// and it keeps the turn while its credit covers another frame. Why bytes: the law's rate is
    /// in bits/s (docs/background/alinea.md, "Bits, not packets"), and a turn of one packet each gives a
    /// 1500-byte flow three times a 500-byte flow's bits. With frames of one size every turn is one
    /// packet: plain round-robin. A flow with a ceiling (its `r_max`) waits out its own gap at that
    /// rate, its turns skipped meanwhile: the others share what it leaves (max-min fair in bits, as
    /// topo/net/plan.py's `expected_shares` expects the flows to share a link).
    fn take(&mut self, now: i64, due: i64) -> Option<usize> {
        let mut quantum = 0;
        for f in self.flows.iter_mut() {
            if f.active(now) && f.ready_ns <= now {
                quantum = quantum.max(f.frame.len() as i64);
            } else {
                f.deficit = 0; // an idle flow saves no credit (as DRR's empty queue)
            }
        }
        if quantum == 0 {
            return None;
        }
        // the turn goes round every flow, passing those that cannot send now: a flow that waits out
        // its ceiling shifts no other flow's place in the round
        let n = self.flows.len();
        let i = (0..n)
            .map(|k| (self.turn + k) % n)
            .find(|&i| self.flows[i].active(now) && self.flows[i].ready_ns <= now)?;
        self.turn = i;
        let f = &mut self.flows[i];
        let len = f.frame.len() as i64;
        if f.deficit < len {
            f.deficit += quantum;
        }
        f.deficit -= len;
        if f.deficit < len {
            self.turn = i + 1;
        }
        self.taken += 1;
        self.taken_bytes += len;
        let gap = self.gap_of(self.packet_bytes);
        let back = (CATCH_UP_GAPS * gap).min(CATCH_UP_NS).max(gap);
        let at = due.max(now - back).min(now);
        self.last_ns = Some(at);
        self.last_bytes = len;
        let f = &mut self.flows[i];
        if let Some(cap) = f.cap_bps {
            // one frame's gap at its ceiling after the last, a frame sent late keeping the lateness
            // it can make up (a bucket of one frame): the host's own pacing may hold it a little
            let own = frame_gap_ns(len, cap).max(1);
            f.ready_ns = f.ready_ns.max(at - own) + own;
        }
        Some(i)
    }
}

/// How `rearm` reaches the relay thread that paces a sender: a flag it reads, the eventfd that
/// wakes it.
pub(crate) struct RelayHook {
    pub(crate) rearm: Arc<AtomicBool>,
    pub(crate) wake: Box<dyn Fn() + Send + Sync>,
}

/// Where frames go: the link, the end it sends from, the clock offset stamped, the NIC queue.
struct Binding {
    sched: PyObject,
    engine_sched: Option<Py<VirtualScheduler>>,
    link: PyObject,
    end: PyObject,
    offset_ns: i64,
    queue_packets: i64,
    counts: Py<PyDict>,
}

/// A sender at `rate_bps` in bits: each frame is followed by a gap of its own bits at the rate
/// (frames of `packet_bytes`, the largest, are evenly spaced); a rate change takes effect from the
/// last packet sent, so pacing has no jumps. Its flows share it equally in bits (`State::take`).
///
/// Without `bind` it is the pure pacer (`next_send_ns`, `on_sent`). Bound to a scheduler and a
/// link, `rearm()` schedules its next packet, and each packet schedules the next: the frame is
/// the flow's template with its sequence number and send time (+ `offset_ns`) written in, sent
/// on `link` from `end` unless the NIC queue (`queue_packets` frames' wire time) is full, which
/// counts `counts["host_tx_queue_full"]`.
#[pyclass(module = "hbh_engine", frozen)]
pub struct PacedSender {
    state: Mutex<State>,
    bound: Mutex<Option<Binding>>,
    /// Paced by a netns host's relay thread instead (`HostRelay.pace`): `rearm` tells it.
    relay: Mutex<Option<RelayHook>>,
    #[pyo3(get)]
    stop_at_pacer: bool,
}

impl Binding {
    fn clone_ref(&self, py: Python<'_>) -> Binding {
        Binding {
            sched: self.sched.clone_ref(py),
            engine_sched: self.engine_sched.as_ref().map(|s| s.clone_ref(py)),
            link: self.link.clone_ref(py),
            end: self.end.clone_ref(py),
            offset_ns: self.offset_ns,
            queue_packets: self.queue_packets,
            counts: self.counts.clone_ref(py),
        }
    }
}

impl PacedSender {
    /// From now on the relay thread behind `hook` sends this sender's packets (`relay_next`,
    /// `relay_fire`): the scheduled packet and the binding are dropped.
    pub(crate) fn attach_relay(&self, py: Python<'_>, hook: RelayHook) -> PyResult<()> {
        self.cancel_pending(py)?;
        lock(&self.state).due_ns = None;
        *lock(&self.bound) = None;
        *lock(&self.relay) = Some(hook);
        Ok(())
    }

    /// The relay thread's view: when the next packet is due (None: no more); `catch_up` as in
    /// `arm`: right after a packet its own due time, else no sooner than `now`.
    pub(crate) fn relay_next(&self, now: i64, catch_up: bool) -> Option<i64> {
        let raw = lock(&self.state).next_send(now, self.stop_at_pacer)?;
        Some(if catch_up { raw } else { raw.max(now) })
    }

    /// The relay thread's packet due at `due`, built at `now` (before `due`: ahead of its time):
    /// the frame and the time it goes onto the host's uplink, which its send time says: `due`,
    /// or, built late, as far back towards `due` as catching up allows (`State::take`).
    pub(crate) fn relay_fire(&self, now: i64, due: i64, offset_ns: i64) -> Option<(Vec<u8>, i64)> {
        lock(&self.state).fire_marked(now.max(due), due, offset_ns)
    }

    /// The binding, copied out of its lock (Python code runs while it is in use).
    fn binding(&self, py: Python<'_>) -> Option<Binding> {
        lock(&self.bound).as_ref().map(|b| b.clone_ref(py))
    }

    fn now(&self, py: Python<'_>, b: &Binding) -> PyResult<i64> {
        now_of(py, &b.engine_sched, &b.sched)
    }

    /// The scheduled packet: send it, schedule the next (`__call__`, and the engine's
    /// scheduler calls it directly).
    pub(crate) fn fire(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let Some(b) = me.binding(py) else {
            return Ok(());
        };
        let now = me.now(py, &b)?;
        let frame = {
            let mut st = lock(&me.state);
            st.pending = None;
            let due = st.due_ns.take().unwrap_or(now);
            st.fire(now, due, b.offset_ns)
        };
        if let Some(frame) = frame {
            Self::put(py, &b, frame, now)?;
        }
        Self::arm(slf, &b, now, true)
    }

    fn cancel_pending(&self, py: Python<'_>) -> PyResult<()> {
        match lock(&self.state).pending.take() {
            Some(Pending::Engine(t)) => t.cancel(),
            Some(Pending::Other(h)) => {
                h.bind(py).call_method0(intern!(py, "cancel"))?;
            }
            None => {}
        }
        Ok(())
    }

    /// Schedule the next packet; `catch_up`: right after a packet, so the next one keeps its own
    /// due time even when that has passed (a late wake-up's debt, `State::take`); else (a new
    /// rate, the start) it is due no sooner than `now`.
    fn arm(slf: &Bound<'_, Self>, b: &Binding, now: i64, catch_up: bool) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let Some(raw) = lock(&me.state).next_send(now, me.stop_at_pacer) else {
            return Ok(());
        };
        let t = raw.max(now);
        let handle = match &b.engine_sched {
            Some(s) => Pending::Engine(
                s.get()
                    .schedule_token(t, Call::Engine(&PACE, slf.clone().into_any().unbind(), 0)),
            ),
            None => Pending::Other(
                b.sched
                    .bind(py)
                    .call_method1(intern!(py, "call_at"), (t, slf))?
                    .unbind(),
            ),
        };
        let mut st = lock(&me.state);
        st.pending = Some(handle);
        st.due_ns = Some(if catch_up { raw } else { t });
        Ok(())
    }

    fn put(py: Python<'_>, b: &Binding, frame: Vec<u8>, now: i64) -> PyResult<()> {
        let link = b.link.bind(py);
        let end = b.end.bind(py);
        let full = match link.downcast::<InMemoryLink>() {
            Ok(l) => {
                let l = l.get();
                let m = l.model_numbers(end)?;
                l.backlog_ns(end, now)?
                    > b.queue_packets
                        * wire_time_ns(
                            frame.len() as i64,
                            m.bitrate_bps,
                            m.min_frame_bytes,
                            m.overhead_bytes,
                        )
            }
            Err(_) => {
                let backlog: i64 = link
                    .call_method1(intern!(py, "backlog_ns"), (end, now))?
                    .extract()?;
                let wire: i64 = link
                    .getattr(intern!(py, "model"))?
                    .call_method1(intern!(py, "wire_time_ns"), (frame.len(),))?
                    .extract()?;
                backlog > b.queue_packets * wire
            }
        };
        if full {
            let counts = b.counts.bind(py);
            let key = intern!(py, "host_tx_queue_full");
            let n: i64 = match counts.get_item(key)? {
                Some(v) => v.extract()?,
                None => 0,
            };
            return counts.set_item(key, n + 1);
        }
        send_frame(link, end, frame)
    }
}

#[pymethods]
impl PacedSender {
    #[new]
    #[pyo3(signature = (rate_bps, packet_bytes, start_ns = 0, stop_at_pacer = false))]
    fn new(rate_bps: f64, packet_bytes: i64, start_ns: i64, stop_at_pacer: bool) -> PyResult<Self> {
        if packet_bytes <= 0 {
            return Err(PyValueError::new_err(format!(
                "packet size must be > 0 bytes, got {packet_bytes}"
            )));
        }
        let state = State {
            rate_bps: check_rate(rate_bps, "sending")?,
            packet_bytes,
            last_bytes: packet_bytes,
            start_ns,
            ..State::default()
        };
        Ok(PacedSender {
            state: Mutex::new(state),
            bound: Mutex::new(None),
            relay: Mutex::new(None),
            stop_at_pacer,
        })
    }

    #[getter]
    fn rate_bps(&self) -> f64 {
        lock(&self.state).rate_bps
    }

    #[getter]
    fn packet_bytes(&self) -> i64 {
        lock(&self.state).packet_bytes
    }

    #[getter]
    fn last_ns(&self) -> Option<i64> {
        lock(&self.state).last_ns
    }

    #[getter]
    fn start_ns(&self) -> i64 {
        lock(&self.state).start_ns
    }

    /// Packets taken so far (every flow).
    #[getter]
    fn taken(&self) -> i64 {
        lock(&self.state).taken
    }

    /// Bytes of the packets taken so far (every flow).
    #[getter]
    fn taken_bytes(&self) -> i64 {
        lock(&self.state).taken_bytes
    }

    /// The gap after the last frame sent (before the first: a `packet_bytes` frame's).
    #[getter]
    fn gap_ns(&self) -> i64 {
        lock(&self.state).gap_ns()
    }

    /// The pacer alone: when its next packet is due.
    fn next_send_ns(&self) -> i64 {
        lock(&self.state).pacer_next()
    }

    /// A frame of `nbytes` (default `packet_bytes`) sent at `now_ns`: the next is due its gap later.
    #[pyo3(signature = (now_ns, nbytes = None))]
    fn on_sent(&self, now_ns: i64, nbytes: Option<i64>) -> PyResult<()> {
        let mut st = lock(&self.state);
        let nbytes = nbytes.unwrap_or(st.packet_bytes);
        if nbytes <= 0 {
            return Err(PyValueError::new_err(format!(
                "a sent frame must have > 0 bytes, got {nbytes}"
            )));
        }
        st.last_ns = Some(now_ns);
        st.last_bytes = nbytes;
        Ok(())
    }

    /// A new rate (from the last packet sent on); `rearm()` reschedules the next packet.
    fn set_rate(&self, rate_bps: f64) -> PyResult<()> {
        lock(&self.state).rate_bps = check_rate(rate_bps, "sending")?;
        Ok(())
    }

    /// One more flow: `frame` is its frame with sequence number and timestamp still to fill in;
    /// `cap_bps`, its own ceiling (its `r_max`), None: its share of the pacer's rate.
    #[pyo3(signature = (flow_id, start_ns, stop_ns, frame, cap_bps = None))]
    fn add_flow(
        &self,
        flow_id: i64,
        start_ns: i64,
        stop_ns: Option<i64>,
        frame: &[u8],
        cap_bps: Option<f64>,
    ) -> PyResult<()> {
        let cap_bps = cap_bps
            .map(|c| check_rate(c, &format!("flow {flow_id}'s cap")))
            .transpose()?;
        if frame.len() < TS_AT + 8 {
            return Err(PyValueError::new_err(format!(
                "flow {flow_id}: a {}-byte frame has no datagram header",
                frame.len()
            )));
        }
        lock(&self.state).flows.push(Flow {
            id: flow_id,
            start_ns,
            stop_ns,
            next_seq: 0,
            sent: 0,
            frame: frame.to_vec(),
            deficit: 0,
            cap_bps,
            ready_ns: i64::MIN,
        });
        Ok(())
    }

    /// Packets of flow `flow_id` handed to the NIC so far (queue-full ones included).
    fn sent(&self, flow_id: i64) -> i64 {
        lock(&self.state)
            .flows
            .iter()
            .find(|f| f.id == flow_id)
            .map_or(0, |f| f.sent)
    }

    /// When the next packet goes out, after `now_ns` (None: every flow has stopped).
    fn next_packet_ns(&self, now_ns: i64) -> Option<i64> {
        lock(&self.state).next_send(now_ns, self.stop_at_pacer)
    }

    /// Send on `link` from `end` with `sched`'s clock (see the class).
    fn bind(
        &self,
        sched: &Bound<'_, PyAny>,
        link: PyObject,
        end: PyObject,
        offset_ns: i64,
        queue_packets: i64,
        counts: Py<PyDict>,
    ) {
        *lock(&self.bound) = Some(Binding {
            sched: sched.clone().unbind(),
            engine_sched: engine_of(sched),
            link,
            end,
            offset_ns,
            queue_packets,
            counts,
        });
    }

    /// Cancel the scheduled packet and schedule the next one (after a rate change, at start).
    fn rearm(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        if let Some(hook) = lock(&me.relay).as_ref() {
            hook.rearm.store(true, Ordering::Release);
            (hook.wake)();
            return Ok(());
        }
        me.cancel_pending(py)?;
        let Some(b) = me.binding(py) else {
            return Err(PyValueError::new_err("PacedSender.rearm before bind"));
        };
        let now = me.now(py, &b)?;
        Self::arm(slf, &b, now, false)
    }

    /// The scheduled packet: send it, schedule the next.
    fn __call__(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::fire(slf)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(st) = self.state.try_lock() {
            if let Some(Pending::Other(h)) = &st.pending {
                visit.call(h)?;
            }
        }
        if let Ok(bound) = self.bound.try_lock() {
            if let Some(b) = bound.as_ref() {
                visit.call(&b.sched)?;
                if let Some(s) = &b.engine_sched {
                    visit.call(s)?;
                }
                visit.call(&b.link)?;
                visit.call(&b.end)?;
                visit.call(&b.counts)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        if let Ok(mut st) = self.state.try_lock() {
            st.pending = None;
        }
        if let Ok(mut bound) = self.bound.try_lock() {
            *bound = None;
        }
    }
}

/// What a receiver learns from one flow's sequence numbers and timestamps (hosts/receiver.py):
/// packets and bytes received, one-way delays, loss (sequence numbers skipped and never seen)
/// and reordering (a packet older than the newest seen) counted apart, and duplicates.
#[pyclass(module = "hbh_engine")]
pub struct FlowRecord {
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    received: i64,
    #[pyo3(get)]
    bytes: i64,
    #[pyo3(get)]
    duplicates: i64,
    #[pyo3(get)]
    reordered: i64,
    #[pyo3(get)]
    highest: i64,
    #[pyo3(get)]
    owd_sum_ns: i64,
    missing: HashSet<i64>,
    packets: Vec<(i64, i64, i64)>,
}

#[pymethods]
impl FlowRecord {
    #[new]
    pub(crate) fn new(name: String) -> Self {
        FlowRecord {
            name,
            received: 0,
            bytes: 0,
            duplicates: 0,
            reordered: 0,
            highest: -1,
            owd_sum_ns: 0,
            missing: HashSet::new(),
            packets: Vec::new(),
        }
    }

    pub(crate) fn on_packet(&mut self, seq: i64, sent_ns: i64, now_ns: i64, size: i64) {
        if seq > self.highest {
            self.missing.extend(self.highest + 1..seq);
            self.highest = seq;
        } else if self.missing.remove(&seq) {
            self.reordered += 1;
        } else {
            self.duplicates += 1;
            return;
        }
        self.received += 1;
        self.bytes += size;
        self.owd_sum_ns += now_ns - sent_ns;
        self.packets.push((seq, sent_ns, now_ns));
    }

    /// Sequence numbers below the newest one received that never arrived.
    #[getter]
    fn lost(&self) -> usize {
        self.missing.len()
    }

    /// Per packet received: (seq, send ns, receive ns); one-way delay = receive - send.
    #[getter]
    fn packets(&self) -> Vec<(i64, i64, i64)> {
        self.packets.clone()
    }
}

/// The paper's receiver buffer (hosts/receiver.py): `capacity` packets, drained by the
/// application at `playout_bps` in bits (each packet takes its own bits at that rate, so frames
/// of several sizes play out `playout_bps`); an arrival to a full buffer is dropped (counted).
///
/// The buffer's clock never runs back: an arrival stamped before the latest time the buffer was
/// drained to (a netns host reads its buffer at a sample's wake-up, then takes frames the kernel
/// stamped before it) joins the buffer at that time. The application cannot have played a packet
/// before it had it, so what the buffer said it had played by then stays true, and every packet
/// still takes its own bits' time after the one before (docs/reference/metrics.md, host_capacity).
#[pyclass(module = "hbh_engine")]
pub struct PlayoutBuffer {
    #[pyo3(get)]
    capacity: i64,
    #[pyo3(get)]
    playout_bps: f64,
    #[pyo3(get)]
    packet_bytes: i64,
    #[pyo3(get)]
    occupancy: i64,
    #[pyo3(get)]
    dropped: i64,
    #[pyo3(get)]
    played: i64,
    #[pyo3(get)]
    played_bytes: i64,
    /// When the application took the last packet, ns (0: none yet): a report carries it.
    #[pyo3(get)]
    last_played_ns: i64,
    next_ns: Option<i64>,
    /// The latest time the buffer was drained to: an earlier arrival joins it then.
    clock_ns: i64,
    /// The flow and length (bytes) of every packet in the buffer, oldest first: the application
    /// takes them in arrival order, so that what it played is known per flow (a host shared by
    /// several flows plays out each flow's share, not the host's total: docs/reference/metrics.md, goodput),
    /// each in its own bits' time.
    queue: VecDeque<(u16, i64)>,
    played_flows: BTreeMap<u16, i64>,
}

#[pymethods]
impl PlayoutBuffer {
    #[new]
    fn new(capacity: i64, playout_bps: f64, packet_bytes: i64) -> PyResult<Self> {
        Ok(PlayoutBuffer {
            capacity,
            playout_bps: check_rate(playout_bps, "play-out")?,
            packet_bytes,
            occupancy: 0,
            dropped: 0,
            played: 0,
            played_bytes: 0,
            last_played_ns: 0,
            next_ns: None,
            clock_ns: i64::MIN,
            queue: VecDeque::new(),
            played_flows: BTreeMap::new(),
        })
    }

    /// The play-out time of a `packet_bytes` packet.
    #[getter]
    fn gap_ns(&self) -> i64 {
        self.gap_of(self.packet_bytes)
    }

    /// A packet of `flow` and `nbytes` (default `packet_bytes`) arrives; False if the buffer was
    /// full and it is dropped.
    #[pyo3(signature = (now_ns, flow = 0, nbytes = None))]
    pub(crate) fn on_arrival(
        &mut self,
        now_ns: i64,
        flow: u16,
        nbytes: Option<i64>,
    ) -> PyResult<bool> {
        let nbytes = nbytes.unwrap_or(self.packet_bytes);
        if nbytes <= 0 {
            return Err(PyValueError::new_err(format!(
                "an arriving packet must have > 0 bytes, got {nbytes}"
            )));
        }
        Ok(self.arrive(now_ns, flow, nbytes))
    }

    fn next_drain_ns(&self) -> Option<i64> {
        self.next_ns
    }

    /// Packets the application took so far, per flow id (the `flow` of `on_arrival`).
    #[getter]
    fn played_by_flow(&self) -> BTreeMap<u16, i64> {
        self.played_flows.clone()
    }

    /// The application takes every packet whose play-out time has come.
    fn drain(&mut self, now_ns: i64) {
        self.clock_ns = self.clock_ns.max(now_ns);
        while let Some(t) = self.next_ns.filter(|&t| t <= now_ns) {
            self.occupancy -= 1;
            self.played += 1;
            if let Some((flow, nbytes)) = self.queue.pop_front() {
                *self.played_flows.entry(flow).or_insert(0) += 1;
                self.played_bytes += nbytes;
            }
            self.last_played_ns = t;
            self.next_ns = self.queue.front().map(|&(_, next)| t + self.gap_of(next));
        }
    }
}

impl PlayoutBuffer {
    /// The play-out time of a packet of `nbytes`: its bits at `playout_bps`.
    fn gap_of(&self, nbytes: i64) -> i64 {
        frame_gap_ns(nbytes, self.playout_bps)
    }

    /// A packet of `flow` and `nbytes` arrives (> 0 bytes); false if the buffer was full. It
    /// joins no earlier than the buffer's clock (see the struct).
    pub(crate) fn arrive(&mut self, now_ns: i64, flow: u16, nbytes: i64) -> bool {
        let now_ns = now_ns.max(self.clock_ns);
        self.drain(now_ns);
        if self.occupancy >= self.capacity {
            self.dropped += 1;
            return false;
        }
        self.occupancy += 1;
        self.queue.push_back((flow, nbytes));
        if self.next_ns.is_none() {
            self.next_ns = Some(now_ns + self.gap_of(nbytes));
        }
        true
    }

    /// What a host's report says of the buffer: (occupancy, dropped, played, last played ns).
    pub(crate) fn report_values(&self) -> (i64, i64, i64, i64) {
        (
            self.occupancy,
            self.dropped,
            self.played,
            self.last_played_ns,
        )
    }
}
