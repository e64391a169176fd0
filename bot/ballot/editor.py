"""The throttled editor that keeps each posted ballot's running count current.

Generic over what a ballot renders to (the board renders a `Reply`): it only schedules,
coalesces and skips identical renderings, on the injected clock. A ballot edit is best effort:
the tally itself is in SQLite.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from bot.ballot.store import PostedBallot

log = logging.getLogger(__name__)

Rendered = TypeVar("Rendered")

# round id → the ballot's place and its current rendering (None: nothing to edit)
RenderBallot = Callable[[str], Awaitable[tuple[PostedBallot, Rendered] | None]]
EditBallot = Callable[[PostedBallot, Rendered], Awaitable[None]]


@dataclass(slots=True)
class _Pending(Generic[Rendered]):
    dirty: bool = False
    last_at: float = float("-inf")
    task: asyncio.Task[None] | None = None
    shown: Rendered | None = None  # what the message shows now: an identical edit is skipped


@dataclass(slots=True)
class BallotEditor(Generic[Rendered]):
    """Edits each round's ballot message with the running count, at most once per
    `interval_s` per ballot (flood limits: Telegram allows about 20 messages a minute in a
    group, edits included; Discord 5 edits per 5 s in a channel). Votes arriving while an
    edit waits are coalesced into it: the rendering happens when the edit goes out.
    """

    render: RenderBallot[Rendered]
    edit: EditBallot[Rendered]
    interval_s: float = 5.0
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    edits: int = 0
    _rounds: dict[str, _Pending[Rendered]] = field(default_factory=dict)

    def shown(self, round_id: str, rendered: Rendered) -> None:
        """The ballot was just posted showing `rendered`."""
        self._rounds.setdefault(round_id, _Pending()).shown = rendered

    async def posted(self, round_id: str, *, counted: bool) -> None:
        """Remember what a fresh ballot shows; if votes came first, show them."""
        if not counted:
            found = await self.render(round_id)
            if found is not None:
                self.shown(round_id, found[1])  # as just posted
                return
        self.touch(round_id)

    def touch(self, round_id: str) -> None:
        """The tally of `round_id` changed: schedule an edit (or fold into a scheduled one)."""
        state = self._rounds.setdefault(round_id, _Pending())
        state.dirty = True
        if state.task is None or state.task.done():
            state.task = asyncio.get_running_loop().create_task(self._run(round_id, state))

    async def _run(self, round_id: str, state: _Pending[Rendered]) -> None:
        while state.dirty:
            wait = state.last_at + self.interval_s - self.now()
            if wait > 0:
                await self.sleep(wait)
            state.dirty = False
            try:
                found = await self.render(round_id)
                if found is None:
                    return
                if found[1] == state.shown:  # no new count (e.g. a retraction of nothing)
                    continue
                await self.edit(*found)
                state.shown = found[1]
                self.edits += 1
            except asyncio.CancelledError:
                raise
            except Exception:  # a ballot edit is best effort: the tally itself is in SQLite
                log.warning("editing the ballot of round %s failed", round_id, exc_info=True)
            state.last_at = self.now()

    async def idle(self) -> None:
        """Wait until every scheduled edit went out (tests, shutdown)."""
        while True:
            tasks = [s.task for s in self._rounds.values() if s.task and not s.task.done()]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        tasks = [s.task for s in self._rounds.values() if s.task and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._rounds.clear()
