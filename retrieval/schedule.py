"""Scheduled work on APScheduler 3 (`AsyncIOScheduler`), with its persistent SQLite job store
(`SQLAlchemyJobStore`): a job written once survives every restart, and one due while the
process was down runs when it starts again (coalesced, no grace limit). No code of ours
re-schedules anything at start-up.

A job is a kind and a key (`"round:<id>"`, `"purge:trash"`); what runs it is the handler the
live owner registered for the kind (`on`). The store keeps only that name (and the key), so
a restart finds the new process's handler. Kinds: the writers' room's round deadlines and
resumed writes (`novel.schedule`), the trash purge and the daily budget reset (`bot.jobs`).

Time is the injected clock's (`retrieval.clock.Clock`), as for every deadline the process
keeps: APScheduler 3 reads `datetime.now()` in its processing loop, so this scheduler runs
that loop (`_process_jobs`, the due jobs of each store to the executor, then the next wake)
with the clock's time, and waits on the clock's `sleep` between wakes (at most `STEP_S` at a
time, so a wall clock that jumps is noticed). A test on virtual time moves its clock and
either lets the scheduler wake on it or wakes it at once (`run_due`); none waits in real time.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apscheduler.jobstores.base import BaseJobStore, JobLookupError
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.base import STATE_PAUSED, STATE_STOPPED
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger

from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.lifecycle import Closing

log = logging.getLogger(__name__)

Handler = Callable[[str], Awaitable[None]]  # the job's key (after "kind:") → its work
STEP_S = 60.0  # the longest single wait: the clock is read again after it

# The live schedulers by name (the job store's path): a stored job names its scheduler, kind
# and key, and `_fire` finds who runs it now.
_LIVE: weakref.WeakValueDictionary[str, Scheduler] = weakref.WeakValueDictionary()


async def _fire(owner: str, job_id: str) -> None:
    """What every stored job runs: the live owner's handler for the job's kind."""
    scheduler = _LIVE.get(owner)
    if scheduler is None:
        log.warning("job %s: its scheduler is closed", job_id)
        return
    await scheduler.run(job_id)


class _ClockScheduler(AsyncIOScheduler):  # type: ignore[misc]  # (APScheduler has no types)
    """APScheduler's asyncio scheduler on an injected clock (see the module docstring)."""

    def __init__(self, clock: Clock, **options: Any) -> None:
        super().__init__(**options)
        self._clock = clock
        self._sleeper: asyncio.Task[None] | None = None

    def now(self) -> datetime:
        return self._clock.now().astimezone(UTC)

    def _start_timer(self, wait_seconds: float | None) -> None:
        self._stop_timer()
        if wait_seconds is not None and self._eventloop is not None:
            self._sleeper = self._eventloop.create_task(self._sleep(wait_seconds))

    async def _sleep(self, seconds: float) -> None:
        await self._clock.sleep(min(seconds, STEP_S))
        self._sleeper = None
        self.wakeup()

    def _stop_timer(self) -> None:
        sleeper, self._sleeper = self._sleeper, None
        if sleeper is not None and sleeper is not asyncio.current_task():
            sleeper.cancel()

    def _process_jobs(self) -> float | None:
        """Start the jobs due by the clock; the seconds until the next one (None: none)."""
        if self.state == STATE_PAUSED:
            return None
        now = self.now()
        following: datetime | None = None
        with self._jobstores_lock:
            for alias, store in self._jobstores.items():
                for job in store.get_due_jobs(now):
                    self._submit(alias, store, job, now)
                upcoming = store.get_next_run_time()
                if upcoming is not None and (following is None or upcoming < following):
                    following = upcoming
        if following is None:
            return None
        return max(0.0, (following - self.now()).total_seconds())

    def _submit(self, alias: str, store: BaseJobStore, job: Any, now: datetime) -> None:
        """Hand one due job to its executor (once, however many runs it missed), then move it
        to its next run or drop it."""
        run_times = job._get_run_times(now)[-1:]  # coalesced
        if run_times:
            try:
                self._lookup_executor(job.executor).submit_job(job, run_times)
            except Exception:
                log.exception("job %s could not be started", job.id)
        following = job.trigger.get_next_fire_time(run_times[-1] if run_times else None, now)
        if following is not None:
            job._modify(next_run_time=following)
            store.update_job(job)
        else:
            self.remove_job(job.id, alias)


class Scheduler(Closing):
    """Jobs by kind and key, kept in `path` (an SQLite file; None: in memory, for a service
    that is not the process's). Construct it on a running event loop; `close()` stops it."""

    def __init__(self, path: Path | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.name = str(path) if path is not None else f"memory:{id(self)}"
        self._handlers: dict[str, Handler] = {}
        self._running: set[asyncio.Task[None]] = set()
        store: BaseJobStore = MemoryJobStore()
        if path is not None:
            from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

            path.parent.mkdir(parents=True, exist_ok=True)
            store = SQLAlchemyJobStore(url=f"sqlite:///{path}")
        self._aps = _ClockScheduler(
            clock,
            jobstores={"default": store},
            timezone=UTC,
            # A job may write its own next run while it runs (a round's proposal deadline sets
            # its vote deadline, under the same id), and that may come due before the first
            # run has been counted as finished: instances are not limited to one.
            job_defaults={"coalesce": True, "misfire_grace_time": None, "max_instances": 100},
        )
        _LIVE[self.name] = self
        self._aps.start()

    # ---- what runs a job ----------------------------------------------------------------------

    def on(self, kind: str, handler: Handler) -> None:
        """`handler(key)` runs the jobs `kind:key` (a restart registers it again)."""
        self._handlers[kind] = handler

    async def run(self, job_id: str) -> None:
        kind, _, key = job_id.partition(":")
        handler = self._handlers.get(kind)
        if handler is None:
            log.warning("job %s: nothing runs %s jobs in this process", job_id, kind)
            return
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            await handler(key)
        except Exception:
            log.exception("job %s failed", job_id)
        finally:
            if task is not None:
                self._running.discard(task)

    # ---- scheduling ---------------------------------------------------------------------------

    def at(self, job_id: str, when: datetime) -> None:
        """Run `job_id` (`kind:key`) once at `when`; replaces a job of that id."""
        self._add(job_id, DateTrigger(run_date=when, timezone=UTC), when.astimezone(UTC))

    def daily(self, job_id: str, *, hour: int = 0, minute: int = 0) -> None:
        """Run `job_id` every day at `hour:minute` UTC. Kept as it is when it exists (a
        restart keeps its next run, one missed while down runs once at start)."""
        if self._aps.get_job(job_id) is not None:
            return
        trigger = CronTrigger(hour=hour, minute=minute, timezone=UTC)
        self._add(job_id, trigger, trigger.get_next_fire_time(None, self._aps.now()))

    def _add(self, job_id: str, trigger: BaseTrigger, first: datetime | None) -> None:
        self._aps.add_job(
            "retrieval.schedule:_fire",
            trigger,
            args=(self.name, job_id),
            id=job_id,
            name=job_id,
            replace_existing=True,
            next_run_time=first,
        )

    def cancel(self, job_id: str) -> None:
        try:
            self._aps.remove_job(job_id)
        except JobLookupError:
            pass

    def when(self, job_id: str) -> datetime | None:
        job = self._aps.get_job(job_id)
        return job.next_run_time if job is not None else None

    def pending(self) -> list[str]:
        return [job.id for job in self._aps.get_jobs()]

    # ---- waking ---------------------------------------------------------------------------------

    def run_due(self) -> list[str]:
        """Start at once every job due by the clock (a caller that moved the clock itself
        need not wait for the scheduler to wake); the ids started."""
        now = self._aps.now()
        due = [
            job.id
            for job in self._aps.get_jobs()
            if job.next_run_time is not None and job.next_run_time <= now
        ]
        self._aps._start_timer(self._aps._process_jobs())
        return due

    async def idle(self) -> None:
        """Wait until every started job has finished (tests, shutdown)."""
        await asyncio.sleep(0)  # a job the executor just submitted starts running
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)
            await asyncio.sleep(0)

    async def close(self) -> None:
        """Stop waking and cancel the jobs running; the stored jobs stay for the next start."""
        if self._aps.state != STATE_STOPPED:
            self._aps.pause()
            self._aps._stop_timer()
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if self._aps.state != STATE_STOPPED:
            self._aps.shutdown(wait=False)
            await asyncio.sleep(0)  # its shutdown runs on the loop
        _LIVE.pop(self.name, None)
