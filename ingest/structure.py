"""Structure found in a Document: prose sections, outline trees, verse + notes entries, and
the document type inferred from them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingest.clean import join_broken_lines, squash
from ingest.headings import is_chapter_line, names_chapter
from ingest.loaders.base import Block, Document
from retrieval.types import ChunkType

# ---- prose ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Section:
    """Paragraphs under one heading path (outermost first)."""

    path: tuple[str, ...]
    paragraphs: list[str] = field(default_factory=list)

    @property
    def chapter(self) -> str:
        return " > ".join(self.path)


def prose_sections(doc: Document) -> list[Section]:
    """Headings (Markdown/EPUB, or chapter lines like `第三章 …` in TXT/PDF) open sections;
    paragraphs have layout line breaks joined."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current = Section(())
    for block in doc.blocks:
        level = block.level if block.kind == "heading" else 0
        if block.kind != "heading" and doc.format in ("txt", "pdf") and is_chapter_line(block.text):
            level = 1
        if level:
            if current.paragraphs:
                sections.append(current)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, squash(block.text.replace("\n", " "))))
            current = Section(tuple(t for _, t in stack))
            continue
        lines = block.text.split("\n")
        current.paragraphs.extend(join_broken_lines(lines) if len(lines) > 1 else [block.text])
    if current.paragraphs:
        sections.append(current)
    return sections


def heading_path_at(blocks: list[Block], index: int) -> tuple[str, ...]:
    """The headings enclosing block `index` (outermost first)."""
    stack: list[tuple[int, str]] = []
    for block in blocks[: index + 1]:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, squash(block.text.replace("\n", " "))))
    return tuple(t for _, t in stack)


# ---- outline --------------------------------------------------------------------------------

_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("zh_capital", re.compile(r"^([壹贰貳叁參肆伍陆陸柒捌玖拾]+)(?:[\s\u3000、．.]|$)")),
    ("zh_paren", re.compile(r"^[（(]([一二三四五六七八九十]+)[）)]")),
    ("zh_num", re.compile(r"^([一二三四五六七八九十]+)[、．]")),
    ("arabic_paren", re.compile(r"^[（(](\d{1,3})[）)]")),
    ("arabic", re.compile(r"^(\d{1,3})(?:[.．](?!\d)|、)")),
    ("roman", re.compile(r"^((?=[IVXLC])C{0,3}(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))\.\s")),
    ("upper", re.compile(r"^([A-Z])\.\s")),
    ("lower", re.compile(r"^([a-z])[.)]\s")),
]


@dataclass(slots=True)
class OutlinePoint:
    marker_style: str
    text: str  # the point's own text (marker included), continuation lines joined
    level: int  # 1 = top-level point
    ancestors: tuple[str, ...]  # first lines of the enclosing points, outermost first

    def path(self, title: str) -> str:
        head = self.text.split("\n", 1)[0]
        return " > ".join(p for p in (title, *self.ancestors, head) if p)


def outline_marker(line: str, stack: list[tuple[str, str]] | None = None) -> str | None:
    """The marker style at the start of `line` ("zh_capital", "roman", …), or None.

    `stack` (style, marker token) of open levels resolves `I.`/`C.`: a letter following the
    previous upper-case letter is a letter, otherwise `I.` starts a Roman list."""
    s = line.strip()
    hits = [(name, m.group(1)) for name, m in ((n, p.match(s)) for n, p in _MARKERS) if m]
    if not hits:
        return None
    names = [n for n, _ in hits]
    if "roman" in names and "upper" in names:
        token = dict(hits)["upper"]
        opened = dict(stack or [])
        prev_upper = opened.get("upper")
        if prev_upper and len(prev_upper) == 1 and ord(token) == ord(prev_upper) + 1:
            return "upper"
        if "roman" in opened:
            return "roman"
        if "upper" in opened:
            return "upper"
        return "roman" if token == "I" else "upper"
    return names[0]


def parse_outline(lines: list[str]) -> tuple[str, list[OutlinePoint]]:
    """First non-marker line is the title; each marker line opens a point; unmarked or
    lines continue the current point (indentation is ignored). Levels follow the order in which marker
    styles first appear (a style seen before closes the levels below it)."""
    title = ""
    points: list[OutlinePoint] = []
    stack: list[tuple[str, str]] = []  # (style, token)
    heads: list[str] = []
    for raw in lines:
        if not raw.strip():
            continue
        line = squash(raw).strip("\u3000")
        style = outline_marker(line, stack)
        if style is None:
            if not points and not title:
                title = line
            elif points:
                points[-1].text += "\n" + line
            else:
                title += " " + line
            continue
        styles = [s for s, _ in stack]
        if style in styles:
            idx = styles.index(style)
            del stack[idx:]
            del heads[idx:]
        token = next((m.group(1) for n, p in _MARKERS if n == style and (m := p.match(line))), "")
        points.append(OutlinePoint(style, line, len(stack) + 1, tuple(heads)))
        stack.append((style, token))
        heads.append(line)
    return title, points


def outline_from_blocks(doc: Document) -> tuple[str, list[OutlinePoint]] | None:
    """An outline whose levels the file states (Word numbering: `point` blocks; heading
    styles above them), or None when the document has no such points.

    The title is the document's own (a Title paragraph) or its first heading; the other
    headings rank above the numbered points, in the order of their levels. An unnumbered
    paragraph continues the point before it (before any point, it is a point of its own)."""
    if not any(b.kind == "point" for b in doc.blocks):
        return None
    blocks = list(doc.blocks)
    title = doc.title
    if blocks[0].kind == "heading" and (not title or squash(blocks[0].text) == squash(title)):
        title = squash(blocks.pop(0).text)
    heading_levels = sorted({b.level for b in blocks if b.kind == "heading"})
    rank_of = {lv: i + 1 for i, lv in enumerate(heading_levels)}
    points: list[OutlinePoint] = []
    stack: list[tuple[int, str]] = []
    for block in blocks:
        text = squash(block.text.replace("\n", " "))
        if block.kind == "heading":
            rank = rank_of[block.level]
        elif block.kind == "point":
            rank = len(heading_levels) + block.level
        elif points:
            points[-1].text += "\n" + text
            continue
        else:
            rank = 1
        while stack and stack[-1][0] >= rank:
            stack.pop()
        points.append(OutlinePoint("stated", text, len(stack) + 1, tuple(h for _, h in stack)))
        stack.append((rank, text))
    return title, points


def outline_share(text: str) -> float:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return 0.0
    marked = sum(1 for ln in lines if outline_marker(ln))
    return marked / len(lines)


# ---- footnotes ------------------------------------------------------------------------------

_VERSE_HEADING = re.compile(
    r"^(?:[1-3]\s?)?[\u4e00-\u9fffA-Za-z]{1,12}\.?\s*\d{1,3}\s*[:：]\s*\d{1,3}(?:\s*[-–—]\s*\d{1,3})?$"
)
_NOTE_START = re.compile(r"^(?:注\s*\d+|Note\s*\d+|\d{1,2}[.、．]\s)")


@dataclass(slots=True)
class FootnoteEntry:
    heading: str  # the verse coordinate as written ("弗1:10")
    verse_text: str
    notes: list[str] = field(default_factory=list)


def is_verse_heading(text: str) -> bool:
    return bool(_VERSE_HEADING.match(text.strip()))


def parse_footnotes(doc: Document) -> list[FootnoteEntry]:
    entries: list[FootnoteEntry] = []
    current: FootnoteEntry | None = None
    for block in doc.blocks:
        if block.kind == "heading" and is_verse_heading(block.text):
            current = FootnoteEntry(squash(block.text), "")
            entries.append(current)
            continue
        if current is None or block.kind == "heading":
            current = None if block.kind == "heading" else current
            continue
        text = " ".join(join_broken_lines(block.text.split("\n")))
        if block.kind == "quote" and not current.verse_text and not current.notes:
            current.verse_text = text
        elif _NOTE_START.match(text) or not current.notes:
            current.notes.append(text)
        else:
            current.notes[-1] += "\n" + text
    return [e for e in entries if e.verse_text or e.notes]


# ---- type inference -------------------------------------------------------------------------


def _headings(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.kind == "heading"]


def infer_type(doc: Document) -> ChunkType:
    """outline markers on most lines → outline; verse headings with quotes/notes → footnote;
    Markdown/TXT of one message → message; long or multi-chapter PDF/EPUB/TXT → book."""
    headings = _headings(doc.blocks)
    verse_heads = sum(1 for h in headings if is_verse_heading(h.text))
    if verse_heads >= 2 and verse_heads >= len(headings) // 2:
        return "footnote"
    text = doc.plain_text()
    body = [b for b in doc.blocks if b.kind != "heading"]
    if len(body) >= 3 and sum(1 for b in body if b.kind == "point") * 2 >= len(body):
        return "outline"  # numbered points make up most of it (Word numbering)
    if doc.format in ("txt", "md", "pdf", "docx") and outline_share(text) >= 0.5:
        lines = [ln for ln in text.split("\n") if ln.strip()]
        if len(lines) >= 3:
            return "outline"
    # Chapters: level-1 headings, or headings naming a chapter (## 诗篇第二十三篇) under one title.
    named = sum(1 for h in headings if h.level <= 2 and names_chapter(h.text))
    chapters = max(sum(1 for h in headings if h.level == 1), named)
    chapters += sum(1 for b in doc.blocks if b.kind == "para" and is_chapter_line(b.text))
    if doc.format in ("pdf", "epub") or chapters > 1 or len(text) > 60000:
        return "book"
    return "message"
