//! Match-action table state of the P4 engine: entries, their index, default actions, action
//! profiles and selectors, and the selector hashes.
//!
//! Why here and written from Python: a table apply is a per-packet lookup, so the data plane's
//! copy of the entries lives in the engine, next to the program that applies it; the P4Runtime
//! core (p4switch/state/tables.py, profiles.py) keeps the control plane's view (validation,
//! metadata, P4Runtime Read) and sends every change of what the data plane sees through one
//! function per kind of object (an entry, a default action, a member, a group). The index is
//! the P4Runtime core's own "tuple space": entries grouped by their mask signature, a hash map
//! per group from the masked key to the entries, groups visited from the highest rank down
//! (rank: priority, or the prefix length for LPM), so exact tables are one hash lookup and LPM
//! tables one per prefix length. Masks, masked values, ranges and ranks come computed from
//! Python (`TableState._index_fields`), so the engine never re-derives a match's meaning.
//! Ties between equal ranks go to the entry written first, as in the Python index (the
//! differential oracle, which must agree entry for entry).

use std::collections::HashMap as StdHashMap;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The index's hash: a multiply-xor over the key's 64-bit words, mixed at the end (murmur3's
/// 64-bit finaliser, so that the low bits a bucket index takes depend on every bit of the key:
/// LPM keys have their low bits masked to zero). Why not the standard library's SipHash: a
/// table apply hashes its masked key once per mask group and the entry's handle once, for every
/// packet, and SipHash's cost bought resistance to colliding keys chosen by whoever writes the
/// entries, which here is the controller, not the packets.
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

const WORD_K: u64 = 0x9E37_79B9_7F4A_7C15;

impl WordHasher {
    #[inline]
    fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(WORD_K).rotate_left(31);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u64(&mut self, w: u64) {
        self.word(w);
    }

    #[inline]
    fn write_u32(&mut self, w: u32) {
        self.word(w as u64);
    }

    #[inline]
    fn write_usize(&mut self, w: usize) {
        self.word(w as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 33;
        x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        x ^ (x >> 33)
    }
}

/// A map hashed with [`WordHasher`]: nothing depends on its iteration order (the index is
/// built in handle order, `Table::rebuild`).
type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<WordHasher>>;

/// What an entry (or a default entry) runs.
#[derive(Clone, Debug)]
pub enum Act {
    None,
    Direct(u32, Vec<u64>),
    Member(u32),
    Group(u32),
    /// A one-shot action set: actions, upper slot bounds of their weights, their sum.
    Set(Vec<(u32, Vec<u64>)>, Vec<u64>, u64),
}

/// Action encodings the Python side sends (`p4switch/state/engine_sink.py`).
pub const ACT_NONE: u32 = 0;
pub const ACT_DIRECT: u32 = 1;
pub const ACT_MEMBER: u32 = 2;
pub const ACT_GROUP: u32 = 3;
pub const ACT_SET: u32 = 4;

pub type ActionData = (u32, Vec<u64>);
/// An action as the Python side sends it: (kind, id, params, one-shot set of (action, params, weight)).
pub type ActionForm = (u32, u32, Vec<u64>, Vec<(u32, Vec<u64>, u64)>);
/// A table of a program: P4Info id, key fields, profile id or 0, selector (list, algorithm, width).
pub type TableConfig = (u32, usize, u32, Option<(u32, u32, u32)>);

impl Act {
    /// `(kind, id, params, set)`: kind ACT_*; `id` an action, member or group id; `set` the
    /// one-shot set as (action id, params, weight).
    pub fn decode(
        kind: u32,
        id: u32,
        params: Vec<u64>,
        set: Vec<(u32, Vec<u64>, u64)>,
    ) -> PyResult<Self> {
        Ok(match kind {
            ACT_NONE => Act::None,
            ACT_DIRECT => Act::Direct(id, params),
            ACT_MEMBER => Act::Member(id),
            ACT_GROUP => Act::Group(id),
            ACT_SET => {
                let (cum, total) = cumulative(set.iter().map(|s| s.2));
                Act::Set(
                    set.into_iter().map(|(a, p, _)| (a, p)).collect(),
                    cum,
                    total,
                )
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "P4Program: unknown action kind {kind}"
                )))
            }
        })
    }
}

fn cumulative(weights: impl Iterator<Item = u64>) -> (Vec<u64>, u64) {
    let mut total = 0u64;
    let cum = weights
        .map(|w| {
            total += w;
            total
        })
        .collect();
    (cum, total)
}

/// `bisect_right(cum, h % total)`: the slot's owner.
fn pick(cum: &[u64], total: u64, h: u64) -> Option<usize> {
    if total == 0 {
        return None;
    }
    let slot = h % total;
    Some(cum.partition_point(|&c| c <= slot))
}

struct Entry {
    masks: Box<[u64]>,
    masked: Box<[u64]>,
    ranges: Vec<(usize, u64, u64)>,
    rank: i64,
    act: Act,
}

struct MaskGroup {
    masks: Box<[u64]>,
    entries: HashMap<Box<[u64]>, Vec<u64>>,
    max_rank: i64,
}

/// A selector's hash: the field list (by index in the program's lists), algorithm, width.
#[derive(Clone, Copy)]
pub struct Selector {
    pub list: u32,
    pub algo: u32,
    pub width: u32,
}

pub const ALGO_CRC16: u32 = 0;
pub const ALGO_CRC32: u32 = 1;
pub const ALGO_CSUM16: u32 = 2;

/// One table: entries by handle (handles grow with every insert, so their order is the order
/// the entries were written), the index (rebuilt after writes, on the next lookup), default.
pub struct Table {
    pub id: u32,
    pub nkeys: usize,
    pub profile: Option<usize>,
    pub selector: Option<Selector>,
    entries: HashMap<u64, Entry>,
    groups: Vec<MaskGroup>,
    dirty: bool,
    pub default: Act,
}

impl Table {
    pub fn new(id: u32, nkeys: usize, profile: Option<usize>, selector: Option<Selector>) -> Self {
        Table {
            id,
            nkeys,
            profile,
            selector,
            entries: HashMap::default(),
            groups: Vec::new(),
            dirty: false,
            default: Act::None,
        }
    }

    pub fn put(
        &mut self,
        handle: u64,
        masks: Vec<u64>,
        masked: Vec<u64>,
        ranges: Vec<(usize, u64, u64)>,
        rank: i64,
        act: Act,
    ) -> PyResult<()> {
        if masks.len() != self.nkeys
            || masked.len() != self.nkeys
            || ranges.iter().any(|r| r.0 >= self.nkeys)
        {
            return Err(PyValueError::new_err(format!(
                "P4Program: table 0x{:08x} takes {} key fields",
                self.id, self.nkeys
            )));
        }
        let e = Entry {
            masks: masks.into(),
            masked: masked.into(),
            ranges,
            rank,
            act,
        };
        self.entries.insert(handle, e);
        self.dirty = true;
        Ok(())
    }

    pub fn remove(&mut self, handle: u64) {
        if self.entries.remove(&handle).is_some() {
            self.dirty = true;
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.groups.clear();
        self.dirty = false;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn rebuild(&mut self) {
        let mut handles: Vec<u64> = self.entries.keys().copied().collect();
        handles.sort_unstable();
        let mut groups: Vec<MaskGroup> = Vec::new();
        let mut index: HashMap<Box<[u64]>, usize> = HashMap::default();
        for h in handles {
            let e = &self.entries[&h];
            let gi = *index.entry(e.masks.clone()).or_insert_with(|| {
                groups.push(MaskGroup {
                    masks: e.masks.clone(),
                    entries: HashMap::default(),
                    max_rank: -1,
                });
                groups.len() - 1
            });
            let g = &mut groups[gi];
            g.entries.entry(e.masked.clone()).or_default().push(h);
            g.max_rank = g.max_rank.max(e.rank);
        }
        for g in groups.iter_mut() {
            for lst in g.entries.values_mut() {
                lst.sort_by_key(|h| -self.entries[h].rank); // stable: first written first
            }
        }
        groups.sort_by_key(|g| -g.max_rank);
        self.groups = groups;
        self.dirty = false;
    }

    /// Bring the index up to date with the writes (before lookups).
    pub fn index(&mut self) {
        if self.dirty {
            self.rebuild();
        }
    }

    /// The action of the entry `key` hits, or None on a miss (`index` first).
    pub fn lookup(&self, key: &[u64], scratch: &mut Vec<u64>) -> Option<&Act> {
        let mut best: Option<u64> = None;
        let mut best_rank = -1i64;
        for g in &self.groups {
            if g.max_rank <= best_rank {
                break;
            }
            scratch.clear();
            scratch.extend(key.iter().zip(g.masks.iter()).map(|(k, m)| k & m));
            let Some(cands) = g.entries.get(&scratch[..]) else {
                continue;
            };
            for h in cands {
                let e = &self.entries[h];
                if e.rank <= best_rank {
                    break;
                }
                if e.ranges
                    .iter()
                    .all(|&(i, lo, hi)| lo <= key[i] && key[i] <= hi)
                {
                    best = Some(*h);
                    best_rank = e.rank;
                    break;
                }
            }
        }
        best.map(|h| &self.entries[&h].act)
    }
}

/// An action profile or selector: members (action and data) and groups (members, weights).
pub struct Profile {
    members: HashMap<u32, ActionData>,
    groups: HashMap<u32, (Vec<u32>, Vec<u64>, u64)>,
}

impl Profile {
    pub fn new() -> Self {
        Profile {
            members: HashMap::default(),
            groups: HashMap::default(),
        }
    }

    pub fn set_member(&mut self, mid: u32, act: Option<ActionData>) {
        match act {
            Some(a) => {
                self.members.insert(mid, a);
            }
            None => {
                self.members.remove(&mid);
            }
        }
    }

    pub fn set_group(&mut self, gid: u32, members: Option<Vec<(u32, u64)>>) {
        match members {
            Some(ms) => {
                let (cum, total) = cumulative(ms.iter().map(|m| m.1));
                self.groups
                    .insert(gid, (ms.into_iter().map(|m| m.0).collect(), cum, total));
            }
            None => {
                self.groups.remove(&gid);
            }
        }
    }

    pub fn clear(&mut self) {
        self.members.clear();
        self.groups.clear();
    }

    /// The action an indirect entry's reference runs (`hash()` only for groups and sets), as
    /// `ActionProfileState.choose`.
    pub fn choose<'a>(
        &'a self,
        act: &'a Act,
        hash: impl FnOnce() -> PyResult<u64>,
    ) -> PyResult<Option<(u32, &'a [u64])>> {
        Ok(match act {
            Act::Member(mid) => self.members.get(mid).map(|(a, p)| (*a, p.as_slice())),
            Act::Group(gid) => match self.groups.get(gid) {
                Some((mids, cum, total)) if *total > 0 => {
                    let i = pick(cum, *total, hash()?).unwrap_or(0);
                    self.members.get(&mids[i]).map(|(a, p)| (*a, p.as_slice()))
                }
                _ => None,
            },
            Act::Set(acts, cum, total) => {
                match pick(cum, *total, if *total > 0 { hash()? } else { 0 }) {
                    Some(i) => Some((acts[i].0, acts[i].1.as_slice())),
                    None => None,
                }
            }
            Act::Direct(a, p) => Some((*a, p.as_slice())),
            Act::None => None,
        })
    }
}

fn reflected_table(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, slot) in t.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
        }
        *slot = c;
    }
    t
}

fn crc_reflected(t: &[u32; 256], init: u32, data: &[u8]) -> u32 {
    data.iter().fold(init, |crc, &b| {
        (crc >> 8) ^ t[((crc ^ b as u32) & 0xFF) as usize]
    })
}

/// CRC-16/ARC (as p4switch/pipeline/algorithms.py's `crc16`, BMv2's crc16).
pub fn crc16(data: &[u8]) -> u64 {
    thread_local!(static T: [u32; 256] = reflected_table(0xA001));
    T.with(|t| crc_reflected(t, 0, data) as u64)
}

/// CRC-32 (zlib's, as algorithms.py's `crc32`).
pub fn crc32(data: &[u8]) -> u64 {
    thread_local!(static T: [u32; 256] = reflected_table(0xEDB8_8320));
    T.with(|t| (crc_reflected(t, 0xFFFF_FFFF, data) ^ 0xFFFF_FFFF) as u64)
}
