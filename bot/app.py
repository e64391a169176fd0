"""Composition root: settings → stores and models → services → router → transports.

Dependencies are created here and passed in; services never reach for a bot object. Tests and
benchmarks pass their own `embedder` / `llm` (e.g. the in-process fakes or a loopback model) and
get the rest of the real stack.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import importlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from bot.activity import Activity
from bot.admin import AdminPolicy
from bot.budget import Budget, BudgetedLLM
from bot.changes import ChangeLog
from bot.chats import ChatSettings
from bot.commands import scholar_registry, standard_registry
from bot.lock import DataDirLock
from bot.permissions import Access, Conditions, Permissions, Roles, Scopes
from bot.ratelimit import RateLimiter
from bot.registry import Handlers, Registry
from bot.router import Router
from bot.settings import Settings
from bot.shelves import Shelves
from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.lifecycle import Closing
from retrieval.ports import LLM, Embedder, VectorStore

if TYPE_CHECKING:
    from bot.ballot.room import BallotRoom
    from ingest.pipeline import OnProgress
    from ingest.uploads import CorpusUploads
    from novel.cast import StoryService
    from novel.service import NovelService
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import DocumentRecord, Indexer
    from retrieval.keyword import Bm25Encoder
    from retrieval.library import Reading
    from retrieval.schedule import Scheduler
    from retrieval.scholar import Scholar
    from retrieval.search import HybridSearch
    from retrieval.text import Tokenizer
    from retrieval.types import Chunk

log = logging.getLogger(__name__)
T = TypeVar("T")


async def _settle(task: asyncio.Future[Any]) -> None:
    """Wait for a background task at shutdown; its failure was not anyone's answer."""
    try:
        await task
    except Exception:
        log.exception("start-up work failed in the background")


async def _after(quiet: asyncio.Future[None], warm: Callable[[], None]) -> None:
    """`warm` on a worker thread once `quiet` is done (then what it built is kept, as
    start-up's is: `keep_what_start_up_built`); nothing if it was cancelled."""
    await asyncio.wait((quiet,))
    if not quiet.cancelled():
        await asyncio.to_thread(warm)
        keep_what_start_up_built()


def keep_what_start_up_built() -> None:
    """Move every object alive now out of the cyclic garbage collector's passes, for good
    (`gc.freeze`), after collecting what is garbage already. What start-up built lives as long
    as the process, and a full pass reads every item of every container: over a
    million-chunk library's graph (its chunk names, its indexes) one pass stopped the event
    loop for 45-56 ms, once every few thousand searches, and all eight searches of a busy
    moment waited with it. With start-up frozen a full pass took 3 ms. Objects frozen are still
    freed when nothing refers to them; only a cycle among them would stay."""
    gc.collect()
    gc.freeze()


@dataclass(frozen=True, slots=True)
class WritersRoom:
    """The writers' room as this process serves it: the domain service, its commands'
    handlers by request type, the ballot room, and the story reader beside them."""

    service: NovelService
    handlers: Handlers
    ballots: BallotRoom
    story: StoryService


class _Default:
    """Marker: build this component from settings."""


DEFAULT = _Default()


@dataclass(frozen=True, slots=True)
class Startup:
    """What a command starts before it runs; everything else starts on first use.

    `warm_embedder`: load the local embedding model now, on its thread (else when the
    embedding cache first misses: looking a verse up embeds text the cache has seen).
    `warm_words`: load jieba's dictionary now, off the loop (else on the first tokenization).
    `words_on_disk`: read jieba's main dictionary a word at a time from disk instead of loading
    it (for a command that tokenizes a line or two; the same cuts).
    `store_process`: the Qdrant Edge shard in a child process when the settings ask for one
    (a bot keeps long searches off its event loop that way, and a large shard opens there
    while this process loads the rest: Edge's load holds the GIL, 3 s at a million chunks);
    else in this process, which is all a lookup needs.
    `preload`: while the store is still opening (seconds for a large library), import what the
    rest of start-up and the first answer would: the rooms' modules (0.4 s) and the graph-path
    renderer (~1 s).
    `writers_room`: open the writers' room (its rounds resume, their deadlines run) and
    route every chat command; else only the scholar's commands (`/ask`, `/cite`).
    """

    warm_embedder: bool = True
    warm_words: bool = True
    words_on_disk: bool = False
    store_process: bool = True
    preload: bool = True
    writers_room: bool = True


FULL = Startup()  # `run`, `chat`, `ingest PATH`: everything warm, the store as configured
# `ask`, `search`: they embed and tokenize; the store as configured
QUERY = Startup(writers_room=False)
# The store in this process, nothing preloaded, scholar commands only; then no model warm
# for `cite` (it tokenizes a verse, whose embedding the cache holds) and none at all for
# `ingest --list`, `ingest --delete`, `graph extract`.
_ONE_SHOT = Startup(store_process=False, preload=False, writers_room=False)
LOOKUP = dataclasses.replace(_ONE_SHOT, warm_embedder=False, words_on_disk=True)
RECORDS = dataclasses.replace(_ONE_SHOT, warm_embedder=False, warm_words=False)

# What the start-up imports once the store is open (`App._preload` reads them before).
_SEARCH_MODULES = (
    "retrieval.index",
    "retrieval.search",
    "retrieval.scholar",
    "retrieval.relevance",
    "bot.presenters.scholar",
    "bot.presenters.graph",
    "ingest.uploads",
)
_WRITERS_ROOM_MODULES = ("bot.presenters.novel", "novel.cast", "novel.service", "novel.chapters")

# How long no command must have run before the bot reads CC-CEDICT backwards (`serving`).
WARM_WHEN_QUIET_S = 2.0


class App(Closing):
    """Everything the process owns, opened and closed together (`async with App(settings)`)."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | _Default = DEFAULT,
        llm: LLM | _Default | None = DEFAULT,
        clock: Clock = SYSTEM_CLOCK,
        startup: Startup = FULL,
    ) -> None:
        """`clock` drives every throttle and deadline the process keeps (rate limits, round
        deadlines, ballot edits); pass the same one to the transports. `startup`: what to
        start before the first command (a one-shot command starts less)."""
        self.settings = settings
        self.clock = clock
        self.startup = startup
        self._embedder_override = embedder
        self._llm_override = llm
        self._stack = AsyncExitStack()
        self.router: Router
        self.store: VectorStore
        self.embedder: Embedder
        self.graph: KnowledgeGraph
        self.encoder: Bm25Encoder
        self.indexer: Indexer
        self.search: HybridSearch
        self.scholar: Scholar
        self.llm: LLM | None  # behind the daily budgets (`bot.budget`) when there is one
        self.budget: Budget | None  # None: no model, nothing to budget
        self.novels: WritersRoom  # `.service`: the domain; `.ballots`: the ballot room
        self.chats: ChatSettings
        self.changes: ChangeLog  # who changed what (`bot.changes`)
        self.shelves: Shelves  # what each chat reads of the library
        self.corpus: CorpusUploads  # the library's uploads, deletes, restores (writers_room)
        self.scheduler: Scheduler  # deadlines, the trash purge, the budget reset (writers_room)
        self.warmed: asyncio.Future[None] | None = None  # `serving`'s warm-up, once started

    @property
    def db_path(self) -> Path:
        return self.settings.data_dir / "baibao.sqlite3"

    async def __aenter__(self) -> Self:
        try:
            await self._open()
        except BaseException:  # half-open: `close` releases what opened, as `async with` would
            await self.close()
            raise
        return self

    async def _open(self) -> None:
        s = self.settings
        s.data_dir.mkdir(parents=True, exist_ok=True)
        self._stack.enter_context(DataDirLock(s.data_dir))
        self.embedder = await self._open_embedder()
        # The store's process starts first: it opens the shard (3 s at a million chunks)
        # while this process loads the graph and the keyword tokenizer.
        store = asyncio.ensure_future(self._open_store(self.embedder.dim))
        await asyncio.sleep(0)
        try:
            tokenizer = await self._open_graph_and_words()
            if self.startup.preload and not store.done():
                self._background(asyncio.to_thread(self._preload))
        except BaseException:
            # the store's own close is on the stack once it has opened
            await asyncio.gather(store, return_exceptions=True)
            raise
        self.store = await store  # its failure as it is (StoreUnavailable, DimensionMismatch)
        await self._open_search(tokenizer)
        await self._open_rooms()

    async def _open_search(self, tokenizer: Tokenizer) -> None:
        """The indexer (reconciled with the store) and the hybrid search."""
        from retrieval.gloss import Gloss
        from retrieval.index import Indexer
        from retrieval.keyword import Bm25Encoder
        from retrieval.search import HybridSearch
        from retrieval.synonyms import SynonymTable

        s = self.settings
        # The English names of grown concepts (graph paths of English replies) come from
        # CC-CEDICT, indexed on first use (0.8 s): loading it here, even in a thread, held the
        # GIL long enough to delay every other start-up step (a million-chunk library's bot
        # answered its first command a second later).
        synonyms = SynonymTable.load()
        self._tokenizer = tokenizer
        self.encoder = Bm25Encoder(tokenizer)
        self.indexer = await self._stack.enter_async_context(
            Indexer(self.db_path, self.store, self.embedder, self.encoder, self.graph)
        )
        await self.indexer.reconcile()
        self.search = HybridSearch(
            self.store,
            self.embedder,
            self.encoder,
            self.graph.query,
            synonyms,
            s.weights,
            s.fusion_k,
            common_terms=self.indexer.common_terms,
            # English → Chinese renderings for English questions (read on first use)
            gloss=Gloss.bundled(tokenizer.general_frequency),
            views=self.graph,  # a chat's graph hides other shelves' and the trash's growth
        )
        llm = self._build_llm()
        self.budget = None
        if llm is not None:
            self._stack.push_async_callback(llm.aclose)
            self.budget = await self._stack.enter_async_context(
                Budget(
                    self.db_path,
                    per_user=s.llm_daily_tokens_per_user,
                    per_chat=s.llm_daily_tokens_per_chat,
                )
            )
            llm = BudgetedLLM(llm, self.budget)
        self.llm = llm

    def _persons_named(self, text: str) -> list[str]:
        """The persons of the knowledge graph `text` names (by any alias: Paul is 保罗)."""
        graph = self.graph.query
        return [graph.node_label(n) for n in graph.link(text) if graph.node_kind(n) == "person"]

    async def _passages_saying(self, text: str, limit: int, reading: Reading) -> list[Chunk]:
        """Passages whose words include `text`'s, best first (the keyword track), of the
        library `reading`'s reader reads: what `/graph` reads for a phrase the corpus says but
        the graph has no node for."""
        result = await self.search.search(text, limit=limit, tracks=("keyword",), reading=reading)
        return [hit.chunk for hit in result.hits]

    async def _open_rooms(self) -> None:
        """The scholar, the writers' room (when the command needs it), the chat settings, the
        change log and the command router."""
        from bot.presenters.graph import PathPictures
        from bot.presenters.scholar import ScholarPresenter
        from retrieval.answer import AnswerBearing, FactReader, cosine_scorer
        from retrieval.graph.view import GraphViewer
        from retrieval.relevance import RelevanceGate
        from retrieval.scholar import Scholar

        s = self.settings
        viewer = GraphViewer(
            self.graph.query, passages=self._passages_saying, views=self.graph.seen_without
        )
        self.scholar = Scholar(
            self.search,
            self.indexer,
            self.graph.query,
            self.llm,
            gate=RelevanceGate.for_embedder(self.embedder.model_id),
            facts=FactReader(self._tokenizer.tag, persons=self._persons_named),
            bearing=AnswerBearing.for_embedder(
                self.embedder.model_id,
                cosine_scorer(self.embedder.embed_query, self.embedder.embed_passages),
            ),
            views=self.graph.seen_without,
        )
        await self.scholar.refresh_sources()  # /ask source autocomplete
        scholar = ScholarPresenter(self.scholar, pictures=PathPictures(viewer))
        limiter = RateLimiter(
            s.rate_limit_user_per_min, s.rate_limit_chat_per_min, clock=self.clock.monotonic
        )
        self.chats = await self._stack.enter_async_context(
            ChatSettings(self.db_path, s.default_language)
        )
        self.changes = await self._stack.enter_async_context(
            ChangeLog(self.db_path, now=self.clock.now)
        )
        self.shelves = Shelves(self.indexer, s.dm_uploads)
        scopes: Scopes = {}
        if self.startup.writers_room:  # which library each /ingest invocation would change
            from bot.commands.corpus import ingest_scopes

            self.scheduler = await self._open_scheduler()
            self.corpus = self._open_corpus()
            scopes = ingest_scopes(self.corpus, self.shelves)
        # The router first: what the rooms say unasked goes out through it (`send`, `edit`).
        registry = Registry()
        self.router = Router(
            registry,
            limiter=limiter,
            permissions=dataclasses.replace(self._permissions(), scopes=scopes),
            chats=self.chats,
            activity=Activity(self.clock.monotonic),
            clock=self.clock,
            changes=self.changes,
            budgeted=self.budget is not None,
        )
        if not self.startup.writers_room:
            scholar_registry(scholar, chats=self.chats, registry=registry)
            return
        from bot.commands.corpus import Limits

        self.novels = await self._open_writers_room()
        standard_registry(
            scholar,
            self.novels.handlers,
            self.novels.ballots,
            registry=registry,
            chats=self.chats,
            corpus=self.corpus,
            graph=viewer,
            story=self.novels.story,
            places=self.novels.service.repo.stories,
            upload_max_bytes=self._upload_max_bytes,
            shelves=self.shelves,
            changes=self.changes,
            limits=Limits(s.trash_days, s.uploads_per_chat_per_day),
            usage=self.budget,
        )

    @property
    def _upload_max_bytes(self) -> int:
        return int(self.settings.chat_upload_max_mb * 1024 * 1024)

    def _open_corpus(self) -> CorpusUploads:
        """The library's uploads, deletes and restores, each shelf within its quota."""
        from ingest.uploads import CorpusUploads, ShelfQuota

        s = self.settings
        return CorpusUploads(
            self.indexer,
            s.data_dir / "uploads",
            max_bytes=self._upload_max_bytes,
            quota=ShelfQuota(s.shelf_max_documents, s.shelf_max_chunks),
        )

    def _permissions(self) -> Permissions:
        """Who may do what (`bot.permissions`), from the settings."""
        s = self.settings
        return Permissions(
            Roles(s.operator_ids, AdminPolicy(s.novel_admin_role)),
            Access(s.allowed_chat_ids, s.allow_dms),
            Conditions(s.dm_uploads, s.novel_round_openers == "members"),
        )

    async def _open_writers_room(self) -> WritersRoom:
        """The writers' room: its store, plot memory, chapters and service (rounds resume on
        opening), its commands' handlers, the ballot room, and the story reader beside them.
        What it announces goes out through the router."""
        from bot.ballot.board import BallotBoard
        from bot.ballot.room import BallotRoom
        from bot.ballot.store import BallotStore
        from bot.commands.novel import novel_handlers
        from bot.presenters.novel import NovelAnnouncer, NovelPresenter
        from novel.cast import StoryService
        from novel.chapters import ChapterService
        from novel.memory import PlotMemory
        from novel.repo import NovelRepo
        from novel.rounds import BallotViews
        from novel.service import NovelService
        from novel.settings import NovelSettings
        from novel.tag_cache import use_tag_cache

        s = self.settings
        novel_repo = await self._stack.enter_async_context(await NovelRepo.open(self.db_path))
        # jieba's cuts kept across restarts: the story-state replay reads every chapter again
        self._stack.enter_context(use_tag_cache(self.db_path))
        plot_memory = PlotMemory(
            novel_repo,
            self.store,
            self.embedder,
            self.encoder.encode_document,
            encode_query_sparse=self.encoder.encode_query,
        )
        settings = NovelSettings(
            openers=s.novel_round_openers,
            proposal_minutes=s.novel_proposal_minutes,
            vote_minutes=s.novel_vote_minutes,
        )
        chapters = ChapterService(novel_repo, plot_memory, self.llm, settings, self.clock.now)
        places = novel_repo.stories  # which story each place of a chat holds
        board = BallotBoard(
            await self._stack.enter_async_context(BallotStore(self.db_path)),
            BallotViews(novel_repo.rounds, self.clock.now),
            self.router.edit,
            chat_of=places.chat_of,
            interval_s=s.novel_ballot_edit_interval_s,
            clock=self.clock,
        )
        self._stack.push_async_callback(board.close)
        presenter = NovelPresenter(settings, board)
        service = await self._stack.enter_async_context(
            NovelService(
                novel_repo,
                plot_memory,
                chapters,
                settings,
                NovelAnnouncer(presenter, self.router.send, board, places),
                self.clock,
                scheduler=self.scheduler,
            )
        )
        return WritersRoom(
            service,
            novel_handlers(service, presenter),
            BallotRoom(board, service.rounds, presenter, places),
            StoryService(novel_repo, self.llm, chapters.blueprint),
        )

    async def _open_graph_and_words(self) -> Tokenizer:
        """The knowledge graph, and the keyword tokenizer with its dictionary loaded."""
        from retrieval.graph import KnowledgeGraph
        from retrieval.text import Tokenizer

        self.graph = await KnowledgeGraph.open(self.db_path, growth=self.settings.graph_growth)
        self._stack.push_async_callback(self.graph.close)
        # The keyword index and its queries must cut text the same way whenever a chunk was
        # indexed, so their dictionary is what ships (the seed's names, the domain
        # dictionary, the synonym table), never the terms grown from documents ingested so
        # far: those would make a restarted process cut a query differently from the chunks
        # indexed before it (经历内住的基督 one token for the query, three in the index).
        tokenizer = Tokenizer(terms=self.graph.seed_terms(), on_disk=self.startup.words_on_disk)
        if self.startup.warm_words:
            # jieba's dictionary takes ~1 s to load: now, off the loop, not on the first query.
            await asyncio.to_thread(tokenizer.warm)
        return tokenizer

    def _preload(self) -> None:
        """Import what `_open_search`, `_open_rooms` and a first answer's picture import."""
        from retrieval.graph import draw

        modules = _SEARCH_MODULES + (_WRITERS_ROOM_MODULES if self.startup.writers_room else ())
        for name in modules:
            importlib.import_module(name)
        draw.warm()

    def _background(self, work: Awaitable[T]) -> asyncio.Future[T]:
        """Work nothing waits for; the App waits for it when it closes."""
        task = asyncio.ensure_future(work)
        self._stack.push_async_callback(_settle, task)
        return task

    def serving(self) -> asyncio.Future[None]:
        """The bot is up and answering (`baibao run`, `baibao chat`; not one-shot commands):
        read, on a worker thread, what the first English question would otherwise wait for —
        CC-CEDICT read backwards (the gloss, 1.5–2.6 s) — once no command has run for
        `WARM_WHEN_QUIET_S`. Even on a thread it holds the GIL: during start-up it delayed every
        step (commit 202a524), and beside a command it made the answer take as long again.
        The returned future is done when it is read, or when the App closed first (at most
        once per process). What start-up built is kept out of the garbage collector's passes
        first, and what the warm-up builds once it is read (`keep_what_start_up_built`)."""
        if self.warmed is None:
            keep_what_start_up_built()
            gloss = self.search.gloss
            if gloss is None:
                self.warmed = self._background(asyncio.sleep(0))
                return self.warmed
            quiet = asyncio.ensure_future(
                self.router.activity.quiet(WARM_WHEN_QUIET_S, self.clock.sleep)
            )
            self.warmed = self._background(_after(quiet, gloss.warm))
            self._stack.callback(quiet.cancel)  # closing does not wait for a quiet moment
        return self.warmed

    async def _open_embedder(self) -> Embedder:
        from retrieval.embed.cache import CachedEmbedder
        from retrieval.embed.local import LocalEmbedder

        inner: Embedder
        if not isinstance(self._embedder_override, _Default):
            inner = self._embedder_override
        elif self.settings.embedding_provider == "openai":
            from retrieval.embed.openai import OpenAIEmbedder

            s = self.settings
            key = s.embedding_api_key or s.openai_api_key
            inner = OpenAIEmbedder(
                api_key=key.get_secret_value() if key else None,
                model=s.embedding_model,
                base_url=s.embedding_base_url,
                dimensions=s.embedding_dimensions,
                concurrency=s.embedding_concurrency,
                clock=self.clock,
            )
        elif self.settings.embedding_provider == "offline-use":
            from retrieval.embed.use import USEEmbedder

            inner = USEEmbedder()
        else:
            from retrieval.embed.offline import E5Embedder

            inner = E5Embedder()
        if self.startup.warm_embedder and isinstance(inner, LocalEmbedder):
            inner.start_loading()  # ~1 s, on its own thread, while the rest opens
        cached: Embedder = await self._stack.enter_async_context(
            CachedEmbedder(inner, self.db_path)
        )
        self._stack.push_async_callback(cached.aclose)
        return cached

    async def _open_store(self, dim: int) -> VectorStore:
        s = self.settings
        store: VectorStore
        if s.qdrant_url:
            from retrieval.store.server import ServerStore

            key = s.qdrant_api_key.get_secret_value() if s.qdrant_api_key else None
            store = await ServerStore.open(s.qdrant_url, s.qdrant_collection, dim, key)
        else:
            from retrieval.store.edge import IN_MEMORY, ON_DISK, EdgeStore

            layout = ON_DISK if s.qdrant_edge_layout == "on-disk" else IN_MEMORY
            if s.edge_child_process and self.startup.store_process:
                from retrieval.store.edge_process import EdgeProcessStore

                store = await EdgeProcessStore.open(s.data_dir / "qdrant", dim, layout)
            else:
                store = await EdgeStore.open(s.data_dir / "qdrant", dim, layout)
        self._stack.push_async_callback(store.close)
        return store

    def _build_llm(self) -> LLM | None:
        if not isinstance(self._llm_override, _Default):
            return self._llm_override
        from retrieval.llm import build_llm

        s = self.settings
        provider = s.resolved_llm_provider
        key = s.anthropic_api_key if provider == "anthropic" else s.openai_api_key
        return build_llm(
            provider,
            s.llm_model,
            api_key=key.get_secret_value() if key else None,
            base_url=s.llm_base_url,
            timeout_s=s.llm_timeout_s,
            max_retries=s.llm_max_retries,
            max_concurrency=s.llm_max_concurrency,
            context_tokens=s.llm_context_tokens,
        )

    async def prepare_samples(self, on_progress: OnProgress | None = None) -> bool:
        """First run only: the bundled sample corpus into the store. True when it ran."""
        from ingest.samples import ensure_sample_corpus

        books = self.settings.demo_bible_books.strip()
        chosen: list[str] | str = (
            "all" if books.lower() == "all" else [b.strip() for b in books.split(",") if b.strip()]
        )
        return bool(await ensure_sample_corpus(self.indexer, chosen, on_progress=on_progress))

    # ---- scheduled work ----------------------------------------------------------------------

    async def _open_scheduler(self) -> Scheduler:
        """The process's scheduler (APScheduler; its jobs in `jobs.sqlite3`, kept across
        restarts): the writers' room's deadlines, and the housekeeping — the trash purge
        (daily at 03:00 UTC) and the budget reset (daily at 00:00 UTC). The daily jobs are
        written once; later starts find them in the store."""
        from retrieval.schedule import Scheduler

        scheduler = Scheduler(self.settings.data_dir / "jobs.sqlite3", self.clock)
        self._stack.push_async_callback(scheduler.close)

        async def purge(_: str) -> None:
            await self.purge_trash()

        scheduler.on("purge", purge)
        scheduler.daily("purge:trash", hour=3)
        if self.budget is not None:
            budget = self.budget

            async def reset(_: str) -> None:
                await budget.reset()

            scheduler.on("budget", reset)
            scheduler.daily("budget:reset")
        return scheduler

    async def purge_trash(self, now: datetime | None = None) -> list[DocumentRecord]:
        """Purge the documents trashed more than TRASH_DAYS before `now` (the clock's, by
        default): the one irreversible step, each logged in the change log."""
        from bot.changes import Change
        from retrieval.library import SHARED

        moment = now or self.clock.now()
        before = (moment - timedelta(days=self.settings.trash_days)).isoformat(timespec="seconds")
        purged = await self.indexer.purge_documents(await self.indexer.expired(before))
        for record in purged:
            chat = "shared" if record.namespace == SHARED else record.namespace.partition(":")[2]
            await self.changes.record(
                Change(
                    moment.isoformat(timespec="seconds"),
                    "system",
                    "trash",
                    f"TRASH_DAYS={self.settings.trash_days}",
                    chat,
                    "",
                    f"purge {record.source} ({record.doc_id})",
                    f"deleted {record.trashed_at} by {record.trashed_by}",
                )
            )
        return purged

    async def close(self) -> None:
        await self._stack.aclose()
