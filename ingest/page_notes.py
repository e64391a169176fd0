"""Footnotes on typeset pages: the notes at a page's foot, matched to the marks in its text.

    pages ─ split_notes ─▶ pages without their notes + PageNotes (the notes, the marks they answer)
    a line ─ PageNotes.text ─▶ its text, an answered mark as a placeholder (`ingest.notes`)

- **The note area** of a page is its foot below the last line set in body-size type: lines
  set smaller than the body, from the first one that starts with a label (a superscript mark,
  or `1`, `1.`, `*` as LibreOffice and WeasyPrint set it) that a mark in the text of this page
  or an earlier one carries and no note has answered yet. A page number, or a line that
  repeats on other pages (a running footer), is not a note. Notes set as large as the text (a
  Word document printed to PDF) are the page's last lines from the first one that stands after
  a gap wider than the lines' spacing and starts with a mark of a line above it; a verse number
  at the start of a line in the text's spacing is no note.
- **A note** runs from its label to the next label; a line of the area without one continues
  the note above it, and at the top of the area the last note of the page before (a long note
  split across pages), when it is set alike (its size, and where it starts).
- **A note answers** the earliest unanswered mark with its label on its own page or before
  (WeasyPrint moves a note to the next page when the first is full). A mark that no note
  answers is text after all (a verse number, `m²`): it goes back into its line as printed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise

from ingest.clean import is_page_number, join_wrapped
from ingest.notes import placeholder
from ingest.page import Line, Page

# A note's own label set as text: `1 `, `1. `, `12)`, `* `.
_LABEL = re.compile(r"^(\d{1,3}|[*†‡§¶]{1,3}|[a-z])(?:[.)．、]\s*|\s+|(?=[^\d\s.]))")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class PageNote:
    label: str
    text: str
    page: int


@dataclass(slots=True)
class PageNotes:
    """A document's notes, and which mark of which line each answers."""

    notes: list[PageNote] = field(default_factory=list)
    answers: dict[tuple[int, int], int] = field(default_factory=dict)  # (id(line), mark) → note

    def text(self, line: Line) -> str:
        """The line's text, each answered mark a placeholder holding its note's index, the
        others back in the text as printed."""
        out = ""
        pos = 0
        for i, mark in enumerate(line.marks):
            out += line.text[pos : mark.offset]
            note = self.answers.get((id(line), i))
            out += placeholder(str(note)) if note is not None else mark.label
            pos = mark.offset
        return out + line.text[pos:]


@dataclass(slots=True)
class _Open:
    """A mark waiting for its note."""

    line: Line
    index: int
    label: str
    page: int


@dataclass(slots=True)
class _Reader:
    body: float
    footers: set[str]
    found: PageNotes = field(default_factory=PageNotes)
    waiting: list[_Open] = field(default_factory=list)
    last: tuple[int, Line] | None = None  # the note being read, and its last line

    def page(self, page: Page) -> Page:
        if self.last is not None and self.last[1].page < page.number - 1:
            self.last = None  # a note continues on the next page only
        area = self._area(page)
        for ln in sorted(page.lines, key=lambda ln: (ln.top, ln.x0)):
            if ln not in area:
                self.waiting += [_Open(ln, i, m.label, page.number) for i, m in enumerate(ln.marks)]
        taken: list[Line] = []
        for i, ln in enumerate(area):
            if self._start(ln, page.number) or self._continue(ln, first=i == 0):
                taken.append(ln)
            else:
                break
        if taken:
            page = replace(page, lines=[ln for ln in page.lines if ln not in taken])
        elif area:
            self.last = None
        return page

    def _area(self, page: Page) -> list[Line]:
        """The lines below the last line of body-size type, set smaller, in reading order; or,
        where the notes are set in the body's size, the lines from the first one after a gap
        that starts with a mark a line above it on this page carries (`_body_size_area`)."""
        body_lines = [ln for ln in page.lines if ln.size >= 0.95 * self.body]
        if not body_lines:
            return []
        bottom = max(ln.bottom for ln in body_lines)
        small = sorted(
            (
                ln
                for ln in page.lines
                if ln.top >= bottom - 0.5
                and ln.size < 0.95 * self.body
                and not is_page_number(ln.text)
                and _key(ln.text) not in self.footers
            ),
            key=lambda ln: (ln.top, ln.x0),
        )
        return small or self._body_size_area(page)

    def _body_size_area(self, page: Page) -> list[Line]:
        """Notes set as large as the text (a Word document's notes, printed to PDF by Word or
        LibreOffice): the page's last lines, from the first that stands after a gap wider than
        the lines' spacing and starts with the mark of a line above it, to the foot."""
        lines = sorted(
            (
                ln
                for ln in page.lines
                if not is_page_number(ln.text) and _key(ln.text) not in self.footers
            ),
            key=lambda ln: (ln.top, ln.x0),
        )
        steps = [b.top - a.top for a, b in pairwise(lines) if b.top > a.top]
        if len(steps) < 2:
            return []
        pitch = sorted(steps)[len(steps) // 2]
        marks: set[str] = set()
        for i, ln in enumerate(lines):
            label = ln.marks[0].label if ln.marks and ln.marks[0].offset == 0 else ""
            gap = ln.top - lines[i - 1].top if i else 0.0
            if label and label in marks and gap > 1.5 * pitch:
                return lines[i:]
            marks.update(m.label for m in ln.marks if m.offset > 0)
        return []

    def _start(self, ln: Line, page: int) -> bool:
        label, text = _label(ln)
        if not label:
            return False
        mark = next(
            (m for m in self.waiting if m.label == label and m.page <= page),
            None,
        )
        if mark is None:
            return False
        self.waiting.remove(mark)
        self.found.answers[(id(mark.line), mark.index)] = len(self.found.notes)
        self.found.notes.append(PageNote(label, text, page))
        self.last = (len(self.found.notes) - 1, ln)
        return True

    def _continue(self, ln: Line, *, first: bool) -> bool:
        if self.last is None:
            return False
        index, prev = self.last
        alike = abs(ln.size - prev.size) < 0.3 and abs(ln.x0 - prev.x0) < 3 * ln.size
        if (
            not alike
            or (first and ln.page == prev.page)
            or (ln.page == prev.page and ln.top < prev.top)
        ):
            return False
        note = self.found.notes[index]
        text = join_wrapped(note.text, ln.text, prev.hyphenated)
        self.found.notes[index] = replace(note, text=text)
        self.last = (index, ln)
        return True


def _label(ln: Line) -> tuple[str, str]:
    """A note line's label and its text; ("", "") when it starts with none."""
    if ln.marks and ln.marks[0].offset == 0:
        return ln.marks[0].label, ln.text
    m = _LABEL.match(ln.text)
    if m is None or not ln.text[m.end() :].strip():
        return "", ""
    return m.group(1), ln.text[m.end() :].strip()


def _key(text: str) -> str:
    return _DIGITS.sub("#", "".join(text.split()))


def _footers(pages: Sequence[Page], body: float) -> set[str]:
    """Small lines that recur on several pages (digits aside): a footer, never a note."""
    counts = Counter(
        key
        for page in pages
        for key in {_key(ln.text) for ln in page.lines if ln.size < 0.95 * body}
    )
    return {key for key, n in counts.items() if n >= 2}


def split_notes(pages: Sequence[Page], body: float) -> tuple[list[Page], PageNotes]:
    """The pages without their notes, and the notes with the marks they answer (module
    docstring). Pages with no marks keep every line."""
    if not any(ln.marks for page in pages for ln in page.lines):
        return list(pages), PageNotes()
    reader = _Reader(body, _footers(pages, body))
    kept = [reader.page(page) for page in pages]
    return kept, reader.found
