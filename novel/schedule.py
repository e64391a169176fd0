"""The writers' room's deadlines, on the process's scheduler (`retrieval.schedule`:
APScheduler with its persistent SQLite job store, on the injected clock).

A deadline is a job `kind:key` (`round:<id>`: a round's proposal or vote deadline;
`resume:<id>`: a write the process stopped in the middle of) run by the handler the service
registers for its kind (`on`). The jobs are stored with the process's other jobs, so a round's
deadline survives a restart with nothing re-scheduled; one that passed while the process was
down runs as it starts. A service given no scheduler keeps its deadlines in memory (a
writers' room that is not the process's, as in some tests).

`run_due()` starts at once every job whose time has come by the clock (a caller that moved
the clock itself need not wait for the scheduler to wake on it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from retrieval.clock import SYSTEM_CLOCK, Clock, utcnow
from retrieval.schedule import Scheduler

__all__ = ["Deadlines", "Now", "utcnow"]

Now = Callable[[], datetime]  # wall time (aware UTC), as the services read it


class Deadlines:
    def __init__(self, scheduler: Scheduler | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self._owned = scheduler is None
        self._scheduler = scheduler or Scheduler(None, clock)
        self._kinds: set[str] = set()

    def on(self, kind: str, job: Callable[[str], Awaitable[None]]) -> None:
        """`job(key)` runs the deadlines `kind:key`."""
        self._kinds.add(kind)
        self._scheduler.on(kind, job)

    def at(self, key: str, when: datetime) -> None:
        """Run the deadline `key` (`kind:…`) at `when`, replacing an earlier one."""
        self._scheduler.at(key, when)

    def cancel(self, key: str) -> None:
        self._scheduler.cancel(key)

    def when(self, key: str) -> datetime | None:
        return self._scheduler.when(key)

    def pending(self) -> list[str]:
        return [k for k in self._scheduler.pending() if k.partition(":")[0] in self._kinds]

    def run_due(self) -> list[str]:
        """Start every deadline due by the clock at once; returns their keys."""
        return [k for k in self._scheduler.run_due() if k.partition(":")[0] in self._kinds]

    async def idle(self) -> None:
        """Wait until every started job has finished (tests, shutdown)."""
        await self._scheduler.idle()

    async def close(self) -> None:
        """Stop the deadlines' scheduler when it is the service's own (the process's stops
        with the process)."""
        if self._owned:
            await self._scheduler.close()
