"""Buffers given as durations (``buffer: 5ms``): packets at the link's rate, in its flows' packet size."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4switch.tm import MAX_QUEUE_DEPTH
from tests.paths import ROOT
from tests.topo.helpers import BASE, SOURCE, expect_error
from topo.file.points import Base, grid, point_topology
from topo.file.schema import load_topology, load_topology_text
from topo.file.settings import SweepError, parse_settings
from topo.file.show import describe
from topo.net.model import BufferTime
from topo.net.plan import buffer_unit_bytes, law_frames, port_unit_bytes

TOPO = ROOT / "topo"

#: helpers.BASE (H1 -- R1 -- R2 -- H2, one alinea flow, 1000-byte packets) with a 5 ms default
#: buffer, a 1 Gb/s middle link and 50 packets on R2 -- H2.
TEXT = "defaults:\n  link: {rate: 2Mbps, buffer: 5ms}\n" + BASE.replace("rate: 3Mbps}", "rate: 1Gbps}").replace(
    "{ends: [R2, H2]}", "{ends: [R2, H2], buffer: 50}")


def load(text: str = TEXT):
    return load_topology_text(text, SOURCE)


def test_packets_are_rounded_up_and_at_least_one():
    assert BufferTime(5_000_000, 2e6, 1000).packets == 2  # 10000 bits = 1.25 packets
    assert BufferTime(5_000_000, 1e9, 1000).packets == 625
    assert BufferTime(5_000_000, 4e8, 1000).packets == 250  # exact: not rounded up to 251
    assert BufferTime(1, 2e6, 1000).packets == 1


def test_a_default_duration_resolves_at_each_links_own_rate():
    t = load()
    slow, fast, given = t.links
    assert (slow.buffer, slow.buffer_time) == (2, BufferTime(5_000_000, 2e6, 1000))
    assert (fast.buffer, fast.buffer_time) == (625, BufferTime(5_000_000, 1e9, 1000))
    assert (given.buffer, given.buffer_time) == (50, None)  # packets given on the link: as before
    assert t.ports[("R1", "H1")].capacity == 2 and t.ports[("R2", "R1")].capacity == 625
    assert t.ports[("R2", "H2")].capacity == 50


def test_a_links_duration_overrides_default_packets():
    text = TEXT.replace("buffer: 5ms}", "buffer: 200}").replace("rate: 1Gbps}", "rate: 1Gbps, buffer: 800us}")
    t = load(text)
    assert [ln.buffer for ln in t.links] == [200, 100, 50]
    assert t.links[1].buffer_time == BufferTime(800_000, 1e9, 1000)
    assert t.links[0].buffer_time is None


def test_the_packet_size_is_the_largest_of_the_flows_crossing_the_link_either_way():
    text = TEXT + ("  - {src: H2, dst: H1, control: fixed, rate: 100kbps, packet_size: 1500B}\n"
                   "  - {src: H1, dst: H2, control: fixed, rate: 100kbps, packet_size: 500B}\n")
    t = load(text)
    assert t.links[1].buffer_time == BufferTime(5_000_000, 1e9, 1500)
    assert t.links[1].buffer == 417  # 5e6 bits / 12000 bits = 416.7


def _merge(hosts: list[tuple[int, int]], buffer: str, tail: str = "") -> str:
    """Hosts H0.. (one ALINEA flow each, of its frame size, over a link of its rate in kb/s) feeding R1,
    then R1 -- R2 -- HD; every link's buffer ``buffer`` unless ``tail`` (R1 -- R2's own fields) says."""
    nodes = "".join(f"  H{i}: {{kind: host}}\n" for i in range(len(hosts)))
    links = "".join(f"  - {{ends: [H{i}, R1], rate: {rate}kbps}}\n" for i, (_, rate) in enumerate(hosts))
    flows = "".join(f"  - {{name: f{i}, src: H{i}, dst: HD, control: alinea, packet_size: {size}B}}\n"
                    for i, (size, _) in enumerate(hosts))
    return (f"defaults:\n  link: {{rate: 20Mbps, buffer: {buffer}}}\nnodes:\n{nodes}  R1: {{kind: switch}}\n"
            f"  R2: {{kind: switch}}\n  HD: {{kind: host}}\nlinks:\n{links}  - {{ends: [R1, R2]{tail}}}\n"
            f"  - {{ends: [R2, HD]}}\nflows:\n{flows}")


@settings(deadline=None, max_examples=40)
@given(st.lists(st.tuples(st.integers(64, 1500), st.integers(500, 100_000)), min_size=2, max_size=4,
                unique_by=lambda h: h[0]),
       st.integers(100, 50_000))
def test_each_port_of_a_merge_reads_its_duration_in_bytes(hosts, micros):
    """Hosts of different frame sizes merging at R1, a duration buffer on every link: each host's law
    reads its port of R1 as frames of its own size that hold the duration at its link's rate, rounded up
    by less than one frame (topo.net.plan.port_unit_bytes), so equal durations are equal bits at the
    merge. Read in R1's smallest frame, as every port was, a 1500 B host's 5 ms held 0.33 ms of its bits
    beside a 100 B host's."""
    t = load(_merge(hosts, f"{micros}us"))
    assert buffer_unit_bytes(t, "R1") == min(size for size, _ in hosts)
    for i, (size, rate) in enumerate(hosts):
        frames, bits = law_frames(t, f"H{i}", "R1", t.ports[("R1", f"H{i}")].capacity)
        want = micros * rate / 1e3  # bits: us x kb/s
        assert bits == 8 * size and want - 1e-6 <= frames * bits < want + bits
        assert port_unit_bytes(t, f"H{i}", "R1") == size


def test_a_port_the_merges_frames_enter_mixed_keeps_the_switchs_unit():
    """Where frames of several sizes enter a switch over one link its packets are of any of them: the law
    reads the port in the switch's smallest frame, as before (no law aims past the packets it admits)."""
    t = load(_merge([(200, 2000), (1500, 2000)], "5ms"))
    assert port_unit_bytes(t, "R1", "R2") == buffer_unit_bytes(t, "R2") == 200
    given = load(_merge([(200, 2000), (1500, 2000)], "5ms").replace("{ends: [H1, R1], rate: 2000kbps}",
                                                                    "{ends: [H1, R1], rate: 2000kbps, buffer: 9}"))
    assert port_unit_bytes(given, "H1", "R1") == 200  # a buffer given in packets: R1's unit, as before


def test_a_merge_of_three_frame_sizes_with_equal_duration_buffers_shares_in_bits():
    """200, 1000 and 1500 B flows merge at R1 over 20 Mb/s links with 5 ms buffers into 10 Mb/s: each law
    reads its port's 5 ms in bytes and R1's FIFO shares its drain in bits (goodput over the run's second
    half): 3.28 / 3.25 / 3.47 Mb/s. Read in R1's 200 B frame (63, 13 and 9 packets as 200 B each) the same
    run split 7.03 / 2.58 / 0.40 Mb/s (Jain 0.59)."""
    from topo.experiments.compare import jain
    from topo.run.runner import run_experiment

    text = _merge([(200, 20_000), (1000, 20_000), (1500, 20_000)], "5ms", ", rate: 10Mbps, buffer: 150")
    summary = run_experiment(load(text), 5_000_000_000, seed=1, plots=False, pcap=False).summary
    goodput = [summary["flows"][f"f{i}"]["goodput_bps"] for i in range(3)]
    assert min(goodput) > 0 and jain(goodput) >= 0.99


def test_a_link_no_flow_crosses_uses_defaults_packet_size():
    text = TEXT.replace("defaults:\n", "defaults:\n  packet_size: 500B\n").split("flows:")[0]
    t = load(text)
    assert t.links[1].buffer_time == BufferTime(5_000_000, 1e9, 500) and t.links[1].buffer == 1250


#: Two equal-cost routes H1 -> S1 -> {S2, S3} -> S4 -> H2 under ECMP, 20 ms buffers at 2 Mb/s; f1's 200-byte
#: frames take S2 by the tie-break (by name) and S3 by the switches' hash of its 5-tuple; f0 stays on S1.
ECMP = """name: ecmp-buffers
defaults:
  link: {rate: 2Mbps, delay: 1ms, buffer: 20ms}
nodes:
  S1: {kind: switch}
  S2: {kind: switch}
  S3: {kind: switch}
  S4: {kind: switch}
  H1: {kind: host}
  H2: {kind: host}
  H3: {kind: host}
links:
  - {ends: [H1, S1]}
  - {ends: [S1, S2]}
  - {ends: [S1, S3]}
  - {ends: [S2, S4]}
  - {ends: [S3, S4]}
  - {ends: [S4, H2]}
  - {ends: [S1, H3]}
flows:
  - {name: f0, src: H1, dst: H3, control: fixed, rate: 100kbps, packet_size: 200B}
  - {name: f1, src: H1, dst: H2, control: fixed, rate: 100kbps, packet_size: 200B}
options: {ecmp: true}
"""


def test_under_ecmp_a_duration_counts_the_frames_of_the_flows_the_hash_puts_on_the_link():
    """20 ms at 2 Mb/s is 25 of f1's 200-byte frames on the route its packets take (S3), and 5 of the
    1,000-byte default on the one only its tie-break takes (S2), which no packet crosses. Counted on the
    tie-break it was the other way round: the links f1 crosses held 4 ms of its frames."""
    from topo.net.routes import routed_paths

    t = load_topology_text(ECMP, "ecmp-buffers.yaml")
    assert t.flows[1].path[2] == "S2" and routed_paths(t)["f1"] == ("H1", "S1", "S3", "S4", "H2")
    assert {f"{ln.a}-{ln.b}": ln.buffer for ln in t.links} == {
        "H1-S1": 25, "S1-S2": 5, "S1-S3": 25, "S2-S4": 5, "S3-S4": 25, "S4-H2": 25, "S1-H3": 25}
    assert t.ports[("S4", "S3")].capacity == 25 and t.ports[("S4", "S2")].capacity == 5


def test_a_receive_buffer_duration_drains_at_the_playout_rate():
    t = load(TEXT.replace("receive_buffer: 100", "receive_buffer: 2s"))
    h2 = t.nodes["H2"]
    assert (h2.receive_buffer, h2.receive_buffer_time) == (250, BufferTime(2_000_000_000, 1e6, 1000))
    assert t.host_buffers[("H2", "R2")].capacity == 250
    assert t.reports("H2")


def test_show_prints_the_duration_a_buffer_came_from():
    out = describe(load(TEXT.replace("receive_buffer: 100", "receive_buffer: 2s")))
    assert "  H1 -- R1: 2Mbps, 3ms, buffer 2 packets (5ms at 2Mbps, 1000 B)\n" in out
    assert "  R1 -- R2: 1Gbps, 3ms, buffer 625 packets (5ms at 1Gbps, 1000 B)\n" in out
    assert "  R2 -- H2: 2Mbps, 3ms, buffer 50\n" in out
    assert "receive_buffer 250 packets (2s at 1Mbps, 1000 B), playout 1Mbps" in out


@pytest.mark.parametrize("path", sorted(TOPO.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_files_give_packets_and_show_them_as_before(path):
    t = load_topology(path)
    assert all(ln.buffer_time is None for ln in t.links)
    assert all(n.receive_buffer_time is None for n in t.nodes.values())
    assert "packets (" not in describe(t)


# ---- errors: FILE:LINE: PATH: message ----------------------------------------------------------------
@pytest.mark.parametrize("value, what", [
    ("-5ms", "-5ms: a buffer's duration must be > 0"),
    ("0ms", "0ms: a buffer's duration must be > 0"),
    ("0.1ns", "0.1ns: a buffer's duration must be > 0"),
    ("5MS", "unknown time unit 'MS' in '5MS' (use ns, us, ms, s); a buffer is a whole number of packets, "
            "e.g. 200, or a duration, e.g. 5ms"),
    ("200pkts", "unknown time unit 'pkts'"),
    ("'200'", "expected a whole number of packets, got '200'; a buffer may also be a duration, e.g. 5ms"),
    ("many", "expected a whole number of packets, got 'many'; a buffer may also be a duration, e.g. 5ms"),
    ("1.5", "expected a whole number of packets, got 1.5"),
])
def test_a_bad_link_buffer(value, what):
    text = TEXT.replace("buffer: 50}", f"buffer: {value}}}")
    expect_error(text, "ends: [R2, H2]", "links[2].buffer", what)


def test_a_duration_above_the_switch_queue_depth_names_the_link():
    text = TEXT.replace("rate: 1Gbps}", "rate: 1Gbps, buffer: 5s}")
    expect_error(text, "ends: [R1, R2]", "links[1].buffer",
                 f"5s at 1Gbps in 1000 B packets is 625000 packets: above the switch's maximum queue depth "
                 f"({MAX_QUEUE_DEPTH} packets)")


def test_a_default_duration_above_the_queue_depth_blames_the_default_and_names_the_link():
    text = TEXT.replace("buffer: 5ms}", "buffer: 5s}")
    msg = expect_error(text, "buffer: 5s", "defaults.link.buffer", "5s at 1Gbps (links[1] R1 -- R2) in 1000 B")
    assert msg.endswith(f"is 625000 packets: above the switch's maximum queue depth ({MAX_QUEUE_DEPTH} packets)")


def test_packets_above_the_switch_queue_depth():
    text = TEXT.replace("buffer: 50}", f"buffer: {MAX_QUEUE_DEPTH + 1}}}")
    expect_error(text, "ends: [R2, H2]", "links[2].buffer",
                 f"{MAX_QUEUE_DEPTH + 1} packets: above the switch's maximum queue depth")


def test_a_bad_receive_buffer_duration():
    expect_error(TEXT.replace("receive_buffer: 100", "receive_buffer: -1s"), "receive_buffer",
                 "nodes.H2.receive_buffer", "-1s: a buffer's duration must be > 0")
    expect_error(TEXT.replace("receive_buffer: 100", "receive_buffer: 100000000s"), "receive_buffer",
                 "nodes.H2.receive_buffer",
                 "100000000s at 1Mbps (playout) in 1000 B packets is 12500000000 packets: above the largest "
                 "receive buffer (4294967295 packets)")


# ---- sweeps: the same loader reads a swept value ------------------------------------------------------
def test_a_sweep_sets_buffers_in_packets_or_time():
    base = Base(SOURCE, TEXT, load())
    points = grid(parse_settings(["link[R1-R2].buffer=200,5ms"]), None)
    assert [point_topology(base, p).link_between("R1", "R2").buffer for p in points] == [200, 625]
    everywhere = grid(parse_settings(["link.buffer=1ms"]), None)
    assert [ln.buffer for ln in point_topology(base, everywhere[0]).links] == [1, 125, 1]


def test_a_swept_bad_duration_names_the_set():
    base = Base(SOURCE, TEXT, load())
    [point] = grid(parse_settings(["link.buffer=-5ms"]), None)
    with pytest.raises(SweepError, match=r"--set link.buffer=-5ms: links\[0\].buffer: -5ms: a buffer's duration"):
        point_topology(base, point)
