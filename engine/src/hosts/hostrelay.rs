//! A netns host's frame relay between its tun device (the kernel's TCP) and its AF_PACKET uplink,
//! in a thread of its own that never takes the GIL.
//!
//! Why: in a netns run the host process emulated its uplink (rate, delay) for every TCP segment in
//! Python, on the same loop as the host's control logic; that loop stalled for 25-35 ms at a time
//! and released the segments in runs, which the bottleneck queue then saw as bursts the model does
//! not have (docs/howto/tcp.md, "Why the occupancy differs"). Here the per-frame work runs in Rust:
//! read a segment from the tun, serialize it on the uplink's transmitter (`link::TxState`, the one
//! link model), hold it for the propagation delay, send it on the socket; and a TCP frame received
//! on the socket goes straight back into the tun. Python keeps what is not TCP: it hands its own
//! frames in (`send`, on the same transmitter, so both share the uplink as on a real NIC) and takes
//! the frames it must see out in batches (`take`, signalled on an eventfd, the queue bounded).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::afpacket::{enable_timestamps, realtime_offset_ns, RxBatch, BATCH};
use crate::host::{PacedSender, RelayHook};
use crate::link::{wire_time_ns, Model, TxState};

/// Frames waiting for Python at most; more are dropped and counted (`to_python_dropped`).
pub const TO_PYTHON_MAX: usize = 8192;
/// Packets read from the tun per wake-up at most, so the socket and the due frames get their turn.
const TUN_BATCH: usize = 64;
/// The longest sleep when nothing is due (the thread also wakes on the stop signal).
const IDLE_NS: i64 = 100_000_000;
/// How far ahead of its send time a paced packet is built and put on the uplink (at most the
/// link's delay: see `pace`).
const PACE_AHEAD_NS: i64 = 100_000;
/// Paced packets a round of the loop builds per sender at most, so the socket gets its turn.
const PACE_BATCH: usize = 32;
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const TUN_BUF: usize = 1 << 16;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// What the relay counted; `late_*`: how long after its due time a frame reached the socket.
#[derive(Default, Clone)]
struct Counts {
    tun_packets: i64,
    host_tx_queue_full: i64,
    tx_frames: i64,
    tx_dropped: i64,
    uplink_bytes: i64,
    rx_frames: i64,
    rx_to_tun: i64,
    tun_write_errors: i64,
    to_python: i64,
    to_python_dropped: i64,
    late_max_ns: i64,
    late_sum_ns: i64,
    late_over_1ms: i64,
    late_over_5ms: i64,
    late_over_20ms: i64,
}

impl Counts {
    fn late(&mut self, late_ns: i64) {
        self.late_max_ns = self.late_max_ns.max(late_ns);
        self.late_sum_ns += late_ns;
        self.late_over_1ms += i64::from(late_ns > 1_000_000);
        self.late_over_5ms += i64::from(late_ns > 5_000_000);
        self.late_over_20ms += i64::from(late_ns > 20_000_000);
    }
}

/// A frame on the wire: due at the socket at `.0` (run ns), `.1` keeps equal times in order.
type Due = Reverse<(i64, u64, Vec<u8>)>;

/// A frame's times on the uplink, kept until it has surely left the wire (`Uplink::retime`).
struct Timed {
    /// When it was handed over (run ns).
    at: i64,
    start: i64,
    end: i64,
    nbytes: i64,
    extra_ns: i64,
    lost: bool,
    /// Its `Due` entry's order (a lost frame has none).
    seq: u64,
}

struct Uplink {
    tx: TxState,
    due: BinaryHeap<Due>,
    seq: u64,
    queue_frames: i64,
    /// The frames handed over, oldest first, from the last one that may still be on the wire.
    timeline: VecDeque<Timed>,
}

impl Uplink {
    fn new(tx: TxState, queue_frames: i64) -> Self {
        Uplink {
            tx,
            due: BinaryHeap::new(),
            seq: 0,
            queue_frames,
            timeline: VecDeque::new(),
        }
    }

    /// Serialize `frame` at `now`; unless `lost`, it reaches the socket after the delay (+ `extra`).
    fn transmit(&mut self, now: i64, frame: Vec<u8>, extra_ns: i64, lost: bool) -> (i64, i64) {
        let nbytes = frame.len() as i64;
        let (start, end) = self.tx.transmit(now, nbytes);
        self.seq += 1;
        if !lost {
            let due = end + self.tx.model.delay_ns + extra_ns;
            self.due.push(Reverse((due, self.seq, frame)));
        }
        // `now` may run `PACE_AHEAD_NS` ahead of the clock: a frame ended before that is off the wire
        while self
            .timeline
            .front()
            .is_some_and(|t| t.end + PACE_AHEAD_NS <= now)
        {
            self.timeline.pop_front();
        }
        self.timeline.push_back(Timed {
            at: now,
            start,
            end,
            nbytes,
            extra_ns,
            lost,
            seq: self.seq,
        });
        (start, end)
    }

    /// A new bit rate at `now`: the frame on the wire finishes as it started, the frames waiting
    /// for the wire (the host's NIC queue: not started by `now`) are serialized at the new rate,
    /// each from where the one before it ends, as the simulator's link does (link.rs, `Nic`).
    /// Returns whether any frame was re-timed.
    fn retime(&mut self, now: i64, bitrate_bps: i64) -> bool {
        self.tx.model.bitrate_bps = bitrate_bps;
        let Some(k) = self.timeline.iter().position(|t| t.start > now) else {
            return false;
        };
        let mut tx = TxState::new(self.tx.model);
        tx.free_at_ns = if k > 0 { self.timeline[k - 1].end } else { 0 };
        let first = self.timeline[k].seq;
        let mut waiting: Vec<(u64, Vec<u8>)> = Vec::new();
        let kept: Vec<Due> = std::mem::take(&mut self.due)
            .into_iter()
            .filter_map(|Reverse((due, seq, frame))| {
                if seq >= first {
                    waiting.push((seq, frame));
                    None
                } else {
                    Some(Reverse((due, seq, frame)))
                }
            })
            .collect();
        self.due = kept.into();
        waiting.sort_unstable_by_key(|(seq, _)| *seq);
        let mut frames = waiting.into_iter().peekable();
        for t in self.timeline.iter_mut().skip(k) {
            (t.start, t.end) = tx.transmit(t.at, t.nbytes);
            if !t.lost {
                let frame = frames.next_if(|(seq, _)| *seq == t.seq).map(|(_, f)| f);
                if let Some(frame) = frame {
                    let due = t.end + tx.model.delay_ns + t.extra_ns;
                    self.due.push(Reverse((due, t.seq, frame)));
                }
            }
        }
        self.tx = tx;
        true
    }

    /// `frame` onto the uplink at `now` through the host's NIC queue: false (and not sent) when
    /// the queue is full.
    fn offer(&mut self, now: i64, frame: Vec<u8>) -> bool {
        if self.full(now, frame.len()) {
            return false;
        }
        self.transmit(now, frame, 0, false);
        true
    }

    /// Whether the host's NIC queue (`queue_frames` frames of this size) is full at `now`.
    fn full(&self, now: i64, nbytes: usize) -> bool {
        let m = self.tx.model;
        let wire = wire_time_ns(
            nbytes as i64,
            m.bitrate_bps,
            m.min_frame_bytes,
            m.overhead_bytes,
        );
        self.tx.free_at_ns - now > self.queue_frames * wire
    }
}

/// A paced sender the relay sends for (`HostRelay.pace`): its packets never enter Python.
struct Pacing {
    sender: Py<PacedSender>,
    offset_ns: i64,
    /// When its next packet goes (run ns); None: it has stopped, or not yet asked.
    next_ns: Option<i64>,
}

struct Shared {
    uplink: Mutex<Uplink>,
    pacers: Mutex<Vec<Pacing>>,
    /// Set by a sender's `rearm` (a new rate): the relay asks each sender for its next time again.
    rearm: Arc<AtomicBool>,
    /// (frame, its length on the wire or 0, when it reached the socket: run ns)
    to_python: Mutex<VecDeque<(Vec<u8>, usize, i64)>>,
    counts: Mutex<Counts>,
    stop: AtomicBool,
}

/// The file descriptors and constants the relay thread works with.
struct Ends {
    tun_fd: i32,
    sock_fd: i32,
    hdr_len: usize,
    eth_header: Vec<u8>,
    t0_ns: i64,
    wake_fd: i32,
    notify_fd: i32,
    /// `PACE_AHEAD_NS`, or the uplink's delay when it is shorter.
    ahead_ns: i64,
}

fn eventfd() -> PyResult<i32> {
    // SAFETY: plain system call.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(PyOSError::new_err(format!(
            "host relay: eventfd: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(fd)
}

fn signal(fd: i32) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64; a full counter (EAGAIN) still leaves it readable.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

fn drain(fd: i32) {
    let mut v: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live u64.
    unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
}

fn send_frame(ends: &Ends, frame: &[u8]) -> io::Result<()> {
    let hdr = [0u8; 16];
    let iov = [
        libc::iovec {
            iov_base: hdr.as_ptr() as *mut libc::c_void,
            iov_len: ends.hdr_len,
        },
        libc::iovec {
            iov_base: frame.as_ptr() as *mut libc::c_void,
            iov_len: frame.len(),
        },
    ];
    // SAFETY: the iovecs point into `hdr` and `frame`, alive across the call.
    let n = unsafe { libc::writev(ends.sock_fd, iov.as_ptr(), 2) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn run(shared: Arc<Shared>, ends: Ends) {
    let mut rx = RxBatch::with_timestamps();
    let mut tun_buf = vec![0u8; TUN_BUF];
    let mut out: Vec<(i64, Vec<u8>)> = Vec::new();
    while !shared.stop.load(Ordering::Acquire) {
        let now = monotonic_ns() - ends.t0_ns;
        let paced = pace(&shared, now, ends.ahead_ns).map(|t| t - ends.ahead_ns);
        let next = {
            let mut up = lock(&shared.uplink);
            while up.due.peek().is_some_and(|Reverse((t, _, _))| *t <= now) {
                let Reverse((t, _, frame)) = up.due.pop().expect("peeked");
                out.push((t, frame));
            }
            up.due.peek().map(|Reverse((t, _, _))| *t)
        };
        send_due(&shared, &ends, &mut out);
        let next = match (next, paced) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let wait = next.map_or(IDLE_NS, |t| (t - monotonic_ns() + ends.t0_ns).max(0));
        let mut fds = [ends.tun_fd, ends.sock_fd, ends.wake_fd].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let ts = libc::timespec {
            tv_sec: wait / 1_000_000_000,
            tv_nsec: wait % 1_000_000_000,
        };
        // SAFETY: `fds` and `ts` live across the call; no signal mask change.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 3, &ts, std::ptr::null()) };
        if n <= 0 {
            continue;
        }
        if fds[2].revents != 0 {
            drain(ends.wake_fd);
        }
        if fds[0].revents != 0 {
            from_tun(&shared, &ends, &mut tun_buf);
        }
        if fds[1].revents != 0 {
            from_socket(&shared, &ends, &mut rx);
        }
    }
}

/// The paced senders' packets due by `now + ahead_ns`, onto the uplink (through the host's NIC
/// queue, as their Python binding's link does) each at its own send time; returns when the next
/// one is due.
///
/// Why ahead: a packet paced at t leaves the host's modelled uplink at t + its wire time + the
/// link's delay, so building it up to `ahead_ns` (no more than that delay) before t changes
/// nothing the network sees: it goes onto the uplink as of t, stamped t. The relay then builds
/// a packet on a wake-up it has anyway (the release of an earlier one onto the socket) instead
/// of waking for it too: at 300 Mb/s a wake-up came every 13 µs, two per packet, and each cost
/// the thread 10-20 µs of a core in a virtual machine. The price: a new rate takes effect up to
/// `ahead_ns` late (the packets already built keep the old spacing), and a frame of Python's own
/// (`send`: a report, feedback) queues on the uplink behind the packets built ahead of it, up to
/// `ahead_ns` later than in the simulator's FIFO, on a host that both paces and sends such
/// frames. A packet built late (the
/// thread woke after t) goes as far back towards t as catching up allows (`relay_fire`), no
/// longer at the late wake-up's time: the uplink spaces it from t, and the receiver's one-way
/// delay counts from t.
fn pace(shared: &Shared, now: i64, ahead_ns: i64) -> Option<i64> {
    let mut pacers = lock(&shared.pacers);
    if shared.rearm.swap(false, Ordering::AcqRel) {
        for p in pacers.iter_mut() {
            p.next_ns = p.sender.get().relay_next(now, false);
        }
    }
    let (mut full, mut bytes) = (0, 0);
    let horizon = now + ahead_ns;
    for p in pacers.iter_mut() {
        for _ in 0..PACE_BATCH {
            let Some(due) = p.next_ns.filter(|&t| t <= horizon) else {
                break;
            };
            let sender = p.sender.get();
            let mut at = now.max(due);
            if let Some((frame, sent_at)) = sender.relay_fire(now, due, p.offset_ns) {
                at = sent_at;
                let n = frame.len() as i64;
                if lock(&shared.uplink).offer(at, frame) {
                    bytes += n;
                } else {
                    full += 1;
                }
            }
            p.next_ns = sender.relay_next(at, true).map(|t| t.max(due + 1));
        }
    }
    let next = pacers.iter().filter_map(|p| p.next_ns).min();
    drop(pacers);
    if full + bytes > 0 {
        let mut c = lock(&shared.counts);
        c.host_tx_queue_full += full;
        c.uplink_bytes += bytes;
    }
    next
}

fn send_due(shared: &Shared, ends: &Ends, out: &mut Vec<(i64, Vec<u8>)>) {
    if out.is_empty() {
        return;
    }
    let mut sent = Counts::default();
    for (due, frame) in out.drain(..) {
        sent.late(monotonic_ns() - ends.t0_ns - due);
        match send_frame(ends, &frame) {
            Ok(()) => sent.tx_frames += 1,
            Err(_) => sent.tx_dropped += 1, // a full socket buffer or a downed link, as a NIC drops
        }
    }
    let mut c = lock(&shared.counts);
    c.tx_frames += sent.tx_frames;
    c.tx_dropped += sent.tx_dropped;
    c.late_max_ns = c.late_max_ns.max(sent.late_max_ns);
    c.late_sum_ns += sent.late_sum_ns;
    c.late_over_1ms += sent.late_over_1ms;
    c.late_over_5ms += sent.late_over_5ms;
    c.late_over_20ms += sent.late_over_20ms;
}

/// Segments the kernel's TCP sent: frames on the uplink, through the host's NIC queue.
fn from_tun(shared: &Shared, ends: &Ends, buf: &mut [u8]) {
    let (mut read, mut full, mut bytes) = (0, 0, 0);
    for _ in 0..TUN_BATCH {
        // SAFETY: reads into `buf`, alive and `buf.len()` long.
        let n = unsafe { libc::read(ends.tun_fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        let packet = &buf[..n as usize];
        if packet[0] >> 4 != 4 {
            continue; // IPv6 is off on the tun; anything else is not ours
        }
        read += 1;
        let mut frame = Vec::with_capacity(ends.eth_header.len() + packet.len());
        frame.extend_from_slice(&ends.eth_header);
        frame.extend_from_slice(packet);
        let now = monotonic_ns() - ends.t0_ns;
        let n = frame.len() as i64;
        if lock(&shared.uplink).offer(now, frame) {
            bytes += n;
        } else {
            full += 1;
        }
    }
    let mut c = lock(&shared.counts);
    c.tun_packets += read;
    c.host_tx_queue_full += full;
    c.uplink_bytes += bytes;
}

/// Frames from the switch: TCP straight into the tun, the rest (and frames with offloads left to
/// finish) to Python.
fn from_socket(shared: &Shared, ends: &Ends, rx: &mut RxBatch) {
    let mut c = Counts::default();
    let mut for_python: Vec<(Vec<u8>, usize, i64)> = Vec::new();
    let got = rx.recv(ends.sock_fd, BATCH).unwrap_or(0);
    let read_at = monotonic_ns();
    let offset = realtime_offset_ns();
    for i in 0..got {
        // the kernel's arrival time where it gave one (never after the read), else the read's
        let at = rx
            .stamp_ns(i)
            .map_or(read_at, |t| (t - offset).min(read_at))
            - ends.t0_ns;
        let (data, len) = rx.frame(i);
        let h = ends.hdr_len;
        let offload = h > 0 && (data[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 || data[1] != 0);
        if offload || len > data.len() || data.len() < h {
            for_python.push((data.to_vec(), len, at)); // the port's slow path, header included
            continue;
        }
        let frame = &data[h..];
        c.rx_frames += 1;
        if ends.tun_fd >= 0 && frame.len() > 23 && frame[12..14] == [8, 0] && frame[23] == 6 {
            let ip = &frame[14..];
            // SAFETY: writes `ip`, alive across the call.
            let n = unsafe { libc::write(ends.tun_fd, ip.as_ptr().cast(), ip.len()) };
            if n < 0 {
                c.tun_write_errors += 1;
            } else {
                c.rx_to_tun += 1;
            }
        } else {
            for_python.push((frame.to_vec(), 0, at));
        }
    }
    let mut q = lock(&shared.to_python);
    let handed = !for_python.is_empty();
    for item in for_python {
        if q.len() >= TO_PYTHON_MAX {
            c.to_python_dropped += 1;
        } else {
            c.to_python += 1;
            q.push_back(item);
        }
    }
    drop(q);
    {
        // counted before Python is told, so its counters already hold what it takes
        let mut all = lock(&shared.counts);
        all.rx_frames += c.rx_frames;
        all.rx_to_tun += c.rx_to_tun;
        all.tun_write_errors += c.tun_write_errors;
        all.to_python += c.to_python;
        all.to_python_dropped += c.to_python_dropped;
    }
    if handed {
        signal(ends.notify_fd);
    }
}

/// The relay: a thread between the tun `tun_fd` and the AF_PACKET socket `sock_fd` (both stay
/// the caller's: opened, configured and closed by topo/tcpflow.py and runtime/ports.py). A host
/// without TCP flows has no tun (`tun_fd` -1): then every frame received goes to Python.
///
/// `t0_monotonic_ns` is the run's time 0 on CLOCK_MONOTONIC: times given and returned are run ns.
/// `vnet_hdr_len`: the socket's PACKET_VNET_HDR length (0 without). `eth_header`: the 14 bytes
/// put before each segment read from the tun. `queue_frames`: the host's NIC queue in frames.
#[pyclass(module = "hbh_engine", frozen)]
pub struct HostRelay {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    wake_fd: i32,
    notify_fd: i32,
    /// The run's 0 on the monotonic clock (`set_bitrate`'s now).
    t0_ns: i64,
}

#[pymethods]
impl HostRelay {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tun_fd: i32,
        sock_fd: i32,
        vnet_hdr_len: usize,
        eth_header: Vec<u8>,
        bitrate_bps: i64,
        delay_ns: i64,
        t0_monotonic_ns: i64,
        queue_frames: i64,
    ) -> PyResult<Self> {
        if eth_header.len() != 14 {
            return Err(PyValueError::new_err(format!(
                "host relay: eth_header must be 14 bytes, got {}",
                eth_header.len()
            )));
        }
        if vnet_hdr_len > 16 || bitrate_bps < 0 || delay_ns < 0 || queue_frames < 1 {
            return Err(PyValueError::new_err(format!(
                "host relay: bad uplink (vnet_hdr_len {vnet_hdr_len}, bitrate {bitrate_bps} b/s, \
                 delay {delay_ns} ns, queue {queue_frames} frames)"
            )));
        }
        let model = Model {
            bitrate_bps,
            delay_ns,
            overhead_bytes: 0,
            min_frame_bytes: 0,
        };
        let shared = Arc::new(Shared {
            uplink: Mutex::new(Uplink::new(TxState::new(model), queue_frames)),
            pacers: Mutex::new(Vec::new()),
            rearm: Arc::new(AtomicBool::new(false)),
            to_python: Mutex::new(VecDeque::new()),
            counts: Mutex::new(Counts::default()),
            stop: AtomicBool::new(false),
        });
        // each frame handed to Python keeps when it arrived, however late Python takes it; a
        // socket that cannot stamp (not Linux's) leaves the relay's read time instead
        let _ = enable_timestamps(sock_fd);
        let (wake_fd, notify_fd) = (eventfd()?, eventfd()?);
        let ends = Ends {
            tun_fd,
            sock_fd,
            hdr_len: vnet_hdr_len,
            eth_header,
            t0_ns: t0_monotonic_ns,
            wake_fd,
            notify_fd,
            ahead_ns: delay_ns.min(PACE_AHEAD_NS),
        };
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("hbh-host-relay".into())
            .spawn(move || run(worker, ends))
            .map_err(|e| PyOSError::new_err(format!("host relay: cannot start its thread: {e}")))?;
        Ok(HostRelay {
            shared,
            thread: Mutex::new(Some(thread)),
            wake_fd,
            notify_fd,
            t0_ns: t0_monotonic_ns,
        })
    }

    /// The eventfd that becomes readable when frames wait for `take` (read it, then `take`).
    #[getter]
    fn notify_fd(&self) -> i32 {
        self.notify_fd
    }

    /// One of Python's own frames on the uplink at run time `now_ns`: `(start, end)` of its
    /// serialization; a `lost` frame takes its wire time and is not sent; `extra_ns` adds to its delay.
    #[pyo3(signature = (now_ns, frame, extra_ns = 0, lost = false))]
    fn send(&self, now_ns: i64, frame: &[u8], extra_ns: i64, lost: bool) -> (i64, i64) {
        // `&[u8]` borrows the bytes object: a `Vec<u8>` argument would convert it byte by byte
        let n = frame.len() as i64;
        let r = lock(&self.shared.uplink).transmit(now_ns, frame.to_vec(), extra_ns.max(0), lost);
        lock(&self.shared.counts).uplink_bytes += n;
        signal(self.wake_fd);
        r
    }

    /// Send `sender`'s packets from the relay thread from now on, stamped with the run time +
    /// `offset_ns` (its flows and rate stay the sender's: `set_rate` then `rearm()` as before).
    ///
    /// Why: bound to the host's Python loop, every packet was a timer of that loop and a Python
    /// call into the relay; at 128 Mb/s (16,000 packets/s) the host process used most of a core
    /// and sent less than its law asked (docs/howto/netns.md, "At higher link rates").
    fn pace(&self, py: Python<'_>, sender: Py<PacedSender>, offset_ns: i64) -> PyResult<()> {
        let wake_fd = self.wake_fd;
        let hook = RelayHook {
            rearm: Arc::clone(&self.shared.rearm),
            wake: Box::new(move || signal(wake_fd)),
        };
        sender.get().attach_relay(py, hook)?;
        lock(&self.shared.pacers).push(Pacing {
            sender,
            offset_ns,
            next_ns: None,
        });
        self.shared.rearm.store(true, Ordering::Release);
        signal(self.wake_fd);
        Ok(())
    }

    /// How long frames already handed over still occupy the uplink at run time `now_ns`.
    fn backlog_ns(&self, now_ns: i64) -> i64 {
        (lock(&self.shared.uplink).tx.free_at_ns - now_ns).max(0)
    }

    /// A `link_rate` event on the host's link at run time `now_ns` (default: the clock's now):
    /// the frame on the wire finishes at the old rate, the frames waiting in the NIC queue leave
    /// at the new one.
    #[pyo3(signature = (bitrate_bps, now_ns = None))]
    fn set_bitrate(&self, bitrate_bps: i64, now_ns: Option<i64>) -> PyResult<()> {
        if bitrate_bps < 0 {
            return Err(PyValueError::new_err(format!(
                "host relay: bit rate must be >= 0 b/s, got {bitrate_bps}"
            )));
        }
        let now = now_ns.unwrap_or_else(|| monotonic_ns() - self.t0_ns);
        if lock(&self.shared.uplink).retime(now, bitrate_bps) {
            signal(self.wake_fd); // a frame may now be due sooner than the thread's wake-up
        }
        Ok(())
    }

    /// The frames waiting for Python: `(frame, 0, at_ns)`, or `(buffer with its virtio_net_hdr,
    /// length on the wire, at_ns)` for a frame whose offloads are left to finish (runtime/ports.py's
    /// slow path). `at_ns` (run ns): when the frame reached the socket, by the kernel's timestamp.
    ///
    /// Why the time: Python takes the frames in batches, as late as its loop gets to them (a
    /// fraction of a millisecond at 300 Mb/s on a shared machine), and a host that counted them
    /// then saw every batch arrive at once: its play-out buffer jumped by the batch, its reports
    /// said so, and the law upstream cut its rate for a burst the network never had.
    fn take<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, usize, i64)> {
        let items: Vec<_> = lock(&self.shared.to_python).drain(..).collect();
        items
            .into_iter()
            .map(|(f, n, at)| (PyBytes::new(py, &f), n, at))
            .collect()
    }

    /// The relay's counters (`late_*`: how late frames reached the socket after their due time).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = lock(&self.shared.counts).clone();
        let d = PyDict::new(py);
        for (k, v) in [
            ("tun_packets", c.tun_packets),
            ("host_tx_queue_full", c.host_tx_queue_full),
            ("tx_frames", c.tx_frames),
            ("tx_dropped", c.tx_dropped),
            ("uplink_bytes", c.uplink_bytes),
            ("rx_frames", c.rx_frames),
            ("rx_to_tun", c.rx_to_tun),
            ("tun_write_errors", c.tun_write_errors),
            ("to_python", c.to_python),
            ("to_python_dropped", c.to_python_dropped),
            ("late_max_ns", c.late_max_ns),
            ("late_sum_ns", c.late_sum_ns),
            ("late_over_1ms", c.late_over_1ms),
            ("late_over_5ms", c.late_over_5ms),
            ("late_over_20ms", c.late_over_20ms),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Stop the thread and wait for it (idempotent); frames still on the wire are not sent.
    fn close(&self, py: Python<'_>) {
        self.shared.stop.store(true, Ordering::Release);
        signal(self.wake_fd);
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            py.allow_threads(|| {
                let _ = h.join();
            });
        }
    }
}

impl Drop for HostRelay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        signal(self.wake_fd);
        if let Some(h) = lock(&self.thread).take() {
            let _ = h.join();
        }
        // SAFETY: both eventfds are ours and no longer used by the (joined) thread.
        unsafe {
            libc::close(self.wake_fd);
            libc::close(self.notify_fd);
        }
    }
}
