"""Layout cleanup: running headers/footers, page numbers, lines broken by the layout.

Pure functions on strings; loaders for paged formats (PDF) call them, and so may plain text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_CJK_CLASS = r"\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
# Spaces an extractor put between two CJK characters (justified or per-glyph placed text).
_CJK_GAP = re.compile(f"(?<=[{_CJK_CLASS}])[ \t\u00a0]+(?=[{_CJK_CLASS}])")
# A line that ends a sentence (or a heading-like short line ending in a colon).
_SENTENCE_END = re.compile(r"[。！？!?；;：:…」』”’\")）)】》]\s*$|[.]\s*$")
_PAGE_NUMBER = re.compile(
    r"^\s*(?:[-–—·•]\s*)?(?:\d{1,4}|[ivxlcdm]{1,7}|[IVXLCDM]{1,7}|第\s*\d{1,4}\s*[页頁]|"
    r"page\s+\d{1,4}(?:\s+of\s+\d{1,4})?|\d{1,4}\s*/\s*\d{1,4})(?:\s*[-–—·•])?\s*$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_INDENT = re.compile(r"^(?:\u3000|\s{2,})")


def is_cjk(ch: str) -> bool:
    return bool(_CJK_CHAR.match(ch))


def collapse_cjk_spaces(text: str) -> str:
    return _CJK_GAP.sub("", text)


_HSPACE = re.compile(r"[ \t\u00a0]+")


def squash(line: str) -> str:
    """Collapse runs of ASCII spaces/tabs; keep the ideographic space (U+3000), which
    Chinese headings use between a number and a title."""
    return _HSPACE.sub(" ", line).strip(" \t\u00a0")


def is_page_number(line: str) -> bool:
    return bool(_PAGE_NUMBER.match(line))


def _key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.split()))


def strip_running_lines(pages: Sequence[list[str]], *, edge: int = 3) -> list[list[str]]:
    """Drop page numbers and lines that repeat at the top or bottom of many pages.

    A line within `edge` lines of a page's top or bottom is a running header/footer when the
    same line (digits ignored, so "第 3 页" and "第 4 页" match) appears in that zone on at
    least half the pages (and on at least two pages).
    """
    zones: list[set[str]] = []
    for lines in pages:
        content = [ln for ln in lines if ln.strip()]
        zone = content[:edge] + content[-edge:]
        zones.append({_key(ln) for ln in zone})
    counts: Counter[str] = Counter(k for z in zones for k in z)
    threshold = max(2, (len(pages) + 1) // 2)
    running = (
        {k for k, n in counts.items() if n >= threshold and len(k) <= 80}
        if len(pages) >= 2
        else set()
    )
    out: list[list[str]] = []
    for lines in pages:
        content_idx = [i for i, ln in enumerate(lines) if ln.strip()]
        edge_idx = set(content_idx[:edge] + content_idx[-edge:])
        kept = []
        for i, ln in enumerate(lines):
            if i in edge_idx and (is_page_number(ln) or _key(ln) in running):
                continue
            kept.append(ln)
        out.append(kept)
    return out


def _join(a: str, b: str) -> str:
    if not a:
        return b
    if a.endswith("-") and len(a) > 1 and a[-2].isalpha() and b[:1].islower():
        return a[:-1] + b  # hyphenated word split across lines
    if is_cjk(a[-1]) or is_cjk(b[0]):
        return a + b
    return a + " " + b


_HYPHENS = ("-", "\u2010", "\u00ad")  # hyphen-minus, hyphen (as WeasyPrint sets it), soft


def join_wrapped(a: str, b: str, hyphenated: bool = False) -> str:
    """Two typeset lines of one paragraph as one: no space after CJK (or before it), a word
    the typesetter hyphenated at the line end rejoined, else one space."""
    if not a:
        return b
    if hyphenated and a.endswith(_HYPHENS):
        return a[:-1] + b
    if a.endswith(_HYPHENS) and len(a) > 1 and a[-2].isalpha() and b[:1].islower():
        return a[:-1] + b  # a word the typesetter hyphenated at the line end
    if is_cjk(a[-1]) or is_cjk(b[:1]):
        return a + b
    return a + " " + b


def join_broken_lines(lines: Sequence[str]) -> list[str]:
    """Lines → paragraphs. A line not ending in sentence punctuation continues on the next
    line; a blank line or an indented line starts a new paragraph. No space is inserted
    between CJK characters."""
    paragraphs: list[str] = []
    current = ""
    for raw in lines:
        if not raw.strip():
            if current:
                paragraphs.append(current)
                current = ""
            continue
        indented = bool(_INDENT.match(raw))
        line = collapse_cjk_spaces(squash(raw))
        if current and (indented or _SENTENCE_END.search(current)):
            paragraphs.append(current)
            current = line
        else:
            current = _join(current, line)
    if current:
        paragraphs.append(current)
    return paragraphs


def tidy(text: str) -> str:
    """Whitespace cleanup that keeps the characters (display text): trims lines, drops
    zero-width characters, collapses runs of blank lines and spaces between CJK."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[\u200b\u200c\u200d\u2060\ufeff]", "", text)
    lines = [collapse_cjk_spaces(squash(ln)) for ln in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
