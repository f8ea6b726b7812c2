"""Time to first failure of a rare race: one process against K shards in K processes.

    python -m racecheck.bench.shards [--shards K] [--schedules N]

The workload needs thousands of schedules under the default strategy before
it fails (five tasks of six steps; it fails only when the run starts
``e c e c e``). The serial run is one ``racecheck.check``; the sharded run
starts K processes (spawned, so imports are paid as in pytest-xdist workers)
that share a board directory, and ends when every shard has stopped.

Two ratios are printed. *Wall* is what a user waits for, and on a busy
machine it measures the neighbours as much as racecheck. *CPU* divides the
serial run's CPU time by the largest CPU time of one shard (the critical
path): that is the speed-up K idle cores give, and it does not move with the
load. Both runs must report the same schedule number and token; the bench
says so. Nothing here is asserted by a test.

Every process (the serial one too) starts a session of its own unless
``--session inherit`` is given (:mod:`racecheck.worker_session`): with
Linux's autogroup scheduling, processes of one session share one CPU share
when anything else is busy, which hides the speed-up the shards give.
``--strategy exhaustive`` times the exhaustive search split by subtrees
(:mod:`racecheck.sharding_tree`) instead of the default portfolio, and
``--strategy dpor`` split DPOR (:mod:`racecheck.sharding_dpor`), whose serial
run is plain DPOR: the two may stop at different schedules, and the bench
then says the failures differ (the token of each still replays).

What it does not measure: the start-up of a whole ``pytest -n K`` command.
Each process here imports racecheck (and multiprocessing's spawn start-up)
only; an xdist worker also starts pytest and every installed plugin, and the
controller does too before any worker starts (docs/using-racecheck-in-your-
project.md, "Speed", has the whole-command numbers). In the default
portfolio the DPOR member's schedules (2/9 of the numbers, each 30-40 times
a sampled one's cost on asyncio: it records every step's accesses) are split
DPOR's, dealt across the shards by subtree (:mod:`racecheck.sharding_auto`);
the per-shard lines count each shard's runs by member. ``--target threads``
times a rare race between four threads instead.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from typing import Any

import racecheck

#: the run must not start with this order of tasks
PATTERN = "ecece"


async def rare_interleaving() -> None:
    log: list[str] = []

    async def worker(name: str) -> None:
        for _ in range(6):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(*(worker(name) for name in "abcde"))
    assert not "".join(log).startswith(PATTERN), "".join(log)


#: the threads target must not start with this order of threads' lock sections
THREADS_PATTERN = "dcdcb"


def rare_threads() -> None:
    log: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        for _ in range(3):
            with lock:
                log.append(name)

    threads = [threading.Thread(target=worker, args=(n,)) for n in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not "".join(log).startswith(THREADS_PATTERN), "".join(log)


TARGETS = {"asyncio": rare_interleaving, "threads": rare_threads}


def _explore(
    schedules: int,
    shard: str | None,
    board: str | None,
    strategy: str = "auto",
    target: str = "asyncio",
) -> dict[str, Any]:
    from racecheck.sharding import Board, SliceState, parse_shard

    os.environ.setdefault("RACECHECK_DB", "none")
    options: dict[str, Any] = {"strategy": strategy}
    state = None
    if shard is not None:
        state = SliceState(parse_shard(shard), None if board is None else Board(board, "bench"))
        options["shard"] = state
    cpu, wall = time.process_time(), time.perf_counter()
    out: dict[str, Any] = {"shard": shard, "failure": None, "token": None}
    #: (schedule number, cpu so far), every 100 numbers: when this shard passed a number
    timeline: list[tuple[int, float]] = []

    def progress(done: int, total: int) -> None:
        if not timeline or done >= timeline[-1][0] + 100:
            timeline.append((done, time.process_time() - cpu))

    options["progress"] = progress
    try:
        racecheck.check(TARGETS[target], schedules=schedules, label="bench", **options)
    except racecheck.RaceFound as exc:
        out.update(failure=exc.schedules_run, token=exc.schedule)
    out["cpu"] = time.process_time() - cpu
    out["wall"] = time.perf_counter() - wall
    out["ran"] = state.ran if state is not None else out["failure"]
    out["result"] = None if state is None else state.to_dict()
    out["by_member"] = {} if state is None else dict(state.by_member)
    out["timeline"] = timeline
    return out


def _cpu_at(part: dict[str, Any], number: int) -> float:
    """A shard's cpu when it had run every number of its own up to ``number``.

    A shard that did not stop at the first failure ran on past it (it learns
    of it only from the board): that is not on the way to the verdict.
    """
    for done, cpu in part["timeline"]:
        if done >= number:
            return cpu
    return float(part["cpu"])


def _start(own: bool) -> None:
    if own:
        from racecheck.worker_session import own_session

        own_session()


def measure(
    shards: int,
    schedules: int,
    strategy: str = "auto",
    own: bool = True,
    target: str = "asyncio",
) -> dict[str, Any]:
    from racecheck.sharding import ShardResult, merge

    context = multiprocessing.get_context("spawn")
    # the serial run also in a fresh process: same imports, same session rule
    with context.Pool(1, initializer=_start, initargs=(own,)) as pool:
        start = time.perf_counter()
        serial = pool.apply(_explore, (schedules, None, None, strategy, target))
        serial["elapsed"] = time.perf_counter() - start
    board = tempfile.mkdtemp(prefix="racecheck-bench-")
    try:
        with context.Pool(shards, initializer=_start, initargs=(own,)) as pool:
            start = time.perf_counter()
            parts = pool.starmap(
                _explore,
                [
                    (schedules, f"{i}/{shards}", board, strategy, target)
                    for i in range(1, shards + 1)
                ],
            )
            elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(board, ignore_errors=True)
    merged = merge([ShardResult.from_dict(p["result"], p["failure"]) for p in parts])
    first = None if merged.winner is None else parts[merged.winner]
    return {
        "serial": serial,
        "parts": parts,
        "elapsed": elapsed,
        "same": (first is None and serial["failure"] is None)
        or (
            first is not None
            and (merged.schedules_run, first["token"]) == (serial["failure"], serial["token"])
        ),
        "wall_ratio": serial["elapsed"] / elapsed,
        "cpu_ratio": serial["cpu"] / max(p["cpu"] for p in parts),
        # to the verdict: each shard's cpu up to the merged first failure
        "verdict_ratio": None
        if first is None
        else serial["cpu"] / max(_cpu_at(p, merged.schedules_run) for p in parts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m racecheck.bench.shards")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument(
        "--strategy", choices=["auto", "random", "pct", "exhaustive", "dpor"], default="auto"
    )
    parser.add_argument("--target", choices=sorted(TARGETS), default="asyncio")
    parser.add_argument(
        "--session",
        choices=["own", "inherit"],
        default="own",
        help="every process in a session of its own (default), or all in this one",
    )
    args = parser.parse_args(argv)
    if args.shards < 1 or args.schedules < 1:
        parser.error("--shards and --schedules must be at least 1")
    before = os.getloadavg()[0]
    result = measure(args.shards, args.schedules, args.strategy, args.session == "own", args.target)
    serial = result["serial"]
    pattern = PATTERN if args.target == "asyncio" else THREADS_PATTERN
    print(
        f"rare {args.target} race ({pattern!r} first; {args.strategy} strategy;"
        f" sessions: {args.session};"
        f" load average {before:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    print(
        f"  serial     : failure at schedule {serial['failure']},"
        f" wall {serial['elapsed']:.2f} s, cpu {serial['cpu']:.2f} s"
        f" ({_rate(serial['failure'], serial['cpu'])} schedules/s of cpu)"
    )
    for part in result["parts"]:
        members = ", ".join(f"{k} {v}" for k, v in sorted(part["by_member"].items()))
        print(
            f"  shard {part['shard']:<5}: ran {part['ran']}, failure {part['failure']},"
            f" wall {part['wall']:.2f} s, cpu {part['cpu']:.2f} s"
            f" ({_rate(part['ran'], part['cpu'])} schedules/s of cpu)"
            + (f"; by member: {members}" if members else "")
        )
    print(f"  {args.shards} shards   : wall {result['elapsed']:.2f} s")
    print(
        f"  speed-up   : wall {result['wall_ratio']:.2f}x,"
        f" cpu critical path {result['cpu_ratio']:.2f}x"
        + (
            ""
            if result["verdict_ratio"] is None
            else f" ({result['verdict_ratio']:.2f}x up to the first failure's number)"
        )
        + ";"
        f" same failure and token: {'yes' if result['same'] else 'NO'}"
    )
    return 0 if result["same"] else 1


def _rate(count: int | None, seconds: float) -> str:
    return "-" if not count or seconds <= 0 else f"{count / seconds:.0f}"


if __name__ == "__main__":
    raise SystemExit(main())
