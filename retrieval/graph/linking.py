"""Entity linking: which nodes a text names.

Labels and aliases match Traditional/Simplified-insensitively, case-insensitively and
leftmost-longest; English names only as whole words, one-character Chinese names only next
to particles or punctuation, and no name inside the name of a Bible book that starts with it
(约翰 in 约翰福音, 路得 in 路得记); scripture references go through the one reference parser.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from retrieval import scripture
from retrieval.graph.model import scripture_node_id
from retrieval.graph.storage import Adjacency
from retrieval.normal_form import to_simplified

_SPACES = re.compile(r"\s+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9]")
# Characters next to which a one-character term (灵, 父, 子) still stands on its own.
_PARTICLES = frozenset("的与和及是在里中同、之乃即或并就也都又而为")
_STRIP = "《》〈〉「」『』\"'“”‘’ "
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_KIND_ORDER = {"concept": 0, "topic": 1, "book": 2, "person": 3, "scripture": 4}


@functools.lru_cache(maxsize=4096)
def fold(text: str) -> str:
    """The matching form: Simplified, lowercase, one space between words, full width → ASCII.
    Kept for the last texts folded: graph growth folds each chunk of a document five or six
    times (its candidate terms, its persons, its whole names, the mentions of each node) and
    the same candidate terms again and again, and OpenCC's conversion in pure Python costs
    ~1.7 ms a 400-character chunk — a third of growth's CPU when each was converted anew.
    (4,096 texts: a long document's chunks fit, a few MB at most.)

    A text is folded clause by clause (`_fold_clause`, kept too): a chunk's search text
    repeats its text, and growth folds each of its sentences again, so most clauses were
    converted before. The result is the whole text's: see `_CLAUSE_GAP`."""
    if "Σ" in text:  # lowercase depends on what follows it (final sigma): whole
        return _SPACES.sub(" ", to_simplified(text.translate(_FULLWIDTH)).lower())
    return _SPACES.sub(" ", "".join(map(_fold_clause, _CLAUSE_GAP.split(text))))


# Where a text may be cut for folding: runs of characters that are, after the full-width
# translation, separators of OpenCC's (it converts the text between them alone and passes
# them through) and are not letters (lowercase maps them alone), so the pieces' conversions
# joined are the whole's. Spaces are collapsed after joining.
_CLAUSE_GAP = re.compile(r"([。！？，、!?,\s]+)")


@functools.lru_cache(maxsize=1 << 14)
def _fold_clause(piece: str) -> str:
    return to_simplified(piece.translate(_FULLWIDTH)).lower()


def term_key(name: str) -> str:
    """The folded form a label or alias is indexed under ("" for a name with no letters)."""
    return fold(name).strip(_STRIP)


@dataclass(frozen=True, slots=True)
class Span:
    """Where a name stands in a folded text, and the nodes it names."""

    start: int
    end: int
    nodes: tuple[str, ...]


class TermIndex:
    """Folded label or alias → node ids, scanned leftmost-longest."""

    def __init__(self, terms: Mapping[str, set[str]]) -> None:
        self.terms = terms
        self.longest = max((len(t) for t in terms), default=0)
        # The lengths of the names starting with each character, longest first: the scan tries
        # only those at each position, not every length up to the longest name (the same spans;
        # a chunk of graph growth scanned ~16,000 slices, most of them names of nothing).
        lengths: dict[str, set[int]] = {}
        for term in terms:
            if term:
                lengths.setdefault(term[0], set()).add(len(term))
        self._lengths = {first: sorted(ls, reverse=True) for first, ls in lengths.items()}
        # … and the scan jumps from one such character to the next (most characters of a
        # text start no name: 60-80 % of a chunk's positions were tried for nothing).
        firsts = "".join(re.escape(first) for first in sorted(self._lengths))
        self._next_first = re.compile(f"[{firsts}]") if firsts else None

    def with_terms(self, more: Mapping[str, str]) -> TermIndex:
        """This index plus `more` (folded name → node id)."""
        terms = dict(self.terms)
        for key, node_id in more.items():
            terms[key] = terms.get(key, set()) | {node_id}
        return TermIndex(terms)

    def spans(self, folded: str) -> list[Span]:
        """The names in `folded` (a `fold`ed text), leftmost-longest, each standing alone."""
        found: list[Span] = []
        if self._next_first is None:
            return found
        i, n = 0, len(folded)
        next_first, lengths, terms = self._next_first.search, self._lengths, self.terms
        while i < n:
            first = next_first(folded, i)
            if first is None:
                break
            i = first.start()
            for length in lengths[folded[i]]:
                if length > n - i:
                    continue
                ids = terms.get(folded[i : i + length])
                if ids and _stands_alone(folded, i, i + length):
                    book = _book_name_at(folded, i, length)
                    if book:
                        i += book
                        break
                    found.append(Span(i, i + length, tuple(sorted(ids))))
                    i += length
                    break
            else:
                i += 1
        return found


class Linker:
    """Links text to the nodes of a graph; the term index is rebuilt lazily after any node
    change."""

    def __init__(self, graph: Adjacency) -> None:
        self._g = graph
        self._index = TermIndex({})
        self._built_at = -1

    def term_index(self) -> TermIndex:
        """Every non-scripture node's label and aliases (rebuilt after any node change)."""
        if self._built_at != self._g.version:
            terms: dict[str, set[str]] = {}
            for node_id, data in self._g.nodes():
                if data.kind == "scripture":
                    continue
                for name in (data.label, *data.aliases):
                    key = term_key(name)
                    if key:
                        terms.setdefault(key, set()).add(node_id)
            self._index = TermIndex(terms)
            self._built_at = self._g.version
        return self._index

    def link(self, text: str) -> list[str]:
        """Node ids named in `text`, in order of appearance: labels and aliases (the longest
        name wins where names overlap) and scripture nodes for the references in it (a verse
        node, and its chapter node when the graph has them)."""
        if not text:
            return []
        g = self._g
        found: dict[str, None] = {}
        for span in self.term_index().spans(fold(text)):
            for node_id in sorted(span.nodes, key=_kind_order(g)):
                found[node_id] = None
        for node_id in self.scripture_nodes(text):
            found[node_id] = None
        return list(found)

    def scripture_nodes(self, text: str) -> list[str]:
        """The graph's scripture nodes for the references in `text` (verse and chapter)."""
        return [n for r in scripture.find_references(text) for n in self._range_nodes(r)]

    def _range_nodes(self, r: scripture.RefRange) -> list[str]:
        out: list[str] = []
        chapters = [f"{r.start.book}.{c}" for c in range(r.start.chapter, r.end.chapter + 1)]
        verses = scripture.expand(r) if r.start.verse is not None else []
        for osis in verses[:200] + chapters:
            node_id = scripture_node_id(osis)
            if node_id in self._g:
                out.append(node_id)
        return out


@functools.cache
def _book_names() -> frozenset[str]:
    return frozenset(b.zh for b in scripture.books())


@functools.cache
def _book_initials() -> tuple[frozenset[str], int]:
    """The first characters of the Bible books' full names, and the longest name's length."""
    names = _book_names()
    return frozenset(name[0] for name in names), max(map(len, names))


def _book_name_at(folded: str, start: int, shorter: int) -> int:
    """The length of a Bible book's full name that starts at `start` and is longer than the
    name found there (0 when there is none)."""
    initials, longest = _book_initials()
    if folded[start] not in initials:
        return 0
    names = _book_names()
    for length in range(longest, shorter, -1):
        if folded[start : start + length] in names:
            return length
    return 0


def _stands_alone(folded: str, start: int, end: int) -> bool:
    """English names match whole words; one-character Chinese names only next to particles,
    punctuation or the text's edges (灵 in "灵与生命", not in 心灵 or 灵魂)."""
    term = folded[start:end]
    before = folded[start - 1] if start > 0 else ""
    after = folded[end] if end < len(folded) else ""
    if _WORD.match(term[0]) and before and _WORD.match(before):
        return False
    if _WORD.match(term[-1]) and after and _WORD.match(after):
        return False
    if end - start == 1 and _CJK.match(term):
        for ch in (before, after):
            if ch and _CJK.match(ch) and ch not in _PARTICLES:
                return False
    return True


def _kind_order(g: Adjacency) -> Callable[[str], tuple[int, str]]:
    def key(node_id: str) -> tuple[int, str]:
        node = g.node(node_id)
        return (_KIND_ORDER.get(node.kind if node is not None else "", 9), node_id)

    return key
