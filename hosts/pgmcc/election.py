"""The acker election: the receiver with the worst TCP throughput estimate, the pgmcc draft's
T ∝ 1 / (RTT · √p · (1 + 9p(1 + 32p²))) (draft-ietf-rmt-bb-pgmcc-03 section 2.4: Padhye's equation with
RTO = 4 RTT, constants dropped).

Why a ratio ``c`` and not "the smallest T wins": estimates are noisy, and switching the acker costs
the window (the new acker's ACKs are not the old one's), so a receiver takes over only when it is
clearly worse, T(i) < c · T(acker), 0 < c <= 1 (draft section 2.3, which suggests c = 0.75; 2/3 in the
seed's runs). A receiver
that has seen no loss (p = 0) has T = ∞: it never takes over from anyone and anyone with a loss
takes over from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["throughput", "AckerElection", "Switch"]


def throughput(rtt: float, p: float, unit: float = 1e9) -> float:
    """TCP's throughput up to a constant (draft section 2.4): 1 / (RTT · √p · (1 + 9p(1 + 32p²))); ∞ when
    p = 0. ``rtt`` in ns (``unit`` 1e9: packets per second) or in packets sent (``unit`` 1: packets per
    packet the sender sends). The timeout term (9p(1 + 32p²)) makes a lossy receiver worse than 1/√p says."""
    if p <= 0:
        return math.inf
    return unit / (max(rtt, 1.0) * math.sqrt(p) * (1 + 9 * p * (1 + 32 * p * p)))


@dataclass(frozen=True)
class Switch:
    """An acker change: at ``t_ns`` from ``old`` (0: none) to ``new``, with both estimates."""

    t_ns: int
    old: int
    new: int
    t_old: float
    t_new: float


@dataclass
class AckerElection:
    ratio: float
    unit: float = 1e9  # the RTTs' unit per second: 1e9 (ns), or 1 with RTTs counted in packets sent
    acker: int = 0
    acker_p: float = 0.0
    acker_rtt_ns: float = 0.0
    switches: list[Switch] = field(default_factory=list)

    def acker_throughput(self) -> float:
        return throughput(self.acker_rtt_ns, self.acker_p, self.unit)

    def drop_acker(self) -> None:
        """No acker until the next report elects one (the sender's forced re-election)."""
        self.acker, self.acker_p, self.acker_rtt_ns = 0, 0.0, 0.0

    def on_acker_state(self, p: float, rtt_ns: float | None) -> None:
        """The acker's own loss estimate and RTT (from its ACKs or NAKs)."""
        self.acker_p = p
        if rtt_ns is not None:
            self.acker_rtt_ns = rtt_ns

    def on_report(self, t_ns: int, rid: int, p: float, rtt_ns: float) -> bool:
        """A receiver's NAK with its estimate; True when it becomes the acker."""
        if rid == self.acker:
            self.on_acker_state(p, rtt_ns)
            return False
        t_new = throughput(rtt_ns, p, self.unit)
        t_old = self.acker_throughput()
        if self.acker != 0 and not t_new < self.ratio * t_old:
            return False
        self.switches.append(Switch(t_ns, self.acker, rid, t_old, t_new))
        self.acker, self.acker_p, self.acker_rtt_ns = rid, p, rtt_ns
        return True
