//! Decoding a P4Runtime WriteRequest's plain table-entry updates for the one-pass write path
//! (p4switch/p4runtime/fast_writes.py), straight from the request's wire bytes: the one decoder
//! of that path (the general path, p4runtime/translate.py, decodes everything else and gives
//! the errors).
//!
//! Why: with the one-pass path the state's own work per update is small, and what remained of
//! it was mostly reading the protobuf message field by field from Python. This reads the same
//! fields in one pass over the bytes and hands Python, per update, the values it indexes an
//! entry with: exact, LPM, ternary, range and optional matches, the priority, a direct action
//! and its parameters. It decides nothing: whatever it is not sure of - a field it does not
//! expect, a field given twice (protobuf would merge or override it), a value wider than 64
//! bits, an id the plan does not know, a match the general path would refuse - makes it answer
//! None, and the general path takes the whole request. The whole request is checked at once,
//! without a Python object; the updates become Python tuples one at a time
//! (`DecodedWrite.update`), so a sliced 10,000-update Write does not build them all in its first
//! slice. tests/p4runtime/test_fast_writes.py checks it against the general path.

use std::collections::HashMap;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

const EXACT: u32 = 2;
const LPM: u32 = 3;
const TERNARY: u32 = 4;
const RANGE: u32 = 5;
const OPTIONAL: u32 = 6;
/// P4Runtime's largest priority (TableEntry.priority is an int32)
const MAX_PRIORITY: u64 = (1 << 31) - 1;

/// An action's parameters: id -> (index, width).
type Params = HashMap<u32, (usize, u32)>;

/// Field kinds and widths of one table, and its actions' parameter ids and widths.
struct TablePlan {
    /// field id -> (index, kind, width)
    fields: HashMap<u32, (usize, u32, u32)>,
    nfields: usize,
    /// a ternary, range or optional field: entries have a priority (1..), their rank
    needs_priority: bool,
    /// action id -> its parameters and their count
    actions: HashMap<u32, (Params, usize)>,
}

/// `TableWritePlan({table_id: ([(field_id, kind, width)], {action_id: [(param_id, width)]})})`:
/// `decode(request_bytes)` gives the updates (a `DecodedWrite`), or None when the general path
/// must take the request.
#[pyclass(module = "hbh_engine")]
pub struct TableWritePlan {
    tables: HashMap<u32, TablePlan>,
}

type FieldSpec = Vec<(u32, u32, u32)>;
type ActionSpec = HashMap<u32, Vec<(u32, u32)>>;

/// A protobuf reader over a message's bytes: (field number, wire type, value).
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            if shift == 63 && b > 1 {
                return None;
            }
            out |= ((b & 0x7F) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(out);
            }
        }
        None
    }

    /// The next field, None at the end; Err(()) on bytes that are no protobuf.
    #[allow(clippy::type_complexity)]
    fn field(&mut self) -> Result<Option<(u32, Value<'a>)>, ()> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint().ok_or(())?;
        let number = (key >> 3) as u32;
        if number == 0 {
            return Err(());
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint().ok_or(())?),
            1 => {
                self.skip(8)?;
                Value::Other
            }
            2 => {
                let n = self.varint().ok_or(())? as usize;
                let end = self.pos.checked_add(n).ok_or(())?;
                if end > self.buf.len() {
                    return Err(());
                }
                let b = &self.buf[self.pos..end];
                self.pos = end;
                Value::Bytes(b)
            }
            5 => {
                self.skip(4)?;
                Value::Other
            }
            _ => return Err(()), // groups: never in P4Runtime
        };
        Ok(Some((number, value)))
    }

    fn skip(&mut self, n: usize) -> Result<(), ()> {
        if self.pos + n > self.buf.len() {
            return Err(());
        }
        self.pos += n;
        Ok(())
    }
}

/// A bytestring's value when it fits `width` (<= 64) bits; None otherwise (or empty).
fn unsigned(b: &[u8], width: u32) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let start = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    let digits = &b[start..];
    if digits.len() > 8 {
        return None;
    }
    let v = digits.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64);
    if width < 64 && v >> width != 0 {
        return None;
    }
    Some(v)
}

fn full_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Set `slot` once: a second occurrence of a singular field is left to protobuf's own rules.
fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

/// One decoded update: type, table, per field None or (kind, a, b) - exact and optional
/// (value, 0), LPM (value, prefix length), ternary (value, mask), range (low, high) -, masks,
/// masked values, ranges (field index, low, high), rank, priority, action id and parameters,
/// controller metadata, metadata.
struct Decoded {
    utype: u64,
    table_id: u32,
    fields: Vec<Option<(u32, u64, u64)>>,
    masks: Vec<u64>,
    masked: Vec<u64>,
    ranges: Vec<(usize, u64, u64)>,
    rank: u32,
    priority: u32,
    action: Option<(u32, Vec<u64>)>,
    controller_metadata: u64,
    metadata: Vec<u8>,
}

impl TableWritePlan {
    fn update(&self, msg: &[u8]) -> Option<Decoded> {
        let mut utype = None;
        let mut entity = None;
        let mut r = Reader::new(msg);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (1, Value::Varint(t)) => once(&mut utype, t)?,
                (2, Value::Bytes(b)) => once(&mut entity, b)?,
                _ => return None,
            }
        }
        let utype = utype.unwrap_or(0);
        if !(1..=3).contains(&utype) {
            return None;
        }
        let mut te = None;
        let mut r = Reader::new(entity?);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (2, Value::Bytes(b)) => once(&mut te, b)?,
                _ => return None,
            }
        }
        self.table_entry(utype, te?)
    }

    fn table_entry(&self, utype: u64, msg: &[u8]) -> Option<Decoded> {
        let (mut table_id, mut action, mut cm, mut md, mut prio) = (None, None, None, None, None);
        let mut matches: Vec<&[u8]> = Vec::new();
        let mut r = Reader::new(msg);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (1, Value::Varint(x)) => once(&mut table_id, x)?,
                (2, Value::Bytes(b)) => matches.push(b),
                (3, Value::Bytes(b)) => once(&mut action, b)?,
                (5, Value::Varint(x)) => once(&mut cm, x)?,
                (11, Value::Bytes(b)) => once(&mut md, b)?,
                (4, Value::Varint(x)) => once(&mut prio, x)?,
                // is_default_action, idle_timeout_ns, is_const: only their zero
                (8 | 9 | 13, Value::Varint(0)) => {}
                _ => return None,
            }
        }
        let table_id = u32::try_from(table_id?).ok()?;
        let plan = self.tables.get(&table_id)?;
        let priority = prio.unwrap_or(0);
        if plan.needs_priority != (priority != 0) || priority > MAX_PRIORITY {
            return None;
        }
        let n = plan.nfields;
        let mut fields: Vec<Option<(u32, u64, u64)>> = vec![None; n];
        let mut masks = vec![0u64; n];
        let mut masked = vec![0u64; n];
        let mut ranges = Vec::new();
        let mut plens = 0u32;
        for m in matches {
            let (mut fid, mut kind_msg) = (None, None);
            let mut r = Reader::new(m);
            while let Some((k, v)) = r.field().ok()? {
                match (k, v) {
                    (1, Value::Varint(x)) => once(&mut fid, x)?,
                    (2, Value::Bytes(b)) => once(&mut kind_msg, (EXACT, b))?,
                    (3, Value::Bytes(b)) => once(&mut kind_msg, (TERNARY, b))?,
                    (4, Value::Bytes(b)) => once(&mut kind_msg, (LPM, b))?,
                    (6, Value::Bytes(b)) => once(&mut kind_msg, (RANGE, b))?,
                    (7, Value::Bytes(b)) => once(&mut kind_msg, (OPTIONAL, b))?,
                    _ => return None,
                }
            }
            let fid = u32::try_from(fid.unwrap_or(0)).ok()?;
            let &(i, kind, width) = plan.fields.get(&fid)?;
            let (given, body) = kind_msg?;
            if fields[i].is_some() || given != kind {
                return None;
            }
            // the message's two fields: bytes 1 and (bytes or, for LPM, varint) 2
            let (mut one, mut two_b, mut two_v) = (None, None, None);
            let mut r = Reader::new(body);
            while let Some((k, v)) = r.field().ok()? {
                match (k, v) {
                    (1, Value::Bytes(x)) => once(&mut one, x)?,
                    (2, Value::Bytes(x)) if kind == TERNARY || kind == RANGE => {
                        once(&mut two_b, x)?
                    }
                    (2, Value::Varint(x)) if kind == LPM => once(&mut two_v, x)?,
                    _ => return None,
                }
            }
            let full = full_mask(width);
            let v = unsigned(one?, width)?;
            match kind {
                EXACT | OPTIONAL => {
                    fields[i] = Some((kind, v, 0));
                    masks[i] = full;
                    masked[i] = v;
                }
                LPM => {
                    let plen = two_v.unwrap_or(0);
                    if plen == 0 || plen > width as u64 {
                        return None;
                    }
                    let plen = plen as u32;
                    let low = if plen >= 64 { 0 } else { full >> plen };
                    if v & low != 0 {
                        return None;
                    }
                    fields[i] = Some((LPM, v, plen as u64));
                    masks[i] = full ^ low;
                    masked[i] = v;
                    plens += plen;
                }
                TERNARY => {
                    let mask = unsigned(two_b?, width)?;
                    if mask == 0 || v & !mask != 0 {
                        return None;
                    }
                    fields[i] = Some((TERNARY, v, mask));
                    masks[i] = mask;
                    masked[i] = v;
                }
                _ => {
                    let high = unsigned(two_b?, width)?;
                    if v > high || (v == 0 && high == full) {
                        return None;
                    }
                    fields[i] = Some((RANGE, v, high));
                    ranges.push((i, v, high));
                }
            }
        }
        for &(i, kind, _) in plan.fields.values() {
            if kind == EXACT && fields[i].is_none() {
                return None;
            }
        }
        ranges.sort_unstable_by_key(|r| r.0);
        let action = match action {
            None => None,
            Some(b) => Some(self.action(plan, b)?),
        };
        let priority = priority as u32;
        Some(Decoded {
            utype,
            table_id,
            fields,
            masks,
            masked,
            ranges,
            rank: if plan.needs_priority { priority } else { plens },
            priority,
            action,
            controller_metadata: cm.unwrap_or(0),
            metadata: md.unwrap_or(&[]).to_vec(),
        })
    }

    fn action(&self, plan: &TablePlan, msg: &[u8]) -> Option<(u32, Vec<u64>)> {
        let mut inner = None;
        let mut r = Reader::new(msg);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (1, Value::Bytes(b)) => once(&mut inner, b)?,
                _ => return None,
            }
        }
        let (mut aid, mut params) = (None, Vec::new());
        let mut r = Reader::new(inner?);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (1, Value::Varint(x)) => once(&mut aid, x)?,
                (4, Value::Bytes(b)) => params.push(b),
                _ => return None,
            }
        }
        let aid = u32::try_from(aid.unwrap_or(0)).ok()?;
        let (by_id, count) = plan.actions.get(&aid)?;
        let mut values: Vec<Option<u64>> = vec![None; *count];
        for p in params {
            let (mut pid, mut value) = (None, None);
            let mut r = Reader::new(p);
            while let Some((n, v)) = r.field().ok()? {
                match (n, v) {
                    (2, Value::Varint(x)) => once(&mut pid, x)?,
                    (3, Value::Bytes(b)) => once(&mut value, b)?,
                    _ => return None,
                }
            }
            let pid = u32::try_from(pid.unwrap_or(0)).ok()?;
            let &(i, width) = by_id.get(&pid)?;
            if values[i].is_some() {
                return None;
            }
            values[i] = Some(unsigned(value?, width)?);
        }
        let values: Option<Vec<u64>> = values.into_iter().collect();
        Some((aid, values?))
    }
}

#[pymethods]
impl TableWritePlan {
    #[new]
    fn new(tables: HashMap<u32, (FieldSpec, ActionSpec)>) -> PyResult<Self> {
        let mut out = HashMap::new();
        for (tid, (fields, actions)) in tables {
            if fields.iter().any(|&(_, kind, width)| {
                !(EXACT..=OPTIONAL).contains(&kind) || width == 0 || width > 64
            }) || actions.values().flatten().any(|&(_, w)| w > 64)
            {
                continue; // Python decodes this table's entries
            }
            let nfields = fields.len();
            let needs_priority = fields
                .iter()
                .any(|&(_, kind, _)| matches!(kind, TERNARY | RANGE | OPTIONAL));
            let fields = fields
                .into_iter()
                .enumerate()
                .map(|(i, (id, kind, width))| (id, (i, kind, width)))
                .collect();
            let actions = actions
                .into_iter()
                .map(|(aid, ps)| {
                    let n = ps.len();
                    let by_id = ps
                        .into_iter()
                        .enumerate()
                        .map(|(i, (pid, w))| (pid, (i, w)))
                        .collect();
                    (aid, (by_id, n))
                })
                .collect();
            out.insert(
                tid,
                TablePlan {
                    fields,
                    nfields,
                    needs_priority,
                    actions,
                },
            );
        }
        Ok(TableWritePlan { tables: out })
    }

    /// The updates of a WriteRequest's bytes, all checked (`DecodedWrite`); None when any update
    /// is one the general path must take.
    fn decode(&self, py: Python<'_>, request: &[u8]) -> Option<DecodedWrite> {
        py.allow_threads(|| self.decode_all(request))
    }
}

impl TableWritePlan {
    fn decode_all(&self, request: &[u8]) -> Option<DecodedWrite> {
        let mut updates = Vec::new();
        let mut r = Reader::new(request);
        loop {
            match r.field() {
                Ok(Some((4, Value::Bytes(b)))) => updates.push(self.update(b)?),
                Ok(Some((1 | 2 | 3 | 5 | 6, _))) => {}
                Ok(Some(_)) | Err(()) => return None,
                Ok(None) => break,
            }
        }
        Some(DecodedWrite { updates })
    }
}

/// A Write's plain updates, decoded: `len(d)`, and `d.update(i)`, the i-th as `(type, table_id,
/// fields, masks, masked, ranges, rank, priority, action, controller_metadata, metadata)` with
/// `fields` a tuple of None or (kind, a, b), `ranges` of (field index, low, high) and `action`
/// None or (action id, params).
#[pyclass(module = "hbh_engine")]
pub struct DecodedWrite {
    updates: Vec<Decoded>,
}

#[pymethods]
impl DecodedWrite {
    fn __len__(&self) -> usize {
        self.updates.len()
    }

    fn update<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
        let d = self
            .updates
            .get(i)
            .ok_or_else(|| PyIndexError::new_err("update index out of range"))?;
        let fields = PyTuple::new(
            py,
            d.fields
                .iter()
                .map(|f| -> PyResult<PyObject> {
                    Ok(match f {
                        None => py.None(),
                        Some((k, a, b)) => (*k, *a, *b).into_pyobject(py)?.into_any().unbind(),
                    })
                })
                .collect::<PyResult<Vec<_>>>()?,
        )?;
        let action: PyObject = match &d.action {
            None => py.None(),
            Some((aid, params)) => (*aid, PyTuple::new(py, params)?)
                .into_pyobject(py)?
                .into_any()
                .unbind(),
        };
        (
            d.utype,
            d.table_id,
            fields,
            PyTuple::new(py, &d.masks)?,
            PyTuple::new(py, &d.masked)?,
            PyTuple::new(py, &d.ranges)?,
            d.rank,
            d.priority,
            action,
            d.controller_metadata,
            PyBytes::new(py, &d.metadata),
        )
            .into_pyobject(py)
    }
}
