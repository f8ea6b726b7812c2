"""The code under test is traced wherever it is installed, and a blind run says so.

A package written under a ``site-packages`` directory stands for a project
installed non-editable (what tox and nox do): racecheck used to treat it as
library code, give it no scheduling points, and pass its racy code silently.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import racecheck
from racecheck.sources import code_under_test, is_user_file, resolve_trace_packages

RACY_PACKAGE = """
class Counter:
    def __init__(self):
        self.value = 0

    def bump(self):
        seen = self.value
        self.value = seen + 1
"""

SAFE_PACKAGE = """
import threading

class Counter:
    def __init__(self):
        self.value = 0
        self._lock = threading.Lock()

    def bump(self):
        with self._lock:
            seen = self.value
            self.value = seen + 1
"""


@pytest.fixture
def site_packages(tmp_path: Path) -> Iterator[Path]:
    site = tmp_path / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))


def install(site: Path, source: str) -> str:
    name = f"installed_{uuid.uuid4().hex[:8]}"
    (site / name).mkdir()
    (site / name / "__init__.py").write_text(textwrap.dedent(source))
    importlib.import_module(name)
    return name


def user_module(tmp_path: Path, package: str, body: str) -> ModuleType:
    """A test module (user code) that imports the installed package."""
    name = f"test_uses_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(f"import threading\nimport {package}\n{body}")
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


TWO_BUMPS = """
def target():
    counter = {package}.Counter()
    threads = [threading.Thread(target=counter.bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.value == 2, counter.value
"""


def test_installed_package_imported_by_the_test_is_traced(
    site_packages: Path, tmp_path: Path
) -> None:
    package = install(site_packages, RACY_PACKAGE)
    module = user_module(tmp_path, package, TWO_BUMPS.format(package=package))
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(module.target, strategy="random", schedules=200)
    assert "counter.value == 2" in str(found.value) or "1" in str(found.value.cause)


def test_fixed_installed_package_runs_clean_and_exhausts(
    site_packages: Path, tmp_path: Path
) -> None:
    package = install(site_packages, SAFE_PACKAGE)
    module = user_module(tmp_path, package, TWO_BUMPS.format(package=package))
    report = racecheck.check(
        module.target, strategy="exhaustive", schedules=5000, preemption_bound=2
    )
    assert report.exhausted
    assert report.warnings == []


def test_tracing_is_scoped_to_the_exploration(site_packages: Path, tmp_path: Path) -> None:
    package = install(site_packages, RACY_PACKAGE)
    module = user_module(tmp_path, package, TWO_BUMPS.format(package=package))
    library_file = sys.modules[package].__file__
    assert library_file is not None
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(module.target, strategy="random", schedules=200)
    assert not is_user_file(library_file), "the traced set outlived the exploration"


def test_code_under_test_leaves_out_frameworks_and_the_stdlib(
    site_packages: Path, tmp_path: Path
) -> None:
    package = install(site_packages, RACY_PACKAGE)
    module = user_module(
        tmp_path, package, "import pytest, json, racecheck\n" + TWO_BUMPS.format(package=package)
    )
    paths = code_under_test(module.target)
    assert [Path(p).name for p in paths] == [package]


def test_untraced_thread_code_is_reported_and_never_exhausted(
    site_packages: Path, tmp_path: Path
) -> None:
    """The threads run only library code nobody named: the report must say it saw nothing."""
    package = install(site_packages, RACY_PACKAGE)
    helper = install(
        site_packages,
        f"import {package}\n\ndef run_twice():\n    return {package}.Counter()\n",
    )

    def target() -> None:
        # the package is reached through a helper, not imported by this module
        counter = sys.modules[helper].run_twice()
        threads = [threading.Thread(target=counter.bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    report = racecheck.check(target, strategy="exhaustive", schedules=500)
    assert not report.exhausted
    assert report.warnings and "proves nothing" in report.warnings[0]
    assert "warning:" in str(report)


def test_trace_packages_accepts_a_module_name(site_packages: Path) -> None:
    package = install(site_packages, RACY_PACKAGE)
    counter_type = sys.modules[package].Counter

    def target() -> None:
        counter = counter_type()
        threads = [threading.Thread(target=counter.bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert counter.value == 2

    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, strategy="random", schedules=200, trace_packages=[package])


def test_trace_packages_accepts_a_distribution_name() -> None:
    paths = resolve_trace_packages(["pytest-xdist"])  # imported as "xdist"
    assert [Path(p).name for p in paths] == ["xdist"]


def test_trace_packages_rejects_an_unknown_name() -> None:
    with pytest.raises(racecheck.UsageError, match="no_such_thing_anywhere"):
        racecheck.check(lambda: None, schedules=1, trace_packages=["no_such_thing_anywhere"])


def test_trace_packages_prefix_needs_a_separator(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg2").mkdir()
    from racecheck.sources import tracing

    inside = str(tmp_path / "pkg" / "site-packages" / "m.py")
    beside = str(tmp_path / "pkg2" / "site-packages" / "m.py")
    with tracing([str(tmp_path / "pkg")]):
        assert is_user_file(inside)
        assert not is_user_file(beside)
    assert not is_user_file(inside)
