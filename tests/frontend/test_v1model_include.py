"""Our own core.p4 / v1model.p4: the guard macros programs test, and the @alias
annotations p4c's BMv2 back end turns into the BMv2 JSON's ``field_aliases``."""

from __future__ import annotations

from p4switch.frontend import ast
from p4switch.frontend.check import check_program
from p4switch.frontend.parser import parse_text

from .checkutil import PRELUDE

# standard_metadata_t field -> the BMv2 name simple_switch knows it by
ALIASES = {
    "enq_timestamp": "queueing_metadata.enq_timestamp",
    "enq_qdepth": "queueing_metadata.enq_qdepth",
    "deq_timedelta": "queueing_metadata.deq_timedelta",
    "deq_qdepth": "queueing_metadata.deq_qdepth",
    "ingress_global_timestamp": "intrinsic_metadata.ingress_global_timestamp",
    "egress_global_timestamp": "intrinsic_metadata.egress_global_timestamp",
    "mcast_grp": "intrinsic_metadata.mcast_grp",
    "egress_rid": "intrinsic_metadata.egress_rid",
    "priority": "intrinsic_metadata.priority",
}


def _standard_metadata() -> ast.StructLikeDecl:
    checked = check_program(parse_text(PRELUDE, "alias.p4"))
    decls = [d for d in checked.program.declarations
             if isinstance(d, ast.StructLikeDecl) and d.name == "standard_metadata_t"]
    assert len(decls) == 1
    return decls[0]


def test_standard_metadata_fields_carry_the_bmv2_aliases() -> None:
    sm = _standard_metadata()
    found = {}
    for f in sm.fields:
        ann = ast.find_annotation(f.annotations, "alias")
        if ann is not None:
            found[f.name] = ann.string_arg()
    assert found == ALIASES


def test_guard_macros_of_core_and_v1model_are_defined() -> None:
    src = PRELUDE + (
        "#ifndef _CORE_P4_\n#error core guard missing\n#endif\n"
        "#ifndef _V1_MODEL_P4_\n#error v1model guard missing\n#endif\n"
        "#ifdef _CORE_P4_\nconst bit<8> seen = 1;\n#endif\n"
    )
    program = parse_text(src, "guards.p4")
    assert any(isinstance(d, ast.ConstDecl) and d.name == "seen" for d in program.declarations)
