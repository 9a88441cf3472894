//! The P4 VM's instruction set: what a loader produces (`p4vm`'s `decode`), what the load-time
//! rewriting fuses (`p4fuse`) and what `p4vm` runs. Its own module so that both use it without
//! either using the other.

#[derive(Clone, Copy, Debug)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub(crate) fn from_code(c: u64) -> Option<Self> {
        use BinOp::*;
        Some(match c {
            0 => Add,
            1 => Sub,
            2 => Mul,
            3 => And,
            4 => Or,
            5 => Xor,
            6 => Shl,
            7 => Shr,
            8 => Eq,
            9 => Ne,
            10 => Lt,
            11 => Le,
            12 => Gt,
            13 => Ge,
            _ => return None,
        })
    }

    pub(crate) fn apply(self, a: u64, b: u64, mask: u64) -> u64 {
        use BinOp::*;
        match self {
            Add => a.wrapping_add(b) & mask,
            Sub => a.wrapping_sub(b) & mask,
            Mul => a.wrapping_mul(b) & mask,
            And => a & b,
            Or => a | b,
            Xor => a ^ b,
            Shl => a.checked_shl(b.min(64) as u32).unwrap_or(0) & mask,
            Shr => a.checked_shr(b.min(64) as u32).unwrap_or(0),
            Eq => (a == b) as u64,
            Ne => (a != b) as u64,
            Lt => (a < b) as u64,
            Le => (a <= b) as u64,
            Gt => (a > b) as u64,
            Ge => (a >= b) as u64,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Ins {
    Const {
        dst: u32,
        imm: u64,
    },
    Mov {
        dst: u32,
        src: u32,
    },
    Bin {
        op: BinOp,
        dst: u32,
        a: u32,
        b: u32,
        mask: u64,
    },
    /// `~a & mask`
    Not {
        dst: u32,
        a: u32,
        mask: u64,
    },
    /// `a == 0`
    LNot {
        dst: u32,
        a: u32,
    },
    /// `-a & mask`
    Neg {
        dst: u32,
        a: u32,
        mask: u64,
    },
    Jmp(u32),
    Jz {
        cond: u32,
        target: u32,
    },
    Jnz {
        cond: u32,
        target: u32,
    },
    Extract(u32),
    Emit(u32),
    /// End the block with this status (an error code, or STATUS_REJECT).
    Reject(i64),
    End,
    /// One parser state transition: ParserTimeout past `max_steps`.
    Step,
    /// `dst <- csum16(concatenation of field list list)`
    Csum16 {
        dst: u32,
        list: u32,
    },
    /// Call Python callback `n` with the PHV list (written registers flushed first, every PHV
    /// register read again afterwards): the statements the emitter does not translate yet run
    /// through the closures that compiled them.
    Py(u32),
    /// `dsts <- callbacks[f](*args)` with the argument registers' values (ints): state held
    /// in Python (register arrays, counters, the tables' entries) without touching the PHV
    /// list. No destination: the result is dropped; one: an int; more: a tuple of as many.
    Call {
        f: u32,
        dsts: u32,
        args: u32,
    },
    /// Apply table `t` (an index into the program's tables) with the key registers `args`:
    /// `dsts` get hit (0/1), the action id (0: none) and the action data, zero-padded.
    Table {
        t: u32,
        dsts: u32,
        args: u32,
    },
    /// `dst <- cells[c][idx]`, 0 past the end (v1model's register read).
    RegRead {
        dst: u32,
        c: u32,
        idx: u32,
    },
    /// `cells[c][idx] <- val` wrapped to the width; past the end: nothing.
    RegWrite {
        c: u32,
        idx: u32,
        val: u32,
    },
    /// `packets[idx] += 1; bytes[idx] += len` (cells `pk`, `by`); past the end: nothing.
    Count {
        pk: u32,
        by: u32,
        idx: u32,
        len: u32,
    },
    /// A clone request (kind 0 I2E, 1 E2E; the session register; the field list or -1):
    /// the block's result, the last one of the block wins.
    Clone {
        kind: u32,
        session: u32,
        list: i64,
    },
    /// A truncate request: the block's result keeps the smallest length.
    Truncate(u32),
    /// A resubmit (kind 0) or recirculate (kind 1) request keeping field list `list`: the
    /// block's result, the last one of the block wins.
    Preserve {
        kind: u32,
        list: i64,
    },
    // The fused forms below come only from p4fuse.rs (at load, after validation), never from
    // a loader: each does what the sequence it replaces did.
    /// `Const k imm; Bin op dst a k` (with `a != k`).
    BinK {
        op: BinOp,
        dst: u32,
        a: u32,
        k: u32,
        imm: u64,
        mask: u64,
    },
    /// `Bin op dst a b; Jz dst target` (`on_zero`) or `Jnz dst target`.
    BinJ {
        op: BinOp,
        dst: u32,
        a: u32,
        b: u32,
        mask: u64,
        on_zero: bool,
        target: u32,
    },
    /// `Const k imm; Bin op dst a k; Jz dst target` (`on_zero`) or `Jnz dst target`.
    BinKJ {
        op: BinOp,
        dst: u32,
        a: u32,
        k: u32,
        imm: u64,
        mask: u64,
        on_zero: bool,
        target: u32,
    },
    /// A run of `Mov`s, in order: `arglists[n]` is (destination, source) pairs, flattened.
    Movs(u32),
    // The forms below leave out writes no instruction reads: each replaces a fused form whose
    // temporary (the constant's `k`, the branch's `dst`) nothing but the fused sequence itself
    // reads (p4fuse.rs's liveness: only where every block writes each temporary before it reads it).
    /// `BinK` without the write of `k`: `dst <- a op imm`.
    BinI {
        op: BinOp,
        dst: u32,
        a: u32,
        imm: u64,
        mask: u64,
    },
    /// `BinJ` without the write of `dst`: branch on `a op b`.
    CmpJ {
        op: BinOp,
        a: u32,
        b: u32,
        mask: u64,
        on_zero: bool,
        target: u32,
    },
    /// `BinKJ` without the writes of `k` and `dst`: branch on `a op imm`.
    CmpKJ {
        op: BinOp,
        a: u32,
        imm: u64,
        mask: u64,
        on_zero: bool,
        target: u32,
    },
}
