//! Read answers of P4Runtime table entries, written as wire bytes (issue 49, item 7).
//!
//! Why: a Read of a whole table spent nearly all its time in `wire_encode.table_entity`, the
//! Python writer of one `Entity{table_entry}`: about 15 µs an entry, 15 ms for 1,000 entries,
//! on the switch loop. This writes the same bytes - the fields in the order protobuf serialises
//! them, zero scalars and empty strings left out, values as their shortest big-endian string -
//! from the state's own entry objects (`p4switch/state/tables.py`). An entry it does not know how
//! to write (an indirect action, a value wider than 128 bits, an object of another type) comes
//! back as None, and the caller writes that one in Python (`p4switch/p4runtime/reads.py`).
//! tests/p4runtime/test_wire_encode.py holds its bytes equal to protobuf's.

use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

/// P4Info's MatchType numbers (p4info.proto): the kinds of a table's fields.
const EXACT: u8 = 2;
const LPM: u8 = 3;
const TERNARY: u8 = 4;
const RANGE: u8 = 5;
const OPTIONAL: u8 = 6;

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n > 0x7F {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A varint field, left out when zero (proto3).
fn uint_field(out: &mut Vec<u8>, tag: u8, n: u64) {
    if n != 0 {
        out.push(tag);
        varint(out, n);
    }
}

/// A length-delimited field holding `body`.
fn len_field(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// A bytestring field holding the shortest big-endian string of `v` (0 is one byte).
fn value_field(out: &mut Vec<u8>, tag: u8, v: u128) {
    let bytes = v.to_be_bytes();
    let skip = (v.leading_zeros() / 8).min(15) as usize;
    len_field(out, tag, &bytes[skip..]);
}

/// An int up to 128 bits wide (None: wider, negative or not an int). Why u64 first: the stable
/// ABI's u128 conversion calls back into Python, a u64 one does not, and nearly every value fits.
fn uint(v: &Bound<'_, PyAny>) -> Option<u128> {
    match v.extract::<u64>() {
        Ok(n) => Some(n as u128),
        Err(_) => v.extract::<u128>().ok(),
    }
}

/// One table's fields (id, kind) and, by action id, its parameters' ids in order.
#[pyclass(module = "hbh_engine")]
pub struct TableEntityWriter {
    table_id: u64,
    fields: Vec<(u64, u8)>,
    params: HashMap<u64, Vec<u64>>,
    /// the state's match classes (Exact, Lpm, Ternary, Range, OptionalMatch) and ActionCall
    classes: Vec<Py<PyAny>>,
}

impl TableEntityWriter {
    fn class_of(&self, kind: u8) -> Option<&Py<PyAny>> {
        let i = match kind {
            EXACT => 0,
            LPM => 1,
            TERNARY => 2,
            RANGE => 3,
            OPTIONAL => 4,
            _ => return None,
        };
        self.classes.get(i)
    }

    /// `Entity{table_entry}` of one entry, or None when it is not one this writes.
    fn entity(&self, py: Python<'_>, e: &Bound<'_, PyAny>, buf: &mut Vec<u8>) -> PyResult<bool> {
        let Some(parts) = self.parts(py, e)? else {
            return Ok(false);
        };
        write_entity(buf, &parts.borrowed());
        Ok(true)
    }

    /// What `Entity{table_entry}` of one entry holds, or None when it is not one this writes.
    pub(crate) fn parts(
        &self,
        py: Python<'_>,
        e: &Bound<'_, PyAny>,
    ) -> PyResult<Option<OwnedParts>> {
        let matches = e.getattr(intern!(py, "match"))?;
        let matches = matches.downcast::<PyTuple>()?;
        if matches.len() != self.fields.len() {
            return Ok(None);
        }
        let mut parts: Vec<FieldParts> = Vec::with_capacity(self.fields.len());
        for (m, &(fid, kind)) in matches.iter().zip(&self.fields) {
            if m.is_none() {
                continue;
            }
            match self.class_of(kind) {
                Some(cls) if m.get_type().is(cls.bind(py)) => {}
                _ => return Ok(None),
            }
            let u = |name: &Bound<'_, pyo3::types::PyString>| -> PyResult<Option<u128>> {
                Ok(uint(&m.getattr(name)?))
            };
            let (a, b) = match kind {
                EXACT | OPTIONAL => (u(intern!(py, "value"))?, Some(0)),
                LPM => (u(intern!(py, "value"))?, u(intern!(py, "prefix_len"))?),
                TERNARY => (u(intern!(py, "value"))?, u(intern!(py, "mask"))?),
                _ => (u(intern!(py, "low"))?, u(intern!(py, "high"))?),
            };
            let (Some(a), Some(b)) = (a, b) else {
                return Ok(None);
            };
            parts.push((fid, kind, a, b));
        }
        let action = e.getattr(intern!(py, "action"))?;
        let mut values: Vec<(u64, u128)> = Vec::new();
        let mut aid = None;
        if !action.is_none() {
            if !action.get_type().is(self.classes[5].bind(py)) {
                return Ok(None);
            }
            let id: u64 = action.getattr(intern!(py, "action_id"))?.extract()?;
            let params = action.getattr(intern!(py, "params"))?;
            let params = params.downcast::<PyTuple>()?;
            let Some(ids) = self.params.get(&id) else {
                return Ok(None);
            };
            for (pid, v) in ids.iter().zip(params.iter()) {
                let Some(v) = uint(&v) else {
                    return Ok(None);
                };
                values.push((*pid, v));
            }
            aid = Some(id);
        }
        let flag = |name| -> PyResult<bool> { e.getattr(name)?.is_truthy() };
        let num = |name| -> PyResult<u64> { e.getattr(name)?.extract::<u64>() };
        let md = e.getattr(intern!(py, "metadata"))?;
        Ok(Some(OwnedParts {
            table_id: self.table_id,
            matches: parts,
            action: aid.map(|id| (id, values)),
            priority: num(intern!(py, "priority"))?,
            controller_metadata: num(intern!(py, "controller_metadata"))?,
            is_default: flag(intern!(py, "is_default"))?,
            idle_timeout_ns: num(intern!(py, "idle_timeout_ns"))?,
            metadata: md.downcast::<PyBytes>()?.as_bytes().to_vec(),
            is_const: flag(intern!(py, "is_const"))?,
        }))
    }
}

/// [`EntityParts`] holding its own match fields, parameters and metadata.
pub(crate) struct OwnedParts {
    pub table_id: u64,
    pub matches: Vec<FieldParts>,
    pub action: Option<(u64, Vec<(u64, u128)>)>,
    pub priority: u64,
    pub controller_metadata: u64,
    pub is_default: bool,
    pub idle_timeout_ns: u64,
    pub metadata: Vec<u8>,
    pub is_const: bool,
}

impl OwnedParts {
    pub(crate) fn borrowed(&self) -> EntityParts<'_> {
        EntityParts {
            table_id: self.table_id,
            matches: &self.matches,
            action: self.action.as_ref().map(|(id, v)| (*id, v.as_slice())),
            priority: self.priority,
            controller_metadata: self.controller_metadata,
            is_default: self.is_default,
            idle_timeout_ns: self.idle_timeout_ns,
            metadata: &self.metadata,
            is_const: self.is_const,
        }
    }
}

/// One match field to write: (field id, kind, a, b) with (a, b) exact and optional (value, 0),
/// LPM (value, prefix length), ternary (value, mask), range (low, high).
pub(crate) type FieldParts = (u64, u8, u128, u128);

/// What `Entity{table_entry}` holds: the given match fields in P4Info order (don't-cares left
/// out), the direct action (id, its parameters (id, value) in order) and the entry's scalars.
pub(crate) struct EntityParts<'a> {
    pub table_id: u64,
    pub matches: &'a [FieldParts],
    pub action: Option<(u64, &'a [(u64, u128)])>,
    pub priority: u64,
    pub controller_metadata: u64,
    pub is_default: bool,
    pub idle_timeout_ns: u64,
    pub metadata: &'a [u8],
    pub is_const: bool,
}

/// `Entity{table_entry}` of `p` appended to `buf`, as protobuf serialises it: the one writer of
/// both `TableEntityWriter` (an entry object of the state) and the keyed Read of the engine's
/// entry store (`TableWritePlan.read_keyed`, an update the state has not taken in yet).
pub(crate) fn write_entity(buf: &mut Vec<u8>, p: &EntityParts<'_>) {
    let mut te = Vec::with_capacity(96);
    uint_field(&mut te, 0x08, p.table_id);
    let mut fm = Vec::with_capacity(32);
    let mut body = Vec::with_capacity(24);
    for &(fid, kind, a, b) in p.matches {
        body.clear();
        let tag = match kind {
            EXACT | OPTIONAL => {
                value_field(&mut body, 0x0A, a);
                if kind == EXACT {
                    0x12
                } else {
                    0x3A
                }
            }
            LPM => {
                value_field(&mut body, 0x0A, a);
                uint_field(&mut body, 0x10, b as u64);
                0x22
            }
            TERNARY => {
                value_field(&mut body, 0x0A, a);
                value_field(&mut body, 0x12, b);
                0x1A
            }
            _ => {
                value_field(&mut body, 0x0A, a);
                value_field(&mut body, 0x12, b);
                0x32
            }
        };
        fm.clear();
        uint_field(&mut fm, 0x08, fid);
        len_field(&mut fm, tag, &body);
        len_field(&mut te, 0x12, &fm);
    }
    if let Some((aid, params)) = p.action {
        let mut act = Vec::with_capacity(48);
        uint_field(&mut act, 0x08, aid);
        let mut param = Vec::with_capacity(16);
        for &(pid, v) in params {
            param.clear();
            uint_field(&mut param, 0x10, pid);
            value_field(&mut param, 0x1A, v);
            len_field(&mut act, 0x22, &param);
        }
        let mut table_action = Vec::with_capacity(act.len() + 4);
        len_field(&mut table_action, 0x0A, &act);
        len_field(&mut te, 0x1A, &table_action); // TableEntry.action = TableAction{action}
    }
    uint_field(&mut te, 0x20, p.priority);
    uint_field(&mut te, 0x28, p.controller_metadata);
    uint_field(&mut te, 0x40, p.is_default as u64);
    uint_field(&mut te, 0x48, p.idle_timeout_ns);
    if !p.metadata.is_empty() {
        len_field(&mut te, 0x5A, p.metadata);
    }
    uint_field(&mut te, 0x68, p.is_const as u64);
    len_field(buf, 0x12, &te); // Entity.table_entry
}

#[pymethods]
impl TableEntityWriter {
    /// `TableEntityWriter(table_id, fields, params, classes)`: `fields` the table's (id, kind) in
    /// P4Info order, `params` {action id: [parameter id, ...]}, `classes` (Exact, Lpm, Ternary,
    /// Range, OptionalMatch, ActionCall).
    #[new]
    fn new(
        table_id: u64,
        fields: Vec<(u64, u8)>,
        params: HashMap<u64, Vec<u64>>,
        classes: Vec<Py<PyAny>>,
    ) -> PyResult<Self> {
        if classes.len() != 6 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "classes: expected (Exact, Lpm, Ternary, Range, OptionalMatch, ActionCall)",
            ));
        }
        Ok(TableEntityWriter {
            table_id,
            fields,
            params,
            classes,
        })
    }

    /// The classes it holds, shown to the collector (visit only: they are the state module's
    /// classes, which outlive any writer, so there is nothing here to clear).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for c in &self.classes {
            visit.call(c)?;
        }
        Ok(())
    }

    /// The `Entity{table_entry}` bytes of each entry, None for one this does not write.
    fn entities<'py>(
        &self,
        py: Python<'py>,
        entries: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let mut buf = Vec::with_capacity(128);
        for e in entries.try_iter()? {
            let e = e?;
            buf.clear();
            // an entry this cannot read (a missing attribute, a value of another type) is the
            // caller's to write, as one it does not know
            if self.entity(py, &e, &mut buf).unwrap_or(false) {
                out.append(PyBytes::new(py, &buf))?;
            } else {
                out.append(py.None())?;
            }
        }
        Ok(out)
    }
}
