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
//!
//! The stores also answer a Read of one entry by its whole key (`read_keyed`): the same decoder
//! gives the key, and the entry is written from the update that left it (one the table's Python
//! state has not taken in) or from the entry object that state holds, by the Read's one writer
//! (`p4rtread::write_entity`). Anything else, and every error, is the Python path's
//! (tests/p4runtime/test_keyed_reads.py holds the bytes equal).

use std::collections::HashMap;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyWeakrefMethods, PyWeakrefReference};

use crate::p4rtread::{write_entity, EntityParts, FieldParts, TableEntityWriter};
use crate::p4vm::P4Program;

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
    /// the fields' (id, kind) in P4Info order, and each action's parameter ids in order (what
    /// a keyed Read writes an update with)
    field_order: Vec<(u32, u32)>,
    param_order: HashMap<u32, Vec<u32>>,
}

/// `TableWritePlan({table_id: ([(field_id, kind, width)], {action_id: [(param_id, width)]})})`:
/// `decode(request_bytes)` gives the updates (a `DecodedWrite`), or None when the general path
/// must take the request.
#[pyclass(module = "hbh_engine")]
pub struct TableWritePlan {
    tables: HashMap<u32, TablePlan>,
    /// the tables whose plain entries the engine writes itself (`apply`)
    stores: HashMap<u32, Store>,
}

/// The engine's side of one table's entries (issue 49, item 7): the keys of all its entries
/// (however written) with their handles, and what `apply` changed that the table's Python
/// state has not taken in yet (`store_take`), one item per key however many Writes changed it
/// (so it stays within twice the table's size). Python tells it of every other change
/// (`store_add`, `store_remove`) and of the programs applying the table (`store_attach`).
struct Store {
    /// the table's size (0: no limit)
    size: usize,
    /// an entry's key (`key_of`) -> its handle, and whether it is const
    keys: HashMap<Vec<u64>, (u64, bool)>,
    /// the handle the next insert gets (handles grow, as the Python table's)
    next_handle: u64,
    /// the keys `apply` changed since the Python state last took them in
    pending: HashMap<Vec<u64>, Pending>,
    /// the engine programs applying this table (weakly held, as `Sinks`)
    sinks: Vec<Py<PyWeakrefReference>>,
    /// the entry objects the Python state holds, by handle (`store_add`, `store_objects`): a
    /// keyed Read writes the one its key names (`read_keyed`)
    objects: HashMap<u64, Py<PyAny>>,
    /// the writer of this table's entry objects (`store_writer`; None: keyed Reads go to Python)
    writer: Option<Py<TableEntityWriter>>,
}

/// A key `apply` changed: the handle of the entry the Python state holds for it (None: none),
/// the handle it has now and the last update (a DELETE: the key has no entry now).
struct Pending {
    held: Option<u64>,
    handle: u64,
    update: Decoded,
}

/// An entry's key from its index fields: a table's field kinds make (masks, masked values,
/// ranges, priority) one-to-one with its canonical match and priority.
fn key_of(masks: &[u64], masked: &[u64], ranges: &[(usize, u64, u64)], priority: u32) -> Vec<u64> {
    let mut k = Vec::with_capacity(masks.len() * 2 + ranges.len() * 3 + 1);
    k.extend_from_slice(masks);
    k.extend_from_slice(masked);
    for &(i, lo, hi) in ranges {
        k.extend_from_slice(&[i as u64, lo, hi]);
    }
    k.push(priority as u64);
    k
}

/// A WriteRequest's own fields: device id, role id, election id, atomicity, and whether a role
/// name was given; None for one given twice (protobuf's merge rules: the general path's).
struct Header {
    device_id: u64,
    role_id: u64,
    election: Option<u128>,
    atomicity: u64,
    role: bool,
}

/// A key `take_in` changed: (table, key, what it held before: None for an insert).
type Undo = (u32, Vec<u64>, Option<(u64, bool)>);

const INSERT: u64 = 1;
const MODIFY: u64 = 2;
const DELETE: u64 = 3;

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
/// The fields of one TableEntry message the engine acts on (`TableWritePlan::entry_fields`).
struct EntryFields<'a, 'p> {
    table_id: u32,
    plan: &'p TablePlan,
    matches: Vec<&'a [u8]>,
    action: Option<&'a [u8]>,
    priority: u32,
    cm: Option<u64>,
    md: Option<&'a [u8]>,
}

/// The TableEntry inside an Entity's bytes, when the Entity holds that and nothing else (the one
/// kind of entity the engine's Write and keyed-Read paths answer; anything else goes to Python).
fn entity_table_entry(entity: &[u8]) -> Option<&[u8]> {
    let mut te = None;
    let mut r = Reader::new(entity);
    while let Some((n, v)) = r.field().ok()? {
        match (n, v) {
            (2, Value::Bytes(b)) => once(&mut te, b)?,
            _ => return None,
        }
    }
    te
}

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

/// A table entry's match as the store keys it: per field None or (kind, a, b) (as `Decoded`),
/// masks, masked values, ranges and the LPM prefix lengths' sum.
struct KeyFields {
    fields: Vec<Option<(u32, u64, u64)>>,
    masks: Vec<u64>,
    masked: Vec<u64>,
    ranges: Vec<(usize, u64, u64)>,
    plens: u32,
}

/// The `FieldMatch` messages of an entry of `plan`'s table, decoded and checked; None when the
/// general path must take them (it gives the error of one that is wrong).
fn key_fields(plan: &TablePlan, matches: Vec<&[u8]>) -> Option<KeyFields> {
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
                (2, Value::Bytes(x)) if kind == TERNARY || kind == RANGE => once(&mut two_b, x)?,
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
    Some(KeyFields {
        fields,
        masks,
        masked,
        ranges,
        plens,
    })
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
        self.table_entry(utype, entity_table_entry(entity?)?)
    }

    /// A TableEntry's fields, its table's plan and its priority (checked against the plan), for
    /// both the Write path and the keyed Read: one reading of the message, so the two paths cannot
    /// disagree on which entries the engine answers. None sends the message to Python.
    fn entry_fields<'a>(&self, msg: &'a [u8]) -> Option<EntryFields<'a, '_>> {
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
                // is_default_action, idle_timeout_ns, is_const: only their zero (proto3's absent)
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
        Some(EntryFields {
            table_id,
            plan,
            matches,
            action,
            priority: priority as u32,
            cm,
            md,
        })
    }

    fn table_entry(&self, utype: u64, msg: &[u8]) -> Option<Decoded> {
        let EntryFields {
            table_id,
            plan,
            matches,
            action,
            priority,
            cm,
            md,
        } = self.entry_fields(msg)?;
        let key = key_fields(plan, matches)?;
        let action = match action {
            None => None,
            Some(b) => Some(self.action(plan, b)?),
        };
        let KeyFields {
            fields,
            masks,
            masked,
            ranges,
            plens,
        } = key;
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
            let field_order = fields.iter().map(|&(id, kind, _)| (id, kind)).collect();
            let param_order = actions
                .iter()
                .map(|(&aid, ps)| (aid, ps.iter().map(|&(pid, _)| pid).collect()))
                .collect();
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
                    field_order,
                    param_order,
                },
            );
        }
        Ok(TableWritePlan {
            tables: out,
            stores: HashMap::new(),
        })
    }

    /// The updates of a WriteRequest's bytes, all checked (`DecodedWrite`); None when any update
    /// is one the general path must take.
    fn decode(&self, py: Python<'_>, request: &[u8]) -> Option<DecodedWrite> {
        py.allow_threads(|| self.decode_all(request))
    }

    /// Keep table `tid`'s entries here from now on (`size`: its size, 0 for none); false when
    /// the plan does not decode its entries. Its keys start empty: Python adds those it has.
    fn store_table(&mut self, tid: u32, size: usize) -> bool {
        if !self.tables.contains_key(&tid) {
            return false;
        }
        self.stores.insert(
            tid,
            Store {
                size,
                keys: HashMap::new(),
                next_handle: 0,
                pending: HashMap::new(),
                sinks: Vec::new(),
                objects: HashMap::new(),
                writer: None,
            },
        );
        true
    }

    /// An entry the table's Python state added itself (an insert of its own, a const entry, a
    /// rollback): its index fields, priority, handle and constness, and the entry object (None:
    /// a keyed Read of it goes to Python).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (tid, masks, masked, ranges, priority, handle, is_const, entry=None))]
    fn store_add(
        &mut self,
        tid: u32,
        masks: Vec<u64>,
        masked: Vec<u64>,
        ranges: Vec<(usize, u64, u64)>,
        priority: u32,
        handle: u64,
        is_const: bool,
        entry: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let st = self.store(tid)?;
        let before = st.keys.insert(
            key_of(&masks, &masked, &ranges, priority),
            (handle, is_const),
        );
        if let Some((old, _)) = before {
            st.objects.remove(&old);
        }
        if let Some(e) = entry {
            st.objects.insert(handle, e);
        }
        st.next_handle = st.next_handle.max(handle + 1);
        Ok(())
    }

    /// The entry objects the table's Python state built for the updates it took in
    /// (`store_take`), each by its `_handle`.
    fn store_objects(&mut self, tid: u32, entries: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let st = self.store(tid)?;
        for e in entries {
            let handle: u64 = e.getattr(pyo3::intern!(e.py(), "_handle"))?.extract()?;
            st.objects.insert(handle, e.unbind());
        }
        Ok(())
    }

    /// The writer of table `tid`'s entry objects as Read answers (`reads.table_writer`).
    fn store_writer(&mut self, tid: u32, writer: Py<TableEntityWriter>) -> PyResult<()> {
        self.store(tid)?.writer = Some(writer);
        Ok(())
    }

    /// An entry the table's Python state removed itself.
    fn store_remove(
        &mut self,
        tid: u32,
        masks: Vec<u64>,
        masked: Vec<u64>,
        ranges: Vec<(usize, u64, u64)>,
        priority: u32,
    ) -> PyResult<()> {
        let st = self.store(tid)?;
        if let Some((handle, _)) = st.keys.remove(&key_of(&masks, &masked, &ranges, priority)) {
            st.objects.remove(&handle);
        }
        Ok(())
    }

    /// An engine program applying table `tid` (it gets the store's writes from now on).
    fn store_attach(&mut self, tid: u32, program: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = program.py();
        let st = self.store(tid)?;
        st.sinks
            .retain(|w| w.bind(py).upgrade().is_some_and(|p| !p.is(program)));
        st.sinks.push(PyWeakrefReference::new(program)?.unbind());
        Ok(())
    }

    /// The handle the table's next entry gets, and what `apply` changed in table `tid` since
    /// the last call, a key at a time, in the order
    /// of the handles the keys have now: `(held, handle, update)` with `held` the handle of the
    /// entry the Python state holds for the key (None: none), `update` the last one (as
    /// `DecodedWrite.update` gives it; a DELETE: the key has no entry now). Held == handle: the
    /// entry was modified; else the held one (if any) is gone and, unless deleted, a new one is
    /// there - put in handle order, the entries keep the order of their inserts.
    #[allow(clippy::type_complexity)]
    fn store_take<'py>(
        &mut self,
        py: Python<'py>,
        tid: u32,
    ) -> PyResult<(u64, Vec<(Option<u64>, u64, Bound<'py, PyTuple>)>)> {
        let st = self.store(tid)?;
        let mut items: Vec<Pending> = std::mem::take(&mut st.pending).into_values().collect();
        items.sort_unstable_by_key(|p| p.handle);
        for p in &items {
            match p.held {
                // the held entry is gone (the Python state drops it now)
                Some(h) if h != p.handle || p.update.utype == DELETE => {
                    st.objects.remove(&h);
                }
                _ => {}
            }
        }
        let out = items
            .iter()
            .map(|p| Ok((p.held, p.handle, decoded_tuple(py, &p.update)?)))
            .collect::<PyResult<_>>()?;
        Ok((st.next_handle, out))
    }

    /// A ReadRequest's bytes answered from the stores, as the Python path answers it (one
    /// `ReadResponse`'s bytes): a Read of one entry of a stored table by its whole key, with
    /// nothing else asked, from device `device_id` and the default role. None, with nothing
    /// changed, for any other Read and whenever the entry is not one this writes: the Python path
    /// answers it (and gives every error). Why: a keyed Read spent about 40 µs in Python (parsing,
    /// the match's checks, the lookup) for a few hundred bytes (issue 49, item 7). The caller owns
    /// the switch state, as for `apply`.
    pub(crate) fn read_keyed<'py>(
        &self,
        py: Python<'py>,
        request: &[u8],
        device_id: u64,
    ) -> Option<Bound<'py, PyBytes>> {
        let (tid, key, filter) = self.read_key(request, device_id)?;
        let st = self.stores.get(&tid)?;
        let mut entity = Vec::with_capacity(128);
        let Some(&(handle, _)) = st.keys.get(&key) else {
            return Some(PyBytes::new(py, b"")); // no such entry: one empty ReadResponse
        };
        match st.pending.get(&key) {
            Some(p) if p.handle == handle && p.update.utype != DELETE => {
                self.pending_entity(&p.update, &filter, &mut entity)?
            }
            Some(_) => return None,
            None => {
                let e = st.objects.get(&handle)?.bind(py);
                let writer = st.writer.as_ref()?.bind(py).try_borrow().ok()?;
                let held: u64 = e
                    .getattr(pyo3::intern!(py, "_handle"))
                    .ok()?
                    .extract()
                    .ok()?;
                if held != handle {
                    return None;
                }
                let parts = writer.parts(py, e).ok()??;
                let parts = parts.borrowed();
                if filter.keeps(&parts) {
                    write_entity(&mut entity, &parts);
                }
            }
        }
        if entity.is_empty() {
            return Some(PyBytes::new(py, b"")); // filtered out: one empty ReadResponse
        }
        let mut out = Vec::with_capacity(entity.len() + 4);
        out.push(0x0A); // ReadResponse.entities
        let mut n = entity.len() as u64;
        while n > 0x7F {
            out.push((n as u8 & 0x7F) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.extend_from_slice(&entity);
        Some(PyBytes::new(py, &out))
    }

    /// Apply a WriteRequest (its bytes) here when every update is a plain one of a stored table
    /// that succeeds and the request comes from the primary (`device_id`, `election_id`), with
    /// at most `limit` updates: the keys change, the programs get the entries, and the tables
    /// touched are returned (their Python state takes the updates in with `store_take`).
    /// None, with nothing changed: the request is not one to apply here.
    pub(crate) fn apply(
        &mut self,
        py: Python<'_>,
        request: &[u8],
        device_id: u64,
        election_id: u128,
        limit: usize,
    ) -> PyResult<Option<Vec<u32>>> {
        let Some((h, updates)) = self.decode_request(request, true) else {
            return Ok(None);
        };
        if h.device_id != device_id
            || h.role_id != 0
            || h.role
            || h.election != Some(election_id)
            || h.atomicity > 2
            || updates.len() > limit
        {
            return Ok(None);
        }
        let mut handles = Vec::with_capacity(updates.len());
        if !self.take_in(&updates, &mut handles) {
            return Ok(None);
        }
        let mut touched: Vec<u32> = Vec::new();
        for (d, handle) in updates.into_iter().zip(handles) {
            let st = self.stores.get_mut(&d.table_id).expect("a store just used");
            let mut live = false;
            for w in &st.sinks {
                let Some(prog) = w.bind(py).upgrade() else {
                    continue;
                };
                live = true;
                let prog = prog.downcast::<P4Program>()?;
                let mut prog = prog.try_borrow_mut()?;
                if d.utype == DELETE {
                    prog.remove_entry(d.table_id, handle)?;
                } else {
                    let action = d.action.clone().expect("checked by take_in");
                    prog.put_direct(
                        d.table_id,
                        handle,
                        d.masks.clone(),
                        d.masked.clone(),
                        d.ranges.clone(),
                        d.rank as i64,
                        action,
                    )?;
                }
            }
            if !live && !st.sinks.is_empty() {
                st.sinks.clear();
            }
            if !touched.contains(&d.table_id) {
                touched.push(d.table_id);
            }
            let key = key_of(&d.masks, &d.masked, &d.ranges, d.priority);
            match st.pending.get_mut(&key) {
                // deleted before the Python state saw it: nothing to take in
                Some(p) if d.utype == DELETE && p.held.is_none() => {
                    st.pending.remove(&key);
                }
                Some(p) => {
                    p.handle = handle;
                    p.update = d;
                }
                None => {
                    // a key without news: the Python state holds what the keys held before
                    let held = if d.utype == INSERT {
                        None
                    } else {
                        Some(handle)
                    };
                    st.pending.insert(
                        key,
                        Pending {
                            held,
                            handle,
                            update: d,
                        },
                    );
                }
            }
        }
        Ok(Some(touched))
    }
}

/// What a keyed Read selects beside the key (`reads._filtered`): an action id, controller
/// metadata and metadata, each only when given (not zero, not empty).
struct ReadFilter<'a> {
    action_id: u64,
    controller_metadata: u64,
    metadata: &'a [u8],
}

impl ReadFilter<'_> {
    fn keeps(&self, p: &EntityParts<'_>) -> bool {
        (self.action_id == 0 || p.action.map(|a| a.0) == Some(self.action_id))
            && (self.controller_metadata == 0 || p.controller_metadata == self.controller_metadata)
            && (self.metadata.is_empty() || p.metadata == self.metadata)
    }
}

/// The action id of a Read's `TableAction` filter (0: none); None for one that is not a direct
/// action or does not parse as the Python path's protobuf would.
fn action_filter(msg: &[u8]) -> Option<u64> {
    let mut inner = None;
    let mut r = Reader::new(msg);
    while let Some((n, v)) = r.field().ok()? {
        match (n, v) {
            (1, Value::Bytes(b)) => once(&mut inner, b)?,
            _ => return None,
        }
    }
    let Some(inner) = inner else {
        return Some(0);
    };
    let mut aid = None;
    let mut r = Reader::new(inner);
    while let Some((n, v)) = r.field().ok()? {
        match (n, v) {
            (1, Value::Varint(x)) => once(&mut aid, x)?,
            (4, Value::Bytes(param)) => {
                // parameters select nothing; they only have to parse
                let mut r = Reader::new(param);
                while let Some((k, v)) = r.field().ok()? {
                    match (k, v) {
                        (2, Value::Varint(_)) | (3, Value::Bytes(_)) => {}
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
    }
    Some(u32::try_from(aid.unwrap_or(0)).ok()? as u64)
}

impl TableWritePlan {
    /// The table and store key of a ReadRequest's bytes that asks for one entry of a planned
    /// table by its whole key (match, and priority where the table has one) and for nothing
    /// else, from device `device_id` and the default role; None for any other request.
    fn read_key<'a>(
        &self,
        request: &'a [u8],
        device_id: u64,
    ) -> Option<(u32, Vec<u64>, ReadFilter<'a>)> {
        let (mut dev, mut entity) = (None, None);
        let mut r = Reader::new(request);
        while let Some((n, v)) = r.field().ok()? {
            match (n, v) {
                (1, Value::Varint(x)) => once(&mut dev, x)?,
                (2, Value::Bytes(b)) => once(&mut entity, b)?,
                (3, Value::Bytes([])) => {} // role: the default one only
                _ => return None,
            }
        }
        if dev.unwrap_or(0) != device_id {
            return None;
        }
        let te = entity_table_entry(entity?)?;
        let EntryFields {
            table_id,
            plan,
            matches,
            action,
            priority,
            cm,
            md,
        } = self.entry_fields(te)?;
        let filter = ReadFilter {
            action_id: match action {
                None => 0,
                Some(b) => action_filter(b)?,
            },
            controller_metadata: cm.unwrap_or(0),
            metadata: md.unwrap_or(&[]),
        };
        if matches.is_empty() {
            return None;
        }
        let k = key_fields(plan, matches)?;
        Some((
            table_id,
            key_of(&k.masks, &k.masked, &k.ranges, priority),
            filter,
        ))
    }

    /// `Entity{table_entry}` of the entry an update applied here left (one the table's Python
    /// state has not taken in): what `TableState._take_in` will build, as its writer writes it.
    fn pending_entity(
        &self,
        d: &Decoded,
        filter: &ReadFilter<'_>,
        buf: &mut Vec<u8>,
    ) -> Option<()> {
        let plan = self.tables.get(&d.table_id)?;
        let mut matches: Vec<FieldParts> = Vec::with_capacity(d.fields.len());
        for (f, &(fid, _)) in d.fields.iter().zip(&plan.field_order) {
            if let Some((kind, a, b)) = *f {
                matches.push((fid as u64, kind as u8, a as u128, b as u128));
            }
        }
        let (aid, values) = d.action.as_ref()?;
        let ids = plan.param_order.get(aid)?;
        let params: Vec<(u64, u128)> = ids
            .iter()
            .zip(values)
            .map(|(&pid, &v)| (pid as u64, v as u128))
            .collect();
        let parts = EntityParts {
            table_id: d.table_id as u64,
            matches: &matches,
            action: Some((*aid as u64, &params)),
            priority: d.priority as u64,
            controller_metadata: d.controller_metadata,
            is_default: false,
            idle_timeout_ns: 0,
            metadata: &d.metadata,
            is_const: false,
        };
        if filter.keeps(&parts) {
            write_entity(buf, &parts);
        }
        Some(())
    }

    fn store(&mut self, tid: u32) -> PyResult<&mut Store> {
        self.stores.get_mut(&tid).ok_or_else(|| {
            PyValueError::new_err(format!("TableWritePlan: table 0x{tid:08x} is not stored"))
        })
    }

    fn decode_all(&self, request: &[u8]) -> Option<DecodedWrite> {
        let (_, updates) = self.decode_request(request, false)?;
        Some(DecodedWrite { updates })
    }

    /// The request's header (read when `header`; else left at its defaults) and its updates.
    fn decode_request(&self, request: &[u8], header: bool) -> Option<(Header, Vec<Decoded>)> {
        let mut h = Header {
            device_id: 0,
            role_id: 0,
            election: None,
            atomicity: 0,
            role: false,
        };
        let (mut dev, mut rid, mut eid, mut atom, mut role) = (None, None, None, None, None);
        let mut updates = Vec::new();
        let mut r = Reader::new(request);
        loop {
            match r.field() {
                Ok(Some((4, Value::Bytes(b)))) => updates.push(self.update(b)?),
                Ok(Some((n @ (1 | 2 | 3 | 5 | 6), v))) => {
                    if !header {
                        continue;
                    }
                    match (n, v) {
                        (1, Value::Varint(x)) => once(&mut dev, x)?,
                        (2, Value::Varint(x)) => once(&mut rid, x)?,
                        (3, Value::Bytes(b)) => once(&mut eid, b)?,
                        (5, Value::Varint(x)) => once(&mut atom, x)?,
                        (6, Value::Bytes(b)) => once(&mut role, b)?,
                        _ => return None,
                    }
                }
                Ok(Some(_)) | Err(()) => return None,
                Ok(None) => break,
            }
        }
        if header {
            h.device_id = dev.unwrap_or(0);
            h.role_id = rid.unwrap_or(0);
            h.atomicity = atom.unwrap_or(0);
            h.role = role.is_some_and(|b| !b.is_empty());
            if let Some(b) = eid {
                let (mut high, mut low) = (None, None);
                let mut r = Reader::new(b);
                while let Some((n, v)) = r.field().ok()? {
                    match (n, v) {
                        (1, Value::Varint(x)) => once(&mut high, x)?,
                        (2, Value::Varint(x)) => once(&mut low, x)?,
                        _ => return None,
                    }
                }
                h.election = Some(((high.unwrap_or(0) as u128) << 64) | low.unwrap_or(0) as u128);
            }
        }
        Some((h, updates))
    }

    /// Check `updates` against the stores' keys, in order, and take them in (keys and
    /// handles); false (and the keys as they were) when one is not the store's to apply.
    fn take_in(&mut self, updates: &[Decoded], handles: &mut Vec<u64>) -> bool {
        let mut undo: Vec<Undo> = Vec::new();
        let mut ok = true;
        for d in updates {
            let Some(st) = self.stores.get_mut(&d.table_id) else {
                ok = false;
                break;
            };
            let key = key_of(&d.masks, &d.masked, &d.ranges, d.priority);
            let found = st.keys.get(&key).copied();
            match d.utype {
                DELETE => match found {
                    Some((h, false)) => {
                        st.keys.remove(&key);
                        undo.push((d.table_id, key, found));
                        handles.push(h);
                    }
                    _ => ok = false,
                },
                INSERT => {
                    if d.action.is_none()
                        || found.is_some()
                        || (st.size > 0 && st.keys.len() >= st.size)
                    {
                        ok = false;
                    } else {
                        let h = st.next_handle;
                        st.next_handle += 1;
                        st.keys.insert(key.clone(), (h, false));
                        undo.push((d.table_id, key, None));
                        handles.push(h);
                    }
                }
                MODIFY => match found {
                    Some((h, false)) if d.action.is_some() => handles.push(h),
                    _ => ok = false,
                },
                _ => ok = false,
            }
            if !ok {
                break;
            }
        }
        if !ok {
            for (tid, key, before) in undo.into_iter().rev() {
                let st = self.stores.get_mut(&tid).expect("a store just used");
                match before {
                    Some(v) => {
                        st.keys.insert(key, v);
                    }
                    None => {
                        st.keys.remove(&key);
                        st.next_handle -= 1;
                    }
                }
            }
        }
        ok
    }
}

/// An update as Python takes it: `(type, table_id, fields, masks, masked, ranges, rank,
/// priority, action, controller_metadata, metadata)`.
fn decoded_tuple<'py>(py: Python<'py>, d: &Decoded) -> PyResult<Bound<'py, PyTuple>> {
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
        decoded_tuple(py, d)
    }
}
