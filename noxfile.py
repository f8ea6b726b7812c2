"""nox sessions for racecheck.

    nox -s tests          # pytest -n 2 -m "not slow" on Python 3.11, 3.12 and 3.13
    nox -s slow           # the long explorations (marked slow)
    nox -s lint           # ruff check + ruff format --check
    nox -s typecheck      # mypy
    nox -s coverage       # coverage.py over the test suite (threads included)
    nox -s scenarios      # racecheck run scenarios/
    nox -s bench          # racecheck bench
    nox -s realcode       # real PyPI libraries at a buggy and a fixed release (tests/realcode)
    nox -s realcode_newer # two of them on 3.12 and 3.13, under both coverage cores

Interpreters installed with pyenv are found even when they are not on PATH.
"""

from __future__ import annotations

import glob
import json
import os

import nox

# Let nox find python3.12 / python3.13 from pyenv without shims or a global setting.
_PYENV_BINS = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin")), reverse=True)
if _PYENV_BINS:
    os.environ["PATH"] = os.pathsep.join([*_PYENV_BINS, os.environ.get("PATH", "")])

PYTHONS = ["3.11", "3.12", "3.13"]
LINT_PATHS = ["src", "tests", "scenarios", "noxfile.py"]

nox.options.sessions = ["lint", "typecheck", "tests", "scenarios"]
nox.options.reuse_existing_virtualenvs = True


def _pytest(session: nox.Session, *args: str) -> None:
    # pytest exits 5 when it ran no test: nox treats any non-zero exit as a failure.
    session.run("pytest", *args, *session.posargs)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The test suite, bounded explorations only."""
    session.install("-e", ".[test]")
    _pytest(session, "-n", "2", "-m", "not slow")


@nox.session(python="3.11")
def slow(session: nox.Session) -> None:
    """The long, exhaustive explorations."""
    session.install("-e", ".[test]")
    _pytest(session, "-n", "2", "-m", "slow")


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", *LINT_PATHS)
    session.run("ruff", "format", "--check", *LINT_PATHS)


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[test]", "mypy")
    session.run("mypy")


@nox.session(python="3.11")
def coverage(session: nox.Session) -> None:
    """Coverage of the test suite with coverage.py (not pytest-cov).

    ``concurrency = thread`` follows the threads racecheck starts; racecheck
    chains its own tracer to coverage's instead of replacing it. The run is
    serial (no xdist) so one data file holds everything.
    """
    session.install("-e", ".[test]")
    rc = os.path.join(session.create_tmp(), "coveragerc")
    with open(rc, "w", encoding="utf-8") as fh:
        fh.write(
            "[run]\n"
            "source = racecheck\n"
            "branch = true\n"
            "concurrency = thread\n"
            "parallel = false\n"
            "[report]\n"
            "show_missing = false\n"
            "skip_covered = true\n"
            "precision = 1\n"
        )
    session.run("coverage", "erase", f"--rcfile={rc}")
    session.run(
        "coverage",
        "run",
        f"--rcfile={rc}",
        "-m",
        "pytest",
        "-m",
        "not slow",
        "-p",
        "no:xdist",
        *session.posargs,
    )
    session.run("coverage", "report", f"--rcfile={rc}")


@nox.session(python="3.11")
def scenarios(session: nox.Session) -> None:
    """Every reported race: each variant must meet its expectation."""
    session.install("-e", ".")
    session.run("racecheck", "run", "scenarios/", *session.posargs)


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("racecheck", "bench", *session.posargs)


# Real libraries with documented concurrency bugs, each at a buggy and a fixed release.
with open(os.path.join(os.path.dirname(__file__), "tests", "realcode", "pins.json")) as _fh:
    REALCODE_PINS: dict[str, dict[str, str]] = json.load(_fh)
# What a library's user test needs besides the library's own dependencies: psycopg-pool
# runs on psycopg (its bundled libpq: no server, the pool opens no connection).
REALCODE_EXTRAS: dict[str, list[str]] = {
    "psycopg-pool": ["psycopg[binary]"],
    # opentelemetry-api 1.5/1.6 import pkg_resources, which newer setuptools no longer ships
    "opentelemetry-api": ["setuptools<81"],
    # its circuit breaker's persistence package imports boto3 (the user test stores in memory)
    "aws-lambda-powertools": ["boto3"],
}
# Every (library, pin), plus buggy releases under pytest-cov (threads and asyncio): coverage's
# tracer must not hide the bug.
_REALCODE_PARAMS = [
    nox.param(library, pin, False, id=f"{library}-{pin}")
    for library in REALCODE_PINS
    for pin in ("buggy", "fixed")
] + [
    nox.param(library, "buggy", True, id=f"{library}-buggy-cov")
    for library in (
        "filelock",
        "anyio",
        "opentelemetry-api",
        "multimethod",
        "aiojobs",
        "injector",
        "icontract",
        "aws-lambda-powertools",
        "httpcore",
        "loguru",
        "trio-websocket",
    )
]


@nox.session(python="3.11")
@nox.parametrize(["library", "pin", "cov"], _REALCODE_PARAMS)
def realcode(session: nox.Session, library: str, pin: str, cov: bool) -> None:
    """One library, installed from the index at one pin (non-editable), under its user test.

    racecheck itself is installed editable; the library never is, so it lands in
    site-packages the way users install it. Run the buggy pin before the fixed one:
    the buggy run leaves its failing token for the fixed run to replay.
    """
    _realcode(session, library, pin, cov=cov, racecheck=("-e", ".[test]"))


# The same user tests on the newer interpreters, where coverage.py may trace through
# sys.monitoring (COVERAGE_CORE=sysmon) as well as through its C tracer, and where the
# threads backend and the detector use sys.monitoring themselves: neither may hide a bug
# from the other. racecheck is installed as a user installs it (not editable).
_REALCODE_NEWER_PARAMS = [
    nox.param(library, "buggy", core, id=f"{library}-buggy-cov-{core}")
    for library in ("filelock", "anyio")
    for core in ("ctrace", "sysmon")
] + [nox.param(library, "fixed", "", id=f"{library}-fixed") for library in ("filelock", "anyio")]


@nox.session(python=["3.12", "3.13"])
@nox.parametrize(["library", "pin", "core"], _REALCODE_NEWER_PARAMS)
def realcode_newer(session: nox.Session, library: str, pin: str, core: str) -> None:
    """Buggy releases under pytest-cov (both coverage cores), fixed ones plain, on 3.12 and 3.13."""
    _realcode(
        session,
        library,
        pin,
        cov=bool(core),
        racecheck=(".[test]",),
        env={"COVERAGE_CORE": core} if core else {},
    )


def _realcode(
    session: nox.Session,
    library: str,
    pin: str,
    *,
    cov: bool,
    racecheck: tuple[str, ...],
    env: dict[str, str] | None = None,
) -> None:
    version = REALCODE_PINS[library][pin]
    session.install(*racecheck)
    if cov:
        session.install("pytest-cov")
    session.install("--force-reinstall", "--no-deps", f"{library}=={version}")
    session.install(f"{library}=={version}")  # its own dependencies
    for extra in REALCODE_EXTRAS.get(library, []):
        session.install(extra)
    # A token names its Python version: each interpreter keeps its own for the fixed run.
    tokens = os.path.abspath(os.path.join(session.cache_dir, f"realcode-tokens-{session.python}"))
    os.makedirs(tokens, exist_ok=True)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "-rA",
        f"tests/realcode/test_real_{library.replace('-', '_')}.py",
        *session.posargs,
        env={
            "RACECHECK_REALCODE_PIN": pin,
            "RACECHECK_REALCODE_TOKENS": tokens,
            "RACECHECK_REALCODE_COV": "1" if cov else "",
            **(env or {}),
        },
    )
