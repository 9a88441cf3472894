"""A host's ALINEA law never asks for more than its own link sends (hosts/sender.py,
``AlineaHostSender.set_link_rate``): a pacer faster than the NIC only fills a queue no switch
reports. r_max (and the floor with it) follows min(configured, link); the configured value comes
back when the link does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controlplane.params import LawParams
from hosts.sender import AlineaHostSender, SenderFlow


def _sender(r_max: float, r_floor: float) -> AlineaHostSender:
    return AlineaHostSender(LawParams(r_max=r_max, r_floor=r_floor), 1000, [SenderFlow(1, "f1", 0, None)])


@given(r_max=st.floats(1e6, 1e9), floor_share=st.floats(0.001, 0.5),
       links=st.lists(st.floats(1e4, 2e9), min_size=1, max_size=6))
def test_r_max_follows_the_link_and_the_configured_value_comes_back(r_max: float, floor_share: float,
                                                                   links: list[float]) -> None:
    s = _sender(r_max, r_max * floor_share)
    for link in links:
        s.set_link_rate(link)
        p = s.law.params
        assert p.r_max == min(r_max, link)
        assert p.r_floor == min(r_max * floor_share, p.r_max)
        assert s.law.rate <= p.r_max and s.pacer.rate_bps == s.law.rate
    s.set_link_rate(float("inf"))
    assert s.law.params.r_max == r_max and s.law.params.r_floor == r_max * floor_share


def test_a_parameter_event_during_a_slow_link_keeps_the_cap() -> None:
    s = _sender(100e6, 1e5)
    s.set_link_rate(1e6)
    s.set_params(s.law_params.with_changes(r_max=50e6, o_max=0.8))
    assert s.law.params.r_max == 1e6 and s.law.params.o_max == 0.8
    s.set_link_rate(200e6)
    assert s.law.params.r_max == 50e6
