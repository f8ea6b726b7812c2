"""A check imports only what it runs on.

Every ``check`` starts with a collection of the whole heap (``quiet_gc``: no
garbage may be frozen for the exploration), so each module a check imports
for nothing is walked at every check of the process. ``importlib.metadata``
(with email, zipfile, csv and pathlib behind it) was about 3,600 objects, a
sixth of a small process's heap, imported for the one option that names a
distribution (``trace_packages``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PROGRAM = textwrap.dedent(
    """
    import asyncio
    import sys

    import racecheck

    async def target():
        lock = asyncio.Lock()

        async def bump():
            async with lock:
                await asyncio.sleep(0)

        await asyncio.gather(bump(), bump())

    racecheck.check(target, strategy="random", schedules=5, seed=0)
    print("importlib.metadata" in sys.modules)
    """
)


def test_a_check_does_not_import_importlib_metadata() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
