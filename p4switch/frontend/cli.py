"""``hbh p4 ...``: check a P4_16 program, write its P4Info.

Errors in the program print as ``file:line:col: error: message`` with the source line and
a caret, and the command exits 1; a pass that is not installed yet exits 2 with a clear
message. Internal failures print one line (exit 3) unless ``P4SWITCH_TRACEBACK=1``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERRORS, EXIT_MISSING, EXIT_INTERNAL = 0, 1, 2, 3
P4INFO_MODULE = "p4switch.frontend.p4info"


def register(subparsers: Any) -> None:
    """Add the ``p4`` command and its sub-commands to the ``hbh`` dispatcher."""
    p4 = subparsers.add_parser("p4", help="P4_16 front end: check programs, write P4Info")
    sub = p4.add_subparsers(dest="p4_command", metavar="SUBCOMMAND")
    sub.required = True

    check = sub.add_parser("check", help="preprocess, parse and type-check a P4_16 program")
    _add_source_args(check)
    check.set_defaults(func=run_check)

    info = sub.add_parser("info", help="write the P4Info of a P4_16 program")
    _add_source_args(info)
    info.add_argument("-o", "--output", required=True, help="P4Info output file")
    info.add_argument("--format", choices=("text", "binary"), default="text",
                      help="protobuf text format (default) or binary wire format")
    info.set_defaults(func=run_info)


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="P4_16 source file")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the #include search path (before p4src/include)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro")


def _print_diagnostics(err: Any) -> None:
    from p4switch.frontend.errors import format_error

    print(format_error(err), file=sys.stderr)


def _guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn P4Error into printed diagnostics and other failures into one line."""

    def run(args: argparse.Namespace) -> int:
        from p4switch.frontend.errors import P4Error

        try:
            return fn(args)
        except P4Error as err:
            _print_diagnostics(err)
            return EXIT_ERRORS
        except Exception as exc:  # a bug in a pass must not look like a crash of the program
            if os.environ.get("P4SWITCH_TRACEBACK") == "1":
                raise
            print(f"internal error in the P4 front end: {type(exc).__name__}: {exc} "
                  "(set P4SWITCH_TRACEBACK=1 for details)", file=sys.stderr)
            return EXIT_INTERNAL

    return run


def _front_end(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """Parse and check; returns (program, checked) or None if the checker is missing."""
    from p4switch.frontend import check_program, checker_available
    from p4switch.frontend.parser import parse_preprocessed
    from p4switch.frontend.preprocess import preprocess_file

    pp = preprocess_file(args.file, args.include_dirs, args.defines)
    for w in pp.warnings:
        _print_diagnostics(w)
    program = parse_preprocessed(pp)
    if not checker_available():
        return program, None
    checked = check_program(program)
    for w in getattr(checked, "warnings", None) or []:
        _print_diagnostics(w)
    return program, checked


@_guarded
def run_check(args: argparse.Namespace) -> int:
    program, checked = _front_end(args)
    if checked is None:
        print(f"{args.file}: parsed {len(program.declarations)} declarations; "
              "type checking is not available yet (p4switch.frontend.check)", file=sys.stderr)
        return EXIT_MISSING
    print(f"{args.file}: ok")
    return EXIT_OK


@_guarded
def run_info(args: argparse.Namespace) -> int:
    _program, checked = _front_end(args)
    if checked is None:
        print("error: P4Info needs the type checker (p4switch.frontend.check), "
              "which is not implemented yet", file=sys.stderr)
        return EXIT_MISSING
    if importlib.util.find_spec(P4INFO_MODULE) is None:
        print(f"error: P4Info generation ({P4INFO_MODULE}) is not implemented yet", file=sys.stderr)
        return EXIT_MISSING
    p4info = importlib.import_module(P4INFO_MODULE).build_p4info(checked)
    data = _serialize(p4info, args.format)
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERRORS
    return EXIT_OK


def _serialize(message: Any, fmt: str) -> bytes:
    if fmt == "binary":
        return message.SerializeToString()
    from google.protobuf import text_format

    return text_format.MessageToString(message).encode()
