"""The written P4Info works with p4runtime-shell: loaded the way the shell loads a P4Info
text file, indexed by the shell's own Context, and used to build table entries and
packet-outs with the shell's own classes (which check names, ids, widths and match
kinds against the P4Info)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import google.protobuf.text_format
import pytest
from p4.config.v1 import p4info_pb2

from p4switch.frontend.p4info import build_p4info, read_p4info, write_p4info
from p4switch.frontend.passes import compile_file
from tests.frontend.p4info.test_p4info_programs import assert_ids_well_formed
from tests.paths import ROOT

PROGRAMS = [ROOT / "p4src" / "alinea.p4", *sorted((ROOT / "tests" / "p4programs").glob("*.p4"))]


MF = p4info_pb2.MatchField


@pytest.fixture(scope="module", params=PROGRAMS, ids=lambda p: p.name)
def written(request, tmp_path_factory) -> tuple[p4info_pb2.P4Info, Path]:
    info = build_p4info(compile_file(request.param))
    path = tmp_path_factory.mktemp("p4info") / "p4info.txt"
    write_p4info(info, path, "text")
    return info, path


def _load_like_the_shell(path: Path) -> p4info_pb2.P4Info:
    """What p4runtime-shell's client does with --config <p4info.txt>,<bin>."""
    msg = p4info_pb2.P4Info()
    google.protobuf.text_format.Merge(path.read_text(), msg, allow_unknown_field=True)
    return msg


def test_context_resolves_every_object_by_name_and_alias(written):
    from p4runtime_sh.context import Context, P4Type

    info, path = written
    assert_ids_well_formed(info)
    ctx = Context()
    ctx.set_p4info(_load_like_the_shell(path))
    assert ctx.p4info == info
    for obj_type in P4Type:
        for obj in getattr(info, obj_type.p4info_name):
            pre = obj.preamble
            assert ctx.get_obj_id(obj_type, pre.name) == pre.id
            assert ctx.get_obj_id(obj_type, pre.alias) == pre.id
            assert ctx.get_name_from_id(pre.id) == pre.name
    for t in info.tables:
        for mf in t.match_fields:
            assert ctx.get_mf_id(t.preamble.name, mf.name) == mf.id
            assert ctx.get_mf_name(t.preamble.name, mf.id) == mf.name
    for a in info.actions:
        for p in a.params:
            assert ctx.get_param_id(a.preamble.name, p.name) == p.id
    for cpm in info.controller_packet_metadata:
        for md in cpm.metadata:
            assert ctx.get_packet_metadata_name_from_id(cpm.preamble.name, md.id) == md.name


def _match_value(mf: p4info_pb2.MatchField) -> str:
    return {MF.EXACT: "1", MF.LPM: "1/1", MF.TERNARY: "1&&&1", MF.RANGE: "1..2", MF.OPTIONAL: "1"}[mf.match_type]


def test_shell_builds_entries_for_every_table_and_action(written, monkeypatch):
    from p4runtime_sh import shell
    from p4runtime_sh.context import Context

    info, path = written
    monkeypatch.setattr(shell, "context", Context())
    shell.context.set_p4info(_load_like_the_shell(path))
    actions = {a.preamble.id: a for a in info.actions}
    profiles = {p.preamble.id: p for p in info.action_profiles}
    built = 0
    for t in info.tables:
        for ref in t.action_refs:
            if ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
                continue
            action = actions[ref.id]
            if t.implementation_id:
                # indirect table: the action goes into a member of the action profile
                te = shell.TableEntry(t.preamble.name)
                te.member_id = 1
                member = shell.ActionProfileMember(profiles[t.implementation_id].preamble.name)(
                    member_id=1, action=action.preamble.name)
                _set_params(member.action, action)
                assert member.msg().action.action_id == action.preamble.id
            else:
                te = shell.TableEntry(t.preamble.name)(action=action.preamble.name)
                _set_params(te.action, action)
            for mf in t.match_fields:
                te.match[mf.name] = _match_value(mf)
            if any(mf.match_type not in (MF.EXACT, MF.LPM) for mf in t.match_fields):
                te.priority = 1
            msg = te.msg()
            assert msg.table_id == t.preamble.id
            assert [m.field_id for m in msg.match] == [mf.id for mf in t.match_fields]
            if not t.implementation_id:
                assert msg.action.action.action_id == action.preamble.id
                assert [p.param_id for p in msg.action.action.params] == [p.id for p in action.params]
            built += 1
    assert built >= len(info.tables)


def _set_params(shell_action, action: p4info_pb2.Action) -> None:
    for p in action.params:
        shell_action[p.name] = "1"


def test_shell_builds_packet_out_and_digest_entries(written, monkeypatch):
    from p4runtime_sh import shell
    from p4runtime_sh.context import Context

    info, path = written
    monkeypatch.setattr(shell, "context", Context())
    shell.context.set_p4info(_load_like_the_shell(path))
    names = {c.preamble.name for c in info.controller_packet_metadata}
    if "packet_out" in names:
        pkt = shell.PacketOut(b"\x00" * 14, egress_port="3")
        pkt._update_msg()
        md = {m.metadata_id: m.value for m in pkt._entry.metadata}
        (port,) = [m for m in by_packet_out(info).metadata if m.name == "egress_port"]
        assert int.from_bytes(md[port.id], "big") == 3
    for d in info.digests:
        entry = shell.DigestEntry(d.preamble.name)
        assert entry.msg().digest_id == d.preamble.id


def by_packet_out(info: p4info_pb2.P4Info) -> p4info_pb2.ControllerPacketMetadata:
    return next(c for c in info.controller_packet_metadata if c.preamble.name == "packet_out")


@pytest.mark.parametrize("fmt,suffix", [("text", ".txt"), ("binary", ".bin")])
def test_hbh_p4_info_writes_what_build_p4info_builds(tmp_path, fmt, suffix):
    out = tmp_path / f"alinea{suffix}"
    proc = subprocess.run(
        [sys.executable, "-m", "hbh", "p4", "info", str(PROGRAMS[0]), "-o", str(out), "--format", fmt],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert read_p4info(out, fmt) == build_p4info(compile_file(PROGRAMS[0]))
