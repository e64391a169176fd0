"""A writers' room on the real stack (SQLite + Qdrant Edge) for service-level tests: the
NovelService (and the StoryService beside it) as `App` wires them, an injected clock that deadlines follow, announcements and ballot
edits collected in queues. The model is whatever the test passes (ScriptedLLM in unit tests)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.actor import Actor
from bot.presenters.novel import NovelPresenter, PresentedNovels, announcer, ballot_editor
from bot.reply import Reply
from novel.ballot import BallotPost
from novel.cast import StoryService
from novel.chapters import ChapterService
from novel.memory import PlotMemory
from novel.repo import NovelRepo
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
        self.edited: asyncio.Queue[tuple[BallotPost, Reply]] = asyncio.Queue()
        self._edits = edits
        self._wrap = store_wrapper
        self.service: PresentedNovels  # the room as the router calls it: Actor in, Reply out
        self.novel: NovelService  # the domain service underneath
        self.story: StoryService  # /novel characters, recap, map (App builds it beside)
        self.store: EdgeStore
        self.repo: NovelRepo

    async def announce(self, target: Actor, reply: Reply) -> None:
        await self.announced.put((target, reply))

    async def edit_ballot(self, post: BallotPost, reply: Reply) -> None:
        await self.edited.put((post, reply))

    async def __aenter__(self) -> Room:
        self.store = await EdgeStore.open(self.tmp / "qdrant", 64)
        self.repo = await NovelRepo.open(self.tmp / "baibao.sqlite3")
        store = self._wrap(self.store) if self._wrap else self.store
        memory = PlotMemory(self.repo, store, HashEmbedder(64), sparse)  # type: ignore[arg-type]
        presenter = NovelPresenter(self.settings)
        edits = ballot_editor(
            presenter,
            self.edit_ballot,
            self.settings.ballot_edit_interval_s,
            now=self.clock.monotonic,
            sleep=self.clock.pause,
        )
        chapters = ChapterService(self.repo, memory, self.llm, self.settings, self.clock)
        # The process's scheduler, its jobs stored next to the room's SQLite (as `App` keeps
        # them): a round's deadline survives the Room being opened again.
        self.scheduler = Scheduler(self.tmp / "jobs.sqlite3", Clock(now=self.clock))
        self.novel = NovelService(
            self.repo,
            memory,
            chapters,
            self.settings,
            announcer(presenter, self.announce),
            Clock(now=self.clock),
            ballots=edits if self._edits else None,
            scheduler=self.scheduler,
        )
        self.story = StoryService(self.repo, self.llm, chapters.blueprint)
        self.service = PresentedNovels(self.novel, presenter)
        await self.novel.__aenter__()
        return self

    async def close(self) -> None:
        await self.novel.__aexit__(None, None, None)
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
