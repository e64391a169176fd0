"""How a passage is cited: one `CitationLabel`, built from the chunk's metadata alone.

`/ask`, `/cite`, the renderers and the citation verifier all use it, so a source is named the
same way everywhere:

- a book or an outline: 【书名，章节】 — the title, then the document's own section path, whole
  (`第三章 神的经纶与人的灵` stays whole under the title 神的经纶; a leading heading that *is*
  the title is not repeated);
- a message: 【信息题目，段落 N】 (or 段落 N–M when the passage spans paragraphs);
- a footnote: 【注解的书名，弗1:10】 — the verse it annotates;
- a Bible verse: 【和合本，弗1:10】.

In English replies the separators and the verse are English (【God's Economy, Chapter 3】,
【CUV, Eph 1:10】); titles and headings stay as the document writes them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kernel.i18n import Lang
from retrieval import scripture
from retrieval.text import to_simplified
from retrieval.types import Chunk, ChunkType

SECTION_SEP = " > "
# Bible sources as stored → (Chinese, English) short names for citations.
_VERSION_NAMES = {"和合本": ("和合本", "CUV")}
_PARENTHESIS = re.compile(r"[（(][^（）()]*[）)]\s*$")


def _key(text: str) -> str:
    """Width, script, case, spaces and punctuation folded: how labels are compared."""
    text = to_simplified(unicodedata.normalize("NFKC", text)).lower()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZSC")


def version_names(source: str) -> tuple[str, str]:
    """`和合本（1919）` → ("和合本", "CUV"); an unknown version keeps its name (no year)."""
    short = _PARENTHESIS.sub("", source).strip() or source
    return _VERSION_NAMES.get(short, (short, short))


def _verse_range(chunk: Chunk) -> scripture.RefRange | None:
    """The verse a Bible or footnote chunk is about (its coordinate, not what it mentions)."""
    if chunk.type == "bible":
        return _single_verse(chunk.scripture_refs[0]) if chunk.scripture_refs else None
    heading = chunk.extra.get("verse")
    if not isinstance(heading, str) or not heading:
        heading = chunk.chapter  # a footnote's chapter is its verse heading
    try:
        ranges = scripture.parse_reference(heading)
    except scripture.ScriptureError:
        ranges = scripture.find_references(heading)[:1]
    return ranges[0] if len(ranges) == 1 else None


def _single_verse(osis: str) -> scripture.RefRange | None:
    parts = osis.split(".")
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return None
    ref = scripture.VerseRef(parts[0], int(parts[1]), int(parts[2]))
    return scripture.RefRange(ref, ref)


def _section(title: str, chapter: str) -> tuple[str, ...]:
    """The chunk's heading path without leading headings that only repeat the title."""
    path = [p.strip() for p in chapter.split(SECTION_SEP) if p.strip()]
    title_key = _key(title)
    while path and _key(path[0]) == title_key:
        path.pop(0)
    return tuple(path)


def _paragraphs(chunk: Chunk) -> tuple[int, int] | None:
    first, last = chunk.extra.get("para"), chunk.extra.get("para_end")
    if not isinstance(first, int) or first < 1:
        return None
    return (first, last if isinstance(last, int) and last >= first else first)


@dataclass(frozen=True, slots=True)
class CitationLabel:
    """What a citation names: a document and the place in it."""

    title: str
    kind: ChunkType = "book"
    section: tuple[str, ...] = ()
    paragraphs: tuple[int, int] | None = None
    verse: scripture.RefRange | None = None

    @classmethod
    def of(cls, chunk: Chunk) -> CitationLabel:
        title = chunk.source.strip() or chunk.doc_id
        if chunk.type in ("bible", "footnote"):
            verse = _verse_range(chunk)
            if verse is not None:
                return cls(title, chunk.type, verse=verse)
        if chunk.type == "message":
            paragraphs = _paragraphs(chunk)
            if paragraphs is not None:
                return cls(title, chunk.type, paragraphs=paragraphs)
        return cls(title, chunk.type, _section(title, chunk.chapter))

    def name(self, lang: Lang = "zh") -> str:
        """The document as named in a citation (a Bible version by its short name)."""
        if self.kind == "bible":
            zh, en = version_names(self.title)
            return en if lang == "en" else zh
        return self.title

    def place(self, lang: Lang = "zh") -> str:
        """Where in the document: a verse, paragraphs, or the section path ("" = the whole)."""
        if self.verse is not None:
            return (scripture.render_en if lang == "en" else scripture.render_zh)(self.verse)
        if self.paragraphs is not None:
            first, last = self.paragraphs
            if lang == "en":
                return f"para. {first}" if first == last else f"paras. {first}–{last}"
            return f"段落 {first}" if first == last else f"段落 {first}–{last}"
        return SECTION_SEP.join(self.section)

    def text(self, lang: Lang = "zh") -> str:
        """The label inside 【】: "神的经纶，第三章 神的经纶与人的灵" / "…, …" in English."""
        place = self.place(lang)
        sep = ", " if lang == "en" else "，"
        return f"{self.name(lang)}{sep}{place}" if place else self.name(lang)

    def __str__(self) -> str:
        return self.text("zh")

    def keys(self) -> frozenset[str]:
        """Folded forms a model may write for this label (either language, any punctuation)."""
        return frozenset(_key(self.text(lang)) for lang in ("zh", "en"))

    def names(self) -> frozenset[str]:
        return frozenset(_key(self.name(lang)) for lang in ("zh", "en"))

    def places(self) -> frozenset[str]:
        return frozenset(_key(self.place(lang)) for lang in ("zh", "en")) - {""}


def label_key(text: str) -> str:
    """Fold a label the way `CitationLabel.keys` does (《》 and punctuation ignored)."""
    return _key(text)
