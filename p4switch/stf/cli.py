"""``p4switch-stf PROGRAM.p4 TEST.stf``: run a p4c STF test on p4switch.

Why: BMv2 users keep their packet tests as p4c ``.stf`` files; this runs them unchanged on
p4switch. Prints ``PASS``/``FAIL`` (with the failing STF line); exit 0 pass, 1 fail, 2 bad
input (a missing or unreadable file, a program with errors, bad usage).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from p4switch.device import compile_file
from p4switch.frontend.errors import P4Error, format_error

from .runner import run_stf_text
from .script import StfSyntaxError, parse_stf

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4switch-stf", description="Run a p4c STF test on p4switch (v1model).")
    p.add_argument("program", type=Path, help="the P4_16 v1model program (.p4)")
    p.add_argument("stf", type=Path, help="the STF test file (.stf)")
    p.add_argument("-I", dest="include_dirs", action="append", type=Path, default=[], metavar="DIR",
                   help="include directory for the C preprocessor (repeatable)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for what, path in (("PROGRAM", args.program), ("TEST", args.stf)):
        if not path.is_file():
            print(f"p4switch-stf: {what} {path}: no such file", file=sys.stderr)
            return 2
    try:
        text = args.stf.read_text(encoding="utf-8")
        parse_stf(text, str(args.stf))
        program = compile_file(args.program, [str(d) for d in args.include_dirs])
    except (OSError, UnicodeDecodeError) as exc:
        print(f"p4switch-stf: cannot read {getattr(exc, 'filename', None) or args.stf}: {exc}", file=sys.stderr)
        return 2
    except StfSyntaxError as exc:
        print(f"p4switch-stf: {exc}", file=sys.stderr)
        return 2
    except P4Error as err:
        print(format_error(err), file=sys.stderr)
        return 2
    result = run_stf_text(program, text, str(args.stf))
    if result.passed:
        print(f"PASS {args.stf}")
        return 0
    print(f"FAIL {args.stf}: {result.message}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
