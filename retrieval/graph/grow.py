"""Growing the graph from one document, offline: new concepts, aliases and relations.

`grow(chunks, ...)` returns what a document adds (`Growth`); `KnowledgeGraph.index_document`
stores it under the document's id, so deleting the document removes exactly that.

- **Base.** The document's book node, its author (person 著作 book), a scripture node per
  cited verse, and a mention of every node the linker finds in each chunk.
- **New concepts.** Candidates are runs of one to four jieba tokens (the domain dictionary
  keeps known terms whole; 的 may join two parts, as in 初熟的果子) or one to three English
  words, never across punctuation or stop words. A candidate becomes a concept when
    - it recurs (MIN_FREQ in this document; one fewer when other documents have it too),
    - its C-value — frequency minus its average frequency inside longer candidates, × log
      length — says it stands on its own (君尊的祭司 only ever inside 君尊的祭司职分 does not),
    - a multi-part term holds together: the PMI of its parts is at least MIN_PMI,
    - a one-word term is domain language: the document uses it DOMAIN_RATIO times more often
      than general Chinese does (jieba's own dictionary is the background),
    - a one-word term is a subject of the document, not its generic language: the chunks that
      name it name it BURST_MIN times on average (burstiness, Church & Gale; 原文, 终极, 信徒
      are spread thin, once a passage, while 锡安, 新妇, 祭司职分 recur where they are
      treated — measured in bench/results/graph-people.md),
  ranked by C-value × IDF over the documents ingested so far (a term every document uses is
  nobody's topic), at most `max_new_concepts(len(chunks))` of them. X的Y is a candidate
  whatever X is (争战的兵器, 受苦的道路: jieba tags 争战 and 受苦 verbs): where the text uses
  it as one term, Y is seldom seen alone, so the whole term is chosen and the head noun
  is not.
- **Terms the document names whole** (`_named_whole`): a phrase of its title, or of two of
  its headings, that its text repeats as one (MIN_FREQ times, in two chunks) is a term of the
  document whatever its inner form — 属天的异象 (属 a verb, 天 a measure word to jieba),
  深奥的启示 (启示 a verb), 清洁的良心 (良心 an adjective). It is chosen first, and its parts
  are counted as inside it, so the head noun alone (异象) does not grow in its place.
- **People and topics** (`retrieval.graph.people`): person nodes for the names the graph's
  dictionary knows (the seed's persons) and for recurring names the text marks as persons;
  a person 阐明 the concepts his passages discuss. Topic nodes for an outline's title and a
  book's sections, which 包含 the concepts they treat.
- **Aliases.** A candidate in a synonym-table group that names an existing node becomes an
  alias of that node, not a new one; a new concept takes the other terms of its group (its
  English names among them) and its Traditional form (OpenCC s2t) as aliases.
- **Relations from structure** (concept = concept or topic node, old or new):
    - outline: the concept a point is about (named right after its marker) 包含 the concept
      each of its sub-points is about, or the sub-point's concept 发展自 it when the
      sub-point says so (发展自, 出于, 源于 …);
      within one sentence "A 发展自/出于 B" and "A 产生/带进 B", "A 包括/包含 B" are read too;
    - footnote: the concepts a verse's notes name most 根基于 that verse;
    - a document that names a concept in many chunks, or in a section heading, 阐明 it, and
      its author 发展 it;
    - co-occurrence: concepts named in the same sections, weighted by the Jaccard index of
      their sections and kept where each is among the other's CO_KEEP strongest (相关).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from retrieval import scripture
from retrieval.graph.linking import TermIndex, fold, term_key
from retrieval.graph.model import (
    Node,
    book_node_id,
    person_node_id,
    scripture_label,
    scripture_node_id,
)
from retrieval.graph.people import heading_label, named_persons, person_relations, topics
from retrieval.producers import is_producer
from retrieval.scripture import normalise_refs
from retrieval.types import Chunk

MIN_FREQ = 3  # occurrences in the document
MIN_PMI = 3.0  # bits: parts of a multi-part term meet 8× more often than chance …
DEPENDENCY = 0.5  # … or the rarer part is inside the term at least this often
OWN_SHARE = 0.3  # a candidate must occur this often outside its most frequent longer one
DOMAIN_RATIO = 40.0  # a one-word term: document rate / general-Chinese rate
COMMON_WORD = 1e-5  # a word this common in general Chinese (内容, 过程, 阶段) is no term
MIN_CVALUE = 2.0
BURST_MIN = 1.6  # a one-word term: occurrences per chunk that names it
CO_OWN = 2  # chunks naming a grown concept that make the document a contributor of it
EXPOUND_SHARE = 0.25  # a concept named in this share of the chunks is "treated at length"
EXPOUND_MAX = 6
FOOTNOTE_CONCEPTS = 3
CO_MIN = 2  # sections two concepts must share
CO_WEIGHT = 0.4  # Jaccard of the two concepts' sections
CO_KEEP = 3  # strongest co-occurrence edges kept per concept

CONNECTOR = "的"
# jieba part-of-speech tags a term may end in (x: a word of the domain dictionary, which has
# no tag), and tags that may stand before a noun inside one.
_NOUNISH = frozenset({"n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "ng", "vn", "an", "j", "x"})
_NOUNISH |= {"i", "l", "k"}
_MODIFIERS = frozenset({"a", "b", "ag"})
# Tags of a word that may stand as X in X的Y although it starts no term of its own (争战的兵器,
# 受苦的道路): verbs and adverbial adjectives of two characters or more.
_OF_HEADS = frozenset({"v", "vd", "vi", "ad"})
_EN_EDGE_WORDS = frozenset(
    "himself herself itself themselves yourself ourselves one two three four five first second "
    "third message chapter verse verses lord god man men thing things way ways".split()
)
_ORDINAL = re.compile(r"^第[一二三四五六七八九十百千两0-9]")
_NUMERALS = re.compile(r"[一二三四五六七八九十百千〇零两]+")
_CJK = re.compile(r"^[\u3400-\u9fff\uf900-\ufaff]+$")
_LATIN = re.compile(r"^[a-z][a-z'-]*$")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|[^\sA-Za-z]")
# Words that cannot start or end a Chinese term, beyond the stop list.
_EDGE_WORDS = frozenset(
    "一 二 三 这 那 每 各 某 该 本 此 其 使 让 叫 令 说 看 来 去 到 过 多 少 大 小 好 新 旧".split()
    + "是否 可见 如此 因此 所以 不是 没有 一切 一样 一班 一位 一点 一面 一次 许多 整个".split()
    + "我们 你们 他们 人们 这样 那样 这里 那里 今天 今日 起来 出来 下来 之中 之间".split()
)
_LIST_GAP = re.compile(r"\s*(?:[、，,]|和|与|及|以及|并)\s*")
_MARKER = re.compile(
    r"^\s*(?:[（(][一二三四五六七八九十\d]+[)）]|[一二三四五六七八九十\d]+[、.．]|"
    r"[壹贰叁肆伍陆柒捌玖拾]+|[a-zA-Z][.．)]|[IVX]+[.．])?[\s　]*"
)
SUBJECT_WITHIN = 2  # a point's subject starts within this many characters of its marker
_DEVELOPS_FROM = re.compile(r"发展自|出于|源于|来自|源自")
_PRODUCES = re.compile(r"产生|带进|带出|发展为|发展出|发展成")
_INCLUDES = re.compile(r"包括|包含|分为|含有")


class Vocabulary(Protocol):
    """What growing needs to know about the graph as it is."""

    def term_index(self) -> TermIndex: ...
    def scripture_nodes(self, text: str) -> list[str]: ...
    def kind(self, node_id: str) -> str | None: ...
    def node(self, node_id: str) -> Node | None: ...
    def seeded(self, node_id: str) -> bool: ...
    def connected(self, a: str, b: str) -> bool: ...


class TermStats(Protocol):
    """Candidate-term statistics of the documents ingested before this one."""

    @property
    def term_documents(self) -> int: ...
    def term_frequency(self, term: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The language tools: jieba's raw cut with the domain dictionary, how common a word is
    in general Chinese, stop words, synonym groups by search-form key, Simplified → Traditional."""

    cut: Callable[[str], list[tuple[str, str]]]  # (word, part-of-speech tag)
    general_frequency: Callable[[str], float]
    stopwords: frozenset[str]
    synonyms: Mapping[str, tuple[str, ...]]
    to_traditional: Callable[[str], str]
    add_terms: Callable[[Iterable[str]], int]  # new dictionary words for later documents


def default_lexicon(terms: Iterable[str]) -> Lexicon:
    """jieba with the domain dictionary plus `terms` (the graph's names), the bundled stop
    words and synonym table, OpenCC s2t. Loads jieba's dictionary: call it off the loop."""
    import opencc

    from retrieval.synonyms import SynonymTable
    from retrieval.text import Tokenizer

    tokenizer = Tokenizer(terms=terms)
    tokenizer.warm()
    table = SynonymTable.load()
    synonyms = {term_key(t): group for group in table.groups for t in group if term_key(t)}
    s2t: Callable[[str], str] = opencc.OpenCC("s2t").convert
    return Lexicon(
        tokenizer.tag,
        tokenizer.general_frequency,
        tokenizer.stopwords,
        synonyms,
        s2t,
        tokenizer.add_terms,
    )


@dataclass(slots=True)
class Growth:
    """What one document adds: nodes, weighted edges, chunk → node mentions, its candidate
    terms (statistics for the documents after it) and its concept-mention count."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], float] = field(default_factory=dict)
    mentions: list[tuple[str, str]] = field(default_factory=list)
    terms: dict[str, int] = field(default_factory=dict)
    concepts: int = 0

    def node(self, node: Node) -> str:
        self.nodes.setdefault(node.id, node)
        return node.id

    def edge(self, src: str, relation: str, dst: str, weight: float = 1.0) -> None:
        if src == dst:
            return
        key = (src, dst, relation)
        self.edges[key] = max(weight, self.edges.get(key, 0.0))


def max_new_concepts(chunks: int) -> int:
    return max(3, min(20, 2 + chunks // 2))


# ---- the whole pass -------------------------------------------------------------------------


def grow(
    chunks: Sequence[Chunk],
    vocabulary: Vocabulary,
    lexicon: Lexicon,
    stats: TermStats,
    *,
    concepts: bool = True,
) -> Growth:
    """What the document adds; `concepts=False` keeps to the base (the curated-only graph:
    books, authors, verses and mentions of the nodes the graph already has)."""
    out = Growth()
    if not chunks:
        return out
    _base(chunks, out)
    if not concepts:
        for c in chunks:
            text = c.search_text or c.text
            found = [n for s in vocabulary.term_index().spans(fold(text)) for n in s.nodes]
            for node_id in dict.fromkeys([*found, *vocabulary.scripture_nodes(text)]):
                out.mentions.append((c.id, node_id))
                out.concepts += vocabulary.kind(node_id) in ("concept", "topic")
        return out
    known = vocabulary.term_index()
    lexicon = replace(lexicon, cut=_each_once(lexicon.cut))
    counts = _candidates(chunks, known, lexicon)
    out.terms = {t: c.freq for t, c in counts.items() if c.freq >= 2}
    people = people_of(chunks, known, lexicon, out)  # a person's name is no concept
    names = known.with_terms(people).terms
    whole = _named_whole(chunks, names, lexicon)
    counts.update(whole)
    chosen = _select(counts, names, lexicon, stats, len(chunks), whole=whole)
    # Every chunk's mentions: the graph's own terms plus this document's new ones.
    terms = known.with_terms({**_new_concepts(chosen, known.terms, lexicon, out), **people})
    kinds = {n.id: n.kind for n in out.nodes.values()}

    def kind(node_id: str) -> str | None:
        return kinds.get(node_id) or vocabulary.kind(node_id)

    named: dict[str, list[str]] = {}  # chunk → concept/topic ids in order
    persons: dict[str, list[str]] = {}  # chunk → person ids its own text names
    for c in chunks:
        text = c.search_text or c.text
        found = [n for span in terms.spans(fold(text)) for n in span.nodes]
        found += vocabulary.scripture_nodes(text)
        for node_id in dict.fromkeys(found):
            out.mentions.append((c.id, node_id))
        named[c.id] = [n for n in dict.fromkeys(found) if kind(n) in ("concept", "topic")]
        out.concepts += len(named[c.id])
        own = [n for s in terms.spans(fold(c.text)) for n in s.nodes if kind(n) == "person"]
        persons[c.id] = own
    _co_own(named, vocabulary, out)
    expounded = _expounds(chunks, named, out)
    person_relations(persons, named, out, expounded)
    for chunk_id, topic_ids in topics(chunks, terms, named, out).items():
        out.mentions.extend((chunk_id, t) for t in topic_ids)
    _structure(chunks, terms, kind, out)
    _cooccurrence(chunks, named, vocabulary, out)
    return out


def _each_once(
    cut: Callable[[str], list[tuple[str, str]]],
) -> Callable[[str], list[tuple[str, str]]]:
    """`cut`, each text tagged once: growth reads a chunk's words for its candidate terms and
    again for the persons it names, and jieba's tagger (its HMM in pure Python) is most of
    growth's CPU, ~10 ms a 400-character chunk. Kept for one document's growth only."""
    seen: dict[str, list[tuple[str, str]]] = {}

    def once(text: str) -> list[tuple[str, str]]:
        pairs = seen.get(text)
        if pairs is None:
            pairs = seen[text] = cut(text)
        return list(pairs)

    return once


def people_of(
    chunks: Sequence[Chunk], known: TermIndex, lexicon: Lexicon, out: Growth
) -> dict[str, str]:
    """Person nodes for the names this document marks as persons (`people.named_persons`)."""

    def common(word: str) -> bool:
        return lexicon.general_frequency(word) > COMMON_WORD or word in lexicon.stopwords

    return named_persons(chunks, known, lexicon.cut, common, lexicon.to_traditional, out)


def _co_own(named: Mapping[str, list[str]], vocabulary: Vocabulary, out: Growth) -> None:
    """A grown concept this document names in several chunks is its concept too: it stays
    while any document that uses it does, not only the one that grew it first."""
    spread = Counter(n for found in named.values() for n in found)
    for node_id, chunks in spread.items():
        if chunks < CO_OWN or node_id in out.nodes or vocabulary.seeded(node_id):
            continue
        node = vocabulary.node(node_id)
        if node is not None:
            out.node(Node(node.id, node.kind, node.label))


def _base(chunks: Sequence[Chunk], out: Growth) -> None:
    for c in chunks:
        book = out.node(Node(book_node_id(c.source), "book", c.source))
        out.mentions.append((c.id, book))
        if c.author and not is_producer(c.author):  # python-docx wrote no book
            person = out.node(Node(person_node_id(c.author), "person", c.author))
            out.edge(person, "著作", book)
        for osis in c.scripture_refs:
            node = out.node(Node(scripture_node_id(osis), "scripture", scripture_label(osis)))
            out.mentions.append((c.id, node))


# ---- term candidates --------------------------------------------------------------------------


@dataclass(slots=True)
class _Candidate:
    parts: tuple[str, ...]
    freq: int = 0
    capitalised: int = 0  # English: occurrences written with a capital (a proper noun)
    chunks: int = 0  # chunks that name it
    last: str = ""  # the last chunk counted in `chunks`

    @property
    def burstiness(self) -> float:
        return self.freq / max(1, self.chunks)


def _runs(text: str, language: str, lexicon: Lexicon) -> Iterable[list[_Part]]:
    """Runs of term-like tokens: nouns (and domain words, which jieba tags "x"), adjectives
    before them, 的 between them; verbs, pronouns, numbers, particles, punctuation and stop
    words end a run. English: words between punctuation and stop words."""
    if language == "en":
        # A capital counts (a proper noun: Zion) only where no sentence starts.
        pieces = [
            (m.group(0), "en", not _sentence_start(text, m.start()))
            for m in _EN_WORD.finditer(text)
        ]
    else:
        pieces = [(w.strip(), flag, False) for w, flag in lexicon.cut(text)]
    run: list[_Part] = []
    before: _Part | None = None  # the word just before, when it may be the X of X的Y
    for word, flag, mid_sentence in pieces:
        lower = word.lower()
        if flag == "en":
            ok = bool(_LATIN.match(lower)) and lower not in lexicon.stopwords
        elif word == CONNECTOR:
            if not run and before is not None:
                run = [before]
            ok = bool(run)
        else:
            ok = (
                bool(_CJK.match(word))
                and word not in lexicon.stopwords
                and (flag in _NOUNISH or flag in _MODIFIERS)
            )
        if not ok:
            if run:
                yield run
            run = []
            before = _Part(word, flag) if _of_head(word, flag, lexicon) else None
            continue
        before = None
        run.append(_Part(lower, flag, mid_sentence and word[:1].isupper()))
    if run:
        yield run


def _of_head(word: str, flag: str, lexicon: Lexicon) -> bool:
    return (
        flag in _OF_HEADS
        and len(word) >= 2
        and bool(_CJK.match(word))
        and word not in lexicon.stopwords
        and word not in _EDGE_WORDS
    )


def _sentence_start(text: str, at: int) -> bool:
    before = text[max(0, at - 4) : at]
    stripped = before.rstrip()
    return (at < 4 and not stripped) or "\n" in before or stripped[-1:] in '.!?:;"“(#'


@dataclass(frozen=True, slots=True)
class _Part:
    word: str
    flag: str
    capital: bool = False


def _candidates(
    chunks: Sequence[Chunk], known: TermIndex, lexicon: Lexicon
) -> dict[str, _Candidate]:
    out: dict[str, _Candidate] = {}
    for c in chunks:
        en = c.language == "en"
        # The chunk's own text: its search text repeats headings (an outline point carries
        # its whole path), which would count a heading once per sub-point.
        text = _mask_english(c.text, known) if en else fold(c.text)
        for run in _runs(text, c.language, lexicon):
            run_words = tuple(p.word for p in run)
            for i in range(len(run)):
                for n in range(1, min(4 if en else 5, len(run) - i + 1)):
                    parts, words = run[i : i + n], run_words[i : i + n]
                    if not _good_parts(parts, words, en):
                        continue
                    term = _join(words)
                    cand = out.get(term)
                    if cand is None:
                        cand = out[term] = _Candidate(words)
                    cand.freq += 1
                    cand.capitalised += parts[0].capital
                    if cand.last != c.id:
                        cand.chunks, cand.last = cand.chunks + 1, c.id
    return out


def _mask_english(text: str, known: TermIndex) -> str:
    """English keeps its case (a capital marks a proper noun); known names are blanked."""
    folded = fold(text)
    out = list(text) if len(folded) == len(text) else list(folded)
    for span in known.spans(folded):
        out[span.start : span.end] = "|" * (span.end - span.start)
    return "".join(out)


def _good_parts(parts: Sequence[_Part], words: tuple[str, ...], en: bool) -> bool:
    """Whether `parts` (`words` their words) make a candidate term."""
    if words[0] == CONNECTOR or words[-1] == CONNECTOR:
        return False
    if en:
        return (
            all(len(w) >= 3 for w in words)
            and len(" ".join(words)) >= 4
            and words[0] not in _EN_EDGE_WORDS
            and words[-1] not in _EN_EDGE_WORDS
            and not _is_reference(" ".join(words))
        )
    text = "".join(words)
    if not 2 <= len(text) <= 7 or words.count(CONNECTOR) > 1:
        return False
    if parts[-1].flag not in _NOUNISH or parts[0].flag == "k":
        return False  # a term ends in a noun; a suffix (者) cannot start one
    if _ORDINAL.match(text) or _is_reference(text):
        return False
    return words[0] not in _EDGE_WORDS and words[-1] not in _EDGE_WORDS


@functools.lru_cache(maxsize=1 << 16)
def _is_reference(text: str) -> bool:
    """Scripture abbreviations in running text (参罗八, 彼前四, 林后, 以弗所书) are no concepts:
    a book name followed by nothing or by a chapter numeral (以弗所 alone is the city, not the
    book, and stays a candidate). Kept for the last texts asked:
    a document's candidate terms are its few hundred words in every combination, asked
    ~200 times a chunk, and the reference parser is pure Python (a pure function of the
    text: the books are fixed)."""
    probe = text.removeprefix("参")
    for end in range(min(len(probe), 5), 0, -1):
        rest = probe[end:]
        if rest and not _NUMERALS.fullmatch(rest):
            continue
        try:
            scripture.book(probe[:end])
        except scripture.ScriptureError:
            continue
        return True
    return bool(scripture.find_references(probe))


# ---- choosing concepts -------------------------------------------------------------------------


def _select(
    counts: dict[str, _Candidate],
    known: Mapping[str, set[str]],
    lexicon: Lexicon,
    stats: TermStats,
    chunks: int,
    *,
    whole: Mapping[str, _Candidate] | None = None,
) -> list[str]:
    """The new concept terms of this document, best first: the terms it names whole
    (`whole`, already judged), then the others by C-value × IDF."""
    total = max(1, sum(c.freq for c in counts.values() if len(c.parts) == 1))
    longer = _containing(counts)
    named = sorted((whole or {}).items(), key=lambda tc: (-tc[1].freq, tc[0]))
    first = [t for t, _ in named if term_key(t) not in known]
    scored: list[tuple[float, str]] = []
    for term, cand in counts.items():
        if term in first:
            continue
        df = stats.term_frequency(term)
        if cand.freq < (MIN_FREQ - 1 if df else MIN_FREQ):
            continue
        if term_key(term) in known:
            continue  # a node already has this name: it is linked, not grown
        nested = longer.get(term, [])
        cvalue = math.log2(1 + len(term)) * (
            cand.freq - (sum(nested) / len(nested) if nested else 0)
        )
        if cvalue < MIN_CVALUE or cand.freq - max(nested, default=0) < OWN_SHARE * cand.freq:
            continue  # 职分 nearly always inside 祭司职分: that is the term
        if not _is_term(term, cand, lexicon, counts, total):
            continue
        idf = math.log((stats.term_documents + 2) / (df + 1))
        scored.append((cvalue * idf, term))
    scored.sort(key=lambda st: (-st[0], st[1]))
    return [*first, *(t for _, t in scored)][: max_new_concepts(chunks)]


# Words that may not open a term named whole (众地方召会 is 地方召会 of many places).
_QUANTIFIERS = frozenset("众 诸 全 凡 所有 一切 全部 整个 各样 各种 这些 那些".split())
_NAME_SPLIT = re.compile(r"[\s,，、：:；;。.!！?？·—–\-（）()《》〈〉“”\"'‘’「」『』]+")
_PARENTHESIS = re.compile(r"[（(][^（）()]*[）)]")
_JOINERS = frozenset("与 和 及 暨 或 跟 同 并".split())


def _named_whole(
    chunks: Sequence[Chunk], known: Mapping[str, set[str]], lexicon: Lexicon
) -> dict[str, _Candidate]:
    """Phrases the document names whole: in its title or in two of its headings, and
    repeated as one in its text (MIN_FREQ times, in two of its chunks or its only one).
    A phrase almost always inside a longer such phrase is not one of them (OWN_SHARE)."""
    places: Counter[str] = Counter()  # phrase → title (counts 2) or headings naming it
    parts: dict[str, tuple[str, ...]] = {}
    headings = {p for c in chunks for p in c.chapter.split(" > ") if p.strip()}
    title = chunks[0].source
    for text, weight in ((title, 2), *((h, 1) for h in sorted(headings - {title}))):
        for phrase, words in _phrases(text, lexicon):
            places[phrase] += weight
            parts.setdefault(phrase, words)
    texts = [fold(c.text) for c in chunks if c.language != "en"]
    found: dict[str, _Candidate] = {}
    for phrase, named in places.items():
        if named < 2 or term_key(phrase) in known:
            continue
        freq = sum(t.count(phrase) for t in texts)
        spread = sum(1 for t in texts if phrase in t)
        if freq >= MIN_FREQ and spread >= min(2, len(texts)):
            found[phrase] = _Candidate(parts[phrase], freq, chunks=spread)
    return {
        p: cand
        for p, cand in found.items()
        if not any(
            p != q and p in q and cand.freq - other.freq < OWN_SHARE * cand.freq
            for q, other in found.items()
        )
    }


def _phrases(text: str, lexicon: Lexicon) -> Iterable[tuple[str, tuple[str, ...]]]:
    """Runs of whole words (2–8 Chinese characters) of a title or heading, its numbering
    and parentheses removed, cut at punctuation and at 与/和/及: what it may name whole."""
    body = _PARENTHESIS.sub(" ", heading_label(text) or "")
    for piece in _NAME_SPLIT.split(fold(body)):
        words = [w for w, _ in lexicon.cut(piece)]
        runs: list[list[str]] = [[]]
        for w in words:
            if w in _JOINERS:
                runs.append([])
            else:
                runs[-1].append(w)
        for run in runs:
            for i in range(len(run)):
                for j in range(i + 1, len(run) + 1):
                    span = run[i:j]
                    phrase = "".join(span)
                    if _whole_phrase(span, phrase, lexicon):
                        yield phrase, tuple(span)


def _whole_phrase(words: Sequence[str], phrase: str, lexicon: Lexicon) -> bool:
    if not (3 <= len(phrase) <= 8 and _CJK.match(phrase)) or _ORDINAL.match(phrase):
        return False
    if words[0] in _QUANTIFIERS or words[0] == CONNECTOR or words[-1] == CONNECTOR:
        return False
    inner = [w for w in words if w != CONNECTOR]
    if any(w in lexicon.stopwords for w in inner):
        return False  # 召会乃是…的结果 is a sentence, not a name
    return words[0] not in _EDGE_WORDS and words[-1] not in _EDGE_WORDS


def _containing(counts: dict[str, _Candidate]) -> dict[str, list[int]]:
    """For each candidate, the frequencies of the longer candidates that contain it (C-value
    discounts a term by them)."""
    longer: dict[str, list[int]] = defaultdict(list)
    for cand in counts.values():
        if len(cand.parts) < 2:
            continue
        for i in range(len(cand.parts)):
            for j in range(i + 1, len(cand.parts) + 1):
                if (i, j) != (0, len(cand.parts)):
                    sub = _join(cand.parts[i:j])
                    if sub in counts:
                        longer[sub].append(cand.freq)
    return longer


def _is_term(
    term: str, cand: _Candidate, lexicon: Lexicon, counts: dict[str, _Candidate], total: int
) -> bool:
    """A lone English word, a lone Chinese word, or a compound, each judged its own way."""
    if len(cand.parts) == 1 and _LATIN.match(term):
        # No background for English: a lone word counts when it is a proper noun or a
        # name the synonym table knows.
        return cand.capitalised > 0 or term_key(term) in lexicon.synonyms
    if len(cand.parts) == 1:
        general = lexicon.general_frequency(term)
        if general > COMMON_WORD or cand.freq / total < DOMAIN_RATIO * general:
            return False
        return cand.burstiness >= BURST_MIN  # else generic language, spread thin
    core = [p for p in cand.parts if p != CONNECTOR]
    return min(_cohesion(core, k, counts, cand.freq, total) for k in range(1, len(core))) >= 1


def _join(parts: Sequence[str]) -> str:
    return " ".join(parts) if parts and _LATIN.match(parts[0]) else "".join(parts)


def _cohesion(
    core: Sequence[str], k: int, counts: dict[str, _Candidate], joint: int, total: int
) -> float:
    """≥ 1 when the two halves (split at k) hold together: their PMI reaches MIN_PMI, or one
    half is mostly seen inside this term (DEPENDENCY of its occurrences)."""
    left, right = _join(core[:k]), _join(core[k:])
    fl = counts[left].freq if left in counts else joint
    fr = counts[right].freq if right in counts else joint
    pmi = math.log2(joint * total / (fl * fr))
    return max(pmi / MIN_PMI, joint / min(fl, fr) / DEPENDENCY)


def _new_concepts(
    chosen: Sequence[str], known: Mapping[str, set[str]], lexicon: Lexicon, out: Growth
) -> dict[str, str]:
    """Concept nodes (or aliases of existing nodes) for the chosen terms; returns the folded
    names this document adds → node id."""
    added: dict[str, str] = {}
    for term in chosen:
        group = lexicon.synonyms.get(term_key(term), ())
        # 有机的救恩 is 有机救恩; "body" is "the Body"
        names = [*group, term.replace(CONNECTOR, ""), f"the {term}"]
        # Only a concept takes a grown term as its alias: a topic or person keeps its own names
        # (得胜的 is no alias of the topic 得胜).
        existing = next(
            (
                n
                for t in names
                for n in sorted(known.get(term_key(t), ()))
                if n.startswith("concept:")
            ),
            None,
        )
        if existing is not None:
            # The synonym table says this is another name of a node the graph has.
            kind, label = existing.partition(":")[0], existing.partition(":")[2]
            out.node(Node(existing, kind, label, (term,)))
            added[term_key(term)] = existing
            continue
        label = next((t for t in group if not t.isascii()), term)
        aliases = [t for t in group if t != label]
        traditional = lexicon.to_traditional(label)
        if traditional != label:
            aliases.append(traditional)
        node_id = out.node(
            Node(f"concept:{label}", "concept", label, tuple(dict.fromkeys(aliases)))
        )
        for name in (label, *aliases, term):
            if term_key(name):
                added[term_key(name)] = node_id
    return added


# ---- relations from structure ------------------------------------------------------------------

Kind = Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class _Named:
    start: int
    end: int
    node: str


def _concepts_in(text: str, terms: TermIndex, kind: Kind) -> list[_Named]:
    """The concepts (and topics) `text` names, in order."""
    out: list[_Named] = []
    for span in terms.spans(fold(text)):
        node = next((n for n in span.nodes if kind(n) in ("concept", "topic")), None)
        if node is not None:
            out.append(_Named(span.start, span.end, node))
    return out


def _structure(
    chunks: Sequence[Chunk],
    terms: TermIndex,
    kind: Kind,
    out: Growth,
) -> None:
    heads: dict[str, str] = {}  # outline point (its chapter path) → the concept heading it
    for c in chunks:
        own = c.text
        for sentence in _SENTENCES.split(own):
            _sentence_relations(_concepts_in(sentence, terms, kind), fold(sentence), out)
        if c.type == "outline":
            subject = _subject(own.split("\n", 1)[0], terms, kind)
            if subject is not None:
                heads[c.chapter] = subject
        elif c.type == "footnote":
            _footnote(c, terms, kind, out)
    titles = {c.source: _subject(c.source, terms, kind) for c in chunks if c.type == "outline"}
    for c in chunks:
        if c.type != "outline" or c.chapter not in heads:
            continue
        child = heads[c.chapter]
        parent_path, sep, _ = c.chapter.rpartition(" > ")
        parent = heads.get(parent_path) if sep else titles.get(c.source)
        if parent is None or parent == child:
            continue
        if _DEVELOPS_FROM.search(c.text.split("\n", 1)[0]):
            out.edge(child, "发展自", parent)
        else:
            out.edge(parent, "包含", child)


def _subject(line: str, terms: TermIndex, kind: Kind) -> str | None:
    """The concept a point (or title) is about: one named right after its marker."""
    body = _MARKER.sub("", line, count=1)
    named = _concepts_in(body, terms, kind)
    return named[0].node if named and named[0].start <= SUBJECT_WITHIN else None


_SENTENCES = re.compile(r"[。！？；\n]+|(?<=[.!?;])\s+")


def _sentence_relations(spans: Sequence[_Named], folded: str, out: Growth) -> None:
    """ "A 发展自 B", "A 产生 B", "A 包括 B、C 与 D" inside one sentence (the cue right
    between the two names)."""
    for i, (left, right) in enumerate(itertools.pairwise(spans)):
        between = folded[left.end : right.start]
        if len(between) > 4:
            continue
        if _DEVELOPS_FROM.search(between):
            out.edge(left.node, "发展自", right.node)
        elif _PRODUCES.search(between):
            out.edge(right.node, "发展自", left.node)
        elif _INCLUDES.search(between):
            out.edge(left.node, "包含", right.node)
            for prev, item in itertools.pairwise(spans[i + 1 :]):
                if not _LIST_GAP.fullmatch(folded[prev.end : item.start]):
                    break
                out.edge(left.node, "包含", item.node)


def _footnote(c: Chunk, terms: TermIndex, kind: Kind, out: Growth) -> None:
    verse = str(c.extra.get("verse", ""))
    osis_ids = [o for o in normalise_refs(verse) if o.count(".") == 2][:3]
    notes = c.text.split("\n", 1)[1] if "\n" in c.text else ""
    if not osis_ids or not notes:
        return
    counts = Counter(s.node for s in _concepts_in(notes, terms, kind))
    for node_id, _ in counts.most_common(FOOTNOTE_CONCEPTS):
        for osis in osis_ids:
            verse_node = out.node(Node(scripture_node_id(osis), "scripture", scripture_label(osis)))
            out.edge(node_id, "根基于", verse_node)


def _expounds(chunks: Sequence[Chunk], named: Mapping[str, list[str]], out: Growth) -> list[str]:
    """The book 阐明 (and its author 发展) the concepts it treats at length; returns them."""
    spread = Counter(n for c in chunks for n in dict.fromkeys(named[c.id]))
    headed: set[str] = set()
    for c in chunks:
        if c.type in ("book", "message") and c.chapter:
            headed.update(n for n in named[c.id] if _named_in(n, c.chapter))
    need = max(2, math.ceil(EXPOUND_SHARE * len(chunks)))
    ranked = sorted(
        (n for n in spread if spread[n] >= need or n in headed),
        key=lambda n: (-(n in headed), -spread[n], n),
    )[:EXPOUND_MAX]
    first = chunks[0]
    book = book_node_id(first.source)
    for node_id in ranked:
        out.edge(book, "阐明", node_id)
        if first.author and not is_producer(first.author):
            out.edge(person_node_id(first.author), "发展", node_id)
    return ranked


def _named_in(node_id: str, text: str) -> bool:
    return term_key(node_id.partition(":")[2]) in fold(text)


def _cooccurrence(
    chunks: Sequence[Chunk],
    named: Mapping[str, list[str]],
    vocabulary: Vocabulary,
    out: Growth,
) -> None:
    sections: dict[str, set[str]] = defaultdict(set)
    for c in chunks:
        key = c.chapter.split(" > ")[0] if c.type == "outline" else (c.chapter or str(c.position))
        sections[key].update(named[c.id])
    seen = Counter(n for concepts in sections.values() for n in concepts)
    meets: Counter[tuple[str, str]] = Counter()
    for concepts in sections.values():
        ordered = sorted(concepts)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                meets[(a, b)] += 1
    linked = {frozenset((s, d)) for s, d, _ in out.edges}
    best: dict[str, list[tuple[float, tuple[str, str]]]] = defaultdict(list)
    for (a, b), n in meets.items():
        if n < CO_MIN or frozenset((a, b)) in linked:
            continue
        weight = n / (seen[a] + seen[b] - n)  # Jaccard: a concept named everywhere meets all
        # the graph's edges asked last: most pairs are too weak (24 lookups a pair)
        if weight < CO_WEIGHT or vocabulary.connected(a, b):
            continue
        best[a].append((weight, (a, b)))
        best[b].append((weight, (a, b)))
    top: dict[str, set[tuple[str, str]]] = {
        node: {pair for _, pair in sorted(pairs, key=lambda wp: (-wp[0], wp[1]))[:CO_KEEP]}
        for node, pairs in best.items()
    }
    for a, b in sorted({p for pairs in top.values() for p in pairs}):
        if (a, b) in top[a] and (a, b) in top[b]:  # each is among the other's strongest
            weight = meets[(a, b)] / (seen[a] + seen[b] - meets[(a, b)])
            out.edge(a, "相关", b, round(weight, 3))
