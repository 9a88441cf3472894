"""simple_switch_CLI's table, action-profile, counter, meter and register commands against
p4switch alone (the stock CLI over Thrift, p4c's JSON): each command changes what the pipeline
does or what P4Runtime's state holds, as on BMv2; and BMv2's handle numbering, checked as a
property against a plain model of it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from p4switch.state import Lpm
from p4switch.state.profiles import GroupRef, MemberRef
from p4switch.thrift_handles import SLOT_MASK, VERSION_SHIFT, EntryBook, LowestFree
from tests.p4switch.thrift.test_bmv2json_thrift import cli, serve

FRAME = bytes.fromhex("000000000001000000000002" "0800" "450000220000000040110000" "0a0000010a000002") + bytes(14)


def _egress(holder: object, frame: bytes = FRAME) -> int:
    pl = holder.pipeline  # type: ignore[attr-defined]
    pkt = pl.new_packet(frame, 1, 1000)
    pl.run_ingress(pkt)
    return int(pkt.std("egress_spec"))


def test_modify_delete_clear_and_handles_per_table() -> None:
    srv, holder = serve("basic_forward")
    try:
        st_ = holder.state
        t = st_.tables_by_name["RouterIngress.ipv4_lpm"]
        t.insert({"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)}, st_.actions_by_name["RouterIngress.set_nhop"].id, (7, 3))
        out = cli(srv.port, "table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.0/8 => 0 2\n"
                            "table_modify RouterIngress.ipv4_lpm RouterIngress.set_nhop 1 => 0 5\n"
                            "table_num_entries RouterIngress.ipv4_lpm\n")
        assert "Entry has been added with handle 1" in out  # P4Runtime's entry came first: handle 0
        assert out.rstrip().endswith("RuntimeCmd: 2\nRuntimeCmd:")
        assert _egress(holder) == 5
        out = cli(srv.port, "table_delete RouterIngress.ipv4_lpm 1\n"
                            "table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.0/8 => 0 6\n"
                            "table_modify RouterIngress.ipv4_lpm RouterIngress.set_nhop 1 => 0 5\n")
        assert "Entry has been added with handle 16777217" in out  # slot 1, version 1
        assert "Invalid table operation (EXPIRED_HANDLE)" in out
        assert _egress(holder) == 6
        out = cli(srv.port, "table_clear RouterIngress.ipv4_lpm\ntable_num_entries RouterIngress.ipv4_lpm\n"
                            "table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.0/8 => 0 4\n")
        assert len(t) == 1 and "Entry has been added with handle 0" in out
    finally:
        srv.stop()


def test_action_profile_members_groups_and_indirect_entries() -> None:
    srv, holder = serve("profiles")
    try:
        out = cli(srv.port, "act_prof_create_member MyIngress.paths MyIngress.set_port 3 1\n"
                            "act_prof_create_member MyIngress.paths MyIngress.set_port 4 2\n"
                            "act_prof_create_group MyIngress.paths\n"
                            "table_indirect_add_with_group MyIngress.by_dst 10.0.0.0/8 => 0\n"
                            "act_prof_add_member_to_group MyIngress.paths 0 0\n"
                            "act_prof_add_member_to_group MyIngress.paths 1 0\n"
                            "table_indirect_add_with_group MyIngress.by_dst 10.0.0.0/8 => 0\n"
                            "act_prof_delete_member MyIngress.paths 0\n"
                            "act_prof_create_member MyIngress.nhops MyIngress.set_port 9 0\n"
                            "table_indirect_add MyIngress.by_port 1 => 0\n"
                            "table_indirect_set_default MyIngress.by_port 0\n")
        assert "Invalid table operation (EMPTY_GRP)" in out and "MBR_STILL_USED" in out
        prof = holder.state.action_profiles_by_name["MyIngress.paths"]
        (gid, group), = prof.groups.items()
        assert len(group.members) == 2 and all(w == 1 for _, w in group.members)
        entries = list(holder.state.tables_by_name["MyIngress.by_dst"])
        assert [e.action for e in entries] == [GroupRef(gid)]
        by_port = holder.state.tables_by_name["MyIngress.by_port"]
        assert isinstance(next(iter(by_port)).action, MemberRef)
        assert isinstance(by_port.default_entry.action, MemberRef)
        nhops = holder.state.action_profiles_by_name["MyIngress.nhops"]
        out = cli(srv.port, "act_prof_delete_member MyIngress.nhops 0\ntable_indirect_delete MyIngress.by_port 0\n"
                            "table_indirect_reset_default MyIngress.by_port\nact_prof_delete_member MyIngress.nhops 0\n")
        assert out.count("MBR_STILL_USED") == 1 and not nhops.members and len(by_port) == 0
    finally:
        srv.stop()


def test_meters_counters_registers() -> None:
    srv, holder = serve("features")
    try:
        out = cli(srv.port, "meter_set_rates MyIngress.probe_meter 2 0.5:10 1.25:20\n"
                            "meter_get_rates MyIngress.probe_meter 2\n"
                            "table_add MyIngress.lpm MyIngress.forward 10.0.0.0/8 => 0 3\n"
                            "meter_set_rates MyIngress.lpm_meter 0 0.001:3 0.002:9\n"
                            "counter_write MyIngress.lpm_counter 0 5 700\n")
        cfg = holder.state.meters_by_name["MyIngress.probe_meter"].config(2)
        assert (cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) == (500_000, 10, 1_250_000, 20)
        assert "1: info rate = 1.25, burst size = 20" in out
        (entry,) = holder.state.tables_by_name["MyIngress.lpm"]
        assert entry.direct_meter.config.cir == 1000 and entry.direct_meter.config.pburst == 9
        assert entry.direct_counter.snapshot() == (5, 700)
        cli(srv.port, "counter_reset MyIngress.lpm_counter\n")
        assert entry.direct_counter.snapshot() == (0, 0)
    finally:
        srv.stop()
    srv, holder = serve("alinea")
    try:
        regs = holder.state.registers_by_name["occupancy"]
        regs.write(7, 99)
        holder.state.counters_by_name["MyIngress.rx"].count(2, 64)
        cli(srv.port, "register_reset occupancy\ncounter_reset MyIngress.rx\n")
        assert regs.read(7) == 0 and holder.state.counters_by_name["MyIngress.rx"].read(2) == (0, 0)
    finally:
        srv.stop()


def test_bad_lines_get_one_line_each() -> None:
    srv, _ = serve("basic_forward")
    try:
        bad = ["table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 10.0.0.0/8 => 1",
               "table_delete RouterIngress.ipv4_lpm 99", "table_modify nosuch a 0 =>",
               "table_num_entries nosuch", "meter_get_rates nosuch 0", "act_prof_create_group nosuch",
               "table_indirect_add RouterIngress.ipv4_lpm 10.0.0.0/8 => 0", "register_reset nosuch",
               "counter_reset nosuch", "table_clear nosuch"]
        out = cli(srv.port, "\n".join(bad) + "\n")
        replies = out.split("RuntimeCmd: ")[1:-1]
        assert len(replies) == len(bad)
        for line, reply in zip(bad, replies):
            lines = reply.strip().splitlines()  # the CLI may echo the call first ("Deleting entry 99 ...")
            errors = [x for x in lines if x.startswith(("Error", "Invalid"))]
            assert errors == lines[-1:], (line, reply)
    finally:
        srv.stop()


class _Model:
    """BMv2's handle rules written plainly: a slot list, versions per slot."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}  # slot -> version
        self.version: dict[int, int] = {}

    def add(self) -> int:
        slot = next(s for s in range(len(self.live) + 1) if s not in self.live)
        self.live[slot] = self.version.get(slot, 0)
        return (self.live[slot] << VERSION_SHIFT) | slot

    def delete(self, slot: int) -> None:
        del self.live[slot]
        self.version[slot] = (self.version.get(slot, 0) + 1) % 256


class _Entry:
    def __init__(self, h: int) -> None:
        self._handle = h


class _Table(list):
    _next_handle = 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=300))
def test_entry_handles_follow_bmv2s_rules(ops: list[tuple[bool, int]]) -> None:
    """Adds and deletes in any order: each new entry gets the lowest free slot, with the version
    that slot reached; a deleted handle is expired, an unused slot invalid."""
    book, model, table = EntryBook(), _Model(), _Table()
    handles: dict[int, int] = {}  # slot -> current handle
    gone: list[int] = []  # deleted handles
    for is_add, pick in ops:
        if is_add or not handles:
            table._next_handle += 1
            e = _Entry(table._next_handle)
            table.append(e)
            h = book.add(table, e)
            assert h == model.add()
            handles[h & SLOT_MASK] = h
        else:
            slot = sorted(handles)[pick % len(handles)]
            h = handles.pop(slot)
            e, why = book.entry(h)
            assert e is not None and not why
            table.remove(e)
            book.removed(h)
            model.delete(slot)
            gone.append(h)
        for old in gone:
            live = (old & SLOT_MASK) in handles
            assert book.entry(old)[1] == ("EXPIRED_HANDLE" if live else "INVALID_HANDLE")
    assert [h for h, _ in book.items()] == [handles[s] for s in sorted(handles)]


def test_lowest_free_reuses_the_smallest() -> None:
    free = LowestFree()
    assert [free.take() for _ in range(4)] == [0, 1, 2, 3]
    free.release(2)
    free.release(0)
    assert [free.take(), free.take(), free.take()] == [0, 2, 4]
