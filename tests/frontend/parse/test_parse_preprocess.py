"""cpp preprocessing: includes, defines, line mapping back to the original files, cpp errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.frontend import ast as A
from p4switch.frontend.errors import P4Error, P4ErrorGroup
from p4switch.frontend.parser import parse_file, parse_text
from p4switch.frontend.preprocess import (
    DEFAULT_INCLUDE_DIR,
    map_lines,
    preprocess_file,
    preprocess_text,
)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """main.p4 includes a quoted sibling and a <lib> header found through -I."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "stub_core.p4").write_text(
        "#ifndef STUB_CORE\n#define STUB_CORE\n\n// a library\nerror { NoError }\n\n"
        "extern packet_in {\n    void extract<T>(out T hdr);\n}\n#endif\n"
    )
    (tmp_path / "defs.p4").write_text("\n\ntypedef bit<48> mac_t;\nheader eth_h { mac_t dst; }\n")
    (tmp_path / "main.p4").write_text(
        "#include <stub_core.p4>\n"
        '#include "defs.p4"\n'
        "#include <stub_core.p4>\n"
        "\n"
        "#ifdef WIDE\n"
        "typedef bit<64> word_t;\n"
        "#else\n"
        "typedef bit<32> word_t;\n"
        "#endif\n"
        "#define DEPTH 16\n"
        "const word_t X = DEPTH;\n"
        "parser P(packet_in b, out eth_h h) {\n"
        "    state start { b.extract(h); transition accept; }\n"
        "}\n"
    )
    return tmp_path


def by_name(prog: A.Program) -> dict[str, A.Declaration]:
    return {d.name: d for d in prog.declarations}


def test_locations_map_through_includes(tree: Path) -> None:
    prog = parse_file(tree / "main.p4", include_dirs=[tree / "lib"])
    decls = by_name(prog)
    assert Path(decls["packet_in"].loc.file) == tree / "lib" / "stub_core.p4"
    assert (decls["packet_in"].loc.line, decls["packet_in"].loc.col) == (7, 1)
    assert Path(decls["mac_t"].loc.file) == tree / "defs.p4" and decls["mac_t"].loc.line == 3
    assert decls["eth_h"].loc.line == 4
    assert Path(decls["P"].loc.file) == tree / "main.p4" and decls["P"].loc.line == 12
    state = decls["P"].states[0]
    assert (state.loc.line, state.loc.col) == (13, 5)
    # the include guard keeps the second #include from duplicating declarations
    assert [d.name for d in prog.declarations].count("packet_in") == 1


def test_defines_and_macros(tree: Path) -> None:
    narrow = by_name(parse_file(tree / "main.p4", include_dirs=[tree / "lib"]))
    assert narrow["word_t"].type_ref.width.value == 32
    assert narrow["X"].value.value == 16
    assert narrow["word_t"].loc.line == 8
    wide = by_name(parse_file(tree / "main.p4", include_dirs=[tree / "lib"], defines=["WIDE"]))
    assert wide["word_t"].type_ref.width.value == 64 and wide["word_t"].loc.line == 6
    valued = parse_text("const bit<8> Y = VAL;\n", defines=["VAL=42"])
    assert valued.declarations[0].value.value == 42


def test_macro_expansion_keeps_following_columns(tree: Path) -> None:
    prog = parse_text("#define W 8\nconst   bit<W>   Name   =   W;\n", "m.p4")
    const = prog.declarations[0]
    assert (const.loc.line, const.loc.col) == (2, 1)
    line = "const   bit<W>   Name   =   W;"
    assert const.type_ref.loc.col == line.index("bit") + 1
    assert const.loc.end_col == len(line)


def test_error_inside_an_included_file_points_into_that_file(tmp_path: Path) -> None:
    (tmp_path / "bad.p4").write_text("// bad header\nheader h_t {\n  bit<8> a\n}\n")
    (tmp_path / "top.p4").write_text('const bit<8> X = 1;\n#include "bad.p4"\n')
    with pytest.raises(P4Error) as info:
        parse_file(tmp_path / "top.p4")
    loc = info.value.loc
    assert (Path(loc.file), loc.line, loc.col) == (tmp_path / "bad.p4", 3, 11)


def test_missing_include_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "m.p4").write_text("\nconst bit<8> X = 1;\n#include <no_such_file.p4>\n")
    with pytest.raises(P4Error) as info:
        preprocess_file(tmp_path / "m.p4")
    err = info.value
    assert (Path(err.loc.file), err.loc.line, err.loc.col) == (tmp_path / "m.p4", 3, 10)
    assert "cannot find include file 'no_such_file.p4'" in err.message
    assert str(DEFAULT_INCLUDE_DIR) in err.message  # says where it looked


def test_error_directive_and_several_cpp_errors(tmp_path: Path) -> None:
    (tmp_path / "e.p4").write_text('#error "unsupported target"\n#include "gone.p4"\n')
    with pytest.raises(P4Error) as info:
        preprocess_file(tmp_path / "e.p4")
    errs = info.value.errors if isinstance(info.value, P4ErrorGroup) else [info.value]
    assert "unsupported target" in errs[0].message and errs[0].loc.line == 1
    assert any("gone.p4" in e.message and e.loc.line == 2 for e in errs)


def test_warning_directive_is_kept_as_a_warning(tmp_path: Path) -> None:
    (tmp_path / "w.p4").write_text("#warning check me\nconst bit<8> X = 1;\n")
    pp = preprocess_file(tmp_path / "w.p4")
    assert len(pp.warnings) == 1 and pp.warnings[0].loc.line == 1 and "check me" in pp.warnings[0].message


def test_missing_source_file_and_missing_cpp(tmp_path: Path) -> None:
    with pytest.raises(P4Error) as info:
        preprocess_file(tmp_path / "absent.p4")
    assert info.value.loc.file.endswith("absent.p4") and "cannot open" in info.value.message
    (tmp_path / "ok.p4").write_text("const bit<8> X = 1;\n")
    with pytest.raises(P4Error) as info:
        preprocess_file(tmp_path / "ok.p4", cpp="no-such-preprocessor-xyz")
    assert "'no-such-preprocessor-xyz' not found" in info.value.message


def test_host_macros_do_not_leak_into_p4() -> None:
    # without -undef, cpp on Linux would turn `linux` and `unix` into 1
    prog = parse_text("const bit<8> linux = 1;\nconst bit<8> unix = 2;\n")
    assert [d.name for d in prog.declarations] == ["linux", "unix"]


def test_in_memory_source_keeps_its_name_and_default_include_dir() -> None:
    pp = preprocess_text("const bit<8> X = 1;\n", "mem.p4")
    assert pp.origin(pp.text.split("\n").index("const bit<8> X = 1;") + 1) == ("mem.p4", 1)
    if (DEFAULT_INCLUDE_DIR / "core.p4").is_file():
        prog = parse_text("#include <core.p4>\nconst bit<8> X = 1;\n", "mem.p4")
        files = {Path(d.loc.file).name for d in prog.declarations}
        assert {"core.p4", "mem.p4"} <= files


def test_map_lines_follows_markers() -> None:
    out = '# 1 "a.p4"\nx\n# 5 "b.p4" 1\ny\nz\n# 2 "a.p4" 2\nw\n'
    text, line_map = map_lines(out, "a.p4")
    lines = text.split("\n")
    assert [lines[i] for i in (1, 3, 4, 6)] == ["x", "y", "z", "w"]
    assert [line_map[i] for i in (1, 3, 4, 6)] == [("a.p4", 1), ("b.p4", 5), ("b.p4", 6), ("a.p4", 2)]
    assert lines[0] == lines[2] == lines[5] == ""  # markers never reach the lexer
