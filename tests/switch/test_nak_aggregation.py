"""alinea.p4's pgmcc NAK aggregation on one switch in virtual time (docs/howto/multicast.md, "NAK
aggregation"): a session's first NAK for a packet goes on, its repeats within the session's hold are
dropped and counted; ACKs, sessions without an entry and other UDP ports pass untouched. A reference
model (the slot session xor sequence folded to NAK_SLOTS picks, key and time) predicts every frame's fate."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.datagram import DATA_PORT, KIND_PGMCC_FEEDBACK, MIN_FRAME_BYTES, FrameTemplate
from hosts.pgmcc import ACK, FEEDBACK_BYTES, FEEDBACK_PORT, NAK, Feedback, encode_feedback
from tests.switch.simnet import HOST_MAC, SWITCH_MAC, configure_alinea, ip_int, sim_switch

US = 1000
MS = 1_000_000
NAK_SLOTS = 4096  # alinea.p4's
SIZE = MIN_FRAME_BYTES + FEEDBACK_BYTES


def feedback(flow: int, typ: int, seq: int, port: int = FEEDBACK_PORT) -> bytes:
    t = FrameTemplate(src_mac=HOST_MAC[2], dst_mac=SWITCH_MAC[2], src_ip=ip_int("10.0.2.1"),
                      dst_ip=ip_int("10.0.1.1"), flow=flow, size=SIZE, kind=KIND_PGMCC_FEEDBACK, dst_port=port)
    return t.frame(0, 0, 0, encode_feedback(Feedback(typ, 3, 10, 0.01, 0, 0, nak_seq=seq)))


def switch(holds: dict[int, int]):  # noqa: ANN201
    net = sim_switch(ports=(1, 2))
    configure_alinea(net.ctl, ports=(1, 2))
    for flow, hold_us in holds.items():
        net.ctl.insert_entry("MyIngress.nak_aggregation", {"hdr.datagram.flow": flow}, "MyIngress.set_nak_hold",
                             {"hold_us": hold_us})
    return net


def test_repeats_within_the_hold_are_dropped_and_the_rest_pass_byte_for_byte() -> None:
    net = switch({7: 10_000})
    sent = [(0, feedback(7, NAK, 5)), (1 * MS, feedback(7, NAK, 5)), (2 * MS, feedback(7, NAK, 6)),
            (3 * MS, feedback(7, ACK, 5)), (4 * MS, feedback(8, NAK, 5)), (5 * MS, feedback(8, NAK, 5)),
            (6 * MS, feedback(7, NAK, 5, port=DATA_PORT)), (20 * MS, feedback(7, NAK, 5))]
    for t, frame in sent:
        net.hosts[2].send_at(t, frame)
    net.sched.run()
    got = [f for _, f in net.hosts[1].got]
    expected = [f for i, (_, f) in enumerate(sent) if i != 1]  # only the repeat 1 ms after the first
    assert len(got) == len(expected)
    for out, into in zip(got, expected, strict=True):
        assert out[34:] == into[34:] and len(out) == len(into)  # UDP, datagram header, feedback unchanged
    assert net.ctl.read_counter("MyIngress.drop_nak_repeat", 2)[0] == 1


@settings(max_examples=5, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3_000), st.sampled_from([7, 8]), st.sampled_from([ACK, NAK, NAK]),
                          st.integers(0, 5)), min_size=1, max_size=25),
       st.integers(1, 2_000))
def test_every_frames_fate_is_the_reference_models(events: list[tuple[int, int, int, int]], hold_us: int) -> None:
    """Frames at increasing µs offsets; session 7 aggregated with ``hold_us``, session 8 not."""
    net = switch({7: hold_us})
    slots: dict[int, tuple[int, int]] = {}
    passes = []
    t = 0
    for gap, flow, typ, seq in events:
        t += gap + 50  # apart enough that each is handled before the next arrives
        net.hosts[2].send_at(t * US, feedback(flow, typ, seq))
        ok = True
        if flow == 7 and typ == NAK:
            slot = (flow ^ seq) & (NAK_SLOTS - 1)
            key = (flow, seq)
            seen = slots.get(slot)
            arrival = t  # the link's delay is the same for every frame: differences are what count
            if seen is not None and seen[0] == key and arrival - seen[1] < hold_us:
                ok = False
            else:
                slots[slot] = (key, arrival)
        passes.append(ok)
    net.sched.run()
    assert len(net.hosts[1].got) == sum(passes)
    assert net.ctl.read_counter("MyIngress.drop_nak_repeat", 2)[0] == passes.count(False)
