"""Corpus management in chat (admins): `/ingest` with a file, `/ingest delete`, and `/sources`.

`/ingest 书名 | 作者 | 年份 | 类型` is the text form (the file rides along: a Telegram document
whose caption is the command); on Discord, `/ingest add file:… title:…`. Progress is edited
into the chat while the file is chunked and embedded; a summary follows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from bot.i18n import catalog
from bot.registry import Call, Command, File, Group, Help, Param, UsageError, Values
from bot.reply import Block, Reply
from ingest.manifest import DocMeta
from ingest.pipeline import IngestProgress, OnProgress
from ingest.uploads import IngestBusy, UploadResult
from kernel.i18n import Lang
from retrieval.index import DocumentRecord
from retrieval.producers import usable_author
from retrieval.types import ChunkType

# .doc is taken so that it gets the loader's message saying how to convert it, but it is not
# named among the formats /ingest takes (it takes none of them).
UPLOAD_TYPES = (".pdf", ".docx", ".epub", ".txt", ".md", ".markdown", ".doc")
EXPLAINED_TYPES = (".doc",)
DOC_TYPES = ("book", "message", "outline", "footnote")
MAX_LISTED = 50

T = catalog("corpus")


class Corpus(Protocol):
    """What the commands need (`ingest.uploads.CorpusUploads`)."""

    async def add(
        self, filename: str, data: bytes, meta: DocMeta, on_progress: OnProgress
    ) -> UploadResult: ...

    async def delete(self, source: str) -> DocumentRecord | None: ...

    async def documents(self) -> list[DocumentRecord]: ...


@dataclass(frozen=True, slots=True)
class IngestUpload:
    file: File
    meta: DocMeta


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
    return IngestUpload(file, meta)


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


def _sources_reply(lang: Lang, records: Sequence[DocumentRecord]) -> Reply:
    """Title (author, year when known) · type · era · chunks; a Bible table is one line."""
    if not records:
        return Reply.text(T(lang, "sources_empty"), lang=lang)
    books = [r for r in records if r.type == "bible"]
    others = [r for r in records if r.type != "bible"]
    lines = []
    for r in others[:MAX_LISTED]:
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
    shown = len(others) + (1 if books else 0)
    blocks = [
        Block(T(lang, "sources_heading", n=shown), "heading"),
        Block("\n".join(lines)),
    ]
    if len(others) > MAX_LISTED:
        blocks.append(Block(T(lang, "sources_more", n=len(others) - MAX_LISTED), "note"))
    blocks.append(Block(T(lang, "sources_filters"), "note"))
    return Reply(blocks=tuple(blocks), lang=lang)


def corpus_commands(corpus: Corpus, *, max_bytes: int) -> tuple[Group | Command[Any], ...]:
    async def add(call: Call, request: IngestUpload) -> Reply:
        lang, file = call.actor.lang, request.file
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
            result = await corpus.add(file.name, file.data, request.meta, on_progress)
        except IngestBusy:
            return Reply.error(T(lang, "busy"), lang=lang)
        finally:
            done = True
            changed.set()
            await task
        return _summary(lang, file.name, result)

    async def delete(call: Call, source: str) -> Reply:
        lang = call.actor.lang
        record = await corpus.delete(source)
        if record is None:
            return Reply.error(T(lang, "not_found", source=source), lang=lang)
        return Reply.text(
            T(lang, "deleted", title=record.source, chunks=record.chunk_count), lang=lang
        )

    async def sources(call: Call, _: None) -> Reply:
        return _sources_reply(call.actor.lang, await corpus.documents())

    ingest = Group(
        Help(
            "ingest",
            "管理语料（管理员）：上传文件导入，或 delete 删除",
            "Manage the corpus (admins): upload a file, or delete a document",
            "/ingest [书名 | 作者 | 年份 | 类型]（随文件发送；控制台：/ingest @书.pdf 书名 | …）"
            "· /ingest delete 书名",
            "/ingest [title | author | year | type] (with the file; on the console: /ingest"
            " @book.pdf title | …) · /ingest delete TITLE",
        ),
        (
            Command(
                help=Help(
                    "add",
                    "导入随命令上传的 PDF、Word（.docx）、EPUB、TXT 或 Markdown 文件",
                    "Ingest the PDF, Word (.docx), EPUB, TXT or Markdown file sent with the command",
                    "/ingest 神的经纶 | 某某 | 1984 | book（写在文件的说明里）",
                    "/ingest God's Economy | A. Author | 1984 | book (as the file's caption)",
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
                ),
                parse=_upload_request,
                run=add,
                permission="admins",
                pipe_split=True,
            ),
            Command(
                help=Help(
                    "delete",
                    "删除一份文档及其全部索引",
                    "Delete a document and everything indexed from it",
                    "/ingest delete 神的经纶",
                    "/ingest delete God's Economy",
                ),
                params=(Param("source", "书名或文档 ID", "title or document id", rest=True),),
                parse=lambda v: v.text("source"),
                run=delete,
                permission="admins",
            ),
        ),
        default="add",
    )
    listing = Command(
        help=Help("sources", "列出已导入的文档", "List the documents in the corpus", "/sources"),
        parse=lambda v: None,
        run=sources,
        rate_limited=False,
    )
    return ingest, listing
