"""DPOR's search order: which pending state the next run starts from.

Plain stateless DPOR is depth-first: the next run backtracks at the deepest
state of the current path that still has an alternative to try. That is
cheap (one path in memory) but slow to reach a bug that needs an *early*
deviation kept up for many steps, such as one actor starved for twenty steps
(tests/classic's ``starved_consumer_overflow``): every alternative below the
natural order's first state is explored before it, and that space is huge.

Source-DPOR does not depend on the order in which pending alternatives are
taken, provided none is lost: a state's source set grows from the races of
whichever runs go through it, and the search ends when no state has an
alternative left. So :class:`SearchOrder` keeps the pending part of earlier
paths (*suspended* paths: every state on them that still has work, with its
ancestors) and, every ``jump_every``-th run while it has ``jumps`` left,
starts from the pending
alternative with the *fewest delays* from the natural order (the shallowest
of those) among all of them, instead of the deepest state of the current
path. Such a run then continues by *persisting*: the actor that ran last runs
again while it can (and is not asleep), which is exactly the "one actor runs
far ahead" shape the early deviation was for. Any continuation is allowed:
DPOR analyses whatever run happened. The other runs stay depth-first, which
keeps most of DFS's locality and memory.

Sleep sets need one care out of depth-first order: an actor may sleep in a
new sibling branch only if its own branch is finished (depth-first order
guarantees that; here its subtree may still be suspended), see
:meth:`SearchOrder.may_sleep`. Fewer sleepers only cost runs. Checked: the
same Mazurkiewicz traces (exact conflicts) as depth-first order, with or
without a tiny memory cap (tests/core/test_dpor_order.py), and the same final
states as exhaustive search on random programs (test_dpor_random.py).

Measured on tests/classic (DPOR alone). With one jump (``jumps=1``) the
starved consumer (20 producer steps in a row) is found at schedule 3 instead
of not at all in 3,000. But every jump costs pruning: the branches left
unfinished cannot sleep, and verifying the fixed thread programs took about
twice the schedules (lost_increment_method_fixed: 591 instead of 297; two
jumps 801, eight 917). Verification of the fixed versions is what the
portfolio's DPOR member is for (the samplers find the starved consumer in a
handful of schedules), so the default is ``jumps=0``: plain depth-first
order, exactly the search before this module. (DPOR's *probes*,
``DPORChooser._probe_prefix``, reach such bugs without that cost: they run
outside the search and are never analysed.) The thread-pool lost update
(the second task must go to the other worker) is not found in 2,000 either
way; it was found at 81 only while unfinished siblings were allowed to
sleep, which is not known to be sound, so that was dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol


class _State(Protocol):
    """A state of DPOR's search (``dpor._Node``): what could run, what ran, what is left."""

    enabled: tuple[int, ...]
    actor: int
    backtrack: set[int]
    #: delays (choices other than the natural order) on the path before this state
    delays: int

    @property
    def done(self) -> Mapping[int, object]: ...

    @property
    def sleep(self) -> Mapping[int, object]: ...


def pending(node: _State) -> list[int]:
    """The actors still to be tried at ``node``, in the natural order."""
    return [
        actor
        for actor in node.enabled
        if actor in node.backtrack and actor not in node.done and actor not in node.sleep
    ]


#: a path, with the actor each state took on it (shared states take different
#: actors on different paths)
Saved = list[tuple[_State, int]]


def _trim(saved: Saved) -> Saved:
    """``saved`` up to its deepest state with work left; empty when there is none."""
    for depth in range(len(saved) - 1, -1, -1):
        if pending(saved[depth][0]):
            return saved[: depth + 1]
    return []


class SearchOrder:
    """Picks the next run's prefix: mostly depth-first, every few runs the shallowest state."""

    def __init__(
        self,
        jump_every: int = 2,
        keep: int = 256,
        jumps: int = 0,
        on_finished: Callable[[_State], None] | None = None,
    ) -> None:
        self.jump_every = jump_every
        self.keep = keep
        #: jumps left: each one costs pruning (see may_sleep), so only the
        #: first few runs jump; the search is depth-first after them
        self.jumps = jumps
        self.on_finished = on_finished
        self.suspended: list[Saved] = []
        self.runs = 0
        #: states on some path with work left, by id: the ones that may still grow
        self._live: dict[int, _State] = {}
        #: per state of the next prefix (by id): actors explored there whose
        #: subtree still has work left (see :meth:`may_sleep`)
        self.unfinished: dict[int, set[int]] = {}

    def next(self, path: Sequence[_State]) -> tuple[list[_State], bool] | None:
        """The next prefix (its last state's ``actor`` set to the alternative to try).

        Returns ``(prefix, jumped)``, ``jumped`` when the prefix is not the
        depth-first one (the run should then persist), or None when no state
        has anything left. Calls ``on_finished`` for every state that left
        the search for good.
        """
        self.runs += 1
        candidates = [_trim([(node, node.actor) for node in path])]
        candidates += [_trim(saved) for saved in self.suspended]
        candidates = [c for c in candidates if c]
        live = {id(node): node for c in candidates for node, _ in c}
        for key, node in self._live.items():
            if key not in live:
                self.finished(node)
        for node in path:
            if id(node) not in live and id(node) not in self._live:
                self.finished(node)
        self._live = live
        if not candidates:
            self.suspended = []
            return None
        chosen, depth = 0, len(candidates[0]) - 1
        jumped = False
        if (
            self.jumps > 0
            and self.jump_every
            and self.runs % self.jump_every == 0
            and len(candidates) <= self.keep
        ):
            best: tuple[int, int, int, int] | None = None  # (delays, depth, path, depth)
            for index, saved in enumerate(candidates):
                for at, (node, _) in enumerate(saved):
                    if best is not None and node.delays > best[0]:
                        break  # delays only grow along a path
                    todo = pending(node)
                    if todo:
                        cost = node.delays + (node.enabled.index(todo[0]) != 0)
                        if best is None or (cost, at) < best[:2]:
                            best = (cost, at, index, at)
            assert best is not None
            if best[2:] != (0, depth):
                chosen, depth = best[2:]
                jumped = True
                self.jumps -= 1
        saved = candidates[chosen]
        rest = [c for index, c in enumerate(candidates) if index != chosen]
        if depth < len(saved) - 1:
            rest.insert(0, saved)  # its deeper states still have work: keep them for later
        self.suspended = rest
        prefix = saved[: depth + 1]
        on_prefix = {id(node) for node, _ in prefix}
        self.unfinished = {}
        for path_left in rest:
            for node, actor in path_left[:-1]:  # a deeper state follows: work left below
                if id(node) in on_prefix:
                    self.unfinished.setdefault(id(node), set()).add(actor)
        for node, actor in prefix[:-1]:
            node.actor = actor
        last = prefix[-1][0]
        last.actor = pending(last)[0]
        return [node for node, _ in prefix], jumped

    def may_sleep(self, node: _State, actor: int) -> bool:
        """May ``actor``, explored at ``node``, sleep in a new sibling branch?

        A sleep set says "what starts with this actor here was covered by its
        own branch". Depth-first order makes that true: a branch is finished
        before its next sibling starts. Out of order, the actor's branch may
        still have work suspended; it must not sleep then (fewer sleepers can
        only mean more runs, never a missed trace).
        """
        return actor not in self.unfinished.get(id(node), ())

    def finished(self, node: _State) -> None:
        """``node`` will never be on a run again (DPOR counts what it pruned there)."""
        if self.on_finished is not None:
            self.on_finished(node)
