"""One task of the conformance run, executed inside a worker process.

A task is a JSON object; the answer is a JSON object. Kinds:

* ``front``: preprocess, parse, check and (``p4info``) build the P4Info of ``path``;
  compare it with ``expected_p4info`` when given. The answer says the architecture
  (``v1model`` when the preprocessed text includes a ``v1model.p4``), the ``outcome``
  (``ok``, ``error`` with the first errors and their locations, ``traceback``) and the
  P4Info difference classes.
* ``stf``: ``p4switch.stf.run_stf_file(program, stf)`` -> ``passed`` and ``message``.

``serve()`` answers tasks read line by line from standard input; the program's own
prints go to standard error so that standard output carries only answers.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

_V1MODEL_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"][^>"]*v1model\.p4[>"]', re.M)
MAX_ERRORS = 3


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """The answer to one task; never raises (a bug becomes a ``traceback`` outcome)."""
    try:
        if task["kind"] == "front":
            return _front(task)
        if task["kind"] == "stf":
            return _stf(task)
        return {"outcome": "traceback", "traceback": f"unknown task kind {task['kind']!r}"}
    except BaseException as exc:  # noqa: BLE001 -- everything a pass lets escape is a finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"outcome": "traceback", "traceback": _short_traceback(exc)}


def _short_traceback(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
    return f"{type(exc).__name__}: {str(exc)[:200]} [{where}]"


def _errors(err: Any) -> list[dict[str, Any]]:
    from p4switch.frontend.errors import iter_errors

    out = []
    for e in list(iter_errors(err))[:MAX_ERRORS]:
        out.append({"file": e.loc.file, "line": e.loc.line, "col": e.loc.col, "message": e.message})
    return out


def _arch_of_source(path: Path) -> str:
    """Without a preprocessed text: v1model if the file itself includes a v1model.p4."""
    try:
        return "v1model" if _V1MODEL_INCLUDE.search(path.read_text(errors="replace")) else "other"
    except OSError:
        return "other"


def _front(task: dict[str, Any]) -> dict[str, Any]:
    from p4switch.frontend.check import check_program
    from p4switch.frontend.errors import P4Error
    from p4switch.frontend.parser import parse_preprocessed
    from p4switch.frontend.preprocess import preprocess_file

    path = Path(task["path"])
    result: dict[str, Any] = {"arch": _arch_of_source(path), "stage": "preprocess"}
    try:
        pp = preprocess_file(path, task.get("include_dirs", ()))
        files = {Path(f).name for f, _ in pp.line_map}
        result["arch"] = "v1model" if "v1model.p4" in files else "other"
        result["stage"] = "parse"
        program = parse_preprocessed(pp)
        result["stage"] = "check"
        checked = check_program(program)
        if task.get("p4info"):
            from p4switch.frontend.p4info import build_p4info

            result["stage"] = "p4info"
            info = build_p4info(checked)
            expected = task.get("expected_p4info")
            if expected:
                from p4switch.conformance.p4info_diff import diff_p4info, read_expected

                result["p4info_diffs"] = diff_p4info(info, read_expected(Path(expected)))
    except P4Error as err:
        result["outcome"] = "error"
        result["errors"] = _errors(err)
        return result
    except RecursionError as exc:
        result["outcome"] = "traceback"
        result["traceback"] = _short_traceback(exc)
        return result
    result["outcome"] = "ok"
    result["stage"] = "done"
    return result


def _stf(task: dict[str, Any]) -> dict[str, Any]:
    try:
        import p4switch.stf as stf
    except ImportError:
        return {"outcome": "not_run", "message": "p4switch.stf missing"}
    res = stf.run_stf_file(Path(task["program"]), Path(task["stf"]), task.get("include_dirs", ()))
    return {"outcome": "passed" if res.passed else "failed", "message": str(res.message)}


def serve() -> None:
    """Answer JSON tasks from stdin, one per line, on the original stdout."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = run_task(json.loads(line))
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    serve()
