"""Naming a run's trace, so that DPOR counts each trace once.

DPOR's sleep sets compare a step recorded in an earlier run with this run's
steps by type of object wherever the two runs' numbering of objects may
differ (conservative, never missing a conflict: DPORChooser._wakes), so a
run can end unblocked and still be an earlier run's trace with independent
steps swapped. Counting such runs overstated "all N non-equivalent interleavings"
(three writers of one attribute: 15, for 3! = 6 traces). :func:`trace_key`
names a run's trace instead, and DPOR counts distinct names.

The name is the run's lexicographic normal form under its own happens-before
(program order and conflicts, objects told apart exactly within the run):
the linearisation that always runs the lowest actor able to go next. For a
deterministic target, two runs with one normal form are one run replayed
(the form is a schedule of each), so the count never merges two traces.

What it still counts apart: the same execution cut into other steps. An
actor running alone makes no decisions, so its code is one step in one run
and several in another; those runs get different names, and N can exceed the
number of traces of the program's accesses (never fall short of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Step(Protocol):
    actor: int


def trace_key(steps: Sequence[Step], hb: Sequence[int]) -> int:
    """A hash naming the trace of the run made of ``steps``.

    ``hb[j]`` holds, as bits, every step that happens before step ``j``.
    """
    queues: dict[int, list[int]] = {}
    for index, step in enumerate(steps):
        queues.setdefault(step.actor, []).append(index)
    heads = dict.fromkeys(queues, 0)
    actors = sorted(queues)
    done = 0
    form: list[int] = []
    while len(form) < len(steps):
        for actor in actors:
            head = heads[actor]
            queue = queues[actor]
            if head < len(queue) and not hb[queue[head]] & ~done:
                done |= 1 << queue[head]
                heads[actor] = head + 1
                form.append(actor)
                break
        else:  # not a partial order (cannot happen): the run order names it
            return hash(tuple(step.actor for step in steps))
    return hash(tuple(form))


__all__ = ["trace_key"]
