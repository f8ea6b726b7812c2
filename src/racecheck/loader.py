"""Find scenario files, import them, and pick scenarios/variants out of them.

A scenario file is a plain Python module that binds one or more
:class:`racecheck.Scenario` objects at module level. Files are imported with
:mod:`importlib` under a name derived from their absolute path, so two
``scenarios/*.py`` files with the same stem (in different folders) never
collide, and a scenario file never shadows an installed module.

Selectors (as given to ``racecheck run``, ``list`` and ``replay``)::

    scenarios/                      every *.py in the folder (not starting with "_")
    scenarios/changeset.py          every scenario in the file
    scenarios/changeset.py::NAME    one scenario (by its ``name``)
    scenarios/changeset.py::NAME[buggy]
    scenarios/changeset.py::[buggy] one variant of the file's only scenario

Every problem is reported as a one-line :class:`racecheck.errors.UsageError`.

Importing a file runs its code, and that code can do anything. Three guards
keep a broken file from ending a run silently or hanging it:

* any exception it raises, ``BaseException`` subclasses and ``SystemExit``
  included (only a real Ctrl-C passes), becomes a UsageError naming the file;
* ``os._exit`` is replaced while the file imports, so a call becomes a
  UsageError instead of ending the process with no output (and the original
  is put back afterwards);
* an import that does not return within ``RACECHECK_IMPORT_TIMEOUT`` seconds
  (default 30) is interrupted (SIGALRM, main thread on POSIX) and reported.
  In the CLI a second, harder deadline a few seconds later ends the process
  with exit 2 for code that swallows the interruption.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, NoReturn

from racecheck.errors import UsageError, one_line
from racecheck.scenario import Scenario

__all__ = [
    "Selection",
    "Selector",
    "display_path",
    "import_file",
    "load_scenarios",
    "parse_selector",
    "resolve",
    "select",
]

_MODULE_PREFIX = "_racecheck_scenario"
DEFAULT_IMPORT_TIMEOUT = 30.0
#: set by the CLI: also end the process if an import ignores the interruption
HARD_DEADLINE = False


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it is below it."""
    p = Path(path)
    try:
        # The parent only: the name itself may be a link (shown as it was given,
        # even when it loops or dangles).
        rel = (p.absolute().parent.resolve() / p.name).relative_to(Path.cwd().resolve())
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
        return str(p)
    return rel.as_posix()


def _check_path(p: Path) -> None:
    """Refuse a path that does not exist or cannot be followed (a symlink loop)."""
    shown = display_path(p)
    try:
        exists = p.exists()
        if not exists and p.is_symlink():
            p.resolve(strict=True)  # raises: a loop, or where the link points is gone
    except RuntimeError:
        raise UsageError(f"cannot follow {shown}: a symlink loop") from None
    except OSError as exc:
        reason = "a symlink loop" if "loop" in str(exc).lower() else exc.strerror or str(exc)
        raise UsageError(f"cannot follow {shown}: {reason}") from None
    if not exists:
        raise UsageError(f"no such file or directory: {shown}")


def import_timeout() -> float:
    """Seconds a scenario file may take to import (``RACECHECK_IMPORT_TIMEOUT``)."""
    text = os.environ.get("RACECHECK_IMPORT_TIMEOUT", "")
    if not text:
        return DEFAULT_IMPORT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        raise UsageError(
            f"RACECHECK_IMPORT_TIMEOUT must be a number of seconds, not {text!r}"
        ) from None
    if value <= 0:
        raise UsageError(f"RACECHECK_IMPORT_TIMEOUT must be positive, not {text!r}")
    return value


class _ExitCalled(BaseException):
    """``os._exit`` called by a file being imported."""

    def __init__(self, status: object) -> None:
        super().__init__(status)
        self.status = status


class _ImportTimedOut(BaseException):
    """The import ran past its deadline (raised from the SIGALRM handler)."""


def _timeout_message(shown: str, seconds: float) -> str:
    return (
        f"cannot import {shown}: the import did not finish within {seconds:g} s"
        " (set RACECHECK_IMPORT_TIMEOUT to allow longer)"
    )


@contextlib.contextmanager
def _guarded_import(shown: str) -> Iterator[None]:
    """Run a file's top level with ``os._exit`` disarmed and a deadline."""
    seconds = import_timeout()
    real_exit = os._exit

    def refuse_exit(status: int) -> NoReturn:
        raise _ExitCalled(status)

    alarm = (
        threading.current_thread() is threading.main_thread()
        and hasattr(signal, "setitimer")
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )
    previous_handler: Any = None
    if alarm:

        def on_alarm(signum: int, frame: FrameType | None) -> None:
            raise _ImportTimedOut()

        previous_handler = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    hard: threading.Timer | None = None
    if HARD_DEADLINE:

        def give_up() -> None:
            # The file swallowed the interruption (or blocks where no signal
            # reaches): the run cannot go on, but it must not end silently.
            sys.stderr.write(f"racecheck: error: {_timeout_message(shown, seconds)}\n")
            sys.stderr.flush()
            real_exit(2)

        hard = threading.Timer(seconds + 5.0, give_up)
        hard.daemon = True
        hard.start()
    os._exit = refuse_exit
    try:
        yield
    finally:
        os._exit = real_exit
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_handler)
        if hard is not None:
            hard.cancel()


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    return f"{_MODULE_PREFIX}_{stem}_{digest}"


def import_file(path: str | os.PathLike[str]) -> ModuleType:
    """Import one Python file under a unique module name.

    The file's folder is on ``sys.path`` while it imports, so it can import its
    neighbours. Any exception it raises becomes a one-line UsageError.
    """
    p = Path(path)
    shown = display_path(p)
    _check_path(p)
    if not p.is_file():
        raise UsageError(f"not a file: {shown}")
    resolved = p.resolve()
    name = _module_name(resolved)
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {shown}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(resolved.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    # dataclasses, pickle and typing look the module up in sys.modules while it runs
    sys.modules[name] = module
    seconds = import_timeout()
    try:
        with _guarded_import(shown):
            spec.loader.exec_module(module)
    except KeyboardInterrupt:
        sys.modules.pop(name, None)
        raise
    except _ExitCalled as exc:
        sys.modules.pop(name, None)
        raise UsageError(
            f"cannot import {shown}: it called os._exit({exc.status!r}) while being imported"
        ) from None
    except _ImportTimedOut:
        sys.modules.pop(name, None)
        raise UsageError(_timeout_message(shown, seconds)) from None
    except BaseException as exc:  # SystemExit, GeneratorExit, custom BaseExceptions
        sys.modules.pop(name, None)
        raise UsageError(f"cannot import {shown}: {_one_line(exc)}") from None
    finally:
        if added:
            try:
                sys.path.remove(folder)
            except ValueError:
                pass
    return module


def _one_line(exc: BaseException) -> str:
    return one_line(exc)


def scenarios_in(module: ModuleType) -> list[Scenario]:
    """The module-level Scenario objects of a module, in definition order."""
    found: list[Scenario] = []
    seen: set[int] = set()
    for value in vars(module).values():
        if isinstance(value, Scenario) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    return found


def _files_in(folder: Path) -> list[Path]:
    files = []
    for f in sorted(folder.glob("*.py"), key=lambda f: f.name):
        if f.name.startswith("_"):
            continue
        if f.is_symlink() and not f.exists():
            _check_path(f)  # a loop or a dangling link: say so rather than skip it
        if f.is_file():
            files.append(f)
    return files


def load_scenarios(path: str | os.PathLike[str]) -> list[Scenario]:
    """Every scenario in a file, or in every ``*.py`` file of a folder (sorted).

    A file given by name must define at least one scenario; a file found in a
    folder that defines none (a helper module) is skipped.
    """
    return [s for s, _ in _load_with_files(path)]


def _load_with_files(path: str | os.PathLike[str]) -> list[tuple[Scenario, Path]]:
    p = Path(path)
    shown = display_path(p)
    _check_path(p)
    if p.is_dir():
        out: list[tuple[Scenario, Path]] = []
        for f in _files_in(p):
            out.extend((s, f) for s in scenarios_in(import_file(f)))
        return out
    if p.suffix != ".py":
        raise UsageError(f"not a Python file: {shown}")
    found = scenarios_in(import_file(p))
    if not found:
        raise UsageError(f"{shown} defines no racecheck.Scenario at module level")
    return [(s, p) for s in found]


# ---------------------------------------------------------------- selectors


@dataclass(frozen=True)
class Selector:
    """``path``, ``path::name``, ``path::name[variant]`` or ``path::[variant]``."""

    path: str
    name: str | None = None
    variant: str | None = None

    def __str__(self) -> str:
        out = self.path
        if self.name is not None or self.variant is not None:
            out += "::" + (self.name or "")
        if self.variant is not None:
            out += f"[{self.variant}]"
        return out


_TAIL = re.compile(r"^(?P<name>[^\[\]]*)(?:\[(?P<variant>[^\[\]]+)\])?$")


def parse_selector(text: str) -> Selector:
    """Split a selector into path, scenario name and variant."""
    if "::" in text:
        path, _, tail = text.partition("::")
        m = _TAIL.match(tail)
        if not path or m is None or (not m["name"] and not m["variant"]):
            raise UsageError(f"bad selector {text!r}: expected PATH::NAME or PATH::NAME[VARIANT]")
        return Selector(path, m["name"] or None, m["variant"])
    # PATH[VARIANT] when the literal path does not exist
    m = re.match(r"^(?P<path>.+?)\[(?P<variant>[^\[\]]+)\]$", text)
    if m and not os.path.exists(text) and os.path.exists(m["path"]):
        return Selector(m["path"], None, m["variant"])
    return Selector(text)


@dataclass
class Selection:
    """One scenario picked by a selector, with the variants to use, in order."""

    scenario: Scenario
    variants: list[str]
    file: Path

    def selector(self, variant: str) -> str:
        """A selector that names exactly this variant (for replay commands)."""
        return f"{display_path(self.file)}::{self.scenario.name}[{variant}]"


def select(
    scenarios: Sequence[Scenario] | Iterable[Scenario],
    name: str | None = None,
    variant: str | None = None,
    *,
    where: str = "",
) -> list[tuple[Scenario, list[str]]]:
    """Pick scenarios by exact name and variants by exact name.

    ``name=None`` keeps every scenario; ``variant=None`` keeps every variant.
    A name or variant that matches nothing is a UsageError that lists what exists.
    """
    pool = list(scenarios)
    suffix = f" in {where}" if where else ""
    if name is not None:
        chosen = [s for s in pool if s.name == name]
        if not chosen:
            names = ", ".join(s.name for s in pool) or "none"
            raise UsageError(f"no scenario named {name!r}{suffix} (scenarios: {names})")
    else:
        chosen = pool
    out: list[tuple[Scenario, list[str]]] = []
    for s in chosen:
        if variant is None:
            out.append((s, list(s.variants)))
        elif variant in s.variants:
            out.append((s, [variant]))
    if variant is not None and not out:
        known = sorted({v for s in chosen for v in s.variants})
        raise UsageError(f"no variant {variant!r}{suffix} (variants: {', '.join(known) or 'none'})")
    return out


def resolve(specs: Sequence[str]) -> list[Selection]:
    """Resolve selectors to scenarios; duplicate scenario names are an error."""
    selections: list[Selection] = []
    by_name: dict[str, Path] = {}
    for spec in specs:
        sel = parse_selector(spec)
        loaded = _load_with_files(sel.path)
        files = {id(s): f for s, f in loaded}
        picked = select([s for s, _ in loaded], sel.name, sel.variant, where=display_path(sel.path))
        for scen, variants in picked:
            f = files[id(scen)]
            other = by_name.get(scen.name)
            if other is not None:
                if other.resolve() == f.resolve():
                    # the same file named twice: merge the variants
                    for existing in selections:
                        if existing.scenario.name == scen.name:
                            existing.variants += [v for v in variants if v not in existing.variants]
                    continue
                raise UsageError(
                    f"two scenarios are named {scen.name!r}: in {display_path(other)}"
                    f" and {display_path(f)}"
                )
            by_name[scen.name] = f
            selections.append(Selection(scen, variants, f))
    return selections
