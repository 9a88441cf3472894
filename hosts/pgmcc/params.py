"""A pgmcc session's parameters (a topology's ``pgmcc: {switch_ratio, timeout, loss_weight, repair}``).

Why these: the seed's results turn on the acker switch's damping ``c`` (2/3 in its runs) and on the
sender's timeout (fixed or adaptive: it decides much of set 1's result); the receivers' loss filter and
whether repairs are sent are the two choices Rizzo's description leaves to an implementation
(docs/multicast.md, "pgmcc as implemented").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PgmccParams", "ADAPTIVE", "DEFAULT_SWITCH_RATIO", "DEFAULT_LOSS_WEIGHT", "DUP_THRESHOLD", "MASK_BITS"]

#: ``timeout_ns`` for the adaptive timeout: RFC 6298's SRTT + max(200 ms, 4 RTTVAR) on the acker's
#: ACKs, backed off by doubling (the TCP model's own estimator, hosts/tcp/rto.py).
ADAPTIVE = None
DEFAULT_SWITCH_RATIO = 2 / 3  # c of the seed's runs
#: The receivers' loss filter weight (1 - c_p): each transmission moves the estimate by 1/512 toward
#: 1 (lost) or 0 (received): a memory of about 512 packets, so that a 0.4 % loss rate reads as more
#: than zero most of the time (the election compares estimates, and p = 0 reads as infinite throughput).
DEFAULT_LOSS_WEIGHT = 1 / 512
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
        return None

    @property
    def adaptive(self) -> bool:
        return self.timeout_ns is None
