"""Benchmarks of p4switch, the simulator and the netns backend: ``make bench`` (run.py) writes
docs/performance.md from them; tools/ holds developer tools run by hand, plumbing/ the tests of the
bench's own code. What more than one benchmark writes the same way is here.
"""


def spread(rates: list[float]) -> str:
    """Every round's rate, in the order taken, as a row's details list them."""
    return ", ".join(f"{r:,.0f}" for r in rates)
