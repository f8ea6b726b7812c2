"""Explore one scenario variant into a :class:`~racecheck.report.RunRecord`.

``racecheck run`` does this for each selected variant, in its own process or,
with ``-j K``, in worker processes (:mod:`racecheck.parallel_run`). Both
take it from here, below the command line, so the worker side never imports
:mod:`racecheck.cli`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from racecheck.cli_base import DEFAULT_PATH, one_line_of, replay_command, trace_packages_of
from racecheck.errors import UsageError
from racecheck.outcome import VERDICTS
from racecheck.progress import DEFAULT_INTERVAL, ProgressDisplay

if TYPE_CHECKING:
    from racecheck.config import Layers
    from racecheck.faildb import FailureDB
    from racecheck.loader import Selection
    from racecheck.outcome import RaceFound
    from racecheck.report import RunRecord


def resolve_selections(paths: Sequence[str]) -> list[Selection]:
    from racecheck.loader import resolve

    specs = list(paths) or [DEFAULT_PATH]
    selections = resolve(specs)
    if not any(sel.variants for sel in selections):
        # A run that explores nothing must not look like a run that passed.
        raise UsageError(f"no scenario found in {', '.join(specs)}")
    return selections


def _finding_of(exc: BaseException) -> dict[str, Any] | None:
    from racecheck.detect import finding_of

    return finding_of(exc)


def _added_trace_packages(options: dict[str, Any], own: Mapping[str, Any]) -> list[str]:
    """Traced packages the scenario does not name itself (flags, pyproject, profile)."""
    return [p for p in options.get("trace_packages", ()) if p not in own.get("trace_packages", ())]


class VariantProgress:
    """The status of the running variant (:class:`racecheck.progress.ProgressDisplay`).

    On a terminal, a line redrawn in place on stdout; otherwise (CI, pipes,
    ``--json``) a line on stderr every ``every`` seconds (0: none), so that the
    table and the JSON on stdout stay clean.
    """

    def __init__(self, stream: TextIO, enabled: bool, every: float = DEFAULT_INTERVAL) -> None:
        self.quiet = not enabled and every <= 0
        self.display = (
            ProgressDisplay(stream, tty=True)
            if enabled
            else ProgressDisplay(sys.stderr, tty=False, interval=every, prefix="progress: ")
        )

    def start(self, label: str) -> None:
        self.display.start(label)

    def update(self, done: int, total: int) -> None:
        if not self.quiet:
            self.display.update(done, total)

    def clear(self) -> None:
        self.display.finish(final_line=False)


def _record(**fields: Any) -> RunRecord:
    from racecheck.report import RunRecord

    shard = fields.pop("shard", None)
    record = RunRecord(**fields)
    if shard is not None:  # one slice: what racecheck report merge needs
        record.shard = {**shard.to_dict(), "failure": record.schedules_run if record.kind else None}
    return record


def _slice(options: dict[str, Any]) -> Any:
    """A fresh slice state for this variant when --shard is given (racecheck.sharding)."""
    if options.get("shard") is None:
        options.pop("shard", None)
        return None
    from racecheck.sharding import slice_state

    state = options["shard"] = slice_state(options["shard"])
    return state


def run_layers(args: argparse.Namespace) -> Layers:
    """The run's settings: options given > environment > profile > [tool.racecheck]."""
    from racecheck.config import build_layers, load_project

    given = {
        name: getattr(args, name)
        for name in ("strategy", "schedules", "seed", "report_dir", "db")
        if getattr(args, name, None) is not None
    }
    if args.detect:
        given["detect"] = True
    packages = trace_packages_of(args.trace_packages)
    if packages:
        given["trace_packages"] = packages
    if args.paths:
        given["paths"] = list(args.paths)
    return build_layers(
        command_line=given,
        project=load_project(os.getcwd()),
        profile=args.profile,
        profile_flag="--profile",
    )


def variant_options(
    sel: Selection, variant: str, overrides: dict[str, Any], layers: Layers | None
) -> dict[str, Any]:
    """The check() options a variant runs with: project config, the scenario's, the CLI's."""
    from racecheck.config import Layers

    # Interleaving coverage costs a little per schedule; the table shows it.
    # The scenario's options stand where a pytest marker's do (racecheck.config).
    options = (layers or Layers()).resolve(
        {"coverage": True, **sel.scenario.check_options(variant)}
    )
    options.update(overrides)
    return options


def explore_variant(
    sel: Selection,
    variant: str,
    overrides: dict[str, Any],
    progress: VariantProgress,
    layers: Layers | None = None,
) -> tuple[RunRecord, RaceFound | None, BaseException | None, bool]:
    """Explore one variant: (record, failure, error, interrupted)."""
    import racecheck

    scen = sel.scenario
    var = scen.variants[variant]
    label = scen.label(variant)
    options = variant_options(sel, variant, overrides, layers)
    progress.start(label)
    base = dict(
        scenario=scen.name,
        variant=variant,
        expect=var.expect,
        strategy=str(options["strategy"]),
        seed=options["seed"] if isinstance(options["seed"], int) else 0,
        shard=_slice(options),
    )
    t0 = time.perf_counter()
    # A slice saves no token: the next run would replay one that is not the first failure.
    db = None if layers is None or base["shard"] is not None else failure_db(layers)
    try:
        if db is not None:
            _replay_saved(db, var.target, label, options)
        report = racecheck.check(var.target, label=label, progress=progress.update, **options)
    except racecheck.RaceFound as exc:
        if db is not None:
            db.failed(label, exc.schedule)
        seconds = time.perf_counter() - t0
        progress.clear()
        verdict = VERDICTS.get(exc.kind, exc.kind)
        cmd = replay_command(
            sel.selector(variant),
            exc.schedule,
            bool(options.get("detect")),
            _added_trace_packages(options, scen.check_options(variant)),
        )
        exc.replay_hint = cmd
        rec = _record(
            **base,
            verdict=verdict,
            kind=exc.kind,
            schedules_run=exc.schedules_run,
            exhausted=False,
            schedule=exc.schedule,
            seconds=seconds,
            ok=verdict == var.expect,
            message=exc.summary,
            original_schedule=exc.original_schedule,
            preemptions=exc.preemptions,
            original_preemptions=exc.original_preemptions,
            replay_command=cmd,
            trace=exc.trace,
            detail=exc.detail or None,
            race=_finding_of(exc),
            distinct_schedules=exc.distinct_schedules,
            distinct_orderings=exc.distinct_orderings,
        )
        return rec, exc, None, False
    except KeyboardInterrupt as exc:
        progress.clear()
        seconds = time.perf_counter() - t0
        rec = _interrupted_record(base, exc, progress, seconds, sel.selector(variant))
        return rec, None, None, True
    except Exception as exc:  # UsageError from the engine, or a broken scenario
        seconds = time.perf_counter() - t0
        progress.clear()
        rec = _record(
            **base,
            verdict="error",
            kind=None,
            schedules_run=0,
            exhausted=False,
            schedule=None,
            seconds=seconds,
            ok=False,
            message=one_line_of(exc),
        )
        return rec, None, exc, False
    seconds = time.perf_counter() - t0
    progress.clear()
    rec = _record(
        **base,
        verdict="safe",
        kind=None,
        schedules_run=report.schedules_run,
        exhausted=bool(report.exhausted),
        schedule=None,
        seconds=seconds,
        ok=var.expect == "safe" and not report.interrupted,
        distinct_schedules=getattr(report, "distinct_schedules", 0),
        distinct_orderings=getattr(report, "distinct_orderings", 0),
        warnings=list(report.warnings),
        verified=bool(getattr(report, "verified", False)),
        verified_note=report.verified_note,
    )
    return rec, None, None, bool(report.interrupted)


def _interrupted_record(
    base: dict[str, Any],
    exc: KeyboardInterrupt,
    progress: VariantProgress,
    seconds: float,
    selector: str,
) -> RunRecord:
    """The in-flight variant when Ctrl-C came: its count so far, marked interrupted."""
    from racecheck.errors import Interrupted

    if isinstance(exc, Interrupted):
        done, message, token = exc.schedules_run, exc.describe(), exc.schedule
    else:  # the engine was not exploring (a saved schedule's replay): the display's count
        done = progress.display.done
        message, token = f"after {done} schedules", None
    return _record(
        **base,
        verdict="interrupted",
        kind=None,
        schedules_run=done,
        exhausted=False,
        schedule=token,
        seconds=seconds,
        ok=False,
        message=message,
        replay_command=replay_command(selector, token) if token else None,
    )


def failure_db(layers: Layers) -> FailureDB | None:
    from racecheck.faildb import FailureDB

    return FailureDB.at(layers.get("db"), os.getcwd())


def _replay_saved(db: FailureDB, target: Any, label: str, options: dict[str, Any]) -> None:
    """The saved failing schedules of ``label``, before exploring (RaceFound propagates)."""
    from racecheck.pinning import replay_first

    for token in db.tokens(label):
        replay_first(target, [token], {**options, "label": label}, what="saved")
        db.ran_clean(label, token)
