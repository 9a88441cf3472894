"""TCP as a model, sans-I/O, for the simulator: reno and CUBIC (RFC 9438), SACK recovery (RFC 2018,
RFC 6675) or, without SACK, NewReno's (RFC 6582).

The kernel runs ``control: tcp`` in the netns backend (``topo/netns/tcpflow.py``); this package is the
simulator's TCP, validated against the kernel on a single bottleneck (docs/howto/tcp.md).
"""

from hosts.tcp.cubic import Cubic
from hosts.tcp.nocc import NoControl
from hosts.tcp.receiver import Ack, TcpReceiver
from hosts.tcp.reno import AckInfo, Reno
from hosts.tcp.rto import RtoEstimator
from hosts.tcp.sender import MSS, Segment, TcpSender

__all__ = ["Cubic", "Reno", "AckInfo", "Ack", "TcpReceiver", "TcpSender", "Segment", "RtoEstimator", "MSS",
           "congestion_control", "MODELLED_CC", "SIM_ONLY_CC", "NoControl"]

#: ``none``: no congestion control, the model's reliability alone; ``cvihis-rtm``: ``none``'s window,
#: its segments paced by CVIHIS RTM (``hosts/cvihis_tcp.py``, bound by ``topo/sim/tcp.py``). No kernel
#: offers either; each maps to what it is, for the errors that refuse them.
SIM_ONLY_CC = {"none": "the simulator's TCP model without congestion control",
               "cvihis-rtm": "the simulator's TCP model paced by CVIHIS RTM"}
MODELLED_CC = ("reno", "cubic", *SIM_ONLY_CC)


def congestion_control(name: str) -> Reno | Cubic | NoControl:
    """A fresh congestion control by its kernel name (or ``none``); ValueError naming the modelled
    ones otherwise."""
    if name == "reno":
        return Reno()
    if name == "cubic":
        return Cubic()
    if name in SIM_ONLY_CC:  # cvihis-rtm: the window of none; the pace is the pacer's
        return NoControl()
    raise ValueError(f"congestion control {name!r} is not modelled (modelled: {', '.join(MODELLED_CC)})")
