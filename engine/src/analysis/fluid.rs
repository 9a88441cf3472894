//! The plant of topo/fluid_network.py's laws-together model, stepped: fluid on links, buffers,
//! egress queues (BMv2's stamped chunks or the shaper, FIFO; a port's priority queues sharing its link),
//! receivers' playout and the senders.
//!
//! Why compiled: the loop analysis runs before every `hbh run`, and its cost is these steps
//! (up to a hundred thousand a model, every leg, queue and buffer in each; issue 46 bounds it at a
//! tenth of the run or 2 s). The controllers stay where they are (topo/fluid_control.py, the law of
//! controlplane/): Python reads what a report carries from here and sets what its answer changes
//! (a queue's rate, a sender's rate). The rules are the module docstring's of
//! topo/fluid_network.py; every sum is taken in the order the Python model took it, and min and
//! max pick as Python's do, so the numbers are the same.

use crate::fluid_loop::{LawSpec, Loop, Plant, ReporterSpec};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};
use std::collections::VecDeque;

struct Leg {
    /// Packets in flight, a ring: step k reads (and empties) entry k % len, and what is sent on
    /// the link in step k goes into that entry, to arrive len steps later.
    line: Vec<f64>,
    buffer: Option<usize>,
    egress: Option<(usize, usize)>, // (queue, slot)
    copies: Vec<(usize, usize)>,    // multicast: (queue, slot) of each copy
    pending: Vec<f64>,              // ... and what each copy still has queued
    held: f64,
    /// What a unit of this leg's fluid counts in its buffer (its flow's packets at the buffer's unit:
    /// topo/analysis/fluid_network.py, `_Leg.weight`); 1 with one frame size.
    weight: f64,
}

struct Buffer {
    capacity: f64,
    held: f64,
    drained: f64,
    lost: f64,
    dropped: bool,
    peak: f64,
    first_loss_s: Option<f64>,
    drain_pps: f64,              // a receiver's playout (receivers only)
    last_arrival: Option<usize>, // the step packets last arrived in (None: never)
    /// (step, held, drained): the buffer as the first packet of a step's arrivals after a step
    /// without any found it (an onset: the data plane's report on that packet reads this)
    onset: Option<(usize, f64, f64)>,
}

struct Chunk {
    amounts: Vec<f64>,
    pps: f64,
    stamp: f64,
    queued: f64, // when its first packets joined the queue (s)
}

struct Slot {
    here: usize,         // the leg whose packets wait in this slot
    copy: Option<usize>, // which of its copies (multicast)
    onward: usize,       // the leg they leave on
}

struct Queue {
    link_pps: f64,
    /// Per-destination classes: this queue is one of a port's priority queues, below the one added
    /// before it, whose link it shares (strict priority: it gets what that one leaves of each step).
    below: bool,
    slots: Vec<Slot>,
    chunks: VecDeque<Chunk>,
    /// The amounts of chunks that have left, kept for the next chunks (a chunk a step per leg: an
    /// allocation each was a fifth of the plant's steps)
    spare: Vec<Vec<f64>>,
    stamp: f64,
    fwd: f64,
    deq: f64,
    pps: f64,
}

struct Sender {
    legs: Vec<(usize, f64, f64)>, // (first leg, start s, stop s)
    caps: Vec<f64>,               // each leg's flow's ceiling (b/s; inf: none), in `legs`' order
    by_cap: Vec<usize>, // places in `legs`, lowest ceiling first (sorted once, at `add_sender`)
    shares: Vec<(f64, usize)>, // a step's active legs: (cap, place in `legs`), in `by_cap`'s order
    rate_bps: Option<f64>, // the law's (None: the link's)
    link_bps: f64,
    bits: f64,
    sent: f64,
}

#[inline]
fn max0(x: f64) -> f64 {
    // Python's max(0.0, x)
    if x > 0.0 {
        x
    } else {
        0.0
    }
}

#[inline]
fn py_min(a: f64, b: f64) -> f64 {
    // Python's min(a, b): a unless b < a
    if b < a {
        b
    } else {
        a
    }
}

fn py_max_of(xs: &[f64]) -> f64 {
    let mut m = xs[0];
    for &x in &xs[1..] {
        if x > m {
            m = x;
        }
    }
    m
}

/// The fluid plant. Built by topo/fluid_network.py (buffers, legs, queues, slots, receivers,
/// senders, by index), then stepped with `run`.
#[pyclass(module = "hbh_engine")]
pub struct FluidPlant {
    dt: f64,
    fixed: bool,
    stop_loss: Option<f64>,
    legs: Vec<Leg>,
    buffers: Vec<Buffer>,
    queues: Vec<Queue>,
    receivers: Vec<(usize, Vec<usize>)>,
    senders: Vec<Sender>,
    /// A buffer lost the `stop_loss` packets (the run may stop).
    #[pyo3(get)]
    overflowed: bool,
    /// The reports and laws between the steps (fluid_loop.rs), once `set_loop` gave them.
    between: Option<Loop>,
}

impl Plant for FluidPlant {
    fn step_dt(&self) -> f64 {
        self.dt
    }

    fn advance(&mut self, k: usize) -> bool {
        self.step(k);
        self.overflowed
    }

    fn take_report(&mut self, b: usize, k: usize) -> (f64, f64, bool) {
        let buf = &mut self.buffers[b];
        let dropped = buf.dropped;
        buf.dropped = false;
        match buf.onset {
            Some((at, held, drained)) if at == k => (held, drained, dropped),
            _ => (buf.held, buf.drained, dropped),
        }
    }

    fn last_arrival(&self, b: usize) -> Option<usize> {
        self.buffers[b].last_arrival
    }

    fn queue_counters(&self, q: usize) -> (f64, f64) {
        (self.queues[q].fwd, self.queues[q].deq)
    }

    fn sender_sent(&self, s: usize) -> f64 {
        self.senders[s].sent
    }

    fn put_queue_rate(&mut self, q: usize, pps: f64) {
        self.queues[q].pps = pps;
    }

    fn put_sender_rate(&mut self, s: usize, rate_bps: f64) {
        if self.senders[s].rate_bps.is_some() {
            self.senders[s].rate_bps = Some(rate_bps);
        }
    }

    fn each_held(&self, f: &mut dyn FnMut(f64)) {
        for b in &self.buffers {
            f(b.held);
        }
    }

    fn each_lag(&self, now: f64, f: &mut dyn FnMut(f64)) {
        for q in &self.queues {
            let lag = if self.fixed && q.pps > 0.0 {
                q.stamp - now - (q.fwd - q.deq) / q.pps
            } else {
                0.0
            };
            f(max0(lag));
        }
    }

    fn total_lost(&self) -> f64 {
        self.lost()
    }
}

impl FluidPlant {
    fn step(&mut self, k: usize) {
        self.arrive(k);
        self.serve(k);
        self.send(k);
    }

    fn arrive(&mut self, k: usize) {
        let now = k as f64 * self.dt;
        let fixed = self.fixed;
        let FluidPlant {
            legs,
            buffers,
            queues,
            stop_loss,
            overflowed,
            ..
        } = self;
        for leg in legs.iter_mut() {
            let n = leg.line.len();
            let i = k % n;
            let amount = leg.line[i];
            if amount == 0.0 {
                continue;
            }
            leg.line[i] = 0.0;
            let Some(b) = leg.buffer else { continue };
            if amount < 0.0 {
                continue;
            }
            let buf = &mut buffers[b];
            if amount > 1e-9 && buf.last_arrival != Some(k) {
                // the step's first leg to bring packets: after a silent step, its first packet finds
                // the buffer as the step before left it
                if k == 0 || buf.last_arrival != Some(k - 1) {
                    buf.onset = Some((k, buf.held, buf.drained));
                }
                buf.last_arrival = Some(k);
            }
            // the buffer counts the leg's fluid at its weight (the packets it is); the leg and its queue
            // keep the fluid's own units
            let w = leg.weight;
            let counted = amount * w;
            let room = buf.capacity - buf.held;
            let kept = if counted < room { counted } else { max0(room) };
            let take = kept / w;
            if counted - kept > 1e-9 {
                buf.lost += counted - kept;
                buf.dropped = true;
                if buf.first_loss_s.is_none() && buf.lost >= 1.0 {
                    buf.first_loss_s = Some(now);
                }
                if let Some(limit) = *stop_loss {
                    if buf.lost >= limit {
                        *overflowed = true;
                    }
                }
            }
            buf.held += kept;
            leg.held += take;
            if buf.held > buf.peak * buf.capacity {
                buf.peak = buf.held / buf.capacity;
            }
            let Some((q, slot)) = leg.egress else {
                continue;
            };
            if take <= 0.0 {
                continue;
            }
            if leg.copies.is_empty() {
                enqueue(&mut queues[q], slot, take, now, fixed);
                continue;
            }
            for (j, &(cq, cslot)) in leg.copies.iter().enumerate() {
                leg.pending[j] += take;
                enqueue(&mut queues[cq], cslot, take, now, fixed);
            }
        }
    }

    fn serve(&mut self, k: usize) {
        let (fixed, dt) = (self.fixed, self.dt);
        let end = (k + 1) as f64 * dt; // what may leave in this step: stamped before its end
        let FluidPlant {
            legs,
            buffers,
            queues,
            receivers,
            ..
        } = self;
        // the link time left in this step on the port of the queue served last (priority queues of
        // one port, `below`, share it: on BMv2's queues `budget` is that link time, on the shaper the
        // queue's own time, `wire` the link's)
        let mut wire = dt;
        for q in queues.iter_mut() {
            if !q.below {
                wire = dt;
            }
            let mut budget = if fixed { wire } else { dt };
            while budget > 1e-15 && (fixed || !q.below || wire > 1e-15) {
                let Some(chunk) = q.chunks.front_mut() else {
                    break;
                };
                let mut total = 0.0;
                for &a in &chunk.amounts {
                    total += a;
                }
                let out;
                if fixed {
                    // BMv2: the packets stamped by the step's end, at the link's rate
                    let (pps, link) = (chunk.pps, q.link_pps);
                    let due = if pps <= 0.0 || total <= 1e-9 {
                        total
                    } else {
                        py_min(total, (end - chunk.stamp) * pps)
                    };
                    if due <= 1e-12 && total > 1e-9 {
                        break; // the head's stamp is later: FIFO, nothing behind it leaves either
                    }
                    out = py_min(due, link * budget);
                    budget -= out / link;
                    if pps > 0.0 {
                        chunk.stamp += out / pps;
                    }
                } else {
                    let rate = if q.pps > 0.0 {
                        py_min(q.pps, q.link_pps)
                    } else {
                        q.link_pps
                    };
                    let mut o = py_min(total, rate * budget);
                    if q.below {
                        o = py_min(o, q.link_pps * wire);
                    }
                    out = o;
                    budget -= out / rate;
                    wire -= out / q.link_pps;
                }
                let share = if total > 0.0 { out / total } else { 1.0 };
                let keep = 1.0 - share;
                for (slot, amount) in chunk.amounts.iter_mut().enumerate() {
                    let a = *amount;
                    if a > 0.0 {
                        let gone = a * share;
                        let s = &q.slots[slot];
                        let here = &mut legs[s.here];
                        let mut freed = gone;
                        if let Some(c) = s.copy {
                            // multicast: the buffer frees what the slowest copy has now sent too
                            let before = py_max_of(&here.pending);
                            here.pending[c] = max0(here.pending[c] - gone);
                            freed = before - py_max_of(&here.pending);
                        }
                        here.held = max0(here.held - freed);
                        if let Some(b) = here.buffer {
                            let buf = &mut buffers[b];
                            let counted = freed * here.weight;
                            buf.held = max0(buf.held - counted);
                            buf.drained += counted;
                        }
                        let line = &mut legs[s.onward].line;
                        let n = line.len();
                        line[k % n] += gone;
                        q.deq += gone;
                        *amount = a * keep;
                    }
                }
                if share >= 1.0 - 1e-12 {
                    if let Some(gone) = q.chunks.pop_front() {
                        q.spare.push(gone.amounts);
                    }
                } else if fixed && out < total && budget > 1e-15 {
                    break; // held by its stamps, not by the link
                }
            }
            if fixed {
                wire = budget;
            }
        }
        for (b, mine) in receivers.iter() {
            // the playout takes drain x dt from the buffer, from each flow in proportion to what it holds
            let mut held = 0.0;
            for &l in mine {
                held += legs[l].held;
            }
            if held <= 0.0 {
                continue;
            }
            let buf = &mut buffers[*b];
            let share = py_min(1.0, buf.drain_pps * dt / held);
            for &l in mine {
                let leg = &mut legs[l];
                let out = leg.held * share;
                leg.held -= out;
                let counted = out * leg.weight;
                buf.held = max0(buf.held - counted);
                buf.drained += counted;
            }
        }
    }

    fn send(&mut self, k: usize) {
        let dt = self.dt;
        let now_s = k as f64 * dt;
        let FluidPlant { legs, senders, .. } = self;
        for s in senders.iter_mut() {
            s.shares.clear();
            for &j in &s.by_cap {
                let (_, start, stop) = s.legs[j];
                if start <= now_s && now_s < stop {
                    s.shares.push((s.caps[j], j));
                }
            }
            if s.shares.is_empty() {
                continue;
            }
            let rate = match s.rate_bps {
                None => s.link_bps,
                Some(r) => py_min(r, s.link_bps),
            };
            // the flows share the rate in bits, a flow with a ceiling keeping no more than it (max-min,
            // as the hosts' pacer: engine/src/hosts/host.rs, `take`)
            let mut left = rate;
            let mut count = s.shares.len();
            for &(cap, j) in &s.shares {
                let fair = left / count as f64;
                let share = if cap < fair { cap } else { fair };
                left -= share;
                count -= 1;
                let amount = share * dt / s.bits;
                s.sent += amount;
                let line = &mut legs[s.legs[j].0].line;
                let n = line.len();
                line[k % n] += amount;
            }
        }
    }
}

fn enqueue(q: &mut Queue, slot: usize, take: f64, now: f64, fixed: bool) {
    // ``take`` packets of the leg in ``slot`` join the queue as a chunk (on BMv2's queues stamped
    // at the queue rate in force)
    q.fwd += take;
    let pps = if fixed { q.pps } else { 0.0 };
    let prev = q.stamp;
    let first = if prev > now { prev } else { now }; // BMv2: a gap after the last stamp, or now
    q.stamp = if pps > 0.0 { first + take / pps } else { first };
    if let Some(last) = q.chunks.back_mut() {
        // one stamped run, and FIFO: a chunk leaves its slots in proportion, so only what joined the queue
        // at one instant, or one slot's packets alone, may share it (another slot's packets appended to a
        // run that queued earlier would leave beside the packets ahead of them, not behind them)
        let alone = last
            .amounts
            .iter()
            .enumerate()
            .all(|(i, &a)| i == slot || a <= 0.0);
        if last.pps == pps && (pps == 0.0 || prev >= now) && (last.queued == now || alone) {
            last.amounts[slot] += take;
            return;
        }
    }
    let mut amounts = match q.spare.pop() {
        Some(mut spare) => {
            spare.clear();
            spare.resize(q.slots.len(), 0.0);
            spare
        }
        None => vec![0.0; q.slots.len()],
    };
    amounts[slot] = take;
    q.chunks.push_back(Chunk {
        amounts,
        pps,
        stamp: first,
        queued: now,
    });
}

fn check(i: usize, len: usize, what: &str) -> PyResult<usize> {
    if i < len {
        Ok(i)
    } else {
        Err(PyIndexError::new_err(format!("{what} {i}: only {len}")))
    }
}

#[pymethods]
impl FluidPlant {
    #[new]
    #[pyo3(signature = (dt, fixed, stop_loss = None))]
    fn new(dt: f64, fixed: bool, stop_loss: Option<f64>) -> Self {
        FluidPlant {
            dt,
            fixed,
            stop_loss,
            legs: Vec::new(),
            buffers: Vec::new(),
            queues: Vec::new(),
            receivers: Vec::new(),
            senders: Vec::new(),
            overflowed: false,
            between: None,
        }
    }

    /// A buffer of `capacity` packets (a receiver's: drained at `drain_pps`); its index.
    #[pyo3(signature = (capacity, drain_pps = 0.0))]
    fn add_buffer(&mut self, capacity: f64, drain_pps: f64) -> usize {
        self.buffers.push(Buffer {
            capacity,
            held: 0.0,
            drained: 0.0,
            lost: 0.0,
            dropped: false,
            peak: 0.0,
            first_loss_s: None,
            drain_pps,
            last_arrival: None,
            onset: None,
        });
        self.buffers.len() - 1
    }

    /// A leg whose link takes `steps` steps, into `buffer` (None: a receiver without one), a unit of
    /// its fluid counting `weight` in that buffer; its index.
    #[pyo3(signature = (steps, buffer = None, weight = 1.0))]
    fn add_leg(&mut self, steps: usize, buffer: Option<usize>, weight: f64) -> PyResult<usize> {
        if let Some(b) = buffer {
            check(b, self.buffers.len(), "buffer")?;
        }
        if !(weight > 0.0 && weight.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "leg weight {weight}: must be > 0 and finite"
            )));
        }
        self.legs.push(Leg {
            line: vec![0.0; steps.max(1)],
            buffer,
            egress: None,
            copies: Vec::new(),
            pending: Vec::new(),
            held: 0.0,
            weight,
        });
        Ok(self.legs.len() - 1)
    }

    /// An egress queue onto a link of `link_pps`; its index. `below`: a priority queue of the port
    /// of the queue added just before it, below that one (per-destination classes).
    #[pyo3(signature = (link_pps, below = false))]
    fn add_queue(&mut self, link_pps: f64, below: bool) -> PyResult<usize> {
        if below && self.queues.is_empty() {
            return Err(PyValueError::new_err(
                "a queue below another needs one added before it",
            ));
        }
        self.queues.push(Queue {
            link_pps,
            below,
            slots: Vec::new(),
            chunks: VecDeque::new(),
            spare: Vec::new(),
            stamp: 0.0,
            fwd: 0.0,
            deq: 0.0,
            pps: 0.0,
        });
        Ok(self.queues.len() - 1)
    }

    /// Slot `slot` of `queue` (the next one) holds `here`'s packets, which leave on `onward`;
    /// `copy`: which of `here`'s multicast copies it is (None: its only way on).
    #[pyo3(signature = (queue, slot, here, onward, copy = None))]
    fn add_slot(
        &mut self,
        queue: usize,
        slot: usize,
        here: usize,
        onward: usize,
        copy: Option<usize>,
    ) -> PyResult<()> {
        check(queue, self.queues.len(), "queue")?;
        check(here, self.legs.len(), "leg")?;
        check(onward, self.legs.len(), "leg")?;
        let q = &mut self.queues[queue];
        if slot != q.slots.len() {
            return Err(PyIndexError::new_err(format!(
                "slot {slot}: the queue's next is {}",
                q.slots.len()
            )));
        }
        q.slots.push(Slot { here, copy, onward });
        Ok(())
    }

    /// Leg `leg` joins `queue`'s `slot` (None: its node receives), or, multicast, every (queue,
    /// slot) of `copies`.
    #[pyo3(signature = (leg, egress, copies))]
    fn route_leg(
        &mut self,
        leg: usize,
        egress: Option<(usize, usize)>,
        copies: Vec<(usize, usize)>,
    ) -> PyResult<()> {
        let l = check(leg, self.legs.len(), "leg")?;
        for &(q, slot) in egress.iter().chain(copies.iter()) {
            check(q, self.queues.len(), "queue")?;
            check(slot, self.queues[q].slots.len(), "slot")?;
        }
        let leg = &mut self.legs[l];
        leg.egress = egress;
        leg.pending = vec![0.0; copies.len()];
        leg.copies = copies;
        Ok(())
    }

    /// Receiver's buffer `buffer` drains the legs `legs` at its playout rate.
    fn add_receiver(&mut self, buffer: usize, legs: Vec<usize>) -> PyResult<()> {
        check(buffer, self.buffers.len(), "buffer")?;
        for &l in &legs {
            check(l, self.legs.len(), "leg")?;
        }
        self.receivers.push((buffer, legs));
        Ok(())
    }

    /// A host link of `link_bps` whose flows' first legs are `legs` (leg, start s, stop s), packets
    /// of `bits`; `controlled`: a law sets its rate (`set_sender_rate`); `caps`: each flow's ceiling
    /// (b/s; None or inf: none). Its index.
    #[pyo3(signature = (link_bps, bits, legs, controlled, caps = None))]
    fn add_sender(
        &mut self,
        link_bps: f64,
        bits: f64,
        legs: Vec<(usize, f64, f64)>,
        controlled: bool,
        caps: Option<Vec<f64>>,
    ) -> PyResult<usize> {
        for &(l, _, _) in &legs {
            check(l, self.legs.len(), "leg")?;
        }
        let caps = caps.unwrap_or_else(|| vec![f64::INFINITY; legs.len()]);
        if caps.len() != legs.len() || caps.iter().any(|c| c.is_nan() || *c <= 0.0) {
            return Err(PyValueError::new_err("one ceiling > 0 per leg"));
        }
        let mut by_cap: Vec<usize> = (0..legs.len()).collect();
        by_cap.sort_by(|&a, &b| caps[a].total_cmp(&caps[b]));
        self.senders.push(Sender {
            legs,
            caps,
            by_cap,
            shares: Vec::new(),
            rate_bps: if controlled { Some(0.0) } else { None },
            link_bps,
            bits,
            sent: 0.0,
        });
        Ok(self.senders.len() - 1)
    }

    fn set_sender_rate(&mut self, sender: usize, rate_bps: f64) -> PyResult<()> {
        let s = check(sender, self.senders.len(), "sender")?;
        if self.senders[s].rate_bps.is_some() {
            self.senders[s].rate_bps = Some(rate_bps);
        }
        Ok(())
    }

    fn set_sender_link(&mut self, sender: usize, link_bps: f64) -> PyResult<()> {
        let s = check(sender, self.senders.len(), "sender")?;
        self.senders[s].link_bps = link_bps;
        Ok(())
    }

    fn set_queue_link(&mut self, queue: usize, link_pps: f64) -> PyResult<()> {
        let q = check(queue, self.queues.len(), "queue")?;
        self.queues[q].link_pps = link_pps;
        Ok(())
    }

    /// The queue rate in force (packets/s, 0: the link's).
    fn set_queue_rate(&mut self, queue: usize, pps: f64) -> PyResult<()> {
        let q = check(queue, self.queues.len(), "queue")?;
        self.queues[q].pps = pps;
        Ok(())
    }

    /// Steps `start` .. `stop` (arrive, serve, send each); stops after the step in which a buffer
    /// lost `stop_loss` packets. Returns the last step run.
    fn run(&mut self, start: usize, stop: usize) -> usize {
        let mut k = start;
        while k < stop {
            self.step(k);
            if self.overflowed {
                return k;
            }
            k += 1;
        }
        stop.saturating_sub(1)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match &self.between {
            Some(between) => between.visit(&visit),
            None => Ok(()),
        }
    }

    fn __clear__(&mut self) {
        self.between = None;
    }

    /// The loop between the steps (fluid_loop.rs): the laws' `answer` (controlplane/fluid_laws.py's
    /// `LawBatch.answer`: a step's calls, ten integers each, to a rate and a value each), per law
    /// (host?, its sender's or queue's index, its buffer's capacity, interval ns, twin class), per
    /// buffer that reports (its index, interval and delay in steps, its law's place), the laws'
    /// rates, the envelope's sampling and window steps, the last timed event (s), the buffers' unit
    /// in the envelope, and whether a loss of `stop_loss` stops the run.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (answer, laws, reporting, rates, sample, window, last_event, tolerance, stop_at_loss))]
    fn set_loop(
        &mut self,
        answer: Py<PyAny>,
        laws: Vec<LawSpec>,
        reporting: Vec<ReporterSpec>,
        rates: Vec<f64>,
        sample: usize,
        window: usize,
        last_event: f64,
        tolerance: f64,
        stop_at_loss: bool,
    ) -> PyResult<()> {
        for &(host, target, ..) in &laws {
            let len = if host {
                self.senders.len()
            } else {
                self.queues.len()
            };
            check(target, len, if host { "sender" } else { "queue" })?;
        }
        for &(buffer, ..) in &reporting {
            check(buffer, self.buffers.len(), "buffer")?;
        }
        self.between = Some(Loop::new(
            answer,
            laws,
            reporting,
            rates,
            sample,
            window,
            last_event,
            tolerance,
            stop_at_loss,
        )?);
        Ok(())
    }

    /// Answers the laws have computed so far (one per report but those a twin's answer served).
    fn answers(&self) -> usize {
        self.between.as_ref().map_or(0, Loop::answers)
    }

    /// What each law's rate is divided by in the envelope's state, in the laws' order.
    fn set_rate_units(&mut self, units: Vec<f64>) -> PyResult<()> {
        match self.between.as_mut() {
            Some(between) => between.set_units(units),
            None => Err(PyValueError::new_err("set_loop first")),
        }
    }

    /// Steps `start` .. `until`, each followed by its reports, the laws' answers and the
    /// envelope: (the step it stopped at, or `until`; 0: ran to `until`, 1: stopped at a loss,
    /// 2: settled).
    fn drive(&mut self, py: Python<'_>, start: usize, until: usize) -> PyResult<(usize, u8)> {
        let Some(mut between) = self.between.take() else {
            return Err(PyValueError::new_err("set_loop first"));
        };
        let out = between.drive(py, self, start, until);
        self.between = Some(between);
        out
    }

    /// What buffer `b` reports: (held, drained, dropped since the last call); clears dropped.
    fn report(&mut self, b: usize) -> PyResult<(f64, f64, bool)> {
        let b = check(b, self.buffers.len(), "buffer")?;
        let buf = &mut self.buffers[b];
        let dropped = buf.dropped;
        buf.dropped = false;
        Ok((buf.held, buf.drained, dropped))
    }

    /// Queue `q`'s counters: (packets queued, packets sent), cumulative.
    fn counters(&self, q: usize) -> PyResult<(f64, f64)> {
        let q = check(q, self.queues.len(), "queue")?;
        Ok((self.queues[q].fwd, self.queues[q].deq))
    }

    /// Packets sender `s` has sent, cumulative.
    fn sent(&self, s: usize) -> PyResult<f64> {
        let s = check(s, self.senders.len(), "sender")?;
        Ok(self.senders[s].sent)
    }

    /// Every buffer's occupancy, in order.
    fn held(&self) -> Vec<f64> {
        self.buffers.iter().map(|b| b.held).collect()
    }

    /// Packets lost, all buffers together (summed in order).
    fn lost(&self) -> f64 {
        let mut total = 0.0;
        for b in &self.buffers {
            total += b.lost;
        }
        total
    }

    /// Per buffer: (peak, lost, first loss s or None).
    fn peaks(&self) -> Vec<(f64, f64, Option<f64>)> {
        self.buffers
            .iter()
            .map(|b| (b.peak, b.lost, b.first_loss_s))
            .collect()
    }
}
