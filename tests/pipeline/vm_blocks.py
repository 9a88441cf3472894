"""The P4 VM's instruction vocabulary as the fusion tests write blocks in it, and the one-header
program they run them in (tests/pipeline/test_engine_fuse*.py): one place, so the opcodes the tests
draw are the engine's (engine/src/p4/p4ins.rs numbers them in this order)."""

from __future__ import annotations

import pytest

hbh_engine = pytest.importorskip("hbh_engine")

#: PHV slots of the one header (5: its validity; 0 and 1: its 8- and 16-bit fields)
NSLOTS = 6
CONST, MOV, BIN, NOT, LNOT, NEG, JMP, JZ, JNZ, EXTRACT, EMIT, REJECT, END, STEP = range(14)
NBINOPS = 14


def program(blocks: list[list[tuple]], ntemps: int, fuse: bool):  # noqa: ANN201 - an hbh_engine.P4Program
    """``blocks`` as one program of header 0 (validity in slot 5, fields in slots 0 and 1), ``ntemps``
    temporaries, run fused or as given."""
    return hbh_engine.P4Program(blocks, [(5, [(0, 8), (1, 16)])], [], [], NSLOTS, ntemps, [], 1, 2, 4, fuse=fuse)
