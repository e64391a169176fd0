"""Page layout → text blocks: what a typeset page says about its structure.

Pure functions over positioned text (no PDF library here; `ingest.loaders.pdf_pdfium` and
`ingest.loaders.ocr` produce the input). Coordinates are points from the page's top-left.

    glyphs ─ lines_from_glyphs ─▶ Line … ─▶ Page … ─ blocks_from_pages ─▶ Block …
                                               1. running headers/footers and page numbers out
                                               2. reading order: column by column
                                               3. headings: size/weight against the body + space
                                               4. body lines joined into paragraphs

- **Spaces in a line** are the PDF's own space characters and gaps over a quarter of the type
  size; between a CJK glyph and a Latin one a gap under half a size, or a space the text engine
  guessed for it, is the typesetter's spacing between scripts (LibreOffice's autospace, xeCJK's
  glue), not a space (`_space_between`).
- **Running lines** are found by repetition: the line nearest a page's top (bottom) edge that
  sits at the same height on many pages, and either repeats its text (digits ignored) or is
  set apart from the body (smaller type, or a gap of more than ~1.6 body sizes). Page numbers
  at the edge go too; then the next row in is tried (a header two rows deep), which must be
  set apart, since a body line may well repeat.
- **Columns**: a page whose lines fall on both sides of an empty vertical gutter (at least three
  lines entirely on each side) is read left column, then right, within the bands that lines
  spanning the whole text width delimit.
- **Headings**: a line of its own whose type is clearly larger than the body's (≥ 1.12×), or
  bold where the body is not with space above or below it. Consecutive heading lines of one
  style join (a heading wrapped over two lines); a bare `第三章` line joins the title after it.
  Levels follow the heading styles, largest first. The first heading of a style that occurs
  only once, above all body text on the first page, is the document's title, not a section.
- **Paragraphs**: a new paragraph starts after a heading, at a first-line indent, after a gap
  wider than the line pitch, or after a line that stops short and ends a sentence. Otherwise
  lines join across line, column and page breaks: CJK without a space, a word hyphenated at
  the line end rejoined.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ingest.clean import collapse_cjk_spaces, is_cjk, is_page_number, squash
from ingest.headings import is_chapter_heading
from ingest.loaders.base import Block

# ---- input --------------------------------------------------------------------------------


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

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass(slots=True)
class Page:
    number: int  # 1-based
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)


# ---- glyphs → lines -----------------------------------------------------------------------

_SEGMENT_GAP = 2.5  # × size: a wider horizontal gap starts a new line segment
_SCRIPT_GAP = 0.5  # × size: a narrower gap between CJK and Latin is spacing, not a space


def _close(glyphs: list[Glyph], spaces: dict[int, str], page: int) -> Line | None:
    """`spaces`: glyph index → the space before it ("\u3000" is kept between CJK, where a
    heading separates its number from its title; a plain space there is justification)."""
    text = ""
    for i, g in enumerate(glyphs):
        space = spaces.get(i, "")
        if space and text and (space == "\u3000" or not (is_cjk(text[-1]) and is_cjk(g.text[:1]))):
            text += space
        text += g.text
    text = squash(text)
    if not text:
        return None
    sizes = [g.size for g in glyphs]
    bold = sum(1 for g in glyphs if g.bold) * 2 > len(glyphs)
    return Line(
        text=text,
        x0=min(g.x0 for g in glyphs),
        top=min(g.top for g in glyphs),
        x1=max(g.x1 for g in glyphs),
        bottom=max(g.bottom for g in glyphs),
        size=statistics.median(sizes),
        bold=bold,
        page=page,
        hyphenated=glyphs[-1].hyphen,
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


def lines_from_glyphs(glyphs: Iterable[Glyph], page: int = 0) -> list[Line]:
    """Glyphs in drawing order → lines. A glyph starts a new line when its baseline moves by
    half a size, when it goes back to the left, or after a gap of 2.5 sizes."""
    lines: list[Line] = []
    cur: list[Glyph] = []
    spaces: dict[int, str] = {}
    pending: list[Glyph] = []  # the space glyphs since the last drawn one
    for g in glyphs:
        if not g.text or g.text in "\r\n":
            continue
        if g.text.isspace():
            pending.append(g)
            continue
        if cur:
            last = cur[-1]
            size = max(min(last.size, g.size), 1.0)
            same = (
                abs(g.baseline - last.baseline) < 0.5 * size
                and g.x0 > last.x0 - 0.2 * size
                and g.x0 - last.x1 < _SEGMENT_GAP * size
            )
            if not same:
                line = _close(cur, spaces, page)
                if line is not None:
                    lines.append(line)
                cur, spaces = [], {}
            elif space := _space_between(last, g, pending, size):
                spaces[len(cur)] = space
        cur.append(g)
        pending = []
    if cur:
        line = _close(cur, spaces, page)
        if line is not None:
            lines.append(line)
    return lines


# ---- 1. running headers and footers ---------------------------------------------------------

_DIGITS = re.compile(r"\d+|[ivxlcdm]+$|[IVXLCDM]+$")


def _key(text: str) -> str:
    return _DIGITS.sub("#", "".join(text.split()))


def _row(lines: Sequence[Line], line: Line) -> list[Line]:
    """The lines at the height of `line` (left and right parts of one header)."""
    return [ln for ln in lines if abs(ln.top - line.top) < 0.5 * line.size]


def _edge_rows(page: Page, side: str) -> list[Line]:
    if not page.lines:
        return []
    edge = (
        min(page.lines, key=lambda ln: ln.top)
        if side == "top"
        else max(page.lines, key=lambda ln: ln.bottom)
    )
    return _row(page.lines, edge)


def body_size(pages: Sequence[Page]) -> float:
    """The size most characters are set in (rounded to 0.25 pt)."""
    weights: Counter[float] = Counter()
    for page in pages:
        for ln in page.lines:
            weights[round(ln.size * 4) / 4] += len(ln.text)
    return weights.most_common(1)[0][0] if weights else 10.0


def _apart(row: Sequence[Line], page: Page, side: str, body: float) -> bool:
    """Set apart from the body: smaller type, or a gap wider than ~two body lines."""
    if all(ln.size < 0.94 * body for ln in row):
        return True
    others = [ln for ln in page.lines if ln not in row]
    if not others:
        return False
    if side == "top":
        gap = min(ln.top for ln in others) - max(ln.bottom for ln in row)
    else:
        gap = min(ln.top for ln in row) - max(ln.bottom for ln in others)
    return gap > 1.6 * body


def strip_running(pages: Sequence[Page], body: float) -> list[Page]:
    """Drop running headers/footers and page numbers (see the module docstring), peeling the
    edges of the pages a row at a time (a footer may sit above a bare page number)."""
    drop: set[int] = set()
    for side in ("top", "bottom"):
        for depth in range(3):
            changed = False
            for page in pages:
                row = _edge_rows(_without(page, drop), side)
                if row and all(is_page_number(ln.text) and ln.size <= 1.05 * body for ln in row):
                    drop.update(id(ln) for ln in row)
                    changed = True
            rows = [_edge_rows(_without(p, drop), side) for p in pages]
            outermost = depth == 0 and not changed
            found = _running_rows(pages, rows, side, body, outermost=outermost)
            drop.update(id(ln) for ln in found)
            if not (changed or found):
                break
    return [_without(p, drop) for p in pages]


def _without(page: Page, drop: set[int]) -> Page:
    return replace(page, lines=[ln for ln in page.lines if id(ln) not in drop])


def _running_rows(
    pages: Sequence[Page], rows: Sequence[list[Line]], side: str, body: float, *, outermost: bool
) -> list[Line]:
    """Edge rows at one height on ≥ 2 pages (and ≥ 40 % of them) that are set apart from the
    body, or (the outermost rows only) repeat their text."""
    if len(pages) < 2:
        return []
    heights: list[float] = [r[0].top for r in rows if r]
    found: list[Line] = []
    for y in sorted(set(round(h) for h in heights)):
        at = [
            (page, row)
            for page, row in zip(pages, rows, strict=True)
            if row and abs(row[0].top - y) <= 2.5
        ]
        if len(at) < max(2, round(0.4 * len(pages))):
            continue
        keys = Counter(_key(ln.text) for _, row in at for ln in row)
        repeats = any(n >= 2 for n in keys.values())
        apart = sum(1 for page, row in at if _apart(row, page, side, body))
        if (repeats and outermost) or apart * 2 > len(at):
            found.extend(ln for _, row in at for ln in row if ln not in found)
    return found


# ---- 2. reading order -----------------------------------------------------------------------


def _gutter(lines: Sequence[Line], left: float, right: float) -> float | None:
    """An x between 30 % and 70 % of the text width that no line (but full-width ones)
    crosses, with ≥ 3 lines wholly on each side; None for a one-column page."""
    width = right - left
    if width <= 0 or len(lines) < 6:
        return None
    narrow = [ln for ln in lines if ln.width < 0.6 * width]
    lo, hi = left + 0.3 * width, left + 0.7 * width
    spans = sorted((ln.x0, ln.x1) for ln in narrow if ln.x1 > lo and ln.x0 < hi)
    best: tuple[float, float] | None = None
    cursor = lo
    for x0, x1 in spans:
        if x0 > cursor and (best is None or x0 - cursor > best[1] - best[0]):
            best = (cursor, x0)
        cursor = max(cursor, x1)
    if hi > cursor and (best is None or hi - cursor > best[1] - best[0]):
        best = (cursor, hi)
    if best is None or best[1] - best[0] < 4:
        return None
    x = (best[0] + best[1]) / 2
    lefts = sum(1 for ln in narrow if ln.x1 <= x)
    rights = sum(1 for ln in narrow if ln.x0 >= x)
    if lefts < 3 or rights < 3 or rights < 0.2 * len(lines):
        return None
    return x


def _two_columns(page: Page) -> bool:
    if not page.lines:
        return False
    left = min(ln.x0 for ln in page.lines)
    right = max(ln.x1 for ln in page.lines)
    return _gutter(page.lines, left, right) is not None


def reading_order(page: Page) -> list[list[Line]]:
    """The page's lines as columns in reading order (one column for most pages)."""
    lines = sorted(page.lines, key=lambda ln: (ln.top, ln.x0))
    if not lines:
        return []
    left = min(ln.x0 for ln in lines)
    right = max(ln.x1 for ln in lines)
    x = _gutter(lines, left, right)
    if x is None:
        return [lines]
    columns: list[list[Line]] = []
    band_l: list[Line] = []
    band_r: list[Line] = []
    for ln in lines:
        if ln.x0 < x < ln.x1:  # spans the gutter: closes the band above it
            columns += [c for c in (band_l, band_r) if c]
            columns.append([ln])
            band_l, band_r = [], []
        elif ln.x1 <= x:
            band_l.append(ln)
        else:
            band_r.append(ln)
    columns += [c for c in (band_l, band_r) if c]
    return columns


# ---- 3. headings and 4. paragraphs ---------------------------------------------------------

_SENTENCE_END = re.compile(r"[。！？!?；;…」』”’\")）)】》.:：]$")
# A heading that is only a chapter number (`第三章`, `Chapter 3`): the title line after it joins.
_BARE_CHAPTER = re.compile(
    r"^(?:第[一二三四五六七八九十百千零〇两\d]+[章篇课課讲講卷部回]|(?:Chapter|CHAPTER|Part|PART)\s+\w+)$"
)


@dataclass(slots=True)
class _Placed:
    """A line in reading order with what its column says about it."""

    line: Line
    col_left: float
    col_right: float
    gap_above: float | None  # None at the top of a column
    gap_below: float | None


def _place(pages: Sequence[Page]) -> list[_Placed]:
    placed: list[_Placed] = []
    for page in pages:
        for column in reading_order(page):
            left = min(ln.x0 for ln in column)
            right = _right_edge(column)
            for i, ln in enumerate(column):
                above = ln.top - column[i - 1].bottom if i else None
                below = column[i + 1].top - ln.bottom if i + 1 < len(column) else None
                placed.append(_Placed(ln, left, right, above, below))
    return placed


def _right_edge(column: Sequence[Line]) -> float:
    """Where full lines end: the second-largest right edge (a stray wide line aside)."""
    edges = sorted(ln.x1 for ln in column)
    return edges[-2] if len(edges) > 2 else edges[-1]


def line_pitch(placed: Sequence[_Placed], body: float) -> float:
    """The usual gap between two body lines of a paragraph."""
    gaps = [
        p.gap_above
        for p in placed
        if p.gap_above is not None and abs(p.line.size - body) < 0.1 * body and p.gap_above > 0
    ]
    return statistics.median(gaps) if gaps else 0.3 * body


@dataclass(frozen=True, slots=True)
class _Style:
    size: float
    bold: bool


def _heading_style(p: _Placed, body: float, body_bold: bool, pitch: float) -> _Style | None:
    ln = p.line
    text = ln.text
    if len(text) > 80 or len(text.replace(" ", "")) < 2 or text.endswith(("。", "，", "、")):
        return None
    if is_page_number(text):
        return None
    bigger = ln.size >= 1.12 * body
    spaced = (p.gap_above is None or p.gap_above > 1.25 * pitch + 0.2 * body) or (
        p.gap_below is not None and p.gap_below > 1.25 * pitch + 0.2 * body
    )
    bold_only = ln.bold and not body_bold and ln.size >= 0.95 * body and spaced
    if not (bigger or bold_only):
        return None
    short = ln.x1 < p.col_right - 1.5 * body or bigger
    if not short:
        return None
    return _Style(round(ln.size * 2) / 2, ln.bold)


@dataclass(slots=True)
class _Out:
    kind: str  # heading | para
    text: str
    style: _Style | None = None
    page: int = 0
    first: bool = False  # the first block on page 1, before any body text


_HYPHENS = ("-", "\u2010", "\u00ad")  # hyphen-minus, hyphen (as WeasyPrint sets it), soft


def _join(a: str, b: str, hyphenated: bool) -> str:
    if not a:
        return b
    if hyphenated and a.endswith(_HYPHENS):
        return a[:-1] + b
    if a.endswith(_HYPHENS) and len(a) > 1 and a[-2].isalpha() and b[:1].islower():
        return a[:-1] + b  # a word the typesetter hyphenated at the line end
    if is_cjk(a[-1]) or is_cjk(b[0]):
        return a + b
    return a + " " + b


def _new_paragraph(prev: _Placed, cur: _Placed, body: float, pitch: float) -> bool:
    ln, pl = cur.line, prev.line
    indented = ln.x0 - cur.col_left > 0.8 * body
    if indented:
        return True
    if cur.gap_above is not None and cur.gap_above > pitch + 0.6 * body:
        return True
    stopped_short = pl.x1 < prev.col_right - 1.5 * body
    return stopped_short and bool(_SENTENCE_END.search(pl.text))


def _assemble(placed: Sequence[_Placed], body: float, body_bold: bool) -> list[_Out]:
    pitch = line_pitch(placed, body)
    out: list[_Out] = []
    prev: _Placed | None = None
    prev_style: _Style | None = None
    seen_body = False
    for p in placed:
        style = _heading_style(p, body, body_bold, pitch)
        text = collapse_cjk_spaces(p.line.text)
        if style is not None:
            last = out[-1] if out else None
            joinable = (
                last is not None
                and last.kind == "heading"
                and prev is not None
                and p.gap_above is not None
                and p.gap_above < 2.5 * max(p.line.size, prev.line.size)
            )
            if joinable and last is not None and last.style == style:
                last.text = _join(last.text, text, prev.line.hyphenated if prev else False)
            elif joinable and last is not None and _BARE_CHAPTER.match(last.text):
                last.text = f"{last.text}\u3000{text}"
                last.style = style if style.size > (last.style or style).size else last.style
            else:
                first = not seen_body and p.line.page == 1
                out.append(_Out("heading", text, style, p.line.page, first))
            prev, prev_style = p, style
            continue
        seen_body = True
        last = out[-1] if out else None
        if (
            last is not None
            and last.kind == "para"
            and prev is not None
            and prev_style is None
            and not _new_paragraph(prev, p, body, pitch)
        ):
            last.text = _join(last.text, text, prev.line.hyphenated)
        else:
            out.append(_Out("para", text, page=p.line.page))
        prev, prev_style = p, None
    return out


def _levels(out: Sequence[_Out]) -> dict[_Style, int]:
    styles = {o.style for o in out if o.kind == "heading" and o.style is not None}
    ranked = sorted(styles, key=lambda s: (-s.size, not s.bold))
    return {s: i + 1 for i, s in enumerate(ranked)}


def _title(out: list[_Out]) -> str:
    """The document's title: a first-page heading above all body text whose style no other
    heading shares, when other headings follow it."""
    if len(out) < 2 or out[0].kind != "heading" or not out[0].first:
        return ""
    style = out[0].style
    if sum(1 for o in out if o.style == style) != 1:
        return ""
    if not any(o.kind == "heading" for o in out[1:]) or is_chapter_heading(out[0].text):
        return ""  # a chapter heading names a part of the book, never the book
    return out.pop(0).text


@dataclass(slots=True)
class Layout:
    blocks: list[Block]
    title: str  # a title set on the first page ("" when none)
    body_size: float
    columns: int  # most columns seen on a page


def blocks_from_pages(pages: Sequence[Page]) -> Layout:
    """Positioned lines of every page → heading and paragraph blocks (module docstring)."""
    body = body_size(pages)
    kept = strip_running(pages, body)
    body_lines = [ln for p in kept for ln in p.lines if abs(ln.size - body) < 0.1 * body]
    body_bold = sum(1 for ln in body_lines if ln.bold) * 2 > len(body_lines)
    placed = _place(kept)
    out = _assemble(placed, body, body_bold)
    title = _title(out)
    levels = _levels(out)
    blocks = [
        Block(o.text, "heading", levels[o.style])
        if o.kind == "heading" and o.style is not None
        else Block(o.text)
        for o in out
        if o.text.strip()
    ]
    columns = 2 if any(_two_columns(p) for p in kept) else 1
    return Layout(blocks, title, body, columns)
