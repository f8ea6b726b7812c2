"""Sharding in pytest: ``--racecheck-shards`` over real xdist workers, ``--racecheck-shard`` slices.

Every run here is a real pytest run in a subprocess (pytester), with real
pytest-xdist workers where ``-n`` or ``--tx`` is given.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("xdist")

TESTS = """
import asyncio
import threading
import pytest


@pytest.mark.racecheck(strategy="random", schedules=3000)
async def test_rare():
    log = []

    async def worker(name, n):
        for _ in range(n):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a", 4), worker("b", 4), worker("c", 4))
    assert "cccc" not in "".join(log)[:6]


@pytest.mark.racecheck(schedules=300)
@pytest.mark.parametrize("n", [3, 4])
async def test_auto(n):
    log = []

    async def worker(name):
        for _ in range(n):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a"), worker("b"), worker("c"))
    assert "ccc" not in "".join(log)[:4]


@pytest.mark.racecheck(schedules=200, strategy="pct")
def test_threads_safe():
    lock = threading.Lock()
    box = []

    def add():
        with lock:
            box.append(len(box))

    threads = [threading.Thread(target=add) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(box) == [0, 1]


def test_plain():
    pass
"""

REPLAY = re.compile(
    r"replay: (?:PYTHONHASHSEED=\S+ )?pytest '([^']+)' --racecheck-replay=(rc1:\S+)"
)


def failures(result: pytest.RunResult) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in result.stdout.lines:
        m = REPLAY.search(line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("RACECHECK_DB", "none")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    pytester.makepyfile(test_shards=TESTS)
    return pytester


@pytest.mark.parametrize(
    "args",
    [
        ("-n", "2", "--racecheck-shards=auto"),
        # the same rule through other ways of handing out items (CI: the first only)
        pytest.param(("-n", "2", "--racecheck-shards=4"), marks=pytest.mark.slow),
        pytest.param(
            ("--tx", "2*popen", "--dist", "load", "--racecheck-shards=auto"),
            marks=pytest.mark.slow,
        ),
        # no xdist: the shard items run one after another
        pytest.param(("--racecheck-shards=3",), marks=pytest.mark.slow),
    ],
)
def test_shard_items_read_as_one_test_with_the_first_failure(
    project: pytest.Pytester, args: tuple[str, ...]
) -> None:
    serial = project.runpytest_subprocess("-p", "no:cacheprovider")
    serial.assert_outcomes(passed=2, failed=3)
    sharded = project.runpytest_subprocess("-p", "no:cacheprovider", *args)
    # one verdict per test, under the test's own node id
    sharded.assert_outcomes(passed=2, failed=3)
    assert failures(sharded) == failures(serial)
    assert len(failures(serial)) == 3
    out = sharded.stdout.str()
    for nodeid in failures(serial):
        assert f"FAILED {nodeid} " in out
    assert "racecheck-shard-" not in "\n".join(
        line for line in sharded.stdout.lines if line.startswith(("FAILED", "PASSED", "ERROR"))
    )
    assert "Traceback" not in out
    # the totals: schedules explored by all shards, and where the first failure was
    m = re.search(
        r"test_rare: (\d+) shards ran (\d+) schedules in total; first failure at schedule (\d+)",
        out,
    )
    assert m, out
    serial_at = re.search(r"race found after (\d+) schedules \(random", serial.stdout.str())
    assert serial_at and m.group(3) == serial_at.group(1)
    assert int(m.group(2)) >= 1


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_a_shard_token_replays_serially(project: pytest.Pytester) -> None:
    sharded = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--racecheck-shards=auto", "--racecheck-report-dir=out"
    )
    token = failures(sharded)["test_shards.py::test_rare"]
    # the report holds one record per test, as a serial run's does
    data = json.loads((project.path / "out" / "racecheck.json").read_text())
    by_test = {r["scenario"]: r for r in data["records"]}
    assert sorted(by_test) == [
        "test_shards.py::test_auto[3]",
        "test_shards.py::test_auto[4]",
        "test_shards.py::test_rare",
        "test_shards.py::test_threads_safe",
    ]
    assert by_test["test_shards.py::test_rare"]["schedule"] == token
    assert all("shard" not in r for r in data["records"])
    assert by_test["test_shards.py::test_threads_safe"]["schedules_run"] == 200
    # coverage merged over schedules 1..verdict: what the serial run counts
    serial = project.runpytest_subprocess("-p", "no:cacheprovider", "--racecheck-report-dir=one")
    serial.assert_outcomes(passed=2, failed=3)
    one = json.loads((project.path / "one" / "racecheck.json").read_text())["records"]
    for record in one:
        merged = by_test[record["scenario"]]
        assert merged["coverage"] == record["coverage"], record["scenario"]
        assert merged["schedules_run"] == record["schedules_run"]
    assert by_test["test_shards.py::test_threads_safe"]["coverage"]["distinct_schedules"] > 1
    # the failing test's coverage is in the summary line (its record, as serially, has none)
    m = re.search(r"test_rare: .* coverage: (\d+) distinct schedules", sharded.stdout.str())
    assert m and int(m.group(1)) > 1
    again = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_shards.py::test_rare", f"--racecheck-replay={token}"
    )
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*racecheck: replayed schedule fails again*"])


def test_a_passing_sharded_test_reports_its_totals(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--racecheck-shards=2", "-k", "threads_safe", "-rA"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*test_threads_safe: 2 shards ran 200 schedules in total; no failure in schedules 1..200*"]
    )


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_ci_slices_then_merge_give_the_first_failure_of_one_run(project: pytest.Pytester) -> None:
    whole = project.runpytest_subprocess("-p", "no:cacheprovider", "--racecheck-report-dir=whole")
    whole.assert_outcomes(passed=2, failed=3)
    for i in range(1, 5):
        part = project.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--racecheck-shard={i}/4", f"--racecheck-report-dir=s{i}"
        )
        assert part.ret in (0, 1)
    merged = subprocess.run(
        [
            sys.executable,
            "-m",
            "racecheck",
            "report",
            "merge",
            "s1",
            "s2",
            "s3",
            "s4",
            "-o",
            "merged",
        ],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert merged.returncode == 1, merged.stdout + merged.stderr  # the races are unmet "safe"

    def by_test(directory: str) -> dict[str, dict[str, object]]:
        data = json.loads((project.path / directory / "racecheck.json").read_text())
        return {r["scenario"]: r for r in data["records"]}

    one, together = by_test("whole"), by_test("merged")
    assert set(one) == set(together)
    for nodeid, record in one.items():
        assert together[nodeid]["verdict"] == record["verdict"], nodeid
        assert together[nodeid]["schedule"] == record["schedule"], nodeid
        assert together[nodeid]["schedules_run"] == record["schedules_run"], nodeid


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--racecheck-shard=5/4",), "between 1 and N"),
        (("--racecheck-shard=x",), "must be I/N"),
        (("--racecheck-shards=0",), "auto or a whole number"),
        (("--racecheck-shards=many",), "auto or a whole number"),
        (("--racecheck-shards=2", "--racecheck-shard=1/2"), "cannot be combined"),
    ],
)
def test_bad_shard_options_are_one_line_usage_errors(
    project: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert message in err
    assert "Traceback" not in err


# ------------------------------------------------- what a worker pays to start

#: modules a pytest process must not load before a marked test runs: each xdist
#: worker pays their import again, before its shard can start
HEAVY = (
    "hypothesis",
    "trio",
    "racecheck.detect",
    "racecheck.lint",
    "racecheck.explore",
    "racecheck.engine",
    "racecheck.report",
    "racecheck.strategies",
    "racecheck.backends",
)


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    code = (
        "import sys, racecheck.pytest_plugin, racecheck.pytest_shards;"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_shard_worker_starts_without_the_engine(pytester: pytest.Pytester) -> None:
    # With the third-party plugins that load them on their own turned off, what
    # racecheck's plugin loads through configuration and collection is left.
    pytester.makeconftest(
        f"""
        import sys

        def pytest_collection_finish(session):
            loaded = sorted(m for m in {HEAVY!r} if m in sys.modules)
            print("LOADED", loaded)
        """
    )
    pytester.makepyfile(test_one=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:trio", "-p", "no:hypothesispytest",
        "-p", "no:asyncio", "-s", "--co", "-q", "--racecheck-shards=2",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["LOADED []"])
    # the marked test did become two shard items
    assert result.stdout.lines.count("test_one.py::test_rare") == 2, result.stdout.str()


SPLIT_DPOR = """
import asyncio
import pytest


@pytest.mark.racecheck(strategy="dpor", schedules=3000)
async def test_dpor_rare():
    log = []

    async def worker(name, n):
        for _ in range(n):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a", 4), worker("b", 4), worker("c", 4))
    assert "cccc" not in "".join(log)[:6]
"""


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_split_dpor_over_xdist_workers_gives_the_one_slice_token(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_split=SPLIT_DPOR)
    base = ("-p", "no:cacheprovider", "-p", "no:randomly")
    tokens = []
    for args in (("--racecheck-shard=1/1",), ("-n", "2", "--racecheck-shards=auto")):
        result = pytester.runpytest_subprocess(*base, *args)
        assert result.ret == 1, result.stdout.str()
        text = result.stdout.str()
        found = re.findall(r"--racecheck-replay=(\S+)", text)
        assert found, text
        tokens.append(found[0])
    assert tokens[0] == tokens[1]
    replayed = pytester.runpytest_subprocess(*base, f"--racecheck-replay={tokens[0]}")
    assert replayed.ret == 1
    replayed.stdout.fnmatch_lines(["*AssertionError*"])
