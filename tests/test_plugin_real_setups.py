"""Real-project idioms through real pytest runs: buggy code is found, correct code is clean.

Locks made before the run (a module-level lock, ``from threading import Lock``,
a lock from a fixture), ``logging`` inside threads, and a package installed
non-editable into a ``site-packages`` directory. Each used to stall (a
StuckError after the watchdog) or pass silently.
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

COUNTER_PACKAGE = """
import threading
from threading import Lock

_registry_lock = threading.Lock()


class Counter:
    def __init__(self):
        self._lock = Lock()  # from-import: bound before racecheck patched threading
        self.value = 0

    def bump_unlocked(self):
        seen = self.value
        self.value = seen + 1

    def bump(self):
        with self._lock:
            seen = self.value
            self.value = seen + 1

    def bump_registry(self):
        with _registry_lock:  # module-level: made at import
            seen = self.value
            self.value = seen + 1
"""

TESTS = """
import threading
import pytest
import {package}


def two_threads(work):
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.racecheck(strategy="random", schedules=200, watchdog=5)
def test_buggy():
    counter = {package}.Counter()
    two_threads(counter.bump_unlocked)
    assert counter.value == 2


@pytest.mark.racecheck(strategy="random", schedules=60, watchdog=5)
def test_instance_lock():
    counter = {package}.Counter()
    two_threads(counter.bump)
    assert counter.value == 2


@pytest.mark.racecheck(strategy="random", schedules=60, watchdog=5)
def test_module_lock():
    counter = {package}.Counter()
    two_threads(counter.bump_registry)
    assert counter.value == 2
"""


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    outcomes = {}
    for line in result.stdout.lines:
        for verdict in ("PASSED", "FAILED"):
            if line.startswith("test_") and f" {verdict}" in line:
                outcomes[line.split("::", 1)[1].split(" ", 1)[0]] = verdict
    return outcomes


def test_locks_in_a_user_package(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(counters=COUNTER_PACKAGE)
    pytester.makepyfile(test_counters=TESTS.format(package="counters"))
    result = pytester.runpytest("-v", "-p", "no:randomly")
    assert _outcomes(result) == {
        "test_buggy": "FAILED",
        "test_instance_lock": "PASSED",
        "test_module_lock": "PASSED",
    }, result.stdout.str()
    assert "StuckError" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*racecheck: race found*"])


def test_a_package_installed_non_editable(pytester: pytest.Pytester) -> None:
    """Installed code is the code under test when the test imports it: it is traced."""
    site = pytester.mkdir("venv").joinpath("lib", "python3", "site-packages")
    package = site / "installedcounters"
    package.mkdir(parents=True)
    package.joinpath("__init__.py").write_text(textwrap.dedent(COUNTER_PACKAGE))
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(site)!r})\n")
    pytester.makepyfile(test_installed=TESTS.format(package="installedcounters"))
    result = pytester.runpytest("-v")
    assert _outcomes(result) == {
        "test_buggy": "FAILED",
        "test_instance_lock": "PASSED",
        "test_module_lock": "PASSED",
    }, result.stdout.str()
    assert "StuckError" not in result.stdout.str()


def test_lock_from_a_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fixture_lock="""
        import threading
        import pytest

        @pytest.fixture
        def lock():
            return threading.Lock()  # made at setup, before the run

        @pytest.mark.racecheck(strategy="random", schedules=60, watchdog=5)
        def test_guarded(lock):
            box = {"value": 0}

            def bump():
                with lock:
                    seen = box["value"]
                    box["value"] = seen + 1

            threads = [threading.Thread(target=bump) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert box["value"] == 2

        @pytest.mark.racecheck(strategy="random", schedules=200, watchdog=5)
        def test_read_outside_the_lock(lock):
            box = {"value": 0}

            def bump():
                seen = box["value"]
                with lock:
                    box["value"] = seen + 1

            threads = [threading.Thread(target=bump) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert box["value"] == 2
        """
    )
    result = pytester.runpytest("-v")
    assert _outcomes(result) == {
        "test_guarded": "PASSED",
        "test_read_outside_the_lock": "FAILED",
    }, result.stdout.str()
    assert "StuckError" not in result.stdout.str()


def test_logging_inside_threads(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_logging_threads="""
        import logging
        import threading
        import pytest

        log = logging.getLogger("worker")

        class Tally(logging.Handler):
            # user code inside the handler's lock: scheduling points while it is held
            def __init__(self):
                super().__init__()
                self.count = 0

            def emit(self, record):
                seen = self.count
                self.count = seen + 1

        tally = Tally()
        log.addHandler(tally)
        log.setLevel(logging.INFO)

        @pytest.mark.racecheck(strategy="random", schedules=60, watchdog=5)
        def test_log_from_threads(caplog):
            tally.count = 0

            def work():
                log.info("working")

            threads = [threading.Thread(target=work) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert tally.count == 2
        """
    )
    result = pytester.runpytest("-v")
    assert _outcomes(result) == {"test_log_from_threads": "PASSED"}, result.stdout.str()


def test_a_blind_run_warns_in_the_summary(pytester: pytest.Pytester) -> None:
    """Threads that run only untraced code: the test passes, with a warning, not as proven."""
    pytester.makepyfile(
        test_blind="""
        import json
        import threading
        import pytest

        @pytest.mark.racecheck(strategy="exhaustive", schedules=100)
        def test_json_in_threads():
            threads = [threading.Thread(target=json.dumps, args=([1, 2],)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*RacecheckWarning*every scheduling point was in one thread*"])


def test_trace_packages_from_the_ini_file(pytester: pytest.Pytester) -> None:
    site = pytester.mkdir("venv").joinpath("lib", "python3", "site-packages")
    (site / "deepcounters").mkdir(parents=True)
    (site / "deepcounters" / "__init__.py").write_text(textwrap.dedent(COUNTER_PACKAGE))
    # reached only through a helper package the test imports, so not traced by default
    (site / "middleman").mkdir()
    (site / "middleman" / "__init__.py").write_text(
        "import deepcounters\n\ndef make():\n    return deepcounters.Counter()\n"
    )
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(site)!r})\n")
    pytester.makeini("[pytest]\nracecheck_trace_packages =\n    deepcounters\n")
    pytester.makepyfile(
        test_deep="""
        import threading
        import pytest
        from middleman import make

        @pytest.mark.racecheck(strategy="random", schedules=200)
        def test_buggy():
            counter = make()
            threads = [threading.Thread(target=counter.bump_unlocked) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert counter.value == 2
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*racecheck: race found*"])


def test_a_fixed_test_after_a_failing_one_shares_a_weak_pool(pytester: pytest.Pytester) -> None:
    """Two tests over one module-level weak pool: the buggy one fails, the fixed one passes.

    The buggy test's failure sat in reference cycles until the collector ran,
    and the next exploration froze the heap with that garbage in it: its
    connection stayed in the pool, and the fixed test failed at its first
    schedule ("5 uses"), a race reported on correct code.
    """
    pytester.makepyfile(
        test_pool="""
        import gc
        import threading
        import weakref
        import pytest

        pool = weakref.WeakValueDictionary()


        class Connection:
            def __init__(self):
                self.uses = 0


        def connect():
            found = pool.get("db")
            if found is None:
                found = Connection()
                pool["db"] = found
            return found


        def two_users(lock):
            connection = connect()

            def use():
                if lock is None:
                    connection.uses += 1
                else:
                    with lock:
                        connection.uses += 1

            threads = [threading.Thread(target=use) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert connection.uses == 2, f"{connection.uses} uses"


        def setup_module():
            gc.disable()  # the collector must not happen to run between the two tests


        def teardown_module():
            gc.enable()


        @pytest.mark.racecheck(strategy="random", schedules=300)
        def test_a_buggy():
            two_users(None)


        @pytest.mark.racecheck(strategy="random", schedules=50)
        def test_b_fixed():
            two_users(threading.Lock())
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*test_a_buggy*race found*"])
