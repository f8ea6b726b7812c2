"""Terminal-safe output: control characters and lone surrogates from user code.

Names, descriptions and messages come from the code under test. Printed raw,
ESC/OSC sequences drive the terminal, NUL and C1 controls confuse it, and a
lone surrogate cannot be encoded at all. Everything printed by ``run``,
``list``, ``replay`` and the pytest failure text is escaped; reports are still
written; and an exception whose ``__str__`` raises is still a race.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import racecheck
from racecheck.textsafe import safe_str, terminal_safe

#: raw bytes that must never reach the terminal: ESC, BEL, NUL, CR, C1 CSI/OSC, a lone surrogate
_RAW = re.compile(b"[\x00\x07\x1b\r]|\xc2[\x80-\x9f]|\xed[\xa0-\xbf]")

HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x00\x9b31m\r\ud800"

SCENARIO = textwrap.dedent(
    """
    import threading
    import racecheck

    HOSTILE = "\\x1b[2J\\x1b]0;pwned\\x07\\x00\\x9b31m\\r\\ud800"

    def racy():
        box = [0]

        def bump():
            v = box[0]
            box[0] = v + 1

        t = threading.Thread(target=bump, name="worker" + HOSTILE)
        t.start()
        bump()
        t.join()
        assert box[0] == 2, "lost update " + HOSTILE

    SCEN = racecheck.Scenario(
        name="hostile" + HOSTILE,
        description="desc" + HOSTILE,
        invariants=("inv" + HOSTILE,),
        variants={
            "buggy" + HOSTILE: racecheck.Variant(
                racy, expect="race", summary="sum" + HOSTILE
            ),
        },
    )
    """
)


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


def _assert_clean(data: bytes) -> None:
    found = _RAW.search(data)
    assert found is None, f"raw control bytes {found.group()!r} in {data[-600:]!r}"


def test_terminal_safe_escapes_controls_and_keeps_newlines() -> None:
    text = terminal_safe("a\x1b[2Jb\nc\x00\x9b\ud800\u202e\t")
    assert text == "a\\x1b[2Jb\nc\\x00\\x9b\\ud800\\u202e\\t"
    assert terminal_safe("a\nb", one_line=True) == "a\\nb"
    assert terminal_safe("plain ✓ ⇢ text") == "plain ✓ ⇢ text"


def test_run_list_and_replay_print_no_raw_controls(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(SCENARIO)
    run = _cli(tmp_path, "run", "scen.py", "--schedules", "50", "--trace")
    assert run.returncode == 0, run.stderr
    _assert_clean(run.stdout)
    _assert_clean(run.stderr)
    assert b"\\x1b[2J" in run.stdout  # shown, escaped
    assert b"Traceback" not in run.stderr
    data = json.loads((tmp_path / "reports" / "racecheck.json").read_text())
    record = data["records"][0] if isinstance(data, dict) else data[0]
    token = record["schedule"]

    listed = _cli(tmp_path, "list", "scen.py")
    assert listed.returncode == 0, listed.stderr
    _assert_clean(listed.stdout)
    assert b"desc\\x1b" in listed.stdout

    replayed = _cli(tmp_path, "replay", "scen.py", token)
    assert replayed.returncode == 1, replayed.stderr
    _assert_clean(replayed.stdout)
    _assert_clean(replayed.stderr)
    assert b"lost update" in replayed.stdout


def test_lone_surrogate_in_a_message_reaches_the_reports(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(
        textwrap.dedent(
            """
            import racecheck

            def broken():
                raise AssertionError("bad \\ud800 value")

            SCEN = racecheck.Scenario(
                name="s\\udcff", variants={"v": racecheck.Variant(broken, expect="race")}
            )
            """
        )
    )
    run = _cli(tmp_path, "run", "scen.py", "--schedules", "3")
    assert run.returncode == 0, run.stderr
    assert b"Traceback" not in run.stderr
    assert b"\\ud800" in run.stdout
    for name in ("racecheck.json", "racecheck.xml", "index.html"):
        assert (tmp_path / "reports" / name).is_file()


def test_a_label_with_a_lone_surrogate_can_be_checked_and_replayed() -> None:
    def racy() -> None:
        raise AssertionError("always")

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(racy, label="x\ud800", schedules=2)
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(racy, info.value.schedule, label="x\ud800")


class _BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def test_an_exception_whose_str_raises_is_still_a_race() -> None:
    def racy() -> None:
        raise _BadStr()

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(racy, schedules=2)
    assert info.value.kind == "exception"
    assert isinstance(info.value.cause, _BadStr)
    assert "_BadStr" in info.value.summary
    assert "str() raised RuntimeError" in info.value.render()


def test_an_exception_whose_str_raises_is_a_race_in_the_cli(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(
        textwrap.dedent(
            """
            import racecheck

            class BadStr(Exception):
                def __str__(self):
                    raise RuntimeError("nope")

            def broken():
                raise BadStr()

            SCEN = racecheck.Scenario(
                name="s", variants={"v": racecheck.Variant(broken, expect="race")}
            )
            """
        )
    )
    run = _cli(tmp_path, "run", "scen.py", "--schedules", "3", "--no-report")
    assert run.returncode == 0, run.stdout + run.stderr
    assert b" race " in run.stdout


def test_safe_str_never_raises() -> None:
    assert "str() raised RuntimeError" in safe_str(_BadStr())
    assert safe_str(ValueError("x")) == "x"


def test_pytest_failure_text_is_escaped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_hostile=textwrap.dedent(
            """
            import threading
            import pytest

            HOSTILE = "\\x1b[2J\\x1b]0;pwned\\x07\\x00\\x9b31m\\r"

            @pytest.mark.racecheck(schedules=50)
            def test_racy():
                box = [0]

                def bump():
                    v = box[0]
                    box[0] = v + 1

                t = threading.Thread(target=bump, name="w" + HOSTILE)
                t.start()
                bump()
                t.join()
                assert box[0] == 2, "lost " + HOSTILE
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = "\n".join(result.outlines)
    assert "lost \\x1b[2J" in text
    assert not re.search("[\x00\x07\x1b\x9b\r]", text), text[-800:]
