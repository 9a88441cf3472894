"""The command lines' parser: ``--duration -5s`` hands ``-5s`` to the option, as ``--duration=-5s`` does.

Why: argparse reads only plain negative numbers (``-5``, ``-.5``) as values; ``-5s``, ``-1Mbps``,
``-50%`` or ``-2C`` looked like unknown options, and the user got "expected one argument" and a
usage dump where ``--duration=-5s`` reaches the command's own one-line error. No option of ``hbh``
or ``p4switch`` starts with a dash and a digit, so nothing else changes. Here, in the lowest layer,
so that every program's parser (``hbh``, ``p4switch``) is the same class; argparse gives a
sub-command's parser its parent's class.
"""

from __future__ import annotations

import argparse
import re

__all__ = ["ValueParser"]


class ValueParser(argparse.ArgumentParser):
    """An ArgumentParser that takes a dash followed by a digit (or ``.`` and a digit) for a value."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._negative_number_matcher = re.compile(r"^-\.?\d")
