"""The front end's passes in order on a file: preprocess, parse, check.

Why a module of its own, not the package's ``__init__``: every pass imports its siblings
(``from p4switch.frontend import ast``), so a package ``__init__`` that ran the passes would
import them back. Run one pass alone from its module (``parser.parse_file``,
``check.check_program``); every problem in the source is raised as a
:class:`p4switch.frontend.errors.P4Error` (or ``P4ErrorGroup``) located in the original files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from p4switch.frontend.check import CheckedProgram, check_program
from p4switch.frontend.parser import parse_file

__all__ = ["compile_file"]


def compile_file(
    path: str | Path, include_dirs: Sequence[str | Path] = (), defines: Iterable[str] = ()
) -> CheckedProgram:
    """Preprocess, parse and check ``path``; returns the checker's ``CheckedProgram``."""
    return check_program(parse_file(path, include_dirs, defines))
