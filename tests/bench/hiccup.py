"""Machine pauses, told apart from the switch's own forwarding stalls.

Why: the soak asks for no forwarding stall above 20 ms, and on a virtual machine the
hypervisor now and then takes a vCPU away for tens of ms (steal time); the switch then stalls
and so does everything else on that core, the harness on the other core often too. A stall
measured at the receiver says nothing about whose it was. So one *hiccup meter* runs pinned on
each core at real-time priority (SCHED_FIFO, as root): it sleeps 1 ms at a time and records
every wake-up more than ``HICCUP_S`` late, with its wall-clock interval. At that priority
nothing in user space delays it, so a late wake-up means the core itself did not run: the
machine's pause, not the switch's. A meter costs a few µs per ms of its core (well under 1 %).

:func:`attribute` subtracts the pauses of the switch's core from each stall's interval; what
remains is the switch's own stall.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field

HICCUP_S = 0.005  # a wake-up later than this is recorded
MAX_RECORDS = 10_000  # per meter, so a pathological run cannot fill the memory

METER = textwrap.dedent(f"""
    import json, os, sys, time
    cpu, seconds = int(sys.argv[1]), float(sys.argv[2])
    os.sched_setaffinity(0, {{cpu}})
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        rt = True
    except (PermissionError, AttributeError, OSError):
        rt = False
    hiccups, worst = [], 0.0
    end = time.monotonic() + seconds
    print("ready", flush=True)
    prev = time.monotonic()
    while prev < end:
        time.sleep(0.001)
        now = time.monotonic()
        late = now - prev - 0.001
        if late > {HICCUP_S}:
            worst = max(worst, late)
            if len(hiccups) < {MAX_RECORDS}:
                wall_end = time.time()
                hiccups.append([wall_end - late, wall_end])
        prev = now
    print(json.dumps({{"cpu": cpu, "rt": rt, "hiccups": hiccups, "max_s": worst}}))
""")


@dataclass
class Meters:
    """One meter per core, for ``seconds``; :meth:`results` waits for them (bounded)."""

    cpus: list[int]
    seconds: float
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self) -> Meters:
        for cpu in self.cpus:
            p = subprocess.Popen([sys.executable, "-c", METER, str(cpu), str(self.seconds)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            p.stdout.readline()  # "ready"
            self.procs.append(p)
        return self

    def results(self) -> dict[int, dict]:
        out: dict[int, dict] = {}
        for cpu, p in zip(self.cpus, self.procs, strict=True):
            try:
                text = p.communicate(timeout=self.seconds + 30)[0]
                out[cpu] = json.loads(text.strip().splitlines()[-1])
            except (subprocess.TimeoutExpired, ValueError, IndexError):
                p.kill()
                p.communicate()
                out[cpu] = {"cpu": cpu, "rt": False, "hiccups": [], "max_s": 0.0, "failed": True}
        return out

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def overlap(a: float, b: float, intervals: list[list[float]]) -> float:
    """Total length of ``intervals`` (disjoint, as one meter's are) inside [a, b]."""
    return sum(max(0.0, min(b, e) - max(a, s)) for s, e in intervals)


def attribute(stalls: list[list[float]], pauses: list[list[float]], threshold: float = 0.020) -> dict:
    """Split stalls (wall-clock [start, end] intervals) into the machine's and the switch's.

    A stall's own part is its length minus the pauses of the switch's core inside it; the
    result counts stalls whose own part is above ``threshold`` and gives the longest own part.
    """
    own = [(e - s) - overlap(s, e, pauses) for s, e in stalls]
    return {"own_max_s": max(own, default=0.0),
            "own_over": sum(o > threshold for o in own),
            "paused": sum((e - s) > threshold >= o for (s, e), o in zip(stalls, own, strict=True))}
