"""A pgmcc session's parameters (a topology's ``pgmcc: {switch_ratio, timeout, loss_weight, repair,
nak_retries, rtt}``).

Why these: the seed's results turn on the acker switch's damping ``c`` (2/3 in its runs) and on the
sender's timeout (fixed or adaptive: it decides much of set 1's result); the receivers' loss filter and
whether repairs are sent are the two choices Rizzo's description leaves to an implementation
(docs/howto/multicast.md, "pgmcc as implemented").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "PgmccParams",
    "ADAPTIVE",
    "RTT_UNITS",
    "DEFAULT_SWITCH_RATIO",
    "DEFAULT_LOSS_WEIGHT",
    "DUP_THRESHOLD",
    "MASK_BITS",
    "SSTHRESH",
    "RETRY_MAX",
]

#: ``timeout_ns`` for the adaptive timeout: RFC 6298's SRTT + max(200 ms, 4 RTTVAR) on the acker's
#: ACKs, backed off by doubling (the TCP model's own estimator, hosts/tcp/rto.py).
ADAPTIVE = None
#: c of the seed's runs (SOURCES.md F); the draft (section 2.3) suggests 0.75: the seed's benchmark is
#: what the project reproduces.
DEFAULT_SWITCH_RATIO = 2 / 3
#: The receivers' loss filter weight (1 - c_p of the pgmcc draft, draft-ietf-rmt-bb-pgmcc-03 section 2.6:
#: an EWMA over per-packet loss indicators, "good performance with c = 500/65536" in 16-bit fixed
#: point). Read as the new sample's weight: each transmission moves the estimate by 500/65536 (about
#: 1/131) toward 1 (lost) or 0 (received). Read literally as c_p, the estimate would be almost the last
#: packet's own state, which the same section rules out (not "influenced too strongly by single loss
#: events"). docs/howto/multicast.md, "pgmcc as implemented".
DEFAULT_LOSS_WEIGHT = 500 / 65536
#: What the RTT in the acker election's estimate counts. ``time`` (the draft's recommendation, section
#: 2.5.4): the sender's clock, from the timestamp a NAK or ACK echoes less how long the receiver held it
#: (the draft's explicit timestamp with its correction term, 2.5.1). ``packets``: transmissions the sender
#: made between the one that triggered the message and its arrival (the sender's next transmission number
#: less the message's rx_max), the draft's least precise alternative (2.5.3, for receivers without a
#: clock): equal to time at a steady rate, not while the window (the sending rate) changes. The adaptive
#: timeout times the acker's ACKs on the clock either way.
RTT_UNITS = ("time", "packets")
#: A transmission is declared lost once the acker has received 3 later ones (TCP's duplicate-ACK rule).
DUP_THRESHOLD = 3
#: The ACK's bitmask: the acker's receive state of the 32 transmissions before its highest one.
MASK_BITS = 32
#: The window's slow-start threshold, fixed (draft section 2.2: "a fixed, small value for SSTHRESH (e.g. 4
#: packets)", because the acker may change on any packet): exponential opening below it, linear above.
SSTHRESH = 4.0
#: Successive timeouts after which the sender drops its acker and elects anew (draft section 2.7: MUST
#: force an election; two recommended).
RETRY_MAX = 2


@dataclass(frozen=True)
class PgmccParams:
    switch_ratio: float = DEFAULT_SWITCH_RATIO
    timeout_ns: int | None = ADAPTIVE  # None: adaptive; else a fixed timeout
    loss_weight: float = DEFAULT_LOSS_WEIGHT
    repair: bool = True  # NAKs ask for repairs (False: NAKs only feed the acker election)
    max_window: int = 10_000  # packets; a receive-window analogue, so a window cannot grow unbounded
    nak_retries: int = 5  # a receiver re-asks for a missing packet this many times, then gives it up
    rtt: str = "time"  # what the election's RTT counts (RTT_UNITS)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """What is wrong with these values, in one line, or None."""
        if not (math.isfinite(self.switch_ratio) and 0 < self.switch_ratio <= 1):
            return f"switch_ratio {self.switch_ratio:g}: must be in (0, 1]"
        if self.timeout_ns is not None and self.timeout_ns <= 0:
            return f"timeout {self.timeout_ns} ns: must be > 0 (or adaptive)"
        if not (math.isfinite(self.loss_weight) and 0 < self.loss_weight < 1):
            return f"loss_weight {self.loss_weight:g}: must be in (0, 1)"
        if self.max_window < 1:
            return f"max_window {self.max_window}: must be >= 1"
        if self.nak_retries < 0:
            return f"nak_retries {self.nak_retries}: must be >= 0"
        if self.rtt not in RTT_UNITS:
            return f"rtt {self.rtt!r}: choose {' or '.join(RTT_UNITS)}"
        return None

    @property
    def adaptive(self) -> bool:
        return self.timeout_ns is None
