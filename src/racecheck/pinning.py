"""Schedules replayed before exploring: pinned tokens and saved failures.

A token pinned in code (``@racecheck.pinned(token)``, ``check(replay=...)``,
``@pytest.mark.racecheck(replay=...)``) or saved by the failure database turns a
found failure into a permanent regression check: it runs first, exactly, and
if it fails the failure is reported as it was found. On fixed code it runs
clean and exploration goes on as usual.

A token that no longer *applies* (it was recorded for another target, backend
or Python, or the code now takes another path: a divergence) cannot judge the
code either way. It must not fail the test for that reason, so it becomes a
note (a warning) and exploration goes on. A *malformed* token is a typo in the
test, and that is a usage error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from racecheck.errors import DivergenceError, TokenError, UsageError, one_line

#: the attribute ``pinned`` sets on a target
PINNED_ATTR = "__racecheck_pinned__"

F = TypeVar("F", bound=Callable[..., Any])


def pinned(*tokens: str) -> Callable[[F], F]:
    """Decorate a target: ``racecheck.check`` replays these tokens before exploring.

    The function itself is returned (with the tokens attached), so its name,
    and the label its tokens are bound to, do not change.
    """
    checked = normalize(tokens)

    def mark(target: F) -> F:
        previous = tuple(getattr(target, PINNED_ATTR, ()))
        setattr(target, PINNED_ATTR, previous + tuple(checked))
        return target

    return mark


def normalize(value: Any) -> list[str]:
    """One token or several, decoded once so that a typo is a UsageError now."""
    from racecheck.schedule import Schedule

    if value is None:
        return []
    tokens = [value] if isinstance(value, str) else value
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise UsageError(f"replay must be a schedule token or a list of them, not {value!r}")
    out = []
    for token in tokens:
        token = token.strip()
        try:
            Schedule.decode(token)
        except TokenError as exc:
            raise UsageError(f"pinned schedule: {one_line(exc, named=False)}") from None
        out.append(token)
    return list(dict.fromkeys(out))


@dataclass
class Replayed:
    token: str
    #: "passed" (ran clean) or "not-applicable"
    status: str
    note: str = ""


def replay_first(
    target: Callable[[], Any], tokens: Iterable[str], options: dict[str, Any], *, what: str
) -> list[Replayed]:
    """Replay each token; RaceFound propagates, a token that does not apply is a note."""
    from racecheck.explore import replay_token

    done: list[Replayed] = []
    for token in tokens:
        try:
            replay_token(target, token, options=dict(options))
        except (DivergenceError, TokenError) as exc:
            reason = one_line(exc, named=False)
            done.append(
                Replayed(
                    token,
                    "not-applicable",
                    f"{what} {_short(token)} does not apply to this code ({reason});"
                    " exploring as usual",
                )
            )
        else:
            done.append(Replayed(token, "passed"))
    return done


def _short(token: str) -> str:
    return token if len(token) <= 40 else token[:37] + "..."
