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
//!   message, `grpc-status-details-bin`);
//! * answers `Read` itself the same way (`P4RuntimeServer.read_bytes`: the responses' bytes, and
//!   the status the stream ends with). Why: handed on, a one-entry Read crossed two gRPC hops
//!   and the grpcio server's asyncio loop, about 1 ms where simple_switch_grpc takes 0.3 ms;
//! * hands every other RPC, byte for byte, to the existing grpcio server, which then listens on
//!   a loopback port of its own (`backend`): its answers, errors and stream behaviour stay
//!   exactly what they were.
//!
//! Writes and `SetForwardingPipelineConfig` pass one lock here, one at a time, as the Python
//! server runs them (a Write is never applied against a half-changed pipeline).

// tonic's Status is the error of every call here, as in tonic's own generated services
#![allow(clippy::result_large_err)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use bytes::{Buf, BufMut, Bytes};
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::{PyTraverseError, PyVisit};
use tokio::sync::{watch, Mutex};
use tokio_stream::StreamExt;
use tonic::body::BoxBody;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Response, Status, Streaming};

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

/// A StreamChannel's messages handed on to the back end; None: the client's stream failed (its
/// connection died), and the back end's call is then reset - its session ends at once, as it
/// did when the client was grpcio's own - not half-closed behind the messages still queued.
#[derive(Clone, Copy, Default)]
struct ForwardCodec;

impl Codec for ForwardCodec {
    type Encode = Option<Bytes>;
    type Decode = Bytes;
    type Encoder = ForwardCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        ForwardCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for ForwardCodec {
    type Item = Option<Bytes>;
    type Error = Status;

    fn encode(&mut self, item: Option<Bytes>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        match item {
            Some(b) => {
                dst.put(b);
                Ok(())
            }
            None => Err(Status::cancelled("the client's stream failed")),
        }
    }
}

struct Inner {
    backend: Channel,
    write: Py<PyAny>,
    /// `read(request_bytes)`: `(responses, status)`, the responses' bytes in order and None or
    /// the `(code, message, details)` the stream ends with after them.
    read: Py<PyAny>,
    /// `gone(stream_id)`: a client's StreamChannel ended before its answers did (it cancelled
    /// or its connection died): Python ends the session at once, as grpcio did for its own
    /// clients; the back end's call ends later, behind the messages still on their way.
    gone: Py<PyAny>,
    streams: std::sync::atomic::AtomicU64,
    /// Writes and pipeline changes, one at a time.
    write_lock: Mutex<()>,
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

    /// A Write, run to its end even when its client gives up (the Python server shielded it
    /// the same way): the lock is held until the batch is applied or refused. On a blocking
    /// thread: the switch may take its time (a busy loop, a sliced batch), and the front end's
    /// other calls go on meanwhile.
    async fn write(self: Arc<Self>, req: Request<Bytes>) -> Result<Response<Bytes>, Status> {
        let body = req.into_inner();
        let me = self.clone();
        let task = tokio::spawn(async move {
            let _one = me.write_lock.lock().await;
            let call = me.clone();
            tokio::task::spawn_blocking(move || call.call_write(&body))
                .await
                .map_err(|e| Status::internal(format!("internal error: Write handler: {e}")))?
        });
        match task.await {
            Ok(Ok(b)) => Ok(Response::new(b)),
            Ok(Err(status)) => Err(status),
            Err(e) => Err(Status::internal(format!(
                "internal error: Write handler: {e}"
            ))),
        }
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
            let answer = || -> PyResult<ReadAnswer> {
                let out = self.read.bind(py).call1((PyBytes::new(py, body),))?;
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
            };
            answer().unwrap_or_else(|e| {
                (
                    Vec::new(),
                    Some(Status::internal(format!(
                        "internal error: Read handler: {e}"
                    ))),
                )
            })
        })
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
            let (responses, status) = tokio::task::spawn_blocking(move || inner.call_read(&body))
                .await
                .map_err(|e| Status::internal(format!("internal error: Read handler: {e}")))?;
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

/// The header naming a handed-on StreamChannel to the back end (`P4RuntimeServer.stream_gone`).
const STREAM_ID_HEADER: &str = "hbh-front-stream";

/// The back end's answers on one StreamChannel; dropped before they ended, it tells Python.
struct Watched {
    inner: Pin<Box<Streaming<Bytes>>>,
    id: u64,
    front: Arc<Inner>,
    ended: bool,
}

impl tokio_stream::Stream for Watched {
    type Item = Result<Bytes, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = tokio_stream::Stream::poll_next(self.inner.as_mut(), cx);
        if matches!(next, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.ended = true;
        }
        next
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let (front, id) = (self.front.clone(), self.id);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn_blocking(move || {
                Python::with_gil(|py| {
                    if let Err(e) = front.gone.bind(py).call1((id,)) {
                        e.print(py);
                    }
                })
            });
        }
    }
}

struct StreamSvc(Arc<Inner>);
impl tonic::server::StreamingService<Bytes> for StreamSvc {
    type Response = Bytes;
    type ResponseStream = Watched;
    type Future = BoxFuture<Result<Response<Watched>, Status>>;
    fn call(&mut self, req: Request<Streaming<Bytes>>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move {
            // the client's messages until it half-closes, or None once if its stream fails
            let mut inbound = fresh(req).map(|s| {
                let mut failed = false;
                s.map_while(move |m| {
                    if failed {
                        return None;
                    }
                    failed = m.is_err();
                    Some(m.ok())
                })
            });
            let id = inner
                .streams
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let value = id
                .to_string()
                .parse()
                .map_err(|_| Status::internal("internal error: stream id"))?;
            inbound.metadata_mut().insert(STREAM_ID_HEADER, value);
            let resp = inner
                .client()
                .await?
                .streaming(
                    inbound,
                    path("/p4.v1.P4Runtime/StreamChannel"),
                    ForwardCodec,
                )
                .await?;
            let front = inner.clone();
            Ok(resp.map(move |s| Watched {
                inner: Box::pin(s),
                id,
                front,
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
            let mut grpc = tonic::server::Grpc::new(RawCodec).max_encoding_message_size(usize::MAX);
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
            Ok(resp)
        })
    }
}

/// `P4RuntimeFront(address, backend, write, gone, read)`: `start()` listens on `address`
/// (HOST:PORT; port 0 picks one) and returns the bound port; `write(request_bytes)` answers a
/// Write with the response's bytes or `(code, message, details_bytes)`; `read(request_bytes)` a
/// Read with `(responses, None or (code, message, details_bytes))`; the other RPCs go to
/// `backend`, a StreamChannel with its id in the `hbh-front-stream` header; `gone(id)` when its
/// client left.
#[pyclass(module = "hbh_engine")]
pub struct P4RuntimeFront {
    address: String,
    backend: String,
    write: Py<PyAny>,
    gone: Py<PyAny>,
    read: Py<PyAny>,
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

#[pymethods]
impl P4RuntimeFront {
    #[new]
    fn new(
        address: String,
        backend: String,
        write: Py<PyAny>,
        gone: Py<PyAny>,
        read: Py<PyAny>,
    ) -> Self {
        P4RuntimeFront {
            address,
            backend,
            write,
            gone,
            read,
            stop: None,
            thread: None,
        }
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
            .thread_name("p4rt-front")
            .enable_all()
            .build()?;
        let backend = Channel::from_shared(format!("http://{}", self.backend))
            .map_err(|e| PyOSError::new_err(format!("P4Runtime back end {}: {e}", self.backend)))?
            .tcp_nodelay(true);
        let inner = Arc::new(Inner {
            backend: {
                let _enter = runtime.enter();
                backend.connect_lazy()
            },
            write: self.write.clone_ref(py),
            gone: self.gone.clone_ref(py),
            read: self.read.clone_ref(py),
            streams: std::sync::atomic::AtomicU64::new(0),
            write_lock: Mutex::new(()),
        });
        let listener = {
            let _enter = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener)?
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
            })?;
        self.stop = Some(stop_tx);
        self.thread = Some(thread);
        Ok(port)
    }

    /// The callbacks are bound methods of the Python server that holds this front end: a cycle
    /// the collector can only see through here. The running server keeps its own clones, which
    /// the collector counts as outside references, so a live front end is never collected.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.write)?;
        visit.call(&self.gone)?;
        visit.call(&self.read)
    }

    /// Breaks the cycle: the callbacks become None (a started server still holds its clones).
    fn __clear__(&mut self) {
        let old = Python::with_gil(|py| {
            (
                std::mem::replace(&mut self.write, py.None()),
                std::mem::replace(&mut self.gone, py.None()),
                std::mem::replace(&mut self.read, py.None()),
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
    }
}
