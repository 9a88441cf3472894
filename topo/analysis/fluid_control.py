"""The controllers of topo/analysis/fluid_network.py: one law each, with what its owner adds per report.

Why: what keeps a line of hops lossless is not the law alone but what a switch agent wraps it
in on BMv2's queues (the forecast past its own queue, the measured drain, the schedule's bound)
and the start-up brake of an ALINEA host; the model drives the same pieces the agents and hosts use.
The controllers live in :mod:`controlplane.fluid_laws`, compiled with the control path (the model asks
them most of its cost, issue 46); this module names them where the analysis looks for them.
"""

from __future__ import annotations

from controlplane.fluid_laws import HostControl, LawBatch, SwitchControl

__all__ = ["HostControl", "SwitchControl", "LawBatch"]
