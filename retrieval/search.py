"""Hybrid search: dense + keyword (BM25 sparse, synonym-expanded) + graph, fused by weighted RRF.

The namespace (or a reader's namespaces, `retrieval.library.Reading`: the shared library and
its shelf) and the caller's filter apply to every track; the graph track walks the graph as
the reader sees it (without what only other shelves' and the trash's documents grew). The graph track ranks chunks
reached by walking the knowledge graph from the query's entities (concepts, people, books and
the scripture nodes of the verses it cites) together with chunks that cite those verses
directly (`scripture_refs`); the walked chunks are read by point id (`Filter.ids`).
Overlapping chunks of one document (the prose chunker's 15% overlap) come back as one hit.
An English question's dense candidates are also ranked by the words they say through the
English → Chinese gloss (`retrieval.gloss`), a ranking fused where the answer is Chinese.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from retrieval.fuse import weighted_rrf
from retrieval.gloss import Gloss
from retrieval.keyword import Bm25Encoder
from retrieval.library import Reading
from retrieval.ports import DenseAndSparseQuery, Embedder, VectorStore
from retrieval.relevance import (
    NON_MINISTRY,
    CoverageReader,
    Evidence,
    holds,
    made_up_weight,
    query_terms,
    unglued,
    with_phrases,
)
from retrieval.scripture import normalise_refs
from retrieval.synonyms import SynonymTable
from retrieval.termstats import drop_common
from retrieval.text import is_latin, made_up, mostly_chinese, rarity, search_form
from retrieval.types import (
    CORPUS_NAMESPACE,
    Chunk,
    Filter,
    FilterValue,
    GraphPath,
    Hit,
    ScoredChunk,
    SparseVector,
)

Track = Literal["dense", "graph", "keyword"]
# A namespace's keyword terms held by so many chunks that the keyword track leaves them out
# while a rarer term remains (`Indexer.common_terms`, see `retrieval.termstats`).
CommonTerms = Callable[[str], Mapping[int, int]]
TRACKS: tuple[Track, ...] = ("dense", "graph", "keyword")
DEPTH = 30  # candidates per track
# The graph track's evidence is sparser: past its first ten its candidates only dilute the
# fusion (labelled set, hash embedder: fused recall@5 0.717 with 30, 0.753 with 10).
GRAPH_DEPTH = 10
# Payload keys the graph track ranks the chunks citing a verse by.
_RANKING_KEYS = ("doc_id", "position", "scripture_refs")
MAX_REF_TOKENS = 50  # verse ids of the query added to the keyword track
MIN_OVERLAP = 20  # characters two adjacent chunks must share to be stitched into one hit
ENTITY_KINDS = ("concept:", "topic:", "person:")  # graph nodes that name a question's subject
SIGNAL_DEPTH = 3  # a track's top hits that must hold the query's terms for it to count
MIN_SIGNAL = 0.4  # bench/results/fusion.md
SCRIPT_DEPTH = 5  # the dense hits that tell which script a question's answer is written in
AGREEMENT_DEPTH = 3  # a track's top ministry passages that `Evidence.agreement` compares
CROSS_SCRIPT_WEIGHT = 0.3  # share of its weight a lexical track keeps across scripts
# The gloss ranking (`HybridSearch._gloss_rank`): its weight as a multiple of the dense
# track's, and the least a Chinese rendering a passage holds counts (rare ones count more).
GLOSS_WEIGHT = 3.0
RENDERING_FLOOR = 0.5
GLOSS_DEPTH = 100  # dense candidates the gloss ranking reads (the dense track keeps DEPTH)


class GraphWalkResult(Protocol):
    @property
    def chunk_scores(self) -> Mapping[str, float]: ...

    @property
    def paths(self) -> Sequence[GraphPath]: ...

    @property
    def entries(self) -> Sequence[str]:
        """The entry nodes the graph knows; empty: the query named nothing in the graph."""
        ...


class GraphReader(Protocol):
    """What search needs from `retrieval.graph.KnowledgeGraph`."""

    def link(self, text: str) -> list[str]: ...

    def walk(self, entry: list[str], depth: int = 2) -> GraphWalkResult: ...


class GraphViews(Protocol):
    """The graph as one reader sees it (`retrieval.graph.KnowledgeGraph.seen_without`)."""

    async def seen_without(self, docs: frozenset[str]) -> GraphReader: ...


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    graph_paths: list[GraphPath] = field(default_factory=list)
    expansions: dict[str, float] = field(default_factory=dict)
    refs: tuple[str, ...] = ()
    # What the tracks found about whether the corpus speaks to the query (the relevance gate).
    evidence: Evidence = field(default_factory=Evidence)


@dataclass(slots=True)
class _TrackResult:
    ranked: list[ScoredChunk] = field(default_factory=list)
    paths: list[GraphPath] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # graph track: the linked entry nodes
    # graph track: what `GraphReader.link` named in the whole query (None: the track did not
    # run), so the evidence need not link it again
    linked: list[str] | None = None


@dataclass(frozen=True, slots=True)
class _QueryTerms:
    """What the evidence reads a query by: its text, the verses it names, its weighted terms
    and each term's alternatives (synonyms, or the parts of a word jieba made up)."""

    q: str
    refs: tuple[str, ...]
    terms: dict[str, float]
    alternatives: dict[str, tuple[str, ...]]


class _EvidenceReader:
    """The evidence about one query (`HybridSearch._evidence_reader`): `read` each track's
    candidates as they come, then `evidence` once all have."""

    def __init__(
        self,
        query: _QueryTerms,
        translation: dict[str, tuple[str, ...]] | None,
        graph: GraphReader | None,
    ) -> None:
        self._query = query
        self._graph = graph
        self._as_written = CoverageReader(query.terms, query.alternatives)
        # held in translation (an English question, the gloss)
        self._in_translation = (
            None if translation is None else CoverageReader(query.terms, translation)
        )

    def read(self, chunks: Iterable[Chunk]) -> None:
        chunks = list(chunks)
        self._as_written.read(chunks)
        if self._in_translation is not None:
            self._in_translation.read(chunks)

    def evidence(self, per_track: Mapping[str, _TrackResult], *, glossed: bool) -> Evidence:
        """What the tracks found about whether the corpus speaks to the query (every
        candidate in `per_track` read already)."""
        q, refs = self._query.q, self._query.refs
        candidates = [s.chunk for result in per_track.values() for s in result.ranked]
        share, best, specific = self._as_written.result(candidates)
        if glossed and self._in_translation is not None:
            # Held in translation counts for coverage; how specific the terms are is read as
            # written (a rendering such as 工作 is in many passages).
            translated = self._in_translation.result(candidates)
            if translated[0] > share:
                share, best = translated[0], translated[1]

        def signal(track: str) -> float:
            """Share of the query's terms the track's top hits hold (a verse hit counts too;
            a hit citing the verse the query names is full signal)."""
            top = [s.chunk for s in per_track[track].ranked[:SIGNAL_DEPTH]]
            if any(set(refs).intersection(c.scripture_refs) for c in top):
                return 1.0
            return self._as_written.best_share(top)

        ministry = [s for s in per_track["dense"].ranked if s.chunk.type not in NON_MINISTRY]
        nearest = per_track["dense"].ranked[:SCRIPT_DEPTH]
        cross_script = (
            is_latin(q) and bool(nearest) and all(mostly_chinese(s.chunk.text) for s in nearest)
        )
        entities: tuple[str, ...] = ()
        if self._graph is not None:
            linked = per_track["graph"].linked
            if linked is None:
                linked = self._graph.link(q)
            entities = tuple(dict.fromkeys(n for n in linked if n.startswith(ENTITY_KINDS)))
        wanted = set(refs)
        cited = any(
            c.type not in NON_MINISTRY and wanted.intersection(c.scripture_refs) for c in candidates
        )
        verse_share, verse_best = self._as_written.best_of(
            c for c in candidates if c.type == "bible"
        )
        return Evidence(
            terms=self._query.terms,
            coverage=share,
            best=best,
            verse_coverage=verse_share,
            verse_best=verse_best,
            specific=specific,
            keyword_signal=signal("keyword"),
            graph_signal=signal("graph"),
            dense=max((s.score for s in ministry), default=0.0),
            entities=entities,
            refs=refs,
            refs_cited=cited,
            cross_script=cross_script,
            glossed=glossed,
            agreement=_agreement(per_track),
        )


def _agreement(per_track: Mapping[str, _TrackResult]) -> int:
    """The most ministry passages two tracks both rank in their top `AGREEMENT_DEPTH`."""
    tops = [
        {s.chunk.id for s in ministry[:AGREEMENT_DEPTH]}
        for ministry in (
            [s for s in result.ranked if s.chunk.type not in NON_MINISTRY]
            for result in per_track.values()
        )
    ]
    return max((len(a & b) for a, b in itertools.combinations(tops, 2)), default=0)


@dataclass(slots=True)
class Candidates:
    """What the tracks found for one query, before fusion."""

    query: str  # search form
    refs: tuple[str, ...] = ()
    expansions: dict[str, float] = field(default_factory=dict)
    per_track: dict[str, _TrackResult] = field(default_factory=dict)
    evidence: Evidence = field(default_factory=Evidence)


class HybridSearch:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        encoder: Bm25Encoder,
        graph: GraphReader | None,
        synonyms: SynonymTable | None,
        weights: tuple[float, float, float] = (0.5, 0.3, 0.2),
        k: int = 60,
        *,
        common_terms: CommonTerms | None = None,
        gloss: Gloss | None = None,
        views: GraphViews | None = None,
    ) -> None:
        """`views`: the graph as each reader sees it (a search given a `Reading` that hides
        documents walks that view)."""
        self.views = views
        self.store = store
        self.embedder = embedder
        self.encoder = encoder
        self.graph = graph
        self.synonyms = synonyms
        self.weights: dict[str, float] = dict(zip(TRACKS, weights, strict=True))
        self.k = k
        self.common_terms = common_terms
        self.gloss = gloss

    async def search(
        self,
        query: str,
        *,
        flt: Filter | None = None,
        limit: int = 6,
        namespace: str = CORPUS_NAMESPACE,
        tracks: Sequence[Track] = TRACKS,
        reading: Reading | None = None,
    ) -> SearchResult:
        found = await self.candidates(
            query, flt=flt, namespace=namespace, tracks=tracks, reading=reading
        )
        return self.fuse(found, limit=limit)

    async def graph_for(self, reading: Reading | None) -> GraphReader | None:
        """The graph `reading`'s reader sees (the whole graph when it hides nothing)."""
        if reading is None or not reading.hidden or self.views is None:
            return self.graph
        return await self.views.seen_without(reading.hidden)

    async def candidates(
        self,
        query: str,
        *,
        flt: Filter | None = None,
        namespace: str = CORPUS_NAMESPACE,
        tracks: Sequence[Track] = TRACKS,
        reading: Reading | None = None,
    ) -> Candidates:
        """Every track's ranked candidates for `query`, and the evidence they give; a
        `reading` replaces `namespace` with its own and hides what it hides."""
        q = search_form(query)
        namespaces = reading.namespaces if reading is not None else (namespace,)
        base = Filter(equals={"namespace": _one_or_any(namespaces)}).and_(flt)
        seen = await self.graph_for(reading)
        refs = normalise_refs(q)
        if not q:
            return Candidates(q, refs)

        # An English question's dense candidates are re-read through the English → Chinese
        # gloss (with the keyword track: the lexical reading the fused search gets), deeper
        # than the dense track's own.
        glossed = self.gloss is not None and is_latin(q) and "keyword" in tracks
        depth = GLOSS_DEPTH if glossed else DEPTH
        # The query vector is computed (the embedder's thread) while the query is read here.
        vector = asyncio.ensure_future(self._vector(q) if "dense" in tracks else _nothing())
        # Read once for the tracks and the evidence (a few tenths of a ms each time).
        tokens = self.encoder.tokenize(q)
        phrases = self.synonyms.find(q, tokens) if self.synonyms else []
        expansions = self._expansions(phrases) if "keyword" in tracks else {}
        # Chunks carry their verse ids as keyword tokens (see Indexer), so the query's do too.
        keyword_terms = {**expansions, **dict.fromkeys(refs[:MAX_REF_TOKENS], 1.0)}
        sparse = self._keyword_vector(q, keyword_terms, namespaces) if "keyword" in tracks else None
        # Dense and keyword go to the store in one call (with the store in a process of its
        # own, `EdgeProcessStore`, it searches there while the graph is walked here); the
        # graph's own reads follow it.
        lexical = asyncio.ensure_future(self._lexical(vector, sparse, base, depth))
        graph_track = asyncio.ensure_future(
            self._graph(q, tokens, refs, base, seen) if "graph" in tracks else _no_track()
        )
        # The evidence reads each track's candidates as they come, while the others are still
        # searched: at 1M chunks most of its ~1 ms left the time after the last track.
        reader = self._evidence_reader(q, refs, tokens, phrases, translated=glossed, graph=seen)

        async def read_lexical() -> tuple[_TrackResult, _TrackResult]:
            dense, keyword = await lexical
            reader.read(s.chunk for s in dense.ranked[:DEPTH])  # the dense pool may be deeper
            reader.read(s.chunk for s in keyword.ranked)
            return dense, keyword

        async def read_graph() -> _TrackResult:
            result = await graph_track
            reader.read(s.chunk for s in result.ranked)
            return result

        (dense, keyword), graph = await asyncio.gather(read_lexical(), read_graph())
        pool = dense.ranked
        dense = _TrackResult(pool[:DEPTH])
        per_track = {"dense": dense, "keyword": keyword, "graph": graph}
        glossed = glossed and bool(pool)
        evidence = reader.evidence(per_track, glossed=glossed)
        if glossed:
            per_track["gloss"] = await asyncio.to_thread(self._gloss_rank, q, pool)
        return Candidates(q, refs, expansions, per_track, evidence)

    def fuse(self, found: Candidates, *, limit: int = 6) -> SearchResult:
        """The tracks' candidates as one ranking (see `retrieval.fuse`)."""
        chunks: dict[str, Chunk] = {}
        scores: dict[str, dict[str, float]] = {}
        rankings: dict[str, list[str]] = {}
        for name, result in found.per_track.items():
            rankings[name] = [s.chunk.id for s in result.ranked]
            for s in result.ranked:
                chunks.setdefault(s.chunk.id, s.chunk)
                scores.setdefault(s.chunk.id, {})[name] = s.score
        fused = weighted_rrf(rankings, self._weights_for(found), k=self.k)
        hits = [
            Hit(chunks[cid], score, dict(ranks), {t: scores[cid][t] for t in ranks})
            for cid, score, ranks in fused
        ]
        graph = found.per_track.get("graph", _TrackResult())
        return SearchResult(
            merge_overlapping(hits, limit),
            graph.paths,
            found.expansions,
            found.refs,
            found.evidence,
        )

    def track_weights(self, evidence: Evidence) -> dict[str, float]:
        """Query-aware fusion: a track with no real signal for this query adds nothing, so it
        cannot push the others' hits down.
        - The keyword and graph tracks have none when their top hits hold under 40 % of the
          query's distinctive terms (an English question whose words meet only common words
          of an English passage); the graph track has none without an entity or a verse (it
          then returns nothing anyway).
        - Across scripts they count for less: an English question whose nearest passages by
          meaning are all Chinese is answered in the Chinese text, which only the dense track
          reads across languages; what the other two matched there are English words (LORD,
          God, name) that every English passage holds, or the concepts those words link to.
        """
        weights = dict(self.weights)
        if evidence.terms and evidence.keyword_signal < MIN_SIGNAL:
            weights["keyword"] = 0.0
        if evidence.terms and evidence.graph_signal < MIN_SIGNAL:
            weights["graph"] = 0.0
        if evidence.cross_script:
            for track in ("keyword", "graph"):
                weights[track] *= CROSS_SCRIPT_WEIGHT
        # The gloss ranking counts across scripts only, where it is the one lexical reading
        # of the Chinese text (on an English passage the English words already meet).
        glossing = evidence.glossed and evidence.cross_script
        weights["gloss"] = weights["dense"] * GLOSS_WEIGHT if glossing else 0.0
        return weights

    def _weights_for(self, found: Candidates) -> dict[str, float]:
        """`track_weights`, unless that would silence every track that found something."""
        weights = self.track_weights(found.evidence)
        alive = [t for t, r in found.per_track.items() if r.ranked]
        if alive and all(weights.get(t, 0.0) <= 0 for t in alive):
            return dict(self.weights)
        return weights

    def _evidence(
        self,
        q: str,
        refs: tuple[str, ...],
        per_track: Mapping[str, _TrackResult],
        *,
        glossed: bool = False,
    ) -> Evidence:
        """What the tracks found about whether the corpus speaks to `q`."""
        tokens = self.encoder.tokenize(q)
        phrases = self.synonyms.find(q, list(tokens)) if self.synonyms else []
        reader = self._evidence_reader(q, refs, tokens, phrases, translated=glossed)
        for result in per_track.values():
            reader.read(s.chunk for s in result.ranked)
        return reader.evidence(per_track, glossed=glossed)

    def _evidence_reader(
        self,
        q: str,
        refs: tuple[str, ...],
        tokens: Sequence[str],
        phrases: Sequence[str],
        *,
        translated: bool,
        graph: GraphReader | None = None,
    ) -> _EvidenceReader:
        """The evidence for `q` (its tokens and synonym-table phrases), to read the tracks'
        candidates into; `translated`: the gloss may be used (coverage in translation too);
        `graph`: the graph the reader sees (default: the whole one)."""
        terms = with_phrases(query_terms(tokens, rarity, refs), phrases)
        alternatives = {t: tuple(self.synonyms.expand([t])) for t in terms} if self.synonyms else {}
        for t in terms:  # a word jieba made up (rarity 1, no synonym): read it as written
            if rarity(t) >= 1.0 and not alternatives.get(t):
                alternatives[t] = unglued(t, q)
                light = made_up_weight(t, rarity) if made_up(t) else None
                if not alternatives[t] and light is not None:
                    terms[t] = light
        translation = self._translated(terms, alternatives) if translated else None
        seen = graph if graph is not None else self.graph
        return _EvidenceReader(_QueryTerms(q, refs, terms, alternatives), translation, seen)

    def _translated(
        self, terms: Mapping[str, float], alternatives: dict[str, tuple[str, ...]]
    ) -> dict[str, tuple[str, ...]]:
        """`alternatives`, plus for an English question's words their Chinese renderings of two
        or more characters (a single character is in every passage): whether a Chinese
        passage holds the question's words in translation. For the relevance gate only; the
        tracks' signals read the words as written."""
        if self.gloss is None:
            return alternatives
        out = dict(alternatives)
        for t in terms:
            if t.isascii():
                renderings = tuple(h for h in self.gloss.word(t) if len(h) >= 2)
                out[t] = (*out.get(t, ()), *renderings)
        return out

    def _gloss_rank(self, q: str, ranked: Sequence[ScoredChunk]) -> _TrackResult:
        """The dense candidates re-ranked by how many of the question's English words they
        say: a word counts when a passage holds it or one of its Chinese renderings (a rare
        rendering more than a common character); ties keep the dense order."""
        assert self.gloss is not None
        words = self.gloss.renderings(q)

        def said(chunk: Chunk) -> float:
            text = (chunk.search_text or chunk.text).lower()
            return sum(
                max(
                    [holds(w, text), *(max(RENDERING_FLOOR, rarity(h)) for h in heads if h in text)]
                )
                for w, heads in words.items()
            )

        scored = [ScoredChunk(s.chunk, said(s.chunk)) for s in ranked]
        return _TrackResult(sorted(scored, key=lambda s: -s.score))

    def _expansions(self, phrases: Sequence[str]) -> dict[str, float]:
        return self.synonyms.expand(phrases) if self.synonyms is not None else {}

    async def _vector(self, q: str) -> list[float]:
        return list(await self.embedder.embed_query(q))

    def _keyword_vector(
        self, q: str, expansions: dict[str, float], namespaces: Sequence[str]
    ) -> SparseVector:
        vector = self.encoder.encode_query(q, expansions)
        if self.common_terms is not None:
            # the largest part read sets them (the shared library: a shelf is small)
            vector = drop_common(vector, self.common_terms(namespaces[0]))
        return vector

    async def _lexical(
        self,
        vector: asyncio.Future[list[float] | None],
        sparse: SparseVector | None,
        base: Filter,
        depth: int,
    ) -> tuple[_TrackResult, _TrackResult]:
        """The dense and the keyword track (either may not run): one store call for both."""
        dense = await vector
        if dense is None:
            if sparse is None or not sparse.indices:
                return _TrackResult(), _TrackResult()
            return _TrackResult(), _TrackResult(
                await self.store.search_sparse(sparse, flt=base, limit=DEPTH)
            )
        if sparse is None:
            return _TrackResult(await self.store.search_dense(dense, flt=base, limit=depth)), (
                _TrackResult()
            )
        found = await self.store.search_dense_and_sparse(
            DenseAndSparseQuery(dense, sparse, flt=base, dense_limit=depth, sparse_limit=DEPTH)
        )
        return _TrackResult(found[0]), _TrackResult(found[1])

    @staticmethod
    def _walk(
        graph: GraphReader | None, q: str, tokens: Sequence[str]
    ) -> tuple[GraphWalkResult | None, list[str]]:
        """The graph walk from the query's entities (None: nothing to walk from), and what
        `GraphReader.link` named in the whole query."""
        if graph is None:
            return None, []
        # link() names the query's concepts, people, books and its verses' scripture
        # nodes; the walk reaches the concepts grounded in those verses from there.
        # Tokens are linked one by one as well: a long name (a book title such as
        # 神圣的分赐与召会) must not hide the concepts inside it.
        linked = graph.link(q)
        entry = list(dict.fromkeys(linked))
        for token in tokens:
            for node in graph.link(token):
                if node not in entry:
                    entry.append(node)
        return (graph.walk(entry, depth=2) if entry else None), linked

    async def _graph(
        self,
        q: str,
        tokens: Sequence[str],
        refs: tuple[str, ...],
        base: Filter,
        graph: GraphReader | None,
    ) -> _TrackResult:
        citing_filter = base.and_(Filter(equals={"scripture_refs": list(refs)}))

        async def fetch_citing() -> list[Chunk]:
            if not refs:
                return []
            return await self.store.scroll(citing_filter, limit=DEPTH * 4, fields=_RANKING_KEYS)

        # The chunks citing the query's verses do not wait for the walk: asked first, the
        # store reads them while the graph is walked here.
        citing_read = asyncio.ensure_future(fetch_citing())
        await asyncio.sleep(0)
        walk, linked = self._walk(graph, q, tokens)
        walk_scores = dict(walk.chunk_scores) if walk is not None else {}
        paths = list(walk.paths) if walk is not None else []
        entries = list(walk.entries) if walk is not None else []
        top = sorted(walk_scores, key=lambda c: (-walk_scores[c], c))[:DEPTH]
        # Read whole, by point id: most kept chunks come from here.
        walked = (
            await self.store.scroll(base.and_(Filter(ids=frozenset(top))), limit=len(top))
            if top
            else []
        )
        citing = await citing_read
        top_walk = max(walk_scores.values(), default=0.0) or 1.0
        wanted = set(refs)
        score: dict[str, float] = {}
        found: dict[str, Chunk] = {}
        for c in walked:
            found[c.id] = c
            score[c.id] = walk_scores.get(c.id, 0.0) / top_walk
        whole = set(found)
        for c in citing:
            found.setdefault(c.id, c)
            share = len(wanted.intersection(c.scripture_refs)) / len(wanted)
            score[c.id] = score.get(c.id, 0.0) + share
        ranked = sorted(
            found, key=lambda cid: (-score[cid], found[cid].doc_id, found[cid].position)
        )
        kept = ranked[:GRAPH_DEPTH]
        # The citing chunks were read only by what ranks them (a verse of a big book is cited
        # by more than DEPTH * 4 of them; whole payloads for all cost 1.7 ms at 1M): those
        # kept are read whole now, by id.
        partial = frozenset(cid for cid in kept if cid not in whole)
        if partial:
            for c in await self.store.scroll(base.and_(Filter(ids=partial)), limit=len(partial)):
                found[c.id] = c
                whole.add(c.id)
        hits = [ScoredChunk(found[cid], score[cid]) for cid in kept if cid in whole]
        # Paths explain graph hits; with none in this namespace/filter they explain nothing.
        linked_or_none = linked if graph is not None else None
        return _TrackResult(hits, paths if hits else [], entries, linked_or_none)


def _one_or_any(namespaces: Sequence[str]) -> FilterValue:
    """One namespace as itself (the store's condition is then the one it always was), more
    as "any of"."""
    return namespaces[0] if len(namespaces) == 1 else list(namespaces)


async def _nothing() -> None:
    return None


async def _no_track() -> _TrackResult:
    return _TrackResult()


def _stitch(first: str, second: str) -> str | None:
    """`first` + `second` without their shared overlap, when the end of one starts the other."""
    if second in first:
        return first
    if first in second:
        return second
    for size in range(min(len(first), len(second)) - 1, MIN_OVERLAP - 1, -1):
        if first.endswith(second[:size]):
            return first + second[size:]
    return None


def _merge(kept: Hit, other: Hit) -> Hit | None:
    a, b = kept.chunk, other.chunk
    if a.doc_id != b.doc_id or abs(a.position - b.position) > 1:
        return None
    first, second = (a, b) if a.position <= b.position else (b, a)
    text = _stitch(first.text, second.text)
    if text is None:
        return None
    search_text = _stitch(first.search_text, second.search_text) or text
    ranks = dict(kept.ranks)
    for track, rank in other.ranks.items():
        ranks[track] = min(rank, ranks.get(track, rank))
    track_scores = dict(kept.track_scores)
    for track, s in other.track_scores.items():
        track_scores[track] = max(s, track_scores.get(track, s))
    chunk = dataclasses.replace(a, text=text, search_text=search_text)
    return Hit(chunk, max(kept.score, other.score), ranks, track_scores)


def merge_overlapping(hits: Sequence[Hit], limit: int | None = None) -> list[Hit]:
    """Fold hits that are the same passage (same document, same or overlapping adjacent text)
    into the better-ranked one; order is kept. With `limit`, only the first `limit` results
    (what folding into a later one would change is not returned: pairwise over every fused
    candidate this took 1.5 ms a search)."""
    out: list[Hit] = []
    # Only a hit of the same document can fold (`_merge`): each is compared with those alone
    # (every fused candidate against every kept hit was ~0.3 ms a search).
    kept_of: dict[str, list[int]] = {}
    for hit in hits:
        for i in kept_of.get(hit.chunk.doc_id, ()):
            merged = _merge(out[i], hit)
            if merged is not None:
                out[i] = merged
                break
        else:
            if limit is None or len(out) < limit:
                kept_of.setdefault(hit.chunk.doc_id, []).append(len(out))
                out.append(hit)
    return out
