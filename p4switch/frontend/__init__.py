"""P4_16 front end: preprocess -> parse -> check -> P4Info (see docs/architecture.md).

Two conveniences run the passes in order; every problem in the source is raised as a
:class:`p4switch.frontend.errors.P4Error` (or ``P4ErrorGroup``) located in the original
files. Imports are lazy so that importing the package (e.g. for ``hbh --help``) is cheap.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4switch.frontend import ast

CHECK_MODULE = "p4switch.frontend.check"


def parse_file(
    path: str | Path, include_dirs: Sequence[str | Path] = (), defines: Iterable[str] = ()
) -> ast.Program:
    """Preprocess and parse ``path`` into an unchecked :class:`ast.Program`."""
    from p4switch.frontend.parser import parse_file as _parse_file

    return _parse_file(path, include_dirs, defines)


def _check_program() -> Any:
    """``check.check_program`` if the checker pass is installed, else None."""
    if importlib.util.find_spec(CHECK_MODULE) is None:
        return None
    return getattr(importlib.import_module(CHECK_MODULE), "check_program", None)


def checker_available() -> bool:
    """Whether the checker pass (``p4switch.frontend.check.check_program``) is installed."""
    return _check_program() is not None


def check_program(program: ast.Program) -> Any:
    """Run the checker on a parsed program and return its ``CheckedProgram``.

    (Not called ``check``: that name is the ``p4switch.frontend.check`` sub-package, which
    replaces a same-named package attribute as soon as it is imported.)
    """
    fn = _check_program()
    if fn is None:
        raise NotImplementedError("the P4 checker (p4switch.frontend.check) is not installed yet")
    return fn(program)


def compile_file(
    path: str | Path, include_dirs: Sequence[str | Path] = (), defines: Iterable[str] = ()
) -> Any:
    """Preprocess, parse and check ``path``; returns the checker's ``CheckedProgram``.

    While the checker pass is absent this returns the parsed ``ast.Program``.
    """
    program = parse_file(path, include_dirs, defines)
    return check_program(program) if checker_available() else program
