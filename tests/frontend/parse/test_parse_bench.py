"""Parse-time sanity for the project's program: the whole front end must stay well under 1 s.

No timing assertion (machines differ); the durations are printed for `pytest -s` and the
test checks that the program really went through every stage.
"""

from __future__ import annotations

import time
from pathlib import Path

from p4switch.frontend import ast as A
from p4switch.frontend.parser import parse_preprocessed, tokenize
from p4switch.frontend.preprocess import preprocess_file
from tests.paths import ROOT

ALINEA = ROOT / "p4src" / "alinea.p4"


def test_alinea_with_v1model_parses_and_reports_stage_times() -> None:
    t0 = time.perf_counter()
    pp = preprocess_file(ALINEA)
    t1 = time.perf_counter()
    tokens = tokenize(pp)
    t2 = time.perf_counter()
    program = parse_preprocessed(pp)
    t3 = time.perf_counter()
    files = {Path(d.loc.file).name for d in program.declarations}
    assert {"core.p4", "v1model.p4", "alinea.p4"} <= files
    assert any(isinstance(d, A.ControlDecl) for d in program.declarations)
    assert any(isinstance(d, A.ParserDecl) for d in program.declarations)
    assert program.declarations[-1].name == "main"
    nodes = sum(1 for _ in A.walk(program))
    print(f"\ncpp {1e3 * (t1 - t0):.1f} ms, lex {1e3 * (t2 - t1):.1f} ms ({len(tokens)} tokens), "
          f"lex+parse {1e3 * (t3 - t2):.1f} ms ({nodes} nodes)")
