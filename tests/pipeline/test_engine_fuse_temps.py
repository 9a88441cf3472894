"""The P4 VM's fusion where it leaves temporaries unwritten (engine/src/p4/p4fuse.rs, "Writes nothing
reads"): blocks shaped as the emitter makes them, each expression's value in a fresh temporary
written before it is read (an assignment through a temporary, a condition branched on, an
operation with a constant operand), with jumps onto the starts of those pieces or, in some
blocks, into them; run fused and as given, they give the same status, cursor, PHV and emitted
bytes. A block that may read a temporary it has not written (a jump into a piece) keeps every
write, in every block of its program."""

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
    NOT,
    NSLOTS,
    STEP,
)
from tests.pipeline.vm_blocks import program as vm_program

NTEMPS = 40


@st.composite
def block(draw: st.DrawFn) -> list[tuple]:
    """Pieces of fresh temporaries over slots 0-4 (slot 5 is the header's validity), then jumps
    resolved to piece starts (or, when ``inside``, to any instruction)."""
    slot = st.integers(0, NSLOTS - 2)
    width = st.sampled_from([1, 8, 16, 32, 48, 64])
    imm = st.integers(0, 2**64 - 1) | st.integers(0, 8)
    op = st.integers(0, NBINOPS - 1)
    temps = iter(range(NSLOTS, NSLOTS + NTEMPS))
    pieces: list[list[tuple]] = []
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["assign", "kassign", "binassign", "kbranch", "branch", "kop", "jump", "other"]))
        t, k = next(temps), next(temps)
        jz = draw(st.sampled_from([JZ, JNZ]))
        if kind == "assign":  # d = imm
            piece = [(CONST, t, draw(imm)), (MOV, draw(slot), t)]
        elif kind == "kassign":  # d = a op imm
            piece = [(CONST, k, draw(imm)), (BIN, draw(op), t, draw(slot), k, draw(width)), (MOV, draw(slot), t)]
        elif kind == "binassign":  # d = a op b
            piece = [(BIN, draw(op), t, draw(slot), draw(slot), draw(width)), (MOV, draw(slot), t)]
        elif kind == "kbranch":  # if (a op imm)
            piece = [(CONST, k, draw(imm)), (BIN, draw(op), t, draw(slot), k, draw(width)), (jz, t, "L")]
        elif kind == "branch":  # if (a op b)
            piece = [(BIN, draw(op), t, draw(slot), draw(slot), draw(width)), (jz, t, "L")]
        elif kind == "kop":  # a temporary read twice: its writes stay
            piece = [(CONST, k, draw(imm)), (BIN, draw(op), t, draw(slot), k, draw(width)),
                     (MOV, draw(slot), t), (BIN, draw(op), draw(slot), t, k, draw(width))]
        elif kind == "jump":
            piece = [(JMP, "L")]
        else:
            piece = [draw(st.sampled_from([(NOT, draw(slot), draw(slot), draw(width)), (LNOT, draw(slot), draw(slot)),
                                           (CONST, draw(slot), draw(imm)), (STEP,), (EMIT, 0), (EXTRACT, 0)]))]
        pieces.append(piece)
    starts, n = [], 0
    for p in pieces:
        starts.append(n)
        n += len(p)
    inside = draw(st.booleans())
    code = []
    for i, p in enumerate(pieces):
        for ins in p:
            if ins[-1] == "L":  # forward only: every block ends
                later = list(range(starts[i] + len(p), n + 1)) if inside else [s for s in starts if s > starts[i]] + [n]
                ins = (*ins[:-1], draw(st.sampled_from(later)))
            code.append(ins)
    return code


def program(blocks: list[list[tuple]], fuse: bool):  # noqa: ANN201 - an hbh_engine.P4Program
    return vm_program(blocks, NTEMPS, fuse)


@settings(max_examples=400, deadline=None)
@given(st.lists(block(), min_size=1, max_size=3),
       st.lists(st.integers(0, 2**64 - 1), min_size=NSLOTS, max_size=NSLOTS), st.binary(max_size=8))
def test_blocks_of_fresh_temporaries_do_the_same_fused(blocks: list[list[tuple]], phv: list[int], data: bytes) -> None:
    """Every block of the program run in turn over one PHV, twice (a second packet through the
    same registers), fused and as given."""
    results = []
    for fuse in (False, True):
        p = program(blocks, fuse)
        regs = list(phv)
        got = [p.run(b, regs, data, 0) for _ in range(2) for b in range(len(blocks))]
        results.append((got, regs))
    assert results[0] == results[1]


def test_a_temporary_read_by_a_later_block_keeps_its_write() -> None:
    """Block 0 writes temporary 6 and reads it in a move; block 1 reads it without writing it (a
    value carried between blocks, which the emitter never makes): fused, block 1 still sees it."""
    b0 = [(CONST, 6, 7), (MOV, 0, 6), (END,)]
    b1 = [(MOV, 1, 6), (END,)]
    for fuse in (False, True):
        p = program([b0, b1], fuse)
        regs = [0] * NSLOTS
        p.run(0, regs)
        p.run(1, regs)
        assert regs[:2] == [7, 7]
