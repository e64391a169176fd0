"""A writers' room on the real stack (SQLite + Qdrant Edge) for service-level tests: the
NovelService (and the StoryService beside it), its commands' handlers and the ballot room as
`App` wires them, an injected clock that deadlines follow, announcements and ballot edits
collected in queues. The model is whatever the test passes (ScriptedLLM in unit tests)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.actor import Actor
from bot.ballot.board import BallotBoard
from bot.ballot.codec import VoteButton
from bot.ballot.room import BallotRoom, BallotSettings
from bot.ballot.store import BallotStore
from bot.commands.novel import novel_handlers
from bot.presenters.novel import NovelAnnouncer, NovelPresenter
from bot.registry import Call, Handlers, PollAnswer
from bot.reply import Posted, Progress, Reply
from novel.cast import StoryService
from novel.chapters import ChapterService
from novel.memory import PlotMemory
from novel.repo import NovelRepo
from novel.rounds import BallotViews
from novel.service import NovelService
from novel.settings import NovelSettings
from novel.summary import SUMMARY_SYSTEM
from retrieval.clock import Clock
from retrieval.fakes import HashEmbedder
from retrieval.lifecycle import Closing
from retrieval.ports import LLM, LLMRequest
from retrieval.schedule import Scheduler
from retrieval.store.edge import EdgeStore
from retrieval.types import SparseVector

ADMIN = Actor("console", "g1", "admin", "管理员", channel_id="c1", is_admin=True)
SLOW = NovelSettings(proposal_minutes=60, vote_minutes=60)
BALLOT_EDIT_INTERVAL_S = 5.0


def member(i: int, chat: str = "g1") -> Actor:
    return Actor("console", chat, f"u{i}", f"成员{i}", channel_id="c1")


def sparse(text: str) -> SparseVector:
    ids = sorted({ord(ch) for ch in text})[:64]
    return SparseVector(tuple(ids), tuple(1.0 for _ in ids))


def fake_model(request: LLMRequest) -> str:
    """Writes a chapter for the goal in the prompt; answers summary requests with JSON."""
    prompt = request.messages[-1].content
    if request.system == SUMMARY_SYSTEM:
        title = re.search(r"章节标题：(.+)", prompt)
        return (
            "好的：```json\n"
            + json.dumps(
                {
                    "title": title.group(1) if title else "",
                    "summary": "林远与苏晴在渡口夜里过江。",
                    "characters": ["林远", "苏晴"],
                    "scenes": ["渡口"],
                    "events": ["夜渡"],
                },
                ensure_ascii=False,
            )
            + "\n```"
        )
    goal = re.search(r"标题：(.+)", prompt)
    name = goal.group(1) if goal else "无题"
    para = f"{name}这一夜，林远撑船离开渡口，苏晴在船头举着灯笼，江水拍打着船舷。"
    return "\n\n".join(para * 3 for _ in range(6))


class FakeClock:
    """The service clock; tests move it and then run the deadlines that came due."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)

    # The ballot editor's throttle counts seconds on its own virtual clock: an edit that waits
    # its interval goes out in test time at once, while round deadlines wait for `Room.fire`.
    elapsed: float = 0.0

    def monotonic(self) -> float:
        return self.elapsed

    async def pause(self, seconds: float) -> None:
        self.elapsed += max(seconds, 0.0)
        await asyncio.sleep(0)


class Replies:
    """The writers' room as the chat calls it: an Actor in, a Reply out. `handle` runs the
    handler registered for the request's type (what a command runs once the router parsed
    it); votes by button, poll answers and ballot settings go to the ballot room."""

    def __init__(
        self,
        handlers: Handlers,
        ballots: BallotRoom,
        service: NovelService,
        present: NovelPresenter,
    ) -> None:
        self.handlers = handlers
        self.ballots = ballots
        self.service = service  # the domain underneath
        self.present = present

    async def handle(
        self, actor: Actor, request: object, progress: Progress | None = None
    ) -> Reply:
        return await self.handlers.run(Call(actor, progress), request)

    async def vote(self, actor: Actor, option: int, round_id: str) -> Reply:
        """A ballot's button: option `option` of round `round_id`."""
        return await self.ballots.vote(actor, VoteButton(round_id, option))

    async def poll_answer(self, actor: Actor, poll_id: str, options: tuple[int, ...]) -> Reply:
        """A native poll's answer, options as the ballot numbers them (1-based)."""
        return await self.ballots.poll_answer(
            actor, PollAnswer(poll_id, tuple(o - 1 for o in options))
        )

    async def ballot_settings(
        self, actor: Actor, style: str | None = None, voters: str | None = None
    ) -> Reply:
        return await self.ballots.settings(actor, BallotSettings(style, voters))


class Room(Closing):
    """The writers' room on real stores (Edge, SQLite), as `App` wires it; `async with` opens it."""

    def __init__(
        self,
        tmp: Path,
        llm: LLM | None,
        settings: NovelSettings = SLOW,
        clock: FakeClock | None = None,
        *,
        edits: bool = False,
        store_wrapper: Callable[[EdgeStore], object] | None = None,
    ) -> None:
        self.tmp = tmp
        self.llm = llm
        self.settings = settings
        self.clock = clock or FakeClock()
        self.announced: asyncio.Queue[tuple[Actor, Reply]] = asyncio.Queue()
        # (the ballot's chat, its message, its native poll's message, the new rendering)
        self.edited: asyncio.Queue[tuple[Actor, str, str, Reply]] = asyncio.Queue()
        self._edits = edits
        self._wrap = store_wrapper
        self.service: Replies  # the room as the router calls it: Actor in, Reply out
        self.novel: NovelService  # the domain service underneath
        self.board: BallotBoard  # the ballot room's board: looks, posted ballots, edits
        self.ballots: BallotRoom
        self.story: StoryService  # /novel characters, recap, map (App builds it beside)
        self.store: EdgeStore
        self.repo: NovelRepo

    async def announce(self, target: Actor, reply: Reply) -> Posted:
        await self.announced.put((target, reply))
        return Posted()

    async def edit_ballot(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None:
        if self._edits:
            await self.edited.put((target, message_id, poll_message_id, reply))

    async def post_ballot(
        self,
        where: Actor,
        round_id: str,
        message_id: str,
        poll_id: str = "",
        poll_message_id: str = "",
    ) -> None:
        """A transport posted round `round_id`'s ballot in `where`'s chat (what the router's
        `posted` hook tells the board)."""
        view = await self.novel.rounds.ballots.view(round_id)
        assert view is not None
        reply = self.board.reply(view, where)
        await self.board.posted(where, reply, Posted((message_id,), poll_id, poll_message_id))

    async def __aenter__(self) -> Room:
        self.store = await EdgeStore.open(self.tmp / "qdrant", 64)
        self.repo = await NovelRepo.open(self.tmp / "baibao.sqlite3")
        store = self._wrap(self.store) if self._wrap else self.store
        memory = PlotMemory(self.repo, store, HashEmbedder(64), sparse)  # type: ignore[arg-type]
        self.ballot_store = await BallotStore(self.tmp / "baibao.sqlite3").__aenter__()
        self.board = BallotBoard(
            self.ballot_store,
            BallotViews(self.repo.rounds, self.clock),
            self.edit_ballot,
            chat_of=self.repo.stories.chat_of,
            interval_s=BALLOT_EDIT_INTERVAL_S,
            clock=Clock(now=self.clock, monotonic=self.clock.monotonic, sleep=self.clock.pause),
        )
        presenter = NovelPresenter(self.settings, self.board)
        chapters = ChapterService(self.repo, memory, self.llm, self.settings, self.clock)
        # The process's scheduler, its jobs stored next to the room's SQLite (as `App` keeps
        # them): a round's deadline survives the Room being opened again.
        self.scheduler = Scheduler(self.tmp / "jobs.sqlite3", Clock(now=self.clock))
        self.novel = NovelService(
            self.repo,
            memory,
            chapters,
            self.settings,
            NovelAnnouncer(presenter, self.announce, self.board, self.repo.stories),
            Clock(now=self.clock),
            scheduler=self.scheduler,
        )
        self.story = StoryService(self.repo, self.llm, chapters.blueprint)
        self.ballots = BallotRoom(self.board, self.novel.rounds, presenter, self.repo.stories)
        self.service = Replies(
            novel_handlers(self.novel, presenter), self.ballots, self.novel, presenter
        )
        await self.novel.__aenter__()
        return self

    async def close(self) -> None:
        await self.novel.__aexit__(None, None, None)
        await self.board.close()
        await self.ballot_store.close()
        await self.scheduler.close()
        await self.repo.close()
        await self.store.close()

    async def fire(self, **advance: float) -> list[str]:
        """Move the clock and run every deadline that came due (waiting for them to finish)."""
        self.clock.advance(**advance)
        due = self.novel.deadlines.run_due()
        await self.novel.deadlines.idle()
        return due

    async def next_announcement(self) -> tuple[Actor, Reply]:
        async with asyncio.timeout(30):
            return await self.announced.get()

    async def wait_for(self, pred: Callable[[Reply], bool]) -> Reply:
        while True:
            _, reply = await self.next_announcement()
            if pred(reply):
                return reply
