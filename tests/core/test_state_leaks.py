"""State kept between schedules is a health problem, never a race.

Schedules must be independent. A module global that is never reset, or a
mutable fixture value that every schedule of a test shares, can make a later
schedule fail only because of what earlier ones left behind; replayed from a
fresh start, such a "race" does not fail. racecheck says "state leaks between
schedules" (StateLeakError) and names what changed, and keeps reporting real
races of targets that touch long-lived state harmlessly.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, ClassVar

import pytest

import racecheck
from racecheck.errors import StateLeakError

SEEN: list[int] = []
TOTAL = 0
CALLS = 0


async def appends_to_a_module_list() -> None:
    async def add(x: int) -> None:
        SEEN.append(x)
        await asyncio.sleep(0)

    await asyncio.gather(add(1), add(2))
    assert len(SEEN) <= 2, f"{len(SEEN)} items seen"


def counts_in_a_module_global() -> None:
    lock = threading.Lock()

    def add() -> None:
        global TOTAL
        with lock:
            TOTAL += 1

    workers = [threading.Thread(target=add) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert TOTAL == 2, f"total {TOTAL}"


def test_a_module_list_never_reset_is_a_leak_not_a_race() -> None:
    SEEN.clear()
    with pytest.raises(StateLeakError) as info:
        racecheck.check(appends_to_a_module_list, schedules=50)
    assert not isinstance(info.value, racecheck.RaceFound)
    message = str(info.value)
    assert message.startswith("state leaks between schedules")
    assert "global test_state_leaks.SEEN" in message
    assert "global test_state_leaks.SEEN" in info.value.suspects


def test_the_hypothesis_strategy_runs_the_same_health_check() -> None:
    pytest.importorskip("hypothesis")
    SEEN.clear()
    with pytest.raises(StateLeakError) as info:
        racecheck.check(appends_to_a_module_list, strategy="hypothesis", schedules=50)
    assert "global test_state_leaks.SEEN" in str(info.value)


def test_a_rebound_module_global_is_named() -> None:
    global TOTAL
    TOTAL = 0
    with pytest.raises(StateLeakError) as info:
        racecheck.check(counts_in_a_module_global, schedules=30)
    assert "global test_state_leaks.TOTAL" in str(info.value)


class Registry:
    instances: ClassVar[dict[str, int]] = {}


def registers_in_a_class_attribute() -> None:
    lock = threading.Lock()

    def register(name: str) -> None:
        with lock:
            Registry.instances[name] = Registry.instances.get(name, 0) + 1

    workers = [threading.Thread(target=register, args=(n,)) for n in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert Registry.instances == {"a": 1, "b": 1}, f"{Registry.instances}"


def test_a_class_level_registry_is_named() -> None:
    Registry.instances.clear()
    with pytest.raises(StateLeakError) as info:
        racecheck.check(registers_in_a_class_attribute, schedules=30)
    assert "class attribute test_state_leaks.Registry.instances" in str(info.value)


def test_a_shared_closure_value_is_named() -> None:
    shared: dict[str, int] = {"n": 0}

    async def target() -> None:
        async def bump() -> None:
            shared["n"] += 1
            await asyncio.sleep(0)

        await asyncio.gather(bump(), bump())
        assert shared["n"] == 2

    with pytest.raises(StateLeakError) as info:
        racecheck.check(target, schedules=30)
    assert "closure variable 'shared'" in str(info.value)


async def real_race_touching_a_global_counter() -> None:
    # counts its calls (harmless history) and has a genuine lost update
    global CALLS
    CALLS += 1
    box = {"n": 0}

    async def inc() -> None:
        current = box["n"]
        await asyncio.sleep(0)
        box["n"] = current + 1

    await asyncio.gather(inc(), inc())
    assert box["n"] == 2, f"n is {box['n']}"


RESET: list[int] = []


async def real_race_resetting_a_global() -> None:
    RESET.clear()

    async def add(x: int) -> None:
        await asyncio.sleep(0)
        RESET.append(x)

    await asyncio.gather(add(1), add(2))
    assert RESET == [1, 2], f"order {RESET}"


@pytest.mark.parametrize(
    "target", [real_race_touching_a_global_counter, real_race_resetting_a_global]
)
@pytest.mark.parametrize("strategy", ["pct", "random", "exhaustive"])
def test_real_races_with_long_lived_state_are_still_races(target: Any, strategy: str) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, strategy=strategy, schedules=200)
    assert info.value.trace is not None
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(target, info.value.schedule)


def test_leak_check_can_be_turned_off() -> None:
    SEEN.clear()
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(appends_to_a_module_list, schedules=50, leak_check=False)
    with pytest.raises(racecheck.UsageError, match="leak_check must be True or False"):
        racecheck.check(appends_to_a_module_list, schedules=5, leak_check="no")


# ------------------------------------------------------------------ pytest

FIXTURE_LEAK = """
import asyncio
import pytest

@pytest.fixture
def items():
    return []

@pytest.mark.racecheck(schedules=50)
async def test_items(items):
    async def add(x):
        items.append(x)
        await asyncio.sleep(0)

    await asyncio.gather(add(1), add(2))
    assert len(items) == 2
"""

GLOBAL_LEAK = """
import threading
import pytest

REGISTRY = {}

@pytest.mark.racecheck(schedules=30)
def test_registry():
    lock = threading.Lock()

    def register(name):
        with lock:
            REGISTRY[name] = REGISTRY.get(name, 0) + 1

    workers = [threading.Thread(target=register, args=(n,)) for n in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert REGISTRY == {"a": 1, "b": 1}
"""


def test_pytest_mutable_function_scoped_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fixture=FIXTURE_LEAK)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "race found" not in out
    result.stdout.fnmatch_lines(
        ["*racecheck: StateLeakError: state leaks between schedules*fixture 'items'*"]
    )


def test_pytest_module_global_never_reset(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_registry=GLOBAL_LEAK)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "race found" not in out
    result.stdout.fnmatch_lines(
        ["*racecheck: StateLeakError: state leaks between schedules*global test_registry.REGISTRY*"]
    )
