"""``python -m p4switch.conformance --testdata DIR --out docs/conformance.md``."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from p4switch.conformance import classify, corpus
from p4switch.conformance.pool import run_tasks
from p4switch.conformance.report import Run, render


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m p4switch.conformance", description=__doc__)
    p.add_argument("--testdata", required=True, type=Path, help="p4c's testdata/ folder")
    p.add_argument("--out", type=Path, default=Path("docs/conformance.md"), help="report to write")
    p.add_argument("--commit", help="p4c commit of the corpus (default: git rev-parse HEAD in DIR)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (2)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per program before it counts as a hang")
    p.add_argument("--only", default="", help="run only programs whose file name contains this text")
    p.add_argument("--no-stf", action="store_true", help="skip the STF tests")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def corpus_commit(testdata: Path, given: str | None) -> str:
    """``given``, else the HEAD of the git checkout holding ``testdata``, else 'unknown'."""
    if given:
        return given
    try:
        r = subprocess.run(["git", "-C", str(testdata), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def _machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()}"


def _progress(done: int, total: int) -> None:
    if done % 100 == 0 or done == total:
        print(f"  {done}/{total}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if not (args.testdata / corpus.SAMPLES).is_dir():
        print(f"error: --testdata {args.testdata}: no {corpus.SAMPLES} folder there", file=sys.stderr)
        return 2
    start = time.monotonic()
    samples = [s for s in corpus.samples(args.testdata) if args.only in s.path.name]
    errors = [e for e in corpus.error_programs(args.testdata) if args.only in e.path.name]
    tasks = [{"kind": "front", "path": str(s.path), "p4info": True,
              "expected_p4info": str(s.p4info) if s.p4info else None} for s in samples]
    tasks += [{"kind": "front", "path": str(e.path), "p4info": True} for e in errors]
    print(f"front end: {len(tasks)} programs, {args.jobs} workers", file=sys.stderr)
    answers = run_tasks(tasks, args.jobs, args.timeout, _progress)
    run = _classify(args, samples, errors, answers)
    run.seconds = time.monotonic() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(run))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _classify(args: argparse.Namespace, samples: list[corpus.Sample], errors: list[corpus.ErrorProgram],
              answers: list[dict]) -> Run:
    v1, other, errs, p4i, stf = (classify.Section() for _ in range(5))
    stf_tasks, stf_names = [], []
    for s, a in zip(samples, answers):
        name = s.path.name
        section = v1 if a.get("arch") == "v1model" else other
        section.verdicts.append(classify.sample_verdict(name, a))
        if s.p4info is not None and a.get("arch") == "v1model":
            p4i.verdicts.append(classify.p4info_verdict(name, a))
        if s.stf is not None and a.get("arch") == "v1model":
            stf_tasks.append({"kind": "stf", "program": str(s.path), "stf": str(s.stf)})
            stf_names.append(name)
    for e, a in zip(errors, answers[len(samples):]):
        errs.verdicts.append(classify.error_verdict(e.path.name, a, e.p4c_line))
    note = "--no-stf" if args.no_stf else ""
    if not args.no_stf and stf_tasks:
        note = _run_stf(args, stf_tasks, stf_names, stf)
    cmd = "python -m p4switch.conformance " + " ".join(args.argv)
    return Run(commit=corpus_commit(args.testdata, args.commit), command=cmd.strip(),
               date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
               machine=_machine(), seconds=0.0, v1model=v1, other=other, errors=errs, p4info=p4i,
               stf=stf, stf_note=note)


def _run_stf(args: argparse.Namespace, tasks: list[dict], names: list[str], section: classify.Section) -> str:
    probe = run_tasks(tasks[:1], 1, args.timeout)[0]
    if probe.get("outcome") == "not_run":
        return probe.get("message", "p4switch.stf missing")
    print(f"STF: {len(tasks)} tests", file=sys.stderr)
    answers = [probe, *run_tasks(tasks[1:], args.jobs, args.timeout, _progress)]
    for name, a in zip(names, answers):
        section.verdicts.append(classify.stf_verdict(name, a))
    return ""


if __name__ == "__main__":
    sys.exit(main())
