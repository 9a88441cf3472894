"""The loop analysis's compiled plant (engine/src/analysis/fluid.rs): the fluid model of queues, links,
receivers' playout and senders that topo/analysis/fluid_network.py steps, its reports still answered by the
law in Python (one law).

Why here: topo/ reaches the compiled engine only through runtime/ (tests/test_layers.py), as it
does for links and the scheduler."""

from __future__ import annotations

from hbh_engine import FluidPlant

__all__ = ["FluidPlant"]
