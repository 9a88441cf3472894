//! Decoding a P4Runtime WriteRequest's plain table-entry updates for the one-pass write path
//! (p4switch/p4runtime/fast_writes.py), straight from the request's wire bytes.
//!
//! Why: with the one-pass path the state's own work per update is small, and what remained of
//! it was mostly reading the protobuf message field by field from Python. This reads the same
//! fields in one pass over the bytes and hands Python, per update, the values it indexes an
//! entry with. It decides nothing: whatever it is not sure of - a field it does not expect, a
//! field given twice (protobuf would merge or override it), a value wider than 64 bits, an id
//! the plan does not know - makes it answer None, and Python decodes the request itself.
//! tests/p4runtime/test_fast_writes.py checks both decoders give the same state.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

const EXACT: u32 = 2;
const LPM: u32 = 3;

/// An action's parameters: id -> (index, width).
type Params = HashMap<u32, (usize, u32)>;

/// Field kinds and widths of one table, and its actions' parameter ids and widths.
struct TablePlan {
    /// field id -> (index, kind, width)
    fields: HashMap<u32, (usize, u32, u32)>,
    nfields: usize,
    /// action id -> its parameters and their count
    actions: HashMap<u32, (Params, usize)>,
}

/// `TableWritePlan({table_id: ([(field_id, kind, width)], {action_id: [(param_id, width)]})})`:
/// `decode(request_bytes)` gives one tuple per update, or None when Python must decode.
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

/// One decoded update: type, table, per field None or (kind, value, prefix length), masks,
/// masked values, rank, action id, parameters, controller metadata, metadata.
struct Decoded<'a> {
    utype: u64,
    table_id: u32,
    fields: Vec<Option<(u32, u64, u32)>>,
    masks: Vec<u64>,
    masked: Vec<u64>,
    rank: u32,
    action: Option<(u32, Vec<u64>)>,
    controller_metadata: u64,
    metadata: &'a [u8],
}

impl TableWritePlan {
    fn update<'a>(&self, msg: &'a [u8]) -> Option<Decoded<'a>> {
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

    fn table_entry<'a>(&self, utype: u64, msg: &'a [u8]) -> Option<Decoded<'a>> {
        let (mut table_id, mut action, mut cm, mut md) = (None, None, None, None);
        let mut matches: Vec<&[u8]> = Vec::new();
        let mut r = Reader::new(msg);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (1, Value::Varint(x)) => once(&mut table_id, x)?,
                (2, Value::Bytes(b)) => matches.push(b),
                (3, Value::Bytes(b)) => once(&mut action, b)?,
                (5, Value::Varint(x)) => once(&mut cm, x)?,
                (11, Value::Bytes(b)) => once(&mut md, b)?,
                // priority, is_default_action, idle_timeout_ns, is_const: only their zero
                (4 | 8 | 9 | 13, Value::Varint(0)) => {}
                _ => return None,
            }
        }
        let table_id = u32::try_from(table_id?).ok()?;
        let plan = self.tables.get(&table_id)?;
        let n = plan.nfields;
        let mut fields: Vec<Option<(u32, u64, u32)>> = vec![None; n];
        let mut masks = vec![0u64; n];
        let mut masked = vec![0u64; n];
        let mut rank = 0u32;
        for m in matches {
            let (mut fid, mut exact, mut lpm) = (None, None, None);
            let mut r = Reader::new(m);
            while let Some((k, v)) = r.field().ok()? {
                match (k, v) {
                    (1, Value::Varint(x)) => once(&mut fid, x)?,
                    (2, Value::Bytes(b)) => once(&mut exact, b)?,
                    (4, Value::Bytes(b)) => once(&mut lpm, b)?,
                    _ => return None,
                }
            }
            let fid = u32::try_from(fid.unwrap_or(0)).ok()?;
            let &(i, kind, width) = plan.fields.get(&fid)?;
            if fields[i].is_some() {
                return None;
            }
            let full = full_mask(width);
            match (kind, exact, lpm) {
                (EXACT, Some(b), None) => {
                    let mut value = None;
                    let mut r = Reader::new(b);
                    while let Some((k, v)) = r.field().ok()? {
                        match (k, v) {
                            (1, Value::Bytes(x)) => once(&mut value, x)?,
                            _ => return None,
                        }
                    }
                    let v = unsigned(value?, width)?;
                    fields[i] = Some((EXACT, v, 0));
                    masks[i] = full;
                    masked[i] = v;
                }
                (LPM, None, Some(b)) => {
                    let (mut value, mut plen) = (None, None);
                    let mut r = Reader::new(b);
                    while let Some((k, v)) = r.field().ok()? {
                        match (k, v) {
                            (1, Value::Bytes(x)) => once(&mut value, x)?,
                            (2, Value::Varint(x)) => once(&mut plen, x)?,
                            _ => return None,
                        }
                    }
                    let plen = plen.unwrap_or(0);
                    if plen == 0 || plen > width as u64 {
                        return None;
                    }
                    let plen = plen as u32;
                    let v = unsigned(value?, width)?;
                    let low = if plen >= 64 { 0 } else { full >> plen };
                    if v & low != 0 {
                        return None;
                    }
                    fields[i] = Some((LPM, v, plen));
                    masks[i] = full ^ low;
                    masked[i] = v;
                    rank += plen;
                }
                _ => return None,
            }
        }
        for &(i, kind, _) in plan.fields.values() {
            if kind == EXACT && fields[i].is_none() {
                return None;
            }
        }
        let action = match action {
            None => None,
            Some(b) => Some(self.action(plan, b)?),
        };
        Some(Decoded {
            utype,
            table_id,
            fields,
            masks,
            masked,
            rank,
            action,
            controller_metadata: cm.unwrap_or(0),
            metadata: md.unwrap_or(&[]),
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
            if fields
                .iter()
                .any(|&(_, kind, width)| (kind != EXACT && kind != LPM) || width == 0 || width > 64)
                || actions.values().flatten().any(|&(_, w)| w > 64)
            {
                continue; // Python decodes this table's entries
            }
            let nfields = fields.len();
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
                    actions,
                },
            );
        }
        Ok(TableWritePlan { tables: out })
    }

    /// The updates of a WriteRequest's bytes, each `(type, table_id, fields, masks, masked,
    /// rank, action, controller_metadata, metadata)` with `fields` a tuple of None or (kind,
    /// value, prefix length) and `action` None or (action id, params); None when any update
    /// is one Python must decode.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        request: &[u8],
    ) -> PyResult<Option<Vec<Bound<'py, PyTuple>>>> {
        let mut updates = Vec::new();
        let mut r = Reader::new(request);
        loop {
            match r.field() {
                Ok(Some((4, Value::Bytes(b)))) => updates.push(b),
                Ok(Some((1 | 2 | 3 | 5 | 6, _))) => {}
                Ok(Some(_)) | Err(()) => return Ok(None),
                Ok(None) => break,
            }
        }
        let mut out = Vec::with_capacity(updates.len());
        for u in updates {
            let Some(d) = self.update(u) else {
                return Ok(None);
            };
            let fields = PyTuple::new(
                py,
                d.fields.iter().map(|f| -> PyObject {
                    match f {
                        None => py.None(),
                        Some((k, v, p)) => (*k, *v, *p)
                            .into_pyobject(py)
                            .map(|b| b.into_any().unbind())
                            .unwrap_or_else(|_| py.None()),
                    }
                }),
            )?;
            let action: PyObject = match d.action {
                None => py.None(),
                Some((aid, params)) => (aid, PyTuple::new(py, params)?)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind(),
            };
            let item = (
                d.utype,
                d.table_id,
                fields,
                PyTuple::new(py, d.masks)?,
                PyTuple::new(py, d.masked)?,
                d.rank,
                action,
                d.controller_metadata,
                PyBytes::new(py, d.metadata),
            )
                .into_pyobject(py)?;
            out.push(item);
        }
        Ok(Some(out))
    }
}
