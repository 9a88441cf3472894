"""`hbh` dispatcher.

Each layer owns its sub-commands in a module exposing ``register(subparsers)``; the
registered handler is stored as ``func`` and returns an exit code. Keeping the
commands beside the code they drive keeps this file from growing with the project.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from runtime.arguments import ValueParser

# (module, help) for every layer that contributes commands; imported lazily so that
# `hbh --help` stays fast and a broken optional layer cannot hide the others.
COMMAND_MODULES: tuple[str, ...] = (
    "p4switch.frontend.cli",
    "topo.run.runner",
    "topo.sweep.cli",
    "topo.experiments.compare",
    "topo.netns.live",  # also `hbh params` (controlplane.params_cli), told how to find a run's switches
    "hbh.demo",
)


#: (command, module, help) for the experiments and generators that are programs of their own: the
#: module's ``main(argv)`` parses the rest of the command line with its own parser (``prog`` "hbh
#: COMMAND", so ``hbh COMMAND --help`` is its help). The module is imported only when its command
#: runs: importing them all (matplotlib, the simulator, Ray's helpers) would cost every ``hbh``
#: seconds.
PROGRAMS: tuple[tuple[str, str, str], ...] = (
    ("show", "topo.file.show", "print a topology file as the loader resolved it, with the loop analysis"),
    ("fabric", "topo.experiments.fabric", "a leaf-spine fabric under a workload of sized flows: FCTs and spine balance"),
    ("hol", "topo.experiments.hol", "head-of-line blocking: a victim flow under incast, per control"),
    ("spine-balance", "topo.results.spine_balance", "the spine gap per-flow ECMP hashing leaves, from the workload alone"),
    ("bmv2-diff", "topo.experiments.bmv2_diff", "BMv2 against p4switch: the same topology and seed in netns, compared (root)"),
    ("tcp-validation", "topo.experiments.tcp_validation", "the simulator's TCP model against the kernel's on one bottleneck"),
    ("tcp-kernel", "topo.results.tcp_kernel", "the sources' TCP experiments on the kernel's TCP in netns, beside the model"),
    ("rtm-kernel", "topo.results.rtm_kernel", "CVIHIS RTM against the kernel's reno in netns and the model's, per grid cell"),
    ("tcp-diagnosis", "topo.experiments.tcp_diagnosis", "why the model's bottleneck occupancy differs from the kernel's"),
    ("tcp-bursts", "topo.netns.tcp_bursts", "how bursty a netns TCP run's data reaches the bottleneck"),
    ("loop-trace", "topo.netns.loop_trace", "a netns TCP sender's runs sorted by cause, from its host's frame-loop trace"),
    ("tfrc-reordering", "topo.experiments.tfrc_reordering", "TFRC's rate against the fraction of packets a link reorders"),
    ("results", "topo.results.doc", "regenerate docs/results.md and its figures (--only SECTIONS: some of them)"),
    ("map", "topo.results.map", "regenerate docs/map.md: where the ALINEA law works (Ray)"),
    ("results-fabric", "topo.results.fabric", "regenerate docs/results.md's fabric section alone"),
    ("results-gcc", "topo.results.gcc", "GCC beside CVIHIS RTM in Carlucci et al.'s three settings"),
    ("results-multicast", "topo.results.multicast", "the fairness seed's four pgmcc sets, and with hop-by-hop ALINEA"),
    ("results-reaction", "topo.results.reaction", "capacity-drop's reaction over one cycle of the drop, per control latency"),
    ("results-slow-branch", "topo.results.slow_branch", "the multicast tree with its slow branch at several rates"),
    ("results-tcp", "topo.results.tcp", "docs/results.md's TCP sections, and grids of their variants"),
)
_PROGRAM_MODULES = {command: module for command, module, _help in PROGRAMS}


def build_parser() -> argparse.ArgumentParser:
    parser = ValueParser(
        prog="hbh",
        description="Hop-by-hop ALINEA congestion control on P4 switches vs end-to-end CVIHIS.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for command, module, text in PROGRAMS:
        p = sub.add_parser(command, help=text, add_help=False)
        p.add_argument("argv", nargs=argparse.REMAINDER)
        p.set_defaults(func=lambda args, module=module: _run_program(module, args.argv))
    return parser


def _run_program(module: str, argv: list[str]) -> int:
    return int(importlib.import_module(module).main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in _PROGRAM_MODULES:  # the program parses the rest, --help included
            return _run_program(_PROGRAM_MODULES[argv[0]], argv[1:])
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
