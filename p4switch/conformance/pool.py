"""Run tasks in worker processes, each task with a time limit (a hang is a finding).

Each of ``jobs`` threads owns one ``python -m p4switch.conformance.worker`` process and
feeds it tasks one at a time. A task that takes longer than ``timeout`` seconds gets the
answer ``{"outcome": "timeout"}``; its worker is killed and replaced, so one hang costs
one task, not the run. A worker that dies (e.g. a segfault or running out of memory)
answers ``{"outcome": "crash"}`` for its task.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

Task = dict[str, Any]


class _Worker:
    """One worker process and its line-oriented conversation."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "p4switch.conformance.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.buf = b""

    def ask(self, task: Task, timeout: float) -> Task:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(task).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"outcome": "crash", "message": "worker exited"}
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"outcome": "timeout", "message": f"no answer within {timeout:g} s"}
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return {"outcome": "crash", "message": f"worker exited with status {self.proc.wait()}"}
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def run_tasks(
    tasks: Sequence[Task],
    jobs: int = 2,
    timeout: float = 120.0,
    progress: Callable[[int, int], None] | None = None,
) -> list[Task]:
    """The answers to ``tasks`` in the same order."""
    answers: list[Task | None] = [None] * len(tasks)
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(tasks)):
        todo.put(i)
    done = [0]
    lock = threading.Lock()

    def slot() -> None:
        worker = _Worker()
        try:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                answer = worker.ask(tasks[i], timeout)
                if answer.get("outcome") in ("timeout", "crash"):
                    worker.close()
                    worker = _Worker()
                answers[i] = answer
                with lock:
                    done[0] += 1
                    if progress is not None:
                        progress(done[0], len(tasks))
        finally:
            worker.close()

    threads = [threading.Thread(target=slot, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [a if a is not None else {"outcome": "crash", "message": "not run"} for a in answers]
