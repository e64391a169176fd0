"""In-process fakes of the two service seams, for tests whose subject is the router or a
transport (not the services): they record every call and answer with a settable reply."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from bot.actor import Actor
from bot.ballot.board import posted_ballot
from bot.ballot.codec import VoteButton
from bot.ballot.room import BallotSettings
from bot.ballot.store import PostedBallot
from bot.chats import ChatSettings
from bot.commands import standard_registry
from bot.ratelimit import RateLimiter
from bot.registry import Call, PollAnswer, Run
from bot.reply import Button, Poll, Posted, Progress, Reply
from bot.router import Router
from novel import api as novel_api
from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.requests import AskRequest, CiteRequest


class _Recorder:
    """Wait for calls on an event, never on time: `await fake.wait_calls(2)`."""

    def __init__(self) -> None:
        self._changed = asyncio.Condition()
        # Called as each call's work starts: the work takes time (e.g. a virtual clock moves).
        self.takes: Callable[[], object] | None = None

    async def _notify(self) -> None:
        if self.takes is not None:
            self.takes()
        async with self._changed:
            self._changed.notify_all()

    async def wait_calls(self, count: int) -> None:
        async with asyncio.timeout(60), self._changed:  # a hang guard, not a time limit
            await self._changed.wait_for(lambda: len(self.calls) >= count)  # type: ignore[attr-defined]


class RecordingScholar(_Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Actor, AskRequest | CiteRequest]] = []
        self.reply: Reply = Reply.text("answer", lang="zh")
        self.partials: list[str] = []  # streamed through `progress` before the reply
        self.between: Callable[[], Awaitable[object]] | None = None  # awaited between partials

    @property
    def requests(self) -> list[AskRequest | CiteRequest]:
        return [request for _, request in self.calls]

    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply:
        self.calls.append((actor, request))
        await self._notify()
        if progress is not None:
            for i, partial in enumerate(self.partials):
                if i and self.between is not None:
                    await self.between()
                await progress(partial)
        return self.reply

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply:
        self.calls.append((actor, request))
        await self._notify()
        return self.reply

    def source_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        return [t for t in ("神的经纶", "新约职事") if typed in t][:limit]

    def era_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        return [e for e in ("sample-1970s", "sample-1980s") if typed in e][:limit]


class RecordingNovels(_Recorder):
    """The writers' room's handlers by request type (`bot.commands.novel.NovelRunner`): every
    request any handler gets is recorded, and answered with `reply`."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Actor, novel_api.NovelRequest]] = []
        self.reply: Reply = Reply.text("ok", lang="zh")

    @property
    def requests(self) -> list[novel_api.NovelRequest]:
        return [request for _, request in self.calls]

    def of(self, kind: type[Any]) -> Run[Any]:
        return self.run

    async def run(self, call: Call, request: object) -> Reply:
        self.calls.append((call.actor, request))  # type: ignore[arg-type]
        await self._notify()
        return self.reply


class RecordingBallots(_Recorder):
    """The ballot room as its commands call it (`bot.ballot.room.BallotReplies`): votes by
    button, poll answers and settings recorded and answered with `reply`; every ballot the
    router's `posted` hook is told of recorded in `posted_ballots`."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Actor, VoteButton | PollAnswer | BallotSettings]] = []
        self.reply: Reply = Reply.text("ok", lang="zh")
        self.posted_ballots: list[PostedBallot] = []

    @property
    def requests(self) -> list[VoteButton | PollAnswer | BallotSettings]:
        return [request for _, request in self.calls]

    async def _record(
        self, actor: Actor, request: VoteButton | PollAnswer | BallotSettings
    ) -> Reply:
        self.calls.append((actor, request))
        await self._notify()
        return self.reply

    async def vote(self, actor: Actor, button: VoteButton) -> Reply:
        return await self._record(actor, button)

    async def poll_answer(self, actor: Actor, answer: PollAnswer) -> Reply:
        return await self._record(actor, answer)

    async def poll_place(self, platform: str, poll_id: str) -> tuple[str, str] | None:
        for ballot in self.posted_ballots:
            if ballot.poll_id == poll_id and ballot.platform == platform:
                return ballot.chat_id, ballot.channel_id
        return None

    async def settings(self, actor: Actor, asked: BallotSettings) -> Reply:
        return await self._record(actor, asked)

    async def posted(self, where: Actor, reply: Reply, posted: Posted) -> None:
        ballot = posted_ballot(where, reply, posted)
        if ballot is not None:
            self.posted_ballots.append(ballot)


def fake_router(
    scholar: RecordingScholar,
    novels: RecordingNovels,
    *,
    ballots: RecordingBallots | None = None,
    limiter: RateLimiter | None = None,
    chats: ChatSettings | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Router:
    """The real router and command registry over the recording services (and, when given,
    real chat settings: `/settings` and the chat's language)."""
    registry = standard_registry(scholar, novels, ballots or RecordingBallots(), chats=chats)
    return Router(registry, limiter=limiter, chats=chats, clock=clock)


def ballot_poll(
    question: str, labels: tuple[str, ...], round_id: str, *, native: bool = False
) -> Poll:
    """A round's ballot as the ballot room builds one: each option a button whose action is
    the vote codec's (`VoteButton`)."""
    options = tuple(
        Button(label, VoteButton(round_id, i).action) for i, label in enumerate(labels, start=1)
    )
    return Poll(question, options, round_id, native)
