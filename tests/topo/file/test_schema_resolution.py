"""Defaults, overrides, r_max derivation and events resolve as docs/reference/topologies.md says."""

from __future__ import annotations

from controlplane.params import LawParams
from tests.topo.helpers import BASE, SOURCE, capped_r_max, line_of
from topo.file.schema import load_topology_text


def load(text: str):
    return load_topology_text(text, SOURCE)


def test_builtin_defaults_when_the_file_says_nothing():
    t = load(BASE)
    assert t.name == "t" and t.description == ""
    link = t.links[0]
    assert (link.rate_bps, link.delay_ns, link.buffer) == (2e6, 3_000_000, 200)
    assert t.links[1].rate_bps == 3e6
    assert t.flows[0].name == "f1" and t.flows[0].packet_size == 1000
    builtin = LawParams()
    idle = t.law[("R2", "R1")]  # no ALINEA flow crosses R2 -> R1: the built-in values, nothing derived
    assert (idle.o_min, idle.o_max, idle.w_max, idle.w_min, idle.r_floor, idle.k_p) == (
        builtin.o_min, builtin.o_max, builtin.w_max, builtin.w_min, builtin.r_floor, builtin.k_p)
    assert set(t.provenance[("R2", "R1")].values()) <= {"default", "derived"}
    assert t.provenance[("R2", "R1")]["w_min"] == "default" and t.ports[("R1", "R2")].interval_us == 10_000
    law = t.law[("R1", "R2")]  # carries f1: gains, floor and interval derived (topo/analysis/derive.py)
    assert (law.o_min, law.o_max) == (builtin.o_min, builtin.o_max)
    assert {k: t.provenance[("R1", "R2")][k] for k in ("w_max", "w_min", "k_p", "r_floor", "interval")} == dict.fromkeys(
        ("w_max", "w_min", "k_p", "r_floor", "interval"), "derived")
    assert t.ports[("R2", "R1")].capacity == 200
    assert t.options.report_loss == 0


def test_file_defaults_apply_everywhere():
    text = ("defaults:\n  link: {rate: 5Mbps, delay: 1ms, buffer: 50}\n  packet_size: 1500B\n"
            "  alinea: {o_max: 70%, interval: 2ms}\n" + BASE)
    t = load(text)
    assert t.links[0].rate_bps == 5e6 and t.links[0].buffer == 50 and t.links[0].delay_ns == 1_000_000
    assert t.links[1].rate_bps == 3e6  # the link's own value wins
    assert t.flows[0].packet_size == 1500
    assert all(p.o_max == 0.7 for p in t.law.values())
    assert all(p.interval_us == 2000 and p.capacity == 50 for p in t.ports.values())


def test_nodes_links_and_flows_remember_their_lines():
    t = load(BASE)
    assert t.nodes["R2"].line == line_of(BASE, "R2: {kind")
    assert t.links[2].line == line_of(BASE, "[R2, H2]")
    assert t.flows[0].line == line_of(BASE, "src: H1")
    assert [n.index for n in t.nodes.values()] == [1, 2, 3, 4]


def test_overrides_apply_in_file_order():
    text = BASE + ("alinea:\n  - {node: R1, o_max: 60%}\n  - {toward: R2, o_max: 90%, interval: 5ms}\n"
                   "  - {node: R2, toward: R1, w_min: 1Mbps}\n")
    t = load(text)
    assert t.law[("R1", "R2")].o_max == 0.9  # the second override came later
    assert t.law[("R2", "R1")].o_max == 0.8 and t.law[("R2", "R1")].w_min == 1e6  # node = the upstream end
    assert t.law[("R2", "H2")].o_max == 0.8 and t.provenance[("R2", "H2")]["w_min"] == "derived"
    assert t.provenance[("R2", "R1")]["w_min"] == "file"
    # interval of law (u, v) = report interval of v's port from u.
    assert t.ports[("R2", "R1")].interval_us == 5000
    assert t.ports[("R1", "R2")].interval_us == 10_000


def test_laws_exist_only_toward_reporting_nodes():
    t = load(BASE)
    assert ("R1", "H1") not in t.law  # H1 has no receive buffer
    assert ("R2", "H2") in t.law and ("H1", "R1") in t.law


def test_r_max_sums_the_crossing_flows_and_is_capped_by_the_link():
    text = BASE + "  - {src: H1, dst: H2, control: alinea, r_max: 1Mbps}\n"
    t = load(text)
    assert t.law[("R1", "R2")].r_max == capped_r_max(t, "R1", "R2", 2.5e6)  # 1.5 + 1 < 3 Mb/s, and its margin
    assert t.law[("R2", "H2")].r_max == 2e6  # capped by the 2 Mb/s link
    assert t.law[("R2", "R1")].r_max == 3e6  # no flow: the link rate


def test_r_max_is_the_link_rate_when_a_flow_has_no_r_max():
    t = load(BASE + "  - {src: H1, dst: H2, control: alinea}\n")
    assert t.law[("R1", "R2")].r_max == 3e6


def test_a_fixed_flow_counts_with_its_rate():
    t = load(BASE + "  - {name: bg, src: H1, dst: H2, control: fixed, rate: 200kbps, start: 5s, stop: 9s}\n")
    assert t.law[("R1", "R2")].r_max == capped_r_max(t, "R1", "R2", 1.7e6)
    bg = t.flows[1]
    assert (bg.rate_bps, bg.r_max_bps, bg.start_ns, bg.stop_ns) == (2e5, None, 5_000_000_000, 9_000_000_000)
    assert bg.path == ("H1", "R1", "R2", "H2")


def test_a_multicast_group_counts_once_in_r_max():
    """Group m (1 Mb/s) to H2 and H3, both behind R1 -> R2, and a unicast flow of 0.5 Mb/s: R1 -> R2 carries one
    copy of m's packets, so its law's R_max is 1.5 Mb/s, not 2.5 (docs/howto/multicast.md: per-link sums count
    a group once); behind the branching R2 each branch is one stream."""
    text = BASE.replace("  H2: {kind: host, receive_buffer: 100, playout: 1Mbps}\n",
                        "  H2: {kind: host, receive_buffer: 100, playout: 1Mbps}\n  H3: {kind: host}\n").replace(
        "  - {ends: [R2, H2]}\n", "  - {ends: [R2, H2]}\n  - {ends: [R2, H3]}\n").replace(
        "  - {src: H1, dst: H2, control: alinea, r_max: 1.5Mbps}\n",
        "  - {name: m, src: H1, dst: [H2, H3], control: alinea, r_max: 1Mbps}\n"
        "  - {name: u, src: H1, dst: H3, control: alinea, r_max: 0.5Mbps}\n")
    t = load(text)
    assert t.law[("H1", "R1")].r_max == 1.5e6  # a host's law: no margin (its pacers send no burst)
    assert t.law[("R1", "R2")].r_max == capped_r_max(t, "R1", "R2", 1.5e6)
    assert t.law[("R2", "H2")].r_max == capped_r_max(t, "R2", "H2", 1e6)


def test_an_override_r_max_wins():
    t = load(BASE + "alinea:\n  - {node: R1, toward: R2, r_max: 2.9Mbps}\n")
    assert t.law[("R1", "R2")].r_max == 2.9e6
    assert t.law[("H1", "R1")].r_max == 1.5e6


def test_events_resolved_and_sorted_stably():
    text = BASE + ("events:\n"
                   "  - {at: 20s, alinea: {toward: R2, o_max: 60%, interval: 1ms}}\n"
                   "  - {at: 5s, link: [R2, R1], rate: 1Mbps}\n"
                   "  - {at: 20s, alinea: {node: R2, o_min: 10%}}\n")
    t = load(text)
    assert [e.at_ns for e in t.events] == [5_000_000_000, 20_000_000_000, 20_000_000_000]
    drop, first, second = t.events
    assert drop.kind == "link_rate" and drop.link == ("R1", "R2") and drop.rate_bps == 1e6
    assert first.targets == (("R1", "R2"), ("H2", "R2")) and first.law_changes == (("o_max", 0.6),)
    assert first.interval_us == 1000
    assert set(second.targets) == {("R2", "R1"), ("R2", "H2")} and second.interval_us is None
    assert second.law_changes == (("o_min", 0.1),)
    assert first.line == line_of(text, "at: 20s")


def test_report_loss_option():
    assert load(BASE + "options: {report_loss: 10%}\n").options.report_loss == 0.1


def test_name_and_description():
    t = load('name: demo\ndescription: "two switches"\n' + BASE)
    assert (t.name, t.description) == ("demo", "two switches")


def test_yaml_anchors_are_followed():
    text = BASE.replace("  - {ends: [H1, R1]}", "  - {ends: [H1, R1], rate: &fast 4Mbps}").replace(
        "rate: 3Mbps", "rate: *fast")
    assert load(text).links[1].rate_bps == 4e6


def test_a_reporting_host_keeps_its_buffer_and_report_interval():
    t = load(BASE + "alinea:\n  - {toward: H2, interval: 2ms}\n")
    assert set(t.host_buffers) == {("H2", "R2")}
    assert t.host_buffers[("H2", "R2")].capacity == 100 and t.host_buffers[("H2", "R2")].interval_us == 2000
    assert ("H2", "R2") not in t.ports and t.ports[("R2", "H2")].interval_us == 10_000
