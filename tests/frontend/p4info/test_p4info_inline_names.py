"""Instances constructed inside a table property are named like p4c names them: the
property's @name as written (p4c does not qualify it), else <table>.<property>."""

from __future__ import annotations

from pathlib import Path

from p4switch.frontend.p4info import build_p4info
from p4switch.frontend.passes import compile_file
from p4switch.pipeline import load_pipeline
from p4switch.state import RuntimeState
from tests.paths import FRONTEND_PROGRAMS

PROGRAM = FRONTEND_PROGRAMS / "inline_profiles.p4"


def test_property_name_annotation_names_the_inline_instance() -> None:
    checked = compile_file(PROGRAM)
    info = build_p4info(checked)
    profiles = {p.preamble.name: p for p in info.action_profiles}
    assert set(profiles) == {"sel_profile", "ap"}
    tables = {t.preamble.name: t.implementation_id for t in info.tables}
    assert tables["I.test1"] == profiles["sel_profile"].preamble.id
    assert tables["I.test2"] == profiles["ap"].preamble.id
    assert profiles["sel_profile"].with_selector and not profiles["ap"].with_selector
    load_pipeline(checked, info, RuntimeState.from_p4info(info))  # the pipeline finds them by those names


def test_without_a_name_the_instance_is_named_after_its_table(tmp_path: Path) -> None:
    src = tmp_path / "anon.p4"
    src.write_text(PROGRAM.read_text().replace('@name("sel_profile") ', ""))
    info = build_p4info(compile_file(src))
    assert {p.preamble.name for p in info.action_profiles} == {"I.test1.implementation", "ap"}
