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
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

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


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it is below it."""
    p = Path(path)
    try:
        rel = p.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return str(p)
    return rel.as_posix()


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
    if not p.exists():
        raise UsageError(f"no such file or directory: {shown}")
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
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
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
    return sorted(
        (f for f in folder.glob("*.py") if f.is_file() and not f.name.startswith("_")),
        key=lambda f: f.name,
    )


def load_scenarios(path: str | os.PathLike[str]) -> list[Scenario]:
    """Every scenario in a file, or in every ``*.py`` file of a folder (sorted).

    A file given by name must define at least one scenario; a file found in a
    folder that defines none (a helper module) is skipped.
    """
    return [s for s, _ in _load_with_files(path)]


def _load_with_files(path: str | os.PathLike[str]) -> list[tuple[Scenario, Path]]:
    p = Path(path)
    shown = display_path(p)
    if not p.exists():
        raise UsageError(f"no such file or directory: {shown}")
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
