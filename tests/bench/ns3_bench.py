"""The simulator against ns-3 on the paper-5router line (issue 22), measured in one run.

ns-3 comes from PyPI (``ns3``, pinned here) into its own environment, ``build/ns3-venv``, never
the project's .venv: ``make bench`` builds it (``make ns3-venv``). tests/bench/ns3_line.py is the
ns-3 side; the simulator side is sim_bench.HOPS_SCRIPT on the same line at the same rates
(sim_bench.bench_peers runs both in turns, fresh processes, so the ratio is taken on one machine
under the same load).
"""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

from tests.bench import spread

ROOT = Path(__file__).resolve().parents[2]
NS3_PIN = "ns3==3.44.post0"
NS3_VENV = ROOT / "build" / "ns3-venv"
NS3_PY = NS3_VENV / "bin" / "python"
SECTION = "simulator against ns-3 (paper-5router line)"


def ns3_reason() -> str | None:
    """Why ns-3 cannot run here (None: it can)."""
    if not NS3_PY.exists():
        return f"{NS3_VENV} missing: `make ns3-venv` installs {NS3_PIN} there"
    out = subprocess.run([str(NS3_PY), "-c", "from ns import ns; ns.Simulator"], capture_output=True, text=True,
                         timeout=600, check=False)
    if out.returncode:
        tail = " ".join((out.stderr or out.stdout).strip().splitlines()[-3:])
        return f"{NS3_PIN} in {NS3_VENV} does not import: {tail[:300]}"
    return None


def ns3_hops(factors: tuple[int, ...], seconds: float) -> dict[int, tuple[int, float, float]]:
    """k -> (packet-hops, wall and CPU seconds of ``Simulator::Run`` alone) of the line x ``k`` in ns-3, one process."""
    out = subprocess.run([str(NS3_PY), str(ROOT / "tests" / "bench" / "ns3_line.py"), "--k",
                          ",".join(map(str, factors)), "--seconds", str(seconds)],
                         capture_output=True, text=True, timeout=1800, check=True)
    got = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {g["k"]: (int(g["hops"]), g["wall"], g["cpu"]) for g in got}


def _ahead(ns3: float, hbh: float) -> str:
    """Which of the two is faster, and by how much (a ratio >= 1, to two decimals: they are close)."""
    return f"ns-3 ahead by {ns3 / hbh:.2f}x" if ns3 > hbh else f"hbh ahead by {hbh / ns3:.2f}x"


def row(rep: Any, k: int, seconds: float, rates: dict[str, list[float]], hops: dict[str, int],
        cpu: dict[str, list[float]]) -> None:
    """The row of one rate: medians of rounds taken in turn with the simulator (sim_bench.bench_peers)."""
    ns3, hbh = statistics.median(rates["ns3"]), statistics.median(rates["now"])
    ns3_cpu, hbh_cpu = statistics.median(cpu["ns3"]), statistics.median(cpu["now"])
    rep.add(SECTION, f"links {2 * k}/{3 * k} Mb/s: ns-3 packet-hops/s / hbh sim packet-hops/s",
            f"{ns3:,.0f} / {hbh:,.0f}",
            f"{_ahead(ns3, hbh)} (per CPU second: {ns3_cpu:,.0f} / {hbh_cpu:,.0f}, {_ahead(ns3_cpu, hbh_cpu)}); "
            f"hbh at {hbh * seconds / hops['now']:.2g}x real time "
            f"({seconds:g} s virtual); median of {len(rates['now'])} round(s) taken in turn, each a fresh process, "
            f"the run alone timed (set-up excluded); rounds ns-3 {spread(rates['ns3'])}, hbh {spread(rates['now'])}; "
            f"packet-hops ns-3 {hops['ns3']:,}, hbh {hops['now']:,}")
