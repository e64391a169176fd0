"""Page layout → text blocks: what a typeset page says about its structure.

Pure functions over positioned text (no PDF library here; `ingest.loaders.pdf_pdfium` and
`ingest.loaders.ocr` produce the input, `ingest.page` joins glyphs into lines and keeps
superscript marks out of their text). Coordinates are points from the page's top-left.

    Page … ─ blocks_from_pages ─▶ Layout (blocks, notes, title block)
               1. footnotes at the pages' feet out, matched to their marks (`ingest.page_notes`)
               2. running headers/footers and page numbers out
               3. reading order: column by column
               4. a title block on page 1 out: title, subtitle, author, date
               5. headings: size/weight against the body + space
               6. body lines joined into paragraphs; each mark's note anchored at its block

- **Running lines** are found by repetition: the line nearest a page's top (bottom) edge that
  sits at the same height on many pages, and either repeats its text (digits ignored) or is
  set apart from the body (smaller type, or a gap of more than ~1.6 body sizes). Page numbers
  at the edge go too; then the next row in is tried (a header two rows deep), which must be
  set apart, since a body line may well repeat. A **heading that starts a page** stays,
  though it sits at one height on every page with space under it: it is set as a heading
  (larger, or bold where the body is not), has body text under it, and its text is on no
  other page at that height and nowhere set larger (a running header that names the current
  chapter repeats the heading, smaller).
- **Columns**: a page whose lines fall on both sides of an empty vertical gutter (at least three
  lines entirely on each side) is read left column, then right, within the bands that lines
  spanning the whole text width delimit.
- **A title block**: centred short lines that open page 1, the first (wrapped over more lines
  when set alike) larger than all the others; the lines under the title are its subtitle,
  author and date (`ingest.titleblock`), unless set in a heading style used again below them.
  Otherwise the first heading of a style that occurs only once, above all body text on the
  first page, is the document's title.
- **Headings**: a line of its own whose type is clearly larger than the body's (≥ 1.12×), or
  bold where the body is not, with space above or below it (larger type run into the text is
  a scan's misread box), that OCR did not read unsure (`SURE`). Consecutive heading lines of
  one style join (a heading wrapped over two lines); a bare `第三章` line joins the title after
  it. Levels follow the heading styles, largest first; sizes within 6 % are one style.
- **Paragraphs**: a new paragraph starts after a heading, at a first-line indent, after a gap
  wider than the line pitch, or after a line that stops short and ends a sentence. Otherwise
  lines join across line, column and page breaks: CJK without a space, a word hyphenated at
  the line end rejoined.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ingest.clean import collapse_cjk_spaces, is_page_number, join_wrapped
from ingest.headings import is_chapter_heading
from ingest.loaders.base import Block, Note
from ingest.notes import cited_sentence, take_placeholders
from ingest.page import SURE, Glyph, Line, Page, lines_from_glyphs
from ingest.page_notes import PageNotes, split_notes
from ingest.titleblock import TitleBlock, read_title_block

__all__ = ["Glyph", "Layout", "Line", "Page", "blocks_from_pages", "lines_from_glyphs"]


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


@dataclass(frozen=True, slots=True)
class _Type:
    """How the body is set, and the largest size each text is set in anywhere (a running
    header that names the current chapter repeats its heading, smaller)."""

    body: float
    body_bold: bool
    largest: dict[str, float]

    @classmethod
    def of(cls, pages: Sequence[Page], body: float) -> _Type:
        lines = [ln for p in pages for ln in p.lines]
        body_lines = [ln for ln in lines if abs(ln.size - body) < 0.1 * body]
        largest: dict[str, float] = {}
        for ln in lines:
            text = _bare(ln.text)
            largest[text] = max(largest.get(text, 0.0), ln.size)
        return cls(body, sum(1 for ln in body_lines if ln.bold) * 2 > len(body_lines), largest)

    def styled(self, ln: Line) -> bool:
        """Set as a heading is: larger than the body, or bold where the body is not."""
        if ln.confidence < SURE:
            return False
        return ln.size >= 1.12 * self.body or (
            ln.bold and not self.body_bold and ln.size >= 0.95 * self.body
        )


def _bare(text: str) -> str:
    return "".join(text.split())


def strip_running(pages: Sequence[Page], body: float) -> list[Page]:
    """Drop running headers/footers and page numbers (see the module docstring), peeling the
    edges of the pages a row at a time (a footer may sit above a bare page number)."""
    kind = _Type.of(pages, body)
    drop: set[int] = set()
    for side in ("top", "bottom"):
        for depth in range(3):
            changed = False
            for page in pages:
                row = _edge_rows(_without(page, drop), side)
                if row and all(is_page_number(ln.text) and ln.size <= 1.05 * body for ln in row):
                    drop.update(id(ln) for ln in row)
                    changed = True
            left = [_without(p, drop) for p in pages]
            rows = [_edge_rows(p, side) for p in left]
            outermost = depth == 0 and not changed
            found = _running_rows(left, rows, side, kind, outermost=outermost)
            drop.update(id(ln) for ln in found)
            if not (changed or found):
                break
    return [_without(p, drop) for p in pages]


def _without(page: Page, drop: set[int]) -> Page:
    return replace(page, lines=[ln for ln in page.lines if id(ln) not in drop])


def _heading_row(row: Sequence[Line], page: Page, texts: Counter[str], kind: _Type) -> bool:
    """A heading that starts a page, not a running line: set as a heading, with body text
    under it, its text on no other page at this height and nowhere set larger."""
    ln = max(row, key=lambda x: x.width)
    text = _bare(ln.text)
    if not kind.styled(ln) or is_page_number(ln.text) or texts[text] > 1:
        return False
    if kind.largest.get(text, 0.0) > ln.size + 0.25:
        return False  # a smaller copy of a heading set elsewhere: the current chapter
    return any(
        o is not ln
        and o.top > ln.top
        and o.top - ln.bottom < 4 * ln.size
        and abs(o.size - kind.body) < 0.1 * kind.body
        for o in page.lines
    )


def _running_rows(
    pages: Sequence[Page], rows: Sequence[list[Line]], side: str, kind: _Type, *, outermost: bool
) -> list[Line]:
    """Edge rows at one height on ≥ 2 pages (and ≥ 40 % of them), headings that start a page
    aside, that are set apart from the body, or (the outermost rows only) repeat their text."""
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
        texts = Counter(_bare(ln.text) for _, row in at for ln in row)
        at = [(page, row) for page, row in at if not _heading_row(row, page, texts, kind)]
        if len(at) < 2:
            continue
        keys = Counter(_key(ln.text) for _, row in at for ln in row)
        repeats = any(n >= 2 for n in keys.values())
        apart = sum(1 for page, row in at if _apart(row, page, side, kind.body))
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


def _heading_style(
    p: _Placed, body: float, body_bold: bool, pitch: float, prev: _Style | None = None
) -> _Style | None:
    """The heading style `p`'s line is set in, or None for body text. `prev`: the style of
    the line before it (a heading wrapped over lines has space only around the whole)."""
    ln = p.line
    text = ln.text
    if ln.confidence < SURE:
        return None
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
    style = _Style(round(ln.size * 2) / 2, ln.bold)
    if not spaced and style != prev:
        return None  # larger type run into the text: a scan's misread box, not a heading
    return style


@dataclass(slots=True)
class _Out:
    kind: str  # heading | para
    text: str
    style: _Style | None = None
    page: int = 0
    first: bool = False  # the first block on page 1, before any body text


def _new_paragraph(prev: _Placed, cur: _Placed, body: float, pitch: float) -> bool:
    ln, pl = cur.line, prev.line
    indented = ln.x0 - cur.col_left > 0.8 * body
    if indented:
        return True
    if cur.gap_above is not None and cur.gap_above > pitch + 0.6 * body:
        return True
    stopped_short = pl.x1 < prev.col_right - 1.5 * body
    return stopped_short and bool(_SENTENCE_END.search(pl.text))


def _assemble(placed: Sequence[_Placed], kind: _Type, notes: PageNotes) -> list[_Out]:
    body, body_bold = kind.body, kind.body_bold
    pitch = line_pitch(placed, body)
    out: list[_Out] = []
    prev: _Placed | None = None
    prev_style: _Style | None = None
    seen_body = False
    for p in placed:
        style = _heading_style(p, body, body_bold, pitch, prev_style)
        text = collapse_cjk_spaces(notes.text(p.line))
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
                last.text = join_wrapped(last.text, text, prev.line.hyphenated if prev else False)
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
            last.text = join_wrapped(last.text, text, prev.line.hyphenated)
        else:
            out.append(_Out("para", text, page=p.line.page))
        prev, prev_style = p, None
    return out


def _merge_styles(out: Sequence[_Out]) -> None:
    """Heading sizes within 6 % of each other are one style (OCR measures a size from the
    box it reads, a little different on each page): each takes the largest of its run."""
    sizes: dict[bool, list[float]] = {}
    for o in out:
        if o.style is not None:
            sizes.setdefault(o.style.bold, []).append(o.style.size)
    merged: dict[_Style, _Style] = {}
    for bold, found in sizes.items():
        run: list[float] = []
        for size in sorted(set(found), reverse=True):
            if run and size < 0.94 * run[0]:
                run = []
            run.append(size)
            merged[_Style(size, bold)] = _Style(run[0], bold)
    for o in out:
        if o.style is not None:
            o.style = merged[o.style]


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
    return take_placeholders(out.pop(0).text)[0]


def _centred(p: _Placed) -> bool:
    """Set in the middle of its column with room on both sides (not an indented first line)."""
    width = p.col_right - p.col_left
    left, right = p.line.x0 - p.col_left, p.col_right - p.line.x1
    return abs(left - right) < 0.04 * width and p.line.width < 0.85 * width


def _lead(placed: Sequence[_Placed]) -> list[_Placed]:
    """The centred short lines that open page 1 (no chapter heading, no sentence)."""
    lead: list[_Placed] = []
    for p in placed:
        text = p.line.text
        if p.line.page != 1 or not _centred(p) or len(text) > 60 or is_chapter_heading(text):
            break
        if text.endswith(("。", "！", "？", "；")):
            break
        lead.append(p)
    return lead


def _title_block(placed: Sequence[_Placed], kind: _Type) -> tuple[TitleBlock, int]:
    """A title block above the first text of page 1, and how many lines it takes (0 when
    there is none): centred lines, the first (wrapped over more when set alike) larger than
    all the others, which are not set in a heading style used again below them."""
    lead = _lead(placed)
    if len(lead) < 2 or len(lead) > 8 or not kind.styled(lead[0].line):
        return TitleBlock(), 0
    top = lead[0].line
    n = 1
    while n < len(lead) and abs(lead[n].line.size - top.size) < 0.25:
        n += 1
    rest = lead[n:]
    if not rest or any(p.line.size >= top.size - 0.25 for p in rest):
        return TitleBlock(), 0
    if len(placed) > len(lead) and _centred(placed[len(lead)]):
        return TitleBlock(), 0  # centred text goes on: verse, not a title block
    below = {
        (round(p.line.size * 2), p.line.bold) for p in placed[len(lead) :] if kind.styled(p.line)
    }
    k = n
    while k < len(lead) and not (
        kind.styled(lead[k].line) and (round(lead[k].line.size * 2), lead[k].line.bold) in below
    ):
        k += 1
    title = "".join(collapse_cjk_spaces(p.line.text) for p in lead[:n])
    return read_title_block(title, [p.line.text for p in lead[n:k]]), k


@dataclass(slots=True)
class Layout:
    blocks: list[Block]
    title: str  # a title set on the first page ("" when none)
    body_size: float
    columns: int  # most columns seen on a page
    notes: list[Note] = field(default_factory=list)
    byline: TitleBlock = field(default_factory=TitleBlock)  # subtitle, author, date


def _blocks(out: Sequence[_Out], notes: PageNotes) -> tuple[list[Block], list[Note]]:
    """Heading and paragraph blocks, and the notes their marks call."""
    levels = _levels(out)
    blocks: list[Block] = []
    found: list[Note] = []
    for o in out:
        text, marks = take_placeholders(o.text)
        if not text.strip():
            continue
        heading = o.kind == "heading" and o.style is not None
        blocks.append(
            Block(text, "heading", levels[o.style]) if heading and o.style else Block(text)
        )
        for at, key in marks:
            note = notes.notes[int(key)]
            found.append(Note(len(found) + 1, note.text, len(blocks) - 1, cited_sentence(text, at)))
    return blocks, found


def blocks_from_pages(pages: Sequence[Page]) -> Layout:
    """Positioned lines of every page → heading and paragraph blocks, with their notes and
    the title block (module docstring)."""
    body = body_size(pages)
    pages, notes = split_notes(pages, body)
    kept = strip_running(pages, body)
    kind = _Type.of(kept, body)
    placed = _place(kept)
    byline, taken = _title_block(placed, kind)
    out = _assemble(placed[taken:], kind, notes)
    _merge_styles(out)
    title = byline.title or _title(out)
    blocks, found = _blocks(out, notes)
    columns = 2 if any(_two_columns(p) for p in kept) else 1
    return Layout(blocks, title, body, columns, found, byline)
