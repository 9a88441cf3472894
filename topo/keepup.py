"""Whether a real-time (netns) run kept up with its own emulation, from measurements of the run.

Why: on a loaded machine the switch, link and host processes are not scheduled in time, and a
netns run then measures the machine, not the protocol (docs/tcp.md, "Validation against the
kernel"). The load average says that the machine was busy, not whether this run suffered. This
measures it in the run: the netns runner wakes every sampling period (100 ms) at a set time,
in the same scheduling class as the switch and host processes it forked (``chrt`` is inherited);
how late those wake-ups come is how late any of them may run. A wake-up later than
``LATE_LIMIT_NS`` means a stall of that length somewhere on the machine, long enough to hold
back tens of frames at 20 Mb/s (one frame time is 0.6 ms) and to pass for a queue in the RTT.

A run kept up when its wake-ups' p99 lateness is within ``LATE_LIMIT_NS`` and none came later
than ``STALL_LIMIT_NS``; :func:`verdict` says which limit a run broke. The simulator has no such
measure (virtual time always keeps up).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["keepup_summary", "relay_summary", "verdict", "LATE_LIMIT_NS", "STALL_LIMIT_NS"]

LATE_LIMIT_NS = 5_000_000
STALL_LIMIT_NS = 100_000_000


def _percentile(values: list[int], q: float) -> int:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def keepup_summary(lateness_ns: list[int]) -> dict[str, Any]:
    """The summary's ``realtime`` block: the wake-ups' lateness (ms) and the load average at the end."""
    load = os.getloadavg()
    out: dict[str, Any] = {"wakeups": len(lateness_ns), "load_1min": round(load[0], 2), "cpus": os.cpu_count()}
    if lateness_ns:
        out.update({"late_p50_ms": round(_percentile(lateness_ns, 0.5) / 1e6, 3),
                    "late_p99_ms": round(_percentile(lateness_ns, 0.99) / 1e6, 3),
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
    return "yes"


def relay_summary(stats: dict[str, int]) -> dict[str, Any]:
    """A host's frame relay (engine/src/hostrelay.rs): how late its frames reached the socket after
    their modelled wire time and delay (the stalls the Python frame loop had, docs/tcp.md), and
    what it carried."""
    sent = stats["tx_frames"] + stats["tx_dropped"]
    return {"frames_sent": sent, "frames_received": stats["rx_frames"], "to_tun": stats["rx_to_tun"],
            "late_mean_ms": round(stats["late_sum_ns"] / sent / 1e6, 4) if sent else 0.0,
            "late_max_ms": round(stats["late_max_ns"] / 1e6, 3),
            "late_over_1ms": stats["late_over_1ms"], "late_over_5ms": stats["late_over_5ms"],
            "late_over_20ms": stats["late_over_20ms"], "tx_dropped": stats["tx_dropped"],
            "to_python_dropped": stats["to_python_dropped"]}
