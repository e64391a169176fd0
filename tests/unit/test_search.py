"""HybridSearch over Qdrant Edge (rankings come from the real store, ties and all), the in-process
HashEmbedder and a real SQLite Indexer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from retrieval.fakes import HashEmbedder
from retrieval.graph import KnowledgeGraph
from retrieval.index import DocumentRecord, Indexer
from retrieval.keyword import Bm25Encoder
from retrieval.search import Candidates, HybridSearch, _TrackResult, merge_overlapping
from retrieval.store.edge import EdgeStore
from retrieval.synonyms import SynonymTable
from retrieval.text import search_form
from retrieval.types import Chunk, Filter, Hit, ScoredChunk, chunk_id, content_hash

DIM = 64


DOCS: dict[str, tuple[str, list[tuple[str, tuple[str, ...]]]]] = {
    "zh1": ("调和信息", [("神与人的调和是神圣生命的目标。", ()), ("晨光里的山岗很安静。", ())]),
    "en1": (
        "Mingling",
        [("The mingling of divinity with humanity is a wonderful matter.", ())],
    ),
    "zh2": ("经纶信息", [("神永远的计划，要在基督里将万有归一。", ("Eph.1.10",))]),
    "zh3": ("分赐信息", [("神圣分赐是三一神将自己分赐到人里面，作人的享受。", ())]),
}


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[HybridSearch, Indexer, KnowledgeGraph]]:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    embedder = HashEmbedder(DIM)
    encoder = Bm25Encoder(avgdl=12)
    graph = await KnowledgeGraph.open(None)  # in memory, with the bundled seed
    try:
        async with Indexer(tmp_path / "db.sqlite3", store, embedder, encoder, graph) as ix:
            for doc_id, (source, paras) in DOCS.items():
                chunks = []
                for pos, (text, refs) in enumerate(paras):
                    st = search_form(text)
                    chunks.append(
                        Chunk(
                            id=chunk_id("corpus", doc_id, pos, content_hash(st)),
                            text=text,
                            search_text=st,
                            doc_id=doc_id,
                            source=source,
                            type="message",
                            position=pos,
                            language="en" if doc_id.startswith("en") else "zh",
                            scripture_refs=refs,
                        )
                    )
                doc = DocumentRecord(doc_id, source, content_hash(repr(paras)))
                await ix.replace_document(doc, chunks)
            search = HybridSearch(store, embedder, encoder, graph.query, SynonymTable.load())
            yield search, ix, graph
    finally:
        await store.close()


async def test_synonyms_reach_the_other_language(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, _, _ = env
    result = await search.search("什么是调和？", tracks=("keyword",))
    assert result.expansions["mingling"] == pytest.approx(0.5)
    sources = [h.chunk.source for h in result.hits]
    assert sources[0] == "调和信息"
    assert "Mingling" in sources
    en = next(h for h in result.hits if h.chunk.source == "Mingling")
    assert set(en.ranks) == {"keyword"} and en.track_scores["keyword"] > 0


async def test_every_track_reports_rank_and_score(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, _, _ = env
    result = await search.search("神圣分赐")
    top = result.hits[0]
    assert top.chunk.source == "分赐信息"
    assert set(top.ranks) == {"dense", "graph", "keyword"}
    assert set(top.track_scores) == set(top.ranks)
    assert result.graph_paths and result.graph_paths[0].labels[0] == "神圣分赐"
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert len(result.hits) <= 6


async def test_scripture_in_query_boosts_citing_chunks(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, _, _ = env
    result = await search.search("以弗所书一章十节", tracks=("graph",))
    assert result.refs == ("Eph.1.10",)
    assert [h.chunk.source for h in result.hits][:2] == ["经纶信息", "分赐信息"]
    assert result.hits[0].ranks == {"graph": 1}


async def test_chunks_citing_the_verse_come_whole_whoever_wrote_them(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    """The graph track ranks the chunks citing a verse by a few payload keys and reads the kept
    ones whole by point id, so a point the Indexer did not write (no `x_gen`) comes
    whole as well."""
    from retrieval.types import IndexedChunk, SparseVector

    search, _, _ = env
    result = await search.search("弗1:10", tracks=("graph",))
    assert result.hits and all(h.chunk.text and h.chunk.source for h in result.hits)
    before = {h.chunk.id for h in result.hits}
    # A point written to the store directly has no Indexer keys.
    text = "万有在基督里归一，是神永远的经纶。"
    outsider = Chunk(
        id=chunk_id("corpus", "zz-direct", 0, content_hash(text)),
        text=text,
        search_text=text,
        doc_id="zz-direct",
        source="直接写入",
        type="message",
        scripture_refs=("Eph.1.10",),
    )
    vector = await search.embedder.embed_query(text)
    await search.store.upsert([IndexedChunk(outsider, vector, SparseVector((1,), (1.0,)))])
    result = await search.search("弗1:10", tracks=("graph",))
    hit = next(h for h in result.hits if h.chunk.id == outsider.id)
    assert (hit.chunk.text, hit.chunk.source) == (text, "直接写入")
    assert all(h.chunk.text and h.chunk.source for h in result.hits)
    # the chunks the walk reached are kept beside it (the corpus has fewer than GRAPH_DEPTH)
    assert {h.chunk.id for h in result.hits} == before | {outsider.id}


async def test_filters_apply_to_every_track(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, _, _ = env
    result = await search.search("神圣分赐 调和", flt=Filter(equals={"language": "en"}))
    assert result.hits and {h.chunk.source for h in result.hits} == {"Mingling"}
    novel = await search.search("神圣分赐", namespace="novel:1")
    assert novel.hits == [] and novel.graph_paths == []


async def test_deleted_document_never_returned(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, ix, _ = env
    assert await ix.delete_document("分赐信息") is not None
    for tracks in [("dense",), ("keyword",), ("graph",), ("dense", "graph", "keyword")]:
        result = await search.search("神圣分赐 弗1:10", tracks=tracks, limit=20)  # type: ignore[arg-type]
        assert result.hits, tracks  # the other documents still answer
        assert all(h.chunk.doc_id != "zh3" for h in result.hits)


async def test_zero_weight_and_empty_query(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, _, _ = env
    search.weights["graph"] = 0.0
    result = await search.search("神圣分赐")
    assert result.hits and all("graph" not in h.ranks for h in result.hits)
    assert (await search.search("   ")).hits == []


def _hit(doc: str, pos: int, text: str, ranks: dict[str, int], score: float) -> Hit:
    chunk = Chunk(
        id=f"{doc}-{pos}",
        text=text,
        search_text=text,
        doc_id=doc,
        source=doc,
        type="book",
        position=pos,
    )
    return Hit(chunk, score, ranks, dict.fromkeys(ranks, score))


def test_merge_overlapping_adjacent_chunks() -> None:
    shared = "这一段是两块之间重叠的文字，长度超过二十个字符以便识别。"
    a = _hit("d", 3, "开头的话。" + shared, {"dense": 1}, 0.9)
    b = _hit("d", 4, shared + "结尾的话。", {"keyword": 2}, 0.5)
    c = _hit("e", 4, shared + "结尾的话。", {"graph": 1}, 0.4)
    d = _hit("d", 3, "开头的话。" + shared, {"graph": 3}, 0.3)
    merged = merge_overlapping([a, b, c, d])
    assert [h.chunk.doc_id for h in merged] == ["d", "e"]
    assert merged[0].chunk.text == "开头的话。" + shared + "结尾的话。"
    assert merged[0].ranks == {"dense": 1, "keyword": 2, "graph": 3}
    assert merged[0].chunk.id == "d-3" and merged[0].score == 0.9
    far = _hit("d", 9, shared + "结尾的话。", {"dense": 2}, 0.2)
    assert len(merge_overlapping([a, far])) == 2


def test_merge_overlapping_with_a_limit_is_the_head_of_the_full_merge() -> None:
    shared = "这一段是两块之间重叠的文字，长度超过二十个字符以便识别。"
    hits = [
        _hit("d", 3, "开头的话。" + shared, {"dense": 1}, 0.9),
        _hit("e", 1, "别的书。", {"dense": 2}, 0.8),
        _hit("f", 7, shared + "另一段。", {"keyword": 1}, 0.7),
        _hit("f", 8, "另一段的下文。", {"keyword": 2}, 0.6),
        _hit("d", 4, shared + "结尾的话。", {"graph": 1}, 0.5),  # folds into the first, late
        _hit("f", 6, "前文" + shared, {"graph": 2}, 0.4),  # folds into one past the limit
    ]
    for limit in range(1, 6):
        assert merge_overlapping(hits, limit) == merge_overlapping(hits)[:limit]
    assert merge_overlapping(hits, 2)[0].chunk.text == "开头的话。" + shared + "结尾的话。"


async def test_keyword_track_matches_cited_verses(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    search, _, _ = env
    result = await search.search("弗1:10", tracks=("keyword",))
    assert [h.chunk.source for h in result.hits] == ["经纶信息"]
    assert "Eph.1.10" not in result.expansions


def _scored(doc: str, text: str, score: float) -> ScoredChunk:
    chunk = Chunk(id=f"{doc}-0", text=text, search_text=text, doc_id=doc, source=doc, type="bible")
    return ScoredChunk(chunk, score)


async def test_an_english_question_answered_in_chinese_text_is_fused_by_its_dense_track(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    """The dev set's failure (bench/results/fusion.md): the keyword track's English hits,
    which share only LORD / name with the question, pushed the gold Chinese verses out."""
    search, _, _ = env
    query = "Some trust in chariots, and some in horses: but we will remember the name of the LORD"
    verses = [
        _scored(f"v{i}", f"有人靠车，有人靠马，但我们要提到耶和华我们神的名。{i}", 0.9)
        for i in range(5)
    ]
    english = [
        _scored(f"m{i}", f"The name of the LORD is a strong tower; trust in the LORD. {i}", 9.0)
        for i in range(5)
    ]
    per_track = {
        "dense": _TrackResult(verses),
        "keyword": _TrackResult(english),
        "graph": _TrackResult(english[:3]),
    }
    evidence = search._evidence(search_form(query), (), per_track)
    assert evidence.cross_script and evidence.keyword_signal >= 0.4  # a signal by its words
    weights = search.track_weights(evidence)
    assert weights["keyword"] == pytest.approx(0.3 * search.weights["keyword"])
    found = Candidates(search_form(query), (), {}, per_track, evidence)
    top = [h.chunk.doc_id for h in search.fuse(found, limit=5).hits]
    assert top == [f"v{i}" for i in range(5)]
    # The same question with an English passage among the nearest: the tracks keep their say.
    per_track["dense"] = _TrackResult([english[0], *verses[:4]])
    assert not search._evidence(search_form(query), (), per_track).cross_script


class FilterSpy:
    """The store, recording the filter of every read."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.filters: list[object] = []

    async def search_dense_and_sparse(self, query: object) -> object:
        self.filters.append(query.flt)  # type: ignore[attr-defined]
        return await self.inner.search_dense_and_sparse(query)  # type: ignore[attr-defined]

    async def scroll(self, flt: object = None, **kw: object) -> object:
        self.filters.append(flt)
        return await self.inner.scroll(flt, **kw)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_reading_only_the_shared_library_asks_the_store_what_it_always_did(
    env: tuple[HybridSearch, Indexer, KnowledgeGraph],
) -> None:
    """With no shelves, a chat's reading is the shared library alone: the store gets the one
    namespace condition it always got (the Edge process's single-namespace fast path drops
    exactly that), and the graph is the whole graph; with a shelf, "any of" the two."""
    from retrieval.library import Reading

    search, indexer, _ = env
    spy = FilterSpy(search.store)
    search.store = spy  # type: ignore[assignment]
    query = "神圣分赐 弗1:10"
    await search.search(query)
    before = list(spy.filters)
    spy.filters.clear()
    assert indexer.reading("shelf:telegram:-1") == Reading(
        ("corpus",), frozenset(), "shelf:telegram:-1"
    )
    await search.search(query, reading=indexer.reading("shelf:telegram:-1"))
    assert spy.filters == before
    assert all(f.equals["namespace"] == "corpus" for f in before)  # type: ignore[attr-defined]
    assert await search.graph_for(indexer.reading()) is search.graph
    spy.filters.clear()
    await search.search(query, reading=Reading(("corpus", "shelf:x"), frozenset(), "shelf:x"))
    assert all(f.equals["namespace"] == ["corpus", "shelf:x"] for f in spy.filters)  # type: ignore[attr-defined]
