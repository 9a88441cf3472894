"""Every kind of broken topology is refused with ``FILE:LINE: PATH: what is wrong``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.topo.helpers import BASE, expect_error
from topo.file.schema import TopologyError, load_topology, load_topology_text


def with_lines(*extra: str, base: str = BASE) -> str:
    return base + "".join(line + "\n" for line in extra)


# ---- YAML itself -----------------------------------------------------------------------------------
def test_yaml_syntax_error_names_the_line():
    text = BASE.replace("  - {ends: [R1, R2], rate: 3Mbps}", "  - {ends: [R1, R2], rate: 3Mbps")
    expect_error(text, "ends: [R2, H2]", "", "YAML syntax error")


def test_duplicate_key_names_both_lines():
    text = BASE.replace("  R2: {kind: switch}\n", "  R2: {kind: switch}\n  R1: {kind: switch}\n")
    expect_error(text, "R1: {kind", "nodes.R1", "duplicate key 'R1' (first at line 3)", nth=2)


def test_duplicate_key_inside_a_flow_mapping():
    text = BASE.replace("{ends: [H1, R1]}", "{ends: [H1, R1], rate: 1Mbps, rate: 2Mbps}")
    expect_error(text, "ends: [H1, R1]", "links[0].rate", "duplicate key 'rate'")


def test_empty_file():
    with pytest.raises(TopologyError, match=r"^t.yaml:1: the file is empty"):
        load_topology_text("# nothing\n", "t.yaml")


def test_missing_file_is_a_topology_error(tmp_path):
    with pytest.raises(TopologyError, match="cannot read the topology file"):
        load_topology(tmp_path / "absent.yaml")


# ---- keys and types ---------------------------------------------------------------------------------
def test_unknown_top_level_key_lists_the_allowed_ones():
    msg = expect_error(with_lines("colour: red"), "colour", "colour", "unknown key 'colour' (allowed: name,")
    assert "events" in msg and "options" in msg


def test_unknown_key_in_a_link():
    text = BASE.replace("{ends: [R2, H2]}", "{ends: [R2, H2], colour: red}")
    expect_error(text, "colour", "links[2].colour", "unknown key 'colour' (allowed: ends, rate, delay, buffer, reorder, reorder_delay, loss)")


def test_missing_required_key():
    expect_error(with_lines("  - {src: H1, dst: H2}"), "{src: H1, dst: H2}", "flows[1]",
                 "missing required key 'control'")


def test_list_where_a_mapping_is_expected():
    text = BASE.replace("  H1: {kind: host}", "  H1: [host]")
    expect_error(text, "H1: [host]", "nodes.H1", "expected a mapping, got a list")


def test_mapping_where_a_list_is_expected():
    text = BASE.split("links:")[0] + "links:\n  a: {ends: [H1, R1]}\n"
    expect_error(text, "a: {ends", "links", "expected a list, got a mapping")


def test_not_a_whole_number_of_packets():
    text = BASE.replace("receive_buffer: 100", "receive_buffer: 1.5")
    expect_error(text, "receive_buffer", "nodes.H2.receive_buffer", "expected a whole number of packets, got 1.5")


def test_top_level_must_be_a_mapping():
    with pytest.raises(TopologyError, match=r"^t.yaml:1: \(top level\): expected a mapping, got a list"):
        load_topology_text("- a\n- b\n", "t.yaml")


# ---- units ------------------------------------------------------------------------------------------
def test_bad_rate_unit():
    text = BASE.replace("rate: 3Mbps", "rate: 2Mbit")
    expect_error(text, "2Mbit", "links[1].rate", "unknown rate unit 'Mbit' in '2Mbit' (use bps, kbps, Mbps, Gbps)")


def test_bad_time_unit():
    expect_error(with_lines("events:", "  - {at: 3min, link: [R1, R2], rate: 1Mbps}"), "3min", "events[0].at",
                 "unknown time unit 'min'")


def test_bad_size_unit_in_defaults():
    text = "defaults:\n  packet_size: 1000 bytes\n" + BASE
    expect_error(text, "packet_size", "defaults.packet_size", "unknown size unit 'bytes'")


@pytest.mark.parametrize("value", ["0", "0Mbps", "-2"])
def test_rate_must_be_positive(value):
    text = BASE.replace("rate: 3Mbps", f"rate: {value}")
    expect_error(text, "ends: [R1, R2]", "links[1].rate", "must be > 0")


def test_r_max_must_be_positive():
    text = BASE.replace("r_max: 1.5Mbps", "r_max: 0")
    expect_error(text, "r_max", "flows[0].r_max", "must be > 0")


def test_negative_delay():
    text = BASE.replace("rate: 3Mbps", "delay: -1")
    expect_error(text, "delay", "links[1].delay", "must be >= 0")


# ---- nodes and links --------------------------------------------------------------------------------
def test_bad_node_name():
    text = BASE.replace("  R2: {kind: switch}", "  2R: {kind: switch}").replace("R2", "2R")
    expect_error(text, "2R: {kind", "nodes.2R", "bad node name '2R'")


def test_unknown_node_kind():
    text = BASE.replace("R1: {kind: switch}", "R1: {kind: router}")
    expect_error(text, "router", "nodes.R1.kind", "unknown kind 'router' (use host or switch)")


def test_only_hosts_have_a_receive_buffer():
    text = BASE.replace("R1: {kind: switch}", "R1: {kind: switch, receive_buffer: 10, playout: 1Mbps}")
    expect_error(text, "R1: {kind", "nodes.R1.receive_buffer", "only hosts have a receive_buffer")


def test_receive_buffer_and_playout_come_together():
    text = BASE.replace(", playout: 1Mbps", "")
    expect_error(text, "H2: {kind", "nodes.H2", "both receive_buffer and playout, or neither")


def test_receive_buffer_at_least_one():
    text = BASE.replace("receive_buffer: 100", "receive_buffer: 0")
    expect_error(text, "H2: {kind", "nodes.H2.receive_buffer", "capacity = 0: must be a whole number of packets >= 1")


def test_link_to_a_missing_node():
    text = BASE.replace("{ends: [R2, H2]}", "{ends: [R2, R9]}")
    expect_error(text, "R9", "links[2].ends", "unknown node 'R9' (nodes: H1, R1, R2, H2)")


def test_link_with_one_end():
    text = BASE.replace("{ends: [R2, H2]}", "{ends: [R2]}")
    expect_error(text, "ends: [R2]", "links[2].ends", "a link has two ends, got 1")


def test_link_to_itself():
    text = BASE.replace("{ends: [R1, R2], rate: 3Mbps}", "{ends: [R1, R1]}")
    expect_error(text, "[R1, R1]", "links[1].ends", "two distinct nodes, got R1 twice")


def test_duplicate_link_in_either_direction():
    text = BASE.replace("  - {ends: [R2, H2]}\n", "  - {ends: [R2, H2]}\n  - {ends: [R2, R1]}\n")
    expect_error(text, "[R2, R1]", "links[3].ends", "duplicate link R2 -- R1 (first: links[1])")


def test_host_with_two_links():
    text = BASE.replace("  - {ends: [R2, H2]}\n", "  - {ends: [R2, H2]}\n  - {ends: [R2, H1]}\n")
    expect_error(text, "[R2, H1]", "links[3].ends", "host H1 already has a link (links[0])")


def test_host_with_no_link():
    text = BASE.replace("  R2: {kind: switch}", "  R2: {kind: switch}\n  H3: {kind: host}")
    expect_error(text, "H3:", "nodes.H3", "host H3 has no link")


def test_capacity_below_one():
    text = BASE.replace("{ends: [H1, R1]}", "{ends: [H1, R1], buffer: 0}")
    expect_error(text, "buffer: 0", "links[0].buffer", "capacity = 0: must be a whole number of packets >= 1")


def test_default_capacity_below_one():
    text = "defaults:\n  link: {buffer: -5}\n" + BASE
    expect_error(text, "buffer: -5", "defaults.link.buffer", "capacity = -5")


# ---- flows ------------------------------------------------------------------------------------------
def test_flow_with_no_path():
    text = BASE.replace("  R2: {kind: switch}", "  R2: {kind: switch}\n  R3: {kind: switch}\n  H3: {kind: host}")
    text = text.replace("flows:", "  - {ends: [R3, H3]}\nflows:")
    text = with_lines("  - {src: H1, dst: H3, control: alinea}", base=text)
    expect_error(text, "dst: H3", "flows[1]", "no path from H1 to H3")


def test_unknown_control_lists_the_known_ones():
    text = BASE.replace("control: alinea", "control: cvihis")
    expect_error(text, "cvihis", "flows[0].control",
                 "unknown control 'cvihis' (known: alinea, fixed, cvihis-rtm, cvihis-blm, tcp, tfrc, ledbat, gcc, pgmcc)")


def test_fixed_flow_without_rate():
    text = BASE.replace("control: alinea, r_max: 1.5Mbps", "control: fixed")
    expect_error(text, "control: fixed", "flows[0]", "a fixed flow needs a rate")


def test_alinea_flow_with_a_rate():
    text = BASE.replace("r_max: 1.5Mbps", "rate: 1Mbps")
    expect_error(text, "rate: 1Mbps}", "flows[0].rate", "only fixed flows have a rate")


def test_fixed_flow_with_r_max():
    text = BASE.replace("control: alinea", "control: fixed, rate: 1Mbps")
    expect_error(text, "control: fixed", "flows[0].r_max", "a fixed flow has no r_max")


def test_flow_from_a_switch():
    text = BASE.replace("src: H1", "src: R1")
    expect_error(text, "src: R1", "flows[0].src", "R1 is a switch; flows run between hosts")


def test_flow_to_itself():
    text = BASE.replace("dst: H2", "dst: H1")
    expect_error(text, "dst: H1", "flows[0].dst", "src and dst are both H1")


def test_stop_before_start():
    text = BASE.replace("r_max: 1.5Mbps", "start: 5s, stop: 5s")
    expect_error(text, "stop: 5s", "flows[0].stop", "must be after start")


@pytest.mark.parametrize("size", ["63B", "9001"])
def test_packet_size_range(size):
    text = BASE.replace("r_max: 1.5Mbps", f"packet_size: {size}")
    expect_error(text, "packet_size", "flows[0].packet_size", "a packet is 64 to 9000 bytes")


def test_duplicate_flow_name_including_defaults():
    text = with_lines("  - {name: f1, src: H1, dst: H2, control: alinea}")
    expect_error(text, "name: f1", "flows[1].name", "duplicate flow name 'f1' (first: flows[0])")


# ---- ALINEA parameters --------------------------------------------------------------------------------
def test_o_min_above_o_max_points_at_the_override_key():
    text = with_lines("alinea:", "  - node: R1", "    o_min: 90%")
    expect_error(text, "o_min: 90%", "alinea[0]", "o_min = 0.9 is above o_max = 0.8 (law R1->R2)")


def test_the_later_override_is_blamed():
    text = with_lines("alinea:", "  - {toward: R2, o_max: 50%}", "  - {node: R1, o_min: 60%}")
    expect_error(text, "o_min: 60%", "alinea[1]", "o_min = 0.6 is above o_max = 0.5")


def test_invalid_defaults_point_at_defaults():
    text = "defaults:\n  alinea: {w_min: 5Mbps}\n" + BASE
    expect_error(text, "w_min", "defaults.alinea", "w_min = 5e+06 is above w_max = 4e+06")


def test_w_min_above_w_max_in_an_override():
    text = with_lines("alinea:", "  - {toward: H2, w_max: 1Mbps, w_min: 2Mbps}")
    expect_error(text, "w_max: 1Mbps", "alinea[0]", "w_min = 2e+06 is above w_max = 1e+06")


@pytest.mark.parametrize("value", ["120%", "0", "-0.5"])
def test_fraction_outside_0_1(value):
    text = with_lines("alinea:", f"  - {{toward: H2, o_max: {value}}}")
    expect_error(text, "o_max:", "alinea[0]", "a fraction must be in (0, 1]")


def test_r_floor_above_a_derived_r_max_blames_the_r_floor_setting():
    text = with_lines("alinea:", "  - {node: R2, r_floor: 2Mbps}")
    expect_error(text, "r_floor", "alinea[0]", "r_floor = 2e+06 is above r_max = 1.5e+06 (law R2->H2)")


def test_override_without_selector():
    expect_error(with_lines("alinea:", "  - {o_max: 90%}"), "{o_max", "alinea[0]", "name node, toward or both")


def test_override_matching_no_law():
    # H1 has no receive buffer: nothing regulates toward it.
    expect_error(with_lines("alinea:", "  - {toward: H1, o_max: 90%}"), "toward: H1", "alinea[0]",
                 "matches no law: toward H1")


def test_override_that_changes_nothing():
    expect_error(with_lines("alinea:", "  - {node: R1}"), "{node: R1}", "alinea[0]", "changes nothing")


def test_override_unknown_key():
    expect_error(with_lines("alinea:", "  - {node: R1, omax: 90%}"), "omax", "alinea[0].omax", "unknown key 'omax'")


def test_interval_in_whole_microseconds():
    expect_error(with_lines("alinea:", "  - {node: R1, interval: 1500ns}"), "1500ns", "alinea[0].interval",
                 "not a whole number of microseconds")


def test_report_loss_in_0_1():
    expect_error(with_lines("options:", "  report_loss: 100%"), "report_loss", "options.report_loss",
                 "must be in [0, 1)")


# ---- events -----------------------------------------------------------------------------------------
def test_event_on_a_missing_link():
    text = with_lines("events:", "  - {at: 1s, link: [H1, R2], rate: 1Mbps}")
    expect_error(text, "[H1, R2]", "events[0].link", "no link between H1 and R2")


def test_link_event_without_rate():
    expect_error(with_lines("events:", "  - {at: 1s, link: [R1, R2]}"), "at: 1s", "events[0]", "needs a rate")


def test_event_without_a_change():
    expect_error(with_lines("events:", "  - {at: 1s}"), "at: 1s", "events[0]", "needs link (with rate), alinea, or flow (with mode)")


def test_alinea_event_invalid_against_the_resolved_law():
    text = with_lines("events:", "  - {at: 2s, alinea: {node: R1, o_min: 0.9}}")
    expect_error(text, "at: 2s", "events[0].alinea", "o_min = 0.9 is above o_max = 0.8 (law R1->R2 from 2s)")


def test_alinea_events_accumulate_in_time_order():
    # Listed out of order: at 1s o_max drops to 0.5, so o_min 0.6 at 3s is invalid.
    text = with_lines("events:", "  - {at: 3s, alinea: {node: R1, o_min: 0.6}}",
                      "  - {at: 1s, alinea: {node: R1, o_max: 0.5}}")
    expect_error(text, "at: 3s", "events[0].alinea", "o_min = 0.6 is above o_max = 0.5")


def test_alinea_event_matching_nothing():
    text = with_lines("events:", "  - {at: 1s, alinea: {node: R1, toward: H2, o_max: 0.9}}")
    expect_error(text, "at: 1s", "events[0].alinea", "matches no law: node R1 toward H2")


def test_negative_event_time():
    expect_error(with_lines("events:", "  - {at: -1, link: [R1, R2], rate: 1Mbps}"), "at: -1", "events[0].at",
                 "must be >= 0")


@pytest.mark.parametrize(("key", "value"), [("r_max", "1e400"), ("r_max", ".nan"), ("start", ".inf"),
                                            ("start", "1e400s")])
def test_unusable_numbers_are_refused(key, value):
    text = BASE.replace("r_max: 1.5Mbps", f"{key}: {value}")
    expect_error(text, value, f"flows[0].{key}", "")


def test_node_ids_fit_one_byte():
    names = [f"H{i}" for i in range(256)]
    text = "nodes:\n" + "".join(f"  {n}: {{kind: host}}\n" for n in names) + "links: []\n"
    expect_error(text, "H255:", "nodes.H255", "more than 255 nodes")



def test_a_link_slower_than_the_floor_blames_the_link():
    text = BASE.replace("{ends: [R2, H2]}", "{ends: [R2, H2], rate: 30kbps}")
    expect_error(text, "30kbps", "links[2]", "r_floor = 40000 is above r_max = 30000 (law R2->H2)")


def test_block_style_values_point_at_their_own_line():
    text = BASE.replace("  - {ends: [R2, H2]}", "  - ends: [R2, H2]\n    delay: 1ms\n    buffer: many")
    expect_error(text, "buffer: many", "links[2].buffer", "expected a whole number of packets, got 'many'")


def test_report_polls_is_true_or_false():
    expect_error(with_lines("options:", "  report_polls: often"), "report_polls", "options.report_polls",
                 "true or false")


@pytest.mark.parametrize("value", ["9", "0", "two", "true"])
def test_classes_is_a_whole_number_of_priority_queues_bmv2_has(value):
    expect_error(with_lines("options:", f"  classes: {value}"), "classes", "options.classes",
                 "classes is a whole number in 1..7")


def test_a_flow_from_a_host_whose_clock_reads_below_zero_is_named() -> None:
    text = BASE.replace("H1: {kind: host}", "H1: {kind: host, clock_offset: -7ms}")
    expect_error(text, "control: alinea", "flows[0].start", "start the flow at 7ms or later")
    late = text.replace("r_max: 1.5Mbps}", "r_max: 1.5Mbps, start: 7ms}")
    assert load_topology_text(late, "t.yaml").flows[0].start_ns == 7_000_000
    ahead = BASE.replace("H1: {kind: host}", "H1: {kind: host, clock_offset: 5ms}")
    assert load_topology_text(ahead, "t.yaml").flows[0].start_ns == 0


@given(exponent=st.integers(19, 400), unit=st.sampled_from(["s", "ms", "us", "ns", ""]),
       key=st.sampled_from(["start", "stop"]))
@settings(max_examples=60, deadline=None)
def test_a_time_beyond_the_clock_is_one_line_not_a_traceback(exponent: int, unit: str, key: str) -> None:
    """``start: 1e30s`` stopped a run with an OverflowError (the pacer's C long): every time the file
    gives past 2^62 ns (1e19 ns and up, in any unit) is refused at its line."""
    value = f"1e{exponent}{unit}"
    text = BASE.replace("r_max: 1.5Mbps", f"{key}: {value}")
    expect_error(text, value, f"flows[0].{key}", "is too l")  # too long; past a float, too large


@pytest.mark.parametrize("control", ["alinea", "fixed, rate: 1Mbps", "tcp", "tfrc"])
def test_an_alinea_source_linked_straight_to_a_host_without_a_receive_buffer_is_named(control: str) -> None:
    """Two hosts on one link: an ALINEA source has no law toward a neighbour that never reports (the run
    failed with a KeyError); other controls need none, and a receive buffer gives it one."""
    text = ("nodes:\n  H1: {kind: host}\n  H2: {kind: host}\nlinks:\n  - {ends: [H1, H2]}\n"
            f"flows:\n  - {{src: H1, dst: H2, control: {control}}}\n")
    if control != "alinea":
        assert load_topology_text(text, "t.yaml").flows[0].path == ("H1", "H2")
        return
    expect_error(text, "control: alinea", "flows[0]", "H2, a host without receive_buffer, sends none")
    buffered = text.replace("H2: {kind: host}", "H2: {kind: host, receive_buffer: 50, playout: 1Mbps}")
    assert ("H1", "H2") in load_topology_text(buffered, "t.yaml").law
