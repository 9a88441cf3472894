"""PHV layout: contiguous aggregates, header validity first, stack strides."""

from __future__ import annotations

from p4switch.frontend import types as T
from p4switch.pipeline.layout import RESERVED, HeaderS, ScalarS, SlotAllocator, StackS, StructS, find_path

H = T.HeaderType("h_t", None, (("a", T.BitType(8)), ("b", T.IntType(4)), ("c", T.BoolType())))
U = T.HeaderUnionType("u_t", None, (("x", H), ("y", H)))
S = T.StructType("s_t", None, (("h", H), ("stack", T.HeaderStackType(H, 3)), ("u", U), ("n", T.BitType(16))))


def test_aggregates_are_contiguous_in_declaration_order() -> None:
    alloc = SlotAllocator()
    st = alloc.allocate(S, "hdr")
    assert isinstance(st, StructS) and st.start == RESERVED and st.end == alloc.size
    h = st.fields["h"]
    assert isinstance(h, HeaderS) and h.valid == h.start
    assert [f.start for f in h.fields.values()] == [h.start + 1, h.start + 2, h.start + 3]
    assert h.fixed_width == 13
    prev_end = st.start
    for f in st.fields.values():
        assert f.start == prev_end
        prev_end = f.end
    assert prev_end == st.end


def test_stack_elements_have_equal_strides_then_next_index() -> None:
    alloc = SlotAllocator()
    st = alloc.allocate(S, "hdr")
    stack = st.fields["stack"]
    assert isinstance(stack, StackS) and stack.size == 3 and stack.stride == 4
    starts = [e.start for e in stack.elems]
    assert starts == [starts[0], starts[0] + 4, starts[0] + 8]
    assert stack.next_slot == stack.end - 1 == starts[0] + 12


def test_signedness_and_paths() -> None:
    alloc = SlotAllocator()
    st = alloc.allocate(S, "hdr")
    b = find_path(st, "stack[2].b")
    assert isinstance(b, ScalarS) and b.signed and b.width == 4
    assert find_path(st, "u.y") is st.fields["u"].fields["y"]
    assert alloc.names[b.start] == "hdr.stack[2].b"
    assert alloc.initial[find_path(st, "h.c").start] is False
