"""``hbh run TOPO --set TARGET.KEY=VALUE``: one run of a file with some of its values changed.

Why through the sweep's grammar and points: a one-off change is a sweep point with one value per
setting, so it takes exactly ``hbh sweep``'s ``--set`` syntax (docs/howto/sweeps.md) and passes the
loader's checks with the loader's messages, instead of a copy of the file edited by hand.
"""

from __future__ import annotations

from pathlib import Path

from topo.file.points import Point, load_base, point_topology
from topo.file.settings import SweepError, parse_settings
from topo.net.model import Topology

__all__ = ["topology_with"]


def topology_with(path: str | Path, sets: list[str]) -> Topology:
    """The topology file at ``path`` with each ``--set`` applied; SweepError/TopologyError (one line)."""
    settings = parse_settings(sets)
    for s in settings:
        if len(s.values) != 1:
            raise SweepError(f"--set {s.text!r}: one value per setting in a single run (hbh sweep runs "
                             "several)")
    base = load_base(path)
    if not settings:
        return base.topo
    point = Point(tuple((s, s.values[0]) for s in settings), None)
    try:
        return point_topology(base, point)
    except SweepError as exc:  # the point is the run itself: its label would only repeat the --set
        raise SweepError(str(exc).removeprefix(f"point {point.label()}: ")) from None
