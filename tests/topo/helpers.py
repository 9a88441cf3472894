"""A small valid topology for the schema tests, and a check for the one-line error format."""

from __future__ import annotations

import pytest

from topo.file.schema import TopologyError, load_topology_text
from topo.net.model import Topology
from topo.net.plan import law_frames

#: H1 -- R1 -- R2 -- H2, H2 reports (receive buffer); one alinea flow H1 -> H2.
BASE = """\
nodes:
  H1: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  H2: {kind: host, receive_buffer: 100, playout: 1Mbps}
links:
  - {ends: [H1, R1]}
  - {ends: [R1, R2], rate: 3Mbps}
  - {ends: [R2, H2]}
flows:
  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}
"""

SOURCE = "t.yaml"


def capped_r_max(topo: Topology, u: str, v: str, caps_bps: float) -> float:
    """The R_max the loader derives for u's law toward v from flows whose caps sum to ``caps_bps`` below the link:
    a switch's gets one frame per report interval above them, at most the caps again and the link; a host's none
    (controlplane/loop_analysis.py, ``r_max_with_margin``; topo/analysis/derive.py)."""
    if not topo.nodes[u].is_switch:
        return caps_bps
    _, bits = law_frames(topo, u, v, 100)
    interval_s = (topo.ports.get((v, u)) or topo.host_buffers[(v, u)]).interval_us / 1e6
    return min(topo.link_between(u, v).rate_bps, caps_bps + min(bits / interval_s, caps_bps))


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line of ``text`` that contains ``needle``."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(hits) >= nth, f"{needle!r} not in the test's text"
    return hits[nth - 1]


def expect_error(text: str, needle: str, path: str, what: str, nth: int = 1) -> str:
    """Loading ``text`` fails with ``t.yaml:LINE: PATH: ...what...`` on one line; LINE holds ``needle``."""
    with pytest.raises(TopologyError) as info:
        load_topology_text(text, SOURCE)
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{SOURCE}:{line_of(text, needle, nth)}: {path}: " if path else f"{SOURCE}:{line_of(text, needle, nth)}: "
    assert message.startswith(prefix), message
    assert what in message, message
    return message
