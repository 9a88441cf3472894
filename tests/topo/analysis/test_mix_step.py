"""A host law that cannot cut within its loop's delay when its frames shrink faster than a switch's queue rate
follows them, and a switch's law whose backlog, stamped behind its wire on BMv2's queues, leaves in them at the
wire's bits (topo/analysis/mix_step.py)."""

from __future__ import annotations

import re

from tests.paths import RANDOM_CASES
from topo.analysis.check import check_topology
from topo.file.schema import load_topology_text

CASE = (RANDOM_CASES / "stop-frame-mix-line.yaml").read_text()
H2_S1 = "  - {ends: [H2, S1], rate: 10Mbps, delay: 2ms}"


def _step(text: str):  # type: ignore[no-untyped-def]
    checks = check_topology(load_topology_text(text, "stop-frame-mix-line.yaml"), 1.9, seed=1)  # f2 from 0.153 s
    return {c.key: c for c in checks}[("H2", "S1")].step


def test_a_large_frame_flow_stopping_beside_small_frames_fills_the_switch_buffer_within_the_loop_delay() -> None:
    step = _step(CASE)
    assert step is not None
    assert step.at_s == 1.52 and step.hop == "S2" and step.frame_bytes == 200
    assert step.drain_bps < step.push_bps and step.share < 1
    assert step.gained_pkts > step.room_pkts


def test_the_buffer_it_names_holds_the_gain() -> None:
    step = _step(CASE)
    assert step is not None
    bigger = CASE.replace(H2_S1, H2_S1[:-1] + f", buffer: {step.need_pkts}}}")
    assert bigger != CASE
    assert _step(bigger) is None
    smaller = CASE.replace(H2_S1, H2_S1[:-1] + f", buffer: {step.need_pkts - 1}}}")
    assert _step(smaller) is not None


def test_one_frame_size_has_no_step() -> None:
    assert _step(re.sub(r"packet_size: \d+B", "packet_size: 200B", CASE)) is None


def test_a_flow_started_before_the_law_has_climbed_is_not_blamed() -> None:
    """f2's start beside f1 (0.153 s at seed 1) shrinks the mix too, but H2's law is still climbing from its floor
    (a report per 1500 B frame at 0.2 Mb/s): without f1's stop there is no step; with a start as late as the stop,
    there is."""
    assert _step(CASE.replace(", stop: 1.52s", "")) is None
    late = CASE.replace(", stop: 1.52s", "").replace("start: 0s, packet_size: 200B", "start: 1.52s, packet_size: 200B")
    assert late != CASE and _step(late) is not None


BACKLOG = (RANDOM_CASES / "stamped-backlog-mix-short-fabric.yaml").read_text()
H2_BUFFER = "  - {ends: [H2, S1], buffer: 242}"


def _switch_step(text: str):  # type: ignore[no-untyped-def]
    checks = check_topology(load_topology_text(text, "stamped-backlog-mix-short-fabric.yaml"), 2.4, seed=1)
    return {c.key: c for c in checks}[("S1", "S3")].step  # f2 from 0.873 s


def test_a_switch_backlog_stamped_behind_its_wire_is_counted_over_its_wait() -> None:
    step = _switch_step(BACKLOG)
    assert step is not None
    assert abs(step.at_s - 0.8727945) < 1e-6 and step.hop == "S2"
    assert step.backlog_s > 0 and step.delay_s > step.backlog_s
    assert step.gained_pkts > step.room_pkts


def test_a_switch_on_the_shaper_sends_no_backlog_at_its_wire() -> None:
    shaper = BACKLOG.replace("options: {ecmp: true}", "options: {ecmp: true, queue_model: shaper}")
    assert shaper != BACKLOG
    assert _switch_step(shaper) is None


def test_a_small_backlog_upstream_is_sent_within_the_room() -> None:
    small = BACKLOG.replace(H2_BUFFER, "  - {ends: [H2, S1], buffer: 20}")
    assert small != BACKLOG
    assert _switch_step(small) is None
