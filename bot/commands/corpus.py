"""The library in chat: `/ingest` with a file, `/ingest delete | restore | trash`, `/sources`
and `/sources log`.

`/ingest 书名 | 作者 | 年份 | 类型` is the text form (the file rides along: a Telegram document
whose caption is the command); on Discord, `/ingest add file:… title:…`. An upload goes to the
chat's shelf (`bot.shelves`), or to the shared library when the chat has no shelf or the
command says `library:shared`; who may do which is the permission table's (`bot.permissions`),
and `ingest_scopes` tells it which library an invocation would change. A delete moves the
document to the trash; `/ingest restore` brings it back without embedding anything again.
Progress is edited into the chat while the file is chunked and embedded; a summary follows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time
from typing import Any, Literal, Protocol, cast

from bot.actor import Actor
from bot.changes import Change
from bot.i18n import catalog
from bot.permissions import Scope, Scopes, refused
from bot.registry import Call, Command, File, Group, Help, Param, UsageError, Values
from bot.reply import Block, Reply
from bot.shelves import Shelves
from ingest.manifest import DocMeta
from ingest.pipeline import IngestProgress, OnProgress
from ingest.uploads import IngestBusy, ShelfFull, UploadResult
from kernel.i18n import Lang
from retrieval.index import DocumentRecord
from retrieval.library import SHARED
from retrieval.producers import usable_author
from retrieval.types import ChunkType

# .doc is taken so that it gets the loader's message saying how to convert it, but it is not
# named among the formats /ingest takes (it takes none of them).
UPLOAD_TYPES = (".pdf", ".docx", ".epub", ".txt", ".md", ".markdown", ".doc")
EXPLAINED_TYPES = (".doc",)
DOC_TYPES = ("book", "message", "outline", "footnote")
LIBRARIES = ("shelf", "shared")
MAX_LISTED = 50
LOG_SHOWN = 20

T = catalog("corpus")


class Corpus(Protocol):
    """What the commands need (`ingest.uploads.CorpusUploads`)."""

    async def add(
        self,
        filename: str,
        data: bytes,
        meta: DocMeta | None,
        on_progress: OnProgress | None,
        *,
        namespace: str = SHARED,
    ) -> UploadResult: ...

    async def find(
        self, key: str, namespaces: Sequence[str], *, trashed: bool = False
    ) -> DocumentRecord | None: ...

    async def delete(self, record: DocumentRecord, *, by: str = "") -> DocumentRecord | None: ...

    async def restore(self, record: DocumentRecord) -> DocumentRecord | None: ...

    async def documents(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]: ...

    async def trash(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]: ...


class Changes(Protocol):
    """What `/sources log` and the daily upload limit read (`bot.changes.ChangeLog`)."""

    async def entries(self, chat: str | None = None, *, limit: int = 30) -> list[Change]: ...

    async def count(self, chat: str, what: str, since: str) -> int: ...

    def stamp(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """`trash_days`: TRASH_DAYS (said when a document is deleted); `uploads_per_day`:
    UPLOADS_PER_CHAT_PER_DAY (0 = no limit)."""

    trash_days: int = 30
    uploads_per_day: int = 0


@dataclass(frozen=True, slots=True)
class IngestUpload:
    file: File
    meta: DocMeta
    library: Literal["shelf", "shared"] | None = None


def _upload_request(values: Values) -> IngestUpload:
    file = values.upload("file")
    if file is None:  # validation requires the file; this guards the type
        raise UsageError("need_upload", formats="PDF / DOCX / EPUB / TXT / MD")
    doc_type = values.text("type") or None
    meta = DocMeta(
        title=values.text("title") or None,
        author=values.text("author") or None,
        year=values.maybe_number("year"),
        type=cast(ChunkType | None, doc_type),
    )
    library = values.text("library") or None
    return IngestUpload(file, meta, cast(Literal["shelf", "shared"] | None, library))


def _progress_text(lang: Lang, name: str, p: IngestProgress) -> str:
    if p.doc_chunks_total:
        return T(lang, "embedding", name=name, done=p.doc_chunks_done, total=p.doc_chunks_total)
    return T(lang, "reading", name=name)


def _summary(lang: Lang, name: str, result: UploadResult) -> Reply:
    s, record = result.summary, result.record
    if s.problems or record is None:
        reason = s.problems[0][1] if s.problems else None
        why = (reason.en if lang == "en" else reason.zh) if reason else "?"
        return Reply.error(T(lang, "refused", name=name, reason=why), lang=lang)
    report = s.results[0][2]
    if report.status == "unchanged":
        return Reply.text(T(lang, "unchanged", title=record.source), lang=lang)
    text = T(
        lang,
        "ingested",
        title=record.source,
        chunks=report.chunks,
        refs=report.refs,
        concepts=report.concepts,
        seconds=f"{s.seconds:.0f}",
    )
    if report.status == "replaced":
        text += T(lang, "replaced")
    return Reply.text(text, lang=lang)


def _document_lines(lang: Lang, records: Sequence[DocumentRecord]) -> list[str]:
    """Title (author, year when known) · type · era · chunks; a Bible table is one line."""
    books = [r for r in records if r.type == "bible"]
    lines = []
    for r in [r for r in records if r.type != "bible"][:MAX_LISTED]:
        era = r.era or T(lang, "no_era")
        parts = [
            r.source,
            usable_author(r.author),  # a store ingested before producers were told apart
            str(r.year or ""),
            r.type,
            era,
            T(lang, "chunks", n=r.chunk_count),
        ]
        lines.append(" · ".join(p for p in parts if p))
    if books:
        embedded = sum(r.chunk_count for r in books)
        lines.append(T(lang, "bible_line", title=books[0].source, books=len(books), n=embedded))
    return lines


def _sources_reply(
    lang: Lang, shared: Sequence[DocumentRecord], shelf: Sequence[DocumentRecord]
) -> Reply:
    """The shared library's documents, then this chat's shelf's, each part headed."""
    if not shared and not shelf:
        return Reply.text(T(lang, "sources_empty"), lang=lang)
    others = [r for r in shared if r.type != "bible"]
    shown = len(others) + (1 if len(others) < len(shared) else 0)
    blocks = [Block(T(lang, "sources_heading", n=shown), "heading")]
    if shared:
        blocks.append(Block("\n".join(_document_lines(lang, shared))))
    if len(others) > MAX_LISTED:
        blocks.append(Block(T(lang, "sources_more", n=len(others) - MAX_LISTED), "note"))
    if shelf:
        blocks.append(Block(T(lang, "sources_shelf", n=len(shelf)), "heading"))
        blocks.append(Block("\n".join(_document_lines(lang, shelf))))
    blocks.append(Block(T(lang, "sources_filters"), "note"))
    return Reply(blocks=tuple(blocks), lang=lang)


def _trash_reply(lang: Lang, records: Sequence[DocumentRecord], days: int) -> Reply:
    if not records:
        return Reply.text(T(lang, "trash_empty"), lang=lang)
    lines = [
        T(
            lang,
            "trash_line",
            title=r.source,
            where=T(lang, "shared" if r.namespace == SHARED else "on_shelf"),
            chunks=r.chunk_count,
            at=r.trashed_at[:16].replace("T", " "),
        )
        for r in records[:MAX_LISTED]
    ]
    blocks = (Block(T(lang, "trash_heading", n=len(records), days=days), "heading"),)
    return Reply(blocks=(*blocks, Block("\n".join(lines))), lang=lang)


def _log_reply(lang: Lang, entries: Sequence[Change]) -> Reply:
    if not entries:
        return Reply.text(T(lang, "log_empty"), lang=lang)
    lines = [
        T(
            lang,
            "log_line",
            at=e.at[:16].replace("T", " "),
            who=f"{e.user_name or e.user_id} ({e.platform}:{e.user_id})",
            where=e.chat,
            what=e.what,
            outcome=e.outcome or "—",
        )
        for e in entries
    ]
    heading = Block(T(lang, "log_heading", n=len(entries)), "heading")
    return Reply(blocks=(heading, Block("\n".join(lines))), lang=lang)


def _who(actor: Actor) -> str:
    return f"{actor.platform}:{actor.user_id} {actor.user_name}".strip()


def _reading(shelves: Shelves, actor: Actor) -> list[str]:
    """Where `/ingest delete | restore` look for a title: the chat's shelf, then the shared
    library."""
    shelf = shelves.of(actor)
    return [shelf, SHARED] if shelf else [SHARED]


def _scope(record: DocumentRecord | None, shelf: str) -> Scope:
    if record is not None:
        return "shared" if record.namespace == SHARED else "shelf"
    return "shelf" if shelf else "shared"  # nothing found: the reply says so


def ingest_scopes(corpus: Corpus, shelves: Shelves) -> Scopes:
    """Which library each /ingest invocation would change, for the permission table."""

    async def add(actor: Actor, values: Values) -> Scope:
        if values.text("library") == "shared" or not shelves.of(actor):
            return "shared"
        return "shelf"

    async def delete(actor: Actor, values: Values) -> Scope:
        found = await corpus.find(values.text("source"), _reading(shelves, actor))
        return _scope(found, shelves.of(actor))

    async def restore(actor: Actor, values: Values) -> Scope:
        found = await corpus.find(values.text("source"), _reading(shelves, actor), trashed=True)
        return _scope(found, shelves.of(actor))

    return {("ingest", "add"): add, ("ingest", "delete"): delete, ("ingest", "restore"): restore}


def _today(stamp: str) -> str:
    """The start of `stamp`'s day (UTC), as the change log stamps it."""
    day = datetime.fromisoformat(stamp).date()
    return datetime.combine(day, time(0), tzinfo=datetime.fromisoformat(stamp).tzinfo).isoformat(
        timespec="seconds"
    )


class _Handlers:
    """The commands' handlers over the corpus, the chat's shelf and the change log."""

    def __init__(
        self, corpus: Corpus, shelves: Shelves, changes: Changes | None, limits: Limits
    ) -> None:
        self.corpus = corpus
        self.shelves = shelves
        self.changes = changes
        self.limits = limits

    async def _over_limit(self, actor: Actor) -> Reply | None:
        """The refusal when the chat has made its uploads for the day (operators are not
        counted: they own the library)."""
        limit = self.limits.uploads_per_day
        if not limit or self.changes is None or actor.role == "operator":
            return None
        since = _today(self.changes.stamp())
        done = await self.changes.count(actor.chat, "/ingest add", since)
        if done < limit:
            return None
        refused(actor, "/ingest add", "UPLOADS_PER_CHAT_PER_DAY")
        return Reply.error(T(actor.lang, "uploads_today", n=done, limit=limit), lang=actor.lang)

    async def add(self, call: Call, request: IngestUpload) -> Reply:
        lang, file, actor = call.actor.lang, request.file, call.actor
        over = await self._over_limit(actor)
        if over is not None:
            return over
        shelf = self.shelves.of(actor)
        namespace = SHARED if request.library == "shared" or not shelf else shelf
        latest: list[str] = []
        changed = asyncio.Event()
        done = False

        def on_progress(p: IngestProgress) -> None:
            latest[:] = [_progress_text(lang, file.name, p)]
            changed.set()

        async def pump() -> None:  # the pipeline reports synchronously; edits are async
            while True:
                await changed.wait()
                changed.clear()
                if done:
                    return
                if call.progress is not None:
                    await call.progress(latest[0])

        task = asyncio.create_task(pump())
        try:
            result = await self.corpus.add(
                file.name, file.data, request.meta, on_progress, namespace=namespace
            )
        except IngestBusy:
            return Reply.error(T(lang, "busy"), lang=lang)
        finally:
            done = True
            changed.set()
            await task
        if any(isinstance(problem, ShelfFull) for _, problem in result.summary.problems):
            refused(actor, "/ingest add", "SHELF_MAX_DOCUMENTS / SHELF_MAX_CHUNKS")
        return _summary(lang, file.name, result)

    async def delete(self, call: Call, source: str) -> Reply:
        lang = call.actor.lang
        record = await self.corpus.find(source, _reading(self.shelves, call.actor))
        moved = await self.corpus.delete(record, by=_who(call.actor)) if record else None
        if moved is None:
            return Reply.error(T(lang, "not_found", source=source), lang=lang)
        days = self.limits.trash_days
        text = T(lang, "deleted", title=moved.source, chunks=moved.chunk_count, days=days)
        return Reply.text(text, lang=lang)

    async def restore(self, call: Call, source: str) -> Reply:
        lang = call.actor.lang
        record = await self.corpus.find(source, _reading(self.shelves, call.actor), trashed=True)
        back = await self.corpus.restore(record) if record else None
        if back is None:
            return Reply.error(T(lang, "not_in_trash", source=source), lang=lang)
        return Reply.text(
            T(lang, "restored", title=back.source, chunks=back.chunk_count), lang=lang
        )

    async def trash(self, call: Call, _: None) -> Reply:
        """The trash the asker may restore from: the chat's shelf's, and the shared
        library's for an operator."""
        actor = call.actor
        shelf = self.shelves.of(actor)
        namespaces = [shelf] if shelf else []
        if actor.role == "operator":
            namespaces.append(SHARED)
        records = await self.corpus.trash(namespaces) if namespaces else []
        return _trash_reply(actor.lang, records, self.limits.trash_days)

    async def sources(self, call: Call, what: str) -> Reply:
        actor = call.actor
        if what == "log":
            return await self.log(actor)
        shelf = self.shelves.of(actor)
        shared = await self.corpus.documents([SHARED])
        mine = await self.corpus.documents([shelf]) if shelf else []
        return _sources_reply(actor.lang, shared, mine)

    async def log(self, actor: Actor) -> Reply:
        """A chat admin sees the chat's entries; an operator every entry, in their DM or at
        the console only: in a group the log is that group's, whoever asks (its members would
        read every other chat's changes)."""
        if self.changes is None:
            return _log_reply(actor.lang, [])
        private = actor.kind in ("dm", "console")
        chat = None if actor.role == "operator" and private else actor.chat
        return _log_reply(actor.lang, await self.changes.entries(chat, limit=LOG_SHOWN))


def _add_command(handlers: _Handlers, max_bytes: int) -> Command[IngestUpload]:
    return Command(
        help=Help(
            "add",
            "导入随命令上传的 PDF、Word（.docx）、EPUB、TXT 或 Markdown 文件（默认放入本群书架）",
            "Ingest the PDF, Word (.docx), EPUB, TXT or Markdown file sent with the command "
            "(to this chat's shelf by default)",
            "/ingest 神的经纶 | 某某 | 1984 | book | shared（写在文件的说明里）",
            "/ingest God's Economy | A. Author | 1984 | book | shared (as the file's caption)",
        ),
        params=(
            Param(
                "file",
                "文件",
                "file",
                "file",
                max_bytes=max_bytes,
                extensions=UPLOAD_TYPES,
                unlisted=EXPLAINED_TYPES,
            ),
            Param("title", "书名", "title", required=False, max_len=200),
            Param("author", "作者", "author", required=False, max_len=100),
            Param("year", "年份", "year", "int", required=False),
            Param("type", "类型", "type", "choice", required=False, choices=DOC_TYPES),
            Param("library", "书库", "library", "choice", required=False, choices=LIBRARIES),
        ),
        parse=_upload_request,
        run=handlers.add,
        pipe_split=True,
    )


def _by_title(name: str, zh: str, en: str, run: Any) -> Command[str]:
    return Command(
        help=Help(name, zh, en, f"/ingest {name} 神的经纶", f"/ingest {name} God's Economy"),
        params=(Param("source", "书名或文档 ID", "title or document id", rest=True),),
        parse=lambda v: v.text("source"),
        run=run,
    )


def corpus_commands(
    corpus: Corpus,
    *,
    max_bytes: int,
    shelves: Shelves | None = None,
    changes: Changes | None = None,
    limits: Limits | None = None,
) -> tuple[Group | Command[Any], ...]:
    handlers = _Handlers(corpus, shelves or Shelves(), changes, limits or Limits())
    ingest = Group(
        Help(
            "ingest",
            "管理书库（管理员）：上传文件导入，delete 删除，restore 恢复，trash 回收站",
            "Manage the library (admins): upload a file, delete, restore, trash",
            "/ingest [书名 | 作者 | 年份 | 类型 | shared]（随文件发送；控制台：/ingest @书.pdf 书名 | …）"
            "· /ingest delete 书名 · /ingest restore 书名 · /ingest trash",
            "/ingest [title | author | year | type | shared] (with the file; on the console:"
            " /ingest @book.pdf title | …) · /ingest delete TITLE · /ingest restore TITLE ·"
            " /ingest trash",
        ),
        (
            _add_command(handlers, max_bytes),
            _by_title(
                "delete",
                "删除一份文档（移入回收站，可恢复）",
                "Delete a document (to the trash; it can be restored)",
                handlers.delete,
            ),
            _by_title(
                "restore",
                "从回收站恢复一份文档（无需重新导入）",
                "Restore a document from the trash (nothing is ingested again)",
                handlers.restore,
            ),
            Command(
                help=Help("trash", "查看回收站", "List the trash", "/ingest trash"),
                parse=lambda v: None,
                run=handlers.trash,
                rate_limited=False,
            ),
        ),
        default="add",
    )
    listing = Command(
        help=Help(
            "sources",
            "列出已导入的文档（共享书库与本群书架）；log：修改记录（管理员）",
            "List the documents (shared library and this chat's shelf); log: the change log "
            "(admins)",
            "/sources · /sources log",
        ),
        params=(Param("view", "查看", "view", "choice", required=False, choices=("log",)),),
        parse=lambda v: v.text("view"),
        run=handlers.sources,
        rate_limited=False,
    )
    return ingest, listing
