"""Keep Python's cyclic garbage collector from stalling a real-time switch.

A loaded pipeline, the gRPC server and the P4Info are hundreds of thousands of long-lived
objects. A full (generation 2) collection walks all of them: about 25 ms on this project's
machines, and under control-plane churn (entries inserted and deleted) it ran every 1-2 s --
each one a forwarding gap of 25 ms at every port. Freezing the heap after a pipeline is
installed moves those objects out of the collector's sight; a full collection then walks only
what was allocated since, which takes well under a millisecond. The old pipeline is unfrozen and
collected at the next load, so nothing leaks across loads.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect what is garbage now and freeze the survivors (call after a pipeline load)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
