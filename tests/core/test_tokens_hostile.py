"""Hostile schedule tokens cost little and are refused with TokenError.

The bar (issue 10): a token of 22 KB, 87 KB, 350 KB or 10 MB is answered in
well under 15 s and 250 MB, through the API, the CLI and pytest. The bounds
checked here are generous regression guards, not timings.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest

import racecheck
from racecheck.errors import TokenError
from racecheck.schedule import MAX_TOKEN_CHARS, Schedule, fingerprint, python_tag

HEAD = f"rc1:threads:access:{python_tag()}:{fingerprint('x')}:"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _payload(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def bomb(decisions: int) -> str:
    """A well-formed token whose payload inflates ~1000x: ``decisions`` x (2, 0)."""
    return HEAD + _payload(_varint(decisions) + b"\x02\x00" * decisions)


def hostile_tokens() -> dict[str, str]:
    return {
        # a zlib bomb of about 87 KB that claims 45 million decisions
        "bomb-87k": bomb(45_000_000),
        # a count that claims far more decisions than the payload holds
        "claims-more": HEAD + _payload(_varint(10**12) + b"\x02\x00" * 11_000),
        # 22 KB of characters base64 would silently skip
        "junk-22k": HEAD + "!" * 22_000,
        # 350 KB of plausible alphabet
        "long-350k": HEAD + "A" * 350_000,
        # 10 MB: over the length cap
        "huge-10m": HEAD + "A" * 10_000_000,
    }


def valid_token() -> str:
    return Schedule("threads", "access", python_tag(), fingerprint("x"), ((2, 1),)).encode()


@pytest.mark.parametrize("name", list(hostile_tokens()))
def test_api_decode_is_cheap_and_refuses(name: str) -> None:
    token = hostile_tokens()[name]
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(TokenError):
            Schedule.decode(token)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 5
    assert peak < 40 * 2**20, f"decoding {name} allocated {peak / 2**20:.0f} MB"


@pytest.mark.parametrize("name", ["bomb-87k", "junk-22k", "huge-10m"])
def test_api_replay_refuses_hostile_tokens(name: str) -> None:
    def target() -> None:
        pass

    with pytest.raises(TokenError):
        racecheck.replay(target, hostile_tokens()[name])


def test_trailing_bytes_after_the_stream_are_rejected() -> None:
    token = valid_token()
    data = base64.urlsafe_b64decode(token.rsplit(":", 1)[1] + "==")
    padded = base64.urlsafe_b64encode(data + b"\x00\x00\x00").decode().rstrip("=")
    with pytest.raises(TokenError, match="after"):
        Schedule.decode(token.rsplit(":", 1)[0] + ":" + padded)


@pytest.mark.parametrize("junk", ["+", "/", "=", "!", " ", "\u00e9", "\x00"])
def test_non_alphabet_characters_are_rejected(junk: str) -> None:
    token = valid_token()
    head, payload = token.rsplit(":", 1)
    with pytest.raises(TokenError):
        Schedule.decode(f"{head}:{payload[:4]}{junk}{payload[4:]}")


def test_the_length_cap_is_generous_for_real_schedules() -> None:
    # 100,000 decisions (the default max_steps) with varied choices still fit.
    import random

    rng = random.Random(0)
    decisions = tuple((n, rng.randrange(n)) for n in (rng.randrange(2, 9) for _ in range(100_000)))
    schedule = Schedule("threads", "access", python_tag(), fingerprint("x"), decisions)
    token = schedule.encode()
    assert len(token) < MAX_TOKEN_CHARS
    assert Schedule.decode(token) == schedule


def test_decoding_again_reuses_the_first_result() -> None:
    token = valid_token()
    assert Schedule.decode(token) is Schedule.decode(" " + token + "\n")


# ----------------------------------------------------------------- the CLI

SCENARIO = textwrap.dedent(
    """
    from racecheck import Scenario, Variant

    def target():
        pass

    SCEN = Scenario(name="s", variants={"v": Variant(target, expect="safe")})
    """
)

MEASURE = textwrap.dedent(
    """
    import resource, subprocess, sys
    args = sys.argv[1:]
    token = sys.stdin.read()
    args = [token if a == "@TOKEN" else a for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        input=token if "-" in args else None, capture_output=True, text=True,
    )
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stdout.write(f"{proc.returncode}\\n{rss}\\n{proc.stderr}")
    """
)


def _run_cli(tmp_path: Path, token: str, *args: str) -> tuple[int, int, str, float]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, *args],
        input=token,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    elapsed = time.perf_counter() - started
    code, rss_kb, stderr = proc.stdout.split("\n", 2)
    return int(code), int(rss_kb), stderr, elapsed


@pytest.mark.parametrize("name", ["bomb-87k", "junk-22k", "claims-more"])
def test_cli_replay_refuses_hostile_tokens_cheaply(tmp_path: Path, name: str) -> None:
    (tmp_path / "scen.py").write_text(SCENARIO)
    code, rss_kb, stderr, elapsed = _run_cli(
        tmp_path, hostile_tokens()[name], "replay", "scen.py", "@TOKEN"
    )
    assert code == 2, stderr
    assert stderr.startswith("racecheck: error:") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    assert rss_kb < 250 * 1024, f"{rss_kb} KB"
    assert elapsed < 60


@pytest.mark.parametrize("name", ["long-350k", "huge-10m", "bomb-87k"])
def test_cli_replay_reads_a_long_token_from_stdin(tmp_path: Path, name: str) -> None:
    # A single argument is limited to 128 KB on Linux: "-" reads the token from stdin.
    (tmp_path / "scen.py").write_text(SCENARIO)
    code, rss_kb, stderr, _ = _run_cli(tmp_path, hostile_tokens()[name], "replay", "scen.py", "-")
    assert code == 2, stderr
    assert "token" in stderr and stderr.count("\n") == 1, stderr
    assert rss_kb < 250 * 1024, f"{rss_kb} KB"


# ------------------------------------------------------------------ pytest

TEST_FILE = textwrap.dedent(
    """
    import pytest

    @pytest.mark.racecheck(schedules=5)
    def test_one():
        pass

    @pytest.mark.racecheck(schedules=5)
    def test_two():
        pass
    """
)


@pytest.mark.parametrize("name", ["bomb-87k", "junk-22k", "huge-10m"])
def test_pytest_replay_refuses_hostile_tokens(pytester: pytest.Pytester, name: str) -> None:
    pytester.makepyfile(test_hostile=TEST_FILE)
    started = time.perf_counter()
    result = pytester.runpytest_inprocess(f"--racecheck-replay={hostile_tokens()[name]}")
    assert time.perf_counter() - started < 60
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--racecheck-replay" in "\n".join(result.errlines)


def test_pytest_decodes_the_replay_token_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import racecheck.schedule as schedule_module

    calls = []
    real = schedule_module._decode_uncached

    def counting(token: str) -> Schedule:
        calls.append(token)
        return real(token)

    monkeypatch.setattr(schedule_module, "_decode_uncached", counting)
    schedule_module._DECODED.clear()
    pytester.makepyfile(test_once=TEST_FILE)
    token = Schedule("threads", "access", python_tag(), fingerprint("zzz"), ((2, 1),)).encode()
    result = pytester.runpytest_inprocess(f"--racecheck-replay={token}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # recorded for no selected test
    assert len(calls) == 1


def test_cli_replay_decodes_the_token_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import racecheck.schedule as schedule_module
    from racecheck.cli import main

    (tmp_path / "scen.py").write_text(SCENARIO)
    monkeypatch.chdir(tmp_path)
    calls = []
    real = schedule_module._decode_uncached

    def counting(token: str) -> Schedule:
        calls.append(token)
        return real(token)

    monkeypatch.setattr(schedule_module, "_decode_uncached", counting)
    schedule_module._DECODED.clear()
    token = Schedule(
        "threads", "access", python_tag(), fingerprint("s[v]"), ((2, 1), (2, 0))
    ).encode()
    code = main(["replay", "scen.py", token])
    # the target never has two threads: it ends before the token's first
    # decision without failing, which is "did not fail" (exit 0)
    assert code == 0, capsys.readouterr()
    assert len(calls) == 1


def test_a_token_of_colons_is_refused_cheaply() -> None:
    with pytest.raises(TokenError, match="malformed"):
        Schedule.decode(":" * (MAX_TOKEN_CHARS - 1))
