"""A module whose globals two actors share: written from outside as ``settings.x = ...``.

Used by ``test_dpor_unseen_accesses.py``; ``bump_here`` updates the same
global from inside, through ``global``.
"""

from __future__ import annotations

counter = 0


def bump_here() -> None:
    global counter
    value = counter
    counter = value + 1
