"""The trio program the benchmark runs: fixed (never failing), like workloads.py's.

A module of its own, so the bench imports trio only when it is installed.
"""

from __future__ import annotations

import trio


class TrioAccount:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = trio.Lock()

    async def deposit(self, amount: int) -> None:
        async with self.lock:
            current = self.balance
            await trio.sleep(0)
            self.balance = current + amount
            # checked here, under the lock (the row must measure clean runs);
            # main reading it after the nursery is clean too since the nursery's
            # end carries the children's clocks (test_detector_trio_joins)
            assert self.balance == current + amount


async def trio_deposits() -> None:
    """Three tasks, a lock, a checkpoint each, in a nursery: the asyncio workload on trio."""
    account = TrioAccount()
    async with trio.open_nursery() as nursery:
        for amount in (10, 5, 1):
            nursery.start_soon(account.deposit, amount)
