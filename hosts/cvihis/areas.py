"""The 7 rate-adaptation areas of CVIHIS and the command each area gives.

[minDelay, maxDelay] is cut into 7 areas (0 = lowest delay ... 6 = highest); area 3 is the
target. Everything here works on *differences* of one-way delays, never on their absolute
values, because the sender's and receiver's clocks are not synchronised: an offset added to
every OWD must not change any area.

Commands are numbered as the thesis numbers its step types: (1) ---, (2) --, (3) ++,
(4) +++, (5) multiplicative decrease after a loss, (6) -, (7) + ; 0 is "hold".
"""

from __future__ import annotations

from bisect import bisect_right
from enum import IntEnum

from hosts.cvihis.params import CvihisParams

AREAS = 7
TARGET_AREA = 3
EXTREME_AREAS = (0, AREAS - 1)
GRADIENT_AREAS = (1, 2, 4, 5)  # the 4 areas beside the target: the gradient has priority there


class Command(IntEnum):
    """What the receiver tells the sender to do with its rate."""

    HOLD = 0
    STRONG_DECREASE = 1  # ---
    DECREASE = 2  # --
    INCREASE = 3  # ++
    STRONG_INCREASE = 4  # +++
    MD = 5  # loss: multiply the inter-packet gap by md_factor
    GRADIENT_DECREASE = 6  # -
    GRADIENT_INCREASE = 7  # +


# The command of each area when the gradient does not disagree with it.
_AREA_COMMAND = (
    Command.STRONG_INCREASE,
    Command.INCREASE,
    Command.GRADIENT_INCREASE,
    Command.HOLD,
    Command.GRADIENT_DECREASE,
    Command.DECREASE,
    Command.STRONG_DECREASE,
)


def span_ns(min_delay_ns: int, max_delay_ns: int, params: CvihisParams) -> int:
    """Width the areas are built on: maxDelay - minDelay, never below ``min_span_ns``."""
    return max(max_delay_ns - min_delay_ns, params.min_span_ns)


def classify(owd_ns: float, min_delay_ns: int, max_delay_ns: int, params: CvihisParams) -> int:
    """Area (0..6) of ``owd_ns``; areas are half-open [lower edge, upper edge)."""
    x = (owd_ns - min_delay_ns) / span_ns(min_delay_ns, max_delay_ns, params)
    return bisect_right(params.area_edges, x)


def area_bounds(area: int, min_delay_ns: int, max_delay_ns: int,
                params: CvihisParams) -> tuple[float, float]:
    """Delay range [lo, hi) of ``area``; the extremes reach -inf / +inf."""
    span = span_ns(min_delay_ns, max_delay_ns, params)
    edges = (float("-inf"), *params.area_edges, float("inf"))
    return (min_delay_ns + edges[area] * span, min_delay_ns + edges[area + 1] * span)


def gradient_sign(delta_ns: float, deadband_ns: int) -> int:
    """+1 delay rising, -1 falling, 0 flat (|delta| within the dead band)."""
    if delta_ns > deadband_ns:
        return 1
    if delta_ns < -deadband_ns:
        return -1
    return 0


def decide(area: int, gradient: int) -> Command:
    """The command for ``area`` given the delay gradient sign.

    In the 4 areas beside the target a gradient that disagrees with the area wins and gives
    the small gradient step in its own direction (rising delay => -, falling => +); the
    target holds and the 2 extreme areas act on the area alone, gradient ignored.
    """
    base = _AREA_COMMAND[area]
    if area in GRADIENT_AREAS:
        if area < TARGET_AREA and gradient > 0:
            return Command.GRADIENT_DECREASE
        if area > TARGET_AREA and gradient < 0:
            return Command.GRADIENT_INCREASE
    return base


def step_packets(command: Command, params: CvihisParams) -> float:
    """Signed step, in packets per sqrt(RTT), of a rate command (0 for HOLD and MD)."""
    return {
        Command.HOLD: 0.0,
        Command.MD: 0.0,
        Command.STRONG_DECREASE: -params.step_strong_decrease,
        Command.DECREASE: -params.step_decrease,
        Command.GRADIENT_DECREASE: -params.step_gradient,
        Command.GRADIENT_INCREASE: params.step_gradient,
        Command.INCREASE: params.step_increase,
        Command.STRONG_INCREASE: params.step_strong_increase,
    }[command]
