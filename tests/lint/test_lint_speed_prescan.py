"""The pre-scan's fast word search answers exactly what the trigger patterns answer.

``run.needed_checks`` looks for each check's words in the lower-cased text
instead of running the ``IGNORECASE`` patterns of ``run.TRIGGERS`` (which walk
the whole text when no word is there). The patterns stay the definition: these
tests compare the two on every case variant of every word, on the four
characters outside ASCII that ``re.IGNORECASE`` folds to an ASCII letter, and
on real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from racecheck.lint.run import (
    _TRIGGER_WORDS,
    CHECKS,
    TRIGGERS,
    Check,
    iter_files,
    needed_checks,
    read_source,
)

ROOT = Path(__file__).resolve().parents[2]


def _by_patterns(source: str) -> tuple[Check, ...]:
    return tuple(
        check
        for check in CHECKS
        if (pattern := TRIGGERS.get(check)) is None or pattern.search(source) is not None
    )


def _words() -> list[str]:
    return sorted({word for words in _TRIGGER_WORDS.values() if words for word in words})


def test_every_trigger_pattern_takes_the_fast_path() -> None:
    assert set(_TRIGGER_WORDS) == set(TRIGGERS)
    assert all(words for words in _TRIGGER_WORDS.values())
    assert {"async", "thread", "pool", "scheduler"} <= set(_words())


@pytest.mark.parametrize("word", _words())
def test_each_word_in_any_case_is_found_as_the_pattern_finds_it(word: str) -> None:
    variants = {word, word.upper(), word.capitalize(), word[:-1] + word[-1].upper()}
    for variant in variants:
        for source in (variant, f"x = 1\n# {variant}\n", f"self._{variant}_x()"):
            assert needed_checks(source) == _by_patterns(source) != (), source
    # a word cut in two is no word
    cut = f"{word[:2]} {word[2:]}"
    assert needed_checks(cut) == _by_patterns(cut)


@pytest.mark.parametrize(
    "source",
    [
        # U+017F LATIN SMALL LETTER LONG S: IGNORECASE matches it to "s" ("submit"),
        # str.lower leaves it alone
        "executor.\u017fubmit(f)\n",
        # U+0131 dotless i: "gather" has no i, "thread" neither, "scheduler" neither:
        # "timer" and "ensure_future"/"run_in_executor" have one
        "T\u0131mer(1, f)\n",
        "loop.run_\u0131n_executor(None, f)\n",
        # U+0130 capital I with dot
        "loop.run_\u0130n_executor(None, f)\n",
        # U+212A KELVIN SIGN folds to "k" ("task" in create_task)
        "loop.create_tas\u212a(c)\n",
        # other text outside ASCII, with and without a word
        "# caf\u00e9 \u2014 no words here\nx = 1\n",
        "# caf\u00e9\nasync def f():\n    await g()\n",
        "# \u00c9T\u00c9\nTHREAD = 1\n",
        "",
    ],
)
def test_text_outside_ascii_is_answered_as_the_patterns_answer(source: str) -> None:
    assert needed_checks(source) == _by_patterns(source)


@pytest.mark.parametrize(
    ("fold", "letter"), [("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k")]
)
def test_a_word_spelled_with_a_folding_character_still_triggers(fold: str, letter: str) -> None:
    """Each trigger word holding the letter, spelled with the character outside ASCII that
    ``IGNORECASE`` matches to it, triggers the check (and nothing else in the text does)."""
    spelled = [w.replace(letter, fold) for w in _words() if letter in w]
    assert spelled
    for word in spelled:
        source = f"x.{word}(f)\n"
        assert needed_checks(source) == _by_patterns(source) != (), word
    if (
        fold != "\u212a"
    ):  # str.lower folds the Kelvin sign; a plain lower-case search misses the rest
        assert all(w.replace(fold, letter) not in w.lower() for w in spelled)


def test_real_files_are_answered_as_the_patterns_answer() -> None:
    files = [
        file
        for tree in (ROOT / "src" / "racecheck", ROOT / "scenarios", ROOT / "tests")
        for file in iter_files([tree])
    ]
    answers = set()
    for file in files:
        source = read_source(file)
        answer = needed_checks(source)
        assert answer == _by_patterns(source), file
        answers.add(answer)
    assert len(files) > 100 and len(answers) > 2  # files with different answers were seen
