"""The small programs the benchmark runs: fixed (never failing) versions, so
every schedule runs to the end and the rate measures the scheduler, not luck."""

from __future__ import annotations

import asyncio
import threading


class Account:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = asyncio.Lock()

    async def deposit(self, amount: int) -> None:
        async with self.lock:
            current = self.balance
            await asyncio.sleep(0)
            self.balance = current + amount


async def asyncio_deposits() -> None:
    """Two tasks, a lock, a few suspensions: a typical small asyncio scenario."""
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5), account.deposit(1))
    assert account.balance == 16


class Tally:
    def __init__(self) -> None:
        self.total = 0
        self.count = 0
        self.last = 0
        self.lock = threading.Lock()

    def add(self, amount: int) -> None:
        value = amount * 2
        with self.lock:
            self.total += value
            self.count += 1
            self.last = value
        check = value - amount  # unlocked shared writes here would be a data race
        if check < 0:
            raise AssertionError("negative")


def two_threads() -> None:
    """Two threads of about ten traced lines each."""
    tally = Tally()
    first = threading.Thread(target=tally.add, args=(1,))
    second = threading.Thread(target=tally.add, args=(2,))
    first.start()
    second.start()
    first.join()
    second.join()
    assert tally.count == 2
