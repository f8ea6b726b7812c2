"""``racecheck run -j K``: the variants in K processes, each variant sharded across them.

Every variant not on ``auto`` is split into K slices (:mod:`racecheck.sharding`), and the
slices of all variants go to one pool of K worker processes in order, so a
single large variant keeps every process busy and many small ones overlap.
Each slice's result comes back as plain data and the slices of a variant are
merged with the single-process rule: the lowest-numbered failure, its shrunk
token and trace from the slice that ran it, and coverage counted over
schedules 1..verdict exactly as one process counts it (each slice reports,
the first schedule number of each distinct schedule and conflict ordering).
Rows are printed in selection order. So the output is that of ``-j 1``,
timings aside.

A variant on ``auto`` (the default) runs whole in one worker: the portfolio
adapts to what its whole run sees, which no slice can (:func:`_runs_whole`).
To split one large ``auto`` exploration, use ``pytest --racecheck-shards`` or
``--shard I/N``, whose results do not depend on the slice count but are
another search than the unsliced one (racecheck.sharding_auto).

Variants with failing schedules saved in the failure database run whole, in
this process, exactly as ``-j 1`` runs them: the saved schedule is replayed
first, and what it says decides the row. The winner of a merged variant is
saved to the database afterwards, as ``-j 1`` would.

Workers are spawned, not forked: the parent may hold threads (a variant run
here), and they import the scenario files themselves. Each starts a session of
its own (:mod:`racecheck.worker_session`: Linux's autogroup would otherwise
give K workers of one session the CPU share of one when anything else is
busy), so Ctrl-C is passed on to them from here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from racecheck.config import Layers
    from racecheck.loader import Selection
    from racecheck.report import RunRecord


@dataclass
class Rendered:
    """A failure as the table's detail lines need it, after it crossed a process boundary."""

    text: str
    #: RaceFound.strategy: the portfolio names the member that found it
    strategy: str = ""

    def render(self) -> str:
        return self.text


@dataclass
class SliceOutcome:
    record: RunRecord
    rendered: str | None
    error: str | None
    state: Any
    strategy: str = ""


def _explore_in_worker(
    args: argparse.Namespace,
    selector: str,
    variant: str,
    overrides: dict[str, Any],
    slicing: tuple[str, str | None] | None,
) -> SliceOutcome:
    """In a worker: explore one variant, whole or the slice ``(shard, board)``, as plain data."""
    from racecheck.cli_base import one_line_of
    from racecheck.sharding import Board, SliceState, parse_shard
    from racecheck.variant_run import (
        VariantProgress,
        explore_variant,
        resolve_selections,
        run_layers,
    )

    layers = run_layers(args)
    sel = resolve_selections([selector])[0]
    state = None
    if slicing is not None:
        shard, board = slicing
        label = sel.scenario.label(variant)
        state = SliceState(
            parse_shard(shard), None if board is None else Board(board, label), keep_runs=True
        )
        overrides = {**overrides, "shard": state}
    progress = VariantProgress(open(os.devnull, "w"), enabled=False, every=0)
    rec, failure, error, _ = explore_variant(sel, variant, overrides, progress, layers)
    if state is not None:
        state.board = None  # not sent back
    return SliceOutcome(
        rec,
        None if failure is None else failure.render(),
        None if error is None else one_line_of(error),
        state,
        "" if failure is None else failure.strategy,
    )


def _run_slice(
    args: argparse.Namespace,
    selector: str,
    variant: str,
    overrides: dict[str, Any],
    shard: str,
    board: str | None,
) -> SliceOutcome:
    """In a worker: explore one slice of one variant."""
    return _explore_in_worker(args, selector, variant, overrides, (shard, board))


def _run_whole(
    args: argparse.Namespace, selector: str, variant: str, overrides: dict[str, Any]
) -> SliceOutcome:
    """In a worker: explore one variant whole, as ``-j 1`` does (see :func:`_runs_whole`)."""
    return _explore_in_worker(args, selector, variant, overrides, None)


def _runs_whole(options: dict[str, Any]) -> bool:
    """Whether a variant runs whole in one worker rather than sliced across all of them.

    ``auto`` adapts to what its whole run has seen: once the sampling members
    saturate, it moves the budget to DPOR (strategies.portfolio). No slice
    sees the whole run, so sliced it would be another search, and ``-j K``
    would print other verdicts than ``-j 1``. Such variants overlap with the
    others instead of splitting.
    """
    return str(options.get("strategy")) == "auto"


def _merge(
    outcomes: Sequence[SliceOutcome],
) -> tuple[RunRecord, Rendered | None, BaseException | None]:
    from dataclasses import replace

    from racecheck.errors import UsageError
    from racecheck.sharding import ShardResult, merge, merged_coverage, merged_proof

    for outcome in outcomes:
        if outcome.error is not None:
            rec = replace(outcome.record, shard=None)
            return rec, None, UsageError(outcome.error)
    results = [
        ShardResult.from_dict(o.record.shard or {}, (o.record.shard or {}).get("failure"))
        for o in outcomes
    ]
    merged = merge(results)
    seconds = max(o.record.seconds for o in outcomes)
    states = [o.state for o in outcomes]
    limit = merged.coverage_limit
    assert limit is not None
    if merged.winner is not None:
        win = outcomes[merged.winner]
        distinct, orderings = merged_coverage(states, limit, win.state)
        rec = replace(
            win.record,
            shard=None,
            seconds=seconds,
            # a split exhaustive search's slice counts its own runs; the merge knows
            # the single-process number (racecheck.sharding_tree)
            schedules_run=merged.schedules_run,
            distinct_schedules=distinct,
            distinct_orderings=orderings,
        )
        # the table shows the failure's text without its first line, the one with
        # the slice's own count: the record carries the merged number
        return rec, Rendered(win.rendered or "", win.strategy), None
    first = outcomes[0].record
    distinct, orderings = merged_coverage(states, limit, None)
    warnings = list(dict.fromkeys(w for o in outcomes for w in o.record.warnings))
    rec = replace(
        first,
        shard=None,
        seconds=seconds,
        schedules_run=merged.schedules_run,
        # shard 1 says it for a sequential search it ran whole; a split one, the merge
        exhausted=first.exhausted or bool(merged.exhausted),
        **merged_proof(first.verified, first.verified_note, merged, len(outcomes)),
        distinct_schedules=distinct,
        distinct_orderings=orderings,
        warnings=warnings,
    )
    return rec, None, None


def outcomes(
    selections: Sequence[Selection],
    overrides: dict[str, Any],
    layers: Layers,
    args: argparse.Namespace,
    jobs: int,
) -> Iterator[tuple[RunRecord, Any, BaseException | None, bool]]:
    """(record, failure, error, interrupted) per variant, in selection order."""
    import multiprocessing

    from racecheck.errors import UsageError
    from racecheck.variant_run import (
        VariantProgress,
        explore_variant,
        failure_db,
        variant_options,
    )
    from racecheck.worker_session import interrupt, own_session

    db = failure_db(layers)
    board = tempfile.mkdtemp(prefix="racecheck-run-")
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=own_session,
    )
    try:
        planned: list[
            tuple[Selection, str, list[Future[SliceOutcome]] | Future[SliceOutcome] | None]
        ] = []
        for sel in selections:
            for variant in sel.variants:
                label = sel.scenario.label(variant)
                if db is not None and db.tokens(label):
                    planned.append((sel, variant, None))  # run here, as -j 1 does
                    continue
                selector = f"{sel.file}::{sel.scenario.name}[{variant}]"
                if _runs_whole(variant_options(sel, variant, overrides, layers)):
                    whole = pool.submit(_run_whole, args, selector, variant, overrides)
                    planned.append((sel, variant, whole))
                    continue
                futures = [
                    pool.submit(
                        _run_slice, args, selector, variant, overrides, f"{i}/{jobs}", board
                    )
                    for i in range(1, jobs + 1)
                ]
                planned.append((sel, variant, futures))
        quiet = VariantProgress(open(os.devnull, "w"), enabled=False, every=0)
        for sel, variant, pending in planned:
            if pending is None:
                yield explore_variant(sel, variant, overrides, quiet, layers)
                continue
            if isinstance(pending, Future):
                ran = pending.result()  # its worker saved its failure, as -j 1 does
                yield (
                    ran.record,
                    None if ran.rendered is None else Rendered(ran.rendered, ran.strategy),
                    None if ran.error is None else UsageError(ran.error),
                    False,
                )
                continue
            rec, failure, error = _merge([f.result() for f in pending])
            if failure is not None and db is not None and rec.schedule:
                db.failed(sel.scenario.label(variant), rec.schedule)
            yield rec, failure, error, False
    except (KeyboardInterrupt, GeneratorExit):
        # The workers left the terminal's session: Ctrl-C (or the caller giving up
        # on the rest) reaches them from here, or shutdown would wait for them.
        interrupt(list(getattr(pool, "_processes", None) or ()))
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(board, ignore_errors=True)
