"""Plain table entries kept in the engine (p4switch/p4runtime/fast_writes.py, ``FastWriter.apply``).

A Write whose updates are all plain entries of tables without counters, meters or profiles is
applied in the engine's store: the keys, the engine program's entries, and a journal the table's
Python state builds its entry objects from when something looks. These check, on a real
engine-backed switch (basic_forward, p4c's JSON): packets see each such Write at once; Read and
simple_switch_CLI (Thrift) see it; a Thrift write is seen by the store (an INSERT of its key is
ALREADY_EXISTS, a DELETE of it is applied there); and a random sequence of Writes leaves the
same forwarding, entries and answers as the general path.
"""

from __future__ import annotations

import hbh_engine
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb

from p4switch.device import P4SwitchDevice, PipelineHolder, compile_device_config
from p4switch.p4runtime import Code, P4RuntimeCore, P4RuntimeError
from p4switch.p4runtime import fast_writes as fw
from p4switch.thrift_server import ThriftServer
from p4switch.thrift_tables import StandardTables
from tests.p4runtime.helpers import Client, b, route_update
from tests.p4switch.thrift.test_bmv2json_thrift import FIXTURES, cli

pytestmark = pytest.mark.skipif(
    not hasattr(getattr(hbh_engine, "TableWritePlan", None), "apply"),
    reason="an engine without the entry store (make engine)",
)
LPM_TABLE = "RouterIngress.ipv4_lpm"
FRAME = bytes.fromhex("00000000000100000000000208004500002200000000401100000a000001") + bytes(18)


def _switch(fast: bool = True) -> tuple[PipelineHolder, P4RuntimeCore, Client]:
    holder = PipelineHolder()
    device = P4SwitchDevice(holder, inject=lambda port, frame: None, cpu_port=None, seed=1)
    device.install(compile_device_config((FIXTURES / "basic_forward.json").read_bytes()))
    core = P4RuntimeCore(device, device_id=1, fast_writes=fast)
    client = Client(core)
    client.arbitrate(10)
    return holder, core, client


def _ids(holder: PipelineHolder) -> tuple[int, int, int]:
    st_ = holder.state
    return (
        st_.tables_by_name[LPM_TABLE].id,
        st_.actions_by_name["RouterIngress.set_nhop"].id,
        st_.actions_by_name["RouterIngress.drop"].id,
    )


def _update(holder: PipelineHolder, kind: int, prefix: int, plen: int, port: int | None) -> pb.Update:
    tid, nhop, _ = _ids(holder)
    return route_update(tid, nhop, kind, prefix, plen, port)


def _write(client: Client, *updates: pb.Update) -> None:
    req = client._stamp(pb.WriteRequest(updates=updates))
    client.core.write(req, raw=req.SerializeToString())


def _egress(holder: PipelineHolder, dst: int) -> int:
    pkt = holder.pipeline.new_packet(FRAME[:30] + dst.to_bytes(4, "big") + FRAME[34:], 1, 1000)
    holder.pipeline.run_ingress(pkt)
    return int(pkt.std("egress_spec"))


@pytest.fixture
def stored(monkeypatch) -> list[bool]:
    """Every FastWriter.apply outcome, in order."""
    seen: list[bool] = []
    apply = fw.FastWriter.apply

    def spy(self, raw: bytes, device_id: int, election_id: int) -> bool:
        seen.append(apply(self, raw, device_id, election_id))
        return seen[-1]

    monkeypatch.setattr(fw.FastWriter, "apply", spy)
    return seen


def test_store_writes_reach_packets_read_and_thrift_and_thrift_writes_reach_the_store(stored) -> None:
    holder, core, client = _switch()
    run = lambda fn: fn()  # noqa: E731 - the test's one thread is the switch loop
    srv = ThriftServer(
        "127.0.0.1",
        0,
        tm=object(),
        run_in_loop=run,
        clock=lambda: 0,
        epoch_ns=0,
        tables=StandardTables(holder, run),
    )
    srv.start()
    try:
        table = holder.state.tables_by_name[LPM_TABLE]
        _write(client, _update(holder, pb.Update.INSERT, 0x0A000000, 8, 2))
        assert stored == [True] and table._pending  # applied in the engine; no entry object yet
        assert holder.pipeline.engine.table_len(table.id) == 1 and table._pending
        assert _egress(holder, 0x0A000001) == 2  # the engine program has it at once
        dump = cli(srv.port, "table_dump RouterIngress.ipv4_lpm\n")
        assert "0a000000/8" in dump and "Dumping entry 0x0" in dump
        _write(client, _update(holder, pb.Update.MODIFY, 0x0A000000, 8, 5))
        assert stored[-1] and _egress(holder, 0x0A000001) == 5
        got = client.read(pb.Entity(table_entry=pb.TableEntry(table_id=table.id)))
        assert [e.table_entry.action.action.params[1].value for e in got] == [b(5)]
        out = cli(
            srv.port,
            "table_add RouterIngress.ipv4_lpm RouterIngress.set_nhop 11.0.0.0/8 => 02:00:00:00:00:02 7\n",
        )
        assert "Entry has been added with handle 1" in out and _egress(holder, 0x0B000001) == 7
        with pytest.raises(P4RuntimeError) as e:  # the store knows Thrift's entry
            _write(client, _update(holder, pb.Update.INSERT, 0x0B000000, 8, 3))
        assert stored[-1] is False and e.value.details[0].canonical_code == Code.ALREADY_EXISTS
        _write(client, _update(holder, pb.Update.DELETE, 0x0B000000, 8, None))
        assert stored[-1] and _egress(holder, 0x0B000001) != 7
        out = cli(
            srv.port, "table_num_entries RouterIngress.ipv4_lpm\ntable_delete RouterIngress.ipv4_lpm 0\n"
        )
        assert "RuntimeCmd: 1" in out and len(table) == 0
        _write(client, _update(holder, pb.Update.INSERT, 0x0A000000, 8, 4))  # Thrift's delete reached it
        assert stored[-1] and _egress(holder, 0x0A000001) == 4
        assert [e._handle for e in table] == [2]  # handles keep growing across both ways in
    finally:
        srv.stop()


_OPS = st.lists(
    st.tuples(st.integers(0, 5), st.integers(1, 9), st.sampled_from(["modify", "delete"]), st.integers(0, 9)),
    min_size=1,
    max_size=6,
)
PREFIXES = [(0x0A000000, 8), (0x0A010000, 16), (0x0A010200, 24), (0x0B000000, 8), (0x0A010203, 32), (0, 0)]


def _kinds(ops: list, present: set[int]) -> list[tuple[int, int, int]]:
    """(kind, prefix index, port) of each op: what succeeds on the keys present (tracked through
    the Write), one in ten the opposite (an INSERT of a present key, a MODIFY or DELETE of an
    absent one); prefix 5 (a /0) always fails."""
    out = []
    for i, port, change, dice in ops:
        wrong = dice == 0
        if (i in present) != wrong:
            kind = pb.Update.MODIFY if change == "modify" else pb.Update.DELETE
        else:
            kind = pb.Update.INSERT
        if not wrong and i != 5:
            if kind == pb.Update.INSERT:
                present.add(i)
            elif kind == pb.Update.DELETE:
                present.discard(i)
        out.append((kind, i, port))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_OPS, st.sampled_from([0, 1, 2]), st.booleans()), min_size=1, max_size=10))
def test_random_writes_forward_read_and_fail_as_the_general_path(writes) -> None:
    """The same Writes to a switch with the store and to one on the general path: the same
    answers (per-update errors included) and forwarding after each, and the same Reads after
    those followed by one (so the store's changes pile up over several Writes in between)."""
    (fh, _, fast), (sh, _, slow) = _switch(True), _switch(False)
    probes = [0x0A000001, 0x0A010001, 0x0A010201, 0x0A010203, 0x0B000001, 0x0C000001]
    slow_table = sh.state.tables_by_name[LPM_TABLE]
    writes[-1] = (*writes[-1][:2], True)
    for ops, atomicity, look in writes:
        present = {PREFIXES.index((e.match[0].value, e.match[0].prefix_len)) for e in slow_table}
        kinds = _kinds(ops, present)
        outcomes = []
        for holder, client in ((fh, fast), (sh, slow)):
            ups = [
                _update(holder, kind, *PREFIXES[i], None if kind == pb.Update.DELETE else port)
                for kind, i, port in kinds
            ]
            req = client._stamp(pb.WriteRequest(updates=ups, atomicity=atomicity))
            try:
                client.core.write(req, raw=req.SerializeToString())
                outcomes.append(None)
            except P4RuntimeError as e:
                outcomes.append((e.code, e.message, [(d.canonical_code, d.message) for d in e.details]))
        assert outcomes[0] == outcomes[1]
        assert [_egress(fh, d) for d in probes] == [_egress(sh, d) for d in probes]
        if not look:
            continue
        reads = [
            sorted(
                x.SerializeToString(deterministic=True)
                for x in c.read(pb.Entity(table_entry=pb.TableEntry(table_id=_ids(h)[0])))
            )
            for h, c in ((fh, fast), (sh, slow))
        ]
        assert reads[0] == reads[1]
        handles = [e._handle for e in fh.state.tables_by_name[LPM_TABLE]]
        assert handles == sorted(handles)  # in the order of their inserts, as the general path keeps them


def test_changes_piled_up_between_looks_keep_the_general_paths_order() -> None:
    """Entries deleted and inserted again, modified, inserted and deleted unseen, over Writes
    with no look in between: a Read then gives the general path's entries in its order."""
    switches = [_switch(True), _switch(False)]
    steps = [
        [(pb.Update.INSERT, 0, 2), (pb.Update.INSERT, 1, 3), (pb.Update.INSERT, 2, 4)],
        None,  # a look: the Python state holds these three
        [(pb.Update.DELETE, 0, None)],
        [(pb.Update.INSERT, 3, 5), (pb.Update.MODIFY, 1, 6)],
        [(pb.Update.INSERT, 0, 7), (pb.Update.INSERT, 4, 8)],
        [(pb.Update.DELETE, 4, None), (pb.Update.MODIFY, 3, 9)],
        None,
    ]
    reads = []
    for holder, _, client in switches:
        got = []
        for step in steps:
            if step is None:
                got.append(
                    [
                        x.SerializeToString(deterministic=True)
                        for x in client.read(pb.Entity(table_entry=pb.TableEntry(table_id=_ids(holder)[0])))
                    ]
                )
                continue
            _write(client, *[_update(holder, kind, *PREFIXES[i], port) for kind, i, port in step])
        reads.append(got)
    assert reads[0] == reads[1] and len(reads[0][-1]) == 4
