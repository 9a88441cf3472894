"""A real-time switch keeps its loaded pipeline out of the garbage collector's full walks.

Why it matters: a full collection walking every object of a loaded pipeline and gRPC server
stalled forwarding for ~25 ms every second or two under control-plane churn (the soak benchmark
of issue 9). The simulator must leave the process's collector alone: it runs inside users' code.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4switch.switch import Switch, SwitchOptions
from runtime.sched import RealtimeScheduler, VirtualScheduler

ALINEA = Path(__file__).resolve().parents[2] / "p4src" / "alinea.p4"


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.collect()


def test_a_loaded_pipeline_is_out_of_the_collectors_walk() -> None:
    with RealtimeScheduler() as sched:
        sw = Switch(sched, SwitchOptions())
        sw.load_program(ALINEA)
        walked, frozen = len(gc.get_objects()), gc.get_freeze_count()
        sw.close()
    assert frozen > 10 * walked  # a full collection now walks a tenth of the heap or less


def test_the_pipeline_a_reload_replaces_is_freed() -> None:
    with RealtimeScheduler() as sched:
        sw = Switch(sched, SwitchOptions())
        sw.load_program(ALINEA)
        old = weakref.ref(sw.holder.state)
        sw.load_program(ALINEA)
        gc.collect()  # a frozen copy would survive this
        gone = old() is None
        sw.close()
    assert gone  # frozen objects of the first load were thawed and collected at the second


def test_the_simulator_leaves_the_collector_alone() -> None:
    sw = Switch(VirtualScheduler(), SwitchOptions())
    sw.load_program(ALINEA)
    assert gc.get_freeze_count() == 0
