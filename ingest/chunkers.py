"""Chunking by document type → `Piece`s (text + chapter + search prefix), before metadata.

Token: one CJK character, or one Latin word / number (`[A-Za-z0-9]+` with inner ' or -).
Punctuation and spaces are not tokens. This approximates both jieba words × ~1.5 and the
embedding models' sub-word counts closely enough to size chunks.

- prose (book, message): per section, whole sentences (`retrieval.sentences`, the splitter
  that knows brackets and scripture references) gathered into chunks of 400–600 tokens
  (closed at the first paragraph end after 400, or before a sentence would pass 600), the
  next chunk starting with the previous one's last sentences (~15% of its tokens, whole
  sentences only: the smallest suffix ≥ 15%, none when a single sentence would exceed 35%).
  A sentence longer than 600 tokens is cut at clause marks (，、：,:) and only as a last
  resort at 600 tokens. A short tail (< 200 tokens) is folded into the chunk before when
  the result stays within 600. Chunks never span two headings; a section under 100 tokens
  that only leads in to its first sub-section (a 读经 line under the message title) is carried
  into that sub-section.
  Each chunk records the document-wide numbers of its first and last paragraph (`para`,
  `para_end`: a message is cited by paragraph).
- outline: one unit per point together with its sub-points, with the point's path; a unit
  over 600 tokens becomes its sub-points' units (each carrying the path down to it), and
  consecutive small sibling units under one point share a chunk labelled with that point's
  path. A top-level point with text of its own is always its own unit. No chunk is only a
  heading: a bare point joins a neighbour, and the chunk is labelled with the path the two
  share (the document itself for top-level points), never as one point for the other's text.
- footnote: one verse + its notes; split by notes only above 1,200 tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.clean import is_cjk
from ingest.loaders.base import Note
from ingest.structure import FootnoteEntry, OutlinePoint, Section
from retrieval.scripture import RefRange
from retrieval.sentences import split_sentences as _split_sentences
from retrieval.types import ChunkType

MIN_TOKENS = 400
MAX_TOKENS = 600
OVERLAP = 0.15
MAX_OVERLAP = 0.35
FOOTNOTE_MAX = 1200
SMALL_SECTION = 100

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")
_CLAUSE = re.compile(r"(?<=[，、：,:])")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def split_sentences(text: str) -> list[str]:
    """Whole sentences, stripped: the one splitter (`retrieval.sentences`), which never ends a
    sentence inside brackets (`（约十四20；一13–14）`) nor after `cf.` / before `15:5`."""
    return [s.strip() for s in _split_sentences(text) if s.strip()]


def smart_join(parts: Iterable[str]) -> str:
    out = ""
    for p in parts:
        if not out:
            out = p
        elif is_cjk(out[-1]) or is_cjk(p[0]):
            out += p
        else:
            out += " " + p
    return out


@dataclass(slots=True)
class Piece:
    """A chunk before metadata: display text, the prefix searched with it, its chapter."""

    text: str
    chapter: str = ""
    search_prefix: str = ""
    refs: tuple[str, ...] = ()  # scripture refs the structure itself gives (footnote verse)
    extra: dict[str, Any] = field(default_factory=dict)
    kind: ChunkType | None = None  # the chunk's own type when not the document's (a note)

    @property
    def search_source(self) -> str:
        return f"{self.search_prefix}\n{self.text}" if self.search_prefix else self.text


@dataclass(slots=True)
class _Unit:
    text: str
    tokens: int
    para: int


def _hard_split(sentence: str, limit: int) -> list[str]:
    """A sentence over `limit` tokens: at clause marks, then by tokens as a last resort."""
    clauses = [c for c in _CLAUSE.split(sentence) if c]
    out: list[str] = []
    buf = ""
    for clause in clauses:
        if buf and count_tokens(buf) + count_tokens(clause) > limit:
            out.append(buf)
            buf = ""
        buf = smart_join([buf, clause]) if buf else clause
    if buf:
        out.append(buf)
    final: list[str] = []
    for piece in out:
        if count_tokens(piece) <= limit:
            final.append(piece)
            continue
        spans = [m.span() for m in _TOKEN.finditer(piece)]
        start = 0
        for i in range(limit, len(spans), limit):
            cut = spans[i][0]
            final.append(piece[start:cut].strip())
            start = cut
        final.append(piece[start:].strip())
    return [f for f in final if f]


def _units(paragraphs: Sequence[str], limit: int, first: int = 0) -> list[_Unit]:
    """Sentences as units; `para` numbers the paragraphs from `first`."""
    units: list[_Unit] = []
    for p_index, para in enumerate(paragraphs, start=first):
        for sentence in split_sentences(para):
            n = count_tokens(sentence)
            parts = _hard_split(sentence, limit) if n > limit else [sentence]
            for part in parts:
                units.append(_Unit(part, count_tokens(part), p_index))
    return units


def _render(units: Sequence[_Unit]) -> str:
    paras: list[list[str]] = []
    last = None
    for u in units:
        if u.para != last:
            paras.append([])
            last = u.para
        paras[-1].append(u.text)
    return "\n".join(smart_join(p) for p in paras)


def _overlap(units: Sequence[_Unit], total: int, share: float, cap: float) -> list[_Unit]:
    if total == 0:
        return []
    acc = 0
    for i in range(len(units) - 1, 0, -1):  # never the whole chunk
        acc += units[i].tokens
        if acc >= share * total:
            return list(units[i:]) if acc <= cap * total else []
    return []


def pack_units(
    units: Sequence[_Unit],
    *,
    min_tokens: int = MIN_TOKENS,
    max_tokens: int = MAX_TOKENS,
    overlap: float = OVERLAP,
) -> list[list[_Unit]]:
    chunks: list[list[_Unit]] = []
    fresh: list[int] = []  # tokens in each chunk that are not overlap
    cur: list[_Unit] = []
    carried = 0  # how many leading units of `cur` are overlap

    def close() -> None:
        nonlocal cur, carried
        chunks.append(cur)
        fresh.append(sum(u.tokens for u in cur[carried:]))
        total = sum(u.tokens for u in cur)
        cur = _overlap(cur, total, overlap, MAX_OVERLAP)
        carried = len(cur)

    for i, unit in enumerate(units):
        size = sum(u.tokens for u in cur)
        if cur and size + unit.tokens > max_tokens:
            if len(cur) == carried:  # only overlap: drop it rather than overflow
                cur, carried = [], 0
            else:
                close()
                if sum(u.tokens for u in cur) + unit.tokens > max_tokens:
                    cur, carried = [], 0
        cur.append(unit)
        size = sum(u.tokens for u in cur)
        para_end = i + 1 == len(units) or units[i + 1].para != unit.para
        if size >= min_tokens and para_end and i + 1 < len(units):
            close()
    if len(cur) > carried:
        chunks.append(cur)
        fresh.append(sum(u.tokens for u in cur[carried:]))
        if len(chunks) > 1 and fresh[-1] < min_tokens // 2:
            prev = chunks[-2]
            tail = cur[carried:]
            if sum(u.tokens for u in prev) + sum(u.tokens for u in tail) <= max_tokens:
                chunks[-2] = prev + tail
                chunks.pop()
    return chunks


def prose_pieces(
    sections: Sequence[Section],
    *,
    min_tokens: int = MIN_TOKENS,
    max_tokens: int = MAX_TOKENS,
    overlap: float = OVERLAP,
) -> list[Piece]:
    pieces: list[Piece] = []
    carry: list[str] = []
    numbered = 0  # paragraphs of the document before `paragraphs` (for 段落 N labels)
    for index, section in enumerate(sections):
        paragraphs = carry + section.paragraphs
        carry = []
        nxt = sections[index + 1] if index + 1 < len(sections) else None
        small = sum(count_tokens(p) for p in paragraphs) < SMALL_SECTION
        lead_in = nxt is not None and nxt.path[: len(section.path)] == section.path
        if small and lead_in:
            carry = paragraphs  # a lead-in (e.g. 读经 line) joins the section after it
            continue
        units = _units(paragraphs, max_tokens, first=numbered + 1)
        numbered += len(paragraphs)
        for group in pack_units(
            units, min_tokens=min_tokens, max_tokens=max_tokens, overlap=overlap
        ):
            where = {"para": group[0].para, "para_end": group[-1].para}
            pieces.append(Piece(_render(group), section.chapter, section.chapter, extra=where))
    return pieces


SMALL_UNIT = 40  # tokens: an outline unit this small rides with its neighbour


@dataclass(slots=True)
class _Point:
    """An outline point and its sub-points (a tree built from the parser's flat list)."""

    point: OutlinePoint
    children: list[_Point] = field(default_factory=list)

    @property
    def head(self) -> str:
        return self.point.text.split("\n", 1)[0]

    def text(self) -> str:
        return "\n".join([self.point.text, *(c.text() for c in self.children)])


def _outline_tree(points: Sequence[OutlinePoint]) -> list[_Point]:
    roots: list[_Point] = []
    open_: list[_Point] = []
    for point in points:
        node = _Point(point)
        while open_ and open_[-1].point.level >= point.level:
            open_.pop()
        (open_[-1].children if open_ else roots).append(node)
        open_.append(node)
    return roots


def _node_path(node: _Point) -> tuple[str, ...]:
    return (*node.point.ancestors, node.head)


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    for parts in zip(*paths, strict=False):
        if any(p != parts[0] for p in parts):
            break
        out.append(parts[0])
    return tuple(out)


@dataclass(slots=True)
class _OutlineUnit:
    nodes: list[_Point]
    ancestors: tuple[str, ...]  # heads of the enclosing points
    lead: str = ""  # a split parent's own lines below its head
    joined: str = ""  # the text of units joined across points (see `_join_across`)

    def text(self) -> str:
        if self.joined:
            return self.joined
        return "\n".join([*([self.lead] if self.lead else []), *(n.text() for n in self.nodes)])

    def path(self) -> tuple[str, ...]:
        """Where the unit is, below the title: one point's own path; for several points the
        path they share (their parent; nothing below the title for top-level points), so the
        label never names one point for another's text."""
        if len(self.nodes) == 1:
            return _node_path(self.nodes[0])
        return _common_prefix([_node_path(n) for n in self.nodes])

    def chapter(self) -> str:
        return SECTION_SEP.join(self.path())

    @property
    def bare(self) -> bool:
        """Only a heading: one point with no sub-points and no lines below its head."""
        (node, *more) = self.nodes
        return not more and not self.lead and not node.children and "\n" not in node.point.text


def _join_across(first: _OutlineUnit, second: _OutlineUnit) -> _OutlineUnit:
    """Two neighbouring units under different points as one: labelled with the path they
    share, so the headings that path no longer names are shown in the text, where the
    outline has them (`壹　…` above `二、…`)."""
    common = _common_prefix([first.path(), second.path()])

    def hidden(unit: _OutlineUnit) -> list[str]:
        heads = {n.head for n in unit.nodes}
        return [h for h in unit.path()[len(common) :] if h not in heads]

    text = "\n".join([*hidden(first), first.text(), *hidden(second), second.text()])
    return _OutlineUnit([*first.nodes, *second.nodes], first.ancestors, joined=text)


SECTION_SEP = " > "


def _outline_units(nodes: Sequence[_Point], max_tokens: int) -> list[_OutlineUnit]:
    """A point with its sub-points is one unit; a unit too big for a chunk is split into its
    sub-points' units (the point's head stays in their path)."""
    units: list[_OutlineUnit] = []
    for node in nodes:
        ancestors = node.point.ancestors
        if node.children and count_tokens(node.text()) > max_tokens:
            inner = _outline_units(node.children, max_tokens)
            lead = node.point.text.partition("\n")[2].strip()
            if lead and inner:
                inner[0].lead = lead
            units.extend(inner)
        else:
            units.append(_OutlineUnit([node], ancestors))
    return units


def _join_small(units: list[_OutlineUnit], max_tokens: int) -> list[_OutlineUnit]:
    """Small units ride with a neighbour; no chunk is only a heading; every label is true.

    - A unit under SMALL_UNIT tokens joins its sibling before it, or else the one after it,
      when both are under the same point (the shared chunk is labelled with that point's
      path) and fit in a chunk. Top-level points have no common point below the title, so a
      top-level point with text of its own stays its own unit, under its own path.
    - A bare point (only a heading) joins its sibling before it, else after it, else the
      neighbouring unit nearest to it in the outline; the chunk is then labelled with the
      path the two share (for top-level points: the document itself)."""

    def fits(a: _OutlineUnit, b: _OutlineUnit) -> bool:
        return count_tokens(a.text()) + count_tokens(b.text()) <= max_tokens

    def siblings(a: _OutlineUnit, b: _OutlineUnit) -> bool:
        return a.ancestors == b.ancestors

    def rides(unit: _OutlineUnit, other: _OutlineUnit) -> bool:
        """`unit` (small) may share a chunk with its sibling `other`."""
        if not siblings(unit, other) or not fits(unit, other):
            return False
        return bool(unit.ancestors) or unit.bare

    def join(first: _OutlineUnit, second: _OutlineUnit) -> _OutlineUnit:
        first.nodes.extend(second.nodes)
        first.lead = first.lead or second.lead
        return first

    out: list[_OutlineUnit] = []
    for unit in units:
        small = count_tokens(unit.text()) < SMALL_UNIT
        if out and small and rides(unit, out[-1]):
            join(out[-1], unit)
        else:
            out.append(unit)
    merged: list[_OutlineUnit] = []
    for unit in out:
        last = merged[-1] if merged else None
        if last is not None and count_tokens(last.text()) < SMALL_UNIT and rides(last, unit):
            merged[-1] = join(last, unit)
        else:
            merged.append(unit)
    # A bare point with no sibling to ride with (its neighbours are under other points).
    i = 0
    while i < len(merged):
        unit = merged[i]
        near = [j for j in (i - 1, i + 1) if 0 <= j < len(merged) and fits(unit, merged[j])]
        if not unit.bare or not near:
            i += 1
            continue
        j = max(near, key=lambda k: (len(_common_prefix([unit.path(), merged[k].path()])), -k))
        first, second = sorted((i, j))
        merged[first : second + 1] = [_join_across(merged[first], merged[second])]
        i = first
    return merged


def outline_pieces(
    title: str, points: Sequence[OutlinePoint], *, max_tokens: int = MAX_TOKENS
) -> list[Piece]:
    """One piece per outline unit (see the module docstring): its text, its chapter (the path
    below the title), the full path as the search prefix and in `extra["path"]`."""
    pieces = []
    units = _join_small(_outline_units(_outline_tree(points), max_tokens), max_tokens)
    for unit in units:
        chapter = unit.chapter()
        path = SECTION_SEP.join(p for p in (title, chapter) if p)
        pieces.append(
            Piece(
                unit.text(),
                chapter=chapter,
                search_prefix=path,
                extra={"path": path, "level": unit.nodes[0].point.level},
            )
        )
    return pieces


def footnote_pieces(
    entries: Sequence[FootnoteEntry], refs_of: Any, *, max_tokens: int = FOOTNOTE_MAX
) -> list[Piece]:
    """`refs_of(heading) -> tuple[str, ...]` turns the verse coordinate into OSIS ids."""
    pieces = []
    for entry in entries:
        verse_refs = tuple(refs_of(entry.heading))
        head = f"{entry.heading}　{entry.verse_text}".strip()
        groups: list[list[str]] = [[]]
        size = count_tokens(head)
        for note in entry.notes:
            n = count_tokens(note)
            if groups[-1] and size + n > max_tokens:
                groups.append([])
                size = count_tokens(head)
            groups[-1].append(note)
            size += n
        for part, notes in enumerate(groups):
            text = "\n".join([head, *notes])
            extra: dict[str, Any] = {"verse": entry.heading}
            if len(groups) > 1:
                extra["part"] = part + 1
            pieces.append(Piece(text, chapter=entry.heading, refs=verse_refs, extra=extra))
    return pieces


def note_pieces(
    notes: Sequence[Note],
    paths: Sequence[tuple[str, ...]],
    find_refs: Callable[[str], Sequence[RefRange]],
    render: Callable[[RefRange], str],
) -> list[Piece]:
    """One footnote chunk per note of a document (a Word footnote): the sentence its mark
    follows, then the note. Labelled with its verse where it cites one (the note's first
    reference, else the last one in the sentence it annotates), else with the section
    (`paths[i]`: the heading path of note i's paragraph)."""
    pieces = []
    for note, path in zip(notes, paths, strict=True):
        text = "\n".join(p for p in (note.quote, f"注{note.number}　{note.text}") if p)
        cited = find_refs(note.text)[:1] or find_refs(note.quote)[-1:]
        section = SECTION_SEP.join(path)
        extra: dict[str, Any] = {"note": note.number}
        chapter = section
        if cited:
            chapter = extra["verse"] = render(cited[0])
        pieces.append(Piece(text, chapter, section, extra=extra, kind="footnote"))
    return pieces
