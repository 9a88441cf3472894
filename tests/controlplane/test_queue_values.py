"""The simulator's values path for queue calls (``queues.direct``) against the Thrift round trip.

The agent's queue client is one class; in the simulator it calls the switch's Thrift handler with
values, in netns it sends Thrift messages. Whatever the calls, good or bad, both paths must leave the
traffic manager in the same state and refuse the same calls with the same message.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.queues import QueueClient, QueueError, direct, in_process
from p4switch.thrift_server import in_process_handler, in_process_processor
from p4switch.tm import TrafficManager
from runtime.sched import VirtualScheduler

PORTS, PRIORITIES = 6, 3


def _tm() -> TrafficManager:
    return TrafficManager(VirtualScheduler(), lambda port, item: 0, num_ports=PORTS, num_priorities=PRIORITIES)


def _pair() -> tuple[tuple[QueueClient, TrafficManager], tuple[QueueClient, TrafficManager]]:
    wire_tm, values_tm = _tm(), _tm()
    return ((in_process(in_process_processor(wire_tm, lambda: 0), "s"), wire_tm),
            (direct(in_process_handler(values_tm, lambda: 0), "s"), values_tm))


def _outcome(client: QueueClient, kind: str, port: Any, value: Any, priority: Any) -> str | None:
    """None, or the error with the client's own name taken off (the one part that says which path)."""
    call = client.set_queue_rate if kind == "rate" else client.set_queue_depth
    try:
        call(port, value, priority)
    except QueueError as exc:
        text = str(exc)
        assert text.startswith(client.where + ": "), text
        return text[len(client.where):]
    return None


def _state(tm: TrafficManager) -> list[tuple[int, int]]:
    return [(tm.queue_rate(p, q), tm.queue_depth_limit(p, q)) for p in range(PORTS) for q in range(PRIORITIES)]


ints = st.one_of(st.integers(-3, 2000), st.sampled_from([2**19 - 1, 2**19, 2**31 - 1, 2**31, 2**40, 2**63, -(2**31) - 1]))
calls = st.lists(st.tuples(
    st.sampled_from(["rate", "depth"]),
    st.one_of(st.integers(-1, PORTS + 1), st.sampled_from([511, 2**31, 2.0])),
    st.one_of(ints, st.sampled_from([2.5, "7", None])),
    st.one_of(st.none(), st.integers(-1, PRIORITIES + 1)),
), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(calls)
def test_values_and_thrift_paths_agree_on_every_call(seq: list[tuple[str, Any, Any, Any]]) -> None:
    (wire, wire_tm), (values, values_tm) = _pair()
    for kind, port, value, priority in seq:
        assert _outcome(values, kind, port, value, priority) == _outcome(wire, kind, port, value, priority)
        assert _state(values_tm) == _state(wire_tm)


def test_the_values_path_sets_the_queue_and_names_a_bad_port_and_rate() -> None:
    (_wire, _), (values, tm) = _pair()
    values.set_queue_rate(2, 300, priority=1)
    values.set_queue_depth(2, 17)
    assert tm.queue_rate(2, 1) == 300 and tm.queue_rate(2, 0) == 0
    assert {tm.queue_depth_limit(2, q) for q in range(PRIORITIES)} == {17}
    with pytest.raises(QueueError, match=r"in-process Thrift handler.*port=511.*drop port"):
        values.set_queue_rate(511, 10)
    with pytest.raises(QueueError, match=r"set_egress_queue_rate\(port=2, rate=-1\).*queue rate -1"):
        values.set_queue_rate(2, -1)
    with pytest.raises(QueueError, match=r"set_queue_rate: 2.5 is not an integer"):
        values.set_queue_rate(2, 2.5)
    with pytest.raises(QueueError, match=r"set_queue_depth: 2147483648 is out of the range of a Thrift i32"):
        values.set_queue_depth(2, 2**31)
