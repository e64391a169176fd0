"""EPUB (ebooklib): chapters in spine order, titles from the TOC, HTML → paragraphs.

Before ebooklib touches the file, the zip's central directory is checked
(`ingest.loaders.safety.check_zip`): not a zip → skip; an entry beyond `max_entry_bytes`
(default 50 MB) or a total beyond `max_total_bytes` when decompressed → skip as a zip bomb.
"""

from __future__ import annotations

import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

from ingest.clean import collapse_cjk_spaces, squash
from ingest.loaders.base import Block, Document, LoadError, check_size, guess_language
from ingest.loaders.safety import MAX_ENTRY_BYTES, MAX_TOTAL_BYTES, check_zip

_BLOCK_TAGS = {"p", "div", "li", "blockquote", "pre", "tr", "dd", "dt", "section", "article"}
_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SKIP_TAGS = {"script", "style", "head", "title", "nav"}


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self._buf: list[str] = []
        self._heading = 0
        self._skip = 0

    def _flush(self) -> None:
        text = collapse_cjk_spaces(squash(re.sub(r"[\r\n\t]+", " ", "".join(self._buf))))
        self._buf.clear()
        if text:
            if self._heading:
                self.blocks.append(Block(text, "heading", self._heading))
            else:
                self.blocks.append(Block(text, "para"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _HEADING_TAGS:
            self._flush()
            self._heading = _HEADING_TAGS[tag]
        elif tag in _BLOCK_TAGS:
            self._flush()
        elif tag == "br":
            self._buf.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _HEADING_TAGS:
            self._flush()
            self._heading = 0
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_blocks(html: str) -> list[Block]:
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    return parser.blocks


def _toc_titles(toc: object) -> dict[str, str]:
    """href (without fragment) → first TOC title pointing at it."""
    from ebooklib import epub

    out: dict[str, str] = {}

    def walk(node: object) -> None:
        if isinstance(node, list | tuple):
            for n in node:
                walk(n)
            return
        # A read book's TOC holds links and sections, a section as (Section, [children])
        # (the tuple is walked above).
        if isinstance(node, epub.Link | epub.Section) and node.href and node.title:
            out.setdefault(unquote(str(node.href).split("#", 1)[0]), str(node.title))

    walk(toc)
    return out


def load_epub(
    path: Path,
    max_bytes: int,
    *,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> Document:
    check_size(path, max_bytes)
    check_zip(path, "EPUB", max_entry_bytes, max_total_bytes)
    import ebooklib
    from ebooklib import epub

    try:
        book = epub.read_epub(str(path), options={"ignore_ncx": False})
    except Exception as err:
        raise LoadError(
            "EPUB 无法解析", f"cannot parse EPUB: {type(err).__name__}: {err}"
        ) from None
    toc = _toc_titles(book.toc)
    blocks: list[Block] = []
    for entry in book.spine:
        item_id = entry[0] if isinstance(entry, tuple | list) else entry
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        if isinstance(item, epub.EpubNav):
            continue
        try:
            html = item.get_content().decode("utf-8", errors="replace")
        except Exception:
            continue
        chapter_blocks = html_to_blocks(html)
        if not chapter_blocks:
            continue
        name = item.get_name()
        title = toc.get(name) or toc.get(posixpath.basename(name))
        has_heading = any(b.kind == "heading" for b in chapter_blocks[:3])
        if title and not has_heading:
            blocks.append(Block(title, "heading", 1))
        blocks.extend(chapter_blocks)
    if not blocks:
        raise LoadError("EPUB 中没有文字内容", "no text in EPUB")

    def meta(name: str) -> str:
        try:
            values = book.get_metadata("DC", name)
        except Exception:
            return ""
        return str(values[0][0]).strip() if values and values[0] and values[0][0] else ""

    text = "\n".join(b.text for b in blocks)
    return Document(
        path=path,
        format="epub",
        blocks=blocks,
        title=meta("title"),
        author=meta("creator"),
        language=guess_language(text),
    )
