"""TFRC and LEDBAT flows (``control: tfrc | ledbat``) and the link option ``reorder``: loader
checks, simulator runs, and (root) the same flows in the netns backend (docs/background/e2e.md)."""

from __future__ import annotations

import pytest

from tests.switch import netns as N
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.file.schema import load_topology_text
from topo.run.runner import run_experiment

ALINEA = "  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}"


def one_router(flow: str, *, buffer: int = 50, reorder: str = "", delay: str = "10ms") -> str:
    extra = f", reorder: {reorder}" if reorder else ""
    return f"""\
name: e2e
defaults:
  link: {{rate: 2Mbps, delay: {delay}, buffer: {buffer}}}
nodes:
  H1: {{kind: host}}
  R1: {{kind: switch}}
  H2: {{kind: host}}
links:
  - {{ends: [H1, R1], rate: 10Mbps{extra}}}
  - {{ends: [R1, H2]}}
flows:
  - {{name: f1, src: H1, dst: H2, {flow}}}
"""


def run(text: str, seconds: float = 20, backend: str = "sim", seed: int = 1) -> dict:
    topo = load_topology_text(text, SOURCE)
    kw = {"pcap": False} if backend == "netns" else {}
    return run_experiment(topo, int(seconds * 1e9), seed=seed, plots=False, backend=backend, **kw).summary


# ---- loader -----------------------------------------------------------------------------------------------
def test_ledbat_target_and_its_errors() -> None:
    (f,) = load_topology_text(BASE.replace(ALINEA, "  - {src: H1, dst: H2, control: ledbat, target: 60ms}"),
                              SOURCE).flows
    assert (f.control, f.target_ns) == ("ledbat", 60_000_000)
    expect_error(BASE.replace(ALINEA, "  - {src: H1, dst: H2, control: tfrc, target: 60ms}"), "target: 60ms",
                 "flows[0].target", "only ledbat flows have target (this one is tfrc)")
    expect_error(BASE.replace(ALINEA, "  - {src: H1, dst: H2, control: ledbat, target: 0ms}"), "target: 0ms",
                 "flows[0].target", "must be > 0")
    expect_error(BASE.replace(ALINEA, "  - {src: H1, dst: H2, control: ledbat, r_max: 1Mbps}"), "r_max",
                 "flows[0].r_max", "a ledbat flow has no r_max")


def test_reorder_keys_and_their_errors() -> None:
    topo = load_topology_text(one_router("control: tfrc", reorder="0.2%"), SOURCE)
    assert topo.links[0].reorder == pytest.approx(0.002) and topo.links[0].reorder_delay_ns == 20_000_000
    assert topo.links[1].reorder == 0
    text = one_router("control: tfrc").replace("buffer: 50}", "buffer: 50, reorder: 1%, reorder_delay: 5ms}")
    assert all(link.reorder_delay_ns == 5_000_000 for link in load_topology_text(text, SOURCE).links)
    expect_error(one_router("control: tfrc", reorder="100%"), "reorder: 100%", "links[0].reorder",
                 "a reorder fraction must be in [0, 1)")
    expect_error(one_router("control: tfrc", reorder="0.2%, reorder_delay: 0ms"), "reorder_delay",
                 "links[0].reorder_delay", "must be > 0")
    expect_error(one_router("control: tfrc", reorder="lots"), "reorder: lots", "links[0].reorder", "")


# ---- simulator ---------------------------------------------------------------------------------------------
def test_ledbat_holds_the_queue_near_its_target_without_loss() -> None:
    """2 Mb/s, 1000-byte packets: a 60 ms target is 15 packets of a 50-packet buffer (30 %)."""
    s = run(one_router("control: ledbat, target: 60ms"))
    f, q = s["flows"]["f1"], s["buffers"]["H2<-R1"]["mean"]
    assert f["goodput_bps"] > 0.95 * 2e6 and s["loss"]["dropped_in_network"] == 0
    assert 0.2 < q < 0.4, q
    assert 40 < f["control_state"]["queuing_delay_ms"] < 80 and f["control_state"]["losses"] == 0
    assert 60 + 20 < f["owd_ms"]["p50"] < 60 + 20 + 15  # propagation (2 x 10 ms) + the target, give or take


def test_ledbat_yields_to_tcp() -> None:
    text = one_router("control: ledbat, target: 60ms") + "  - {name: t1, src: H1, dst: H2, control: tcp, cc: reno}\n"
    s = run(text, seconds=30)
    assert s["flows"]["f1"]["goodput_bps"] < 0.25 * s["flows"]["t1"]["goodput_bps"], s["flows"]


def test_tfrc_fills_the_bottleneck_and_is_deterministic() -> None:
    a, b = run(one_router("control: tfrc")), run(one_router("control: tfrc"))
    assert a["flows"]["f1"]["goodput_bps"] > 0.9 * 2e6
    assert a["flows"] == b["flows"] and a["buffers"] == b["buffers"]


def test_reordering_is_counted_apart_from_loss_and_read_as_loss_by_tfrc() -> None:
    """TFRC capped below the bottleneck (r_max 1.5 Mb/s of 2), 200 ms RTT: without reordering nothing
    is lost, p stays 0 and TFRC sends at its cap; with 1 % of packets held back past five others,
    nothing is lost either, but TFRC sees loss events (p near 1 %) and the equation allows less."""
    clean = run(one_router("control: tfrc, r_max: 1.5Mbps", delay="50ms"), seconds=30)
    mixed = run(one_router("control: tfrc, r_max: 1.5Mbps", reorder="1%", delay="50ms"), seconds=30)
    assert clean["loss"]["reordered"] == 0 and clean["loss"]["dropped_in_network"] == 0
    assert mixed["loss"]["reordered"] > 0 and mixed["loss"]["reordered_by_links"] >= mixed["loss"]["reordered"]
    assert mixed["loss"]["lost_by_sequence"] == 0 and mixed["loss"]["dropped_in_network"] == 0
    assert clean["flows"]["f1"]["goodput_bps"] > 0.95 * 1.5e6
    assert clean["flows"]["f1"]["control_state"]["counted_lost"] == 0
    seen = mixed["flows"]["f1"]["control_state"]  # TFRC's receiver: every reordered packet called lost, then late
    assert seen["counted_lost"] == seen["late"] > 0 and seen["loss_event_rate"] > 0
    assert mixed["flows"]["f1"]["goodput_bps"] < 0.9 * clean["flows"]["f1"]["goodput_bps"], mixed["flows"]


# ---- netns (root) -------------------------------------------------------------------------------------------
@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.parametrize("flow", ["control: tfrc", "control: ledbat, target: 60ms"])
def test_tfrc_and_ledbat_run_in_netns(flow: str) -> None:
    """6 s (was 10): in a netns run either flow is at the 2 Mb/s bottleneck's rate from about 1.5 s
    on (flows.csv's 0.5 s bins), so the goodput window, the run's second half (3-6 s), reads a
    flow at rate as 5-10 s did; the uplink's reorder draws are seeded per frame, 9 frames held
    back in the first 5 s."""
    N.require_netns()
    s = run(one_router(flow, reorder="0.5%"), seconds=6, backend="netns")
    f = s["flows"]["f1"]
    N.skip_unless_kept_up(s, f"{flow} in netns")
    assert f["goodput_bps"] > 0.5e6, f  # a real flow through p4switch, not a trickle
    assert s["loss"]["reordered_by_links"] > 0  # the host's uplink held some frames back
    assert f["control_state"], f  # the cores' own view came back from the host processes


def test_the_reordering_table_is_regenerated_by_its_command(tmp_path) -> None:
    from topo.experiments import tfrc_reordering as T

    doc = tmp_path / "e2e.md"
    doc.write_text("before\n<!-- tfrc-reordering -->\nold\n<!-- /tfrc-reordering -->\nafter\n")
    assert T.main(["--duration", "8", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "%" in line.split("|")[1]]
    assert [r.split("|")[1].strip() for r in rows] == list(T.FRACTIONS)
    assert all(r.split("|")[2].strip() == "0" for r in rows)  # the network loses nothing in any row
    assert T.main(["--duration", "-1"]) == 2
