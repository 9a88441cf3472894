"""A pgmcc session's parameters (a topology's ``pgmcc: {switch_ratio, timeout, loss_weight, repair,
nak_retries, rtt}``).

Why these: the seed's results turn on the acker switch's damping ``c`` (2/3 in its runs) and on the
sender's timeout (fixed or adaptive: it decides much of set 1's result); the receivers' loss filter and
whether repairs are sent are the two choices Rizzo's description leaves to an implementation
(docs/multicast.md, "pgmcc as implemented").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PgmccParams", "ADAPTIVE", "RTT_UNITS", "DEFAULT_SWITCH_RATIO", "DEFAULT_LOSS_WEIGHT", "DUP_THRESHOLD", "MASK_BITS"]

#: ``timeout_ns`` for the adaptive timeout: RFC 6298's SRTT + max(200 ms, 4 RTTVAR) on the acker's
#: ACKs, backed off by doubling (the TCP model's own estimator, hosts/tcp/rto.py).
ADAPTIVE = None
DEFAULT_SWITCH_RATIO = 2 / 3  # c of the seed's runs
#: The receivers' loss filter weight (1 - c_p): each transmission moves the estimate by 1/512 toward
#: 1 (lost) or 0 (received): a memory of about 512 packets, so that a 0.4 % loss rate reads as more
#: than zero most of the time (the election compares estimates, and p = 0 reads as infinite throughput).
DEFAULT_LOSS_WEIGHT = 1 / 512
#: What the RTT in the acker election's T = 1/(RTT·√p) counts. ``time``: the sender's clock, from the
#: timestamp a NAK or ACK echoes (less how long the receiver held it). ``packets``: transmissions the
#: sender made between the one that triggered the message and its arrival (the sender's next
#: transmission number less the message's rx_max), Rizzo's measure, which needs no timestamp in the data
#: and no clock: every receiver sees the same stream, so a packet count compares receivers as time does
#: in a steady state, and differs from it while the window (the sending rate) changes. The adaptive
#: timeout times the acker's ACKs on the clock either way.
RTT_UNITS = ("time", "packets")
#: A transmission is declared lost once the acker has received 3 later ones (TCP's duplicate-ACK rule).
DUP_THRESHOLD = 3
#: The ACK's bitmask: the acker's receive state of the 32 transmissions before its highest one.
MASK_BITS = 32


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
