"""Schedule tokens: round trips, and every way a token can be wrong."""

from __future__ import annotations

import pytest

from racecheck.errors import TokenError
from racecheck.schedule import Schedule, fingerprint, python_tag, token_label_matches


def make(decisions: tuple[tuple[int, int], ...] = ((2, 0), (3, 2), (2, 1))) -> Schedule:
    return Schedule("asyncio", "task", python_tag(), fingerprint("mod:target"), decisions)


def test_round_trip_keeps_every_decision() -> None:
    schedule = make(tuple((n, n - 1) for n in range(2, 300)))
    token = schedule.encode()
    assert token.startswith(f"rc1:asyncio:task:{python_tag()}:")
    assert "\n" not in token and " " not in token
    assert Schedule.decode(token) == schedule


def test_long_natural_runs_compress_to_a_short_token() -> None:
    token = make(tuple((2, 0) for _ in range(5000))).encode()
    assert len(token) < 120


def test_preemptions_count_deviations_from_natural_order() -> None:
    assert make().preemptions == 2


@pytest.mark.parametrize(
    "token",
    [
        "",
        "hello",
        "rc1:asyncio:task",
        "rc1:asyncio:task:py311:abcd:!!!notbase64!!!",
        "rc1:nosuch:task:py311:abcd:eNpjZmIAQQAANAAK",
        "rc1:asyncio:weird:py311:abcd:eNpjZmIAQQAANAAK",
        "rc2:asyncio:task:py311:abcd:eNpjZmIAQQAANAAK",
    ],
)
def test_malformed_tokens_are_token_errors(token: str) -> None:
    with pytest.raises(TokenError):
        Schedule.decode(token)


def test_truncated_and_corrupted_payloads_are_rejected() -> None:
    token = make().encode()
    with pytest.raises(TokenError):
        Schedule.decode(token[:-3])
    flipped = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    with pytest.raises(TokenError):
        Schedule.decode(flipped)


def test_choice_out_of_range_is_rejected() -> None:
    import base64
    import zlib

    raw = bytes([1, 2, 5])  # one decision: n=2, choice=5
    payload = base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")
    with pytest.raises(TokenError, match="corrupt"):
        Schedule.decode(f"rc1:asyncio:task:{python_tag()}:abcd:{payload}")


def test_compatibility_names_what_does_not_match() -> None:
    schedule = make()
    schedule.check_compatible(backend="asyncio", label="mod:target")
    with pytest.raises(TokenError, match="threads backend"):
        Schedule("threads", "access", python_tag(), schedule.target, ()).check_compatible(
            backend="asyncio", label="mod:target"
        )
    with pytest.raises(TokenError, match="another target"):
        schedule.check_compatible(backend="asyncio", label="mod:other")
    with pytest.raises(TokenError, match="py27"):
        Schedule("asyncio", "task", "py27", schedule.target, ()).check_compatible(
            backend="asyncio", label="mod:target"
        )


def test_token_label_matches() -> None:
    token = make().encode()
    assert token_label_matches(token, "mod:target")
    assert not token_label_matches(token, "mod:other")
