"""Points after a line's last point stay reachable where the line can run again;
a lone actor's points still count towards the step bound.

On 3.11 the threads tracer stops a line's opcode events once the line's last
point has run (``tracer.last_points``): the rest of the line can reach no
point of it. These programs need a switch at a point that comes *after* that
moment on the same line: in a second pass of a one-line loop (a backward jump,
which sends a line event that watches the opcodes again), and in the branch
of a one-line conditional that a forward jump reaches. If the cut swallowed
those points, the interleaving that breaks the assertion would be unreachable
and the exhaustive search would call the program clean. On 3.12+ the same
programs check the monitoring tracer.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import CodeType

import pytest

import racecheck
from racecheck.backends.threads.tracer import last_points, point_lines
from racecheck.operations import points


class Pair:
    def __init__(self) -> None:
        self.a = 0
        self.pick = False
        self.log: list[tuple[int, int, int]] = []

    def write(self) -> None:
        self.a = 1


def second_pass_torn_read() -> None:
    """Two reads of one value that disagree, in the loop's second pass only.

    The writer writes once: only a switch between the reader's two reads of
    the second pass, both after the line's last point of the first, shows it.
    """
    pair = Pair()

    def reader() -> None:
        for i in range(2): pair.log.append((i, pair.a, pair.a))  # noqa: E701  # fmt: skip

    first = threading.Thread(target=reader)
    second = threading.Thread(target=pair.write)
    first.start()
    second.start()
    first.join()
    second.join()
    assert (1, 0, 1) not in pair.log, pair.log


def else_branch_torn_read() -> None:
    """Two reads that disagree, in the branch a one-line conditional jumps to."""
    pair = Pair()

    def reader() -> None:
        pair.log.append((0, pair.a, 0) if pair.pick else (1, pair.a, pair.a))

    first = threading.Thread(target=reader)
    second = threading.Thread(target=pair.write)
    first.start()
    second.start()
    first.join()
    second.join()
    assert (1, 0, 1) not in pair.log, pair.log


@pytest.mark.parametrize("program", [second_pass_torn_read, else_branch_torn_read])
def test_a_switch_after_the_lines_last_point_is_still_explored(
    program: Callable[[], None],
) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(program, strategy="exhaustive", schedules=5_000)
    assert "(1, 0, 1)" in str(found.value)


def _line_of(code: object, offset: int) -> int:
    import dis

    line = -1
    for instr in dis.get_instructions(code):  # type: ignore[arg-type]
        if instr.starts_line is not None:
            line = instr.starts_line
        if instr.offset == offset:
            return line
    raise AssertionError(offset)


def _codes(code: CodeType) -> list[CodeType]:
    inner = [c for c in code.co_consts if isinstance(c, CodeType)]
    return [code, *(nested for c in inner for nested in _codes(c))]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the opcode cut is 3.11's settrace tracer")
def test_each_line_with_points_has_its_highest_point_as_the_last() -> None:
    """One last point per line, and none of the line's points lies beyond it."""
    functions = (Pair.write, second_pass_torn_read, else_branch_torn_read)
    for code in (c for function in functions for c in _codes(function.__code__)):
        table = points(code, "access")
        ends = last_points(code)
        assert {_line_of(code, offset) for offset in ends} == point_lines(code)
        for offset in table:
            line = _line_of(code, offset)
            (end,) = (e for e in ends if _line_of(code, e) == line)
            assert offset <= end


class Counter:
    def __init__(self) -> None:
        self.n = 0


def spin_alone() -> None:
    """The target's own thread spins with no other thread alive: every point is alone."""
    counter = Counter()
    while True:
        counter.n += 1


@pytest.mark.skipif(
    sys.version_info < (3, 12),
    reason="3.11 watches no opcode of a lone actor, so its spin is never counted (a known gap)",
)
def test_a_lone_actors_points_still_count_towards_the_step_bound() -> None:
    """On 3.12+ a lone actor's point is counted in the callback, without point():
    it must still count, or a lone spin loop would never reach its bound."""
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(spin_alone, backend="threads", schedules=2, max_steps=300, watchdog=20)
    assert found.value.kind == "step-limit"
