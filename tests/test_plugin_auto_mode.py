"""``racecheck_mode = auto``: tests run under racecheck without a marker (real pytest runs).

Like pytest-asyncio's ``asyncio_mode = auto``: every ``async def`` test, or
with ``racecheck_auto_paths`` every test under those paths, is explored as if
it carried ``@pytest.mark.racecheck``. A marker still sets its options.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("real_engine")

#: fails only when racecheck reorders the tasks; each run appends a byte to a file
RACY = """
import asyncio, pathlib, threading


async def worker(log, name):
    await asyncio.sleep(0)
    log.append(name)


async def test_order():
    with pathlib.Path("runs-order").open("a") as fh:
        fh.write(".")
    log = []
    await asyncio.gather(worker(log, "a"), worker(log, "b"))
    assert log == ["a", "b"]


async def test_calm():
    with pathlib.Path("runs-calm").open("a") as fh:
        fh.write(".")
    await asyncio.gather(worker([], "a"), worker([], "b"))


def test_sync():
    with pathlib.Path("runs-sync").open("a") as fh:
        fh.write(".")
    box = []
    threads = [threading.Thread(target=box.append, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
"""

INI = """
[pytest]
racecheck_db = none
asyncio_default_fixture_loop_scope = function
{extra}
"""


def _runs(pytester: pytest.Pytester, name: str) -> int:
    path = Path(pytester.path, f"runs-{name}")
    return len(path.read_text()) if path.exists() else 0


def test_auto_mode_explores_every_async_test(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(extra="racecheck_mode = auto\nracecheck_schedules = 30"))
    pytester.makepyfile(test_racy=RACY)
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_order*", "*racecheck: race found*"])
    assert _runs(pytester, "calm") > 1, "the calm async test ran once: not under racecheck"
    assert _runs(pytester, "sync") == 1, "a sync test outside the auto paths was explored"


def test_auto_mode_with_pytest_asyncio_in_auto_mode(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    extra = "asyncio_mode = auto\nracecheck_mode = auto\nracecheck_schedules = 30"
    pytester.makeini(INI.format(extra=extra))
    pytester.makepyfile(test_racy=RACY)
    result = pytester.runpytest("-p", "no:trio", "-W", "error::pytest.PytestDeprecationWarning")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*racecheck: race found*"])
    assert _runs(pytester, "calm") > 1


def test_without_auto_mode_nothing_unmarked_is_explored(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    pytester.makeini(INI.format(extra="asyncio_mode = auto"))
    pytester.makepyfile(test_racy=RACY)
    result = pytester.runpytest("-p", "no:trio")
    result.assert_outcomes(passed=3)
    assert _runs(pytester, "calm") == 1 and _runs(pytester, "order") == 1


def test_auto_paths_explore_every_test_under_them(pytester: pytest.Pytester) -> None:
    extra = "racecheck_mode = auto\nracecheck_auto_paths = races\nracecheck_schedules = 30"
    pytester.makeini(INI.format(extra=extra))
    pytester.mkdir("races")
    pytester.mkdir("unit")
    Path(pytester.path, "races", "test_in.py").write_text(RACY)
    Path(pytester.path, "unit", "test_out.py").write_text(
        "import pathlib\n\n\ndef test_unit():\n"
        "    with pathlib.Path('runs-unit').open('a') as fh:\n        fh.write('.')\n"
    )
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio")
    result.assert_outcomes(passed=3, failed=1)
    assert _runs(pytester, "sync") > 1, "a sync test under the auto paths was not explored"
    assert _runs(pytester, "unit") == 1


def test_a_marker_still_sets_the_options_in_auto_mode(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(extra="racecheck_mode = auto"))
    pytester.makepyfile(
        test_marked="""
import asyncio, pathlib
import pytest


@pytest.mark.racecheck(schedules=7, strategy="random")
async def test_marked():
    with pathlib.Path("runs-marked").open("a") as fh:
        fh.write(".")
    await asyncio.sleep(0)
"""
    )
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio")
    result.assert_outcomes(passed=1)
    assert _runs(pytester, "marked") == 7


def test_an_unknown_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(extra="racecheck_mode = sometimes"))
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:asyncio")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*racecheck_mode*sometimes*auto*strict*"])
