"""The race detector on real runs: it finds races no assertion checks, and stays quiet
on correct code."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.detect import RaceDetected

sys.path.insert(0, str(Path(__file__).parent))
from unasserted import TARGETS

DETECTOR_KINDS = ("atomicity-violation", "data-race")


def detect(target: Callable[[], Any], schedules: int = 40, **options: Any) -> racecheck.RaceFound:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, **options)
    return info.value


# -- the reference components, assertions removed ------------------------------------


@pytest.mark.parametrize(("key"), list(TARGETS), ids=lambda k: f"{k[0]}[{k[1]}]")
def test_reference_variants_without_assertions(key: tuple[str, str]) -> None:
    target, expected = TARGETS[key]
    if expected == "safe":
        report = racecheck.check(target, detect=True, schedules=40, label=f"{key}")
        # auto's DPOR member may prove the fix before the budget is spent
        assert report.schedules_run == 40 or report.verified, report
        return
    found = detect(target, schedules=300, label=f"{key}")
    if key[1] in ("eager_lock", "eager_queue"):
        # asyncio itself refuses the loop change; no assertion is involved
        assert found.kind == "exception" and "different event loop" in str(found.cause)
        return
    assert found.kind in DETECTOR_KINDS, found
    finding = found.cause.finding  # type: ignore[union-attr]
    assert len(finding.accesses) in (2, 3)
    assert all(a.filename.endswith(".py") and a.lineno > 0 for a in finding.accesses)
    assert found.trace is not None and found.schedule.startswith("rc1:")


# -- the shapes, one by one ----------------------------------------------------------


class Account:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = asyncio.Lock()

    async def deposit(self, amount: int) -> None:
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount

    async def deposit_locked(self, amount: int) -> None:
        async with self.lock:
            await self.deposit(amount)


async def lost_update() -> None:
    account = Account()
    await asyncio.gather(account.deposit(1), account.deposit(2))


async def lost_update_locked() -> None:
    account = Account()
    await asyncio.gather(account.deposit_locked(1), account.deposit_locked(2))


def test_lost_update_names_both_accesses_and_replays() -> None:
    found = detect(lost_update)
    assert found.kind == "atomicity-violation"
    finding = found.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "lost update"
    first, between, last = finding.accesses
    assert (first.action, between.action, last.action) == ("read", "wrote", "wrote")
    assert first.target == last.target == "self.balance"
    assert "current = self.balance" in first.line and "self.balance = current" in last.line
    assert first.actor == last.actor != between.actor
    rendered = str(found)
    assert "lost update on self.balance" in rendered and "detect=True" in rendered
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(lost_update, found.schedule, detect=True)
    assert again.value.kind == "atomicity-violation"
    assert str(again.value.cause) == str(found.cause)


def test_lock_held_across_the_await_is_clean() -> None:
    report = racecheck.check(lost_update_locked, detect=True, schedules=100)
    assert report.schedules_run == 100 or report.exhausted  # verified early: every schedule


async def check_then_act() -> None:
    cache: dict[str, object] = {}

    async def get(key: str) -> object:
        if key not in cache:
            await asyncio.sleep(0)  # the fetch
            cache[key] = object()
        return cache[key]

    await asyncio.gather(get("a"), get("a"))


def test_check_then_act_across_an_await() -> None:
    finding = detect(check_then_act).cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "stale check"
    assert finding.accesses[0].action == "checked"


async def counter_increments() -> None:
    totals = {"n": 0}

    async def bump() -> None:
        totals["n"] += 1  # atomic between awaits
        await asyncio.sleep(0)
        totals["n"] += 1

    await asyncio.gather(bump(), bump())
    assert totals["n"] == 4


def test_read_modify_write_between_awaits_is_not_a_race() -> None:
    report = racecheck.check(counter_increments, detect=True, schedules=100)
    assert report.schedules_run == 100 or report.exhausted


async def result_handed_over() -> None:
    box = {"value": None}

    async def produce() -> None:
        await asyncio.sleep(0)
        box["value"] = "made"

    box["value"] = "pending"
    await asyncio.gather(produce())
    assert box["value"] == "made"  # waited for: expected to see the producer's write


def test_reading_a_value_one_waited_for_is_not_a_race() -> None:
    report = racecheck.check(result_handed_over, detect=True, schedules=50)
    assert report.schedules_run == 50 or report.exhausted


class Counter:
    def __init__(self) -> None:
        self.n = 0


def threads_increment(locked: bool) -> Callable[[], None]:
    def target() -> None:
        counter, lock = Counter(), threading.Lock()

        def work() -> None:
            if locked:
                with lock:
                    counter.n += 1
            else:
                counter.n += 1

        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return target


def test_unsynchronised_increment_across_threads() -> None:
    found = detect(threads_increment(False))
    # a lost update when the schedule preempts inside +=, a data race otherwise
    assert found.kind in DETECTOR_KINDS and "counter.n" in str(found.cause)


def unordered_writes() -> None:
    counter = Counter()

    def work(value: int) -> None:
        counter.n = value

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_unordered_writes_are_a_data_race() -> None:
    found = detect(unordered_writes)
    assert found.kind == "data-race"
    assert "no happens-before, no common lock" in str(found.cause)
    assert str(found.cause).count("wrote counter.n") == 2


def test_locked_increment_and_published_reads_are_clean() -> None:
    # random: auto's DPOR member may verify this small program and stop early
    report = racecheck.check(threads_increment(True), detect=True, schedules=100, strategy="random")
    assert report.schedules_run == 100


def iterate_while_adding() -> None:
    members: set[int] = set()

    def add() -> None:
        members.add(1)

    thread = threading.Thread(target=add)
    thread.start()
    for _member in members:  # the add is not ordered before this
        pass
    thread.join()


def test_iteration_against_mutation_is_a_data_race() -> None:
    found = detect(iterate_while_adding)
    assert "iterated members" in str(found.cause) and ".add()" in str(found.cause)


def test_detector_error_type_and_no_tracer_left_behind() -> None:
    before = sys.gettrace()
    found = detect(lost_update)
    assert isinstance(found.cause, RaceDetected) and isinstance(found.cause, AssertionError)
    assert sys.gettrace() is before


def test_detect_must_be_a_bool() -> None:
    with pytest.raises(racecheck.UsageError, match="detect must be True or False"):
        racecheck.check(lost_update, detect="yes")


# -- the fixed classic bugs: nothing to report ---------------------------------------
# tests/detect/test_detector_audit.py::test_fixed_version_has_no_finding runs every
# fixed classic target (asyncio, threads and trio) with the detector for 150 schedules.


# -- the command line and the plugin -------------------------------------------------


def test_cli_run_detect_meets_every_expectation(tmp_path: Path) -> None:
    from racecheck.cli import main

    scenarios = Path(__file__).parents[2] / "scenarios"
    code = main(
        [
            "run",
            str(scenarios / "marsys_40_runtime.py"),
            "--detect",
            "--schedules",
            "50",
            "--report-dir",
            str(tmp_path),
        ]
    )
    assert code == 0
    import json

    records = json.loads((tmp_path / "racecheck.json").read_text())["records"]
    buggy = next(r for r in records if r["variant"] == "buggy")
    assert buggy["kind"] == "atomicity-violation"
    assert buggy["race"]["pattern"] == "overwritten before read"
    assert [a["line"] > 0 for a in buggy["race"]["accesses"]] == [True, True, True]
    assert buggy["replay_command"].endswith("--detect")
    correct = next(r for r in records if r["variant"] == "correct")
    assert correct["verdict"] == "safe" and correct["race"] is None


def test_plugin_detect_flag(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import asyncio
        import pytest

        class Box:
            value = None

        @pytest.mark.racecheck(schedules=20)
        async def test_cross_talk():
            box = Box()

            async def handle(name):
                box.value = name
                await asyncio.sleep(0)
                return box.value

            await asyncio.gather(handle("a"), handle("b"))
        """
    )
    plain = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio")
    plain.assert_outcomes(passed=1)
    detected = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio", "--racecheck-detect")
    detected.assert_outcomes(failed=1)
    detected.stdout.fnmatch_lines(
        ["*overwritten before read on box.value*", "*--racecheck-detect*"]
    )
    import re

    token = re.search(r"--racecheck-replay=(rc1:\S+)", detected.stdout.str())
    assert token is not None
    replayed = pytester.runpytest(
        "-p",
        "no:asyncio",
        "-p",
        "no:trio",
        f"--racecheck-replay={token.group(1)}",
        "--racecheck-detect",
    )
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*overwritten before read on box.value*"])


def test_detection_keeps_interleaving_coverage() -> None:
    plain = racecheck.check(lost_update_locked, schedules=30, coverage=True)
    detected = racecheck.check(lost_update_locked, schedules=30, coverage=True, detect=True)
    assert plain.distinct_orderings > 0
    assert detected.distinct_orderings == plain.distinct_orderings


def test_trio_lost_update() -> None:
    trio = pytest.importorskip("trio")

    async def lost() -> None:
        account = Account.__new__(Account)
        account.balance = 0

        async def deposit(amount: int) -> None:
            current = account.balance
            await trio.sleep(0)
            account.balance = current + amount

        async with trio.open_nursery() as nursery:
            nursery.start_soon(deposit, 1)
            nursery.start_soon(deposit, 2)

    found = detect(lost, backend="trio")
    assert found.kind == "atomicity-violation"
    assert "lost update on account.balance" in str(found.cause)


class Noisy:
    """Attribute access with side effects: the detector must never trigger them."""

    calls = 0

    def __init__(self) -> None:
        self.inner = Counter()

    @property
    def counted(self) -> Counter:
        Noisy.calls += 1
        return self.inner

    def __getattr__(self, name: str) -> Any:
        Noisy.calls += 100
        raise AttributeError(name)


async def noisy_accesses() -> None:
    noisy = Noisy()

    async def touch() -> None:
        noisy.counted.n += 1
        await asyncio.sleep(0)
        getattr(noisy, "missing", None)

    await asyncio.gather(touch(), touch())


def test_the_detector_runs_no_user_code() -> None:
    Noisy.calls = 0
    racecheck.check(noisy_accesses, schedules=5, strategy="random")
    without = Noisy.calls
    Noisy.calls = 0
    racecheck.check(noisy_accesses, schedules=5, strategy="random", detect=True)
    assert Noisy.calls == without > 0
