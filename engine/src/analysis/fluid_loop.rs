//! The loop of topo/analysis/fluid_network.py's laws-together model between the plant's steps:
//! the buffers sample their reports, the reports travel, the laws answer them (one call a step
//! into the controllers, controlplane/fluid_laws.py's `LawBatch.answer`, with every report that
//! arrives in it), and the model checks whether it has settled.
//!
//! Why compiled: the laws answer about a million reports in the bench's big cases (every step
//! samples one), and in Python what surrounds each answer (sampling, rounding, queueing, the twin
//! classes, the envelope) cost more than the answers themselves: issue 46 bounds the analysis
//! at a tenth of the run or 2 s. The laws stay where they are, in Python (controlplane/, the
//! agents' code): this only calls them. One call a step, not one a report: the 12 x 4 head-of-line
//! fabric's 60 s model asks 433,330 answers, each a call with its own tuple of arguments and a read
//! of the law's rate back. It knows the plant through `Plant` alone (fluid.rs
//! implements it). The rules are fluid_network.py's, as its `_report` and `_Envelope` applied
//! them before they moved here: the same reports in the same order, Python's `round`, every
//! comparison as Python's, so the model's numbers are the same to the bit. A step's answers are
//! computed in the order its reports arrive and applied after the last (a rate set in a step
//! changes none of the counters another report of that step reads: the plant moves only in `advance`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::{PyTraverseError, PyVisit};

/// What the loop asks of the plant.
pub trait Plant {
    fn step_dt(&self) -> f64;
    /// Step `k`; true when a buffer lost the plant's `stop_loss` (the run may stop).
    fn advance(&mut self, k: usize) -> bool;
    /// Buffer `b`'s report at step `k`: (held, drained, dropped since the last); clears dropped.
    /// At an arrival after a step without any, held and drained as the first packet found them.
    fn take_report(&mut self, b: usize, k: usize) -> (f64, f64, bool);
    /// The step buffer `b`'s packets last arrived in (None: never).
    fn last_arrival(&self, b: usize) -> Option<usize>;
    fn queue_counters(&self, q: usize) -> (f64, f64);
    fn sender_sent(&self, s: usize) -> f64;
    fn put_queue_rate(&mut self, q: usize, pps: f64);
    fn put_sender_rate(&mut self, s: usize, rate_bps: f64);
    /// Calls `f` with every buffer's occupancy, in order.
    fn each_held(&self, f: &mut dyn FnMut(f64));
    /// Calls `f` with every queue's lag at `now` (s): how much later its last stamp is than its
    /// packets would leave at its rate now (0 without stamps, or none later).
    fn each_lag(&self, now: f64, f: &mut dyn FnMut(f64));
    fn total_lost(&self) -> f64;
}

/// Whether buffer `r` reports at step `k`, as the data plane's buffers do (p4src/alinea.p4's
/// `check_report_due`, hosts/receiver.py's reporter): at an arrival once a report interval has
/// passed since its last report (the first arrival ever reports at once); without one, a polled
/// switch buffer (`options.report_polls` on BMv2's queues: the agents poll) on a poll (`poll`:
/// one of its intervals' ends) two intervals after its last report while it saw an arrival in its
/// last `POLL_LIVE_INTERVALS` intervals; else it is silent. Why: a law that hears nothing holds
/// its rate. Reports of an idle buffer at every interval let the model's laws climb before their
/// flows start (a host's to 235 Mb/s on a 20 Mb/s path, where the run's host starts at its
/// initial rate), so the model started up from another state than the run.
///
/// Why at the arrival and not at the intervals' ends: a buffer's reports keep the phase of the
/// arrival that started them, and the first report of a flow's start-up reads the buffer as its
/// first packet found it. At the intervals' ends, the model's first report of a ramp came up to an
/// interval after the first arrival, found packets queued, and its law braked an interval before
/// the run's (whose first report reads a starved buffer): the model's buffer peaked at 0.72 of 173
/// packets where the run's overflowed (37 lost: tests/topo/random_cases/onset-report-tree.yaml).
fn report_due(r: &Reporter, last_arrival: Option<usize>, k: usize, poll: bool, dt: f64) -> bool {
    let since_report = |n: usize| r.last_report.is_none_or(|last| k - last >= n * r.interval);
    if last_arrival == Some(k) {
        return since_report(1);
    }
    let Some(last_k) = last_arrival else {
        return false;
    };
    let live =
        (k as f64) * dt - (last_k as f64) * dt < (POLL_LIVE_INTERVALS * r.interval) as f64 * dt;
    poll && r.polls && live && since_report(POLL_INTERVALS)
}

/// Python's `round(x)` of a float (half to even), an error where Python's would raise.
fn py_round(x: f64) -> PyResult<i64> {
    if !x.is_finite() {
        return Err(PyValueError::new_err(format!(
            "the fluid model reported {x} packets"
        )));
    }
    Ok(x.round_ties_even() as i64)
}

struct Law {
    host: bool,    // a host's (sets its sender's rate) or a switch's (its queue's)
    target: usize, // the sender's or the queue's index in the plant
    capacity: i64,
    interval_ns: i64,
}

/// Integers per call in the batch (controlplane/fluid_laws.py `CALL_INTS`): the law's place, then `Said`.
const CALL_INTS: usize = 10;

struct Reporter {
    buffer: usize,
    interval: usize,
    delay: usize,
    law: usize,
    polls: bool, // polled while live (a switch's, with report polls); else it reports on arrivals only
    last_report: Option<usize>, // the step of its last report
}

/// A report poll reports a port only within this many report intervals of its last arrival
/// (p4src/alinea.p4's 2^POLL_LIVE_SHIFT), and only two intervals after its last report.
const POLL_LIVE_INTERVALS: usize = 32;
const POLL_INTERVALS: usize = 2;

/// What a law is told: a host's (now, occupancy, capacity, overflow, interval, sent) or a
/// switch's (now, sampled, occupancy, capacity, overflow, interval, fwd, deq, drained); overflow
/// as 0 / 1 (Python's True == 1 in the twins' keys).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Said([i64; 9]);

struct Report {
    law: usize,
    occupancy: i64,
    overflow: bool,
    drained: i64,
    sampled_ns: i64,
}

/// A report a twin class answered this step: (class, report) -> the class it moves to, the
/// batch's answer that holds its rate and value, the law that computed it and how many took it.
struct Known {
    class: usize,
    said: Said,
    moved: usize,
    answer: usize,
    law: usize,
    count: usize,
}

pub struct Loop {
    answer: Py<PyAny>, // LawBatch.answer, bound: a step's calls -> (rate, value) per call
    laws: Vec<Law>,
    reporting: Vec<Reporter>,
    every: usize,              // the gcd of the intervals (0: no buffer reports)
    rates: Vec<f64>,           // each law's rate (b/s)
    units: Vec<f64>,           // ... divided by this in the envelope's state
    twin: Vec<usize>,          // each law's twin class
    twins: usize,              // classes so far
    solo: Vec<bool>,           // alone in its class: answers its reports at once
    pending: Vec<Vec<Said>>,   // reports its twins answered for it
    due: Vec<Vec<Report>>, // reports on their way, in the order sampled: step k's at k % len (longer than any delay)
    calls: Vec<i64>,       // this step's calls, CALL_INTS integers each
    plan: Vec<(usize, usize)>, // this step's reports in order: (law, the answer that is its)
    known: Vec<Known>,     // this step's answers shared by twins
    answers: usize,        // answers the laws computed (calls), the run so far
    sample: usize,
    window: usize,
    last_event: f64,
    tolerance: f64, // packets: the buffers' unit in the envelope's state
    stop_at_loss: bool,
    // the envelope: the lowest and highest of the state over the current window and the last one
    low: Vec<f64>,
    high: Vec<f64>,
    open: bool,
    last: Option<(Vec<f64>, Vec<f64>)>,
    lost: f64,
    state: Vec<f64>,
}

/// A law as fluid_network.py hands it: (host?, target, capacity, interval ns, twin class).
pub type LawSpec = (bool, usize, i64, i64, usize);
/// A buffer that reports: (plant index, interval steps, delay steps, its law's place, polled).
pub type ReporterSpec = (usize, usize, usize, usize, bool);

impl Loop {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        answer: Py<PyAny>,
        laws: Vec<LawSpec>,
        reporting: Vec<ReporterSpec>,
        rates: Vec<f64>,
        sample: usize,
        window: usize,
        last_event: f64,
        tolerance: f64,
        stop_at_loss: bool,
    ) -> PyResult<Loop> {
        if rates.len() != laws.len() {
            return Err(PyValueError::new_err("one rate per law"));
        }
        let mut out = Vec::with_capacity(laws.len());
        let mut twin = Vec::with_capacity(laws.len());
        for (host, target, capacity, interval_ns, class) in laws {
            out.push(Law {
                host,
                target,
                capacity,
                interval_ns,
            });
            twin.push(class);
        }
        let mut reporters = Vec::with_capacity(reporting.len());
        let mut every = 0;
        let mut longest = 0;
        for (buffer, interval, delay, law, polls) in reporting {
            if law >= out.len() || interval == 0 {
                return Err(PyValueError::new_err(format!(
                    "reporter of buffer {buffer}: law {law}, interval {interval}"
                )));
            }
            every = gcd(every, interval);
            longest = longest.max(delay);
            reporters.push(Reporter {
                buffer,
                interval,
                delay,
                law,
                polls,
                last_report: None,
            });
        }
        let twins = twin.iter().map(|&c| c + 1).max().unwrap_or(0);
        let solo = twin
            .iter()
            .map(|c| twin.iter().filter(|d| *d == c).count() == 1)
            .collect();
        let n = out.len();
        Ok(Loop {
            answer,
            laws: out,
            reporting: reporters,
            every,
            units: vec![1.0; n],
            rates,
            twin,
            twins,
            solo,
            pending: (0..n).map(|_| Vec::new()).collect(),
            due: (0..=longest).map(|_| Vec::new()).collect(),
            calls: Vec::new(),
            plan: Vec::new(),
            known: Vec::new(),
            answers: 0,
            sample: sample.max(1),
            window: window.max(1),
            last_event,
            tolerance,
            stop_at_loss,
            low: Vec::new(),
            high: Vec::new(),
            open: false,
            last: None,
            lost: 0.0,
            state: Vec::new(),
        })
    }

    /// The Python objects it holds (the plant's `__traverse__`).
    pub fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.answer)
    }

    /// Answers the laws computed so far (a twin's shared answer is computed once).
    pub fn answers(&self) -> usize {
        self.answers
    }

    pub fn set_units(&mut self, units: Vec<f64>) -> PyResult<()> {
        if units.len() != self.laws.len() {
            return Err(PyValueError::new_err("one rate unit per law"));
        }
        self.units = units;
        Ok(())
    }

    /// Steps `start` .. `until`, each followed by its reports and the envelope's sample: (the
    /// step it stopped at, or `until`; why: 0 it ran to `until`, 1 a loss stopped it
    /// (`stop_at_loss`), 2 it settled).
    pub fn drive<P: Plant>(
        &mut self,
        py: Python<'_>,
        plant: &mut P,
        start: usize,
        until: usize,
    ) -> PyResult<(usize, u8)> {
        let dt = plant.step_dt();
        let mut k = start;
        while k < until {
            if plant.advance(k) && self.stop_at_loss {
                return Ok((k, 1));
            }
            self.report(py, plant, k, dt)?;
            if k % self.sample == 0 {
                self.sample_state(plant, k as f64 * dt);
                if k != 0
                    && k % self.window == 0
                    && self.close_window(plant.total_lost())
                    && k as f64 * dt > self.last_event
                {
                    return Ok((k, 2));
                }
            }
            k += 1;
        }
        Ok((until, 0))
    }

    fn push_call(&mut self, i: usize, said: &Said) -> usize {
        self.calls.push(i as i64);
        self.calls.extend_from_slice(&said.0);
        self.calls.len() / CALL_INTS - 1
    }

    /// Step `k`'s reports: the buffers whose interval ends sample theirs, the laws whose reports
    /// arrive answer them (in the order sampled, in one call). Twin laws (one class: the same kind,
    /// parameters and reports so far) that get the same report answer it once: the first
    /// computes, the others take its answer and keep the report, to answer it should a report
    /// of theirs ever differ from their class's (fluid_network.py's docstring).
    fn report<P: Plant>(
        &mut self,
        py: Python<'_>,
        plant: &mut P,
        k: usize,
        dt: f64,
    ) -> PyResult<()> {
        let now_ns = (k as f64 * dt * 1e9) as i64;
        let ring = self.due.len();
        let polls = self.every > 0 && k % self.every == 0;
        for r in self.reporting.iter_mut() {
            let poll = polls && k % r.interval == 0;
            if !report_due(r, plant.last_arrival(r.buffer), k, poll, dt) {
                continue;
            }
            r.last_report = Some(k);
            let (held, drained, dropped) = plant.take_report(r.buffer, k);
            let report = Report {
                law: r.law,
                occupancy: py_round(held)?,
                overflow: dropped,
                drained: py_round(drained)?,
                sampled_ns: now_ns,
            };
            self.due[(k + r.delay) % ring].push(report);
        }
        let mut arrived = std::mem::take(&mut self.due[k % ring]);
        if arrived.is_empty() {
            self.due[k % ring] = arrived;
            return Ok(());
        }
        self.calls.clear();
        self.plan.clear();
        self.known.clear();
        for rep in arrived.drain(..) {
            let i = rep.law;
            let (host, target) = (self.laws[i].host, self.laws[i].target);
            let (capacity, interval_ns) = (self.laws[i].capacity, self.laws[i].interval_ns);
            let overflow = rep.overflow as i64;
            let said = if host {
                let sent = py_round(plant.sender_sent(target))?;
                Said([
                    now_ns,
                    rep.occupancy,
                    capacity,
                    overflow,
                    interval_ns,
                    sent,
                    0,
                    0,
                    0,
                ])
            } else {
                let (fwd, deq) = plant.queue_counters(target);
                Said([
                    now_ns,
                    rep.sampled_ns,
                    rep.occupancy,
                    capacity,
                    overflow,
                    interval_ns,
                    py_round(fwd)?,
                    py_round(deq)?,
                    rep.drained,
                ])
            };
            if self.solo[i] {
                let a = self.push_call(i, &said);
                self.plan.push((i, a));
                continue;
            }
            let class = self.twin[i];
            match self
                .known
                .iter_mut()
                .find(|a| a.class == class && a.said == said)
            {
                None => {
                    // it leaves its class: the reports its twins answered for it, first
                    for old in std::mem::take(&mut self.pending[i]) {
                        self.push_call(i, &old);
                    }
                    let a = self.push_call(i, &said);
                    self.plan.push((i, a));
                    self.known.push(Known {
                        class,
                        said,
                        moved: self.twins,
                        answer: a,
                        law: i,
                        count: 1,
                    });
                    self.twin[i] = self.twins;
                    self.twins += 1;
                }
                Some(known) => {
                    self.plan.push((i, known.answer));
                    self.twin[i] = known.moved;
                    known.count += 1;
                    self.pending[i].push(said);
                }
            }
        }
        self.due[k % ring] = arrived;
        let calls = PyList::new(py, &self.calls)?;
        let answers: Vec<f64> = self.answer.bind(py).call1((calls,))?.extract()?;
        let asked = self.calls.len() / CALL_INTS;
        if answers.len() != 2 * asked {
            return Err(PyValueError::new_err(format!(
                "the laws gave {} numbers for {asked} reports (two each)",
                answers.len()
            )));
        }
        self.answers += asked;
        for &(i, a) in &self.plan {
            let (rate, value) = (answers[2 * a], answers[2 * a + 1]);
            self.rates[i] = rate;
            let target = self.laws[i].target;
            if self.laws[i].host {
                plant.put_sender_rate(target, value);
            } else {
                plant.put_queue_rate(target, value);
            }
        }
        for known in &self.known {
            if known.count == 1 {
                // a class of one stays one: its law answers its own reports from now on
                self.solo[known.law] = true;
            }
        }
        Ok(())
    }

    /// The state (every buffer's occupancy in `tolerance`s, every law's rate in its unit) into
    /// the window's envelope.
    ///
    /// The queues' lags are state too: a queue whose packets were stamped at an older, slower rate
    /// trickles them out with every buffer and law steady (a brake's cut to its floor, then held
    /// above: 25 packets/s for 0.9 s while the law asked for 783), and the model stopped there as
    /// settled, before the backlog behind them left at the rate now and overflowed the next buffer.
    /// In quarters of a window: a lag that shrinks window by window keeps the model running.
    fn sample_state<P: Plant>(&mut self, plant: &P, now: f64) {
        let mut state = std::mem::take(&mut self.state);
        state.clear();
        let tolerance = self.tolerance;
        plant.each_held(&mut |held| state.push(held / tolerance));
        let lag_unit = self.window as f64 * plant.step_dt() / 4.0;
        plant.each_lag(now, &mut |lag| state.push(lag / lag_unit));
        for (rate, unit) in self.rates.iter().zip(&self.units) {
            state.push(rate / unit);
        }
        if !self.open {
            self.low.clear();
            self.low.extend_from_slice(&state);
            self.high.clear();
            self.high.extend_from_slice(&state);
            self.open = true;
        } else {
            for (i, &x) in state.iter().enumerate() {
                if x < self.low[i] {
                    self.low[i] = x;
                } else if x > self.high[i] {
                    self.high[i] = x;
                }
            }
        }
        self.state = state;
    }

    /// Starts a new window; true when the one that ends spans the one before it, within one unit
    /// of tolerance, and lost nothing.
    fn close_window(&mut self, lost: f64) -> bool {
        if !self.open {
            return false;
        }
        let same = match &self.last {
            Some((low, high)) => {
                lost == self.lost
                    && self
                        .low
                        .iter()
                        .zip(low)
                        .zip(self.high.iter().zip(high))
                        .all(|((a, b), (c, d))| (a - b).abs() <= 1.0 && (c - d).abs() <= 1.0)
            }
            None => false,
        };
        let (low, high) = match self.last.take() {
            Some((mut low, mut high)) => {
                std::mem::swap(&mut low, &mut self.low);
                std::mem::swap(&mut high, &mut self.high);
                (low, high)
            }
            None => (
                std::mem::take(&mut self.low),
                std::mem::take(&mut self.high),
            ),
        };
        self.last = Some((low, high));
        self.open = false;
        self.lost = lost;
        same
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
