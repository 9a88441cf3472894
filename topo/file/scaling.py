"""A shipped topology at k times its rates, with its gains, floor and interval left out.

Why one place: issue 21's question is what a user gets who edits nothing but the rates (and the
playout and R_max that follow them) or the link delays; the tests and ``make results`` ask it of
the same files in the same way. What the file no longer gives, topo/analysis/derive.py derives.
"""

from __future__ import annotations

import re
from pathlib import Path

from topo.file.schema import load_topology_text
from topo.net.model import Topology

__all__ = ["scaled_text", "scaled_topology"]

ROOT = Path(__file__).resolve().parents[2]
_RATE_KEYS = ("rate", "playout", "r_max")


def _times(match: re.Match[str], k: float) -> str:
    return f"{match.group(1)}: {float(match.group(2)) * k:g}Mbps"


def scaled_text(name: str, k: float, delay: str | None = None) -> str:
    """topo/NAME.yaml with every Mb/s rate, playout and R_max times ``k``, every link delay set to
    ``delay`` if given, and the defaults' gains, floor and interval removed (O_min kept)."""
    src = (ROOT / "topo" / f"{name}.yaml").read_text()
    src = re.sub(rf"\b({'|'.join(_RATE_KEYS)}): (\d+(?:\.\d+)?)Mbps", lambda m: _times(m, k), src)
    src = re.sub(r"  alinea: \{[^}]*\}\n", "  alinea: {o_min: 15%}\n", src)
    if delay is not None:
        src = re.sub(r"\bdelay: \d+(?:\.\d+)?ms", f"delay: {delay}", src)
    return src


def scaled_topology(name: str, k: float, delay: str | None = None) -> Topology:
    return load_topology_text(scaled_text(name, k, delay), f"{name}-x{k:g}.yaml")
