"""pytest parameters for a classic-bug module's tables (BUGGY, FIXED and their marks).

Both classic modules build the same three parameter lists from their own
tables; the shape lives here once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import pytest

Marks = Mapping[str, tuple[str, bool]]  # target name -> (xfail reason, strict)


def _xfail(name: str, xfail: Marks) -> list[Any]:
    if name not in xfail:
        return []
    reason, strict = xfail[name]
    return [pytest.mark.xfail(strict=strict, reason=reason)]


def buggy_params(
    buggy: Iterable[tuple[Callable[[], Any], str, Any]], seeds: Sequence[int], xfail: Marks
) -> list[Any]:
    """Every buggy target under every seed; CI runs each under the first seed only.

    As for the fixed targets: a later seed draws more PCT schedules from the
    same distribution, so it adds a sample of the same check (found within the
    budget, replayed), not another check. ``-m slow`` (``nox -s slow``) runs
    them all, and tests/core/test_portfolio_heldout.py runs every buggy target
    under the default strategy (seed 0 in CI, every seed with ``-m slow``).
    """
    return [
        pytest.param(
            target,
            kind,
            cause,
            seed,
            id=f"{target.__name__}-seed{seed}",
            marks=_xfail(target.__name__, xfail) + ([pytest.mark.slow] if seed != seeds[0] else []),
        )
        for target, kind, cause in buggy
        for seed in seeds
    ]


#: the PCT budget of a classic check (the helpers in conftest.py)
SCHEDULES = 2000

#: the PCT budget of the CI run of a fixed target (its first seed); the slow
#: seeds run :data:`SCHEDULES` (CI time: 500 of them took the fixed targets' CI
#: cases from 40 s to 26 s on two workers)
CI_FIXED_SCHEDULES = 500


def fixed_params(
    fixed: Iterable[Callable[[], Any]],
    seeds: Sequence[int],
    xfail: Marks,
    slow: Collection[str],
) -> list[Any]:
    """Every fixed target under every seed; CI runs each under the first seed only.

    A seed only picks which PCT schedules are drawn (schedule N's stream is a
    function of (seed, N), every one a draw from the same distribution), so
    the later seeds add samples of the same check rather than a different one:
    they run with ``-m slow``, as do all seeds of a target named in ``slow``.
    For the same reason the CI run draws :data:`CI_FIXED_SCHEDULES` of them,
    and the slow seeds :data:`SCHEDULES` each: a fixed target is clean in every
    schedule, and CI time is the budget.
    """
    return [
        pytest.param(
            target,
            seed,
            CI_FIXED_SCHEDULES if seed == seeds[0] else SCHEDULES,
            id=f"{target.__name__}-seed{seed}",
            marks=_xfail(target.__name__, xfail)
            + ([pytest.mark.slow] if target.__name__ in slow or seed != seeds[0] else []),
        )
        for target in fixed
        for seed in seeds
    ]


def twin_params(
    fixed: Iterable[Callable[[], Any]], xfail: Marks, slow: Collection[str]
) -> list[Any]:
    """The slow fixed targets again, for their bounded non-slow twins."""
    return [
        pytest.param(target, id=target.__name__, marks=_xfail(target.__name__, xfail))
        for target in fixed
        if target.__name__ in slow
    ]
