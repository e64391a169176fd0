"""Indexer against a real Qdrant Edge shard and SQLite in tmp_path."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from retrieval.fakes import HashEmbedder
from retrieval.graph import (
    GraphQueries,
    KnowledgeGraph,
    book_node_id,
    person_node_id,
    scripture_node_id,
)
from retrieval.index import DocumentRecord, Indexer, VerseRow
from retrieval.keyword import Bm25Encoder
from retrieval.store.edge import EdgeStore
from retrieval.text import search_form
from retrieval.types import (
    Chunk,
    Filter,
    IndexedChunk,
    SparseVector,
    chunk_id,
    content_hash,
)

DIM = 32


class CountingEmbedder(HashEmbedder):
    """A HashEmbedder that counts the passages it embeds."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.passages = 0

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.passages += len(texts)
        return await super().embed_passages(texts)


class FlakyGraph:
    """Delegates to a real KnowledgeGraph; `index_document` raises while `fail_add` is set
    (a crash)."""

    def __init__(self, inner: KnowledgeGraph) -> None:
        self.inner = inner
        self.fail_add = False

    async def index_document(self, doc_id: str, chunks: Sequence[Chunk]) -> int:
        if self.fail_add:
            raise RuntimeError("simulated crash in graph.index_document")
        return await self.inner.index_document(doc_id, chunks)

    async def delete_document(self, doc_id: str) -> None:
        await self.inner.delete_document(doc_id)

    @property
    def query(self) -> GraphQueries:
        return self.inner.query

    def book_chunks(self, source: str) -> set[str]:
        return self.inner.query.chunks_for(book_node_id(source))


class CrashingStore:
    """Delegates to a real store; its first delete raises (a crash mid-replace)."""

    def __init__(self, inner: EdgeStore) -> None:
        self.inner = inner
        self.armed = True

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def delete(self, flt: Filter) -> None:
        if self.armed:
            self.armed = False
            raise RuntimeError("simulated crash before deleting the old generation")
        await self.inner.delete(flt)


def make_doc(
    doc_id: str, paragraphs: list[str], **kw: object
) -> tuple[DocumentRecord, list[Chunk]]:
    source = str(kw.pop("source", f"书 {doc_id}"))
    chunks = []
    for pos, para in enumerate(paragraphs):
        st = search_form(para)
        chunks.append(
            Chunk(
                id=chunk_id("corpus", doc_id, pos, content_hash(st)),
                text=para,
                search_text=st,
                doc_id=doc_id,
                source=source,
                type="message",
                position=pos,
                author="作者甲",
                scripture_refs=("Eph.1.10",) if "经纶" in para else (),
            )
        )
    doc = DocumentRecord(
        doc_id=doc_id,
        source=source,
        content_hash=content_hash("\n".join(paragraphs)),
        author="作者甲",
        **kw,  # type: ignore[arg-type]
    )
    return doc, chunks


OLD = [
    "神圣分赐乃是为着经纶，将神自己分赐到人里面。",
    "橄榄山上的晨光照亮旧版本。",
    "第三段讲召会生活。",
]
NEW = ["神圣分赐乃是为着经纶，将神自己分赐到人里面。", "葡萄园里的新酒说到新版本。"]


@pytest.fixture
async def env(
    tmp_path: Path,
) -> AsyncIterator[tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph]]:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    embedder = CountingEmbedder(DIM)
    db = tmp_path / "db.sqlite3"
    async with await KnowledgeGraph.open(db) as kg:
        graph = FlakyGraph(kg)
        async with Indexer(db, store, embedder, Bm25Encoder(), graph) as ix:
            yield ix, store, embedder, graph
    await store.close()


async def _keyword_ids(ix: Indexer, store: EdgeStore, query: str) -> list[str]:
    hits = await store.search_sparse(ix.encoder.encode_query(query), limit=10)
    return [h.chunk.doc_id + ":" + h.chunk.text for h in hits]


async def test_add_then_unchanged_without_embedding(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    ix, store, embedder, graph = env
    doc, chunks = make_doc("d1", OLD)
    progress: list[tuple[int, int]] = []
    report = await ix.replace_document(doc, chunks, progress=lambda d, t: progress.append((d, t)))
    assert report.status == "added" and report.chunks == 3 and report.refs == 1
    assert report.concepts == 3  # seed concepts: 神圣分赐 and 经纶 (1st), 召会 (3rd paragraph)
    assert progress[0] == (0, 3) and progress[-1] == (3, 3)
    assert embedder.passages == 3
    assert await store.count(Filter(equals={"doc_id": "d1"})) == 3

    again = await ix.replace_document(doc, chunks)
    assert again.status == "unchanged"
    assert embedder.passages == 3

    [record] = await ix.documents()
    assert record.doc_id == "d1" and record.chunk_count == 3 and record.ingested_at
    stored = await store.scroll(Filter(equals={"doc_id": "d1"}))
    assert len(stored) == 3 and {c.extra["gen"] for c in stored} == {1}
    assert all("cid" not in c.extra for c in stored)  # the graph reads points by id
    assert graph.book_chunks("书 d1") == {c.id for c in stored}
    first = next(c.id for c in stored if c.position == 0)
    assert first in graph.inner.query.chunks_for(scripture_node_id("Eph.1.10"))
    assert graph.inner.query.node_kind(person_node_id("作者甲")) == "person"
    assert any(
        first in graph.inner.query.chunks_for(n)
        for n in graph.query.link("经纶")
        if n.startswith("concept:")
    )


async def test_replace_leaves_no_stale_chunk(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    ix, store, _, graph = env
    await ix.replace_document(*make_doc("d1", OLD))
    assert await _keyword_ids(ix, store, "橄榄山") == ["d1:" + OLD[1]]

    report = await ix.replace_document(*make_doc("d1", NEW))
    assert report.status == "replaced" and report.chunks == 2
    assert await _keyword_ids(ix, store, "橄榄山") == []
    assert await _keyword_ids(ix, store, "葡萄园") == ["d1:" + NEW[1]]
    stored = await store.scroll(Filter(equals={"doc_id": "d1"}))
    assert sorted(c.text for c in stored) == sorted(NEW)
    assert {c.extra["gen"] for c in stored} == {2}
    assert graph.book_chunks("书 d1") == {c.id for c in stored}
    assert (await ix.documents())[0].chunk_count == 2


async def test_delete_by_source_removes_everything(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    ix, store, _, graph = env
    await ix.replace_document(*make_doc("d1", OLD, source="经纶信息"))
    await ix.replace_document(*make_doc("d2", NEW))
    record = await ix.delete_document("经纶信息")
    assert record is not None and record.doc_id == "d1"
    assert await store.count(Filter(equals={"doc_id": "d1"})) == 0
    assert graph.book_chunks("经纶信息") == set()
    assert graph.inner.query.node_kind(book_node_id("经纶信息")) is None
    assert graph.book_chunks("书 d2")
    assert [d.doc_id for d in await ix.documents()] == ["d2"]
    remaining = await _keyword_ids(ix, store, "经纶 橄榄山 召会生活")
    assert remaining and all(t.startswith("d2:") for t in remaining)
    assert await ix.delete_document("经纶信息") is None


async def test_reconcile_after_crash_before_delete(tmp_path: Path) -> None:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    crashing = CrashingStore(store)
    graph = await KnowledgeGraph.open(None)
    async with Indexer(
        tmp_path / "db.sqlite3", crashing, HashEmbedder(DIM), Bm25Encoder(), graph
    ) as ix:  # type: ignore[arg-type]
        crashing.armed = False
        await ix.replace_document(*make_doc("d1", OLD))
        crashing.armed = True
        with pytest.raises(RuntimeError, match="simulated crash"):
            await ix.replace_document(*make_doc("d1", NEW))
        # both generations are in the store; the registry already records the new one
        assert await store.count(Filter(equals={"doc_id": "d1"})) == 5
        report = await ix.reconcile()
        assert report.points_deleted == 3
        stored = await store.scroll(Filter(equals={"doc_id": "d1"}))
        assert sorted(c.text for c in stored) == sorted(NEW)
        assert {c.extra["gen"] for c in stored} == {2}
        # the new version is complete: re-running the same ingest is a no-op
        assert (await ix.replace_document(*make_doc("d1", NEW))).status == "unchanged"
        assert sorted(c.text for c in await store.scroll()) == sorted(NEW)
        assert (await ix.reconcile()).points_deleted == 0
    await store.close()


async def test_reconcile_rebuilds_lagging_graph_and_drops_unregistered(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    ix, store, _, graph = env
    await ix.replace_document(*make_doc("d1", OLD))
    old_chunks = graph.book_chunks("书 d1")
    graph.fail_add = True
    with pytest.raises(RuntimeError, match=r"graph\.index_document"):
        await ix.replace_document(*make_doc("d1", NEW))
    graph.fail_add = False
    # The graph's replace is one transaction: the crash left the old contribution whole.
    assert old_chunks and graph.book_chunks("书 d1") == old_chunks
    # a brand-new document whose registry row was never written
    _, orphan_chunks = make_doc("d9", ["孤儿段落"])
    await ix._upsert(ix._stamp(orphan_chunks, make_doc("d9", ["孤儿段落"])[0], 1), None)
    report = await ix.reconcile()
    assert report.graphs_rebuilt == 1 and report.points_deleted == 1
    stored = await store.scroll()
    assert sorted(c.text for c in stored) == sorted(NEW)
    assert graph.book_chunks("书 d1") == {c.id for c in stored}


async def test_embed_false_and_verses(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    ix, store, embedder, _ = env
    doc, chunks = make_doc("bible-ps", ["耶和华是我的牧者。"], type="bible")
    report = await ix.replace_document(doc, chunks, embed=False)
    assert report.status == "added" and embedder.passages == 0
    assert await store.count() == 0
    assert not await ix.has_bible()
    await ix.put_verses(
        [
            VerseRow("cuv", "Ps.23.1", "Ps", 23, 1, "原创测试经文一。"),
            VerseRow("cuv", "Ps.23.2", "Ps", 23, 2, "原创测试经文二。"),
        ],
        doc_id="bible-ps",
    )
    assert await ix.has_bible()
    assert [v.osis for v in await ix.verses(["Ps.23.2"])] == ["Ps.23.2"]
    assert [v.verse for v in await ix.verses(["Ps.23", "Ps.23.1"])] == [1, 2]
    assert await ix.delete_document("bible-ps") is not None
    assert not await ix.has_bible()
    assert (await ix.reconcile()).points_deleted == 0


async def test_source_names_are_the_documents_titles_and_eras(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    ix, _, _, _ = env
    await ix.replace_document(*make_doc("d1", OLD, source="乙书", era="lee"))
    await ix.replace_document(*make_doc("d2", NEW, source="甲书", era="nee"))
    await ix.replace_document(*make_doc("d3", NEW[:1], source="甲书"))
    bible = DocumentRecord("cuv:Eph", "以弗所书", "h", type="bible")
    await ix.replace_document(bible, [], embed=False)
    records = await ix.documents()
    names = await ix.source_names()
    assert names.titles == tuple(sorted({r.source for r in records if r.type != "bible"}))
    assert names.eras == tuple(sorted({r.era for r in records if r.era})) == ("lee", "nee")
    assert names.titles == ("乙书", "甲书")


async def test_reconcile_counts_before_it_filters(
    env: tuple[Indexer, EdgeStore, CountingEmbedder, FlakyGraph],
) -> None:
    """A consistent store is left alone; an orphan point is still found and deleted."""
    ix, store, _, _ = env
    await ix.replace_document(*make_doc("d1", OLD))
    assert (await ix.reconcile()).points_deleted == 0
    _, chunks = make_doc("ghost", NEW)
    orphan = dataclasses.replace(chunks[0], namespace="corpus", extra={"gen": 1})
    await store.upsert([IndexedChunk(orphan, [0.1] * DIM, SparseVector((1,), (1.0,)))])
    assert (await ix.reconcile()).points_deleted == 1
    assert await store.count(Filter(equals={"doc_id": "ghost"})) == 0
