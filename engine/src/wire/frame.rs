//! A packet's bytes on the engine's path: Python's `bytes`, or a buffer the engine owns.
//!
//! Why both: a frame that comes from Python (a test, a Python port, a netns socket whose frames
//! a capture wants) is already `bytes`, and copying it would cost what this type saves. A frame
//! the engine made (a host's sender, a switch's deparser) stays an engine buffer from hop to hop:
//! the link carries it, the next switch parses it, and its egress writes the deparsed headers
//! over the old ones in place when their length is the same. Per hop, only the headers are
//! touched; before, every hop copied the whole kilobyte into a new `bytes` object, and at
//! 1 Gb/s, with thousands of packets queued, those copies ran on cold memory.
//! Python sees `bytes` wherever it looks (`into_py`): hooks, captures, Python endpoints.

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use pyo3::{PyTraverseError, PyVisit};

use crate::prefetch;

pub enum Frame {
    Py(Py<PyBytes>),
    Owned(Vec<u8>),
}

impl Frame {
    /// `frame` as a Frame: `bytes` kept as they are, a `bytearray` copied once into an engine
    /// buffer (what an engine-made frame is: a test sends one so), anything else `bytes(frame)`.
    pub(crate) fn from_any(frame: &Bound<'_, PyAny>) -> PyResult<Frame> {
        let py = frame.py();
        if let Ok(b) = frame.downcast::<PyBytes>() {
            if b.is_exact_instance_of::<PyBytes>() {
                return Ok(Frame::Py(b.clone().unbind()));
            }
        }
        if let Ok(b) = frame.downcast::<PyByteArray>() {
            return Ok(Frame::Owned(b.to_vec()));
        }
        let b = py.get_type::<PyBytes>().call1((frame,))?;
        Ok(Frame::Py(b.downcast_into::<PyBytes>()?.unbind()))
    }

    pub(crate) fn bytes<'a>(&'a self, py: Python<'_>) -> &'a [u8] {
        match self {
            Frame::Py(b) => b.as_bytes(py),
            Frame::Owned(v) => v,
        }
    }

    /// The bytes as a `bytes` object (an owned buffer is copied once).
    pub(crate) fn into_py(self, py: Python<'_>) -> Py<PyBytes> {
        match self {
            Frame::Py(b) => b,
            Frame::Owned(v) => PyBytes::new(py, &v).unbind(),
        }
    }

    /// `bytes` kept in place (an owned buffer becomes `bytes`, once), for a Python hook that
    /// sees the frame and a path that goes on with it.
    pub(crate) fn as_py<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        if let Frame::Owned(v) = self {
            *self = Frame::Py(PyBytes::new(py, v).unbind());
        }
        match self {
            Frame::Py(b) => b.bind(py).clone(),
            Frame::Owned(_) => unreachable!("made `bytes` above"),
        }
    }

    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Frame {
        match self {
            Frame::Py(b) => Frame::Py(b.clone_ref(py)),
            Frame::Owned(v) => Frame::Owned(v.clone()),
        }
    }

    /// `head` followed by this frame's bytes from `off` on, cut to `len` bytes: a deparsed
    /// frame. An owned buffer whose old headers are as long as `head` is rewritten in place.
    pub(crate) fn deparsed(self, py: Python<'_>, head: &[u8], off: usize, len: usize) -> Vec<u8> {
        match self {
            Frame::Owned(mut v) if off == head.len() && len <= v.len() => {
                v[..off].copy_from_slice(head);
                v.truncate(len);
                v
            }
            other => {
                let data = other.bytes(py);
                let payload = &data[off..];
                let h = head.len().min(len);
                let mut v = Vec::with_capacity(len);
                v.extend_from_slice(&head[..h]);
                v.extend_from_slice(&payload[..len - h]);
                v
            }
        }
    }

    /// Ask for the first lines of an engine buffer (what a parser reads).
    pub(crate) fn prefetch(&self) {
        if let Frame::Owned(v) = self {
            prefetch::lines(v.as_ptr(), v.len().min(128));
        }
    }

    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Frame::Py(b) => visit.call(b),
            Frame::Owned(_) => Ok(()),
        }
    }
}
