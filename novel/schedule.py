"""Round deadlines, kept by the injected clock (`retrieval.clock.Clock`).

Each deadline is a task that sleeps on the clock until the deadline's wall time has come (in
steps of at most `STEP_S`, re-reading the time after each, so a wall clock that jumps, e.g. after
a suspend, is noticed), then starts the job as a task of its own. Nothing is persisted here on
purpose: every deadline lives in SQLite, and the service re-schedules the open rounds on
start-up; a deadline already past fires at once. `close()` cancels the waits and the jobs still
running, so nothing outlives the service.

`run_due()` starts at once every job whose time has come by the clock (a caller that moved the
clock itself need not wait for the sleeps to notice).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from retrieval.clock import SYSTEM_CLOCK, Clock, utcnow

log = logging.getLogger(__name__)

__all__ = ["STEP_S", "Deadlines", "Now", "utcnow"]

Now = Callable[[], datetime]  # wall time (aware UTC), as the services read it
Job = Callable[[], Awaitable[None]]

STEP_S = 60.0  # the longest single sleep: the clock is read again after it


class Deadlines:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._due: dict[str, tuple[datetime, Job]] = {}
        self._waits: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # jobs running

    def at(self, key: str, when: datetime, fn: Job) -> None:
        """Run `fn` at `when` (by the clock); replaces an earlier job with the same key."""
        self.cancel(key)
        self._due[key] = (when, fn)
        wait = asyncio.get_running_loop().create_task(self._wait(key, when, fn))
        self._waits[key] = wait
        wait.add_done_callback(lambda done: self._forget_wait(key, done))

    async def _wait(self, key: str, when: datetime, fn: Job) -> None:
        while (left := (when - self._clock.now()).total_seconds()) > 0:
            await self._clock.sleep(min(left, STEP_S))
        if self._due.get(key, (None, None))[1] is fn:
            del self._due[key]
            self._spawn(key, fn)

    def _forget_wait(self, key: str, done: asyncio.Task[None]) -> None:
        if self._waits.get(key) is done:
            del self._waits[key]

    def _spawn(self, key: str, fn: Job) -> None:
        task = asyncio.get_running_loop().create_task(self._guarded(key, fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self, key: str) -> None:
        """Forget the deadline `key` (a job already running is not stopped)."""
        self._due.pop(key, None)
        wait = self._waits.pop(key, None)
        if wait is not None and wait is not asyncio.current_task():
            wait.cancel()

    def run_due(self) -> list[str]:
        """Start every job whose time has come by the clock; returns their keys."""
        now = self._clock.now()
        due = [key for key, (when, _) in self._due.items() if when <= now]
        for key in due:
            _, fn = self._due[key]
            self.cancel(key)
            self._spawn(key, fn)
        return due

    def when(self, key: str) -> datetime | None:
        found = self._due.get(key)
        return found[0] if found else None

    def pending(self) -> list[str]:
        return list(self._due)

    async def idle(self) -> None:
        """Wait until every started job has finished (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        self._due.clear()
        running = [*self._waits.values(), *self._tasks]
        self._waits.clear()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    @staticmethod
    async def _guarded(key: str, fn: Job) -> None:
        try:
            await fn()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("deadline job %s failed", key)
