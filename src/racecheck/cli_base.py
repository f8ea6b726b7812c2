"""What every ``racecheck`` command shares: exit codes, argument types, one-line text.

Kept apart from :mod:`racecheck.cli` so that the commands defined in their
own modules (``stress``, ``run -j``'s workers through
:mod:`racecheck.variant_run`) import these from below instead of importing
the command line that registers them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from typing import TextIO

from racecheck.errors import UsageError, one_line
from racecheck.textsafe import terminal_safe

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DEFAULT_PATH = "scenarios/"


def shell_quote(text: str) -> str:
    """Quote for a POSIX shell (always for selectors with brackets: zsh globs)."""
    return shlex.quote(text)


def check_marks(stream: TextIO) -> tuple[str, str]:
    enc = getattr(stream, "encoding", None) or "ascii"
    try:
        "✓✗".encode(enc)
    except (UnicodeEncodeError, LookupError):
        return "ok", "FAIL"
    return "✓", "✗"


def one_line_of(exc: BaseException) -> str:
    return one_line(exc, named=not isinstance(exc, UsageError))


def safe(text: object) -> str:
    """One line of user text, fit for the terminal (see :mod:`racecheck.textsafe`)."""
    return terminal_safe(text, one_line=True)


def print_error(message: str) -> None:
    sys.stderr.write(f"racecheck: error: {safe(message)}\n")


TRACE_HELP = (
    "also trace these installed packages as code under test: module names, distribution names"
    " or directories, comma-separated (the package defining each target and the packages its"
    " module imports are traced already)"
)


def replay_command(
    selector: str, token: str, detect: bool = False, trace_packages: Sequence[str] = ()
) -> str:
    flag = " --detect" if detect else ""
    if trace_packages:
        # traced code has scheduling points: the token means this traced set
        flag += f" --trace-packages {shell_quote(','.join(trace_packages))}"
    return f"racecheck replay {shell_quote(selector)} {shell_quote(token)}{flag}"


def trace_packages_of(values: Sequence[str] | None) -> list[str]:
    """``--trace-packages a,b --trace-packages c`` → ["a", "b", "c"]."""
    from racecheck.config import parse

    return list(parse("trace_packages", list(values or ()), "--trace-packages"))


def int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    value = int_arg(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_int(text: str) -> int:
    value = int_arg(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None


def seconds_arg(text: str) -> float:
    value = _seconds(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text!r}")
    return value


def positive_seconds_arg(text: str) -> float:
    value = _seconds(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text!r}")
    return value
