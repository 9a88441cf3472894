"""The arrival-time filter of draft-ietf-rmcat-gcc-02, 5.3: a scalar Kalman filter of d(i).

Model: d(i) = m(i) + v(i), m(i+1) = m(i) + u(i) (v the network jitter, u the state noise).

    z(i) = d(i) - m_hat(i-1)
    k(i) = (e(i-1) + q) / (var_v_hat(i) + e(i-1) + q)
    m_hat(i) = m_hat(i-1) + z(i) k(i)
    e(i) = (1 - k(i)) (e(i-1) + q)
    var_v_hat(i) = max(alpha var_v_hat(i-1) + (1 - alpha) z(i)^2, 1)
    alpha = (1 - chi)^(30 / (1000 f_max)),  f_max = max 1 / (T(j) - T(j-1)) over the last K groups

(T in ms, so f_max is in groups per ms: 30 / (1000 f_max) is the group spacing in units of a 30 fps
frame, and alpha is 1 - chi per 33 ms whatever the group rate.)

q = 10^-3, e(0) = 0.1, chi in [0.001, 0.1] (0.01 here, the middle on a log scale); a z(i) beyond
3 sqrt(var_v_hat) updates the noise variance as 3 sqrt(var_v_hat) (the draft's outlier filter).
K is not given by the draft: 60 groups here (0.3 s of 5 ms groups). var_v_hat(0) is the floor, 1.

The detector compares m_hat(i) with its threshold as the draft writes it: a per-group delay
variation in ms. With 5 ms groups that is a coarse test (docs/background/e2e.md: why trendline is the default).
"""

from __future__ import annotations

import math
from collections import deque

from hosts.gcc.groups import GroupDelta

__all__ = ["KalmanFilter", "Q", "E0", "CHI", "K_GROUPS"]

Q = 1e-3
E0 = 0.1
CHI = 0.01
K_GROUPS = 60


class KalmanFilter:
    name = "kalman"

    def __init__(self, chi: float = CHI, q: float = Q) -> None:
        if not 0 < chi < 1 or q <= 0:
            raise ValueError(f"chi {chi} (in (0, 1)) and q {q} (> 0)")
        self.chi = chi
        self.q = q
        self.m_hat = 0.0
        self.e = E0
        self.var_v = 1.0
        self.send_deltas: deque[int] = deque(maxlen=K_GROUPS)

    def update(self, delta: GroupDelta) -> float:
        if delta.send_delta_ns > 0:
            self.send_deltas.append(delta.send_delta_ns)
        f_max = 1e6 / min(self.send_deltas) if self.send_deltas else 0.2  # groups per ms
        alpha = (1 - self.chi) ** (30 / (1000 * f_max))
        z = delta.delay_variation_ms - self.m_hat
        bound = 3 * math.sqrt(self.var_v)
        z_var = max(-bound, min(bound, z))
        self.var_v = max(alpha * self.var_v + (1 - alpha) * z_var * z_var, 1.0)
        k = (self.e + self.q) / (self.var_v + self.e + self.q)
        self.m_hat += z * k
        self.e = (1 - k) * (self.e + self.q)
        return self.m_hat

    @property
    def estimate(self) -> float:
        return self.m_hat
