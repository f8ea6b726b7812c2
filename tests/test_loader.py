"""Scenario discovery and import: racecheck.loader."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from racecheck import Scenario
from racecheck.errors import UsageError
from racecheck.loader import (
    Selector,
    display_path,
    load_scenarios,
    parse_selector,
    resolve,
    select,
)

SCENARIO_FILE = """
import racecheck

def ok():
    pass

def bad():
    raise AssertionError("boom")

{var} = racecheck.Scenario(
    name={name!r},
    issue="demo#1",
    variants={{
        "buggy": racecheck.Variant(bad, expect="race", summary="as reported"),
        "correct": racecheck.Variant(ok, expect="safe", summary="the fix"),
    }},
)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def scenario_file(path: Path, name: str, var: str = "SCENARIO") -> Path:
    return write(path, SCENARIO_FILE.format(name=name, var=var))


def test_file_scenarios_are_collected(tmp_path: Path) -> None:
    f = scenario_file(tmp_path / "one.py", "one")
    found = load_scenarios(f)
    assert [s.name for s in found] == ["one"]
    assert isinstance(found[0], Scenario)
    assert list(found[0].variants) == ["buggy", "correct"]


def test_several_scenarios_in_one_file_keep_definition_order_and_dedupe(tmp_path: Path) -> None:
    f = write(
        tmp_path / "multi.py",
        """
        import racecheck
        def t(): pass
        B = racecheck.Scenario(name="b", variants={"v": racecheck.Variant(t, expect="safe")})
        A = racecheck.Scenario(name="a", variants={"v": racecheck.Variant(t, expect="safe")})
        ALIAS = B
        """,
    )
    assert [s.name for s in load_scenarios(f)] == ["b", "a"]


def test_directory_is_sorted_skips_private_and_helper_files(tmp_path: Path) -> None:
    scenario_file(tmp_path / "b_second.py", "second")
    scenario_file(tmp_path / "a_first.py", "first")
    write(tmp_path / "_private.py", "raise RuntimeError('never imported')\n")
    write(tmp_path / "helpers.py", "X = 1\n")  # no scenario: skipped in a directory
    write(tmp_path / "notes.txt", "not python\n")
    assert [s.name for s in load_scenarios(tmp_path)] == ["first", "second"]


def test_same_stem_in_two_directories_does_not_collide(tmp_path: Path) -> None:
    a = scenario_file(tmp_path / "a" / "race.py", "from-a")
    b = scenario_file(tmp_path / "b" / "race.py", "from-b")
    assert [s.name for s in load_scenarios(a)] == ["from-a"]
    assert [s.name for s in load_scenarios(b)] == ["from-b"]
    assert "race" not in sys.modules or not hasattr(sys.modules["race"], "SCENARIO")


def test_scenario_file_can_import_its_neighbours(tmp_path: Path) -> None:
    write(tmp_path / "_shared.py", "def target():\n    return 42\n")
    write(
        tmp_path / "uses.py",
        """
        import racecheck
        from _shared import target
        V = racecheck.Variant(target, expect="safe")
        S = racecheck.Scenario(name="uses", variants={"v": V})
        """,
    )
    before = list(sys.path)
    assert [s.name for s in load_scenarios(tmp_path / "uses.py")] == ["uses"]
    assert sys.path == before  # the folder was on sys.path only while importing


def test_dataclasses_work_in_a_scenario_file(tmp_path: Path) -> None:
    f = write(
        tmp_path / "dc.py",
        """
        from __future__ import annotations
        import dataclasses
        import racecheck

        @dataclasses.dataclass
        class Account:
            balance: int = 0

        def t():
            assert Account().balance == 0

        S = racecheck.Scenario(name="dc", variants={"v": racecheck.Variant(t, expect="safe")})
        """,
    )
    (s,) = load_scenarios(f)
    s.variants["v"].target()


def test_import_error_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "scenarios" / "x.py", "import nope\n")
    with pytest.raises(UsageError) as info:
        load_scenarios("scenarios/x.py")
    assert (
        str(info.value)
        == "cannot import scenarios/x.py: ModuleNotFoundError: No module named 'nope'"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_import_error_inside_a_directory_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scenario_file(tmp_path / "scenarios" / "a.py", "a")
    write(tmp_path / "scenarios" / "b.py", "def broken(:\n")
    with pytest.raises(UsageError, match=r"^cannot import scenarios/b.py: SyntaxError: "):
        load_scenarios("scenarios")


def test_bad_scenario_definition_is_one_line(tmp_path: Path) -> None:
    f = write(
        tmp_path / "bad.py",
        """
        import racecheck
        S = racecheck.Scenario(name="x", variants={"v": racecheck.Variant(print, expect="racy")})
        """,
    )
    with pytest.raises(UsageError) as info:
        load_scenarios(f)
    assert "ValueError: expect must be one of" in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or directory"):
        load_scenarios(tmp_path / "missing.py")
    with pytest.raises(UsageError, match="no such file or directory"):
        load_scenarios(tmp_path / "missing-dir")


def test_explicit_file_without_scenarios_is_an_error(tmp_path: Path) -> None:
    f = write(tmp_path / "empty.py", "X = 1\n")
    with pytest.raises(UsageError, match=r"defines no racecheck\.Scenario"):
        load_scenarios(f)


def test_not_a_python_file(tmp_path: Path) -> None:
    f = write(tmp_path / "s.txt", "x\n")
    with pytest.raises(UsageError, match="not a Python file"):
        load_scenarios(f)


def test_system_exit_in_a_scenario_file_is_a_usage_error(tmp_path: Path) -> None:
    f = write(tmp_path / "exits.py", "raise SystemExit(3)\n")
    with pytest.raises(UsageError, match="SystemExit: 3"):
        load_scenarios(f)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("scenarios/", Selector("scenarios/")),
        ("s.py", Selector("s.py")),
        ("s.py::name", Selector("s.py", "name")),
        ("s.py::name[buggy]", Selector("s.py", "name", "buggy")),
        ("s.py::changeset-7120[as-proposed]", Selector("s.py", "changeset-7120", "as-proposed")),
        ("s.py::[buggy]", Selector("s.py", None, "buggy")),
    ],
)
def test_parse_selector(text: str, expected: Selector) -> None:
    assert parse_selector(text) == expected
    assert str(expected) == text


def test_parse_selector_path_with_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    scenario_file(tmp_path / "s.py", "s")
    assert parse_selector("s.py[buggy]") == Selector("s.py", None, "buggy")


@pytest.mark.parametrize("text", ["::name", "s.py::", "s.py::a[b", "s.py::a[]"])
def test_bad_selectors(text: str) -> None:
    with pytest.raises(UsageError, match="bad selector"):
        parse_selector(text)


def test_select(tmp_path: Path) -> None:
    scenario_file(tmp_path / "a.py", "alpha")
    scenario_file(tmp_path / "b.py", "beta")
    found = load_scenarios(tmp_path)
    assert [(s.name, v) for s, v in select(found)] == [
        ("alpha", ["buggy", "correct"]),
        ("beta", ["buggy", "correct"]),
    ]
    assert [(s.name, v) for s, v in select(found, "beta")] == [("beta", ["buggy", "correct"])]
    assert [(s.name, v) for s, v in select(found, "beta", "correct")] == [("beta", ["correct"])]
    assert [(s.name, v) for s, v in select(found, None, "buggy")] == [
        ("alpha", ["buggy"]),
        ("beta", ["buggy"]),
    ]
    with pytest.raises(UsageError, match=r"no scenario named 'gamma'.*alpha, beta"):
        select(found, "gamma")
    with pytest.raises(UsageError, match=r"no variant 'fixed'.*buggy, correct"):
        select(found, "alpha", "fixed")


def test_resolve_selectors_and_replay_selector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scenario_file(tmp_path / "scenarios" / "a.py", "alpha")
    scenario_file(tmp_path / "scenarios" / "b.py", "beta")
    (sel,) = resolve(["scenarios/b.py::beta[correct]"])
    assert sel.scenario.name == "beta" and sel.variants == ["correct"]
    assert sel.selector("correct") == "scenarios/b.py::beta[correct]"
    assert display_path(sel.file) == "scenarios/b.py"
    # the same scenario named twice merges its variants
    (sel,) = resolve(["scenarios/a.py::alpha[buggy]", "scenarios/a.py::alpha[correct]"])
    assert sel.variants == ["buggy", "correct"]


def test_resolve_rejects_two_scenarios_with_one_name(tmp_path: Path) -> None:
    scenario_file(tmp_path / "x" / "a.py", "same")
    scenario_file(tmp_path / "y" / "b.py", "same")
    with pytest.raises(UsageError, match="two scenarios are named 'same'"):
        resolve([str(tmp_path / "x"), str(tmp_path / "y")])
