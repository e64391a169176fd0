"""The whole novel as Markdown or EPUB (ebooklib), from the current versions."""

from __future__ import annotations

import asyncio
import html
import io
import uuid
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExportChapter:
    number: int
    title: str
    text: str


def chapter_markdown(ch: ExportChapter) -> str:
    return f"## 第{ch.number}章 {ch.title}\n\n{ch.text.strip()}\n"


def to_markdown(title: str, chapters: Sequence[ExportChapter]) -> bytes:
    parts = [f"# {title}\n"]
    parts.extend(chapter_markdown(c) for c in chapters)
    return "\n".join(parts).encode("utf-8")


def _epub_sync(title: str, chapters: Sequence[ExportChapter], book_id: str) -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(book_id)
    book.set_title(title)
    book.set_language("zh")
    book.add_author("百宝箱写作室")
    items = []
    for ch in chapters:
        body = "".join(
            f"<p>{html.escape(p.strip())}</p>" for p in ch.text.splitlines() if p.strip()
        )
        heading = html.escape(f"第{ch.number}章 {ch.title}")
        item = epub.EpubHtml(
            title=f"第{ch.number}章 {ch.title}", file_name=f"ch{ch.number:04d}.xhtml", lang="zh"
        )
        item.content = f"<h2>{heading}</h2>{body}"
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


async def to_epub(
    title: str, chapters: Sequence[ExportChapter], book_id: str | None = None
) -> bytes:
    return await asyncio.to_thread(_epub_sync, title, chapters, book_id or uuid.uuid4().hex)
