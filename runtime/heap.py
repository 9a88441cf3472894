"""Keep Python's cyclic garbage collector from stalling a real-time switch.

A loaded pipeline, the gRPC server and the P4Info are hundreds of thousands of long-lived
objects. A full (generation 2) collection walks all of them: about 25 ms on this project's
machines, and under control-plane churn (entries inserted and deleted) it ran every 1-2 s --
each one a forwarding gap of 25 ms at every port. Freezing the heap after a pipeline is
installed moves those objects out of the collector's sight; a full collection then walks only
what was allocated since, which takes well under a millisecond. The old pipeline is unfrozen and
collected at the next load, so nothing leaks across loads.

A large P4Runtime Write is the other source: its request and the entries it replaces are tens of
thousands of young objects that live for the seconds the Write takes, and the full collections
they set off walked them all, 4-44 ms at a time, holding the GIL the forwarding loop needs.
:func:`collector_paused` keeps the collector off while such a Write applies; its objects are freed
by reference counting when it ends, and the collector resumes then with nothing of it to walk.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_paused = 0
_paused_lock = threading.Lock()
_was_enabled = False


def settle() -> None:
    """Collect what is garbage now and freeze the survivors (call after a pipeline load)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off while the block runs (nested or from several threads: it is
    back on, if it was on, when the last such block ends)."""
    global _paused, _was_enabled
    with _paused_lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
