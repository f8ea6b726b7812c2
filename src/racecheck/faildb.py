"""The failure database: failing schedules saved under ``.racecheck/``.

Every failing token a run finds is saved, keyed by what it was found on (a
pytest node id, or a scenario's ``name[variant]``). The next run replays the
saved tokens of a test first, exactly, before exploring: a failure found once
is found again at once, whatever the seed or budget is now (the way
hypothesis's ``.hypothesis/`` example database works).

A saved token that runs clean (the code was fixed) or no longer applies (the
code changed shape) is kept for :data:`KEEP_CLEAN_RUNS` runs, in case the fix
is reverted or the failure is flaky, then dropped. One that fails again starts
counting anew.

Layout: ``<db>/failures/<sha256 of the key, 24 hex>.json``, one small JSON file
per key holding the key itself and its tokens. Each file is written to a
temporary file in the same directory and renamed over the old one, so a crash
or a concurrent pytest-xdist worker (each writes its own keys) never leaves a
half-written file; a file that cannot be parsed is treated as empty, and a
database that cannot be written (read-only, full) is skipped silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_DIR = ".racecheck"
#: runs in a row a saved token may run clean before it is dropped
KEEP_CLEAN_RUNS = 3
OFF = ("none", "off", "no", "false", "0")


class FailureDB:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    @classmethod
    def at(cls, setting: str | None, root: str | os.PathLike[str]) -> FailureDB | None:
        """The database a setting names (relative to ``root``), or None when it is off."""
        if setting is not None and setting.strip().lower() in OFF:
            return None
        return cls(Path(root) / (setting or DEFAULT_DIR))

    def _file(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return self.directory / "failures" / f"{digest}.json"

    def _load(self, key: str) -> dict[str, int]:
        try:
            data: Any = json.loads(self._file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("key") != key:
            return {}  # another key with the same digest prefix: not ours
        entries = data.get("tokens")
        if not isinstance(entries, list):
            return {}
        out: dict[str, int] = {}
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("token"), str):
                clean = entry.get("clean_runs", 0)
                out[entry["token"]] = clean if isinstance(clean, int) else 0
        return out

    def _save(self, key: str, entries: dict[str, int]) -> None:
        # The database is a convenience: a read-only or full disk must not turn
        # a test's verdict into an OSError.
        with contextlib.suppress(OSError):
            self._write(key, entries)

    def _write(self, key: str, entries: dict[str, int]) -> None:
        path = self._file(key)
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "key": key,
            "tokens": [{"token": t, "clean_runs": n} for t, n in entries.items()],
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1)
                fh.write("\n")
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def tokens(self, key: str) -> list[str]:
        """The saved tokens of ``key``, the most recently failing first."""
        entries = self._load(key)
        return sorted(entries, key=lambda token: entries[token])

    def failed(self, key: str, token: str) -> None:
        """``token`` failed: save it (again), its clean count back to zero."""
        entries = self._load(key)
        entries.pop(token, None)
        self._save(key, {token: 0, **entries})

    def ran_clean(self, key: str, token: str) -> bool:
        """``token`` did not fail (or did not apply); True when it was dropped now."""
        entries = self._load(key)
        if token not in entries:
            return False
        entries[token] += 1
        dropped = entries[token] >= KEEP_CLEAN_RUNS
        if dropped:
            del entries[token]
        self._save(key, entries)
        return dropped
