"""Packet-ins routed past the device and the P4Runtime core (p4switch/device.py ``route_packet_ins``).

An in-process primary's packet-ins go from the engine walk to its callback straight while the
pipeline they were routed for is in force; a swap sends the next one through the core again
(which routes anew), and any change of primary takes the route away. What the primary gets is
what the core's own path gives: the same payload and metadata.
"""

from __future__ import annotations

from controlplane.p4runtime_client import InProcessController
from tests.switch.simnet import SimNet, configure_alinea, neighbour_report, sim_switch

MS = 1_000_000


def routed(net: SimNet) -> tuple[InProcessController, list[tuple[bytes, dict[str, int]]], list[int]]:
    """A primary with a packet-in callback, what it got, and a count of the packet-ins the core handles."""
    got: list[tuple[bytes, dict[str, int]]] = []
    ctl = InProcessController(net.switch.p4rt, election=(0, 2), on_packet_in=lambda p, m: got.append((p, m)))
    ctl.set_pipeline(net.program.p4info, net.program.device_config)
    configure_alinea(ctl, neighbours=(2,))
    through_core = [0]
    core_sink = net.switch.device.packet_in_sink
    assert core_sink is not None

    def counting(payload: bytes, meta: dict[str, int]) -> object:
        through_core[0] += 1
        return core_sink(payload, meta)

    net.switch.device.packet_in_sink = counting
    return ctl, got, through_core


def send_reports(net: SimNet, n: int, start_ns: int = 0) -> None:
    for i in range(n):
        net.hosts[2].send_at(start_ns + i * MS, neighbour_report(occupancy=100 + i))
    net.sched.run()


def test_after_the_first_packet_in_the_walk_hands_them_to_the_primary_itself() -> None:
    net = sim_switch()
    _, got, through_core = routed(net)
    send_reports(net, 3)
    assert len(got) == 3 and through_core == [1]
    assert net.switch.core.stats["to_cpu"] == 3


def test_a_routed_packet_in_is_what_the_core_gives() -> None:
    plain = sim_switch()  # a primary without a callback: PacketIn messages, decoded by name
    configure_alinea(plain.ctl, neighbours=(2,))
    send_reports(plain, 3)
    expected = [(p.payload, plain.ctl.names.packet_in_metadata(p)) for p in plain.ctl.of("packet")]
    net = sim_switch()
    _, got, _ = routed(net)
    send_reports(net, 3)
    assert len(expected) == 3 and got == expected


def test_a_new_pipeline_sends_the_next_packet_in_through_the_core_again() -> None:
    net = sim_switch()
    _, got, through_core = routed(net)
    send_reports(net, 2)
    ctl = InProcessController(net.switch.p4rt, election=(0, 3), on_packet_in=lambda p, m: got.append((p, m)))
    ctl.set_pipeline(net.program.p4info, net.program.device_config)
    configure_alinea(ctl, neighbours=(2,))
    before = len(got)
    send_reports(net, 2, start_ns=net.sched.now_ns() + MS)
    assert len(got) == before + 2 and through_core == [2]


def test_a_primary_that_takes_no_callback_gets_messages_and_the_old_callback_nothing() -> None:
    net = sim_switch()
    _, got, through_core = routed(net)
    send_reports(net, 2)
    plain = InProcessController(net.switch.p4rt, election=(0, 4))  # the new primary: PacketIn messages
    send_reports(net, 2, start_ns=net.sched.now_ns() + MS)
    assert len(got) == 2 and len(plain.of("packet")) == 2 and through_core == [3]


def test_a_route_for_a_state_no_longer_in_force_is_not_taken() -> None:
    net = sim_switch()
    ctl, got, through_core = routed(net)
    old = net.switch.device.state
    ctl.set_pipeline(net.program.p4info, net.program.device_config)
    wrong: list[bytes] = []
    net.switch.device.route_packet_ins(old, lambda p, m: wrong.append(p))
    configure_alinea(ctl, neighbours=(2,))
    send_reports(net, 1)
    assert wrong == [] and len(got) == 1 and through_core == [1]
