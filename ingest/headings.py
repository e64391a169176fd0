"""What a chapter heading looks like, and which title a document gets.

A chapter heading (`第三章 神的经纶与人的灵`, `第一篇`, `壹　…`, `一、…`, `Chapter 3`, `Message 12`,
`CHAPTER ONE`, `Chapter Twenty-One`)
names a part of a book, never the book: a file that starts with one is titled by its name.
"""

from __future__ import annotations

import re
from pathlib import Path

_NUMERAL = r"[一二三四五六七八九十百千零〇两\d]+"
# An English chapter number: digits, a Roman numeral (upper case), or a spelled-out number in
# any case (`One`, `TWELVE`, `Twenty-One`, `twenty one`).
_UNITS = "one|two|three|four|five|six|seven|eight|nine"
_TEENS = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_SPELLED = rf"(?i:(?:{_TENS})(?:[-\s](?:{_UNITS}))?|{_TEENS}|{_UNITS}|(?:one\s+)?hundred|zero)"
EN_NUMBER = rf"(?:\d+|[IVXLC]+|{_SPELLED})"
_EN_CHAPTER_WORD = r"(?:Chapter|CHAPTER|Message|MESSAGE|Lesson|LESSON|Part|PART)"
CHAPTER_LINE = re.compile(
    rf"^(?:第{_NUMERAL}[章篇课課讲講节節卷部回]|{_EN_CHAPTER_WORD}\s+{EN_NUMBER}\b(?![-'’]))"
)
# Outline point markers that also open chapters in books: 壹　… / 一、…
_POINT_LINE = re.compile(
    r"^(?:[壹贰貳叁參肆伍陆陸柒捌玖拾]+(?:[\s\u3000、．.]|$)|[一二三四五六七八九十]+[、．])"
)
# Titles that PDF producers write when the author set none.
_PLACEHOLDER = re.compile(
    r"^(?:untitled|unknown|document\d*|microsoft (?:word|powerpoint) ?-.*|.*\.(?:docx?|pdf|txt|rtf))$",
    re.IGNORECASE,
)


_NAMES_CHAPTER = re.compile(
    rf"第{_NUMERAL}[章篇卷部回]|\b(?:Chapter|CHAPTER|Psalm|PSALM)\s+{EN_NUMBER}\b(?![-'’])"
)


def names_chapter(text: str) -> bool:
    """A heading that names a chapter anywhere in it: `诗篇第二十三篇`, `Book II, Chapter 3`."""
    return bool(_NAMES_CHAPTER.search(text))


def is_chapter_line(text: str) -> bool:
    """A short single line that opens a chapter (第X章/篇…, Chapter N, Message N)."""
    text = text.strip()
    return "\n" not in text and len(text) <= 60 and bool(CHAPTER_LINE.match(text))


def is_chapter_heading(text: str) -> bool:
    """A chapter line, or an outline-style numbered heading (壹　…, 一、…)."""
    text = text.strip()
    return is_chapter_line(text) or bool(_POINT_LINE.match(text))


def usable_title(candidate: str | None) -> str:
    """`candidate` when it can be a document's title; "" when it is a chapter heading, a
    placeholder a tool wrote, or too long to be a title."""
    text = " ".join((candidate or "").split())
    if not text or len(text) > 120 or is_chapter_heading(text) or _PLACEHOLDER.match(text):
        return ""
    return text


def choose_title(given: str | None, from_file: str | None, path: Path) -> str:
    """The manifest / `--title` (`given`), else the file's own metadata (PDF /Title, EPUB
    dc:title, a Markdown H1) when it is a real title, else the file name."""
    return (given or "").strip() or usable_title(from_file) or path.stem
