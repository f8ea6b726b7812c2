"""After stress sees a failure: can the controlled scheduler reproduce it?

A stress failure has no schedule. If the same target fails under
:func:`racecheck.check` too, the user gets a token that replays it
deterministically, which is worth far more than a rate. If it does not, the
reason matters: the scheduler may have been unable to control the target
(a thread blocked in C on a socket, a lock it could not adopt, code it does not
trace: StuckError, blind spots, warnings), which is exactly when stress mode is
the right tool; or it controlled everything and saw no failure, which points at
real timing or I/O ordering the scheduler does not model.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Callable
from typing import Any

from racecheck.errors import StuckError, UsageError, one_line
from racecheck.stress.report import Reproduction

#: seconds without progress before the controlled run calls the target stuck
WATCHDOG = 2.0


def copies(target: Callable[[], Any], n: int) -> Callable[[], Any]:
    """A target that runs ``n`` copies of ``target`` at once, as stress does.

    Threads for a plain function, tasks for a coroutine function. The first
    copy's exception is re-raised. With ``n == 1`` it is ``target`` itself, so
    a token found on it replays on the target: ``racecheck.replay(copies(t, n), token)``.
    """
    if n == 1:
        return target
    name = getattr(target, "__qualname__", type(target).__name__)
    wrapper: Callable[[], Any]
    if inspect.iscoroutinefunction(target):

        async def gathered() -> None:
            import asyncio

            results = await asyncio.gather(*(target() for _ in range(n)), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result

        wrapper = gathered
    else:

        def threaded() -> None:
            errors: list[BaseException] = []

            def one() -> None:
                try:
                    target()
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=one, name=f"copy-{i + 1}") for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]

        wrapper = threaded
    wrapper.__module__ = getattr(target, "__module__", None) or wrapper.__module__
    wrapper.__qualname__ = wrapper.__name__ = f"{name}[x{n}]"
    return wrapper


def reproduce(
    target: Callable[[], Any],
    *,
    parallel: int,
    schedules: int,
    backend: str | None,
    label: str | None,
) -> Reproduction:
    """Run ``racecheck.check`` on the stressed target with a modest budget."""
    import racecheck

    controlled = copies(target, parallel)
    options: dict[str, Any] = {"watchdog": WATCHDOG, "minimize_time": 10.0}
    if label is not None:
        # the name the token is bound to, as with racecheck.check(label=...)
        options["label"] = label if parallel == 1 else f"{label}[x{parallel}]"
    if backend == "asyncio":
        options["backend"] = "asyncio"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = racecheck.check(controlled, schedules=schedules, seed=0, **options)
    except racecheck.RaceFound as exc:
        what = getattr(controlled, "__qualname__", "target")
        call = "target" if parallel == 1 else f"copies(target, {parallel})"
        bound = f", label={options['label']!r}" if "label" in options else ""
        return Reproduction(
            "reproduced",
            detail=f"controlled failure: {one_line(exc.cause) if exc.cause else exc.kind}",
            token=exc.schedule,
            schedules=exc.schedules_run,
            replay=f"racecheck.replay({call}, {exc.schedule!r}{bound})  # target: {what}"
            + ("" if parallel == 1 else "; copies from racecheck.stress"),
        )
    except StuckError as exc:
        return Reproduction("out-of-reach", detail=one_line(exc))
    except UsageError as exc:
        return Reproduction("out-of-reach", detail=one_line(exc))
    except Exception as exc:
        return Reproduction("error", detail=one_line(exc))
    if report.warnings:
        return Reproduction(
            "out-of-reach",
            detail=f"{report.schedules_run} schedules ran clean, but the scheduler could not see"
            f" all of the target: {report.warnings[0]}",
            schedules=report.schedules_run,
        )
    return Reproduction(
        "not-reproduced",
        detail="the scheduler controlled the target and saw no failure: the bug needs real"
        " timing, I/O ordering or C code it does not model",
        schedules=report.schedules_run,
    )
