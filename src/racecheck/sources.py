"""Which source files are "user code" (traced, shown in traces) and which are not.

Library and stdlib code runs without scheduling points unless asked: a switch
inside ``logging`` or ``json`` is noise for the person reading the trace, and
tracing it would cost most of the run time. racecheck's own engine is library
code; its reference components and benchmark workloads (``racecheck/reference``,
``racecheck/bench``) are user code, since they model users' programs.

*Where* code lives does not decide what is under test, though. A project
installed non-editable (what tox and nox do) sits in site-packages, and so does
the library a test was written to exercise. So each exploration also traces
the **code under test** (:func:`code_under_test`): the package that defines the
target, and the third-party packages the target's module imports directly (a
test that imports ``filelock`` is testing filelock), never their own
dependencies, the stdlib, or test frameworks. ``trace_packages`` adds more, by
module, distribution or directory name. The set is scoped to one exploration
(:func:`tracing`), never left behind for the next.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import linecache
import os
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_RACECHECK_DIR = os.path.dirname(os.path.abspath(__file__))
#: racecheck's own modules that model *users'* programs, so they are traced
_USER_DIRS = tuple(os.path.join(_RACECHECK_DIR, d) + os.sep for d in ("reference", "bench"))
_LIBRARY_DIRS: tuple[str, ...] = tuple(
    sorted(
        {
            os.path.abspath(path) + os.sep
            for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if (path := sysconfig.get_paths().get(key))
        }
    )
)
#: directories (with a trailing separator) and files traced by this exploration
_extra_user_dirs: tuple[str, ...] = ()
_extra_user_files: frozenset[str] = frozenset()

#: packages that run the test rather than being tested: never traced by default
_FRAMEWORKS = frozenset(
    {
        "_pytest",
        "pytest",
        "pluggy",
        "racecheck",
        "hypothesis",
        "_hypothesis_globals",
        "_hypothesis_pytestplugin",
        "trio",
        "anyio",
        "sniffio",
        "outcome",
        "exceptiongroup",
        "pytest_asyncio",
        "pytest_trio",
        "xdist",
        "execnet",
        "coverage",
        "pytest_cov",
        "typing_extensions",
        "attr",
        "attrs",
        "sortedcontainers",
        "iniconfig",
        "packaging",
        "nox",
    }
)


@contextlib.contextmanager
def tracing(paths: Iterable[str]) -> Iterator[None]:
    """Trace ``paths`` (package directories or module files) as user code, for one block."""
    global _extra_user_dirs, _extra_user_files
    saved = _extra_user_dirs, _extra_user_files
    dirs, files = [], []
    for path in paths:
        path = os.path.abspath(path)
        if os.path.isdir(path):
            dirs.append(path.rstrip(os.sep) + os.sep)  # /a/pkg must not match /a/pkg2
        else:
            files.append(path)
    _extra_user_dirs = tuple(sorted(set(dirs)))
    _extra_user_files = frozenset(files)
    is_user_file.cache_clear()
    try:
        yield
    finally:
        _extra_user_dirs, _extra_user_files = saved
        is_user_file.cache_clear()


def _location(module_name: str) -> list[str]:
    """The directory of a package, or the file of a module, without importing it anew."""
    module = sys.modules.get(module_name)
    if module is not None:
        paths = list(getattr(module, "__path__", None) or ())
        if paths:
            return [str(p) for p in paths]
        file = getattr(module, "__file__", None)
        return [file] if isinstance(file, str) else []
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [str(p) for p in spec.submodule_search_locations]
    return [spec.origin] if spec.origin and os.path.exists(spec.origin) else []


def _distribution_tops(name: str) -> list[str]:
    """Top-level import names of an installed distribution ("python-dateutil" → dateutil)."""
    # Imported here, for the one option that names a distribution: at module
    # level it added about 3,600 objects (email, zipfile, csv...) to every
    # process that checks, and the whole-heap collection a check starts with
    # walks them all (racecheck.session.quiet_gc).
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return []
    tops = (dist.read_text("top_level.txt") or "").split()
    if not tops:
        for file in dist.files or ():
            parts = file.parts
            if parts and parts[0].endswith(".py") and len(parts) == 1:
                tops.append(parts[0][:-3])
            elif len(parts) > 1 and not parts[0].endswith((".dist-info", ".egg-info")):
                if parts[0] != "__pycache__" and not parts[0].endswith(".data"):
                    tops.append(parts[0])
    return sorted(set(tops))


def resolve_trace_packages(names: Iterable[Any]) -> tuple[str, ...]:
    """``trace_packages`` entries → paths: directories, module names or distribution names.

    Raises ValueError naming the entry that is none of those.
    """
    paths: list[str] = []
    for name in names:
        if not isinstance(name, (str, os.PathLike)):
            raise ValueError(f"trace_packages entries are names or paths, not {name!r}")
        text = os.fspath(name)
        if not text:
            raise ValueError("trace_packages has an empty entry")
        if os.path.exists(text):
            paths.append(os.path.abspath(text))
            continue
        found = _location(text) if text.replace(".", "").replace("_", "").isalnum() else []
        if not found:
            for top in _distribution_tops(text):
                found.extend(_location(top))
        if not found:
            raise ValueError(
                f"trace_packages: {text!r} is not a directory, an importable module or an"
                " installed distribution"
            )
        paths.extend(os.path.abspath(p) for p in found)
    return tuple(dict.fromkeys(paths))


def _unwrap(target: Any) -> Any:
    for _ in range(20):
        if isinstance(target, functools.partial):
            target = target.func
        elif isinstance(target, types.MethodType):
            target = target.__func__
        elif hasattr(target, "__wrapped__") and not isinstance(target, type):
            target = target.__wrapped__
        else:
            break
    if not isinstance(target, (types.FunctionType, type)) and callable(target):
        target = type(target)
    return target


def _top_level(module_name: str) -> str:
    return module_name.split(".", 1)[0]


def _is_library_path(path: str) -> bool:
    path = os.path.abspath(path)
    return "site-packages" in path or "dist-packages" in path or path.startswith(_LIBRARY_DIRS)


def _is_stdlib(top: str) -> bool:
    return top in sys.stdlib_module_names or top in sys.builtin_module_names


def code_under_test(target: Callable[..., Any]) -> tuple[str, ...]:
    """Installed code the target exercises, which the default rules would leave untraced.

    The package that defines the target when it is installed (a project
    installed non-editable), and every third-party package its module imports
    directly. Only packages in site-packages are returned: files elsewhere are
    user code already.
    """
    func = _unwrap(target)
    module_name = getattr(func, "__module__", None)
    if not isinstance(module_name, str):
        return ()
    module = sys.modules.get(module_name)
    tops: set[str] = {_top_level(module_name)}
    namespace = getattr(module, "__dict__", None)
    if isinstance(namespace, dict):
        for value in list(namespace.values()):
            if isinstance(value, types.ModuleType):
                tops.add(_top_level(value.__name__))
                continue
            owner = getattr(value, "__module__", None) if _is_definition(value) else None
            if isinstance(owner, str):
                tops.add(_top_level(owner))
    paths: list[str] = []
    for top in sorted(tops):
        if top in _FRAMEWORKS or _is_stdlib(top) or top == "__main__":
            continue
        for path in _location(top):
            if _is_library_path(path) and not os.path.abspath(path).startswith(_RACECHECK_DIR):
                paths.append(path)
    return tuple(paths)


def _is_definition(value: Any) -> bool:
    return isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType))


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if _extra_user_dirs and path.startswith(_extra_user_dirs):
        return True
    if path in _extra_user_files:
        return True
    if path.startswith(_USER_DIRS):
        return True
    if path.startswith(_RACECHECK_DIR + os.sep):
        return False
    if "site-packages" in path or "dist-packages" in path:
        return False
    return not path.startswith(_LIBRARY_DIRS)


@functools.lru_cache(maxsize=4096)
def is_third_party_file(filename: str) -> bool:
    """Is ``filename`` installed third-party code: in site-packages, and not racecheck's, a
    test framework's or a dependency of the runtimes racecheck drives (trio's ``outcome``
    and ``sortedcontainers``)? The stdlib and generated code are not. Whether it is traced
    is :func:`is_user_file`'s to say."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    for folder in ("site-packages", "dist-packages"):
        _, found, rest = path.rpartition(os.sep + folder + os.sep)
        if found:
            top = rest.split(os.sep, 1)[0]
            return top.removesuffix(".py") not in _FRAMEWORKS
    return False


def source_line(filename: str, lineno: int) -> str:
    return linecache.getline(filename, lineno).strip()
