//! The P4 pipeline's engine form: a small register machine over the PHV.
//!
//! Why a register machine: the pipeline compiler (p4switch/pipeline) resolves every name to a PHV
//! slot once, at load time; what is left per packet is data movement and arithmetic on those
//! slots, branches, and calls to packet I/O and externs. So the engine form is a flat list of
//! instructions per block (`dst <- op(a, b)` on registers, jumps by instruction index, header
//! extract/emit by header index, checksums by field-list index) that a loader written for any
//! front end can produce: p4switch's emitter (p4switch/pipeline/emitter.py) today, a BMv2-JSON
//! loader later (its primitives map onto the same instructions; docs/background/engine.md).
//!
//! Registers: `0..nslots` are the PHV slots (the Python list the rest of the pipeline still
//! reads), `nslots..` are temporaries. Values are `u64`: `bit<w>` with `w <= 64`, `bool` as
//! 0/1, error codes. Wider fields and `int<w>` are not in this slice: the emitter refuses the
//! block and the closures run it (docs/background/engine.md, "The P4 pipeline in the engine"). A PHV slot is read from
//! the Python list the first time the block reads it and written back at the end of the block
//! only if the block wrote it, so a block's cost is the slots it touches, not the PHV's size.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::p4cells::{self, Cells, Shared};
use crate::p4fuse;
use crate::p4ins::{BinOp, Ins};
use crate::p4tables::{self, Act, Profile, Selector, Table};

/// `run`'s status when the block ended normally (a parser accepted).
pub const STATUS_END: i64 = -1;
/// `run`'s status for an explicit `transition reject` (parser_error left as it is).
pub const STATUS_REJECT: i64 = -2;

pub(crate) type ControlResult = Option<(
    Option<(u32, u64, i64)>,
    Option<u64>,
    Option<i64>,
    Option<i64>,
)>;

/// What a control block asks of the architecture (v1model), returned by `run`.
#[derive(Default)]
pub(crate) struct Requests {
    pub(crate) clone: Option<(u32, u64, i64)>,
    pub(crate) truncate: Option<u64>,
    /// resubmit, recirculate: the field list to keep
    pub(crate) preserve: [Option<i64>; 2],
}

/// Opcodes of the instruction tuples the loader passes (`(opcode, operands...)`).
mod op {
    pub const CONST: u64 = 0;
    pub const MOV: u64 = 1;
    pub const BIN: u64 = 2;
    pub const NOT: u64 = 3;
    pub const LNOT: u64 = 4;
    pub const NEG: u64 = 5;
    pub const JMP: u64 = 6;
    pub const JZ: u64 = 7;
    pub const JNZ: u64 = 8;
    pub const EXTRACT: u64 = 9;
    pub const EMIT: u64 = 10;
    pub const REJECT: u64 = 11;
    pub const END: u64 = 12;
    pub const STEP: u64 = 13;
    pub const CSUM16: u64 = 14;
    pub const PY: u64 = 15;
    pub const CALL: u64 = 16;
    pub const TABLE: u64 = 17;
    pub const REGREAD: u64 = 18;
    pub const REGWRITE: u64 = 19;
    pub const COUNT: u64 = 20;
    pub const CLONE: u64 = 21;
    pub const TRUNCATE: u64 = 22;
    pub const PRESERVE: u64 = 23;
}

/// A fixed header: validity register, then (register, width) per field on the wire.
struct Header {
    valid: u32,
    fields: Vec<(u32, u32)>,
    width: u64,
}

fn mask_of(width: u64) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// `n <= 64` bits of `data` starting at bit `pos` (the caller checked the length).
#[inline]
fn read_bits(data: &[u8], pos: u64, n: u32) -> u64 {
    let first = (pos >> 3) as usize;
    if pos & 7 == 0 && n & 7 == 0 {
        // Whole bytes from a byte boundary, as most of a header's fields are: the bytes as they
        // are, without the 128-bit shifts and the mask (the same value: tests below). With eight
        // bytes to read from there, one load of all eight, the field's at its top.
        if let (Some(eight), true) = (data.get(first..first + 8), n > 0) {
            let word = u64::from_be_bytes(eight.try_into().unwrap_or([0; 8]));
            return word >> (64 - n);
        }
        return data[first..first + (n >> 3) as usize]
            .iter()
            .fold(0u64, |a, &b| (a << 8) | b as u64);
    }
    let mut acc: u128 = 0;
    let last = ((pos + n as u64 + 7) >> 3) as usize;
    for &b in &data[first..last] {
        acc = (acc << 8) | b as u128;
    }
    let drop = (last as u64 * 8) - pos - n as u64;
    ((acc >> drop) as u64) & mask_of(n as u64)
}

/// MSB-first bit string builder: fields of up to 64 bits appended to whole bytes.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    bits: u32,
}

impl BitWriter<'_> {
    #[inline]
    fn push(&mut self, v: u64, width: u32) {
        if self.bits == 0 && width & 7 == 0 && width <= 64 {
            // Nothing pending (`acc` is 0) and whole bytes, as most of a header's fields are: the
            // field's low bytes as they are, not a byte at a time through the 128-bit accumulator
            // (the deparser's emit was a fifth of the VM's instructions; the same bytes: tests below).
            // Written as all eight bytes of the field shifted to the top, then cut to its own: a
            // copy of a constant size, not a call of memcpy for a few bytes.
            if width > 0 {
                let len = self.out.len();
                self.out
                    .extend_from_slice(&(v << (64 - width)).to_be_bytes());
                self.out.truncate(len + (width >> 3) as usize);
            }
            return;
        }
        self.acc = (self.acc << width) | (v & mask_of(width as u64)) as u128;
        self.bits += width;
        while self.bits >= 8 {
            self.bits -= 8;
            self.out.push((self.acc >> self.bits) as u8);
        }
        self.acc &= (1u128 << self.bits) - 1;
    }

    /// Pad with zero bits to a multiple of `to` bits.
    fn pad(&mut self, to: u32, written: u64) {
        let rem = (written % to as u64) as u32;
        if rem != 0 {
            let mut left = to - rem;
            while left > 0 {
                let k = left.min(32);
                self.push(0, k);
                left -= k;
            }
        }
    }
}

/// `csum16` of a field list's bit concatenation padded to 16 bits, summed as the bits come.
///
/// Why: the VM's `Csum16` (the IPv4 header's checksum, verified and updated for every packet)
/// packed the list into a new `Vec` and then summed it: an allocation and a second pass per
/// checksum. The words summed are the same: the list's bits, MSB first, 16 at a time, the last
/// word padded with zero bits.
#[derive(Default)]
struct Csum16 {
    acc: u128,
    bits: u32,
    sum: u64,
}

impl Csum16 {
    #[inline]
    fn push(&mut self, v: u64, width: u32) {
        if self.bits == 0 && width & 15 == 0 && width <= 64 {
            // Nothing pending and whole 16-bit words: each word added as it is.
            for k in (0..width >> 4).rev() {
                self.sum += (v >> (16 * k)) & 0xFFFF;
            }
            return;
        }
        self.acc = (self.acc << width) | (v & mask_of(width as u64)) as u128;
        self.bits += width;
        while self.bits >= 16 {
            self.bits -= 16;
            self.sum += ((self.acc >> self.bits) & 0xFFFF) as u64;
        }
        self.acc &= (1u128 << self.bits) - 1;
    }

    fn finish(self) -> u64 {
        let mut s = self.sum;
        if self.bits > 0 {
            s += ((self.acc << (16 - self.bits)) & 0xFFFF) as u64;
        }
        fold16(s)
    }
}

/// The ones' complement of a sum folded to 16 bits.
fn fold16(mut s: u64) -> u64 {
    while s >> 16 != 0 {
        s = (s & 0xFFFF) + (s >> 16);
    }
    !s & 0xFFFF
}

fn csum16(bytes: &[u8]) -> u64 {
    let mut s: u64 = 0;
    for w in bytes.chunks(2) {
        let hi = w[0] as u64;
        let lo = if w.len() > 1 { w[1] as u64 } else { 0 };
        s += (hi << 8) | lo;
    }
    fold16(s)
}

/// A loaded program: one instruction list per block, its headers and field lists, and the
/// state of the tables it applies (written by the P4Runtime core, p4switch/state).
#[pyclass(module = "hbh_engine", weakref)]
pub struct P4Program {
    tables: Vec<Table>,
    table_index: HashMap<u32, usize>,
    profiles: Vec<Profile>,
    profile_index: HashMap<u32, usize>,
    keybuf: Vec<u64>,
    maskbuf: Vec<u64>,
    /// Register and counter cells (shared with the Python state objects), and their masks.
    cells: Vec<(Shared, u64)>,
    /// `on_clone(phv, kind, session, field list)`: a pending clone (kinds 0-1), resubmit (2)
    /// or recirculate (3) request is handed over
    /// before a `Py` statement runs (which may clone too: the last one wins).
    on_clone: Option<Py<PyAny>>,
    blocks: Vec<Vec<Ins>>,
    headers: Vec<Header>,
    lists: Vec<Vec<(u32, u32)>>,
    callbacks: Vec<Py<PyAny>>,
    arglists: Vec<Vec<u32>>,
    nslots: usize,
    bool_slot: Vec<bool>,
    too_short: i64,
    timeout: i64,
    max_steps: u64,
    regs: Vec<u64>,
    /// Per PHV slot: 0 not read yet, 1 read, 2 written.
    seen: Vec<u8>,
    touched: Vec<u32>,
    scratch: Vec<u8>,
}

fn as_u64(t: &Bound<'_, PyTuple>, i: usize) -> PyResult<u64> {
    t.get_item(i)?.extract::<u64>()
}

fn as_u32(t: &Bound<'_, PyTuple>, i: usize) -> PyResult<u32> {
    t.get_item(i)?.extract::<u32>()
}

fn decode(t: &Bound<'_, PyTuple>, nblock: usize, arglists: &mut Vec<Vec<u32>>) -> PyResult<Ins> {
    let code = as_u64(t, 0)?;
    let ins = match code {
        op::CONST => Ins::Const {
            dst: as_u32(t, 1)?,
            imm: as_u64(t, 2)?,
        },
        op::MOV => Ins::Mov {
            dst: as_u32(t, 1)?,
            src: as_u32(t, 2)?,
        },
        op::BIN => {
            let opc = as_u64(t, 1)?;
            let op = BinOp::from_code(opc).ok_or_else(|| {
                PyValueError::new_err(format!("P4Program: unknown binary operator {opc}"))
            })?;
            Ins::Bin {
                op,
                dst: as_u32(t, 2)?,
                a: as_u32(t, 3)?,
                b: as_u32(t, 4)?,
                mask: mask_of(as_u64(t, 5)?),
            }
        }
        op::NOT => Ins::Not {
            dst: as_u32(t, 1)?,
            a: as_u32(t, 2)?,
            mask: mask_of(as_u64(t, 3)?),
        },
        op::LNOT => Ins::LNot {
            dst: as_u32(t, 1)?,
            a: as_u32(t, 2)?,
        },
        op::NEG => Ins::Neg {
            dst: as_u32(t, 1)?,
            a: as_u32(t, 2)?,
            mask: mask_of(as_u64(t, 3)?),
        },
        op::JMP => Ins::Jmp(as_u32(t, 1)?),
        op::JZ => Ins::Jz {
            cond: as_u32(t, 1)?,
            target: as_u32(t, 2)?,
        },
        op::JNZ => Ins::Jnz {
            cond: as_u32(t, 1)?,
            target: as_u32(t, 2)?,
        },
        op::EXTRACT => Ins::Extract(as_u32(t, 1)?),
        op::EMIT => Ins::Emit(as_u32(t, 1)?),
        op::REJECT => Ins::Reject(t.get_item(1)?.extract::<i64>()?),
        op::END => Ins::End,
        op::STEP => Ins::Step,
        op::CSUM16 => Ins::Csum16 {
            dst: as_u32(t, 1)?,
            list: as_u32(t, 2)?,
        },
        op::PY => Ins::Py(as_u32(t, 1)?),
        op::REGREAD => Ins::RegRead {
            dst: as_u32(t, 1)?,
            c: as_u32(t, 2)?,
            idx: as_u32(t, 3)?,
        },
        op::REGWRITE => Ins::RegWrite {
            c: as_u32(t, 1)?,
            idx: as_u32(t, 2)?,
            val: as_u32(t, 3)?,
        },
        op::CLONE => Ins::Clone {
            kind: as_u32(t, 1)?,
            session: as_u32(t, 2)?,
            list: t.get_item(3)?.extract::<i64>()?,
        },
        op::TRUNCATE => Ins::Truncate(as_u32(t, 1)?),
        op::PRESERVE => Ins::Preserve {
            kind: as_u32(t, 1)?,
            list: t.get_item(2)?.extract::<i64>()?,
        },
        op::COUNT => Ins::Count {
            pk: as_u32(t, 1)?,
            by: as_u32(t, 2)?,
            idx: as_u32(t, 3)?,
            len: as_u32(t, 4)?,
        },
        op::CALL | op::TABLE => {
            arglists.push(t.get_item(2)?.extract::<Vec<u32>>()?);
            arglists.push(
                (3..t.len())
                    .map(|i| as_u32(t, i))
                    .collect::<PyResult<Vec<_>>>()?,
            );
            let n = arglists.len() as u32;
            let (f, dsts, args) = (as_u32(t, 1)?, n - 2, n - 1);
            if code == op::CALL {
                Ins::Call { f, dsts, args }
            } else {
                Ins::Table { t: f, dsts, args }
            }
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "P4Program: unknown opcode {code}"
            )))
        }
    };
    if let Ins::Jmp(x) | Ins::Jz { target: x, .. } | Ins::Jnz { target: x, .. } = ins {
        if x as usize > nblock {
            return Err(PyValueError::new_err(format!(
                "P4Program: jump to {x} past the block's end"
            )));
        }
    }
    Ok(ins)
}

/// A run's registers. `OWNED`: the registers hold the whole PHV (`run_owned`, no list behind), so
/// a register is read and written as it is, without the cache's bookkeeping. Why a parameter of
/// the type: the VM reads or writes a register for nearly every instruction, and the engine's
/// walk (every packet of the real-time switch) runs owned; its `exec` is compiled apart.
struct Run<'a, 'py, const OWNED: bool> {
    py: Python<'py>,
    /// The PHV list; None: the registers hold the whole PHV (`run_owned`, no list behind).
    phv: Option<&'a Bound<'py, PyList>>,
    regs: &'a mut [u64],
    seen: &'a mut Vec<u8>,
    touched: &'a mut Vec<u32>,
    bool_slot: &'a [bool],
    nslots: usize,
}

impl<'py, const OWNED: bool> Run<'_, 'py, OWNED> {
    /// A register's value (a PHV slot not read yet comes from the list first). Why inlined,
    /// with the list's read apart: the VM reads a register for nearly every instruction, and as
    /// a call it was a fifth of the VM's time.
    #[inline(always)]
    fn get(&mut self, r: u32) -> PyResult<u64> {
        let i = r as usize;
        if !OWNED && i < self.nslots && self.seen[i] == 0 {
            return self.load(i);
        }
        debug_assert!(i < self.regs.len());
        // SAFETY: every register a run reads or writes was checked against the length of the
        // register file when the program was loaded (`validate`: the instructions, their
        // argument lists, the headers, the field lists, the parser error slot; the fused forms
        // are made of checked ones), and a run's register file always has that length
        // (`self.regs`, or a packet's swapped in by `run_owned` only when of the same length).
        // Why unchecked: the VM reads or writes a register for nearly every instruction, and
        // each access tested the bound again (a load of the length, a compare, a branch).
        Ok(unsafe { *self.regs.get_unchecked(i) })
    }

    /// PHV slot `i`'s first read from the list (a run over a Python PHV).
    #[cold]
    #[inline(never)]
    fn load(&mut self, i: usize) -> PyResult<u64> {
        let v = self.list()?.get_item(i)?.extract::<u64>().map_err(|_| {
            PyValueError::new_err(format!(
                "P4Program: PHV slot {i} does not hold a bit<=64> value"
            ))
        })?;
        self.regs[i] = v;
        self.seen[i] = 1;
        self.touched.push(i as u32);
        Ok(v)
    }

    /// Store the PHV registers the block wrote into the list (they stay cached). With
    /// `forget`, the cache is dropped too: the next read of any slot goes to the list.
    fn flush(&mut self, forget: bool) -> PyResult<()> {
        let mut res = Ok(());
        for &r in self.touched.iter() {
            let i = r as usize;
            if self.seen[i] == 2 && res.is_ok() {
                let v = self.regs[i];
                res = self.list().and_then(|l| {
                    if self.bool_slot[i] {
                        l.set_item(i, PyBool::new(self.py, v != 0))
                    } else {
                        l.set_item(i, v)
                    }
                });
                self.seen[i] = 1;
            }
            if forget {
                self.seen[i] = 0;
            }
        }
        if forget {
            self.touched.clear();
        }
        res
    }

    fn list(&self) -> PyResult<&Bound<'py, PyList>> {
        self.phv.ok_or_else(|| {
            PyValueError::new_err("P4Program: a block calls Python while the PHV is the engine's")
        })
    }

    #[inline]
    fn set(&mut self, r: u32, v: u64) {
        let i = r as usize;
        if !OWNED && i < self.nslots {
            if self.seen[i] == 0 {
                self.touched.push(r);
            }
            self.seen[i] = 2;
        }
        debug_assert!(i < self.regs.len());
        // SAFETY: as `get`'s: `r` was checked against the register file's length at load.
        unsafe { *self.regs.get_unchecked_mut(i) = v };
    }
}

impl P4Program {
    /// Run `blocks` in order over one register cache of the PHV: a slot is read from the
    /// list once and written back once, at the end, whatever the number of blocks. The first
    /// block gets `data` and `cursor` (a parser); when it ends with an error code and
    /// `parser_error` names a slot, that slot gets the code before the next block runs (as
    /// v1model: a parser error does not stop ingress). Returns the first block's status and
    /// cursor, the bytes every block emitted, and the requests of all blocks (the last clone,
    /// resubmit and recirculate request wins, truncate keeps the smallest length).
    fn run_blocks<'py, const OWNED: bool>(
        &mut self,
        py: Python<'py>,
        blocks: &[usize],
        phv: Option<&Bound<'py, PyList>>,
        data: Option<&[u8]>,
        cursor: u64,
        parser_error: Option<u32>,
    ) -> PyResult<(i64, u64, Requests)> {
        if let Some(&b) = blocks.iter().find(|&&b| b >= self.blocks.len()) {
            return Err(PyValueError::new_err(format!("P4Program: no block {b}")));
        }
        if let Some(r) = parser_error {
            self.check_reg(r, "parser error")?;
        }
        if phv.is_some_and(|l| l.len() < self.nslots) {
            return Err(PyValueError::new_err(
                "P4Program: the PHV is shorter than the program's layout",
            ));
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        let mut touched = std::mem::take(&mut self.touched);
        let mut st: Run<'_, '_, OWNED> = Run {
            py,
            phv,
            regs: &mut self.regs,
            seen: &mut self.seen,
            touched: &mut touched,
            bool_slot: &self.bool_slot,
            nslots: self.nslots,
        };
        let mut tabs = Stores {
            tables: &mut self.tables,
            profiles: &self.profiles,
            keybuf: &mut self.keybuf,
            maskbuf: &mut self.maskbuf,
            cells: &self.cells,
            on_clone: self.on_clone.as_ref(),
            req: Requests::default(),
        };
        let mut res = Ok((STATUS_END, cursor));
        for (i, &block) in blocks.iter().enumerate() {
            let (d, c) = if i == 0 {
                (data.unwrap_or(&[]), cursor)
            } else {
                (&[][..], 0)
            };
            let r = exec(
                &self.blocks[block],
                &self.headers,
                &self.lists,
                (&self.callbacks, &self.arglists),
                &mut tabs,
                &mut st,
                d,
                c,
                (self.too_short, self.timeout, self.max_steps),
                &mut out,
            );
            match (i, r) {
                (0, Ok((status, cur))) => {
                    if let (Some(slot), true) = (parser_error, status >= 0) {
                        st.set(slot, status as u64);
                    }
                    res = Ok((status, cur));
                }
                (_, Ok(_)) => {}
                (_, Err(e)) => {
                    res = Err(e);
                    break;
                }
            }
        }
        // Write back what the blocks wrote, and forget the PHV either way.
        let wb = st.flush(true);
        self.touched = touched;
        let (status, cur) = res?;
        wb?;
        self.scratch = out;
        Ok((status, cur, tabs.req))
    }

    /// The bytes the last run emitted, as Python bytes (None: none).
    fn emitted<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        (!self.scratch.is_empty()).then(|| PyBytes::new(py, &self.scratch))
    }

    /// `run_blocks` over a PHV held by the engine (`phv`: every slot's value, `nslots` of
    /// them, or a whole register file, `nregs` of them; a bool as 0/1): the registers start as
    /// `phv` and `phv` gets them back. For blocks that make no call into Python (the v1model
    /// walk in the engine, v1walk.rs). A register file is swapped in and out, not copied: why,
    /// a packet's walk copied its PHV in and out of the registers three times (ingress in and
    /// out, egress in), the largest copies of a packet-hop; the walk's packets hold a register
    /// file (`WalkProgram`'s template), whose temporaries no block reads before writing them.
    pub(crate) fn run_owned<'py>(
        &mut self,
        py: Python<'py>,
        blocks: &[usize],
        phv: &mut Vec<u64>,
        data: Option<&[u8]>,
        parser_error: Option<u32>,
    ) -> PyResult<(i64, u64, Requests)> {
        if phv.len() == self.regs.len() && phv.len() > self.nslots {
            std::mem::swap(&mut self.regs, phv);
            let res = self.run_blocks::<true>(py, blocks, None, data, 0, parser_error);
            std::mem::swap(&mut self.regs, phv);
            return res;
        }
        self.phv_in(phv)?;
        let res = self.run_blocks::<true>(py, blocks, None, data, 0, parser_error);
        self.phv_out(phv);
        res
    }

    /// The length of the register file (the PHV's slots, then the temporaries).
    pub(crate) fn nregs(&self) -> usize {
        self.regs.len()
    }

    /// The number of PHV slots.
    pub(crate) fn nslots(&self) -> usize {
        self.nslots
    }

    /// The registers start as `phv` (a PHV of the program's layout).
    fn phv_in(&mut self, phv: &[u64]) -> PyResult<()> {
        let n = self.nslots;
        if phv.len() != n {
            return Err(PyValueError::new_err(
                "P4Program: the PHV is not of the program's layout",
            ));
        }
        self.regs[..n].copy_from_slice(phv);
        Ok(())
    }

    /// The PHV as the last run left it, into `phv`.
    fn phv_out(&self, phv: &mut [u64]) {
        phv.copy_from_slice(&self.regs[..self.nslots]);
    }

    /// The bytes the last run emitted (a deparser's headers).
    pub(crate) fn emitted_bytes(&self) -> &[u8] {
        &self.scratch
    }

    fn table_at(&self, tid: u32) -> PyResult<usize> {
        self.table_index.get(&tid).copied().ok_or_else(|| {
            PyValueError::new_err(format!("P4Program: no table with P4Info id 0x{tid:08x}"))
        })
    }

    fn table_mut(&mut self, tid: u32) -> PyResult<&mut Table> {
        let i = self.table_at(tid)?;
        Ok(&mut self.tables[i])
    }

    /// Entry `handle` of table `tid` with a direct action (the P4Runtime entry store's writes,
    /// p4rtwrite.rs: what `table_put` does with an `ACT_DIRECT` action).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn put_direct(
        &mut self,
        tid: u32,
        handle: u64,
        masks: Vec<u64>,
        masked: Vec<u64>,
        ranges: Vec<(usize, u64, u64)>,
        rank: i64,
        action: (u32, Vec<u64>),
    ) -> PyResult<()> {
        self.table_mut(tid)?.put(
            handle,
            masks,
            masked,
            ranges,
            rank,
            Act::Direct(action.0, action.1),
        )
    }

    /// `table_remove` for the P4Runtime entry store.
    pub(crate) fn remove_entry(&mut self, tid: u32, handle: u64) -> PyResult<()> {
        self.table_mut(tid)?.remove(handle);
        Ok(())
    }

    fn profile_mut(&mut self, pid: u32) -> PyResult<&mut Profile> {
        let i = self.profile_index.get(&pid).copied().ok_or_else(|| {
            PyValueError::new_err(format!(
                "P4Program: no action profile with P4Info id 0x{pid:08x}"
            ))
        })?;
        Ok(&mut self.profiles[i])
    }

    fn check_reg(&self, r: u32, what: &str) -> PyResult<()> {
        if (r as usize) < self.regs.len() {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "P4Program: {what} register {r} out of range"
            )))
        }
    }

    fn validate(&self) -> PyResult<()> {
        for h in &self.headers {
            self.check_reg(h.valid, "header validity")?;
            for &(r, w) in &h.fields {
                self.check_reg(r, "header field")?;
                if w == 0 || w > 64 {
                    return Err(PyValueError::new_err(format!(
                        "P4Program: header field width {w}"
                    )));
                }
            }
            if h.width % 8 != 0 {
                return Err(PyValueError::new_err(
                    "P4Program: a header must be whole bytes",
                ));
            }
        }
        for l in &self.lists {
            for &(r, w) in l {
                self.check_reg(r, "field list")?;
                if w == 0 || w > 64 {
                    return Err(PyValueError::new_err(format!(
                        "P4Program: field list width {w}"
                    )));
                }
            }
        }
        for b in &self.blocks {
            for ins in b {
                match *ins {
                    Ins::Const { dst, .. } => self.check_reg(dst, "destination")?,
                    Ins::Mov { dst, src: a }
                    | Ins::Not { dst, a, .. }
                    | Ins::LNot { dst, a }
                    | Ins::Neg { dst, a, .. } => {
                        self.check_reg(dst, "destination")?;
                        self.check_reg(a, "source")?;
                    }
                    Ins::Bin { dst, a, b, .. } => {
                        self.check_reg(dst, "destination")?;
                        self.check_reg(a, "source")?;
                        self.check_reg(b, "source")?;
                    }
                    Ins::Jz { cond, .. } | Ins::Jnz { cond, .. } => {
                        self.check_reg(cond, "condition")?
                    }
                    Ins::Clone { session: r, .. } | Ins::Truncate(r) => {
                        self.check_reg(r, "request")?
                    }
                    Ins::Preserve { kind, .. } if kind > 1 => {
                        return Err(PyValueError::new_err(format!(
                            "P4Program: no preserve kind {kind} (0 resubmit, 1 recirculate)"
                        )));
                    }
                    Ins::Extract(h) | Ins::Emit(h) if h as usize >= self.headers.len() => {
                        return Err(PyValueError::new_err(format!("P4Program: no header {h}")));
                    }
                    Ins::Py(n) | Ins::Call { f: n, .. } if n as usize >= self.callbacks.len() => {
                        return Err(PyValueError::new_err(format!("P4Program: no callback {n}")));
                    }
                    Ins::Table { t, .. } if t as usize >= self.tables.len() => {
                        return Err(PyValueError::new_err(format!("P4Program: no table {t}")));
                    }
                    Ins::Table { t, dsts, args } => {
                        let nk = self.arglists[args as usize].len();
                        if nk != self.tables[t as usize].nkeys
                            || self.arglists[dsts as usize].len() < 2
                        {
                            return Err(PyValueError::new_err(format!(
                                "P4Program: table {t} applied with {nk} keys or without hit and action registers"
                            )));
                        }
                        for &a in self.arglists[args as usize]
                            .iter()
                            .chain(&self.arglists[dsts as usize])
                        {
                            self.check_reg(a, "table")?;
                        }
                    }
                    Ins::RegRead { dst: a, c, idx: b }
                    | Ins::RegWrite { c, idx: a, val: b }
                    | Ins::Count {
                        pk: c,
                        idx: a,
                        len: b,
                        ..
                    } => {
                        if c as usize >= self.cells.len() {
                            return Err(PyValueError::new_err(format!("P4Program: no cells {c}")));
                        }
                        if let Ins::Count { by, .. } = *ins {
                            if by as usize >= self.cells.len() {
                                return Err(PyValueError::new_err(format!(
                                    "P4Program: no cells {by}"
                                )));
                            }
                        }
                        self.check_reg(a, "register")?;
                        self.check_reg(b, "register")?;
                    }
                    Ins::Call { dsts, args, .. } => {
                        for &a in self.arglists[args as usize]
                            .iter()
                            .chain(&self.arglists[dsts as usize])
                        {
                            self.check_reg(a, "call")?;
                        }
                    }
                    Ins::Csum16 { dst, list } => {
                        self.check_reg(dst, "destination")?;
                        if list as usize >= self.lists.len() {
                            return Err(PyValueError::new_err(format!(
                                "P4Program: no field list {list}"
                            )));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

#[pymethods]
impl P4Program {
    /// `blocks`: per block a list of instruction tuples; `headers`: (validity slot, [(slot, width)]);
    /// `lists`: [(register, width)] per checksum field list; `callbacks`: what `Py` calls; `nslots`/`ntemps`: register counts;
    /// `bool_slots`: PHV slots written back as Python bools; `too_short`/`timeout`: the error
    /// codes of PacketTooShort and ParserTimeout; `max_steps`: parser transitions allowed;
    /// `tables`: per table index (P4Info id, number of key fields, P4Info id of its action
    /// profile or 0, its selector's hash as (field list, algorithm, width) or None).
    #[new]
    /// `cells`: the register and counter cells the program's REGREAD/REGWRITE/COUNT name by index.
    /// `fuse`: rewrite each block into fused instructions after validating it (p4fuse.rs); False
    /// runs the blocks as given (the tests compare the two).
    #[pyo3(signature = (blocks, headers, lists, callbacks, nslots, ntemps, bool_slots, too_short, timeout, max_steps, tables=Vec::new(), cells=Vec::new(), on_clone=None, fuse=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        blocks: Vec<Vec<Bound<'_, PyTuple>>>,
        headers: Vec<(u32, Vec<(u32, u32)>)>,
        lists: Vec<Vec<(u32, u32)>>,
        callbacks: Vec<Py<PyAny>>,
        nslots: usize,
        ntemps: usize,
        bool_slots: Vec<usize>,
        too_short: i64,
        timeout: i64,
        max_steps: u64,
        tables: Vec<p4tables::TableConfig>,
        cells: Vec<Bound<'_, Cells>>,
        on_clone: Option<Py<PyAny>>,
        fuse: bool,
    ) -> PyResult<Self> {
        let mut code = Vec::with_capacity(blocks.len());
        let mut arglists = Vec::new();
        for b in &blocks {
            let n = b.len();
            code.push(
                b.iter()
                    .map(|t| decode(t, n, &mut arglists))
                    .collect::<PyResult<Vec<_>>>()?,
            );
        }
        let headers = headers
            .into_iter()
            .map(|(valid, fields)| {
                let width = fields.iter().map(|&(_, w)| w as u64).sum();
                Header {
                    valid,
                    fields,
                    width,
                }
            })
            .collect();
        let mut bool_slot = vec![false; nslots];
        for s in bool_slots {
            if s >= nslots {
                return Err(PyValueError::new_err(format!(
                    "P4Program: bool slot {s} out of range"
                )));
            }
            bool_slot[s] = true;
        }
        let mut table_index = HashMap::new();
        let mut profile_index = HashMap::new();
        let mut profs = Vec::new();
        let mut tabs = Vec::new();
        for (id, nkeys, pid, sel) in tables {
            let profile = (pid != 0).then(|| {
                *profile_index.entry(pid).or_insert_with(|| {
                    profs.push(Profile::new());
                    profs.len() - 1
                })
            });
            let selector = match sel {
                Some((list, algo, width)) => {
                    if list as usize >= lists.len() || algo > p4tables::ALGO_CSUM16 {
                        return Err(PyValueError::new_err(format!(
                            "P4Program: table 0x{id:08x}: selector field list {list} or algorithm {algo}"
                        )));
                    }
                    Some(Selector { list, algo, width })
                }
                None => None,
            };
            if table_index.insert(id, tabs.len()).is_some() {
                return Err(PyValueError::new_err(format!(
                    "P4Program: table 0x{id:08x} twice"
                )));
            }
            tabs.push(Table::new(id, nkeys, profile, selector));
        }
        let prog = P4Program {
            tables: tabs,
            table_index,
            profiles: profs,
            profile_index,
            keybuf: Vec::new(),
            maskbuf: Vec::new(),
            cells: cells
                .iter()
                .map(|c| (c.get().data.clone(), c.get().mask))
                .collect(),
            on_clone,
            blocks: code,
            headers,
            lists,
            callbacks,
            arglists,
            nslots,
            bool_slot,
            too_short,
            timeout,
            max_steps,
            regs: vec![0; nslots + ntemps],
            seen: vec![0; nslots],
            touched: Vec::new(),
            scratch: Vec::new(),
        };
        prog.validate()?;
        if fuse {
            let mut prog = prog;
            // registers a header or a field list names are always written (p4fuse.rs)
            let mut pinned = vec![false; prog.regs.len()];
            let named = prog
                .headers
                .iter()
                .flat_map(|h| std::iter::once(h.valid).chain(h.fields.iter().map(|&(r, _)| r)));
            for r in named.chain(prog.lists.iter().flatten().map(|&(r, _)| r)) {
                if let Some(p) = pinned.get_mut(r as usize) {
                    *p = true;
                }
            }
            let once = p4fuse::read_once(&prog.blocks, &prog.arglists, prog.nslots, &pinned);
            let mut arglists = std::mem::take(&mut prog.arglists);
            for (b, once) in prog.blocks.iter_mut().zip(&once) {
                *b = p4fuse::fuse(b, &mut arglists, once);
            }
            prog.arglists = arglists;
            return Ok(prog);
        }
        Ok(prog)
    }

    /// Run block `block` over the PHV list `phv` (`data`: the received bytes, for a parser;
    /// `cursor`: the parser's start, in bits). Returns (status, cursor, emitted bytes or None):
    /// status STATUS_END, STATUS_REJECT, or the parser error code the block rejected with.
    #[pyo3(signature = (block, phv, data=None, cursor=0))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        block: usize,
        phv: &Bound<'py, PyList>,
        data: Option<&[u8]>,
        cursor: u64,
    ) -> PyResult<(i64, u64, Option<Bound<'py, PyBytes>>)> {
        let (status, cur, _) =
            self.run_blocks::<false>(py, &[block], Some(phv), data, cursor, None)?;
        Ok((status, cur, self.emitted(py)))
    }

    /// Run control block `block` over `phv`; returns what it asks of the architecture, or
    /// None: (clone request or None, truncate length or None, resubmit field list or None,
    /// recirculate field list or None), the clone request (kind, session, field list or -1)
    /// and the others being the block's last not handed to `on_clone` already.
    fn run_control(
        &mut self,
        py: Python<'_>,
        block: usize,
        phv: &Bound<'_, PyList>,
    ) -> PyResult<ControlResult> {
        let (_, _, req) = self.run_blocks::<false>(py, &[block], Some(phv), None, 0, None)?;
        Ok(req.into_result())
    }

    /// Run `blocks` in order over one PHV (a packet's parser, checksum verification and
    /// ingress, or its egress, checksum computation and deparser) without handing the PHV back
    /// to Python between them: each slot is read from `phv` once and written back once.
    /// `data` is the first block's input (a parser's); a parser error code it ends with goes
    /// into slot `parser_error` (None: nowhere) before the next block. Returns (the first
    /// block's status, its cursor, the bytes the blocks emitted or None, the requests as
    /// `run_control` returns them). For blocks without `PY` statements: a closure's `exit`
    /// would end the whole sequence here, not its own block.
    #[pyo3(signature = (blocks, phv, data=None, parser_error=None))]
    fn run_seq<'py>(
        &mut self,
        py: Python<'py>,
        blocks: Vec<usize>,
        phv: &Bound<'py, PyList>,
        data: Option<&[u8]>,
        parser_error: Option<u32>,
    ) -> PyResult<(i64, u64, Option<Bound<'py, PyBytes>>, ControlResult)> {
        let (status, cur, req) =
            self.run_blocks::<false>(py, &blocks, Some(phv), data, 0, parser_error)?;
        Ok((status, cur, self.emitted(py), req.into_result()))
    }

    /// True when block `block` calls into Python (`PY` or `CALL`): `run_seq` is for blocks
    /// that do not.
    fn calls_python(&self, block: usize) -> PyResult<bool> {
        let code = self
            .blocks
            .get(block)
            .ok_or_else(|| PyValueError::new_err(format!("P4Program: no block {block}")))?;
        Ok(code
            .iter()
            .any(|i| matches!(i, Ins::Py(_) | Ins::Call { .. })))
    }

    // ---- the table state's write interface (p4switch/state/dataplane.py is its one caller)

    /// Insert entry `handle` of table `tid` (P4Info id), or replace it: its masks, masked key,
    /// (field, low, high) ranges and rank as the P4Runtime core's index computes them, and
    /// its action as `(kind, id, params, set)` (p4tables::ACT_*).
    #[allow(clippy::too_many_arguments)]
    fn table_put(
        &mut self,
        tid: u32,
        handle: u64,
        masks: Vec<u64>,
        masked: Vec<u64>,
        ranges: Vec<(usize, u64, u64)>,
        rank: i64,
        action: p4tables::ActionForm,
    ) -> PyResult<()> {
        let act = Act::decode(action.0, action.1, action.2, action.3)?;
        self.table_mut(tid)?
            .put(handle, masks, masked, ranges, rank, act)
    }

    /// Remove entry `handle` of table `tid` (absent: nothing).
    fn table_remove(&mut self, tid: u32, handle: u64) -> PyResult<()> {
        self.table_mut(tid)?.remove(handle);
        Ok(())
    }

    /// The action table `tid` runs on a miss.
    fn table_default(&mut self, tid: u32, action: p4tables::ActionForm) -> PyResult<()> {
        let act = Act::decode(action.0, action.1, action.2, action.3)?;
        self.table_mut(tid)?.default = act;
        Ok(())
    }

    /// Remove every entry of table `tid` (the default stays).
    fn table_clear(&mut self, tid: u32) -> PyResult<()> {
        self.table_mut(tid)?.clear();
        Ok(())
    }

    /// Number of entries of table `tid`.
    fn table_len(&self, tid: u32) -> PyResult<usize> {
        let i = self.table_at(tid)?;
        Ok(self.tables[i].len())
    }

    /// The P4Info ids of the tables this program applies.
    fn table_ids(&self) -> Vec<u32> {
        self.tables.iter().map(|t| t.id).collect()
    }

    /// Member `mid` of profile `pid`: its (action id, data), or None to remove it.
    #[pyo3(signature = (pid, mid, action))]
    fn profile_member(
        &mut self,
        pid: u32,
        mid: u32,
        action: Option<(u32, Vec<u64>)>,
    ) -> PyResult<()> {
        self.profile_mut(pid)?.set_member(mid, action);
        Ok(())
    }

    /// Group `gid` of selector `pid`: its (member id, weight) list in order, or None.
    #[pyo3(signature = (pid, gid, members))]
    fn profile_group(
        &mut self,
        pid: u32,
        gid: u32,
        members: Option<Vec<(u32, u64)>>,
    ) -> PyResult<()> {
        self.profile_mut(pid)?.set_group(gid, members);
        Ok(())
    }

    /// Remove every member and group of profile `pid`.
    fn profile_clear(&mut self, pid: u32) -> PyResult<()> {
        self.profile_mut(pid)?.clear();
        Ok(())
    }

    /// Number of blocks.
    fn __len__(&self) -> usize {
        self.blocks.len()
    }

    /// The callbacks (closures, the state's bound methods) may lead back to the pipeline that
    /// owns this program: the cyclic GC must see them.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for cb in &self.callbacks {
            visit.call(cb)?;
        }
        if let Some(f) = &self.on_clone {
            visit.call(f)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.callbacks.clear();
        self.on_clone = None;
        self.blocks.clear();
    }
}

#[allow(clippy::too_many_arguments)]
fn exec<const OWNED: bool>(
    code: &[Ins],
    headers: &[Header],
    lists: &[Vec<(u32, u32)>],
    (callbacks, arglists): (&[Py<PyAny>], &[Vec<u32>]),
    tabs: &mut Stores<'_>,
    st: &mut Run<'_, '_, OWNED>,
    data: &[u8],
    mut cursor: u64,
    (too_short, timeout, max_steps): (i64, i64, u64),
    out: &mut Vec<u8>,
) -> PyResult<(i64, u64)> {
    let mut pc = 0usize;
    let mut steps = 0u64;
    let avail = data.len() as u64 * 8;
    while pc < code.len() {
        let ins = &code[pc];
        pc += 1;
        match *ins {
            Ins::Const { dst, imm } => st.set(dst, imm),
            Ins::Mov { dst, src } => {
                let v = st.get(src)?;
                st.set(dst, v)
            }
            Ins::Bin {
                op,
                dst,
                a,
                b,
                mask,
            } => {
                let (x, y) = (st.get(a)?, st.get(b)?);
                st.set(dst, op.apply(x, y, mask))
            }
            Ins::Not { dst, a, mask } => {
                let v = !st.get(a)? & mask;
                st.set(dst, v)
            }
            Ins::LNot { dst, a } => {
                let v = (st.get(a)? == 0) as u64;
                st.set(dst, v)
            }
            Ins::Neg { dst, a, mask } => {
                let v = st.get(a)?.wrapping_neg() & mask;
                st.set(dst, v)
            }
            Ins::BinK {
                op,
                dst,
                a,
                k,
                imm,
                mask,
            } => {
                st.set(k, imm);
                let v = op.apply(st.get(a)?, imm, mask);
                st.set(dst, v)
            }
            Ins::BinJ {
                op,
                dst,
                a,
                b,
                mask,
                on_zero,
                target,
            } => {
                let (x, y) = (st.get(a)?, st.get(b)?);
                let v = op.apply(x, y, mask);
                st.set(dst, v);
                if (v == 0) == on_zero {
                    pc = target as usize
                }
            }
            Ins::BinKJ {
                op,
                dst,
                a,
                k,
                imm,
                mask,
                on_zero,
                target,
            } => {
                st.set(k, imm);
                let v = op.apply(st.get(a)?, imm, mask);
                st.set(dst, v);
                if (v == 0) == on_zero {
                    pc = target as usize
                }
            }
            Ins::BinI {
                op,
                dst,
                a,
                imm,
                mask,
            } => {
                let v = op.apply(st.get(a)?, imm, mask);
                st.set(dst, v)
            }
            Ins::CmpJ {
                op,
                a,
                b,
                mask,
                on_zero,
                target,
            } => {
                let (x, y) = (st.get(a)?, st.get(b)?);
                if (op.apply(x, y, mask) == 0) == on_zero {
                    pc = target as usize
                }
            }
            Ins::CmpKJ {
                op,
                a,
                imm,
                mask,
                on_zero,
                target,
            } => {
                if (op.apply(st.get(a)?, imm, mask) == 0) == on_zero {
                    pc = target as usize
                }
            }
            Ins::Movs(n) => {
                for pair in arglists[n as usize].chunks_exact(2) {
                    let v = st.get(pair[1])?;
                    st.set(pair[0], v)
                }
            }
            Ins::Jmp(t) => pc = t as usize,
            Ins::Jz { cond, target } => {
                if st.get(cond)? == 0 {
                    pc = target as usize
                }
            }
            Ins::Jnz { cond, target } => {
                if st.get(cond)? != 0 {
                    pc = target as usize
                }
            }
            Ins::Extract(h) => {
                let h = &headers[h as usize];
                if cursor + h.width > avail {
                    return Ok((too_short, cursor));
                }
                cursor = extract(h, st, data, cursor);
            }
            Ins::Emit(h) => {
                // a header that is not valid emits nothing: tested here, without the call
                let h = &headers[h as usize];
                if st.get(h.valid)? != 0 {
                    emit(h, st, out)?
                }
            }
            Ins::Reject(code) => return Ok((code, cursor)),
            Ins::End => return Ok((STATUS_END, cursor)),
            Ins::Step => {
                steps += 1;
                if steps > max_steps {
                    return Ok((timeout, cursor));
                }
            }
            Ins::Csum16 { dst, list } => {
                let v = checksum(&lists[list as usize], st)?;
                st.set(dst, v);
            }
            Ins::Table { t, dsts, args } => tabs.apply(
                t as usize,
                &arglists[args as usize],
                &arglists[dsts as usize],
                lists,
                st,
            )?,
            Ins::RegRead { dst, c, idx } => {
                let i = st.get(idx)? as usize;
                let v = p4cells::get(&tabs.cells[c as usize].0, i).unwrap_or(0);
                st.set(dst, v)
            }
            Ins::RegWrite { c, idx, val } => {
                let (i, v) = (st.get(idx)? as usize, st.get(val)?);
                let (cells, mask) = &tabs.cells[c as usize];
                p4cells::set(cells, i, v & mask);
            }
            Ins::Clone {
                kind,
                session,
                list,
            } => {
                tabs.req.clone = Some((kind, st.get(session)?, list));
            }
            Ins::Truncate(r) => {
                let v = st.get(r)?;
                tabs.req.truncate = Some(tabs.req.truncate.map_or(v, |t| t.min(v)));
            }
            Ins::Preserve { kind, list } => {
                tabs.req.preserve[kind as usize] = Some(list);
            }
            Ins::Count { pk, by, idx, len } => {
                let (i, n) = (st.get(idx)? as usize, st.get(len)?);
                p4cells::update(&tabs.cells[pk as usize].0, i, |x| x.wrapping_add(1));
                p4cells::update(&tabs.cells[by as usize].0, i, |x| x.wrapping_add(n));
            }
            Ins::Py(n) => call_py(&callbacks[n as usize], tabs, st)?,
            Ins::Call { f, dsts, args } => call(
                &callbacks[f as usize],
                &arglists[args as usize],
                &arglists[dsts as usize],
                st,
            )?,
        }
    }
    Ok((STATUS_END, cursor))
}

// The heavier instructions' bodies, apart from `exec`'s loop. Why not inlined: the loop's
// dispatch and its one-line instructions run for every instruction, and with every body
// inlined its registers were spilled around the bodies' calls and loops (the program counter
// and the code's address reloaded from the stack at every dispatch, a quarter of the VM's time).

/// Extract header `h` at bit `cursor` (the caller checked the length): the cursor after it.
#[inline(never)]
fn extract<const OWNED: bool>(
    h: &Header,
    st: &mut Run<'_, '_, OWNED>,
    data: &[u8],
    cursor: u64,
) -> u64 {
    let mut pos = cursor;
    for &(r, w) in &h.fields {
        st.set(r, read_bits(data, pos, w));
        pos += w as u64;
    }
    st.set(h.valid, 1);
    pos
}

/// Emit header `h` (valid: the caller tested it) into `out`.
#[inline(never)]
fn emit<const OWNED: bool>(
    h: &Header,
    st: &mut Run<'_, '_, OWNED>,
    out: &mut Vec<u8>,
) -> PyResult<()> {
    let mut bw = BitWriter {
        out,
        acc: 0,
        bits: 0,
    };
    for &(r, w) in &h.fields {
        let v = st.get(r)?;
        bw.push(v, w);
    }
    Ok(())
}

/// `csum16` of field list `list`'s registers.
#[inline(never)]
fn checksum<const OWNED: bool>(list: &[(u32, u32)], st: &mut Run<'_, '_, OWNED>) -> PyResult<u64> {
    let mut sum = Csum16::default();
    for &(r, w) in list {
        sum.push(st.get(r)?, w);
    }
    Ok(sum.finish())
}

/// `Ins::Py`: the closure `f` over the PHV list.
#[inline(never)]
fn call_py<const OWNED: bool>(
    f: &Py<PyAny>,
    tabs: &mut Stores<'_>,
    st: &mut Run<'_, '_, OWNED>,
) -> PyResult<()> {
    st.flush(true)?;
    if let Some(h) = tabs.on_clone {
        tabs.req.hand_over(h, st)?;
    }
    f.call1(st.py, (st.list()?,))?;
    Ok(())
}

/// `Ins::Call`: `dsts <- f(*args)`.
#[inline(never)]
fn call<const OWNED: bool>(
    f: &Py<PyAny>,
    regs: &[u32],
    dsts: &[u32],
    st: &mut Run<'_, '_, OWNED>,
) -> PyResult<()> {
    let mut vals = Vec::with_capacity(regs.len());
    for &r in regs {
        vals.push(st.get(r)?);
    }
    let res = f.call1(st.py, PyTuple::new(st.py, vals)?)?;
    let bad = |_: PyErr| {
        PyValueError::new_err("P4Program: a call returned other than its bit<=64> values")
    };
    match dsts {
        [] => {}
        [d] => {
            let v = res.extract::<u64>(st.py).map_err(bad)?;
            st.set(*d, v);
        }
        ds => {
            let vs = res.extract::<Vec<u64>>(st.py).map_err(bad)?;
            if vs.len() != ds.len() {
                return Err(PyValueError::new_err(
                    "P4Program: a call returned too few or many values",
                ));
            }
            for (&d, v) in ds.iter().zip(vs) {
                st.set(d, v);
            }
        }
    }
    Ok(())
}

/// The bit concatenation of a field list (MSB first), padded with zero bits to `pad` bits.
fn pack_list<const OWNED: bool>(
    st: &mut Run<'_, '_, OWNED>,
    list: &[(u32, u32)],
    pad: u32,
) -> PyResult<Vec<u8>> {
    let mut bytes = Vec::with_capacity(64);
    let mut bw = BitWriter {
        out: &mut bytes,
        acc: 0,
        bits: 0,
    };
    let mut n = 0u64;
    for &(r, w) in list {
        let v = st.get(r)?;
        bw.push(v, w);
        n += w as u64;
    }
    bw.pad(pad, n);
    Ok(bytes)
}

/// A selector's hash of its field list, cut to its width (as tables.py's `_selector_hash`).
fn selector_hash<const OWNED: bool>(
    st: &mut Run<'_, '_, OWNED>,
    lists: &[Vec<(u32, u32)>],
    sel: Selector,
) -> PyResult<u64> {
    let list = &lists[sel.list as usize];
    let h = match sel.algo {
        p4tables::ALGO_CRC16 => p4tables::crc16(&pack_list(st, list, 8)?),
        p4tables::ALGO_CRC32 => p4tables::crc32(&pack_list(st, list, 8)?),
        _ => csum16(&pack_list(st, list, 16)?),
    };
    Ok(if sel.width > 0 {
        h & mask_of(sel.width as u64)
    } else {
        h
    })
}

/// The tables and profiles a block applies, and the scratch space of a lookup.
struct Stores<'a> {
    tables: &'a mut [Table],
    profiles: &'a [Profile],
    keybuf: &'a mut Vec<u64>,
    maskbuf: &'a mut Vec<u64>,
    cells: &'a [(Shared, u64)],
    on_clone: Option<&'a Py<PyAny>>,
    req: Requests,
}

impl Requests {
    pub(crate) fn into_result(self) -> ControlResult {
        match self {
            Requests {
                clone: None,
                truncate: None,
                preserve: [None, None],
            } => None,
            r => Some((r.clone, r.truncate, r.preserve[0], r.preserve[1])),
        }
    }

    /// Hand the pending clone, resubmit and recirculate requests to `f` (`on_clone(phv, kind,
    /// session, list)`, kinds 0 I2E, 1 E2E, 2 resubmit, 3 recirculate) before a closure runs:
    /// the closure may make the same request, and the last one of the block wins.
    fn hand_over<const OWNED: bool>(
        &mut self,
        f: &Py<PyAny>,
        st: &Run<'_, '_, OWNED>,
    ) -> PyResult<()> {
        if let Some((k, s, l)) = self.clone.take() {
            f.call1(st.py, (st.list()?, k, s, l))?;
        }
        for (i, p) in self.preserve.iter_mut().enumerate() {
            if let Some(l) = p.take() {
                f.call1(st.py, (st.list()?, 2 + i as u32, 0u64, l))?;
            }
        }
        Ok(())
    }
}

impl Stores<'_> {
    #[inline(never)]
    /// One apply: the entry the key hits (the default entry on a miss, or when an indirect
    /// entry resolves to nothing: an empty group), its action id and data into `dsts`.
    fn apply<const OWNED: bool>(
        &mut self,
        t: usize,
        keys: &[u32],
        dsts: &[u32],
        lists: &[Vec<(u32, u32)>],
        st: &mut Run<'_, '_, OWNED>,
    ) -> PyResult<()> {
        self.keybuf.clear();
        for &r in keys {
            let v = st.get(r)?;
            self.keybuf.push(v);
        }
        let table = &mut self.tables[t];
        table.index();
        let table = &*table;
        let found = table.lookup(self.keybuf, self.maskbuf);
        let chosen = match (found, table.profile) {
            (None, _) => None,
            (Some(act), Some(pi)) => {
                let sel = table.selector;
                self.profiles[pi].choose(act, || match sel {
                    Some(s) => selector_hash(st, lists, s),
                    None => Ok(0),
                })?
            }
            (Some(Act::Direct(a, p)), None) => Some((*a, p.as_slice())),
            (Some(_), None) => None,
        };
        let hit = chosen.is_some();
        let (aid, params) = match chosen {
            Some(x) => x,
            None => match &table.default {
                Act::Direct(a, p) => (*a, p.as_slice()),
                _ => (0, &[][..]),
            },
        };
        st.set(dsts[0], hit as u64);
        st.set(dsts[1], aid as u64);
        for (i, &d) in dsts[2..].iter().enumerate() {
            st.set(d, params.get(i).copied().unwrap_or(0));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits `[pos, pos + n)` of `data`, one at a time: the reference of `read_bits`.
    fn bits_one_by_one(data: &[u8], pos: u64, n: u32) -> u64 {
        (pos..pos + n as u64).fold(0u64, |a, p| {
            (a << 1) | ((data[(p >> 3) as usize] >> (7 - (p & 7))) & 1) as u64
        })
    }

    /// `read_bits` and `BitWriter` against a bit-at-a-time reference, on fields of every width from
    /// 0 to 64 at every offset (the byte-aligned fast paths and the general path alike), values with
    /// bits above their width set too; `Csum16` of the same fields against `csum16` of their bytes.
    #[test]
    fn header_bits_read_and_written_as_one_bit_at_a_time() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let data: Vec<u8> = (0..40).map(|_| next() as u8).collect();
        for pos in 0..64u64 {
            for n in 0..=64u32 {
                assert_eq!(
                    read_bits(&data, pos, n),
                    bits_one_by_one(&data, pos, n),
                    "pos {pos} n {n}"
                );
            }
        }
        // ... and up to the data's last bit (fewer than eight bytes left to read)
        let end = data.len() as u64 * 8;
        for pos in end - 80..=end {
            for n in 0..=64u32.min((end - pos) as u32) {
                assert_eq!(
                    read_bits(&data, pos, n),
                    bits_one_by_one(&data, pos, n),
                    "pos {pos} n {n}"
                );
            }
        }
        for round in 0..400u32 {
            let mut fields = Vec::new();
            for i in 0..(round % 9 + 1) {
                let v = next();
                // mostly whole bytes and 16-bit words (the fast paths), some odd widths between
                let w = match (v >> 60) % 4 {
                    0 => ((v >> 40) % 65) as u32,
                    1 => 16,
                    _ => 8 * ((v >> 40) % 9) as u32,
                };
                fields.push((v, if i % 5 == 4 { 3 } else { w }));
            }
            let mut bytes = Vec::new();
            let mut bw = BitWriter {
                out: &mut bytes,
                acc: 0,
                bits: 0,
            };
            let mut sum = Csum16::default();
            let mut bits: Vec<u8> = Vec::new();
            let mut written = 0u64;
            for &(v, w) in &fields {
                bw.push(v, w);
                sum.push(v, w);
                bits.extend((0..w).rev().map(|k| ((v >> k) & 1) as u8));
                written += w as u64;
            }
            bw.pad(16, written);
            bits.resize(bits.len().div_ceil(16) * 16, 0);
            let want: Vec<u8> = bits
                .chunks(8)
                .map(|c| c.iter().fold(0u8, |a, &b| (a << 1) | b))
                .collect();
            assert_eq!(bytes, want, "{fields:?}");
            assert_eq!(sum.finish(), csum16(&want), "{fields:?}");
        }
    }

    /// `Csum16` sums the words `csum16` sums of the packed, padded list, for lists of fields of
    /// every width from 1 to 64 bits (values with bits above their width set too).
    #[test]
    fn streamed_checksum_is_the_packed_one() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for n in 0..200u32 {
            let mut fields = Vec::new();
            for _ in 0..(n % 13 + 1) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                fields.push((x, (x >> 58) as u32 + 1));
            }
            let mut bytes = Vec::new();
            let mut bw = BitWriter {
                out: &mut bytes,
                acc: 0,
                bits: 0,
            };
            let mut sum = Csum16::default();
            let mut written = 0u64;
            for &(v, w) in &fields {
                bw.push(v, w);
                sum.push(v, w);
                written += w as u64;
            }
            bw.pad(16, written);
            assert_eq!(sum.finish(), csum16(&bytes), "{fields:?}");
        }
    }
}
