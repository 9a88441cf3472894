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

use crate::p4ins::Ins;

/// The jump target of an instruction, if it has one.
fn target_of(ins: &Ins) -> Option<u32> {
    match *ins {
        Ins::Jmp(t) | Ins::Jz { target: t, .. } | Ins::Jnz { target: t, .. } => Some(t),
        Ins::BinJ { target: t, .. } | Ins::BinKJ { target: t, .. } => Some(t),
        _ => None,
    }
}

fn set_target(ins: &mut Ins, to: u32) {
    match ins {
        Ins::Jmp(t)
        | Ins::Jz { target: t, .. }
        | Ins::Jnz { target: t, .. }
        | Ins::BinJ { target: t, .. }
        | Ins::BinKJ { target: t, .. } => *t = to,
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
    arglists: &mut Vec<Vec<u32>>,
) -> (Ins, usize) {
    match (&code[i], code.get(i + 1)) {
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

/// `code` rewritten (see the module's doc); `movs` gets the move runs `Ins::Movs` names.
pub(crate) fn fuse(code: &[Ins], arglists: &mut Vec<Vec<u32>>) -> Vec<Ins> {
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
        let (ins, used) = fuse_at(&code, i, inner, arglists);
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
