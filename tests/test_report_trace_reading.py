"""Reading a trace: the terminal fits its width, elision never hides the conflict,
operations and resources read apart, and the HTML can show every elided line.

Real explorations where the layout is the point (COLUMNS), hand-built traces
where one precise shape is (a long step holding the racing write).
"""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import UTC, datetime

import pytest

import racecheck
from racecheck.report import RunRecord
from racecheck.report.html import render_html
from racecheck.trace import ActorInfo, FailurePoint, SourceLine, Step, Trace


class Account:
    def __init__(self) -> None:
        self.balance = 0

    async def deposit(self, amount: int) -> None:
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount


async def four_deposits() -> None:
    account = Account()
    await asyncio.gather(*(account.deposit(a) for a in (1, 2, 4)))
    assert account.balance == 7, account.balance


async def two_deposits() -> None:
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15, account.balance


def _found(target: object, **options: object) -> racecheck.RaceFound:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, schedules=200, **options)  # type: ignore[arg-type]
    return info.value


@pytest.mark.usefixtures("real_engine")
def test_the_terminal_trace_fits_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = _found(four_deposits).trace.render()  # type: ignore[union-attr]
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert too_wide == [], "\n".join(too_wide)


@pytest.mark.usefixtures("real_engine")
def test_columns_that_do_not_fit_fall_back_to_the_linear_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = _found(four_deposits).trace.render()  # type: ignore[union-attr]
    # one row per turn, the actor named on it
    assert re.search(r"^\s+\d+.? \[Task-\d · deposit\(1\)\]", text, re.M), text


@pytest.mark.usefixtures("real_engine")
def test_two_actors_still_get_columns_in_a_wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "140")
    text = _found(two_deposits).trace.render()  # type: ignore[union-attr]
    header = next(line for line in text.splitlines() if "deposit(10)" in line)
    assert "deposit(5)" in header, text  # both actors side by side
    assert all(len(line) <= 140 for line in text.splitlines())


class Worker:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.processed = 0

    def run(self) -> None:
        with self.lock:
            seen = self.processed
        self.processed = seen + 1


def two_workers() -> None:
    w = Worker()
    threads = [threading.Thread(target=w.run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert w.processed == 2, w.processed


@pytest.mark.usefixtures("threads_engine")
def test_an_operation_reads_apart_from_its_resource() -> None:
    text = _found(two_workers).trace.render(width=160)  # type: ignore[union-attr]
    assert "processed Lock#" not in text, text
    assert re.search(r"(read|write) \.processed \[Lock#\d+\]", text), text


def _long_step_trace() -> Trace:
    """Actor 1 runs eight lines in one step; the sixth writes the racing attribute."""
    f = "/project/bank.py"
    body = [SourceLine(f, 10 + i, f"step_{i}()") for i in range(8)]
    body[5] = SourceLine(f, 15, "self.balance = current + amount")
    return Trace(
        actors=[
            ActorInfo(1, "Task-1 · deposit(10)", "task"),
            ActorInfo(2, "Task-2 · deposit(5)", "task"),
        ],
        steps=[
            Step(1, 1, tuple(body), "await sleep(0)", None, False, ("w:balance",)),
            Step(
                2,
                2,
                (SourceLine(f, 15, "self.balance = current + amount"),),
                "returned",
                None,
                True,
                ("w:balance",),
            ),
        ],
        failure=FailurePoint(
            None, "AssertionError: 5 != 15", SourceLine(f, 30, "assert a.balance == 15")
        ),
    )


def test_the_terminal_never_elides_a_line_of_the_conflict() -> None:
    text = _long_step_trace().render(width=120)
    first_turn = text.split("\n  2")[0]
    assert "self.balance = current + amount" in first_turn, text
    assert "⋯" in first_turn  # the uneventful lines around it are still folded


def test_html_elided_lines_expand_in_details() -> None:
    trace = _long_step_trace()
    # past the picture's per-step limit
    f = "/project/bank.py"
    many = tuple(SourceLine(f, 100 + i, f"line_{i}()") for i in range(30))
    trace.steps[0] = Step(1, 1, many, "await sleep(0)", None, False, ())
    record = RunRecord(
        scenario="bank",
        variant="buggy",
        expect="race",
        verdict="race",
        kind="exception",
        schedules_run=3,
        exhausted=False,
        schedule="rc1:x",
        seconds=0.1,
        ok=True,
        message="AssertionError: 5 != 15",
        trace=trace,
    )
    html = render_html([record], datetime(2026, 1, 1, tzinfo=UTC))
    assert "more lines" in html  # the picture still elides
    details = re.findall(r"<details[^>]*>.*?</details>", html, re.S)
    holding = [d for d in details if "line_15()" in d]
    assert holding, "no <details> shows the elided lines"
    assert all(f"line_{i}()" in holding[0] for i in range(30))
    assert "⋯" not in "".join(re.findall(r"<pre>(.*?)</pre>", holding[0], re.S))


def loop_in_the_root_thread() -> None:
    account = Account()

    async def main() -> None:
        await asyncio.gather(account.deposit(10), account.deposit(5))

    asyncio.run(main())
    assert account.balance == 15, account.balance


@pytest.mark.usefixtures("threads_engine")
def test_a_sync_target_running_a_loop_gets_a_real_trace() -> None:
    trace = _found(loop_in_the_root_thread).trace
    assert trace is not None
    assert trace.steps, "the trace has no steps: only its header and the failure line"
    texts = [line.text for step in trace.steps for line in step.lines]
    assert "self.balance = current + amount" in texts
    assert "asyncio.run(main())" in texts


def test_a_failure_without_a_location_names_the_nearest_user_line() -> None:
    trace = _long_step_trace()
    trace.failure = FailurePoint(2, "RuntimeError: Event loop is closed", None)
    cross = next(line for line in trace.render(width=120).splitlines() if "✗" in line)
    assert "near bank.py:15  self.balance = current + amount" in cross, cross
