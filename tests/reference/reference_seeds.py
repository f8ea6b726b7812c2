"""The seeds a reference component's "PCT finds the race" tests run under.

Five seeds show that the race is found whatever the seed, not by one lucky
draw; CI runs the first three, ``-m slow`` (``nox -s slow``) all five. A seed
only picks which PCT schedules are drawn, so the later two add samples of the
same check, and tests/regression runs every variant against its expectation.
"""

from __future__ import annotations

import pytest

SEEDS = [0, 1, 2, *(pytest.param(seed, marks=pytest.mark.slow) for seed in (3, 4))]
