"""A p4switch made BMv2-like behind link emulators: the link pacing's check where BMv2 is absent.

Why: topo/netns/link_pacing.py keeps a slow link's backlog in the switch on BMv2. Without a BMv2, its
wiring and its effect are checked on p4switch made to look like BMv2 from the links' side: no port
link model (``--port-bitrate``/``--port-delay`` dropped), BMv2's queue model (enqueue-time
departures, the default), and every link through a :mod:`topo.netns.linkemu` process, as a BMv2 run on a
kernel without netem has them. With ``--no-pace`` the pacing is left out (the hidden queue of
docs/howto/bmv2.md). Root; seeded.

    sudo .venv/bin/python -m tests.bench.tools.bmv2_like topo/capacity-drop.yaml --duration 12s --drop-at 6s \
        [--no-pace] [--out DIR]

Prints the run's ``link_backlog`` (per emulated way: most frames waiting, frames left at the end)
and its notices.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import topo.netns.network as netns
from controlplane.units import parse_duration_ns
from topo.file.schema import load_topology
from topo.run.runner import run_experiment


def bmv2_like(pace: bool) -> None:
    """Patch the netns backend: emulated links for p4switch, no port link model, pacing or not."""

    def choose(self: Any) -> None:
        self.link_mode = "linkemu"
        self._notice("links: link emulators forced for p4switch (tests/bench/tools/bmv2_like.py)")

    spec = netns.NetnsNetwork._spec

    def bare(self: Any, name: str) -> Any:
        s = spec(self, name)
        s.bitrates.clear()
        s.delays.clear()
        return s

    netns.NetnsNetwork._choose_link_mode = choose  # type: ignore[method-assign]
    netns.NetnsNetwork._spec = bare  # type: ignore[method-assign]
    if not pace:
        netns.paced_ways = lambda topo, emulators: []  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.bench.tools.bmv2_like", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("topology", type=Path)
    p.add_argument("--duration", default="12s")
    p.add_argument("--drop-at", help="move the topology's link_rate events to this time")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-pace", action="store_true")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    topo = load_topology(args.topology)
    if args.drop_at:
        at = parse_duration_ns(args.drop_at, "--drop-at")
        topo.events[:] = [replace(e, at_ns=at) if e.kind == "link_rate" else e for e in topo.events]
    bmv2_like(not args.no_pace)
    out = args.out or Path(tempfile.mkdtemp(prefix="bmv2-like-"))
    res = run_experiment(topo, parse_duration_ns(args.duration, "--duration"), seed=args.seed, out=out, plots=False,
                         backend="netns", target="p4switch", pcap=False)
    s = res.summary
    print(json.dumps({"out": str(out), "link_backlog": s.get("link_backlog"), "notices": s.get("notices"),
                      "events": s.get("events")}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
