//! A compiled gRPC front end for p4switch's P4Runtime server (issue 49, item 7).
//!
//! Why: a Python gRPC server (grpcio's asyncio one) costs more per RPC than the whole of a
//! one-update Write elsewhere: against the same client an empty grpc.aio server answered about
//! half the Writes/s an empty compiled one did, so no Python server can keep up with
//! simple_switch_grpc. This front end listens on the switch's P4Runtime address with tonic (on a
//! tokio runtime of its own threads) and
//!
//! * answers `Write` itself: the request's bytes go to one Python callable (the switch's
//!   P4Runtime server, `P4RuntimeServer.write_bytes` in `p4switch/p4runtime/server.py`), called
//!   on a blocking thread with the GIL; it returns the response's bytes or the status (code,
//!   message, `grpc-status-details-bin`). First, when no other Write is under way, `write_now`
//!   tries it on the front end's caller thread ([`Caller`]): the engine's entry store applies
//!   it if the switch loop lends its state at once (an idle switch), else nothing is done and
//!   a blocking thread takes it. Why: the hand-off to a blocking thread and back were two thread
//!   wake-ups, more than the Write itself (a one-update Write took 230 µs at the client where
//!   simple_switch_grpc's took 170 µs; 140 µs without them);
//! * answers `Read` itself the same way (`P4RuntimeServer.read_bytes`: the responses' bytes, and
//!   the status the stream ends with; `read_now` first, for a Read of one entry or cell by its
//!   key). Why: handed on, a one-entry Read crossed two gRPC hops and the grpcio server's
//!   asyncio loop, about 1 ms where simple_switch_grpc takes 0.3 ms;
//! * serves `StreamChannel` itself: the client's messages go to Python in batches
//!   (`P4RuntimeServer.stream_messages`, whose core does the arbitration, packet-outs and digest
//!   acks), and what the core sends the client (arbitration updates, packet-ins, digest lists,
//!   stream errors) goes straight from the switch loop into this stream's queue through a
//!   [`StreamSender`], with no Python server between. Why: handed on to the grpcio server, a
//!   PacketOut -> PacketIn round trip crossed one more gRPC hop and its asyncio loop (50-100 us);
//! * hands the other RPCs (pipeline config, Capabilities), byte for byte, to the existing
//!   grpcio server, which then listens on a loopback port of its own (`backend`).
//!
//! Writes and `SetForwardingPipelineConfig` pass one lock here, one at a time, as the Python
//! server runs them (a Write is never applied against a half-changed pipeline).

// tonic's Status is the error of every call here, as in tonic's own generated services
#![allow(clippy::result_large_err)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use bytes::{Buf, BufMut, Bytes};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::{PyTraverseError, PyVisit};
use tokio::sync::{mpsc, watch, Mutex};
use tokio::task::JoinHandle as TaskHandle;
use tokio_stream::StreamExt;
use tonic::body::BoxBody;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Response, Status, Streaming};

use crate::p4rtnative::Native;

const SERVICE: &str = "p4.v1.P4Runtime";
/// How long calls under way (open StreamChannels) get to end once the front end stops.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Messages as they come: the front end never decodes what it hands on.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n)))
    }
}

struct Inner {
    backend: Channel,
    write: Py<PyAny>,
    /// `write_now(request_bytes)`: a Write answered at once on the calling thread where the
    /// switch can lend its state (as `write`'s answer), else None; see [`Inner::write`].
    write_now: Option<Py<PyAny>>,
    /// `read_now(request_bytes)`: a Read answered at once (as `read`'s answer), else None.
    read_now: Option<Py<PyAny>>,
    /// `read(request_bytes)`: `(responses, status)`, the responses' bytes in order and None or
    /// the `(code, message, details)` the stream ends with after them.
    read: Py<PyAny>,
    /// The StreamChannels' Python side (`P4RuntimeServer`): `stream_open(sender)`,
    /// `stream_messages(handle, [bytes])`, `stream_end(handle)`, `stream_close(handle)`.
    streams: Py<PyAny>,
    /// At most this many of a client's messages wait while a batch of them is served (its
    /// flow-control window holds back the rest); one batch is at most this many.
    stream_batch: usize,
    /// Packet-ins and digest lists dropped for clients that did not read them.
    dropped: Arc<AtomicU64>,
    /// Writes and pipeline changes, one at a time.
    write_lock: Arc<Mutex<()>>,
    /// The thread that runs `write_now` and `read_now` (see [`Caller`]).
    caller: Arc<Caller>,
    /// Writes and keyed Reads answered here first, no Python run (p4rtnative.rs); None: not set
    native: Option<Native>,
    /// How many calls `native` answered.
    native_answers: Arc<AtomicU64>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

#[derive(Clone)]
struct Front(Arc<Inner>);

impl NamedService for Front {
    const NAME: &'static str = SERVICE;
}

fn path(method: &'static str) -> http::uri::PathAndQuery {
    http::uri::PathAndQuery::from_static(method)
}

/// A request to hand on: the message only (the client's own headers stay with its call).
fn fresh<T>(req: Request<T>) -> Request<T> {
    let timeout = req.metadata().get("grpc-timeout").cloned();
    let mut out = Request::new(req.into_inner());
    if let Some(t) = timeout {
        out.metadata_mut().insert("grpc-timeout", t);
    }
    out
}

impl Inner {
    async fn client(&self) -> Result<tonic::client::Grpc<Channel>, Status> {
        // no size limits of its own: the grpcio server behind it keeps its own
        let mut client = tonic::client::Grpc::new(self.backend.clone())
            .max_decoding_message_size(usize::MAX)
            .max_encoding_message_size(usize::MAX);
        client
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("P4Runtime back end not ready: {e}")))?;
        Ok(client)
    }

    async fn unary(
        &self,
        req: Request<Bytes>,
        method: &'static str,
    ) -> Result<Response<Bytes>, Status> {
        self.client()
            .await?
            .unary(fresh(req), path(method), RawCodec)
            .await
    }

    /// A call the entry store may answer with no Python run (`Native::write`, `Native::read_keyed`):
    /// on this thread when `here` (the placement's choice; `guard` released right after it), else on
    /// the caller thread, which holds `guard` until the call has run. None: the store did not take
    /// it, or the caller thread was busy.
    async fn native_call<T: Send + 'static, G: Send + 'static>(
        self: &Arc<Self>,
        native: &Native,
        here: bool,
        guard: G,
        body: &Bytes,
        call: fn(&Native, Python<'_>, &[u8]) -> Option<T>,
    ) -> Option<T> {
        if here {
            let answer = Python::with_gil(|py| call(native, py, body));
            drop(guard);
            Placement::ran_here();
            return answer;
        }
        let (me, b) = (self.clone(), body.clone());
        let tried = self.caller.try_call(move || {
            let _guard = guard;
            let native = me.native.as_ref().expect("native is set");
            Python::with_gil(|py| call(native, py, &b))
        });
        match tried {
            Some(answer) => answer.await.ok().flatten(),
            None => None,
        }
    }

    /// A Write, run to its end even when its client gives up (the Python server shielded it
    /// the same way): the lock is held until the batch is applied or refused. On a blocking
    /// thread: the switch may take its time (a busy loop, a sliced batch), and the front end's
    /// other calls go on meanwhile.
    async fn write(self: Arc<Self>, req: Request<Bytes>) -> Result<Response<Bytes>, Status> {
        let body = req.into_inner();
        if let Some(native) = &self.native {
            // no Write under way: the entry store may take it with no Python run
            if let Ok(one) = self.write_lock.clone().try_lock_owned() {
                let here = body.len() <= HERE_MAX_BYTES && Placement::here();
                let answer = self
                    .native_call(native, here, one, &body, Native::write)
                    .await;
                if let Some(answer) = answer {
                    self.native_answers.fetch_add(1, Ordering::Relaxed);
                    return match answer {
                        Ok(b) => Ok(Response::new(Bytes::from(b))),
                        Err((code, message, details)) => Err(Status::with_details(
                            Code::from_i32(code),
                            message,
                            Bytes::from(details),
                        )),
                    };
                }
            }
        }
        if self.write_now.is_some() {
            // no Write under way and the caller thread free: try it there; the lock goes with
            // the call, which runs to its end even if this call is given up meanwhile
            if let Ok(one) = self.write_lock.clone().try_lock_owned() {
                let (me, b) = (self.clone(), body.clone());
                let tried = self.caller.try_call(move || {
                    let _one = one;
                    let now = me.write_now.as_ref().expect("write_now is set");
                    me.call_now(now, &b, "Write")
                });
                if let Some(answer) = tried {
                    match answer.await {
                        Ok(Some(answer)) => return answer.map(Response::new),
                        Ok(None) => {}
                        Err(_) => {
                            return Err(Status::internal(
                                "internal error: Write handler: the caller thread stopped",
                            ))
                        }
                    }
                }
            }
        }
        let me = self.clone();
        let task = match self.write_lock.clone().try_lock_owned() {
            // the lock is free: straight to the blocking thread, which runs to its end anyway
            Ok(one) => tokio::task::spawn_blocking(move || {
                let _one = one;
                me.call_write(&body)
            }),
            Err(_) => tokio::spawn(async move {
                let _one = me.write_lock.clone().lock_owned().await;
                let call = me.clone();
                tokio::task::spawn_blocking(move || call.call_write(&body))
                    .await
                    .map_err(|e| Status::internal(format!("internal error: Write handler: {e}")))?
            }),
        };
        match task.await {
            Ok(Ok(b)) => Ok(Response::new(b)),
            Ok(Err(status)) => Err(status),
            Err(e) => Err(Status::internal(format!(
                "internal error: Write handler: {e}"
            ))),
        }
    }

    /// `write_now`: the response's bytes or the status, as `call_write`; None: not answered
    /// here, nothing done.
    fn call_now(&self, now: &Py<PyAny>, body: &[u8], what: &str) -> Option<Result<Bytes, Status>> {
        Python::with_gil(|py| {
            let answer = || -> PyResult<Option<Result<Bytes, Status>>> {
                let out = now.bind(py).call1((PyBytes::new(py, body),))?;
                if out.is_none() {
                    return Ok(None);
                }
                if let Ok(b) = out.downcast::<PyBytes>() {
                    return Ok(Some(Ok(Bytes::copy_from_slice(b.as_bytes()))));
                }
                Ok(Some(Err(py_status(&out)?)))
            };
            answer().unwrap_or_else(|e| {
                Some(Err(Status::internal(format!(
                    "internal error: {what} handler: {e}"
                ))))
            })
        })
    }

    /// The Python handler: the response's bytes, or the status (code, message, details).
    fn call_write(&self, body: &[u8]) -> Result<Bytes, Status> {
        Python::with_gil(|py| {
            let answer = || -> PyResult<Result<Bytes, Status>> {
                let out = self.write.bind(py).call1((PyBytes::new(py, body),))?;
                if let Ok(b) = out.downcast::<PyBytes>() {
                    return Ok(Ok(Bytes::copy_from_slice(b.as_bytes())));
                }
                let (code, message, details): (i32, String, Vec<u8>) = out.extract()?;
                Ok(Err(Status::with_details(
                    Code::from_i32(code),
                    message,
                    Bytes::from(details),
                )))
            };
            answer().unwrap_or_else(|e| {
                Err(Status::internal(format!(
                    "internal error: Write handler: {e}"
                )))
            })
        })
    }

    /// The Python Read handler: the responses' bytes, then the status the stream ends with
    /// (None: OK).
    fn call_read(&self, body: &[u8]) -> ReadAnswer {
        Python::with_gil(|py| {
            let out = self.read.bind(py).call1((PyBytes::new(py, body),));
            out.and_then(|out| read_answer(&out))
                .unwrap_or_else(read_failed)
        })
    }

    /// `read_now`: the Read's answer, as `call_read`'s; None: not answered here, nothing done.
    fn call_read_now(&self, now: &Py<PyAny>, body: &[u8]) -> Option<ReadAnswer> {
        Python::with_gil(|py| {
            let answer = || -> PyResult<Option<ReadAnswer>> {
                let out = now.bind(py).call1((PyBytes::new(py, body),))?;
                if out.is_none() {
                    return Ok(None);
                }
                read_answer(&out).map(Some)
            };
            answer().unwrap_or_else(|e| Some(read_failed(e)))
        })
    }
}

/// A Read handler's `(responses, None or status)`.
fn read_answer(out: &Bound<'_, PyAny>) -> PyResult<ReadAnswer> {
    let (responses, status): (Bound<'_, PyAny>, Option<PyStatus>) = out.extract()?;
    let mut items = Vec::new();
    for r in responses.try_iter()? {
        let r = r?;
        items.push(Bytes::copy_from_slice(r.downcast::<PyBytes>()?.as_bytes()));
    }
    let status = status.map(|(code, message, details)| {
        Status::with_details(Code::from_i32(code), message, Bytes::from(details))
    });
    Ok((items, status))
}

/// The answer of a Read whose handler failed.
fn read_failed(e: PyErr) -> ReadAnswer {
    (
        Vec::new(),
        Some(Status::internal(format!(
            "internal error: Read handler: {e}"
        ))),
    )
}

/// Where the runtime's thread runs a call the engine answers with no Python run (p4rtnative.rs):
/// on itself, with no hand-off, unless it has lately waited for a CPU once woken; then on the
/// caller thread ([`Caller`]) for the next `AWAY_CALLS` calls, and then on itself again.
///
/// Why: on itself a one-update Write crosses one thread wake-up, not three (1.0 context switches
/// a Write, not 3.3), and with a CPU to itself the front end answered 6,805 Writes/s where the
/// caller thread answered 6,207 and simple_switch_grpc's performance build 6,317 (every thread at
/// real-time priority, a stand-in for a quiet CPU; client CPU 0, servers CPU 1). But on a CPU
/// shared with busy processes, a thread that runs each call whole (about 110 µs between two
/// sleeps) is held back by the kernel's scheduler at its wake-ups (EEVDF: it woke with less
/// than its share left, behind the busy processes' slices): 0.49 ms from its wake-up to the CPU
/// on average, against 0.012 ms for the same thread whose calls are split with the caller thread
/// (`perf sched timehist`, load 9): 2,321 Writes/s against 6,236 there. The thread's own
/// scheduling statistics (`/proc/thread-self/schedstat`: the time it waited to run, and how
/// often it ran) tell which case it is in, read once every `PROBE_CALLS` calls run on itself.
struct Placement {
    /// this thread's schedstat (None: not readable; every call then runs here)
    file: Option<std::fs::File>,
    /// the waits (ns) and runs it counted at the last look
    waited: u64,
    runs: u64,
    /// calls run here since the last look
    calls: u32,
    /// calls still to run on the caller thread
    away: u32,
}

/// A Write of more bytes than this (a few updates) runs on the caller thread: its work, not the
/// hand-off, is most of its cost, and the runtime's thread serves the other calls and streams
/// meanwhile (100 updates a Write, run on the runtime's thread: 172,133 and 214,548 inserts/s
/// where the front end before it, on the caller thread, took 199,830 and 253,821 in the same
/// runs, load 13).
const HERE_MAX_BYTES: usize = 1024;
/// Calls run on the runtime's thread between two looks at its waits.
const PROBE_CALLS: u32 = 8;
/// A thread that waited longer than this for a CPU, on average at each run since the last look,
/// hands its calls to the caller thread (50 µs: 12 µs for the thread whose calls are split, more
/// than 400 µs for one held back, on a loaded machine).
const WAIT_LIMIT_NS: u64 = 50_000;
/// Calls run on the caller thread before the runtime's thread tries again (a look costs up to
/// `PROBE_CALLS` held-back calls, a few ms on a loaded machine: rarely).
const AWAY_CALLS: u32 = 8192;

thread_local! {
    static PLACEMENT: std::cell::RefCell<Option<Placement>> = const { std::cell::RefCell::new(None) };
}

impl Placement {
    /// This thread's time waiting to run and the number of its runs (schedstat's 2nd and 3rd).
    fn read(file: &std::fs::File) -> Option<(u64, u64)> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 96];
        let n = file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let mut f = text.split_ascii_whitespace().skip(1);
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    }

    fn with<T>(f: impl FnOnce(&mut Placement) -> T) -> T {
        PLACEMENT.with(|p| {
            let mut p = p.borrow_mut();
            let p = p.get_or_insert_with(|| {
                let file = std::fs::File::open("/proc/thread-self/schedstat").ok();
                let (waited, runs) = file.as_ref().and_then(Placement::read).unwrap_or((0, 0));
                Placement {
                    file,
                    waited,
                    runs,
                    calls: 0,
                    away: 0,
                }
            });
            f(p)
        })
    }

    /// Whether the next call runs on this thread (else on the caller thread).
    fn here() -> bool {
        Placement::with(|p| {
            if p.away == 0 {
                return true;
            }
            p.away -= 1;
            if p.away == 0 {
                // a fresh look: the waits while the calls ran elsewhere do not count
                if let Some((w, r)) = p.file.as_ref().and_then(Placement::read) {
                    (p.waited, p.runs, p.calls) = (w, r, 0);
                }
            }
            false
        })
    }

    /// A call ran on this thread: every `PROBE_CALLS` of them, a look at its waits.
    fn ran_here() {
        Placement::with(|p| {
            p.calls += 1;
            if p.calls < PROBE_CALLS {
                return;
            }
            p.calls = 0;
            let Some((w, r)) = p.file.as_ref().and_then(Placement::read) else {
                return;
            };
            let (waited, runs) = (w.saturating_sub(p.waited), r.saturating_sub(p.runs));
            (p.waited, p.runs) = (w, r);
            if runs > 0 && waited / runs > WAIT_LIMIT_NS {
                p.away = AWAY_CALLS;
            }
        })
    }
}

/// A call for the caller thread, and where its answer goes.
type Job = Box<dyn FnOnce() + Send>;

/// One thread of the front end's own that runs the short calls (`write_now`, `read_now`) one
/// at a time, each handed over with no lock held while the thread is woken and answered through
/// a oneshot channel; a call that finds it busy takes the blocking threads' path.
///
/// Why: run in the runtime's thread under `tokio::task::block_in_place`, a one-update Write
/// cost about 8 context switches on a CPU shared with other processes: block_in_place hands the
/// runtime's worker to a blocking thread, whose pool wakes it while holding its lock, and the
/// answer then goes back to that thread; each woken thread took the CPU at once and blocked on
/// the lock its waker still held (`perf sched timehist`). Measured in turns with that front end
/// (client on CPU 0, servers on CPU 1, 15 rounds of 1000 one-update Writes each, machine
/// load 3-5): 7.6 switches and 84 µs of the server's CPU per Write there, 3.3 and 66 µs here;
/// 5,460 Writes/s there, 6,209 here, simple_switch_grpc 6,038. The work stays spread over two
/// threads (the runtime's: the gRPC I/O; this one: the Python call), which a CPU shared with
/// busy processes serves better than one thread doing all of it: the scheduler holds back a
/// thread that used more than its share of the CPU, and one thread doing the whole of each Write
/// waited twice as long for the CPU. With no other work on the CPU (the same runs at real-time
/// priority, a stand-in) the hand-off costs a little: 6,061 Writes/s here, 6,855 there,
/// simple_switch_grpc 5,976.
struct Caller {
    /// The call waiting to run (at most one: see `busy`).
    slot: std::sync::Mutex<Option<Job>>,
    /// A call is waiting or under way.
    busy: std::sync::atomic::AtomicBool,
    stop: std::sync::atomic::AtomicBool,
    thread: std::sync::OnceLock<std::thread::Thread>,
}

impl Caller {
    fn new() -> Arc<Caller> {
        Arc::new(Caller {
            slot: std::sync::Mutex::new(None),
            busy: std::sync::atomic::AtomicBool::new(false),
            stop: std::sync::atomic::AtomicBool::new(false),
            thread: std::sync::OnceLock::new(),
        })
    }

    /// Start the thread (it keeps a Python thread state, as the runtime's threads).
    fn start(self: &Arc<Self>) -> std::io::Result<JoinHandle<()>> {
        let me = self.clone();
        let handle = std::thread::Builder::new()
            .name("p4rt-front".into())
            .spawn(move || {
                keep_thread_state();
                me.serve();
                drop_thread_state();
            })?;
        let _ = self.thread.set(handle.thread().clone());
        Ok(handle)
    }

    fn serve(&self) {
        loop {
            let job = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            match job {
                Some(job) => {
                    // a panic drops the call's answer (its caller gets an internal error), not
                    // the thread
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    self.busy.store(false, Ordering::Release);
                }
                None if self.stop.load(Ordering::Acquire) => return,
                None => std::thread::park(),
            }
        }
    }

    /// `call()` on the caller thread, its answer to come; None (`call` dropped unrun): the
    /// thread is busy with another call or stopped.
    fn try_call<T: Send + 'static>(
        &self,
        call: impl FnOnce() -> T + Send + 'static,
    ) -> Option<tokio::sync::oneshot::Receiver<T>> {
        let thread = self.thread.get()?;
        if self.stop.load(Ordering::Acquire)
            || self
                .busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(call());
        });
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        thread.unpark();
        Some(rx)
    }

    /// End the thread once the call under way (if any) has ended.
    fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// A status as the Python handlers give it: (code, message, `grpc-status-details-bin`).
type PyStatus = (i32, String, Vec<u8>);

/// A Read's responses and the status its stream ends with (None: OK).
type ReadAnswer = (Vec<Bytes>, Option<Status>);

macro_rules! unary_svc {
    ($name:ident, $handler:ident) => {
        struct $name(Arc<Inner>);
        impl tonic::server::UnaryService<Bytes> for $name {
            type Response = Bytes;
            type Future = BoxFuture<Result<Response<Bytes>, Status>>;
            fn call(&mut self, req: Request<Bytes>) -> Self::Future {
                Box::pin($handler(self.0.clone(), req))
            }
        }
    };
}

async fn write_rpc(inner: Arc<Inner>, req: Request<Bytes>) -> Result<Response<Bytes>, Status> {
    inner.write(req).await
}

async fn set_pipeline_rpc(
    inner: Arc<Inner>,
    req: Request<Bytes>,
) -> Result<Response<Bytes>, Status> {
    let _one = inner.write_lock.lock().await;
    inner
        .unary(req, "/p4.v1.P4Runtime/SetForwardingPipelineConfig")
        .await
}

async fn get_pipeline_rpc(
    inner: Arc<Inner>,
    req: Request<Bytes>,
) -> Result<Response<Bytes>, Status> {
    inner
        .unary(req, "/p4.v1.P4Runtime/GetForwardingPipelineConfig")
        .await
}

async fn capabilities_rpc(
    inner: Arc<Inner>,
    req: Request<Bytes>,
) -> Result<Response<Bytes>, Status> {
    inner.unary(req, "/p4.v1.P4Runtime/Capabilities").await
}

unary_svc!(WriteSvc, write_rpc);
unary_svc!(SetPipelineSvc, set_pipeline_rpc);
unary_svc!(GetPipelineSvc, get_pipeline_rpc);
unary_svc!(CapabilitiesSvc, capabilities_rpc);

/// A Read's answer as a stream: its responses, then its status if that is not OK.
type ReadStream = tokio_stream::Iter<std::vec::IntoIter<Result<Bytes, Status>>>;

/// Reads are answered here, on a blocking thread (the switch may take its time), and run
/// alongside Writes as on the grpcio server: a Read sees a sliced Write's slices applied so far.
struct ReadSvc(Arc<Inner>);
impl tonic::server::ServerStreamingService<Bytes> for ReadSvc {
    type Response = Bytes;
    type ResponseStream = ReadStream;
    type Future = BoxFuture<Result<Response<ReadStream>, Status>>;
    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move {
            let body = req.into_inner();
            if let Some(native) = &inner.native {
                // one entry by its key: the entry store may answer it with no Python run
                let answer = inner
                    .native_call(native, Placement::here(), (), &body, Native::read_keyed)
                    .await;
                if let Some(answer) = answer {
                    inner.native_answers.fetch_add(1, Ordering::Relaxed);
                    return Ok(Response::new(tokio_stream::iter(vec![Ok(Bytes::from(
                        answer,
                    ))])));
                }
            }
            let tried = match inner.read_now {
                Some(_) => {
                    let (me, b) = (inner.clone(), body.clone());
                    inner.caller.try_call(move || {
                        let now = me.read_now.as_ref().expect("read_now is set");
                        me.call_read_now(now, &b)
                    })
                }
                None => None,
            };
            let now = match tried {
                Some(answer) => answer.await.map_err(|_| {
                    Status::internal("internal error: Read handler: the caller thread stopped")
                })?,
                None => None,
            };
            let (responses, status) = match now {
                Some(answer) => answer,
                None => tokio::task::spawn_blocking(move || inner.call_read(&body))
                    .await
                    .map_err(|e| Status::internal(format!("internal error: Read handler: {e}")))?,
            };
            match status {
                // nothing to send before the error: a trailers-only answer, as grpcio's
                Some(status) if responses.is_empty() => Err(status),
                status => {
                    let items: Vec<Result<Bytes, Status>> = responses
                        .into_iter()
                        .map(Ok)
                        .chain(status.map(Err))
                        .collect();
                    Ok(Response::new(tokio_stream::iter(items)))
                }
            }
        })
    }
}

/// What goes to a StreamChannel's client, in order: a message's bytes, the end of the stream
/// (OK), or the status it ends with.
enum Out {
    Msg(Bytes),
    End,
    Abort(Status),
}

/// A client's message, its half-close, or the status its stream failed with.
enum In {
    Msg(Bytes),
    End,
    Failed(Status),
}

/// `send(message)`: one StreamChannel's way to its client, for the core's `StreamSession.send`
/// (called on the switch loop, or wherever the core runs). A message is a
/// `p4.v1.StreamMessageResponse` or its bytes (a packet-in, `wire_encode.packet_in_response`).
/// Packet-ins and digest lists beyond `max_queue` waiting are dropped for a client that does not
/// read (counted in `P4RuntimeFront.dropped`), arbitration updates never: as the grpcio
/// server's queue of a stream. Once the stream is over, sending does nothing.
#[pyclass(module = "hbh_engine", frozen)]
pub struct StreamSender {
    tx: mpsc::UnboundedSender<Out>,
    queued: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
    max_queue: AtomicUsize,
}

#[pymethods]
impl StreamSender {
    fn send(&self, msg: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.tx.is_closed() {
            return Ok(());
        }
        let py = msg.py();
        let (bytes, droppable) = match msg.downcast::<PyBytes>() {
            Ok(b) => (Bytes::copy_from_slice(b.as_bytes()), true),
            Err(_) => {
                let kind = msg.call_method1(intern!(py, "WhichOneof"), ("update",))?;
                let droppable = !matches!(
                    kind.extract::<Option<String>>()?.as_deref(),
                    Some("arbitration")
                );
                let raw = msg.call_method0(intern!(py, "SerializeToString"))?;
                (
                    Bytes::copy_from_slice(raw.downcast::<PyBytes>()?.as_bytes()),
                    droppable,
                )
            }
        };
        if droppable
            && self.queued.load(Ordering::Relaxed) >= self.max_queue.load(Ordering::Relaxed)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.queued.fetch_add(1, Ordering::Relaxed);
        let _ = self.tx.send(Out::Msg(bytes));
        Ok(())
    }

    /// How many waiting messages make packet-ins and digest lists be dropped.
    #[getter]
    fn get_max_queue(&self) -> usize {
        self.max_queue.load(Ordering::Relaxed)
    }

    #[setter]
    fn set_max_queue(&self, n: usize) {
        self.max_queue.store(n, Ordering::Relaxed);
    }
}

/// The largest request message taken, as grpcio's server (and tonic's by default).
const MAX_REQUEST: usize = 4 << 20;

/// grpcio's status for a request message over [`MAX_REQUEST`], for tonic's (OUT_OF_RANGE, its
/// own words), so a client sees the same refusal from either front end; None for any other.
fn too_large(status: &Status) -> Option<Status> {
    if status.code() != Code::OutOfRange {
        return None;
    }
    let rest = status
        .message()
        .strip_prefix("Error, decoded message length too large: found ")?;
    let n = rest.split(' ').next()?;
    Some(Status::resource_exhausted(format!(
        "SERVER: Received message larger than max ({n} vs. {MAX_REQUEST})"
    )))
}

/// A status as Python gives it: `(code, message, grpc-status-details-bin)`.
fn py_status(out: &Bound<'_, PyAny>) -> PyResult<Status> {
    let (code, message, details): PyStatus = out.extract()?;
    Ok(Status::with_details(
        Code::from_i32(code),
        message,
        Bytes::from(details),
    ))
}

/// A stream's Python handle: dropped, its session is closed (`stream_close`), whatever ended it
/// (the client half-closed, failed or cancelled, an error, the front end stopping).
struct Session {
    handle: Option<Py<PyAny>>,
    front: Arc<Inner>,
}

impl Session {
    fn handle(&self) -> &Py<PyAny> {
        self.handle
            .as_ref()
            .expect("a session's handle lives as long as it does")
    }
}

impl Session {
    /// `stream_close(handle)` now, on this (blocking) thread: the session ends before its client
    /// sees the stream end, as the grpcio server's; the drop's call then finds it closed.
    fn close(&self) {
        Python::with_gil(|py| {
            let handle = self.handle().clone_ref(py);
            if let Err(e) = self
                .front
                .streams
                .bind(py)
                .call_method1(intern!(py, "stream_close"), (handle,))
            {
                e.print(py);
            }
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(handle) = self.handle.take() else {
            return;
        };
        let front = self.front.clone();
        let close = move || {
            Python::with_gil(|py| {
                if let Err(e) = front
                    .streams
                    .bind(py)
                    .call_method1(intern!(py, "stream_close"), (handle,))
                {
                    e.print(py);
                }
            })
        };
        match tokio::runtime::Handle::try_current() {
            // never on a runtime worker: it would wait for the GIL with every other call behind it
            Ok(rt) => {
                rt.spawn_blocking(close);
            }
            Err(_) => close(),
        }
    }
}

impl Inner {
    /// `stream_open(sender)`: the stream's handle, or the status refusing it.
    fn call_open(&self, sender: StreamSender) -> Result<Py<PyAny>, Status> {
        Python::with_gil(|py| {
            let answer = || -> PyResult<Result<Py<PyAny>, Status>> {
                let out = self
                    .streams
                    .bind(py)
                    .call_method1(intern!(py, "stream_open"), (sender,))?;
                if out.is_instance_of::<pyo3::types::PyTuple>() {
                    return Ok(Err(py_status(&out)?));
                }
                Ok(Ok(out.unbind()))
            };
            answer().unwrap_or_else(|e| {
                Err(Status::internal(format!(
                    "internal error: StreamChannel handler: {e}"
                )))
            })
        })
    }

    /// `stream_messages(handle, messages)`: None, or the status the stream ends with.
    fn call_messages(&self, session: &Session, msgs: Vec<Bytes>) -> Option<Status> {
        Python::with_gil(|py| {
            let answer = || -> PyResult<Option<Status>> {
                let list = PyList::new(py, msgs.iter().map(|m| PyBytes::new(py, m)))?;
                let out = self.streams.bind(py).call_method1(
                    intern!(py, "stream_messages"),
                    (session.handle().clone_ref(py), list),
                )?;
                if out.is_none() {
                    return Ok(None);
                }
                Ok(Some(py_status(&out)?))
            };
            answer().unwrap_or_else(|e| {
                Some(Status::internal(format!(
                    "internal error: StreamChannel handler: {e}"
                )))
            })
        })
    }

    /// `stream_end(handle)`: the client half-closed; its session ends once its messages are served.
    fn call_end(&self, session: &Session) {
        Python::with_gil(|py| {
            if let Err(e) = self
                .streams
                .bind(py)
                .call_method1(intern!(py, "stream_end"), (session.handle().clone_ref(py),))
            {
                e.print(py);
            }
        })
    }
}

/// The client's messages into `to`, at most `stream_batch` waiting: flow control holds back the
/// rest. A stream that fails (a message over the size limit, a reset) ends the call with its
/// status, if the client is still there to hear it.
async fn read_stream(mut inbound: Streaming<Bytes>, to: mpsc::Sender<In>) {
    loop {
        match inbound.message().await {
            Ok(Some(m)) => {
                if to.send(In::Msg(m)).await.is_err() {
                    return;
                }
            }
            Ok(None) => {
                let _ = to.send(In::End).await;
                return;
            }
            Err(status) => {
                let status = too_large(&status).unwrap_or(status);
                let _ = to.send(In::Failed(status)).await;
                return;
            }
        }
    }
}

/// Serve the client's messages, a batch per Python call (what waits when the last one ends);
/// the first refusal ends the stream with its status; the half-close ends the session, then the
/// stream (PI/BMv2 end it too: p4runtime-shell's teardown waits for that).
async fn feed_stream(
    front: Arc<Inner>,
    session: Arc<Session>,
    mut from: mpsc::Receiver<In>,
    out: mpsc::UnboundedSender<Out>,
) {
    while let Some(first) = from.recv().await {
        let mut msgs = Vec::new();
        let mut ended = false;
        let mut failed = None;
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                In::Msg(m) => msgs.push(m),
                In::End => {
                    ended = true;
                    break;
                }
                In::Failed(status) => {
                    failed = Some(status);
                    break;
                }
            }
            if msgs.len() < front.stream_batch {
                next = from.try_recv().ok();
            }
        }
        if !msgs.is_empty() {
            let (f, s) = (front.clone(), session.clone());
            let refused = tokio::task::spawn_blocking(move || f.call_messages(&s, msgs))
                .await
                .unwrap_or_else(|e| {
                    Some(Status::internal(format!(
                        "internal error: StreamChannel handler: {e}"
                    )))
                });
            if let Some(status) = refused.or(failed.take()) {
                let s = session.clone();
                let _ = tokio::task::spawn_blocking(move || s.close()).await;
                let _ = out.send(Out::Abort(status));
                return;
            }
        }
        if let Some(status) = failed {
            let s = session.clone();
            let _ = tokio::task::spawn_blocking(move || s.close()).await;
            let _ = out.send(Out::Abort(status));
            return;
        }
        if ended {
            let (f, s) = (front.clone(), session.clone());
            let _ = tokio::task::spawn_blocking(move || {
                f.call_end(&s);
                s.close();
            })
            .await;
            let _ = out.send(Out::End);
            return;
        }
    }
}

/// What a StreamChannel's client gets; dropped (the stream over), its tasks stop and its
/// session is closed at once, so a dead primary's queued messages are dropped and its election
/// id is free again.
struct NativeStream {
    rx: mpsc::UnboundedReceiver<Out>,
    queued: Arc<AtomicUsize>,
    tasks: [TaskHandle<()>; 2],
    _session: Arc<Session>,
    ended: bool,
}

impl tokio_stream::Stream for NativeStream {
    type Item = Result<Bytes, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Out::Msg(b))) => {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                Poll::Ready(Some(Ok(b)))
            }
            Poll::Ready(Some(Out::Abort(status))) => {
                self.ended = true;
                Poll::Ready(Some(Err(status)))
            }
            Poll::Ready(Some(Out::End)) | Poll::Ready(None) => {
                self.ended = true;
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for NativeStream {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

struct StreamSvc(Arc<Inner>);
impl tonic::server::StreamingService<Bytes> for StreamSvc {
    type Response = Bytes;
    type ResponseStream = NativeStream;
    type Future = BoxFuture<Result<Response<NativeStream>, Status>>;
    fn call(&mut self, req: Request<Streaming<Bytes>>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move {
            let inbound = req.into_inner();
            let (tx, rx) = mpsc::unbounded_channel();
            let queued = Arc::new(AtomicUsize::new(0));
            let sender = StreamSender {
                tx: tx.clone(),
                queued: queued.clone(),
                dropped: inner.dropped.clone(),
                max_queue: AtomicUsize::new(usize::MAX),
            };
            let me = inner.clone();
            // the session is closed when this is dropped, even if this call is given up first
            let session = tokio::task::spawn_blocking(move || {
                me.call_open(sender).map(|handle| Session {
                    handle: Some(handle),
                    front: me.clone(),
                })
            })
            .await
            .map_err(|e| {
                Status::internal(format!("internal error: StreamChannel handler: {e}"))
            })??;
            let session = Arc::new(session);
            let (in_tx, in_rx) = mpsc::channel(inner.stream_batch.max(1));
            let reader = tokio::spawn(read_stream(inbound, in_tx));
            let feeder = tokio::spawn(feed_stream(inner.clone(), session.clone(), in_rx, tx));
            Ok(Response::new(NativeStream {
                rx,
                queued,
                tasks: [reader, feeder],
                _session: session,
                ended: false,
            }))
        })
    }
}

impl<B> tonic::codegen::Service<http::Request<B>> for Front
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<BoxBody>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let inner = self.0.clone();
        let method = req.uri().path().to_owned();
        Box::pin(async move {
            // requests up to 4 MiB, as grpcio's server takes; answers of any size, as it sends
            let mut grpc = tonic::server::Grpc::new(RawCodec)
                .max_decoding_message_size(MAX_REQUEST)
                .max_encoding_message_size(usize::MAX);
            let resp = match method.as_str() {
                "/p4.v1.P4Runtime/Write" => grpc.unary(WriteSvc(inner), req).await,
                "/p4.v1.P4Runtime/Read" => grpc.server_streaming(ReadSvc(inner), req).await,
                "/p4.v1.P4Runtime/StreamChannel" => grpc.streaming(StreamSvc(inner), req).await,
                "/p4.v1.P4Runtime/SetForwardingPipelineConfig" => {
                    grpc.unary(SetPipelineSvc(inner), req).await
                }
                "/p4.v1.P4Runtime/GetForwardingPipelineConfig" => {
                    grpc.unary(GetPipelineSvc(inner), req).await
                }
                "/p4.v1.P4Runtime/Capabilities" => grpc.unary(CapabilitiesSvc(inner), req).await,
                _ => Status::unimplemented(format!("unknown method {method}")).into_http(),
            };
            // a request over the size limit, refused before any handler: grpcio's answer
            if resp.headers().get("grpc-status").map(|v| v.as_bytes()) == Some(b"11") {
                if let Some(status) = Status::from_header_map(resp.headers()) {
                    if let Some(ours) = too_large(&status) {
                        return Ok(ours.into_http());
                    }
                }
            }
            Ok(resp)
        })
    }
}

thread_local! {
    /// The Python thread state this runtime thread keeps (null: none), see [`keep_thread_state`].
    static THREAD_STATE: std::cell::Cell<(*mut pyo3::ffi::PyThreadState, Option<pyo3::ffi::PyGILState_STATE>)> =
        const { std::cell::Cell::new((std::ptr::null_mut(), None)) };
}

/// A runtime thread keeps one Python thread state for its whole life. Why: without one, every
/// call into Python made a thread state and dropped it again (with its 16 KiB frame stack,
/// mapped and unmapped), a few µs of a one-update Write that costs simple_switch_grpc ~50 µs.
fn keep_thread_state() {
    // SAFETY: the engine is a Python extension, so the interpreter is initialised; the state is
    // taken with the GIL and this thread then lets the GIL go, keeping its thread state, which
    // later `Python::with_gil` calls on this thread find (PyGILState_Ensure) instead of making one
    unsafe {
        let gil = pyo3::ffi::PyGILState_Ensure();
        let state = pyo3::ffi::PyEval_SaveThread();
        THREAD_STATE.with(|t| t.set((state, Some(gil))));
    }
}

/// The end of a runtime thread (the runtime stops: `P4RuntimeFront.stop`, with the interpreter
/// alive): its kept thread state goes.
fn drop_thread_state() {
    let (state, gil) = THREAD_STATE.with(|t| t.replace((std::ptr::null_mut(), None)));
    if let (false, Some(gil)) = (state.is_null(), gil) {
        // SAFETY: the state `keep_thread_state` saved on this very thread, taken back with the
        // GIL and released as PyGILState_Ensure's pair
        unsafe {
            pyo3::ffi::PyEval_RestoreThread(state);
            pyo3::ffi::PyGILState_Release(gil);
        }
    }
}

/// `P4RuntimeFront(address, backend, write, read, streams, stream_batch=64)`: `start()` listens
/// on `address` (HOST:PORT; port 0 picks one) and returns the bound port; `write(request_bytes)`
/// answers a Write with the response's bytes or `(code, message, details_bytes)`;
/// `read(request_bytes)` a Read with `(responses, None or (code, message, details_bytes))`;
/// `streams` serves StreamChannels: `stream_open(sender)` returns a handle for the stream (or the
/// status refusing it) and gives the core `sender.send`, `stream_messages(handle, [bytes])`
/// serves a batch of the client's messages (None, or the status ending the stream),
/// `stream_end(handle)` follows the client's half-close, `stream_close(handle)` comes once when
/// the stream is over, however it ended. The other RPCs go to `backend`.
#[pyclass(module = "hbh_engine")]
pub struct P4RuntimeFront {
    address: String,
    backend: String,
    write: Py<PyAny>,
    read: Py<PyAny>,
    streams: Py<PyAny>,
    stream_batch: usize,
    write_now: Option<Py<PyAny>>,
    read_now: Option<Py<PyAny>>,
    native: Option<Native>,
    native_answers: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
    caller: Option<(Arc<Caller>, JoinHandle<()>)>,
}

#[pymethods]
impl P4RuntimeFront {
    #[new]
    #[pyo3(signature = (address, backend, write, read, streams, stream_batch=64, write_now=None, read_now=None, native=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        address: String,
        backend: String,
        write: Py<PyAny>,
        read: Py<PyAny>,
        streams: Py<PyAny>,
        stream_batch: usize,
        write_now: Option<Py<PyAny>>,
        read_now: Option<Py<PyAny>>,
        native: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let native = native.map(|n| Native::new(&n)).transpose()?;
        Ok(P4RuntimeFront {
            address,
            backend,
            write,
            read,
            streams,
            stream_batch,
            write_now,
            read_now,
            native,
            native_answers: Arc::new(AtomicU64::new(0)),
            dropped: Arc::new(AtomicU64::new(0)),
            stop: None,
            thread: None,
            caller: None,
        })
    }

    /// Writes and Reads answered so far with no Python run (`native`, p4rtnative.rs).
    #[getter]
    fn native_answers(&self) -> u64 {
        self.native_answers.load(Ordering::Relaxed)
    }

    /// Packet-ins and digest lists dropped so far for clients that did not read them.
    #[getter]
    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn start(&mut self, py: Python<'_>) -> PyResult<u16> {
        if self.thread.is_some() {
            return Err(PyRuntimeError::new_err("P4RuntimeFront already started"));
        }
        let addr: SocketAddr = self.address.parse().map_err(|e| {
            PyOSError::new_err(format!(
                "P4Runtime server cannot listen on {}: {e}",
                self.address
            ))
        })?;
        let std_listener = std::net::TcpListener::bind(addr).map_err(|e| {
            PyOSError::new_err(format!(
                "P4Runtime server cannot listen on {}: {e}",
                self.address
            ))
        })?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            // the blocking threads live as long as the runtime (they keep a Python thread state)
            .thread_keep_alive(std::time::Duration::from_secs(365 * 86_400))
            .on_thread_start(keep_thread_state)
            .on_thread_stop(drop_thread_state)
            .thread_name("p4rt-front")
            .enable_all()
            .build()?;
        let backend = Channel::from_shared(format!("http://{}", self.backend))
            .map_err(|e| PyOSError::new_err(format!("P4Runtime back end {}: {e}", self.backend)))?
            .tcp_nodelay(true);
        let caller = Caller::new();
        let caller_thread = caller.start()?;
        let inner = Arc::new(Inner {
            backend: {
                let _enter = runtime.enter();
                backend.connect_lazy()
            },
            write: self.write.clone_ref(py),
            write_now: self.write_now.as_ref().map(|f| f.clone_ref(py)),
            read_now: self.read_now.as_ref().map(|f| f.clone_ref(py)),
            read: self.read.clone_ref(py),
            streams: self.streams.clone_ref(py),
            stream_batch: self.stream_batch.max(1),
            dropped: self.dropped.clone(),
            write_lock: Arc::new(Mutex::new(())),
            caller: caller.clone(),
            native: self.native.as_ref().map(|n| n.clone_ref(py)),
            native_answers: self.native_answers.clone(),
        });
        // the caller thread ends if the front end does not start after all
        let stop_caller = |e: std::io::Error| {
            caller.stop();
            e
        };
        let listener = {
            let _enter = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener).map_err(stop_caller)?
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("p4rt-front".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(
                        |s: std::io::Result<tokio::net::TcpStream>| {
                            s.inspect(|c| {
                                let _ = c.set_nodelay(true);
                            })
                        },
                    );
                    let mut graceful = stop_rx.clone();
                    let mut grace_over = stop_rx;
                    let serve = tonic::transport::Server::builder()
                        // as the grpcio server: a 64 KiB window, no BDP probing, so a flood of
                        // PacketOuts is held back by flow control, not buffered by the thousand
                        .http2_adaptive_window(Some(false))
                        .initial_stream_window_size(65_535)
                        .initial_connection_window_size(65_535)
                        .add_service(Front(inner))
                        .serve_with_incoming_shutdown(incoming, async move {
                            let _ = graceful.changed().await;
                        });
                    tokio::select! {
                        served = serve => {
                            if let Err(e) = served {
                                eprintln!("p4switch: P4Runtime front end stopped: {e}");
                            }
                        }
                        _ = async move {
                            let _ = grace_over.changed().await;
                            tokio::time::sleep(STOP_GRACE).await;
                        } => {}
                    }
                });
                runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            })
            .map_err(stop_caller)?;
        self.stop = Some(stop_tx);
        self.thread = Some(thread);
        self.caller = Some((caller, caller_thread));
        Ok(port)
    }

    /// The callbacks are bound methods of the Python server that holds this front end: a cycle
    /// the collector can only see through here. The running server keeps its own clones, which
    /// the collector counts as outside references, so a live front end is never collected.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.write)?;
        visit.call(&self.read)?;
        visit.call(&self.write_now)?;
        visit.call(&self.read_now)?;
        if let Some(n) = &self.native {
            n.traverse(&visit)?;
        }
        visit.call(&self.streams)
    }

    /// Breaks the cycle: the callbacks become None (a started server still holds its clones).
    fn __clear__(&mut self) {
        let old = Python::with_gil(|py| {
            (
                std::mem::replace(&mut self.write, py.None()),
                std::mem::replace(&mut self.read, py.None()),
                std::mem::replace(&mut self.streams, py.None()),
                self.write_now.take(),
                self.read_now.take(),
                self.native.take(),
            )
        });
        drop(old);
    }

    /// Stop listening, end every call, and wait for the front end's threads (at most a few s).
    fn stop(&mut self, py: Python<'_>) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            py.allow_threads(|| {
                let _ = t.join();
            });
        }
        if let Some((caller, t)) = self.caller.take() {
            caller.stop();
            py.allow_threads(|| {
                let _ = t.join();
            });
        }
    }
}
