"""Name-resolution errors point at the name, whichever way the program reaches the front
end: ``hbh p4 check`` (the file), ``p4switch FILE.p4`` (through the device config, the
preprocessed text with line markers) or a pushed device config (issue 9, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.device import compile_device_config, compile_file, device_config_for
from p4switch.frontend.errors import P4Error, iter_errors
from p4switch.frontend.passes import compile_file as frontend_compile
from p4switch.p4runtime.device import PipelineLoadError

PROGRAM = """#include <core.p4>
#include <v1model.p4>
struct h_t { }
struct m_t { bit<8> x; }
control C(inout h_t hdr, inout m_t m, inout standard_metadata_t sm) {
    action a() {
    }
    apply {
        x_undefined = 1;
        m.x = y_undefined;
        m.x = m.x   +   z_undefined;
        f_undefined(m.x);
        if (v_undefined == 1) { }
    }
}
"""
NAMES = ["x_undefined", "y_undefined", "z_undefined", "f_undefined", "v_undefined"]


def expected() -> list[tuple[int, int]]:
    out = []
    for n in NAMES:
        line = next(i for i, text in enumerate(PROGRAM.splitlines(), 1) if n in text)
        out.append((line, PROGRAM.splitlines()[line - 1].index(n) + 1))
    return out


@pytest.fixture
def program(tmp_path: Path) -> Path:
    p = tmp_path / "undef.p4"
    p.write_text(PROGRAM)
    return p


def _positions(err: P4Error) -> list[tuple[int, int]]:
    return [(e.loc.line, e.loc.col) for e in iter_errors(err) if "undefined" in e.message]


def test_front_end_points_at_each_undefined_name(program: Path) -> None:
    with pytest.raises(P4Error) as exc:
        frontend_compile(program)
    assert _positions(exc.value) == expected()


def test_p4switch_file_path_points_at_the_same_columns(program: Path) -> None:
    with pytest.raises(P4Error) as exc:
        compile_file(program)
    assert _positions(exc.value) == expected()
    assert all(e.loc.file == str(program) for e in iter_errors(exc.value))


def test_pushed_device_config_points_at_the_same_columns(program: Path) -> None:
    config = device_config_for(program)
    with pytest.raises(PipelineLoadError) as exc:
        compile_device_config(config)
    text = str(exc.value)
    for (line, col) in expected():
        assert f"{program}:{line}:{col}: error: unknown identifier" in text
