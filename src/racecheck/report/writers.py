"""Write every requested report format, each file atomically.

A report is often read by something else while (or after) a run is killed: a CI
step that uploads ``reports/``, a browser left open on ``index.html``. So no
writer ever opens the final path for writing. Each file is written to a temp
file in the same directory, flushed and fsynced, then moved over the final name
with :func:`os.replace` (atomic on POSIX and Windows). A killed run leaves
either the previous report or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from racecheck.errors import UsageError

if TYPE_CHECKING:
    from racecheck.report import RunRecord

#: format name -> report file name, in the order they are written
FILENAMES: dict[str, str] = {
    "json": "racecheck.json",
    "junit": "racecheck.xml",
    "html": "index.html",
}


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old file or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; a report is meant to be read (CI artifacts, browsers).
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Persist the rename itself (POSIX only; a no-op where directories can't be opened)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_report_dir(directory: str | os.PathLike[str]) -> Path:
    """Refuse a report directory that cannot be written, before any exploring.

    Finding out after an hour of exploration that ``reports`` is a file is too
    late. The directory itself is not created here (a run that is interrupted
    leaves nothing behind): the nearest existing ancestor is checked instead,
    by creating and removing a temp file in it -- ``os.access`` lies under root
    and on some network file systems.
    """
    text = os.fspath(directory)
    if not text or not text.strip():
        raise UsageError("the report directory is empty: name a directory (or use --no-report)")
    path = Path(text)
    probe = path
    try:
        while not probe.exists():
            if probe.is_symlink():
                raise UsageError(f"report directory {text!r}: {str(probe)!r} is a broken link")
            parent = probe.parent
            if parent == probe:
                break
            probe = parent
        if not probe.is_dir():
            if probe == path:
                raise UsageError(f"report directory {text!r} exists and is not a directory")
            raise UsageError(
                f"report directory {text!r} cannot be made: {str(probe)!r} is not a directory"
            )
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".racecheck-probe-", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except UsageError:
        raise
    except (OSError, RuntimeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"cannot write reports to {text!r}: {reason}") from None
    return path


def utc_now() -> datetime:
    """The report's creation time: one instant shared by every format of a run."""
    return datetime.now(UTC).replace(microsecond=0)


def _renderers() -> dict[str, Callable[[Sequence[RunRecord], datetime], str]]:
    from racecheck.report.html import render_html
    from racecheck.report.json_report import render_json
    from racecheck.report.junit import render_junit

    return {"json": render_json, "junit": render_junit, "html": render_html}


def write_all(
    records: Sequence[RunRecord],
    directory: Path,
    formats: Sequence[str] = tuple(FILENAMES),
    *,
    created: datetime | None = None,
) -> list[Path]:
    """Render ``records`` in each of ``formats`` into ``directory``; return the paths.

    Every format is rendered before anything is written, so a bug in one
    renderer cannot leave a directory with a fresh JSON next to a stale HTML.
    """
    unknown = [f for f in formats if f not in FILENAMES]
    if unknown:
        raise UsageError(
            f"unknown report format {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(FILENAMES)}"
        )
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"report directory {str(directory)!r} exists and is not a directory")
    when = created or utc_now()
    renderers = _renderers()
    wanted = list(dict.fromkeys(formats))
    # Lone surrogates (undecodable bytes smuggled through surrogateescape) cannot be
    # UTF-8: write them as \udcXX, a valid JSON escape; HTML/XML renderers drop them.
    rendered = {
        fmt: renderers[fmt](records, when).encode("utf-8", "backslashreplace") for fmt in wanted
    }
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in wanted:
        path = directory / FILENAMES[fmt]
        atomic_write(path, rendered[fmt])
        written.append(path)
    return written
