"""pytest's side of sharding (:mod:`racecheck.sharding`): one marked test over several workers.

``--racecheck-shards=auto|K`` turns each marked test into K *shard items*, one
per slice ``I/K`` of its exploration, which pytest-xdist hands out like any
other items (``auto``: one per xdist worker). The verdict is put back
together where every report arrives, in the controller's
``pytest_runtest_logreport`` (or in the only process without xdist), so it
needs no shared filesystem and works with remote ``--tx`` gateways: each
shard's result travels in its report's ``user_properties``. The shard reports
that arrive first are folded away (no status letter, not counted); the last
one becomes the test's single report, under the test's own node id, carrying
the lowest-numbered failure and the schedules explored in total.

When the workers share a filesystem (xdist on one machine, ``--tx popen``),
the shards of a test also share a :class:`~racecheck.sharding.Board` in a
session directory, so a shard stops as soon as a failure below its remaining
numbers is known. Without one each shard still stops at its own failure; only
the waiting is longer.

``--racecheck-shard=I/N`` runs slice I of every marked test, for CI matrices;
the slices' JSON reports are merged with ``racecheck report merge``.

Shard items do not use the failure database: each shard would save the token
of its own first failure, and the next run would replay a failure that is not
the first one.

With ``--racecheck-shards``, each local xdist worker starts a session of its
own (:mod:`racecheck.worker_session`): under Linux's autogroup scheduling the
workers of one session share one CPU share whenever anything else is busy,
and the shards would give no wall-clock speed-up. The controller passes
Ctrl-C on to them, since the terminal no longer does.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Any

import pytest

#: user_properties keys; they travel from xdist workers to the controller
PROP_OF = "racecheck_shard_of"
PROP_RESULT = "racecheck_shard"
_PROP_RECORD = "racecheck_record"
_SHARD_OF = pytest.StashKey[tuple[str, int, int]]()
_BOARD_INPUT = "racecheck_board"


def add_options(group: Any) -> None:
    group.addoption(
        "--racecheck-shards",
        metavar="auto|K",
        default=None,
        help="split each marked test's exploration into K shard items that pytest-xdist runs"
        " in parallel (auto: one per worker); reported as one test with the first failure",
    )
    group.addoption(
        "--racecheck-shard",
        metavar="I/N",
        default=None,
        help="run slice I of N of every marked test's exploration (CI matrices); merge the"
        " slices' --racecheck-report-dir reports with 'racecheck report merge'",
    )


def configure(config: pytest.Config) -> None:
    """Validate the options (a one-line usage error) and register the plugin."""
    from racecheck.errors import UsageError
    from racecheck.sharding import parse_shard

    shards = config.getoption("racecheck_shards", None)
    if shards is not None and shards != "auto":
        try:
            count = int(shards)
        except ValueError:
            count = 0
        if count < 1:
            raise pytest.UsageError(
                f"--racecheck-shards must be auto or a whole number of at least 1, not {shards!r}"
            )
    one = config.getoption("racecheck_shard", None)
    if one is not None:
        try:
            parse_shard(one, "--racecheck-shard")
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        if shards is not None:
            raise pytest.UsageError(
                "--racecheck-shard (one CI slice) and --racecheck-shards (split over workers)"
                " cannot be combined"
            )
    if shards is not None or one is not None:
        config.pluginmanager.register(ShardsPlugin(config), "racecheck-shards")
    if shards is not None and hasattr(config, "workerinput"):
        from racecheck.worker_session import own_session

        own_session()


def shard_count(config: pytest.Config) -> int:
    value = config.getoption("racecheck_shards", None)
    if value is None or config.getoption("racecheck_replay", None):
        return 1
    if value == "auto":
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            return int(workerinput.get("workercount", 1))
        return 1
    return int(value)


def slice_of(item: pytest.Item) -> tuple[str, Any]:
    """The label the test's tokens are bound to, and its slice (a SliceState) or None."""
    from racecheck.sharding import Board, Shard, SliceState, parse_shard

    expanded = item.stash.get(_SHARD_OF, None)
    if expanded is not None:
        group, index, count = expanded
        board = None
        directory = _board_dir(item.config)
        if directory is not None and os.path.isdir(directory):
            board = Board(directory, group)
        return group, SliceState(Shard(index, count), board, keep_runs=True)
    one = item.config.getoption("racecheck_shard", None)
    if one is not None:
        return item.nodeid, SliceState(parse_shard(one, "--racecheck-shard"))
    return item.nodeid, None


def record_result(item: pytest.Item, state: Any, failure: int | None) -> None:
    """Put the shard's outcome where the controller (and the report files) will see it."""
    result = {**state.to_dict(), "failure": failure}
    if state.keep_runs:  # merged on the controller, over schedules 1..verdict
        result["coverage"] = state.coverage_data()
    item.user_properties.append((PROP_RESULT, result))


def _board_dir(config: pytest.Config) -> str | None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        found = workerinput.get(_BOARD_INPUT)
        return None if found is None else str(found)
    plugin = config.pluginmanager.get_plugin("racecheck-shards")
    return getattr(plugin, "board_dir", None)


def _shard_name(name: str, index: int, count: int) -> str:
    tag = f"racecheck-shard-{index}-of-{count}"
    if name.endswith("]"):
        return f"{name[:-1]}-{tag}]"
    return f"{name}[{tag}]"


#: the shard part of an item's name: "[racecheck-shard-1-of-2]" or "-racecheck-shard-1-of-2"
_TAG = re.compile(r"\[racecheck-shard-\d+-of-\d+\]$|-racecheck-shard-\d+-of-\d+(?=\]$)")


class ShardsPlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.board_dir: str | None = None
        if not hasattr(config, "workerinput") and config.getoption("racecheck_shards", None):
            self.board_dir = tempfile.mkdtemp(prefix="racecheck-shards-")
        #: group node id -> shard index -> what its report said
        self.arrived: dict[str, dict[int, dict[str, Any]]] = {}
        self.summaries: list[str] = []
        #: local workers, which left the terminal's session (racecheck.worker_session)
        self.worker_pids: list[int] = []

    # ------------------------------------------------------------ workers

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_BOARD_INPUT] = self.board_dir

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        gateway = getattr(node, "gateway", None)
        spec = getattr(gateway, "spec", None)
        if gateway is None or not getattr(spec, "popen", False) or getattr(spec, "via", None):
            return  # a remote worker is not this machine's process
        try:
            # xdist asked for it when it set the worker up: cached, no round trip
            self.worker_pids.append(int(gateway._rinfo().pid))
        except Exception:  # an execnet without it: Ctrl-C waits for xdist's teardown
            pass

    def pytest_keyboard_interrupt(self) -> None:
        if self.config.getoption("racecheck_shards", None) is not None:
            from racecheck.worker_session import interrupt, wanted

            if wanted():
                interrupt(self.worker_pids)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        count = shard_count(config)
        if count < 2:
            return
        out: list[pytest.Item] = []
        for item in items:
            if (
                not isinstance(item, pytest.Function)
                or item.get_closest_marker("racecheck") is None
            ):
                out.append(item)
                continue
            for index in range(1, count + 1):
                out.append(self._clone(item, index, count))
        items[:] = out

    def _clone(self, item: pytest.Function, index: int, count: int) -> pytest.Function:
        clone = pytest.Function.from_parent(
            item.parent,
            name=_shard_name(item.name, index, count),
            callspec=getattr(item, "callspec", None),
            fixtureinfo=item._fixtureinfo,
            keywords=dict(item.keywords),
            originalname=item.originalname,
        )
        for marker in item.own_markers:
            if marker not in clone.own_markers:
                clone.own_markers.append(marker)
        clone.stash[_SHARD_OF] = (item.nodeid, index, count)
        group = {"group": item.nodeid, "index": index, "count": count}
        clone.user_properties.append((PROP_OF, group))
        return clone

    # --------------------------------------------------------- controller

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        of = _prop(report, PROP_OF)
        if of is None or hasattr(self.config, "workerinput"):
            return
        if report.when != "call" and report.passed:
            report._racecheck_part = True  # type: ignore[attr-defined]
            return
        if report.when == "teardown":
            return  # a failing teardown after the shard's verdict is its own error
        group, index, count = str(of["group"]), int(of["index"]), int(of["count"])
        arrived = self.arrived.setdefault(group, {})
        arrived[index] = {
            "outcome": report.outcome,
            "longrepr": report.longrepr,
            "sections": list(report.sections),
            "result": _prop(report, PROP_RESULT),
            "record": _prop(report, _PROP_RECORD),
            "properties": list(report.user_properties),
            "duration": report.duration,
        }
        if len(arrived) < count:
            # Folded away: the test's verdict is the last shard's report.
            report.outcome = "passed"
            report.longrepr = None
            report.user_properties = [p for p in report.user_properties if p[0] != _PROP_RECORD]
            report._racecheck_part = True  # type: ignore[attr-defined]
            return
        self._verdict(report, group, count, arrived)

    def _verdict(
        self, report: pytest.TestReport, group: str, count: int, arrived: dict[int, dict[str, Any]]
    ) -> None:
        from racecheck.errors import UsageError
        from racecheck.sharding import ShardResult, merge

        report.nodeid = group
        path, lineno, domain = report.location
        report.location = (path, lineno, _TAG.sub("", domain))
        report.duration = max(a["duration"] for a in arrived.values())
        broken = sorted(
            i for i, a in arrived.items() if a["result"] is None and a["outcome"] != "passed"
        )
        results = []
        for i in sorted(arrived):
            data = arrived[i]["result"]
            if data is not None:
                results.append(ShardResult.from_dict(data, data.get("failure")))
        total = sum(r.ran for r in results)
        if broken or len(results) < count:
            # A shard that did not explore (a usage error, a fixture error): no verdict
            # can be merged, so the test shows that shard's own failure.
            index = broken[0] if broken else min(set(range(1, count + 1)) - set(arrived))
            self._take(report, arrived[index])
            self.summaries.append(f"{group}: shard {index}/{count} did not run its slice")
            return
        try:
            merged = merge(results)
        except UsageError as exc:
            self.summaries.append(f"{group}: {exc}")
            return
        distinct, orderings = _coverage(arrived, results, merged)
        if merged.winner is None:
            winner = arrived[results[0].shard.index]
            self._take(report, winner)
            report.outcome = "passed"
            report.longrepr = None
            what = (
                "the systematic search ran every schedule"
                f" (ended at schedule {merged.schedules_run})"
                if merged.ended
                else f"no failure in schedules 1..{merged.schedules_run}"
            )
            if merged.verified:  # split DPOR: the merge of every slice is the proof
                what += "; verified: every subtree's DPOR search finished and saw every conflict"
        else:
            shard = results[merged.winner].shard
            self._take(report, arrived[shard.index])
            what = f"first failure at schedule {merged.schedules_run} (shard {shard})"
        line = (
            f"{count} shards ran {total} schedule{'' if total == 1 else 's'} in total; {what};"
            f" coverage: {distinct} distinct schedules, {orderings} orderings"
        )
        report.sections.append(("racecheck shards", line))
        record = _prop(report, _PROP_RECORD)
        if isinstance(record, dict):
            record["scenario"] = group
            record.pop("shard", None)  # the whole test now, not one slice of it
            # a split exhaustive search's slice counts its own runs (racecheck.sharding_tree)
            record["schedules_run"] = merged.schedules_run
            if merged.winner is None:
                # A passing test's record carries coverage (a failing one's does not).
                record["distinct_schedules"], record["distinct_orderings"] = distinct, orderings
                record["exhausted"] = bool(merged.exhausted)
        self.summaries.append(f"{group}: {line}")

    @staticmethod
    def _take(report: pytest.TestReport, arrival: dict[str, Any]) -> None:
        report.outcome = arrival["outcome"]
        report.longrepr = arrival["longrepr"]
        report.sections = list(arrival["sections"])
        report.user_properties = list(arrival["properties"])

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        if getattr(report, "_racecheck_part", False):
            # No category: not counted in the summary, which counts the test once.
            # A word (verbose only), so the progress count still reaches 100%.
            return "", "", "" if report.when != "call" else "shard"
        return None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from racecheck.textsafe import terminal_safe

        for group, arrived in self.arrived.items():
            counts = [int(of["count"]) for a in arrived.values() if (of := _of(a)) is not None]
            if counts and len(arrived) < counts[0]:
                self.summaries.append(
                    f"{group}: only {len(arrived)} of {counts[0]} shards reported; no verdict"
                )
        for line in self.summaries:
            terminalreporter.write_line("racecheck shards: " + terminal_safe(line, one_line=True))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.board_dir is not None:
            shutil.rmtree(self.board_dir, ignore_errors=True)


def _coverage(
    arrived: dict[int, dict[str, Any]], results: list[Any], merged: Any
) -> tuple[int, int]:
    """Distinct schedules and orderings over schedules 1..verdict, as one process counts them."""
    from racecheck.sharding import SliceState, merged_coverage

    states = []
    winner = None
    for result in results:
        state = SliceState(result.shard)
        state.load_coverage(arrived[result.shard.index]["result"].get("coverage") or {})
        states.append(state)
    if merged.winner is not None:
        winner = states[merged.winner]
    return merged_coverage(states, merged.coverage_limit, winner)


def _of(arrival: dict[str, Any]) -> dict[str, Any] | None:
    for key, value in arrival["properties"]:
        if key == PROP_OF and isinstance(value, dict):
            return value
    return None


def _prop(report: pytest.TestReport, key: str) -> Any:
    for name, value in report.user_properties:
        if name == key:
            return value
    return None
