"""The ``racecheck`` command: ``run``, ``replay`` and ``list`` scenario files.

Exit codes:

* 0 — every expectation was met (or: a replayed token did not fail);
* 1 — a violation or an unmet expectation (or: a replayed token failed again);
* 2 — a usage or input error, or an interrupted run. The message is one line on
  stderr (``racecheck: error: ...``), never a traceback.

Commands are registered in :data:`COMMANDS` (one place): to add one, write an
``_add_<name>(subparsers)`` function that creates the subparser and sets
``func`` (``args -> int``) as its default, and append it there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from racecheck.cli_base import (
    DEFAULT_PATH,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    TRACE_HELP,
    check_marks,
    int_arg,
    one_line_of,
    positive_int,
    print_error,
    replay_command,
    safe,
    seconds_arg,
    trace_packages_of,
)
from racecheck.config import describe
from racecheck.errors import DivergenceError, UsageError
from racecheck.progress import DEFAULT_INTERVAL
from racecheck.render import cut_message
from racecheck.textsafe import terminal_safe
from racecheck.variant_run import (
    VariantProgress,
    explore_variant,
    resolve_selections,
    run_layers,
)

if TYPE_CHECKING:
    from racecheck.config import Layers
    from racecheck.loader import Selection
    from racecheck.outcome import RaceFound
    from racecheck.report import RunRecord

DEFAULT_REPORT_DIR = "reports/"
#: options that belong to exploration, not to a single replayed run
_EXPLORATION_ONLY = ("strategy", "schedules", "seed", "progress")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is the same one line as every other error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"racecheck: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


# ------------------------------------------------------------------ helpers


# ---------------------------------------------------------------------- run


def record_to_json(rec: RunRecord) -> dict[str, Any]:
    """The JSON form of a record (the trace is rendered, not serialised)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(rec):
        if f.name == "trace":
            continue
        out[f.name] = getattr(rec, f.name)
    return out


def _write_json_atomically(records: Sequence[RunRecord], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "racecheck.json"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".racecheck-", suffix=".json.tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump([record_to_json(r) for r in records], fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are meant to be read
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def write_reports(records: Sequence[RunRecord], directory: str | Path) -> list[Path]:
    """Write the reports; fall back to ``racecheck.json`` alone while the
    report package is incomplete."""
    directory = Path(directory)
    try:
        from racecheck.report import write_reports as _write

        return list(_write(list(records), directory))
    except (ImportError, NotImplementedError):
        return [_write_json_atomically(records, directory)]


class _Table:
    """The results matrix, printed one row at a time as variants finish."""

    def __init__(self, stream: TextIO, selections: Sequence[Selection]) -> None:
        self.stream = stream
        self.ok_mark, self.bad_mark = check_marks(stream)
        self.w_scen = max([len("scenario")] + [len(safe(s.scenario.name)) for s in selections])
        self.w_var = max([len("variant")] + [len(safe(v)) for s in selections for v in s.variants])
        self._header_done = False

    def _line(self, *cols: str) -> str:
        scen, var, expect, verdict, ok, scheds, coverage, secs = cols
        return (
            f"{scen:<{self.w_scen}}  {var:<{self.w_var}}  {expect:<8}  {verdict:<10}  "
            f"{ok:<4}  {scheds:<18}  {coverage:>14}  {secs:>7}"
        ).rstrip()

    def header(self) -> None:
        if not self._header_done:
            self._header_done = True
            self.stream.write(
                self._line(
                    "scenario",
                    "variant",
                    "expect",
                    "verdict",
                    "ok",
                    "schedules",
                    "distinct/orders",
                    "seconds",
                )
                + "\n"
            )

    def row(self, rec: RunRecord) -> None:
        self.header()
        if rec.verdict == "error":
            scheds = "-"
        elif rec.verdict == "safe":
            scheds = str(rec.schedules_run)
            if rec.verified:
                scheds += " verified"
            elif rec.exhausted:
                scheds += " exhausted"
            elif rec.strategy == "exhaustive":
                scheds += " not exhausted"
        else:
            scheds = f"{rec.schedules_run}"
        self.stream.write(
            self._line(
                safe(rec.scenario),
                safe(rec.variant),
                rec.expect,
                rec.verdict,
                self.ok_mark if rec.ok else self.bad_mark,
                scheds,
                # interleaving coverage: distinct schedules / distinct orderings
                # of conflicting accesses seen
                f"{rec.distinct_schedules}/{rec.distinct_orderings}"
                if rec.verdict != "error"
                else "-",
                f"{rec.seconds:.2f}",
            )
            + "\n"
        )
        self.stream.flush()


def _schedules(n: int) -> str:
    return f"{n} schedule{'' if n == 1 else 's'}"


def _detail(rec: RunRecord, failure: RaceFound | None, show_trace: bool) -> list[str]:
    """Lines printed under the table for one record (empty when nothing to say)."""
    label = safe(f"{rec.scenario}[{rec.variant}]")
    message = safe(cut_message(rec.message or ""))
    mark = "" if rec.ok else "UNMET: "
    if rec.verdict == "error":
        return []  # already reported on stderr as it happened
    if rec.verdict == "interrupted":
        stop = [f"{label}: interrupted {message}"]
        if rec.replay_command:
            stop.append(f"  replay: {safe(rec.replay_command)}")
        return stop
    if rec.verdict == "safe":
        warnings = [f"warning: {label}: {warning}" for warning in rec.warnings]
        if rec.verified_note:
            warnings.append(f"{label}: {safe(rec.verified_note)}")
        if rec.ok:
            return warnings
        return [
            *warnings,
            f"{mark}{label}: expected a {rec.expect}, but none of {rec.schedules_run} schedules"
            f" failed ({rec.strategy}, seed {rec.seed}"
            f"{', bounded space exhausted' if rec.exhausted else ''})",
        ]
    lines: list[str] = []
    if rec.verdict == "step-limit":
        lines.append(f"{mark}{label}: step-limit after {rec.schedules_run} schedules: {message}")
        lines.append(
            "  a run passed the max_steps bound: a livelock or spin loop, or a bound too small"
            " for this scenario (raise max_steps in its options). step-limit meets no expectation."
        )
    else:
        expected = "" if rec.ok else f" (expected {rec.expect})"
        # the portfolio names the member that found it, and after how many of its own
        member = failure.strategy if failure is not None and ": " in failure.strategy else ""
        found_by = f" ({safe(member)})" if member else ""
        lines.append(
            f"{mark}{label}: {rec.verdict} after {_schedules(rec.schedules_run)}{found_by}"
            f"{expected}: {message}"
        )
    if show_trace and failure is not None:
        # the first line of the rendering repeats the summary printed just above
        lines += ["  " + line for line in failure.render().splitlines()[1:]]
    elif rec.replay_command:
        lines.append(f"  replay: {safe(rec.replay_command)}")
    return lines


def _cmd_run(args: argparse.Namespace) -> int:
    from racecheck.config import parse

    if args.strategy is not None:
        parse("strategy", args.strategy, "--strategy")
    layers = run_layers(args)
    args.report_dir = str(layers.get("report_dir", DEFAULT_REPORT_DIR))
    if not args.no_report:
        from racecheck.report.writers import check_report_dir

        # Before importing or exploring anything: a bad directory costs nothing.
        check_report_dir(args.report_dir)
    selections = resolve_selections(layers.get("paths", []))
    if args.select:
        for sel in selections:
            sel.variants = [v for v in sel.variants if args.select in sel.scenario.label(v)]
        selections = [s for s in selections if s.variants]
        if not selections:
            raise UsageError(f"-k {args.select!r} selects no scenario variant")
    overrides: dict[str, Any] = {}
    if args.no_coverage:
        overrides["coverage"] = False
    if getattr(args, "shard", None):
        overrides["shard"] = args.shard
    if layers.profile_name and not args.json:
        sys.stdout.write(describe(layers) + "\n")

    out = sys.stdout
    table = None if args.json else _Table(out, selections)
    progress = VariantProgress(
        out, enabled=not args.json and out.isatty(), every=args.progress_every
    )
    records: list[RunRecord] = []
    failures: dict[int, RaceFound] = {}
    errors: list[RunRecord] = []
    interrupted = False
    try:
        for rec, failure, error, stopped in _outcomes(
            selections, overrides, progress, layers, args
        ):
            records.append(rec)
            if failure is not None:
                failures[id(rec)] = failure
            if error is not None:
                errors.append(rec)
                print_error(f"{rec.scenario}[{rec.variant}]: {rec.message}")
            if table is not None:
                table.row(rec)
            if stopped:
                interrupted = True
                break
    except KeyboardInterrupt:
        interrupted = True
    progress.clear()

    if args.json:
        json.dump([record_to_json(r) for r in records], out, indent=2)
        out.write("\n")
    else:
        assert table is not None
        if not records:
            table.header()
        details: list[str] = []
        for rec in records:
            details += _detail(rec, failures.get(id(rec)), args.trace)
        if details:
            out.write("\n" + "\n".join(details) + "\n")
        met = sum(1 for r in records if r.ok)
        unmet = [
            safe(f"{r.scenario}[{r.variant}]")
            for r in records
            if not r.ok and r.verdict != "interrupted"
        ]
        summary = f"\n{len(records)} variant{'s' if len(records) != 1 else ''}: {met} met"
        if unmet:
            summary += f", {len(unmet)} unmet ({', '.join(unmet)})"
        halted = [safe(f"{r.scenario}[{r.variant}]") for r in records if r.verdict == "interrupted"]
        if halted:
            summary += f", {len(halted)} interrupted ({', '.join(halted)})"
        out.write(summary + "\n")
    paths: list[Path] = []
    if not args.no_report and records:
        try:
            paths = write_reports(records, args.report_dir)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise UsageError(f"cannot write reports to {args.report_dir}: {reason}") from None
        note = sys.stderr if args.json else out
        if paths and not interrupted:
            note.write("reports: " + safe(", ".join(str(p) for p in paths)) + "\n")
    out.flush()
    if interrupted:
        written = f"partial reports: {', '.join(map(str, paths))}" if paths else "no report written"
        sys.stderr.write(f"racecheck: interrupted (results above are partial; {safe(written)})\n")
        return EXIT_USAGE
    if errors:
        return EXIT_USAGE
    return EXIT_OK if all(r.ok for r in records) else EXIT_FAILED


def _add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="explore every variant of the scenarios and check their expectations",
        description="Explore each scenario variant and compare its verdict with its expectation.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=f"scenario files or folders, or FILE::NAME[VARIANT] (default: {DEFAULT_PATH})",
    )
    p.add_argument(
        "--strategy",
        help="auto | pct | pct-random | pos | surw | random | exhaustive | dpor | hypothesis"
        " (default: auto)",
    )
    p.add_argument("--schedules", type=positive_int, help="schedules per variant (default 1000)")
    p.add_argument("--seed", type=int_arg, help="seed for the strategy (default 0)")
    p.add_argument(
        "-k", "--select", metavar="TEXT", help="only variants whose NAME[VARIANT] contains TEXT"
    )
    p.add_argument(
        "--json", action="store_true", help="print the records as JSON instead of a table"
    )
    p.add_argument("--trace", action="store_true", help="print the trace of every failure")
    p.add_argument(
        "--report-dir",
        default=None,
        metavar="DIR",
        help=f"where to write reports (default: {DEFAULT_REPORT_DIR})",
    )
    p.add_argument(
        "--progress-every",
        type=seconds_arg,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help="without a terminal, print a progress line (schedules, rate, ETA) on stderr"
        f" this often (default {DEFAULT_INTERVAL:g}; 0: never)",
    )
    p.add_argument(
        "--profile",
        metavar="NAME",
        help="settings profile: ci (schedules x10), dev (/10) or [tool.racecheck.profiles.NAME]",
    )
    p.add_argument(
        "--db",
        metavar="DIR",
        help="failure database: failing schedules are saved there and replayed first"
        " (default .racecheck/; 'none' turns it off)",
    )
    p.add_argument("--no-report", action="store_true", help="write no report files")
    p.add_argument(
        "--no-coverage",
        action="store_true",
        help="skip interleaving coverage (distinct orderings of conflicting accesses): faster",
    )
    p.add_argument("--detect", action="store_true", help=_DETECT_HELP)
    p.add_argument("--trace-packages", action="append", metavar="NAMES", help=TRACE_HELP)
    _add_run_sharding(p)
    p.set_defaults(func=_cmd_run)


def _shard_arg(text: str) -> str:
    from racecheck.sharding import parse_shard

    try:
        return str(parse_shard(text, "--shard"))
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _outcomes(
    selections: Sequence[Selection],
    overrides: dict[str, Any],
    progress: VariantProgress,
    layers: Layers,
    args: argparse.Namespace,
) -> Iterator[tuple[RunRecord, RaceFound | None, BaseException | None, bool]]:
    """Each variant's (record, failure, error, interrupted), in order: here, or with -j K."""
    jobs = getattr(args, "jobs", 1) or 1
    if jobs > 1 and overrides.get("shard"):
        raise UsageError("-j and --shard cannot be combined: a slice runs in one process")
    if jobs > 1:
        from racecheck.parallel_run import outcomes

        yield from outcomes(selections, overrides, layers, args, jobs)
        return
    for sel in selections:
        for variant in sel.variants:
            yield explore_variant(sel, variant, overrides, progress, layers)


def _add_run_sharding(p: Any) -> None:
    p.add_argument(
        "-j",
        "--jobs",
        type=positive_int,
        default=1,
        metavar="K",
        help="explore in K processes: variants run side by side, and each variant not on"
        " auto is also sharded across them and merged; the output is that of -j 1,"
        " timings aside",
    )
    p.add_argument(
        "--shard",
        type=_shard_arg,
        metavar="I/N",
        help="explore slice I of N of every variant (CI matrices); merge the slices' reports"
        " with 'racecheck report merge'",
    )


# ------------------------------------------------------------------- report


def _cmd_report_merge(args: argparse.Namespace) -> int:
    from racecheck.report.merge import merge_slices

    out_dir = Path(args.out)
    for given in args.dirs:
        if Path(given).resolve() == out_dir.resolve():
            raise UsageError(f"--out {args.out} is one of the slices; write the merge elsewhere")
    merged = merge_slices(args.dirs)
    records = [record for record, _ in merged]
    out = sys.stdout
    for record, how in merged:
        name = safe(f"{record.scenario}[{record.variant}]")
        mark = "met" if record.ok else "UNMET"
        if how is None:
            line = f"{name}: error in a slice: {safe(record.message or '')}"
        elif how.winner is not None:
            line = (
                f"{name}: {record.verdict} at schedule {how.schedules_run}"
                f" ({how.total_ran} run by the slices in all):"
                f" {safe(cut_message(record.message or ''))}"
            )
        elif record.verified:
            line = (
                f"{name}: no failure; {safe(record.verified_note or 'verified')} (it ended at"
                f" schedule {how.schedules_run}; {how.total_ran} run by the slices in all)"
            )
        elif how.ended:
            line = (
                f"{name}: no failure; the search ran every schedule (it ended at schedule"
                f" {how.schedules_run}; {how.total_ran} run by the slices in all)"
            )
        else:
            line = (
                f"{name}: no failure in schedules 1..{how.schedules_run}"
                f" ({how.total_ran} run by the slices in all)"
            )
        out.write(f"{line} [{mark}]\n")
        if record.schedule and record.replay_command:
            out.write(f"  replay: {safe(record.replay_command)}\n")
    try:
        paths = write_reports(records, out_dir)
    except OSError as exc:
        raise UsageError(f"cannot write reports to {args.out}: {exc.strerror or exc}") from None
    out.write("reports: " + safe(", ".join(str(p) for p in paths)) + "\n")
    if any(r.verdict == "error" for r in records):
        return EXIT_USAGE
    return EXIT_OK if all(r.ok for r in records) else EXIT_FAILED


def _add_report(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="work with racecheck reports (merge the slices of a sharded run)",
        description="Work with racecheck's report files.",
    )
    actions = p.add_subparsers(dest="report_command", metavar="ACTION", parser_class=_Parser)
    actions.required = True
    m = actions.add_parser(
        "merge",
        help="merge the JSON reports of the slices of a sharded run into one report",
        description="Merge the racecheck.json of every slice (--shard I/N) into one JSON, JUnit"
        " and HTML report. The first failure is the one with the lowest schedule number, as"
        " in a single run.",
    )
    m.add_argument("dirs", nargs="+", metavar="DIR", help="a slice's report directory (or file)")
    m.add_argument(
        "-o",
        "--out",
        default=DEFAULT_REPORT_DIR,
        metavar="DIR",
        help=f"where to write the merged report (default: {DEFAULT_REPORT_DIR})",
    )
    m.set_defaults(func=_cmd_report_merge)


# ------------------------------------------------------------------- replay


def _cmd_replay(args: argparse.Namespace) -> int:
    import racecheck
    from racecheck.loader import _load_with_files, display_path, parse_selector, select
    from racecheck.schedule import Schedule, token_label_matches

    token = _read_token(args.token)
    # Decoded here, before any scenario is imported: a bad token costs nothing
    # more, and every later look-up reuses this decoding.
    Schedule.decode(token)
    sel = parse_selector(args.scenario)
    loaded = _load_with_files(sel.path)
    files = {id(s): f for s, f in loaded}
    picked = select([s for s, _ in loaded], sel.name, sel.variant, where=display_path(sel.path))
    candidates = [(s, v) for s, variants in picked for v in variants]
    recorded_on: str | None = None
    if sel.variant is None or len(candidates) > 1:
        matching = [(s, v) for s, v in candidates if token_label_matches(token, s.label(v))]
        if not matching:
            labels = ", ".join(s.label(v) for s, v in candidates)
            raise UsageError(
                f"the token was not recorded for any variant of {args.scenario} ({labels})"
            )
        candidates = matching[:1]
    scen, variant = candidates[0]
    label = scen.label(variant)
    if not token_label_matches(token, label):
        # A variant named explicitly, with a token recorded on another variant of
        # the same scenario: replay that schedule against this variant (does the
        # fix hold on the schedule that broke the buggy code?).
        others = [w for w in scen.variants if token_label_matches(token, scen.label(w))]
        if not others:
            raise UsageError(
                f"the token was not recorded for {label} nor for any other variant of {scen.name}"
            )
        recorded_on = scen.label(others[0])
    options = {k: v for k, v in scen.check_options(variant).items() if k not in _EXPLORATION_ONLY}
    if args.detect:
        options["detect"] = True
    extra = trace_packages_of(args.trace_packages)
    if extra:
        options["trace_packages"] = [*options.get("trace_packages", ()), *extra]
    selector = f"{display_path(files[id(scen)])}::{scen.name}[{variant}]"
    what = label if recorded_on is None else f"{label} (schedule recorded on {recorded_on})"
    try:
        racecheck.replay(
            scen.variants[variant].target, token, label=recorded_on or label, **options
        )
    except racecheck.RaceFound as exc:
        exc.replay_hint = replay_command(selector, token, bool(options.get("detect")), extra)
        sys.stdout.write(f"replaying {safe(what)}\n{exc.render()}\n")
        return EXIT_FAILED
    except DivergenceError as exc:
        if recorded_on is None:
            raise
        raise UsageError(
            f"the schedule recorded on {recorded_on} does not apply to {label}: {one_line_of(exc)}"
        ) from None
    sys.stdout.write(
        f"racecheck: the schedule ran to completion on {safe(what)} without failing:"
        " the failure does not reproduce on this code\n"
    )
    return EXIT_OK


def _read_token(text: str) -> str:
    """The token argument, or the token read from stdin when it is ``-``.

    One command-line argument is limited (128 KB on Linux), so long tokens can
    be piped in. Reading stops just past the cap: a huge input is not slurped.
    """
    from racecheck.schedule import MAX_TOKEN_CHARS

    if text != "-":
        return text.strip()
    data = sys.stdin.read(MAX_TOKEN_CHARS + 65)
    if len(data) > MAX_TOKEN_CHARS + 64:
        raise UsageError(
            f"malformed schedule token: more than the {MAX_TOKEN_CHARS} characters"
            " a schedule token can have"
        )
    return data.strip()


def _add_replay(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="run exactly one schedule of a scenario again",
        description=(
            "Replay a schedule token. Exit 1 when the failure reproduces, 0 when the schedule"
            " runs clean, 2 when the token is malformed or was made for something else."
        ),
    )
    p.add_argument("scenario", metavar="SCENARIO", help="FILE, FILE::NAME or FILE::NAME[VARIANT]")
    p.add_argument(
        "token", metavar="TOKEN", help="the schedule token (rc1:...), or - to read it from stdin"
    )
    p.add_argument(
        "--detect",
        action="store_true",
        help="replay with the race detector on (for tokens a --detect run printed)",
    )
    p.add_argument("--trace-packages", action="append", metavar="NAMES", help=TRACE_HELP)
    p.set_defaults(func=_cmd_replay)


# --------------------------------------------------------------------- list


def _describe_options(options: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in options.items())


def _cmd_list(args: argparse.Namespace) -> int:
    from racecheck.loader import display_path

    selections = resolve_selections(args.paths)
    out = sys.stdout
    if args.json:
        data = []
        for sel in selections:
            s = sel.scenario
            data.append(
                {
                    "name": s.name,
                    "file": display_path(sel.file),
                    "issue": s.issue,
                    "description": s.description,
                    "invariants": list(s.invariants),
                    "variants": [
                        {
                            "name": v,
                            "expect": s.variants[v].expect,
                            "summary": s.variants[v].summary,
                            "selector": sel.selector(v),
                        }
                        for v in sel.variants
                    ],
                }
            )
        json.dump(data, out, indent=2)
        out.write("\n")
        return EXIT_OK
    blocks = []
    for sel in selections:
        s = sel.scenario
        head = s.name + (f"  ({s.issue})" if s.issue else "") + f"  {display_path(sel.file)}"
        lines = [head]
        if s.description:
            lines.append(f"  {s.description}")
        if s.options:
            lines.append(f"  options: {_describe_options(dict(s.options))}")
        if s.invariants:
            lines.append("  invariants:")
            lines += [f"    - {inv}" for inv in s.invariants]
        lines.append("  variants:")
        width = max(len(terminal_safe(v)) for v in sel.variants)
        for v in sel.variants:
            var = s.variants[v]
            extra = f"  [{_describe_options(dict(var.options))}]" if var.options else ""
            text = f"    {terminal_safe(v):<{width}}  expect {var.expect:<8}  {var.summary}{extra}"
            lines.append(text.rstrip())
        blocks.append("\n".join(lines))
    # One pass over everything: names, descriptions, invariants and summaries
    # are all user text.
    out.write(terminal_safe("\n\n".join(blocks)) + "\n")
    return EXIT_OK


def _add_list(sub: Any) -> None:
    p = sub.add_parser(
        "list",
        help="list scenarios, their variants, expectations and invariants",
        description="List scenarios. PATH may be FILE::NAME or FILE::NAME[VARIANT].",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help=f"default: {DEFAULT_PATH}")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_list)


# -------------------------------------------------------------------- bench


def _add_bench(sub: Any) -> None:
    """``racecheck bench``: overhead and schedules-to-first-failure (:mod:`racecheck.bench`)."""
    from racecheck import bench

    p = sub.add_parser(
        "bench",
        help="measure racecheck's overhead and schedules-to-first-failure",
        description="Measure racecheck's overhead and how fast each strategy finds each race.",
    )
    bench.add_arguments(p)
    p.set_defaults(func=bench.run)


def _add_stress(sub: Any) -> None:
    """``racecheck stress``: defined in :mod:`racecheck.cli_stress`."""
    from racecheck.cli_stress import add_parser

    add_parser(sub)


#: every subcommand, registered in this order
def _add_lint(sub: Any) -> None:
    from racecheck.lint.cli import add_parser

    add_parser(sub)


_DETECT_HELP = (
    "also run the race detector: report atomicity violations across scheduling points"
    " and unsynchronised conflicting accesses, even where no assertion fails"
)

COMMANDS: list[Callable[[Any], None]] = [
    _add_run,
    _add_replay,
    _add_list,
    _add_bench,
    _add_lint,
    _add_report,
]
COMMANDS.append(_add_stress)


def build_parser() -> argparse.ArgumentParser:
    import racecheck

    parser = _Parser(
        prog="racecheck",
        description="Find, replay and pin down concurrency bugs in race scenarios.",
        epilog="exit codes: 0 expectations met, 1 violation or unmet expectation, 2 usage error",
    )
    parser.add_argument("--version", action="version", version=f"racecheck {racecheck.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for register in COMMANDS:
        register(sub)
    return parser


def _pin_hash_seed() -> None:
    """Re-run this command with ``PYTHONHASHSEED=0`` unless the caller chose one.

    The order of a set of strings depends on the process's hash seed. A token
    found by ``racecheck run`` and replayed by ``racecheck replay`` in another
    process must see the same order, or code that iterates such a set would
    take another path and the replay would diverge.
    """
    if os.environ.get("PYTHONHASHSEED") is not None:
        return
    env = dict(os.environ, PYTHONHASHSEED="0")
    try:
        os.execve(sys.executable, [sys.executable, "-m", "racecheck", *sys.argv[1:]], env)
    except OSError:
        pass  # carry on unpinned rather than fail


def _forgiving_streams() -> None:
    """Print what the terminal cannot encode as ``\\u....`` instead of crashing.

    User text is escaped before printing (:mod:`racecheck.textsafe`); this is
    the net under it, for a terminal whose encoding lacks a character (✓ on an
    ASCII locale, say): a report must not die half-printed.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``racecheck`` console script; returns the exit code."""
    if argv is None:
        _pin_hash_seed()
        import racecheck.loader

        # This process is ours: an import that ignores its interruption ends it
        # with exit 2 and a message rather than hanging.
        racecheck.loader.HARD_DEADLINE = True
    _forgiving_streams()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        code: int = args.func(args)
        return code
    except UsageError as exc:
        print_error(one_line_of(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("racecheck: interrupted\n")
        return EXIT_USAGE
    except BrokenPipeError:
        # `racecheck list | head`: stop quietly
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
