"""Which source files are "user code" (traced, shown in traces) and which are not.

Library and stdlib code runs without scheduling points unless asked: a switch
inside ``logging`` or ``json`` is noise for the person reading the trace, and
tracing it would cost most of the run time. racecheck's own engine is library
code; its reference components and benchmark workloads (``racecheck/reference``,
``racecheck/bench``) are user code, since they model users' programs.
"""

from __future__ import annotations

import functools
import linecache
import os
import sysconfig

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
_extra_user_prefixes: tuple[str, ...] = ()


def include_packages(prefixes: tuple[str, ...]) -> None:
    """Treat these directories (e.g. an installed package you want traced) as user code."""
    global _extra_user_prefixes
    _extra_user_prefixes = tuple(os.path.abspath(p) for p in prefixes)
    is_user_file.cache_clear()


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if _extra_user_prefixes and path.startswith(_extra_user_prefixes):
        return True
    if path.startswith(_USER_DIRS):
        return True
    if path.startswith(_RACECHECK_DIR + os.sep):
        return False
    if "site-packages" in path or "dist-packages" in path:
        return False
    return not path.startswith(_LIBRARY_DIRS)


def source_line(filename: str, lineno: int) -> str:
    return linecache.getline(filename, lineno).strip()
