"""The graph opened from its snapshot (lazily: each document's rows load before the first
write) reads exactly what the graph loaded from its rows reads: the same walks, links,
labels, relations and sources, before and after writes. Real SQLite, jieba, OpenCC."""

from __future__ import annotations

import gc
import itertools
from pathlib import Path
from typing import Any

import pytest

from ingest.manifest import DocMeta
from ingest.pipeline import build_document
from retrieval.graph import DEFAULT_SEED, KnowledgeGraph, Node
from retrieval.graph.model import Edge, book_node_id, person_node_id, scripture_node_id
from retrieval.graph.storage import snapshot

DATA = Path(__file__).parent.parent / "data"
QUESTIONS = (
    "帐幕与召会有什么关系？",
    "神圣分赐与有机救恩",
    "What is the divine dispensing?",
    "弗1:10说什么？",
    "基督的身体与召会",
    "三一神如何分赐？",
)


def grown_chunks(title: str) -> list[Any]:
    meta = DocMeta(title=title, type="message", author="作者甲")
    built = build_document(
        DATA / "message-tabernacle.md", meta, max_bytes=10**7, tagger=lambda _: ()
    )
    return built.chunks


async def build_library(db: Path) -> None:
    """Documents grown from text, hand-made rows, an edge the seed outranks, a node that goes
    and comes back, a deleted document and deleted chunks: every way the rows change."""
    kg = await KnowledgeGraph.open(db)
    await kg.index_document("doc-t1", grown_chunks("帐幕与召会"))
    await kg.index_document("doc-t2", grown_chunks("帐幕乙"))
    await kg.add(
        "doc-a",
        [
            Node("concept:试验甲", "concept", "试验甲", ("trial a",)),
            Node("book:甲书", "book", "甲书"),
        ],
        [
            Edge("book:甲书", "concept:试验甲", "阐明"),
            Edge("concept:试验甲", "concept:神圣分赐", "相关", 0.4),
            # the seed relates these two: a document's edge between them stays hidden
            Edge("concept:有机救恩", "concept:重生", "相关", 0.9),
        ],
        [
            ("a1", "concept:试验甲"),
            ("a2", "concept:神圣分赐"),
            ("a1", scripture_node_id("Eph.1.10")),
        ],
        title="甲书",
    )
    await kg.add(
        "doc-b",
        [
            Node("concept:试验乙", "concept", "试验乙"),
            Node(person_node_id("作者乙"), "person", "作者乙"),
        ],
        [
            Edge(person_node_id("作者乙"), "concept:试验乙", "发展"),
            Edge("concept:试验乙", "concept:试验甲", "包含"),
        ],
        [("b1", "concept:试验乙"), ("b1", "concept:神圣分赐"), ("b2", book_node_id("甲书"))],
        title="乙书",
    )
    await kg.add(
        "doc-c", [Node("concept:试验丙", "concept", "试验丙")], [], [("c1", "concept:试验丙")]
    )
    await kg.delete_document("doc-c")
    await kg.add(
        "doc-c", [Node("concept:试验丙", "concept", "试验丙")], [], [("c2", "concept:试验丙")]
    )
    await kg.delete_chunks(["b2"])
    await kg.delete_document("doc-t2")
    await kg.close()


def picture(kg: KnowledgeGraph) -> dict[str, Any]:
    """Everything a reader can ask the graph, over every node and question."""
    named = {n for ids in kg.query.term_index().terms.values() for n in ids}
    nodes = sorted({n for q in QUESTIONS for n in kg.query.link(q)} | named)
    walks = {}
    for entry in [*((n,) for n in nodes), *itertools.combinations(nodes[:12], 2)]:
        walk = kg.query.walk(list(entry), depth=2)
        walks[entry] = (
            list(walk.chunk_scores.items()),
            [p.to_json() for p in walk.paths],
            list(walk.nodes.items()),
            walk.entries,
        )
    return {
        "walks": walks,
        "links": {q: kg.query.link(q) for q in QUESTIONS},
        "labels": {
            n: (kg.query.label(n), kg.query.label(n, "en"), kg.query.node(n)) for n in nodes
        },
        "relations": {n: kg.query.relations(n) for n in nodes},
        "sources": {
            (e.src, e.dst, e.relation): kg.query.edge_sources(e.src, e.dst, e.relation)
            for n in nodes
            for e in kg.query.relations(n)
        },
        "chunks": {n: kg.query.chunks_for(n) for n in nodes},
        "scripture": kg.query.concepts_for_scripture("Eph.1.10"),
        "stats": kg.stats(),
        "terms": kg.query.terms(),
        "seed_terms": kg.seed_terms(),
    }


async def open_both(
    db: Path, seed: Path | None = DEFAULT_SEED
) -> tuple[KnowledgeGraph, KnowledgeGraph]:
    lazy = await KnowledgeGraph.open(db, seed)
    eager = await KnowledgeGraph.open(db, seed, from_snapshot=False)
    return lazy, eager


async def test_the_lazy_graph_walks_as_the_eager_one(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite3"
    await build_library(db)
    assert snapshot.path_for(db).exists()  # written when the writing graph closed
    lazy, eager = await open_both(db)
    try:
        assert not lazy.loaded_rows and eager.loaded_rows
        assert picture(lazy) == picture(eager)
        # both write the same: the lazy one loads the rows first, and they still agree
        for kg in (lazy, eager):
            await kg.add(
                "doc-d",
                [Node("concept:试验丁", "concept", "试验丁")],
                [Edge("concept:试验丁", "concept:试验乙", "发展自")],
                [("d1", "concept:试验丁"), ("d1", "concept:帐幕")],
                title="丁书",
            )
            await kg.delete_document("doc-b")
        assert lazy.loaded_rows
        assert picture(lazy) == picture(eager)
        assert await lazy.snapshot() == await eager.snapshot()
    finally:
        await lazy.close()
        await eager.close()
    # the snapshot the writers left is current again: a third open reads it and agrees
    again, fresh = await open_both(db)
    try:
        assert not again.loaded_rows
        assert picture(again) == picture(fresh)
    finally:
        await again.close()
        await fresh.close()


async def test_a_query_taken_before_the_first_write_reads_the_write(tmp_path: Path) -> None:
    """Search and /graph keep the `GraphQueries` they were given at start-up: when a lazy graph
    loads its rows to write, that object reads the rows from then on."""
    db = tmp_path / "g.sqlite3"
    await build_library(db)
    kg = await KnowledgeGraph.open(db)
    try:
        query = kg.query
        assert not kg.loaded_rows and query.node("concept:试验己") is None
        await kg.add(
            "doc-f",
            [Node("concept:试验己", "concept", "试验己")],
            [Edge("concept:试验己", "concept:试验甲", "相关", 0.5)],
            [("f1", "concept:试验己")],
        )
        assert kg.loaded_rows and kg.query is query
        assert query.node("concept:试验己") == Node("concept:试验己", "concept", "试验己")
        assert query.relations("concept:试验己") == [
            Edge("concept:试验己", "concept:试验甲", "相关", 0.5)
        ]
        assert query.chunks_for("concept:试验己") == {"f1"} and query.mentioned("f1")
    finally:
        await kg.close()


async def test_a_stale_or_broken_snapshot_is_not_read(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite3"
    await build_library(db)
    path = snapshot.path_for(db)
    old = path.read_bytes()
    kg = await KnowledgeGraph.open(db)
    await kg.add(
        "doc-e", [Node("concept:试验戊", "concept", "试验戊")], [], [("e1", "concept:试验戊")]
    )
    # killed before closing: the snapshot on disk names an older generation of the rows
    path.write_bytes(old)
    stale = await KnowledgeGraph.open(db)
    assert stale.loaded_rows and stale.query.node("concept:试验戊") is not None
    await stale.close()
    await kg.close()
    path.write_bytes(b"not a snapshot")
    broken = await KnowledgeGraph.open(db)
    assert broken.loaded_rows and broken.query.node("concept:试验戊") is not None
    await broken.close()
    again = await KnowledgeGraph.open(db)
    assert not again.loaded_rows  # the snapshot was rewritten by the load
    await again.close()


async def test_a_snapshot_that_cannot_be_written_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import shutil

    db = tmp_path / "data" / "g.sqlite3"
    db.parent.mkdir()
    kg = await KnowledgeGraph.open(db)
    await kg.add(
        "doc-e", [Node("concept:试验戊", "concept", "试验戊")], [], [("e1", "concept:试验戊")]
    )
    shutil.rmtree(db.parent)  # the data directory removed under a running bot
    await kg.close()  # the snapshot is a cache of the rows: its write fails without an error
    assert "the graph's snapshot was not written" in caplog.text
    assert not db.parent.exists()


async def test_a_changed_seed_is_written_through_a_lazy_graph(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite3"
    await build_library(db)
    seed = tmp_path / "seed.json"
    seed.write_text(
        '{"nodes": [{"id": "concept:唯一", "kind": "concept", "label": "唯一"}], "edges": []}',
        encoding="utf-8",
    )
    kg = await KnowledgeGraph.open(db, seed)
    assert kg.loaded_rows  # the seed differs: its rows were written
    assert kg.seed_terms() == {"唯一"}
    await kg.close()
    lazy, eager = await open_both(db, None)  # as stored: the new seed
    try:
        assert picture(lazy) == picture(eager)
    finally:
        await lazy.close()
        await eager.close()


@pytest.mark.parametrize("bad", [b"", b"PK\x03\x04 truncated"])
def test_load_refuses_what_is_not_a_snapshot(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "x.graph.npz"
    path.write_bytes(bad)
    assert snapshot.load(path, 0) is None
    assert snapshot.load(tmp_path / "missing.npz", 0) is None


@pytest.mark.parametrize("collecting", [True, False])
def test_loading_leaves_the_garbage_collector_as_it_found_it(
    tmp_path: Path, collecting: bool
) -> None:
    # the load pauses Python's cyclic collector (one switch for the process): a refused file
    # and a missing one included, whatever it was before, it is so again after
    path = tmp_path / "x.graph.npz"
    path.write_bytes(b"PK\x03\x04 truncated")
    was = gc.isenabled()
    try:
        (gc.enable if collecting else gc.disable)()
        assert snapshot.load(path, 0) is None
        assert snapshot.load(tmp_path / "missing.npz", 0) is None
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()
