"""Test-session settings.

Under CI (``CI`` set, as the CI runner does) hypothesis runs derandomized: every property test
explores the same examples on every run, so a CI result never depends on a lucky draw. Local runs
keep exploring new examples (and the failures they find are stored in .hypothesis/).

``make test`` loads the same "ci" profile (``--hypothesis-profile=ci``): a local database of
failures found while exploring (.hypothesis/) is then not replayed, so ``make test`` passes or
fails as CI does; ``pytest`` run by hand keeps exploring and replaying.

``settled_heap``: a test that times a real-time loop in this process freezes the heap first, as
p4switch does once its servers are up. Earlier tests leave a large heap behind, and a full
collection of it stopped every thread for up to 0.95 s in a make test run.

Parallel runs (``make test``: pytest-xdist, ``-n 2 --dist loadgroup``): every test of a module that
runs in real time (network namespaces, p4switch's real-time loop, timers and wake-ups: see
``REALTIME_WORDS``) is in one group, which one worker runs one test at a time, so real-time runs
never overlap each other (they take a real-time priority, and two of them would share it) while the
simulator's CPU-bound tests run on the other worker. The sweeps that start Ray are another group:
two Ray clusters starting at once each miss Ray's own start-up deadline on two cores.

The real-time worker is ``make test``'s critical path, so a test is put there by what it does, said
explicitly where the words would mislead (``_group``, in this order):

- ``@pytest.mark.realtime`` or ``@pytest.mark.netns`` (also on one parameter, ``pytest.param(...,
  marks=...)``), or a parameter whose value is ``"netns"``: in the group;
- ``@pytest.mark.cpu_only``: never in the group, whatever its source says: a test that needs neither
  a real-time priority nor a punctual wake-up, so holds on a loaded worker as on an idle one (a
  simulator run, a property test on a made-up clock, a unit test whose text only names netns: its
  refusals, its keys, a run's rows read back; a subprocess's exit; a kill after a grace period);
- otherwise the group if the test's source (or a fixture's it uses) says a ``REALTIME_WORDS`` word.
"""

from __future__ import annotations

import gc
import inspect
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

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


#: A test whose source (or a fixture's it uses) says one of these runs in real time: the "realtime" group.
REALTIME_WORDS = re.compile(r"netns|wakeups|wakes_late|settled_heap|skip_unless_kept_up|busy_thread_share|realtime|"
                            r"real_time|chrt|SCHED_")
#: Modules whose tests start Ray clusters (the "ray" group).
RAY_MODULES = frozenset({"tests/sweep/test_runs.py"})
ROOT = Path(__file__).resolve().parents[1]


@cache
def _says_realtime(fn: object) -> bool:
    try:
        return bool(REALTIME_WORDS.search(inspect.getsource(fn)))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return False


def _group(item: pytest.Item) -> str | None:
    path = Path(str(item.path)).resolve()
    if path.is_relative_to(ROOT) and path.relative_to(ROOT).as_posix() in RAY_MODULES:
        return "ray"
    if item.get_closest_marker("netns") or item.get_closest_marker("realtime"):
        return "realtime"
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(isinstance(v, str) and v == "netns" for v in params.values()):
        return "realtime"
    if item.get_closest_marker("cpu_only"):
        return None
    fns = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        fns += [d.func for d in defs if str(getattr(d, "baseid", "")).startswith("tests")]
    return "realtime" if any(fn is not None and _says_realtime(fn) for fn in fns) else None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    """Group the real-time and the Ray tests for pytest-xdist's ``--dist loadgroup`` (module docstring).

    xdist's worker names a grouped test ``NODEID@GROUP`` (its scheduler groups by that suffix) by
    setting ``item._nodeid``, which pytest 9.2 no longer reads (a node's id is ``item._id``): where
    the name did not take, it is set here, after xdist's hook."""
    xdist = config.pluginmanager.hasplugin("xdist")
    if xdist:
        for item in items:
            group = _group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
    yield
    if not (xdist and getattr(config.option, "loadgroup", False)):
        return
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is not None and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = type(item._id).parse(f"{item.nodeid}@{mark.args[0]}")
