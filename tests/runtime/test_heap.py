"""runtime/heap.py: the collector kept from stalling a real-time switch."""

from __future__ import annotations

import gc
import threading

from runtime.heap import collector_paused


def test_paused_blocks_nest_and_the_last_one_out_turns_it_back_on() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_blocks_in_two_threads_overlapping() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(5)
    with collector_paused():
        pass
    assert not gc.isenabled()  # the other thread's block still runs
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_an_error_in_the_block_still_turns_it_back_on() -> None:
    try:
        with collector_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()
