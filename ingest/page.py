"""Positioned text on a page: glyphs as drawn, joined into lines (`lines_from_glyphs`).

Pure data and functions (no PDF library here; `ingest.loaders.pdf_pdfium` and
`ingest.loaders.ocr` produce the input, `ingest.layout` reads the lines). Coordinates are
points from the page's top-left.

- **Spaces in a line** are the PDF's own space characters and gaps over a quarter of the type
  size; between a CJK glyph and a Latin one a gap under half a size, or a space the text engine
  guessed for it, is the typesetter's spacing between scripts (LibreOffice's autospace, xeCJK's
  glue), not a space (`_space_between`).
- **Drawing order** is reading order but for runs the typesetter draws apart: a run on a
  line's baseline that fits at its end or into its gaps, touching its glyphs (LibreOffice draws
  the “ ” —— of a Latin face before or after a line's CJK glyphs), is that line's; a column a
  gap away stays a line of its own (`_abutting`).
- **Superscript marks** (a footnote's `¹`, `*`, `a`): a glyph set at most 0.8× the line's size
  with its baseline raised by 0.15–0.8 of the line's size is a mark, never text and never a
  line of its own: the line keeps it in `marks` (where it stands, what it reads). The same
  small glyphs at the start of a line, before text set larger on a lower baseline, are that
  line's mark (a footnote's own number at the foot of the page, a mark wrapped to the next
  line).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ingest.clean import is_cjk, squash
from ingest.notes import placeholder, take_placeholders


@dataclass(frozen=True, slots=True)
class Glyph:
    """One character as drawn: its box (top-left origin), baseline, size and weight."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    baseline: float
    size: float
    bold: bool = False
    hyphen: bool = False  # a hyphen the typesetter inserted at a line end
    # A space the PDF does not hold: the text engine's guess from a gap between two glyphs.
    generated: bool = False
    sup: bool = False  # a superscript mark (set by `lines_from_glyphs`)


@dataclass(frozen=True, slots=True)
class Mark:
    """A superscript mark in a line: `offset` into the line's text (the mark stands before
    the character there), `label` as printed (`1`, `*`, `iv`)."""

    offset: int
    label: str


@dataclass(slots=True, eq=False)
class Line:
    """A run of glyphs on one baseline, without large horizontal gaps (compared by
    identity: two pages may hold equal lines)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float  # the median glyph size
    bold: bool  # most glyphs bold
    page: int = 0
    hyphenated: bool = False  # ends in a typesetter's hyphen
    marks: tuple[Mark, ...] = ()  # superscript marks, not in `text`
    # How sure the reader is of the text, 0–100 (tesseract's word confidence for OCR; 100 for
    # a text layer).
    confidence: float = 100.0

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass(slots=True)
class Page:
    number: int  # 1-based
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)


# OCR read a line with less confidence than this (tesseract's 0–100): its text may be wrong
# and its box too (misread body text comes out in boxes of odd sizes), so it is never a
# heading.
SURE = 70.0


# ---- glyphs → lines -----------------------------------------------------------------------

_SEGMENT_GAP = 2.5  # × size: a wider horizontal gap starts a new line segment
_SCRIPT_GAP = 0.5  # × size: a narrower gap between CJK and Latin is spacing, not a space
# What a footnote mark reads: digits, a letter or two, a Roman numeral, a symbol.
_MARK_TEXT = re.compile(r"^(?:\d{1,3}|[a-z]{1,2}|[ivx]{1,4}|[*†‡§¶#]{1,3}|[\u2460-\u2473])$")


def _raised(g: Glyph, ref: Glyph) -> bool:
    """`g` is set as a superscript against `ref`, a glyph of the line's own text."""
    lift = ref.baseline - g.baseline
    return (
        g.size <= 0.8 * ref.size
        and 0.15 * ref.size <= lift <= 0.8 * ref.size
        and -0.3 * ref.size <= g.x0 - ref.x1 < 1.5 * ref.size
    )


def _leads(small: Sequence[Glyph], g: Glyph) -> bool:
    """`small` (a line so far) is a superscript mark before `g`, which starts the text."""
    if not small or not all(s.size <= 0.8 * g.size for s in small):
        return False
    lift = g.baseline - small[-1].baseline
    return (
        0.15 * g.size <= lift <= 0.8 * g.size
        and -0.3 * g.size <= g.x0 - small[-1].x1 < 1.0 * g.size
        and _MARK_TEXT.match("".join(s.text for s in small)) is not None
    )


def _marks_text(glyphs: Sequence[Glyph], start: int) -> str:
    """The superscript run from `start` (a mark reads like one: `12`, not `th`)."""
    end = start
    while end < len(glyphs) and glyphs[end].sup:
        end += 1
    return "".join(g.text for g in glyphs[start:end])


def _close(glyphs: list[Glyph], spaces: dict[int, str], page: int) -> Line | None:
    """`spaces`: glyph index → the space before it ("\u3000" is kept between CJK, where a
    heading separates its number from its title; a plain space there is justification)."""
    body = [g for g in glyphs if not g.sup]
    if not body:  # only small raised glyphs: text of their own, not a mark
        body = glyphs = [replace(g, sup=False) for g in glyphs]
    text = ""
    last = ""  # the last character of the line's own text
    for i, g in enumerate(glyphs):
        if g.sup:
            if i == 0 or not glyphs[i - 1].sup:
                text += placeholder(_marks_text(glyphs, i))
            continue
        space = spaces.get(i, "")
        if space and last and (space == "\u3000" or not (is_cjk(last) and is_cjk(g.text[:1]))):
            text += space
        text += g.text
        last = g.text[-1]
    text, found = take_placeholders(squash(text))
    marks = tuple(Mark(at, label) for at, label in found)
    if not text:
        return None
    return Line(
        text=text,
        x0=min(g.x0 for g in glyphs),
        top=min(g.top for g in body),
        x1=max(g.x1 for g in glyphs),
        bottom=max(g.bottom for g in body),
        size=statistics.median(g.size for g in body),
        bold=sum(1 for g in body if g.bold) * 2 > len(body),
        page=page,
        hyphenated=glyphs[-1].hyphen,
        marks=marks,
    )


def _space_between(last: Glyph, g: Glyph, pending: Sequence[Glyph], size: float) -> str:
    """The space a line holds between two drawn glyphs on it: "\u3000" for a wide gap inside
    CJK text (a heading's), " " for a space the PDF holds or a gap of a quarter size, else "".

    Between a CJK glyph and a Latin one a gap is the typesetter's spacing between scripts, not
    a space in the text, up to half a size (LibreOffice's Asian/Western autospace, 0.2; xeCJK's
    glue, 0.37), and so is the space the text engine generates for it: `第1章`, not `第 1 章`.
    A space the PDF holds there still counts."""
    gap = g.x0 - last.x1
    cjk_before, cjk_after = is_cjk(last.text[-1]), is_cjk(g.text[0])
    if gap > 0.6 * size and cjk_before and cjk_after:
        return "\u3000"
    if cjk_before != cjk_after:
        held = [s for s in pending if not s.generated]
        if held:
            return _widest(held)
        return " " if gap > _SCRIPT_GAP * size else ""
    if pending or gap > 0.25 * size:
        return _widest(pending)
    return ""


def _widest(spaces: Sequence[Glyph]) -> str:
    """The ideographic space if one of `spaces` is one, else a plain space."""
    return "\u3000" if any(s.text == "\u3000" for s in spaces) else " "


class _LineBuilder:
    """The glyphs of the line being read, with the spaces between them."""

    def __init__(self, page: int) -> None:
        self.page = page
        self.runs: list[tuple[list[Glyph], dict[int, str]]] = []  # closed: glyphs, spaces
        self.cur: list[Glyph] = []
        self.spaces: dict[int, str] = {}
        self.ref: Glyph | None = None  # the last glyph of the line's own text (marks aside)

    def close(self) -> None:
        if self.cur:
            self.runs.append((self.cur, self.spaces))
        self.cur, self.spaces, self.ref = [], {}, None

    def finish(self) -> list[Line]:
        """The lines, each run of glyphs joined to the runs it abuts on its baseline."""
        self.close()
        lines = (_close(glyphs, spaces, self.page) for glyphs, spaces in _abutting(self.runs))
        return [line for line in lines if line is not None]

    def _mark_or_break(self, g: Glyph) -> Glyph:
        """`g` as a superscript mark of this line, or this line's small start as one before
        `g`; else the line closes when `g` is not on it."""
        ref = self.ref
        if ref is not None and g.size <= 0.8 * ref.size and _raised(g, ref):
            if _MARK_TEXT.match(g.text):
                return replace(g, sup=True)
        if len(self.cur) <= 3 and ref is self.cur[-1] and _leads(self.cur, g):
            self.cur = [replace(c, sup=True) for c in self.cur]
            self.spaces, self.ref = {}, None
            return g
        last = ref or self.cur[-1]
        size = max(min(last.size, g.size), 1.0)
        same = (
            abs(g.baseline - last.baseline) < 0.5 * size
            and g.x0 > self.cur[-1].x0 - 0.2 * size
            and g.x0 - self.cur[-1].x1 < _SEGMENT_GAP * size
        )
        if not same:
            self.close()
        return g

    def add(self, g: Glyph, pending: Sequence[Glyph]) -> None:
        if self.cur:
            g = self._mark_or_break(g)
        if self.cur and not g.sup:
            size = max(min(self.cur[-1].size, g.size), 1.0)
            if space := _space_between(self.cur[-1], g, pending, size):
                self.spaces[len(self.cur)] = space
        self.cur.append(g)
        if not g.sup:
            self.ref = g


def lines_from_glyphs(glyphs: Iterable[Glyph], page: int = 0) -> list[Line]:
    """Glyphs in drawing order → lines. A glyph starts a new line when its baseline moves by
    half a size, when it goes back to the left, or after a gap of 2.5 sizes; a superscript
    mark stays in its line (module docstring)."""
    builder = _LineBuilder(page)
    pending: list[Glyph] = []  # the space glyphs since the last drawn one
    for g in glyphs:
        if not g.text or g.text in "\r\n":
            continue
        if g.text.isspace():
            pending.append(g)
            continue
        builder.add(g, pending)
        pending = []
    return builder.finish()


Run = tuple[list[Glyph], dict[int, str]]  # glyphs as drawn, the spaces before them


def _baseline(run: Run) -> tuple[float, float]:
    body = [g for g in run[0] if not g.sup] or run[0]
    return statistics.median(g.baseline for g in body), statistics.median(g.size for g in body)


def _abutting(runs: list[Run]) -> list[Run]:
    """`runs` in drawing order, those that interleave on one baseline joined in reading
    order (`_join`). Columns never join: the gap between them is wider than half a size."""
    out: list[tuple[Run, tuple[float, float]]] = []
    for run in runs:
        where = _baseline(run)
        i = 0
        while i < len(out):  # a joined run may now reach another one: try them all again
            other, at = out[i]
            size = min(at[1], where[1])
            joined = None
            if abs(at[0] - where[0]) < 0.2 * size and abs(at[1] - where[1]) < 0.2 * size:
                joined = _join(other, run, size)
            if joined is None:
                i += 1
                continue
            run, where = joined, _baseline(joined)
            del out[i]
            i = 0
        out.append((run, where))
    return [run for run, _ in out]


def _join(a: Run, b: Run, size: float) -> Run | None:
    """`a` and `b`, two runs on one baseline, as one run in reading order, when their glyphs
    interleave without overlapping and touch wherever one run meets the other: a part of a
    line the typesetter drew apart from the rest (LibreOffice draws the glyphs of another font
    — “ ” —— in a Latin face — before or after a line's CJK ones)."""
    tagged = sorted(
        [(g.x0, 0, i, g) for i, g in enumerate(a[0])]
        + [(g.x0, 1, i, g) for i, g in enumerate(b[0])],
        key=lambda t: (t[0], t[1], t[2]),
    )
    glyphs: list[Glyph] = []
    spaces: dict[int, str] = {}
    prev: tuple[int, int] | None = None
    for _, src, i, g in tagged:
        if glyphs:
            last = glyphs[-1]
            gap = g.x0 - last.x1
            if gap < -0.3 * size or (prev is not None and prev[0] != src and gap >= 0.5 * size):
                return None
            held = (a, b)[src][1].get(i) if prev == (src, i - 1) else None
            if held is not None:
                spaces[len(glyphs)] = held
            elif prev is not None and prev != (src, i - 1) and not (last.sup or g.sup):
                if space := _space_between(last, g, (), max(min(last.size, g.size), 1.0)):
                    spaces[len(glyphs)] = space
        glyphs.append(g)
        prev = (src, i)
    return glyphs, spaces
