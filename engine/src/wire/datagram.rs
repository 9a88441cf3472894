//! The hosts' data datagram (hosts/datagram.py documents the frame): its one codec.
//!
//! Why here: every frame a simulated host receives is decoded (sequence number, timestamp, flow,
//! kind), and the paced sender stamps the same header's fields into every frame it sends
//! (host.rs); one layout in Rust serves both, and hosts/datagram.py wraps it, so there is no
//! second hand-written copy of the header.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

create_exception!(
    hbh_engine,
    DatagramError,
    PyValueError,
    "Not one of our datagrams."
);

pub const MAGIC: u16 = 0x4842;
pub const VERSION: u8 = 1;
pub const ETH: usize = 14;
pub const IP: usize = 20;
pub const UDP: usize = 8;
/// Where the header starts: right after the UDP header.
pub const OFFSET: usize = ETH + IP + UDP;
/// magic 2, version 1, kind 1, flow 2, rtt 2, seq 4, ts_ns 8.
pub const HEADER_BYTES: usize = 20;
pub const MIN_FRAME_BYTES: usize = OFFSET + HEADER_BYTES;
pub const SEQ_AT: usize = OFFSET + 8;
pub const TS_AT: usize = SEQ_AT + 4;

fn be(frame: &[u8], at: usize, n: usize) -> u64 {
    frame[at..at + n]
        .iter()
        .fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// One received datagram's header fields, and the frame they came in.
#[pyclass(module = "hbh_engine", frozen, get_all)]
pub struct Datagram {
    flow: u16,
    seq: u32,
    ts_ns: u64,
    rtt_100us: u16,
    size: usize,
    src_ip: u32,
    dst_ip: u32,
    kind: u8,
    frame: Py<PyBytes>,
}

#[pymethods]
impl Datagram {
    /// The `n` bytes after the header (a feedback message), fewer if the frame ends first.
    fn payload<'py>(&self, py: Python<'py>, n: usize) -> Bound<'py, PyBytes> {
        let frame = self.frame.as_bytes(py);
        let start = MIN_FRAME_BYTES.min(frame.len());
        let end = MIN_FRAME_BYTES.saturating_add(n).min(frame.len());
        PyBytes::new(py, &frame[start..end])
    }

    fn __repr__(&self) -> String {
        format!(
            "Datagram(flow={}, seq={}, ts_ns={}, rtt_100us={}, size={}, src_ip={}, dst_ip={}, kind={})",
            self.flow,
            self.seq,
            self.ts_ns,
            self.rtt_100us,
            self.size,
            self.src_ip,
            self.dst_ip,
            self.kind
        )
    }
}

/// The datagram in `frame`; `DatagramError` if it is not one of ours (not IPv4/UDP, too short,
/// another magic or version).
#[pyfunction]
pub fn parse_datagram(frame: &Bound<'_, PyAny>) -> PyResult<Datagram> {
    let frame = match frame.downcast::<PyBytes>() {
        Ok(b) => b.clone(),
        Err(_) => frame
            .py()
            .get_type::<PyBytes>()
            .call1((frame,))?
            .downcast_into::<PyBytes>()?,
    };
    let h = Header::read(frame.as_bytes()).map_err(DatagramError::new_err)?;
    Ok(Datagram {
        kind: h.kind,
        flow: h.flow,
        rtt_100us: h.rtt_100us,
        seq: h.seq,
        ts_ns: h.ts_ns,
        size: h.size,
        src_ip: h.src_ip,
        dst_ip: h.dst_ip,
        frame: frame.unbind(),
    })
}

/// A datagram's header fields as read from its frame: `parse_datagram`'s and the host's
/// receive (hostrecv.rs) one reading of the layout.
pub struct Header {
    pub kind: u8,
    pub flow: u16,
    pub rtt_100us: u16,
    pub seq: u32,
    pub ts_ns: u64,
    /// The frame's length.
    pub size: usize,
    pub src_ip: u32,
    pub dst_ip: u32,
}

impl Header {
    /// The header of `b`, or why it is not one of ours (the `DatagramError`'s message).
    pub fn read(b: &[u8]) -> Result<Header, &'static str> {
        if b.len() < MIN_FRAME_BYTES || b[12..14] != [0x08, 0x00] || b[ETH + 9] != 17 {
            return Err("not an IPv4/UDP frame");
        }
        if be(b, OFFSET, 2) != u64::from(MAGIC) || b[OFFSET + 2] != VERSION {
            return Err("no hbh datagram header");
        }
        Ok(Header {
            kind: b[OFFSET + 3],
            flow: be(b, OFFSET + 4, 2) as u16,
            rtt_100us: be(b, OFFSET + 6, 2) as u16,
            seq: be(b, SEQ_AT, 4) as u32,
            ts_ns: be(b, TS_AT, 8),
            size: b.len(),
            src_ip: be(b, ETH + 12, 4) as u32,
            dst_ip: be(b, ETH + 16, 4) as u32,
        })
    }
}

/// Writes the header into `buf` at `OFFSET` (a frame template's buffer): `rtt_100us` saturates at
/// its 16 bits (a negative one is refused), `seq` and `ts_ns` wrap at theirs, as the sender's fields do.
#[pyfunction]
pub fn write_datagram_header(
    buf: &Bound<'_, PyByteArray>,
    kind: u8,
    flow: u16,
    rtt_100us: i64,
    seq: i64,
    ts_ns: i128,
) -> PyResult<()> {
    // SAFETY: no Python code runs while the slice is alive (the GIL is held, nothing is called).
    let b = unsafe { buf.as_bytes_mut() };
    if b.len() < MIN_FRAME_BYTES {
        return Err(PyValueError::new_err(format!(
            "a {}-byte buffer has no room for the datagram header (at least {MIN_FRAME_BYTES})",
            b.len()
        )));
    }
    let h = &mut b[OFFSET..MIN_FRAME_BYTES];
    h[0..2].copy_from_slice(&MAGIC.to_be_bytes());
    h[2] = VERSION;
    h[3] = kind;
    h[4..6].copy_from_slice(&flow.to_be_bytes());
    let rtt = u16::try_from(rtt_100us.min(0xFFFF)).map_err(|_| {
        PyValueError::new_err(format!("rtt {rtt_100us} (units of 100 µs) is negative"))
    })?;
    h[6..8].copy_from_slice(&rtt.to_be_bytes());
    h[8..12].copy_from_slice(&(seq as u32).to_be_bytes());
    h[12..20].copy_from_slice(&(ts_ns as u64).to_be_bytes());
    Ok(())
}
