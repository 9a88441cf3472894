"""Test-session settings.

Under CI (``CI`` set, as the CI runner does) hypothesis runs derandomized: every property test
explores the same examples on every run, so a CI result never depends on a lucky draw. Local runs
keep exploring new examples (and the failures they find are stored in .hypothesis/).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
