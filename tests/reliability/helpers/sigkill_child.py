"""A child process for the SIGKILL campaign (tests/reliability/test_sigkill.py).

    python -m tests.reliability.helpers.sigkill_child corpus|trash|novel|story DATA_DIR SEED

Opens the real storage stack (Qdrant Edge + SQLite) on DATA_DIR with the in-process
`HashEmbedder`, prints `READY`, then mutates forever until the parent kills it:

- `corpus`: the ingest pipeline on Markdown files whose title stays the same while the body
  changes (each version written to `src/<doc>.v<k>.md`, so the registry's `path` names the
  version it believes current); now and then a document is deleted.
- `trash`: the library's trash: live documents deleted to the trash, restored from it and
  purged for good (`BEGIN <op> <doc>` before each, `OP` after); a purged document is indexed
  again, so there is always something to delete.
- `novel`: the writers' room; chapter revisions (uploaded text) and rollbacks through the
  handlers `/chapter revise` and `/chapter rollback` run (`bot.commands.novel`), exactly as
  the router would call them.
- `story`: revisions of chapter 2 only, each version changing the story state its own way
  (`story_facts`: who is introduced, where 林远 goes, whether 霍三 is hurt or dies); `BEGIN <k>`
  is printed before each revision, so the parent knows which one the kill interrupted.

Every version's text carries a unique marker `〔<doc>-<k>〕` in every paragraph so the parent can
tell which version any stored chunk belongs to. `OP <k>` is printed after each completed
operation (the parent only uses it for diagnostics).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.fakes import HashEmbedder
from retrieval.types import SparseVector

if TYPE_CHECKING:
    from bot.actor import Actor
    from bot.reply import Reply
    from novel.results import BallotView
    from novel.service import NovelService
    from retrieval.index import Indexer
    from retrieval.store.edge import EdgeStore

DIM = 64
DOCS = ("甲", "乙", "丙")
CHAT = "g-sigkill"
CHAPTERS = 3


def marker(doc: str, k: int) -> str:
    return f"〔{doc}-{k:05d}〕"


def corpus_text(doc: str, k: int, paragraphs: int) -> str:
    m = marker(doc, k)
    body = [
        f"{m}第{i}段：神圣的分赐使召会成为基督的身体，{m}生命的供应在其中涌流。" * 6
        for i in range(paragraphs)
    ]
    return f"# 文档{doc}\n\n" + "\n\n".join(body) + "\n"


def chapter_text(doc: str, k: int, paragraphs: int) -> str:
    m = marker(doc, k)
    para = f"{m}林远撑船离开渡口，苏晴在船头举着灯笼，江水拍打着船舷，{m}夜色很深。"
    return "\n\n".join(para * 3 for _ in range(paragraphs))


# The story campaign: chapters 1 and 3 stay; every version of chapter 2 says other things.
STORY_STATIC = ("苏晴在青岚渡口等船。", "沈默在听潮阁抚琴。")
STORY_NAMES = ("钱七", "孟青山", "欧阳朔", "杜九娘", "魏长庚", "贺兰舟", "蒋小满", "邵寒衣")
STORY_PLACES = ("江心岛", "听潮阁", "漕帮总舵")


def story_facts(k: int) -> tuple[str, str, str]:
    """(the name version k introduces, where 林远 goes, what happens to 霍三)."""
    return STORY_NAMES[k % len(STORY_NAMES)], STORY_PLACES[k % 3], ("hurt", "dead")[k % 2 == 0]


def story_text(k: int, paragraphs: int) -> str:
    name, place, fate = story_facts(k)
    m = marker("乙", k)
    said = "受了重伤" if fate == "hurt" else "死了"
    para = f"一个名叫{name}的外乡人来到渡口，{m}。林远来到{place}，霍三在那里{said}，{m}。"
    return "\n\n".join(para for _ in range(paragraphs))


def sparse(text: str) -> SparseVector:
    """The sparse encoder the novel tests use (characters as terms). The jieba-based
    `Bm25Encoder` costs two seconds per process start, forty times over in a campaign, and
    the sparse values are not what a crash can corrupt: the write order is."""
    ids = sorted({ord(ch) for ch in text})[:64]
    return SparseVector(tuple(ids), tuple(1.0 for _ in ids))


class CharEncoder:
    """`Bm25Encoder`'s two methods over `sparse` (see there)."""

    def encode_document(self, text: str, refs: Sequence[str] = ()) -> SparseVector:
        return sparse(text)

    def encode_query(self, text: str, expansions: object = None) -> SparseVector:
        return sparse(text)

    def tokenize(self, text: str) -> list[str]:
        return [ch for ch in text if not ch.isspace()]


@asynccontextmanager
async def library(data: Path) -> AsyncIterator[Indexer]:
    """DATA_DIR's library (Qdrant Edge, SQLite, the graph), reconciled as `App` opens it."""
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import Indexer
    from retrieval.store.edge import EdgeStore

    db = data / "baibao.sqlite3"
    store = await EdgeStore.open(data / "qdrant", DIM)
    graph = await KnowledgeGraph.open(db)
    try:
        async with Indexer(db, store, HashEmbedder(DIM), CharEncoder(), graph) as indexer:  # type: ignore[arg-type]
            await indexer.reconcile()
            yield indexer
    finally:
        await graph.close()
        await store.close()


async def run_corpus(data: Path, rng: random.Random) -> None:
    from ingest.pipeline import Pipeline

    async with library(data) as indexer:
        pipeline = Pipeline(indexer)
        src = data / "src"
        src.mkdir(exist_ok=True)
        k = int((data / "next_k").read_text()) if (data / "next_k").exists() else 1
        print("READY", flush=True)
        while True:
            doc = rng.choice(DOCS)
            _write_atomically(data / "next_k", str(k + 1))
            if rng.random() < 0.15:
                await indexer.delete_document(f"文档{doc}")
            else:
                path = src / f"{doc}.v{k}.md"
                _write_atomically(path, corpus_text(doc, k, rng.randint(2, 14)))
                summary = await pipeline.ingest_paths([path])
                if summary.skipped:
                    print("SKIPPED", summary.skipped, flush=True)
            print("OP", k, flush=True)
            k += 1


async def run_trash(data: Path, rng: random.Random) -> None:
    from ingest.pipeline import Pipeline

    async with library(data) as indexer:
        pipeline = Pipeline(indexer)
        src = data / "src"
        src.mkdir(exist_ok=True)
        k = int((data / "next_k").read_text()) if (data / "next_k").exists() else 1
        print("READY", flush=True)
        while True:
            _write_atomically(data / "next_k", str(k + 1))
            doc = rng.choice(DOCS)
            title = f"文档{doc}"
            live = await indexer.find_documents(title)
            trashed = await indexer.find_documents(title, trashed=True)
            if not live and not trashed:
                path = src / f"{doc}.v{k}.md"
                _write_atomically(path, corpus_text(doc, k, rng.randint(2, 8)))
                await pipeline.ingest_paths([path])
            elif live:
                print("BEGIN trash", doc, flush=True)
                await indexer.trash_documents(live, by="sigkill")
            elif rng.random() < 0.8:  # a purge means indexing again: rarely
                print("BEGIN restore", doc, flush=True)
                await indexer.restore_document(trashed[0])
            else:
                print("BEGIN purge", doc, flush=True)
                await indexer.purge_documents(trashed)
            print("OP", k, flush=True)
            k += 1


@asynccontextmanager
async def novel_service(data: Path) -> AsyncIterator[tuple[NovelService, EdgeStore]]:
    """The writers' room on DATA_DIR's stores, started (it reconciles on start-up, as `App`
    does); no model: uploaded revisions only (a summary falls back without one). jieba (the
    extractive summary's) is loaded first: without it a child spent its whole kill window
    loading it, and no kill landed in a revision."""
    from novel import narrative
    from novel.chapters import ChapterService
    from novel.memory import PlotMemory
    from novel.repo import NovelRepo
    from novel.service import NovelService
    from novel.settings import NovelSettings
    from retrieval.clock import SYSTEM_CLOCK
    from retrieval.store.edge import EdgeStore

    narrative.warm()
    store = await EdgeStore.open(data / "qdrant", DIM)
    repo = await NovelRepo.open(data / "baibao.sqlite3")
    try:
        memory = PlotMemory(repo, store, HashEmbedder(DIM), sparse)
        settings = NovelSettings(proposal_minutes=60, vote_minutes=60)
        chapters = ChapterService(repo, memory, None, settings, SYSTEM_CLOCK.now)
        service = NovelService(repo, memory, chapters, settings, _Silent())
        async with service:
            yield service, store
    finally:
        await repo.close()
        await store.close()


class _Silent:
    """The announce port of a room no chat hears (revisions announce nothing)."""

    async def round_empty(self, chat: object, empty: object) -> None:
        return None

    async def proposals_closed(self, chat: object, ballot: object) -> None:
        return None

    async def votes_closed(self, chat: object, closed: object) -> None:
        return None

    async def writing(self, chat: object, step: object) -> None:
        return None

    async def written(self, chat: object, written: object) -> None:
        return None

    def tally_changed(self, round_id: str) -> None:
        return None


class _NoBallots:
    """No ballot is drawn here: revisions and rollbacks present none."""

    def reply(self, view: BallotView, where: Actor) -> Reply:
        raise AssertionError("no ballot in a revision")


async def worded(service: NovelService, actor: Actor, request: object) -> Reply:
    """The handler the router would run for `request`: an Actor in, a Reply out."""
    from bot.commands.novel import novel_handlers
    from bot.presenters.novel import NovelPresenter
    from bot.registry import Call

    handlers = novel_handlers(service, NovelPresenter(service.settings, _NoBallots()))
    return await handlers.run(Call(actor), request)


async def run_novel(data: Path, rng: random.Random) -> None:
    from bot.actor import Actor
    from novel import api

    admin = Actor("console", CHAT, "admin", "管理员", is_admin=True)
    async with novel_service(data) as (service, _):
        k = int((data / "next_k").read_text()) if (data / "next_k").exists() else 1
        print("READY", flush=True)
        while True:
            _write_atomically(data / "next_k", str(k + 1))
            number = rng.randint(1, CHAPTERS)
            chapter = await service.repo.book.chapter(CHAT, number)
            versions = (
                [v.version for v in await service.repo.book.versions(chapter.id)] if chapter else []
            )
            if chapter is not None and len(versions) > 1 and rng.random() < 0.3:
                target = rng.choice([v for v in versions if v != chapter.current_version])
                reply = await worded(service, admin, api.RollbackChapter(number, target))
            else:
                text = chapter_text(DOCS[number - 1], k, rng.randint(2, 12))
                reply = await worded(service, admin, api.ReviseChapter(number, text=text))
            if reply.is_error:
                print("ERROR", reply.plain(), flush=True)
            print("OP", k, flush=True)
            k += 1


async def run_story(data: Path, rng: random.Random) -> None:
    from bot.actor import Actor
    from novel import api

    admin = Actor("console", CHAT, "admin", "管理员", is_admin=True)
    async with novel_service(data) as (service, _):
        k = int((data / "next_k").read_text()) if (data / "next_k").exists() else 1
        print("READY", flush=True)
        while True:
            _write_atomically(data / "next_k", str(k + 1))
            text = story_text(k, rng.randint(2, 12))
            print("BEGIN", k, flush=True)
            reply = await worded(service, admin, api.ReviseChapter(2, text=text))
            if reply.is_error:
                print("ERROR", reply.plain(), flush=True)
            print("OP", k, flush=True)
            k += 1


def _write_atomically(path: Path, text: str) -> None:
    """The child's own bookkeeping must survive SIGKILL too: write aside, then rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main() -> None:
    mode, data, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    runner = {"corpus": run_corpus, "trash": run_trash, "novel": run_novel, "story": run_story}[
        mode
    ]
    asyncio.run(runner(data, rng))


if __name__ == "__main__":
    main()
