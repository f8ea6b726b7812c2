"""The racecheck pytest plugin (entry point ``pytest11: racecheck``).

Mark a test and racecheck explores its interleavings::

    @pytest.mark.racecheck(strategy="pct", schedules=500, seed=0)
    async def test_deposit():
        account = Account()                  # build shared state *inside* the test
        await asyncio.gather(account.deposit(10), account.deposit(5))
        assert account.balance == 15

The test body is the target: it runs once per schedule. Fixtures are set up
**once per test**, not once per schedule, so state that the schedules must not
share has to be created inside the test (or by a factory fixture called inside
it). ``async def`` tests run on racecheck's controlled asyncio loop (or trio
with ``backend="trio"``), not on pytest-asyncio's or pytest-trio's runner, and
async fixtures of those plugins live on another loop.

Settings come from the command line, then the environment, then the
profile, the ini options and ``[tool.racecheck]``, then the marker, then the
defaults (auto, 1000 schedules, seed 0); :mod:`racecheck.config` resolves them.
The command-line options:

    --racecheck-strategy NAME  --racecheck-schedules N  --racecheck-seed N
    --racecheck-replay TOKEN   run exactly that schedule (the failure report
                               prints the whole command)
    --racecheck-report-dir DIR write racecheck's JSON/JUnit/HTML reports
    --racecheck-profile NAME   ci (budgets x10), dev (/10) or a [tool.racecheck] profile

Everything the plugin adds to pytest lives in this module. It imports only
pytest and the standard library; racecheck's engine loads when a marked test runs.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shlex
import sys
import warnings
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

DEFAULTS: dict[str, Any] = {"strategy": "auto", "schedules": 1000, "seed": 0}
#: marker/check options that mean nothing to a single replayed schedule
_EXPLORATION_ONLY = ("strategy", "schedules", "seed", "progress")
_ORIGINAL_OBJ = pytest.StashKey[Any]()
#: marker keywords the plugin itself handles (not options of racecheck.check)
_MARKER_ONLY = ("replay",)
#: user_properties keys (they travel from xdist workers to the controller)
_PROP_REPLAYED = "racecheck_replayed"
_PROP_RECORD = "racecheck_record"

#: ini options (pytest.ini / [tool.pytest.ini_options]) besides racecheck_trace_packages
_INI_OPTIONS = {
    "strategy": "racecheck strategy for marked tests (below the command line and environment)",
    "schedules": "schedules per marked test (beats the marker; see racecheck's precedence)",
    "seed": "seed for marked tests",
    "detect": "true: run marked tests with the race detector",
    "report_dir": "write racecheck reports of the marked tests to this directory",
    "profile": "racecheck settings profile (ci, dev, or [tool.racecheck.profiles.NAME])",
    "db": "racecheck failure database directory, or none",
}
_LAYERS = pytest.StashKey[Any]()

MARKER_HELP = (
    "racecheck(strategy='auto', schedules=1000, seed=0, backend=None, **options): run the test"
    " under racecheck's deterministic scheduler and explore its interleavings. Fixtures are"
    " set up once per test, not per schedule: build shared state inside the test."
    " mode='stress' (runs=, parallel=, timeout=) instead runs the real test body many times,"
    " uncontrolled, and reports its failure rate (racecheck.stress)."
)


# ------------------------------------------------------------------ options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("racecheck", "racecheck: explore interleavings of marked tests")
    group.addoption(
        "--racecheck-strategy",
        metavar="NAME",
        default=None,
        help="strategy for @pytest.mark.racecheck tests: auto (a portfolio), pct, pct-random,"
        " pos, surw, random, exhaustive, hypothesis (overrides the marker; default auto)",
    )
    group.addoption(
        "--racecheck-schedules",
        metavar="N",
        type=int,
        default=None,
        help="schedules per marked test (overrides the marker; default 1000)",
    )
    group.addoption(
        "--racecheck-seed",
        metavar="N",
        type=int,
        default=None,
        help="seed for the strategy (overrides the marker; default 0)",
    )
    group.addoption(
        "--racecheck-replay",
        metavar="TOKEN",
        default=None,
        help="run exactly this schedule in the marked test it was recorded for",
    )
    group.addoption(
        "--racecheck-detect",
        action="store_true",
        default=False,
        help="run marked tests with the race detector: fail on atomicity violations and"
        " data races even where no assertion fails",
    )
    group.addoption(
        "--racecheck-trace-packages",
        metavar="NAMES",
        action="append",
        default=None,
        help="also trace these installed packages as code under test: module names,"
        " distribution names or directories, comma-separated (the package defining the"
        " test and the packages the test module imports are traced already)",
    )
    parser.addini(
        "racecheck_trace_packages",
        type="linelist",
        default=[],
        help="packages racecheck traces as code under test (see --racecheck-trace-packages)",
    )
    for name, text in _INI_OPTIONS.items():
        parser.addini(f"racecheck_{name}", type="string", default="", help=text)
    group.addoption(
        "--racecheck-profile",
        metavar="NAME",
        default=None,
        help="settings profile: ci (schedules x10), dev (schedules /10) or one of"
        " [tool.racecheck.profiles] (default: $RACECHECK_PROFILE, ini racecheck_profile)",
    )
    group.addoption(
        "--racecheck-db",
        metavar="DIR",
        default=None,
        help="where failing schedules are saved and replayed first (default .racecheck/"
        " in the rootdir; 'none' turns the failure database off)",
    )
    group.addoption(
        "--racecheck-report-dir",
        metavar="DIR",
        default=None,
        help="write racecheck reports (JSON, JUnit, HTML) of the marked tests to DIR",
    )
    from racecheck.pytest_shards import add_options

    add_options(group)
    _add_auto_mode_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    _check_mode(config)
    schedules = config.getoption("racecheck_schedules", None)
    if schedules is not None and schedules < 1:
        raise pytest.UsageError(f"--racecheck-schedules must be at least 1, not {schedules}")
    strategy = config.getoption("racecheck_strategy", None)
    if strategy is not None:
        from racecheck.strategies import STRATEGIES

        if strategy not in STRATEGIES:
            raise pytest.UsageError(
                f"--racecheck-strategy: unknown strategy {_safe(repr(strategy))};"
                f" choose one of {', '.join(STRATEGIES)}"
            )
    token = config.getoption("racecheck_replay", None)
    if token is not None:
        from racecheck.errors import UsageError
        from racecheck.schedule import Schedule

        try:
            # Decoded once here; the replays of the session reuse this decoding.
            Schedule.decode(token)
        except UsageError as exc:
            raise pytest.UsageError(f"--racecheck-replay: {_safe(_first_line(exc))}") from None
    config.stash[_LAYERS] = _layers(config)
    directory = report_dir(config)
    if directory is not None and not _is_xdist_worker(config):
        from racecheck.errors import UsageError
        from racecheck.report.writers import check_report_dir

        try:
            # Before the session explores anything, not after.
            check_report_dir(_report_path(config, directory) if directory else directory)
        except UsageError as exc:
            raise pytest.UsageError(f"--racecheck-report-dir: {_safe(_first_line(exc))}") from None
    config.pluginmanager.register(_SessionPlugin(config), "racecheck-session")
    from racecheck.pytest_shards import configure

    configure(config)


def _first_line(exc: BaseException) -> str:
    from racecheck.errors import one_line

    return one_line(exc, named=False)


def _layers(config: pytest.Config) -> Any:
    """Every configuration source of the session, validated once (racecheck.config)."""
    from racecheck.config import build_layers, load_project, parse
    from racecheck.errors import UsageError

    given: dict[str, Any] = {}
    for name in ("strategy", "schedules", "seed", "report_dir", "db"):
        value = config.getoption(f"racecheck_{name}", None)
        if value is not None:
            given[name] = value
    if config.getoption("racecheck_detect", False):
        given["detect"] = True
    try:
        cli_packages = config.getoption("racecheck_trace_packages", None)
        if cli_packages:  # repeatable, comma-separated
            given["trace_packages"] = parse(
                "trace_packages", cli_packages, "--racecheck-trace-packages"
            )
        ini: dict[str, Any] = {}
        for name in _INI_OPTIONS:
            value = config.getini(f"racecheck_{name}")
            if value not in (None, ""):
                ini[name] = parse(name, value, f"ini option racecheck_{name}")
        packages = [str(name) for name in config.getini("racecheck_trace_packages")]
        if packages:
            ini["trace_packages"] = packages
        return build_layers(
            command_line=given,
            project=load_project(config.rootpath),
            ini=ini,
            profile=config.getoption("racecheck_profile", None),
        )
    except UsageError as exc:
        raise pytest.UsageError(f"racecheck: {_safe(_first_line(exc))}") from None


def layers(config: pytest.Config) -> Any:
    found = config.stash.get(_LAYERS, None)
    if found is None:
        found = config.stash[_LAYERS] = _layers(config)
    return found


def report_dir(config: pytest.Config) -> str | None:
    """--racecheck-report-dir, or the configured one (relative to the rootdir)."""
    given = config.getoption("racecheck_report_dir", None)
    if given is not None:
        return str(given)
    configured = layers(config).get("report_dir")
    return None if configured is None else str(config.rootpath / configured)


def failure_db(config: pytest.Config) -> Any:
    """The failure database of the session (racecheck.faildb), or None when it is off."""
    from racecheck.faildb import FailureDB

    return FailureDB.at(layers(config).get("db"), config.rootpath)


def pytest_report_header(config: pytest.Config) -> str | None:
    from racecheck.config import describe

    return describe(layers(config)) or None


def resolve_options(config: pytest.Config, marker: pytest.Mark) -> dict[str, Any]:
    """Command line > environment > profile > ini > [tool.racecheck] > marker > default.

    A profile's schedules_multiplier then scales the winning budget, unless
    that budget was given on the command line (see racecheck.config).
    """
    kwargs = {k: v for k, v in marker.kwargs.items() if k not in _MARKER_ONLY}
    return dict(layers(config).resolve(kwargs))


# ---------------------------------------------------------------- auto mode

#: racecheck_mode values: strict (only marked tests) and auto
MODES = ("strict", "auto")


def _add_auto_mode_options(parser: pytest.Parser) -> None:
    parser.addini(
        "racecheck_mode",
        type="string",
        default="strict",
        help="strict: only @pytest.mark.racecheck tests run under racecheck; auto: every"
        " async test too (or, with racecheck_auto_paths, every test under those paths)",
    )
    parser.addini(
        "racecheck_auto_paths",
        type="paths",
        default=[],
        help="in racecheck_mode = auto: run every test under these paths (relative to the"
        " ini file) under racecheck, sync tests included, instead of every async test",
    )


def _check_mode(config: pytest.Config) -> None:
    mode = str(config.getini("racecheck_mode") or "strict").strip()
    if mode not in MODES:
        raise pytest.UsageError(
            f"ini option racecheck_mode: {_safe(repr(mode))} is not a mode; choose auto or strict"
        )


def _auto_marked(config: pytest.Config, item: pytest.Item) -> bool:
    """Does auto mode put this unmarked test under racecheck?"""
    if not isinstance(item, pytest.Function):
        return False
    paths = [Path(p) for p in config.getini("racecheck_auto_paths")]
    if paths:
        here = Path(item.path)
        return any(here == p or p in here.parents for p in paths)
    return inspect.iscoroutinefunction(_test_function(item))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # trylast: after pytest-asyncio/pytest-trio marked their tests; a racecheck
    # marker of the test's own keeps its options (the added one is bare)
    if str(config.getini("racecheck_mode")).strip() != "auto":
        return
    for item in items:
        if item.get_closest_marker("racecheck") is None and _auto_marked(config, item):
            item.add_marker(pytest.mark.racecheck)


class RacecheckWarning(pytest.PytestWarning):
    """A marked test passed, but racecheck could not see all of what it ran."""


# ----------------------------------------------------------------- running


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    # Outermost wrapper: remember the real test function before pytest-trio
    # (runtest_call) or pytest-asyncio (runtest) swap in their sync runners.
    if isinstance(item, pytest.Function) and item.get_closest_marker("racecheck") is not None:
        item.stash[_ORIGINAL_OBJ] = item.obj
    return (yield)


def pytest_runtest_teardown(item: pytest.Item) -> None:
    # racecheck.hypothesis filters hypothesis's explanation for the test that used it.
    quiet = sys.modules.get("racecheck.hypothesis")
    if quiet is not None:
        quiet.restore_explanations()


def _test_function(item: pytest.Function) -> Callable[..., Any]:
    func = item.stash.get(_ORIGINAL_OBJ, None) or item.obj
    # another plugin's sync runner around the coroutine function (functools.wraps)
    seen = 0
    while (
        not inspect.iscoroutinefunction(func)
        and getattr(func, "__wrapped__", None) is not None
        and seen < 10
    ):
        inner = func.__wrapped__
        if not inspect.iscoroutinefunction(inner):
            break
        func = inner
        seen += 1
    return func


def make_target(func: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[[], Any]:
    """A zero-argument target calling the test with its fixture values."""
    if inspect.iscoroutinefunction(func):

        async def async_target() -> Any:
            return await func(**kwargs)

        target: Callable[[], Any] = async_target
    else:

        def sync_target() -> Any:
            return func(**kwargs)

        target = sync_target
    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(target, attr, getattr(func, attr))
        except (AttributeError, TypeError):
            pass
    # Every schedule of the test shares these values: name them if state leaks.
    target.__racecheck_state__ = {f"fixture {name!r}": v for name, v in kwargs.items()}  # type: ignore[attr-defined]
    return target


def _shell_single_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def replay_command(item: pytest.Item, token: str, nodeid: str | None = None) -> str:
    """The exact shell command that replays ``token`` on this test (``nodeid``: a shard's test)."""
    nodeid = nodeid or item.nodeid
    config = item.config
    path, sep, rest = nodeid.partition("::")
    try:
        absolute = config.rootpath / path
        rel = os.path.relpath(absolute, config.invocation_params.dir)
        if not rel.startswith(".."):
            nodeid = rel.replace(os.sep, "/") + sep + rest
    except ValueError:  # another drive on Windows
        pass
    detect = " --racecheck-detect" if config.getoption("racecheck_detect", False) else ""
    # The order of a set of strings follows the hash seed: a pinned seed must be
    # pinned again for the replay to take the same path.
    seed = os.environ.get("PYTHONHASHSEED")
    prefix = f"PYTHONHASHSEED={shlex.quote(seed)} " if seed not in (None, "", "random") else ""
    return (
        f"{prefix}pytest {_shell_single_quote(nodeid)}"
        f" --racecheck-replay={shlex.quote(token)}{detect}"
    )


def _fail(message: str) -> None:
    from racecheck.textsafe import terminal_safe

    # Names and messages come from the code under test: no live control codes.
    pytest.fail(terminal_safe(message), pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> object | None:
    marker = pyfuncitem.get_closest_marker("racecheck")
    if marker is None:
        return None
    with _warnings_once():
        _run_marked(pyfuncitem, marker)
    return True


@contextlib.contextmanager
def _warnings_once() -> Generator[None, None, None]:
    """Each distinct warning of the test's schedules once, with how often it came.

    Every schedule runs the test body again, so a library's deprecation
    warning would be listed once per schedule: thousands of copies of one
    line. The filters in force (``-W error::...`` included) still apply while
    the schedules run; what they let through is counted, then warned once.
    """
    seen: dict[tuple[str, type[Warning], str, int], int] = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            try:
                yield
            finally:
                for w in caught:
                    key = (str(w.message), w.category, w.filename, w.lineno)
                    seen[key] = seen.get(key, 0) + 1
    finally:
        # also when the test fails: its warnings (a pinned token that no longer
        # applies, say) explain the failure
        for (text, category, filename, lineno), count in seen.items():
            if count > 1:
                text = f"{text} (racecheck: {count} times over the test's schedules)"
            warnings.warn_explicit(text, category, filename, lineno)


def _run_marked(item: pytest.Function, marker: pytest.Mark) -> None:
    import racecheck
    from racecheck.errors import UsageError

    if marker.args:
        _fail(
            "racecheck: @pytest.mark.racecheck takes keyword arguments only"
            f" (strategy=..., schedules=..., seed=...), not {marker.args!r}"
        )
    func = _test_function(item)
    if inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func):
        _fail(
            "racecheck: a @pytest.mark.racecheck test must be a function or coroutine function,"
            " not a generator"
        )
    kwargs = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
    target = make_target(func, kwargs)
    label = item.nodeid
    if marker.kwargs.get("mode") is not None:
        _run_mode(item, marker, target, label)
        return
    options = resolve_options(item.config, marker)
    trio_marked = item.get_closest_marker("trio") is not None
    if "backend" not in options and trio_marked and inspect.iscoroutinefunction(func):
        # pytest-trio's trio_mode (or @pytest.mark.trio): the test is trio code
        options["backend"] = "trio"
    token = item.config.getoption("racecheck_replay", None)

    if token:
        _replay(item, target, token, label, options)
        return

    import time

    from racecheck.pinning import normalize, replay_first
    from racecheck.pytest_shards import record_result, slice_of

    label, shard = slice_of(item)
    if shard is not None:
        options["shard"] = shard

    # pytest.fail is called outside the ``except`` blocks: inside them pytest
    # would also print the RaceFound as "During handling of the above exception".
    message: str | None = None
    notes: list[str] = []
    t0 = time.perf_counter()
    phase = ""
    # A shard saves no token: the next run would replay one that is not the first failure.
    db = failure_db(item.config) if shard is None else None
    pinned: list[str] = []
    try:
        pinned = normalize(marker.kwargs.get("replay"))
        if pinned:
            # Before exploring: the pinned schedules are the test's regression checks.
            phase = "racecheck: pinned schedule fails again\n"
            replayed = replay_first(
                target, pinned, {**options, "label": label}, what="pinned schedule"
            )
            notes += [r.note for r in replayed if r.note]
            passed = [r.token for r in replayed if r.status == "passed"]
            for token in passed:
                item.add_report_section(
                    "call", "racecheck", f"pinned schedule {token} ran without failing"
                )
        saved = [t for t in db.tokens(label) if t not in pinned] if db is not None else []
        if saved and db is not None:
            where = _safe(str(db.directory))
            phase = f"racecheck: saved failing schedule fails again (from {where})\n"
            # One at a time: each clean run counts before the next may raise.
            for token in saved:
                replay_first(target, [token], {**options, "label": label}, what="saved")
                db.ran_clean(label, token)
        phase = ""
        report = racecheck.check(target, label=label, **options)
    except KeyboardInterrupt as exc:
        _interrupted(item, options, exc)
    except racecheck.RaceFound as exc:
        if db is not None and exc.schedule not in pinned:  # a pinned token lives in the code
            db.failed(label, exc.schedule)
        cmd = replay_command(item, exc.schedule, label)
        exc.replay_hint = cmd
        if shard is not None:
            record_result(item, shard, exc.schedules_run)
        _record(item, options, exc=exc, seconds=time.perf_counter() - t0, command=cmd)
        message = phase + exc.render()
    except UsageError as exc:
        message = f"racecheck: {type(exc).__name__}: {_first_line(exc)}"
    for note in notes:
        item.warn(RacecheckWarning(f"racecheck: {note}"))
    if message is not None:
        _fail(message)
    if shard is not None:
        record_result(item, shard, None)
    _record(item, options, report=report, seconds=time.perf_counter() - t0)
    item.add_report_section("call", "racecheck", str(report))
    for warning in report.warnings:
        # pytest's warnings summary: a green test that saw nothing must not look proven
        item.warn(RacecheckWarning(f"racecheck: {warning}"))


#: keywords of @pytest.mark.racecheck(mode="stress", ...) (racecheck.stress options)
_STRESS_KEYWORDS = (
    "mode",
    "runs",
    "parallel",
    "timeout",
    "seed",
    "reproduce",
    "backend",
    "isolate",
    "processes",
)


def _run_mode(
    item: pytest.Function, marker: pytest.Mark, target: Callable[[], Any], label: str
) -> None:
    """``mode="stress"``: run the real test body many times (racecheck.stress).

    The statistics go in the test's report section; a failure fails the test
    with the whole stress report. ``--racecheck-replay`` replays the token the
    controlled re-check printed, on the same copies the stress runs used.
    """
    from racecheck.errors import UsageError
    from racecheck.stress import copies, stress

    mode = marker.kwargs["mode"]
    if mode != "stress":
        _fail(f"racecheck: unknown mode {mode!r}: the only mode is 'stress'")
    unknown = sorted(set(marker.kwargs) - set(_STRESS_KEYWORDS))
    if unknown:
        _fail(
            "racecheck: mode='stress' takes runs, parallel, timeout, seed, reproduce, backend,"
            f" isolate and processes, not {', '.join(unknown)}"
        )
    options = {k: v for k, v in marker.kwargs.items() if k != "mode"}
    parallel = options.get("parallel", 1)
    token = item.config.getoption("racecheck_replay", None)
    if token:
        n = parallel if isinstance(parallel, int) and parallel > 1 else 1
        replay_label = label if n == 1 else f"{label}[x{n}]"
        _replay(item, copies(target, n), token, replay_label, {})
        return
    if options.get("isolate") == "process" or options.get("processes", 1) != 1:
        # a worker process imports the test function by name: fixtures cannot follow it
        if item._fixtureinfo.argnames:
            _fail("racecheck: isolate='process' runs only tests that take no fixtures")
        target = _test_function(item)
    message: str | None = None
    report = None
    try:
        report = stress(target, label=label, **options)
    except UsageError as exc:
        message = f"racecheck: {_first_line(exc)}"
    if message is not None or report is None:
        _fail(message or "racecheck: stress did not run")
        return
    repro = report.reproduction
    if repro is not None and repro.token:
        repro.replay = replay_command(item, repro.token)
    if report.abandoned_threads:
        item.warn(
            RacecheckWarning(
                "racecheck: a hung stress run left threads running: "
                + ", ".join(report.abandoned_threads)
            )
        )
    if report.interrupted:
        raise KeyboardInterrupt
    if not report.ok:
        _fail(report.render())
    item.add_report_section("call", "racecheck stress", report.render())


_INTERRUPTED = pytest.StashKey[list[str]]()


def _interrupted(item: pytest.Function, options: dict[str, Any], exc: KeyboardInterrupt) -> None:
    """Ctrl-C in a marked test: say what was explored, not where the engine was.

    The line goes twice: into pytest's "KeyboardInterrupt" banner (the
    exception's message) and into the terminal summary, with the replay
    command of a failure that was still being minimised.
    """
    __tracebackhide__ = True
    from racecheck.errors import Interrupted

    if isinstance(exc, Interrupted):
        what = exc.describe()
    else:  # between two explorations (a pinned or saved schedule's replay)
        what = (
            f"({options.get('strategy', '')}, seed {options.get('seed', 0)});"
            " no exploration was under way"
        )
    line = _safe(f"racecheck: interrupted {item.nodeid} {what}")
    lines = item.config.stash.setdefault(_INTERRUPTED, [])
    lines.append(line)
    if isinstance(exc, Interrupted) and exc.schedule:
        lines.append("  replay: " + _safe(replay_command(item, exc.schedule)))
    raise KeyboardInterrupt(line) from None


def _replay(
    item: pytest.Function,
    target: Callable[[], Any],
    token: str,
    label: str,
    options: dict[str, Any],
) -> None:
    import racecheck
    from racecheck.errors import DivergenceError, UsageError
    from racecheck.schedule import token_label_matches

    message: str | None = None
    try:
        matches = token_label_matches(token, label)
    except UsageError as exc:
        message = f"racecheck: --racecheck-replay: {_first_line(exc)}"
        matches = False
    if message is not None:
        _fail(message)
    if not matches:
        pytest.skip("--racecheck-replay: the token was recorded for another test")
    replay_options = {k: v for k, v in options.items() if k not in _EXPLORATION_ONLY}
    # The summary's verdict: a divergence also fails the test, but it is not the
    # bug failing again (typically the fixed code needs decisions the token lacks).
    verdict = "did not fail"
    try:
        racecheck.replay(target, token, label=label, **replay_options)
    except racecheck.RaceFound as exc:
        verdict = "fails again"
        exc.replay_hint = replay_command(item, exc.schedule)
        message = f"racecheck: replayed schedule fails again\n{exc.render()}"
    except DivergenceError as exc:
        # Not "fails again": the code took another path, so the token cannot judge it.
        verdict = "diverged (the token does not apply to this code)"
        message = f"racecheck: {type(exc).__name__}: {_first_line(exc)}"
    except UsageError as exc:
        verdict = "error"
        message = f"racecheck: {type(exc).__name__}: {_first_line(exc)}"
    finally:
        item.user_properties.append((_PROP_REPLAYED, verdict))
    if message is not None:
        _fail(message)
    item.add_report_section(
        "call", "racecheck", f"replayed {token}: the schedule ran without failing"
    )


def _record(
    item: pytest.Function,
    options: dict[str, Any],
    *,
    seconds: float,
    exc: Any = None,
    report: Any = None,
    command: str | None = None,
) -> None:
    """Keep a JSON-able record of the test for --racecheck-report-dir."""
    if not report_dir(item.config):
        return
    from racecheck.detect import finding_of
    from racecheck.outcome import VERDICTS as verdicts

    record: dict[str, Any] = {
        "scenario": item.nodeid,
        "variant": "test",
        "origin": "pytest",
        "expect": "safe",
        "strategy": str(options.get("strategy", "")),
        "seed": options.get("seed", 0),
        "seconds": round(seconds, 6),
    }
    shard = options.get("shard")
    if shard is not None:  # a slice: racecheck report merge puts the slices together
        record["shard"] = {**shard.to_dict(), "failure": exc.schedules_run if exc else None}
    if exc is not None:
        record.update(
            verdict=verdicts.get(exc.kind, exc.kind),
            kind=exc.kind,
            race=finding_of(exc),
            schedules_run=exc.schedules_run,
            exhausted=False,
            schedule=exc.schedule,
            ok=False,
            message=exc.summary,
            original_schedule=exc.original_schedule,
            preemptions=exc.preemptions,
            original_preemptions=exc.original_preemptions,
            replay_command=command,
            detail=exc.detail or None,
            trace=_trace_data(exc.trace),
        )
    else:
        record.update(
            verdict="safe",
            kind=None,
            schedules_run=report.schedules_run,
            exhausted=bool(report.exhausted),
            schedule=None,
            ok=True,
            distinct_schedules=getattr(report, "distinct_schedules", 0),
            distinct_orderings=getattr(report, "distinct_orderings", 0),
            warnings=list(getattr(report, "warnings", ())),
            verified=bool(getattr(report, "verified", False)),
            verified_note=report.verified_note,
        )
    item.user_properties.append((_PROP_RECORD, record))


# --------------------------------------------------------- session summary


class _SessionPlugin:
    """Per-session bookkeeping, registered by :func:`pytest_configure`.

    Its ``pytest_runtest_logreport`` sees the reports where they arrive: in the
    controller under pytest-xdist, so replays and records of every worker count.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.replayed: list[tuple[str, str]] = []  # (nodeid, verdict)
        self.records: list[dict[str, Any]] = []
        self.written: list[str] = []
        self.write_error: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == _PROP_REPLAYED:
                # the verdict _replay recorded (a string; True from older workers)
                if not isinstance(value, str):
                    value = "fails again" if report.outcome == "failed" else "did not fail"
                self.replayed.append((report.nodeid, value))
            elif key == _PROP_RECORD and isinstance(value, dict):
                self.records.append(value)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        config = self.config
        if _is_xdist_worker(config):
            return
        token = config.getoption("racecheck_replay", None)
        if (
            token
            and not self.replayed
            and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
            and not config.getoption("collectonly", False)
        ):
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        directory = report_dir(config)
        if directory and self.records:
            from racecheck.errors import UsageError

            try:
                self.written = _write_reports(config, self.records, directory)
            except (OSError, UsageError) as exc:
                # The directory was fine at start; it went away or filled up.
                reason = getattr(exc, "strerror", None) or _first_line(exc)
                self.write_error = (
                    f"racecheck: error: cannot write reports to {directory}: {reason}"
                )
                session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        config = self.config
        if _is_xdist_worker(config):
            return
        token = config.getoption("racecheck_replay", None)
        if token and not config.getoption("collectonly", False):
            if not self.replayed:
                terminalreporter.write_line(
                    "racecheck: error: --racecheck-replay: no selected @pytest.mark.racecheck"
                    " test was recorded by this token (select the test named in the failure"
                    " report)",
                    red=True,
                )
            for nodeid, verdict in self.replayed:
                terminalreporter.write_line(
                    f"racecheck: replayed schedule on {_safe(nodeid)}: {verdict}"
                )
        for line in config.stash.get(_INTERRUPTED, []):
            terminalreporter.write_line(line, yellow=True)
        if self.written:
            terminalreporter.write_line("racecheck reports: " + _safe(", ".join(self.written)))
        if self.write_error:
            terminalreporter.write_line(_safe(self.write_error), red=True)


def _safe(text: str) -> str:
    from racecheck.textsafe import terminal_safe

    return terminal_safe(text, one_line=True)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _write_reports(
    config: pytest.Config, records: list[dict[str, Any]], directory: str
) -> list[str]:
    import dataclasses

    # the report package directly: the plugin and the CLI are peers, neither imports the other
    from racecheck.report import RunRecord, write_reports

    known = {f.name for f in dataclasses.fields(RunRecord)}
    objs = [RunRecord(**{k: v for k, v in _with_trace(r).items() if k in known}) for r in records]
    return [str(p) for p in write_reports(objs, _report_path(config, directory))]


def _trace_data(trace: Any) -> dict[str, Any] | None:
    """The trace as plain data: user_properties cross from xdist workers."""
    if trace is None:
        return None
    from racecheck.report.json_report import trace_to_dict

    return trace_to_dict(trace)


def _with_trace(record: dict[str, Any]) -> dict[str, Any]:
    """A record whose trace data is a Trace again (as the CLI's records have it)."""
    data = record.get("trace")
    if not isinstance(data, dict):
        return record
    from racecheck.report.json_report import trace_from_dict

    try:
        return {**record, "trace": trace_from_dict(data)}
    except (KeyError, TypeError, ValueError):  # a worker of another version: no picture
        return {**record, "trace": None}


def _report_path(config: pytest.Config, directory: str) -> str:
    return os.path.join(str(config.invocation_params.dir), directory)
