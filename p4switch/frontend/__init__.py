"""P4_16 front end: preprocess -> parse -> check -> P4Info (see docs/architecture.md).

Two conveniences run the passes in order; every problem in the source is raised as a
:class:`p4switch.frontend.errors.P4Error` (or ``P4ErrorGroup``) located in the original
files. Imports are lazy so that importing the package (e.g. for ``hbh --help``) is cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4switch.frontend import ast

def parse_file(
    path: str | Path, include_dirs: Sequence[str | Path] = (), defines: Iterable[str] = ()
) -> ast.Program:
    """Preprocess and parse ``path`` into an unchecked :class:`ast.Program`."""
    from p4switch.frontend.parser import parse_file as _parse_file

    return _parse_file(path, include_dirs, defines)


def check_program(program: ast.Program) -> Any:
    """Run the checker on a parsed program and return its ``CheckedProgram``.

    (Not called ``check``: that name is the ``p4switch.frontend.check`` sub-package, which
    replaces a same-named package attribute as soon as it is imported.)
    """
    from p4switch.frontend.check import check_program as _check

    return _check(program)


def compile_file(
    path: str | Path, include_dirs: Sequence[str | Path] = (), defines: Iterable[str] = ()
) -> Any:
    """Preprocess, parse and check ``path``; returns the checker's ``CheckedProgram``."""
    return check_program(parse_file(path, include_dirs, defines))
