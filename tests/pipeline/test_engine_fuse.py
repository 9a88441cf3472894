"""The P4 VM's load-time fusion (engine/src/p4/p4fuse.rs) against the same blocks run as given:
random blocks made of the patterns it fuses (a constant into a temporary read by the next
operation, an operation whose result the next instruction branches on, runs of moves, jumps to
jumps), with jumps landing anywhere, including inside those patterns, give the same status,
cursor, PHV and emitted bytes either way."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.pipeline.vm_blocks import (
    BIN,
    CONST,
    EMIT,
    END,
    EXTRACT,
    JMP,
    JNZ,
    JZ,
    LNOT,
    MOV,
    NBINOPS,
    NEG,
    NOT,
    NSLOTS,
    REJECT,
    STEP,
)
from tests.pipeline.vm_blocks import program as vm_program

NTEMPS = 4


@st.composite
def patterns(draw: st.DrawFn, at: int, size: int) -> list[tuple]:
    """One piece of a block starting at index ``at`` of a block of ``size`` instructions:
    mostly the shapes the fusion looks for, jumps forward only (every block ends)."""
    reg = st.integers(0, NSLOTS + NTEMPS - 1)
    width = st.sampled_from([1, 8, 16, 32, 48, 64])
    k, d, a, b = draw(reg), draw(reg), draw(reg), draw(reg)
    op = draw(st.integers(0, NBINOPS - 1))
    imm = draw(st.integers(0, 2**64 - 1) | st.integers(0, 8))

    def target(skip: int) -> int:  # past the jump itself (at + skip - 1)
        return draw(st.integers(at + skip, max(at + skip, size)))

    kind = draw(st.sampled_from(["kbin", "kbinj", "binj", "movs", "jmp", "other"]))
    if kind in ("kbin", "kbinj"):
        out = [(CONST, k, imm), (BIN, op, d, a, k, draw(width))]
        if kind == "kbinj":
            out.append((draw(st.sampled_from([JZ, JNZ])), draw(st.sampled_from([d, a])), target(3)))
        return out
    if kind == "binj":
        return [(BIN, op, d, a, b, draw(width)), (draw(st.sampled_from([JZ, JNZ])), d, target(2))]
    if kind == "movs":
        return [(MOV, draw(reg), draw(reg)) for _ in range(draw(st.integers(1, 4)))]
    if kind == "jmp":
        return [(JMP, target(1))]
    return [draw(st.sampled_from([(NOT, d, a, draw(width)), (LNOT, d, a), (NEG, d, a, draw(width)),
                                  (CONST, d, imm), (STEP,), (REJECT, 3), (END,), (EMIT, 0), (EXTRACT, 0)]))]


@st.composite
def blocks(draw: st.DrawFn) -> list[tuple]:
    size = draw(st.integers(4, 40))
    code: list[tuple] = []
    while len(code) < size:
        code += draw(patterns(len(code), size))
    return code  # every target is at most len(code): a jump past the last instruction ends the block


def program(code: list[tuple], fuse: bool):  # noqa: ANN201 - an hbh_engine.P4Program
    return vm_program([code], NTEMPS, fuse)


@settings(max_examples=400, deadline=None)
@given(blocks(), st.lists(st.integers(0, 2**64 - 1), min_size=NSLOTS, max_size=NSLOTS),
       st.binary(max_size=8))
def test_fused_blocks_do_what_the_blocks_as_given_do(code: list[tuple], phv: list[int], data: bytes) -> None:
    results = []
    for fuse in (False, True):
        p = program(code, fuse)
        regs = list(phv)
        results.append((p.run(0, regs, data, 0), regs))
    assert results[0] == results[1]


def test_a_jump_onto_the_second_half_of_a_fusable_pair_skips_the_first() -> None:
    # 0: if slot 2 is 0 go to 2; 1: temp 7 <- 5; 2: slot 0 <- slot 1 + temp 7; 3: end
    code = [(JZ, 2, 2), (CONST, 7, 5), (BIN, 0, 0, 1, 7, 64), (END,)]
    for fuse in (False, True):
        for cond, want in ((0, 1), (1, 6)):
            regs = [0, 1, cond, 0, 0, 0]
            assert program(code, fuse).run(0, regs)[0] == -1
            assert regs[0] == want
