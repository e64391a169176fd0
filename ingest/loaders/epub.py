"""EPUB (ebooklib): chapters in spine order, titles from the TOC, HTML → paragraphs.

Before ebooklib touches the file, the zip's central directory is checked
(`ingest.loaders.safety.check_zip`): not a zip → skip; an entry beyond `max_entry_bytes`
(default 50 MB) or a total beyond `max_total_bytes` when decompressed → skip as a zip bomb.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ingest.clean import collapse_cjk_spaces, squash
from ingest.loaders.base import Block, Document, LoadError, Note, check_size, guess_language
from ingest.loaders.safety import MAX_ENTRY_BYTES, MAX_TOTAL_BYTES, check_zip
from ingest.notes import cited_sentence, placeholder, take_placeholders
from ingest.titleblock import is_date, read_title_block

_BLOCK_TAGS = {"p", "div", "li", "blockquote", "pre", "tr", "dd", "dt", "section", "article"}
_BLOCK_TAGS |= {"header", "aside", "figure", "figcaption", "table"}
_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SKIP_TAGS = {"script", "style", "head", "title", "nav"}
_VOID_TAGS = {"br", "hr", "img", "meta", "link", "input", "wbr", "col", "area", "source"}
# epub:type / role of a note's body (EPUB 3 structural semantics; DPUB-ARIA), and of a list of
# notes whose other text (a rule, a "Notes" heading) is not the book's.
_NOTE_TYPES = {"footnote", "endnote", "rearnote", "note", "doc-footnote", "doc-endnote"}
_NOTES_TYPES = {"footnotes", "endnotes", "rearnotes", "doc-endnotes"}
_NOTEREF_TYPES = {"noteref", "doc-noteref", "footnote-ref"}
# pandoc's title block: <h1 class="title">, <p class="subtitle|author|date">.
_BYLINE_CLASSES = ("title", "subtitle", "author", "date")
_TITLEPAGE_TYPES = {"titlepage", "title-block-header"}
_SEP = "\x1f"  # between a mark's note id and its label in a placeholder


def _tokens(attrs: dict[str, str | None], *names: str) -> set[str]:
    return {t for name in names for t in (attrs.get(name) or "").lower().split()}


class _HtmlText(HTMLParser):
    """One XHTML file → blocks; a note's mark as a placeholder in its block's text (the note's
    id and the label as printed), the notes by id, and a title page's lines by class."""

    def __init__(self, name: str = "") -> None:
        super().__init__(convert_charrefs=True)
        self.name = name  # the file's name in the book: note ids are unique within a file
        self.blocks: list[Block] = []
        self.notes: dict[str, str] = {}
        self.byline: dict[str, str] = {}
        self._buf: list[str] = []
        self._heading = 0
        self._skip = 0
        self._stack: list[str] = []
        self._ref: tuple[int, str, list[str]] | None = None  # a mark: depth, note id, its text
        self._note: tuple[int, str, list[str]] | None = None  # a note: depth, id, its text
        self._notes_depth = 0  # inside a list of notes
        self._backlink = 0  # inside a note, a link within the book: its way back to the mark
        self._titlepage = 0
        self._class = ""  # a title-page line being read: its class

    def _flush(self) -> None:
        text = _clean("".join(self._buf))
        self._buf.clear()
        if not text:
            return
        if self._class:
            self.byline.setdefault(self._class, text)
        elif self._heading:
            self.blocks.append(Block(text, "heading", self._heading))
        else:
            self.blocks.append(Block(text, "para"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID_TAGS:
            self._stack.append(tag)
        named = dict(attrs)
        kinds = _tokens(named, "epub:type", "role")
        if self._note is not None and tag == "a" and "#" in (named.get("href") or ""):
            self._backlink = self._backlink or len(self._stack)
        if self._note is None and self._ref is None and self._open_note(tag, named, kinds):
            return
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _HEADING_TAGS or tag in _BLOCK_TAGS:
            self._block_start(tag, named, kinds)
        elif tag == "br":
            (self._note[2] if self._note else self._buf).append(" " if self._note else "\n")

    def _open_note(self, tag: str, named: dict[str, str | None], kinds: set[str]) -> bool:
        """A mark (its text kept aside), a note, or a list of notes starts here."""
        depth = len(self._stack)
        href = named.get("href") or ""
        if tag == "a" and "#" in href and (kinds | _tokens(named, "class")) & _NOTEREF_TYPES:
            self._ref = (depth, self._target(href), [])
            return True
        if kinds & _NOTE_TYPES and named.get("id"):
            self._flush()
            self._note = (depth, f"{self.name}#{named.get('id')}", [])
            return True
        if kinds & _NOTES_TYPES or "footnotes" in _tokens(named, "class"):
            self._flush()
            self._notes_depth = self._notes_depth or depth
        if kinds & _TITLEPAGE_TYPES or named.get("id") == "title-block-header":
            self._titlepage = self._titlepage or depth
        return False

    def _target(self, href: str) -> str:
        """`file#id` of the note a link points at (`#fn1` is in this file)."""
        file, _, fragment = unquote(href).partition("#")
        if file:
            file = posixpath.normpath(posixpath.join(posixpath.dirname(self.name), file))
        return f"{file or self.name}#{fragment}"

    def _block_start(self, tag: str, named: dict[str, str | None], kinds: set[str]) -> None:
        if self._note is not None:
            self._note[2].append(" ")
            return
        self._flush()
        if tag in _HEADING_TAGS:
            self._heading = _HEADING_TAGS[tag]
        classes = _tokens(named, "class")
        if self._titlepage or (tag == "h1" and "title" in classes):
            self._class = next((c for c in _BYLINE_CLASSES if c in classes), "")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID_TAGS:
            return
        depth = len(self._stack)
        if tag in self._stack:
            while self._stack and self._stack.pop() != tag:
                depth -= 1
        if self._backlink and depth <= self._backlink:
            self._backlink = 0
        if self._ref is not None and depth <= self._ref[0]:
            label = _clean("".join(self._ref[2]))
            self._buf.append(placeholder(f"{self._ref[1]}{_SEP}{label}"))
            self._ref = None
        elif self._note is not None and depth <= self._note[0]:
            self.notes[self._note[1]] = _clean("".join(self._note[2]))
            self._note = None
        elif tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _HEADING_TAGS or tag in _BLOCK_TAGS:
            self._block_end(depth)

    def _block_end(self, depth: int) -> None:
        if self._note is not None:
            return
        self._flush()
        self._heading = 0
        self._class = ""
        if self._notes_depth and depth <= self._notes_depth:
            self._notes_depth = 0
        if self._titlepage and depth <= self._titlepage:
            self._titlepage = 0

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._ref is not None:
            self._ref[2].append(data)
        elif self._note is not None:
            if not self._backlink:
                self._note[2].append(data)
        elif not self._notes_depth:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _clean(text: str) -> str:
    return collapse_cjk_spaces(squash(re.sub(r"[\r\n\t]+", " ", text)))


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


_PLACEHOLDER_TOC = re.compile(r"^(?:section|chapter|part)\s*\d+$|^ch\d+(?:\.x?html)?$", re.I)


@dataclass(slots=True)
class _Book:
    """What the spine's files say, gathered in reading order."""

    title: str  # dc:title
    creator: str  # dc:creator
    blocks: list[Block] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    byline: dict[str, str] = field(default_factory=dict)

    def add(self, parser: _HtmlText, toc_title: str | None) -> None:
        for key, value in parser.byline.items():
            self.byline.setdefault(key, value)
        self.notes.update(parser.notes)
        found = parser.blocks
        if not self.blocks and not self.byline and found:
            found = self._title_lines(found)
        if not self.blocks and found and found[0].kind == "heading":
            if _bare(found[0].text) == _bare(self.title):
                found = found[1:]  # the book's title again (pandoc heads its first part so)
        if not found:
            return
        if toc_title and not any(b.kind == "heading" for b in found[:3]):
            if _bare(found[0].text) == _bare(toc_title):
                found = [Block(found[0].text, "heading", 1), *found[1:]]  # LibreOffice's EPUB
            elif not (_PLACEHOLDER_TOC.match(toc_title) or _bare(toc_title) == _bare(self.title)):
                found = [Block(toc_title, "heading", 1), *found]
        self.blocks.extend(found)

    def _title_lines(self, found: list[Block]) -> list[Block]:
        """A first file that opens with the book's title (dc:title) and, within four lines,
        its author (dc:creator): those lines are its title page (as LibreOffice writes one,
        with no classes to say so)."""
        if not self.title or _bare(found[0].text) != _bare(self.title):
            return found
        lines = [b.text for b in found[1:5]]
        author = next((i for i, t in enumerate(lines) if _bare(t) == _bare(self.creator)), -1)
        end = author + 1
        while end < len(lines) and is_date(lines[end]):
            end += 1
        read = read_title_block(found[0].text, lines[:end])
        self.byline = {"title": read.title, "subtitle": read.subtitle, "date": read.date}
        self.byline["author"] = read.author
        return found[1 + end :]

    def resolved(self) -> tuple[list[Block], list[Note]]:
        """Blocks without placeholders, and a `Note` for each mark whose note was found; a
        mark whose note was not goes back into the text as printed."""
        blocks: list[Block] = []
        notes: list[Note] = []
        for block in self.blocks:
            text, marks = take_placeholders(block.text)
            calls = []
            for at, key in marks:
                ref, _, label = key.partition(_SEP)
                if ref in self.notes:
                    calls.append((at, self.notes[ref]))
                else:
                    text, calls = text[:at] + label + text[at:], _shift(calls, at, len(label))
            blocks.append(Block(text, block.kind, block.level))
            for at, note in calls:
                notes.append(Note(len(notes) + 1, note, len(blocks) - 1, cited_sentence(text, at)))
        return blocks, notes


def _shift(calls: list[tuple[int, str]], at: int, by: int) -> list[tuple[int, str]]:
    return [(a + by if a >= at else a, n) for a, n in calls]


def _bare(text: str) -> str:
    return "".join(text.split())


def _meta(book: Any, name: str) -> str:
    try:
        values = book.get_metadata("DC", name)
    except Exception:
        return ""
    return str(values[0][0]).strip() if values and values[0] and values[0][0] else ""


def _spine_html(book: Any) -> Iterator[tuple[str, str]]:
    """(file name, XHTML) of each text file in reading order."""
    import ebooklib
    from ebooklib import epub

    for entry in book.spine:
        item_id = entry[0] if isinstance(entry, tuple | list) else entry
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        if isinstance(item, epub.EpubNav):
            continue
        try:
            yield item.get_name(), item.get_content().decode("utf-8", errors="replace")
        except Exception:
            continue


def load_epub(
    path: Path,
    max_bytes: int,
    *,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> Document:
    check_size(path, max_bytes)
    check_zip(path, "EPUB", max_entry_bytes, max_total_bytes)
    from ebooklib import epub

    try:
        book = epub.read_epub(str(path), options={"ignore_ncx": False})
    except Exception as err:
        raise LoadError(
            "EPUB 无法解析", f"cannot parse EPUB: {type(err).__name__}: {err}"
        ) from None
    toc = _toc_titles(book.toc)
    found = _Book(_meta(book, "title"), _meta(book, "creator"))
    for name, html in _spine_html(book):
        parser = _HtmlText(name)
        parser.feed(html)
        parser.close()
        found.add(parser, toc.get(name) or toc.get(posixpath.basename(name)))
    blocks, notes = found.resolved()
    if not blocks:
        raise LoadError("EPUB 中没有文字内容", "no text in EPUB")
    byline = found.byline
    text = "\n".join(b.text for b in blocks)
    hints = {key: byline[key] for key in ("subtitle", "date") if byline.get(key)}
    return Document(
        path=path,
        format="epub",
        blocks=blocks,
        title=found.title or byline.get("title", ""),
        author=byline.get("author") or found.creator,
        language=guess_language(text),
        hints=hints,
        notes=notes,
    )
