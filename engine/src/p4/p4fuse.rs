//! Load-time rewriting of a P4 VM block into fewer, larger instructions, with the same effect.
//!
//! Why: the VM's cost per packet is mostly its dispatch (one indirect jump per instruction, and
//! the register reads around it), and the emitter's code is made of short fixed patterns: a
//! constant into a temporary that the next instruction's right operand reads (`t <- 4; d <- a
//! != t`), a comparison whose result the next instruction branches on, runs of moves (an
//! action's parameters into the PHV), jumps to jumps. Each pattern becomes one instruction
//! that does exactly what the sequence did, every register write included (a fused temporary
//! is still written: nothing here reasons about which registers are read later), in the same
//! order. A sequence is fused only when no jump lands inside it, so no path can enter it
//! half-way; jumps are then renumbered. Jump threading follows a jump to a `Jmp` on to that
//! `Jmp`'s target, which is where execution would go next anyway.
//!
//! Writes nothing reads: where every block of the program writes each temporary before it reads
//! it (on every path: the emitter's temporaries hold one expression's value each), a temporary
//! of a block is that block's alone, so one that the block writes once and reads once, in the
//! sequence being fused, need not be written at all. Then a constant or an operation whose
//! temporary only the next `Mov` reads is written straight to the move's destination, and a
//! fused constant or branch condition is left in the instruction (`BinI`, `CmpJ`, `CmpKJ`). Why:
//! after the patterns above, the emitter's `t <- 0; d <- t` (an assignment) and `t <- a == 4;
//! if t` (a condition) still cost a dispatch or a register write each, on every packet. PHV
//! slots, and registers that headers or field lists name, are always written.

use crate::p4ins::Ins;

/// The registers `ins` reads and writes as operands or through the argument lists it names;
/// None for a fused form (the analysis runs on a loader's code only). Headers and field lists
/// are apart (their registers are never left unwritten).
fn operands(ins: &Ins, arglists: &[Vec<u32>]) -> Option<(Vec<u32>, Vec<u32>)> {
    let (mut r, mut w) = (Vec::new(), Vec::new());
    match *ins {
        Ins::Const { dst, .. } | Ins::Csum16 { dst, .. } => w.push(dst),
        Ins::Mov { dst, src } => {
            r.push(src);
            w.push(dst);
        }
        Ins::Bin { dst, a, b, .. } => {
            r.extend([a, b]);
            w.push(dst);
        }
        Ins::Not { dst, a, .. } | Ins::LNot { dst, a } | Ins::Neg { dst, a, .. } => {
            r.push(a);
            w.push(dst);
        }
        Ins::Jz { cond, .. } | Ins::Jnz { cond, .. } => r.push(cond),
        Ins::Table { dsts, args, .. } | Ins::Call { dsts, args, .. } => {
            r.extend(arglists.get(args as usize)?);
            w.extend(arglists.get(dsts as usize)?);
        }
        Ins::RegRead { dst, idx, .. } => {
            r.push(idx);
            w.push(dst);
        }
        Ins::RegWrite { idx, val, .. } => r.extend([idx, val]),
        Ins::Count { idx, len, .. } => r.extend([idx, len]),
        Ins::Clone { session, .. } => r.push(session),
        Ins::Truncate(x) => r.push(x),
        Ins::Jmp(_)
        | Ins::Extract(_)
        | Ins::Emit(_)
        | Ins::Reject(_)
        | Ins::End
        | Ins::Step
        | Ins::Py(_)
        | Ins::Preserve { .. } => {}
        Ins::BinK { .. }
        | Ins::BinJ { .. }
        | Ins::BinKJ { .. }
        | Ins::Movs(_)
        | Ins::BinI { .. }
        | Ins::CmpJ { .. }
        | Ins::CmpKJ { .. } => return None,
    }
    Some((r, w))
}

/// Where execution may go after instruction `i` (`n`: past the end).
fn successors(code: &[Ins], i: usize) -> Vec<usize> {
    let n = code.len();
    match code[i] {
        Ins::Jmp(t) => vec![(t as usize).min(n)],
        Ins::Jz { target, .. } | Ins::Jnz { target, .. } => vec![i + 1, (target as usize).min(n)],
        Ins::Reject(_) | Ins::End => vec![],
        _ => vec![i + 1],
    }
}

/// Per block, per register: a temporary (at or past `nslots`, named by no header or field list,
/// `pinned`) that the block writes once and reads once; all false in every block when some block
/// may read a temporary it has not written on the way there (its value would be another run's).
pub(crate) fn read_once(
    blocks: &[Vec<Ins>],
    arglists: &[Vec<u32>],
    nslots: usize,
    pinned: &[bool],
) -> Vec<Vec<bool>> {
    let nregs = pinned.len();
    let none = || blocks.iter().map(|_| Vec::new()).collect();
    let temp = |r: u32| (r as usize) >= nslots && (r as usize) < nregs && !pinned[r as usize];
    let mut out = Vec::with_capacity(blocks.len());
    for code in blocks {
        let n = code.len();
        let mut ops = Vec::with_capacity(n);
        for ins in code {
            match operands(ins, arglists) {
                Some(x) => ops.push(x),
                None => return none(),
            }
        }
        // written[i]: the temporaries written on every path from the block's start to `i`
        // (a must-analysis over the jumps; `n` is the block's end)
        let words = nregs.div_ceil(64);
        let mut written = vec![vec![u64::MAX; words]; n + 1];
        written[0] = vec![0; words];
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                let mut after = written[i].clone();
                for &r in &ops[i].1 {
                    if (r as usize) < nregs {
                        after[r as usize / 64] |= 1 << (r % 64);
                    }
                }
                for j in successors(code, i) {
                    if j == 0 {
                        continue; // the entry's set stays empty: it is reached with nothing written
                    }
                    for (w, a) in written[j].iter_mut().zip(&after) {
                        let v = *w & a;
                        if v != *w {
                            *w = v;
                            changed = true;
                        }
                    }
                }
            }
        }
        let (mut reads, mut writes) = (vec![0u32; nregs], vec![0u32; nregs]);
        for (i, (r, w)) in ops.iter().enumerate() {
            for &x in r {
                if temp(x) {
                    if written[i][x as usize / 64] & (1 << (x % 64)) == 0 {
                        return none();
                    }
                    reads[x as usize] += 1;
                }
            }
            for &x in w {
                if temp(x) {
                    writes[x as usize] += 1;
                }
            }
        }
        out.push(
            (0..nregs)
                .map(|r| reads[r] == 1 && writes[r] == 1)
                .collect(),
        );
    }
    out
}

/// The jump target of an instruction, if it has one.
fn target_of(ins: &Ins) -> Option<u32> {
    match *ins {
        Ins::Jmp(t) | Ins::Jz { target: t, .. } | Ins::Jnz { target: t, .. } => Some(t),
        Ins::BinJ { target: t, .. } | Ins::BinKJ { target: t, .. } => Some(t),
        Ins::CmpJ { target: t, .. } | Ins::CmpKJ { target: t, .. } => Some(t),
        _ => None,
    }
}

fn set_target(ins: &mut Ins, to: u32) {
    match ins {
        Ins::Jmp(t)
        | Ins::Jz { target: t, .. }
        | Ins::Jnz { target: t, .. }
        | Ins::BinJ { target: t, .. }
        | Ins::BinKJ { target: t, .. }
        | Ins::CmpJ { target: t, .. }
        | Ins::CmpKJ { target: t, .. } => *t = to,
        _ => {}
    }
}

/// Follow `t` through unconditional jumps (at most `n` hops: a cycle of jumps stays a cycle).
fn thread(code: &[Ins], mut t: u32) -> u32 {
    for _ in 0..code.len() {
        match code.get(t as usize) {
            Some(Ins::Jmp(u)) if *u != t => t = *u,
            _ => break,
        }
    }
    t
}

/// A branch on register `cond`: (on_zero, target) for `Jz` (true) or `Jnz` (false).
fn branch_on(ins: &Ins, cond: u32) -> Option<(bool, u32)> {
    match *ins {
        Ins::Jz { cond: c, target } if c == cond => Some((true, target)),
        Ins::Jnz { cond: c, target } if c == cond => Some((false, target)),
        _ => None,
    }
}

/// The fused instruction starting at `i` and how many instructions it replaces (1: none fused).
/// `inner(j)`: instruction `j` may be the second or later of a fused sequence (no jump lands
/// on it, and it exists).
fn fuse_at(
    code: &[Ins],
    i: usize,
    inner: impl Fn(usize) -> bool,
    once: impl Fn(u32) -> bool,
    arglists: &mut Vec<Vec<u32>>,
) -> (Ins, usize) {
    match (&code[i], code.get(i + 1)) {
        (&Ins::Const { dst: t, imm }, Some(&Ins::Mov { dst, src }))
            if src == t && once(t) && inner(i + 1) =>
        {
            (Ins::Const { dst, imm }, 2)
        }
        (
            &Ins::Bin {
                op,
                dst: t,
                a,
                b,
                mask,
            },
            Some(&Ins::Mov { dst, src }),
        ) if src == t && once(t) && inner(i + 1) => (
            Ins::Bin {
                op,
                dst,
                a,
                b,
                mask,
            },
            2,
        ),
        (
            &Ins::Const { dst: k, imm },
            Some(&Ins::Bin {
                op,
                dst,
                a,
                b,
                mask,
            }),
        ) if b == k && a != k && inner(i + 1) => {
            if inner(i + 2) {
                if let Some((on_zero, target)) = branch_on(&code[i + 2], dst) {
                    if once(k) && once(dst) {
                        let ins = Ins::CmpKJ {
                            op,
                            a,
                            imm,
                            mask,
                            on_zero,
                            target,
                        };
                        return (ins, 3);
                    }
                    let ins = Ins::BinKJ {
                        op,
                        dst,
                        a,
                        k,
                        imm,
                        mask,
                        on_zero,
                        target,
                    };
                    return (ins, 3);
                }
            }
            if once(k) {
                // and its result only the next move reads: straight to that move's destination
                if let (Some(&Ins::Mov { dst: to, src }), true) = (code.get(i + 2), inner(i + 2)) {
                    if src == dst && once(dst) {
                        let ins = Ins::BinI {
                            op,
                            dst: to,
                            a,
                            imm,
                            mask,
                        };
                        return (ins, 3);
                    }
                }
                return (
                    Ins::BinI {
                        op,
                        dst,
                        a,
                        imm,
                        mask,
                    },
                    2,
                );
            }
            let ins = Ins::BinK {
                op,
                dst,
                a,
                k,
                imm,
                mask,
            };
            (ins, 2)
        }
        (
            &Ins::Bin {
                op,
                dst,
                a,
                b,
                mask,
            },
            Some(next),
        ) if inner(i + 1) => match branch_on(next, dst) {
            Some((on_zero, target)) if once(dst) => {
                let ins = Ins::CmpJ {
                    op,
                    a,
                    b,
                    mask,
                    on_zero,
                    target,
                };
                (ins, 2)
            }
            Some((on_zero, target)) => {
                let ins = Ins::BinJ {
                    op,
                    dst,
                    a,
                    b,
                    mask,
                    on_zero,
                    target,
                };
                (ins, 2)
            }
            None => (code[i].clone(), 1),
        },
        (&Ins::Mov { .. }, Some(Ins::Mov { .. })) if inner(i + 1) => {
            let mut run = Vec::new();
            let mut j = i;
            while let Some(&Ins::Mov { dst, src }) = code.get(j) {
                if j > i && !inner(j) {
                    break;
                }
                run.extend([dst, src]);
                j += 1;
            }
            arglists.push(run);
            (Ins::Movs((arglists.len() - 1) as u32), j - i)
        }
        (ins, _) => (ins.clone(), 1),
    }
}

/// `code` rewritten (see the module's doc); `movs` gets the move runs `Ins::Movs` names;
/// `once`: `read_once`'s for this block (empty: every register is written).
pub(crate) fn fuse(code: &[Ins], arglists: &mut Vec<Vec<u32>>, once: &[bool]) -> Vec<Ins> {
    let n = code.len();
    let mut code = code.to_vec();
    let threaded: Vec<Option<u32>> = code
        .iter()
        .map(|ins| target_of(ins).map(|t| thread(&code, t)))
        .collect();
    for (ins, t) in code.iter_mut().zip(threaded) {
        if let Some(t) = t {
            set_target(ins, t);
        }
    }
    // A jump to the block's end, or to an instruction that ends it, ends it there: one dispatch
    // fewer on every path through an if's then-branch or an action's case.
    for i in 0..n {
        if let Ins::Jmp(t) = code[i] {
            match code.get(t as usize) {
                None => code[i] = Ins::End,
                Some(end @ (Ins::End | Ins::Reject(_))) => code[i] = end.clone(),
                _ => {}
            }
        }
    }
    let mut landed = vec![false; n + 1];
    for ins in &code {
        if let Some(t) = target_of(ins) {
            landed[t as usize] = true;
        }
    }
    let inner = |j: usize| j < n && !landed[j];
    let mut out = Vec::with_capacity(n);
    let mut new_index = vec![0u32; n + 1];
    let mut i = 0;
    while i < n {
        let (ins, used) = fuse_at(
            &code,
            i,
            inner,
            |r| once.get(r as usize).copied().unwrap_or(false),
            arglists,
        );
        for slot in &mut new_index[i..i + used] {
            *slot = out.len() as u32;
        }
        out.push(ins);
        i += used;
    }
    new_index[n] = out.len() as u32;
    for ins in &mut out {
        if let Some(t) = target_of(ins) {
            set_target(ins, new_index[t as usize]);
        }
    }
    out
}
