//! A controller header's split: the packet_in metadata read off the front of a frame the
//! pipeline sent to the CPU port (p4switch/device.py `split_controller_header`).
//!
//! Why here: a report reaches its switch's agent as a packet-in every interval on every link, so
//! at the line's x50 rates about one packet-hop in four is one; reading its header field by field
//! in Python was a sizeable share of the packet-in's path. Same arithmetic: the first
//! `ceil(bits / 8)` bytes read as one big-endian integer, its low `bits` bits the header, each
//! field `(value >> shift) & mask`, MSB first; here each field's bytes alone are read.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use pyo3::{PyTraverseError, PyVisit};

/// The bits `[lo, lo + width)` of `data` read as one big-endian integer, bit 0 its last bit's
/// lowest (`width` <= 64).
fn bits_at(data: &[u8], lo: usize, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let n = data.len();
    let (first, last) = (lo / 8, (lo + width as usize - 1) / 8);
    let acc = (first..=last)
        .rev()
        .fold(0u128, |a, k| (a << 8) | u128::from(data[n - 1 - k]));
    ((acc >> (lo % 8)) as u64) & (u64::MAX >> (64 - width))
}

/// The split of one controller header whose fields are at most 64 bits wide each
/// (`HeaderSplit(bits, layout)`, the layout `((name, shift, mask), ...)` of
/// `ControllerHeader.layout`).
#[pyclass(module = "hbh_engine", frozen)]
pub struct HeaderSplit {
    nbytes: usize,
    /// Per field: its name, its lowest bit counted from the end of the header's bytes, its width.
    fields: Vec<(Py<PyString>, usize, u32)>,
    /// `{name: value}` for every field, in the fields' order, the values of the last split
    /// (zeros before the first): each split sets the fields whose value changed and hands out a
    /// copy. Why: a dict filled from empty was resized twice and hashed each name into a new
    /// table, half of a packet-in's split; a copy has every key in place. And of a report's
    /// eleven fields most repeat from one packet-in to the next (the law's parameters, the port,
    /// the padding): setting all of them was two thirds of the split's cost. The template is
    /// never handed out, so what a sink does with its dict does not reach the next one.
    template: Py<PyDict>,
    /// The values `template` holds, per field.
    last: Mutex<Vec<u64>>,
}

impl HeaderSplit {
    /// `split` of a frame the engine holds (the walk's packet-in route, v1walk.rs).
    pub(crate) fn split_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
    ) -> PyResult<Option<(Bound<'py, PyDict>, Bound<'py, PyBytes>)>> {
        if data.len() < self.nbytes {
            return Ok(None);
        }
        let head = &data[..self.nbytes];
        let template = self.template.bind(py);
        {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            for ((name, lo, width), kept) in self.fields.iter().zip(last.iter_mut()) {
                let v = bits_at(head, *lo, *width);
                if v != *kept {
                    template.set_item(name.bind(py), v)?;
                    *kept = v;
                }
            }
        }
        Ok(Some((
            template.copy()?,
            PyBytes::new(py, &data[self.nbytes..]),
        )))
    }
}

#[pymethods]
impl HeaderSplit {
    #[new]
    fn new(
        py: Python<'_>,
        bits: usize,
        layout: Vec<(Bound<'_, PyString>, usize, u128)>,
    ) -> PyResult<Self> {
        let nbytes = bits.div_ceil(8);
        let drop = nbytes * 8 - bits;
        let mut fields = Vec::with_capacity(layout.len());
        for (name, shift, mask) in layout {
            let width = 128 - mask.leading_zeros();
            if width > 64 || mask.count_ones() != width || shift + width as usize > bits {
                return Err(PyValueError::new_err(format!(
                    "HeaderSplit: field {name} (shift {shift}, mask {mask:#x}) is not a field of at \
                     most 64 bits inside a {bits}-bit header"
                )));
            }
            fields.push((name.unbind(), drop + shift, width));
        }
        let template = PyDict::new(py);
        for (name, _, _) in &fields {
            template.set_item(name.bind(py), 0)?;
        }
        Ok(HeaderSplit {
            nbytes,
            last: Mutex::new(vec![0; fields.len()]),
            fields,
            template: template.unbind(),
        })
    }

    /// `({name: value}, payload)` of `frame`, or None if it is shorter than the header.
    fn split<'py>(
        &self,
        frame: &Bound<'py, PyBytes>,
    ) -> PyResult<Option<(Bound<'py, PyDict>, Bound<'py, PyBytes>)>> {
        self.split_bytes(frame.py(), frame.as_bytes())
    }

    fn __repr__(&self) -> String {
        let names: Vec<String> = self.fields.iter().map(|(n, _, _)| n.to_string()).collect();
        format!("<HeaderSplit {} bytes: {}>", self.nbytes, names.join(", "))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.fields.iter().try_for_each(|(n, _, _)| visit.call(n))?;
        visit.call(&self.template)
    }
}
