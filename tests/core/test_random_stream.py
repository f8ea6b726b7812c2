"""The random walk's draws: schedule N's are a pure function of (seed, N), and uniform.

Each schedule's bits come from ``racecheck.strategies.stream`` (one generator
seeded per 64 schedule numbers, each schedule at its own place in that
stream, further bits from BLAKE2b). Shards, replays and recorded "found at
schedule N" results rely on schedule N being the same whatever ran before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from racecheck.strategies.random import RandomChooser
from racecheck.strategies.stream import BLOCK_BITS, GROUP, ScheduleBits


def _walk(chooser: RandomChooser, run: int, widths: list[int]) -> list[int]:
    chooser.begin(run)
    return [chooser.choose(list(range(n)), step) for step, n in enumerate(widths, 1)]


@pytest.mark.parametrize("seed", [0, 1, -3, 2**70 + 5])
def test_each_schedule_is_the_same_in_any_order(seed: int) -> None:
    widths = [1 + (step * 7) % 11 for step in range(40)]  # one candidate included: fairness
    runs = [2, 3, 63, 64, 65, 200, 9, 2, 130, 131, 64]  # in order, strided, back, group edges
    walked = RandomChooser(seed)
    history = [(run, _walk(walked, run, widths)) for run in runs]
    for run, picks in history:
        assert _walk(RandomChooser(seed), run, widths) == picks, (seed, run)


def test_the_schedule_bits_do_not_depend_on_the_order_they_are_asked_in() -> None:
    in_order = ScheduleBits(7, 1)
    expected = {run: in_order.first(run) for run in range(1, 3 * GROUP)}
    shuffled = ScheduleBits(7, 1)
    for run in [5, 4, 130, 131, 1, 64, 63, 191, 2, 100]:
        assert shuffled.first(run) == expected[run]
    assert len(set(expected.values())) == len(expected)
    assert all(0 <= bits < 1 << BLOCK_BITS for bits in expected.values())


def test_seeds_and_salts_give_streams_of_their_own() -> None:
    firsts = {
        (seed, salt): ScheduleBits(seed, salt).first(run)
        for seed in (0, 1, -1, 2, -2, 2**64)
        for salt in (0, 1, 255)
        for run in (1, 2)
    }
    assert len(set(firsts.values())) == len(firsts)


def test_a_long_schedule_goes_on_past_its_first_block() -> None:
    """A schedule of hundreds of decisions draws further blocks, the same every time."""
    widths = [5] * 600  # 3 bits a draw: about 1,900 bits, four blocks
    picks = _walk(RandomChooser(3), 12, widths)
    assert picks == _walk(RandomChooser(3), 12, widths)
    # every block keeps drawing every index, none stuck on a value
    for start in range(0, 600, 150):
        assert set(picks[start : start + 150]) == set(range(5))


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_draws_are_uniform(n: int) -> None:
    """Over 4,000 draws (200 schedules of 20), each index within 15% of its share."""
    chooser = RandomChooser(11)
    counts = Counter(pick for run in range(2, 202) for pick in _walk(chooser, run, [n] * 20))
    share = 4000 / n
    assert set(counts) == set(range(n))
    assert all(abs(count - share) < 0.15 * share for count in counts.values()), counts


def test_the_natural_schedule_takes_every_first_candidate() -> None:
    assert _walk(RandomChooser(5), 1, [3, 4, 2, 7]) == [0, 0, 0, 0]


def test_a_salt_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="salt"):
        ScheduleBits(0, 256)


def test_the_written_out_draw_is_the_general_one() -> None:
    """``choose``'s usual case, written out, draws what the general loop draws."""

    class GeneralOnly(RandomChooser):
        def choose(self, candidates: Sequence[int], step: int) -> int:
            if self._natural:
                return 0
            n = len(candidates)
            return self._draw(n, (n - 1).bit_length())

    for seed in (0, -7):
        fast, general = RandomChooser(seed), GeneralOnly(seed)
        widths = [1 + (step * 5) % 9 for step in range(300)]  # past the first block
        for run in (2, 3, 70):
            assert _walk(fast, run, widths) == _walk(general, run, widths)
