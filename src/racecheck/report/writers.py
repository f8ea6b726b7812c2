"""Write the report files as one set, atomically.

A report is often read by something else while (or after) a run is killed: a CI
step that uploads ``reports/``, a browser left open on ``index.html``. So no
writer ever opens a final path for writing, and the three files change
together: a reader sees the whole previous set or the whole new one, never a
new ``racecheck.json`` next to a stale ``index.html``.

How (POSIX): each run writes its files, fsynced, into a fresh hidden set
directory ``.racecheck-set-XXXX/``. ``racecheck.json``, ``racecheck.xml`` and
``index.html`` are fixed symbolic links to ``.racecheck-current/<name>``, and
``.racecheck-current`` is itself a link to the live set. Publishing a set is
one :func:`os.replace` of that link: the single commit point. A disk-full
error or a kill before it leaves the previous set in place; after it, the new
one. The previous set is kept one generation (a reader may have resolved the
link a moment before), older ones are deleted.

Writers hold an exclusive lock (``.racecheck.lock``) while they write, so
anything of ours found under the lock -- a set that was never published,
a ``.tmp`` file -- was left by a writer that died, and is removed.

Where symbolic links are not available (Windows without the privilege), each
file is still replaced atomically, all temp files are written before the
first rename, and the set can only mix if the process dies between renames.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
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
    renderer writes nothing at all.
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
        FILENAMES[fmt]: renderers[fmt](records, when).encode("utf-8", "backslashreplace")
        for fmt in wanted
    }
    directory.mkdir(parents=True, exist_ok=True)
    with _writer_lock(directory):
        _remove_stale(directory)
        if _links_work(directory):
            _publish_set(directory, rendered)
        else:
            _replace_each(directory, rendered)
    return [directory / name for name in rendered]


CURRENT = ".racecheck-current"
_SET_PREFIX = ".racecheck-set-"
_LOCK = ".racecheck.lock"


@contextlib.contextmanager
def _writer_lock(directory: Path) -> Iterator[None]:
    """One writer at a time per directory (advisory; a no-op without ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    fd = os.open(directory / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _is_ours_and_temporary(name: str) -> bool:
    return name.endswith(".tmp") and name.startswith((".racecheck", ".index.html.", f"{CURRENT}."))


def _live_sets(directory: Path) -> set[str]:
    """The published set and the one before it (see :func:`_publish_set`)."""
    live = set()
    for link in (CURRENT, f"{CURRENT}.previous"):
        with contextlib.suppress(OSError):
            live.add(os.readlink(directory / link))
    return live


def _remove_stale(directory: Path) -> None:
    """Remove what dead writers left behind (the caller holds the lock)."""
    live = _live_sets(directory)
    for entry in os.scandir(directory):
        name = entry.name
        with contextlib.suppress(OSError):
            if name.startswith(_SET_PREFIX) and name not in live and not entry.is_symlink():
                shutil.rmtree(entry.path, ignore_errors=True)
            elif _is_ours_and_temporary(name):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)


def _links_work(directory: Path) -> bool:
    if os.name != "posix":
        return False
    return True


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, 0o644)


def _publish_set(directory: Path, rendered: dict[str, bytes]) -> None:
    """Write ``rendered`` as a new set and switch to it with one rename."""
    new_set = Path(tempfile.mkdtemp(dir=directory, prefix=_SET_PREFIX))
    try:
        os.chmod(new_set, 0o755)
        for name, data in rendered.items():
            _write_file(new_set / name, data)
        # Formats not written this time keep their previous content in the new set.
        current = directory / CURRENT
        for name in FILENAMES.values():
            old = current / name
            if name not in rendered and old.is_file():
                try:
                    os.link(old, new_set / name)
                except OSError:
                    shutil.copy2(old, new_set / name)
        _fsync_directory(new_set)
        _adopt_plain_files(directory)
        # The fixed links go in before the commit: until it, each resolves to
        # the previous set (or to nothing in a new directory), never to a mix.
        for name in os.listdir(new_set):
            _link_final_name(directory, name)
        old_current = os.readlink(current) if current.is_symlink() else None
        _point(directory, CURRENT, new_set.name)  # the commit point
    except BaseException:
        shutil.rmtree(new_set, ignore_errors=True)
        raise
    _fsync_directory(directory)
    # Keep one generation back: a reader may have resolved the link just before.
    previous = directory / f"{CURRENT}.previous"
    with contextlib.suppress(OSError):
        retired = os.readlink(previous)
        if retired not in (old_current, new_set.name):
            shutil.rmtree(directory / retired, ignore_errors=True)
    if old_current is not None:
        _point(directory, f"{CURRENT}.previous", old_current)


def _point(directory: Path, link: str, target: str) -> None:
    """Make ``directory/link`` a symbolic link to ``target``, atomically."""
    tmp = directory / f"{link}.{os.urandom(6).hex()}.tmp"
    os.symlink(target, tmp)
    try:
        os.replace(tmp, directory / link)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _link_final_name(directory: Path, name: str) -> None:
    """``directory/name`` -> ``.racecheck-current/name``, unless it already is."""
    path = directory / name
    target = f"{CURRENT}/{name}"
    with contextlib.suppress(OSError):
        if os.readlink(path) == target:
            return
    _point(directory, name, target)


def _adopt_plain_files(directory: Path) -> None:
    """Turn report files written by an older racecheck (plain files) into links.

    Their content first becomes a published set of its own (hard links, no
    copy), so swapping each name for a link never changes what a reader sees;
    only then does the new set replace it, with the one commit rename.
    """
    plain = [
        name
        for name in FILENAMES.values()
        if (directory / name).is_file() and not (directory / name).is_symlink()
    ]
    if not plain:
        return
    old_set = Path(tempfile.mkdtemp(dir=directory, prefix=_SET_PREFIX))
    os.chmod(old_set, 0o755)
    current = directory / CURRENT
    for name in FILENAMES.values():
        source = directory / name if name in plain else current / name
        if source.is_file():
            try:
                os.link(source, old_set / name, follow_symlinks=True)
            except OSError:
                shutil.copy2(source, old_set / name)
    _fsync_directory(old_set)
    _point(directory, CURRENT, old_set.name)
    for name in plain:
        _point(directory, name, f"{CURRENT}/{name}")


def _replace_each(directory: Path, rendered: dict[str, bytes]) -> None:
    """Without links: every temp file first, then one rename each."""
    staged: list[tuple[str, Path]] = []
    try:
        for name, data in rendered.items():
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
            os.close(fd)
            os.unlink(tmp)
            _write_file(Path(tmp), data)
            staged.append((tmp, directory / name))
        for tmp, final in staged:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    _fsync_directory(directory)
