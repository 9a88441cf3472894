"""Test-session settings.

Under CI (``CI`` set, as the CI runner does) hypothesis runs derandomized: every property test
explores the same examples on every run, so a CI result never depends on a lucky draw. Local runs
keep exploring new examples (and the failures they find are stored in .hypothesis/).

``settled_heap``: a test that times a real-time loop in this process freezes the heap first, as
p4switch does once its servers are up. Earlier tests leave a large heap behind, and a full
collection of it stopped every thread for up to 0.95 s in a make test run.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from runtime import heap

# No deadline anywhere: a per-example time limit is a timed test, and on a shared machine it fails on
# load, not on behaviour (hypothesis' default of 200 ms did so in `make test` beside netns runs).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("local", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")


@pytest.fixture()
def settled_heap() -> Iterator[None]:
    heap.settle()
    try:
        yield
    finally:
        gc.unfreeze()
