"""Whether a real-time (netns) run kept up with its own emulation, from measurements of the run.

Why: on a loaded machine the switch, link and host processes are not scheduled in time, and a
netns run then measures the machine, not the protocol (docs/howto/tcp.md, "Validation against the
kernel"). The load average says that the machine was busy, not whether this run suffered. This
measures it in the run: the netns runner wakes every sampling period (100 ms) at a set time,
in the same scheduling class as the switch and host processes it forked (``chrt`` is inherited);
how late those wake-ups come is how late any of them may run. A wake-up later than
``LATE_LIMIT_NS`` means a stall of that length somewhere on the machine, long enough to hold
back tens of frames at 20 Mb/s (one frame time is 0.6 ms) and to pass for a queue in the RTT.

A run kept up when its wake-ups' p99 lateness is within ``LATE_LIMIT_NS`` and none came later
than ``STALL_LIMIT_NS``, and no host's frame relay put a frame on the wire more than
``RELAY_STALL_NS`` after its modelled time; :func:`verdict` says which limit a run broke. The
simulator has no such measure (virtual time always keeps up).

Why the relays too: the runner's wake-ups come every 100 ms on one core, and a stall of the
data path can fall between them. At 500 Mb/s on paper-1router (docs/howto/netns.md) the runner's
wake-ups were never more than 0.5 ms late while H1's relay, stopped by the kernel's real-time
throttling, put 212-786 frames out more than 20 ms late, bursts the buffers downstream took for
the network's.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any

from topo.net.stats import percentile

__all__ = ["keepup_summary", "relay_summary", "verdict", "CpuMeter", "LATE_LIMIT_NS", "STALL_LIMIT_NS",
           "RELAY_STALL_NS"]

LATE_LIMIT_NS = 5_000_000
STALL_LIMIT_NS = 100_000_000
#: a frame a host's relay put out later than this after its modelled time (``late_over_20ms``)
RELAY_STALL_NS = 20_000_000


def keepup_summary(lateness_ns: list[int]) -> dict[str, Any]:
    """The summary's ``realtime`` block: the wake-ups' lateness (ms) and the load average at the end."""
    load = os.getloadavg()
    out: dict[str, Any] = {"wakeups": len(lateness_ns), "load_1min": round(load[0], 2), "cpus": os.cpu_count()}
    if lateness_ns:
        out.update({"late_p50_ms": round(percentile(lateness_ns, 0.5) / 1e6, 3),
                    "late_p99_ms": round(percentile(lateness_ns, 0.99) / 1e6, 3),
                    "late_max_ms": round(max(lateness_ns) / 1e6, 3),
                    "late_over_limit": sum(1 for x in lateness_ns if x > LATE_LIMIT_NS)})
    out["kept_up"] = verdict(out) == "yes"
    return out


def verdict(realtime: dict[str, Any] | None) -> str:
    """"yes", or "no: ..." naming the limit broken; "-" for a run without the measure (the simulator)."""
    if not realtime or not realtime.get("wakeups"):
        return "-"
    if realtime["late_max_ms"] * 1e6 > STALL_LIMIT_NS:
        return f"no: a {realtime['late_max_ms']:.0f} ms stall"
    if realtime["late_p99_ms"] * 1e6 > LATE_LIMIT_NS:
        return f"no: wake-ups {realtime['late_p99_ms']:.1f} ms late (p99)"
    for name, relay in sorted((realtime.get("host_relays") or {}).items()):
        if relay.get("late_over_20ms"):
            return (f"no: {name}'s relay put {relay['late_over_20ms']} frames out more than "
                    f"{RELAY_STALL_NS // 1_000_000} ms late (at most {relay['late_max_ms']:g} ms)")
    return "yes"


def relay_summary(stats: dict[str, int]) -> dict[str, Any]:
    """A host's frame relay (engine/src/hosts/hostrelay.rs): how late its frames reached the socket after
    their modelled wire time and delay (the stalls the Python frame loop had, docs/howto/tcp.md), and
    what it carried."""
    sent = stats["tx_frames"] + stats["tx_dropped"]
    return {"frames_sent": sent, "frames_received": stats["rx_frames"], "to_tun": stats["rx_to_tun"],
            "late_mean_ms": round(stats["late_sum_ns"] / sent / 1e6, 4) if sent else 0.0,
            "late_max_ms": round(stats["late_max_ns"] / 1e6, 3),
            "late_over_1ms": stats["late_over_1ms"], "late_over_5ms": stats["late_over_5ms"],
            "late_over_20ms": stats["late_over_20ms"], "tx_dropped": stats["tx_dropped"],
            "to_python_dropped": stats["to_python_dropped"]}


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` used so far (None: it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CpuMeter:
    """How much of the machine a run's processes used between :meth:`start` and :meth:`stop`, by
    kind (switches, hosts, link emulators; the runner: this process, its agents and sampling).

    Why: a run that did not keep up says the machine could not serve it, not why; the cores its
    own processes kept busy tell apart a run that needed more than the machine (docs/howto/netns.md,
    "At higher link rates") from one that shared the machine with other work (the load average
    beside it)."""

    def __init__(self) -> None:
        self._start: dict[str, dict[int, float]] = {}
        self._self0 = 0.0
        self._wall0 = 0.0
        self.summary: dict[str, Any] = {}

    def start(self, pids: dict[str, list[int]]) -> None:
        """``pids``: the run's processes by kind, their CPU counted from now."""
        self._start = {kind: {p: c for p in ps if (c := _cpu_s(p)) is not None} for kind, ps in pids.items() if ps}
        self._self0, self._wall0 = _self_cpu_s(), time.monotonic()

    def stop(self) -> dict[str, Any]:
        """The cores each kind kept busy on average since :meth:`start` (1.0: one core), their
        total, and the machine's cores; the processes still there are read now."""
        wall = time.monotonic() - self._wall0
        if not self._start or wall <= 0:
            return self.summary
        used = {kind: sum(max((_cpu_s(p) or c0) - c0, 0.0) for p, c0 in ps.items()) for kind, ps in self._start.items()}
        used["runner"] = _self_cpu_s() - self._self0
        cores = {kind: round(v / wall, 2) for kind, v in used.items()}
        self.summary = {**cores, "total": round(sum(used.values()) / wall, 2), "cpus": os.cpu_count()}
        return self.summary
