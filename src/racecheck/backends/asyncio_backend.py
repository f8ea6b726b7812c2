"""The asyncio backend: an ``async def`` target on a :class:`ControlledLoop`.

The loop is installed through ``asyncio.Runner(loop_factory=...)`` — never
through the event loop policy, which is global state other code (pytest
plugins, the user's own setup) may be relying on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from racecheck.backends.asyncio_loop import ControlledLoop, StandaloneHost
from racecheck.engine import Controller, Failure, RunAborted


class AsyncioBackend:
    name = "asyncio"
    granularity = "task"

    def __init__(self, target: Callable[[], Any]) -> None:
        self.target = target
        self.runs_waiting_outside = 0

    @property
    def scheduling_limit(self) -> str | None:
        """Why "every schedule ran" would overclaim (see racecheck.explore), if it would."""
        if not self.runs_waiting_outside:
            return None
        return (
            "the loop waited for work from threads or I/O racecheck does not run"
            " (call_soon_threadsafe from a real thread, a socket); when that work arrives"
            " was not explored"
        )

    def install(self) -> None:
        pass

    def uninstall(self) -> None:
        pass

    def enable_detection(self) -> None:
        pass  # task steps are traced one at a time by the controlled loop

    def run_once(self, controller: Controller) -> None:
        host = StandaloneHost(controller)
        loops: list[ControlledLoop] = []

        def factory() -> ControlledLoop:
            loop = ControlledLoop(host)
            loops.append(loop)
            return loop

        try:
            with asyncio.Runner(loop_factory=factory) as runner:
                runner.run(self.target())
                check_unretrieved(loops[0], controller)
        except RunAborted:
            pass
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            if not controller.aborting:
                # It surfaced in the root task (the first actor), whoever raised it.
                controller.fail(Failure("exception", exc, actor=1))
        finally:
            # self-pipe writes: call_soon_threadsafe, from a thread racecheck does not run
            if host.waited_outside or any(loop._rc_wakeups for loop in loops):
                self.runs_waiting_outside += 1


def check_unretrieved(loop: ControlledLoop, controller: Controller) -> None:
    """A task that died with an exception nobody awaited is a failure too.

    asyncio would only log "Task exception was never retrieved" when the task
    is garbage-collected — too late and too easy to miss.
    """
    if controller.failure is not None:
        return
    for task in loop._rc_ids:
        if task.done() and not task.cancelled() and task._log_traceback:
            exc = task.exception()
            if exc is not None:
                controller.fail(
                    Failure("exception", exc, f"in task {task.get_name()}", loop._rc_ids[task])
                )
                return
