"""``hbh tcp-kernel``: bad input in one line (exit 2); the RTM variants reach the simulator's
CVIHIS flows and go away after; a squeezed RTM yields more to TCP than the shifted one."""

from __future__ import annotations

import pytest

from topo.results import tcp as R
from topo.results import tcp_kernel as K
from topo.run.runner import run_experiment
from topo.sim import network as simnet


@pytest.mark.parametrize(("args", "needle"), [(["--only", "nosuch"], "unknown nosuch"),
                                              (["--backends", "carrier"], "unknown carrier")])
def test_bad_input_is_one_line_and_exit_2(capsys, args: list[str], needle: str) -> None:
    assert K.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_rtm_variant_changes_the_flows_parameters_only_inside() -> None:
    topo = R.scenario("cvihis-rtm-vs-tcp")
    flow = topo.flows[0]
    assert not simnet.cvihis_params(topo, flow).rtm_shift_areas  # the default reading, reprobe-overload
    with K.rtm_variant(rtm_shift_areas=True, updates_per_rtt=1):
        p = simnet.cvihis_params(topo, flow)
        assert p.rtm_shift_areas and p.updates_per_rtt == 1
        assert p.packet_size_bytes == flow.packet_size  # the flow's own values are kept
    assert simnet.cvihis_params(topo, flow).updates_per_rtt == 3


def test_squeezed_rtm_leaves_tcp_more_than_shifted_rtm() -> None:
    """At 2 Mb/s, 20 ms (the corner where the squeeze matters most, docs/howto/tcp.md): with only minDelay
    pushed, RTM reads the queue TCP builds as delay near its loss point and gives way."""
    topo = R.scenario("cvihis-rtm-vs-tcp")
    shares = {}
    for shift in (True, False):
        with K.rtm_variant(rtm_shift_areas=shift):
            s = run_experiment(topo, 20 * 10**9, seed=1, plots=False).summary
        shares[shift] = R.share(s, "tcp", 10, 20)
    assert shares[False] > shares[True], shares
