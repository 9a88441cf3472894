"""docs/reference/metrics.md defines every key summary.json holds (issue 46, Done when): each key of a
few small simulator runs -- hop by hop with a timed drop, a shared playout host, a multicast group,
end-to-end controls with their cores' own view, a sized TCP flow -- is named in the page (in
backquotes), but the names the run gives (flows, buffers, links, hosts) and the cores' own views,
which docs/background/e2e.md lists."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.paths import ROOT
from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment

S = 1_000_000_000
DOC = ROOT / "docs" / "reference" / "metrics.md"

#: maps keyed by what the run names (a flow, a buffer, a link, a host, a switch, a drop reason)
NAMED = {"flows", "buffers", "links", "rates", "dropped_by_reason", "receiver_buffer_overflow_by_host",
         "cannot_reach", "not_settled", "multicast", "receivers", "switches", "host_relays", "peak_backlog",
         "final_backlog", "queues", "targets"}
#: the cores' own view: docs/background/e2e.md, "In the summary"
ELSEWHERE = {"control_state"}

HOP = """
name: hop
defaults: {link: {rate: 10Mbps, delay: 2ms, buffer: 100}}
nodes:
  H1: {kind: host}
  H2: {kind: host}
  R1: {kind: switch}
  R2: {kind: switch}
  H3: {kind: host, receive_buffer: 50, playout: 3Mbps}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [R1, R2], rate: 4Mbps}
  - {ends: [R2, H3]}
flows:
  - {name: a, src: H1, dst: H3, control: alinea}
  - {name: b, src: H2, dst: H3, control: alinea, packet_size: 500B}
events:
  - {at: 1.5s, link: [R1, R2], rate: 2Mbps}
"""

MULTICAST = """
name: tree
defaults: {link: {rate: 2Mbps, delay: 2ms, buffer: 100}}
nodes: {H1: {kind: host}, S1: {kind: switch}, H2: {kind: host}, H3: {kind: host}}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, H2]}
  - {ends: [S1, H3], rate: 1Mbps}
flows:
  - {name: m, src: H1, dst: [H2, H3], control: alinea}
"""

E2E = """
name: e2e
defaults: {link: {rate: 2Mbps, delay: 5ms, buffer: 50}}
nodes: {H1: {kind: host}, H2: {kind: host}, H3: {kind: host}, R1: {kind: switch}, H4: {kind: host}}
links:
  - {ends: [H1, R1]}
  - {ends: [H2, R1]}
  - {ends: [H3, R1]}
  - {ends: [R1, H4], rate: 3Mbps}
flows:
  - {name: l, src: H1, dst: H4, control: ledbat}
  - {name: r, src: H2, dst: H4, control: cvihis-rtm}
  - {name: t, src: H3, dst: H4, control: tcp, size: 20kB, start: 0.5s}
"""


def keys(o: Any, path: str = "") -> set[tuple[str, str]]:
    """(key, where) of every key in ``o``, below the run's own names."""
    out: set[tuple[str, str]] = set()
    if isinstance(o, dict):
        for k, v in o.items():
            out.add((k, f"{path}.{k}".lstrip(".")))
            if k in ELSEWHERE:
                continue
            if k in NAMED and isinstance(v, dict):
                for name, inner in v.items():
                    out |= keys(inner, f"{path}.{k}.<{name}>")
            else:
                out |= keys(v, f"{path}.{k}")
    elif isinstance(o, list):
        for x in o:
            out |= keys(x, f"{path}[]")
    return out


def undefined(summary: dict[str, Any], doc: str) -> list[str]:
    quoted = " ".join(re.findall(r"`([^`]*)`", doc))
    return sorted({where for k, where in keys(summary) if not re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", quoted)})


def test_the_check_sees_a_key_the_page_does_not_name() -> None:
    assert undefined({"loss": {"total": 1, "not_a_metric_key": 2}}, DOC.read_text()) == ["loss.not_a_metric_key"]


@pytest.mark.parametrize("text", [HOP, MULTICAST, E2E], ids=["hop", "multicast", "e2e"])
def test_every_key_of_the_summary_is_defined_in_the_metrics_page(text: str) -> None:
    summary = run_experiment(load_topology_text(text, "user.yaml"), 2 * S, 1, None, plots=False).summary
    assert undefined(summary, DOC.read_text()) == []
