"""Mean and 95 % confidence interval over seeds (Student t), without SciPy.

Why a table: the two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom are
fixed constants; above 30 the Cornish-Fisher expansion around the normal quantile is within
1e-4 of the exact value, far below what a handful of seeds can resolve.
"""

from __future__ import annotations

import math
import statistics

__all__ = ["t975", "mean_ci"]

_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_Z975 = 1.959964


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (the 95 % interval's factor)."""
    if df < 1:
        raise ValueError(f"degrees of freedom = {df}: must be >= 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def mean_ci(values: list[float]) -> tuple[float, float | None]:
    """(mean, half-width of the 95 % interval); the half-width is None for fewer than two values."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return math.nan, None
    mean = statistics.fmean(finite)
    if len(finite) < 2:
        return mean, None
    return mean, t975(len(finite) - 1) * statistics.stdev(finite) / math.sqrt(len(finite))
