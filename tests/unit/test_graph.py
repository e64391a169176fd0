"""The knowledge graph: seed, provenance, SQLite persistence, linking, walking."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

import aiosqlite
import pytest

from retrieval.graph import (
    DEFAULT_SEED,
    Edge,
    GraphSeedError,
    KnowledgeGraph,
    Node,
    load_seed,
)
from retrieval.graph.walking import DECAY, KIND_WEIGHT, MANY_CHUNKS

DISPENSING = "concept:神圣分赐"
ORGANIC = "concept:有机救恩"
CHURCH = "concept:召会"


@pytest.fixture
async def kg() -> KnowledgeGraph:
    return await KnowledgeGraph.open(None)


def book_contribution(doc: str, chunk: str) -> tuple[list[Node], list[Edge], list[tuple[str, str]]]:
    book = Node(f"book:{doc}", "book", doc)
    shared = Node("concept:试验概念", "concept", "试验概念", ("test concept",))
    edges = [Edge(book.id, shared.id, "阐明"), Edge(shared.id, DISPENSING, "发展自")]
    mentions = [(chunk, book.id), (chunk, shared.id)]
    return [book, shared], edges, mentions


# ---- seed -----------------------------------------------------------------------------------


async def test_seed_is_loaded(kg: KnowledgeGraph) -> None:
    stats = kg.stats()
    assert stats["nodes_concept"] >= 40
    assert stats["edges"] >= 100
    assert stats["documents"] == 0
    assert kg.query.has_edge(DISPENSING, ORGANIC, "发展")
    assert kg.query.has_edge(DISPENSING, "scripture:Eph.1.10", "根基于")
    assert kg.query.has_edge("book:神的经纶", DISPENSING, "阐明")
    assert kg.query.has_edge("person:李常受", ORGANIC, "阐明")
    assert kg.query.has_edge("concept:灵", "concept:生命", "对应")
    for member in ("父", "子", "灵"):
        assert kg.query.has_edge("concept:三一神", f"concept:{member}", "包含")
    assert kg.query.node_label("scripture:Eph.1.10") == "弗1:10"
    assert kg.query.node_label(DISPENSING) == "神圣分赐"
    assert kg.query.node_label("concept:没有") == "没有"
    assert {"神圣分赐", "divine dispensing", "Body of Christ", "李常受"} <= kg.query.terms()
    assert not any(t.startswith("scripture:") for t in kg.query.terms())


def test_the_shipped_seed_is_valid() -> None:
    nodes, edges = load_seed(DEFAULT_SEED)
    kinds = {n.kind for n in nodes}
    assert kinds == {"concept", "person", "book", "topic", "scripture"}
    concepts = [n for n in nodes if n.kind == "concept"]
    assert all(any(a.isascii() for a in n.aliases) for n in concepts), "English alias for each"
    assert {e.relation for e in edges} >= {"发展自", "根基于", "阐明", "发展", "对应", "包含"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "invalid JSON at line 1"),
        ('{"edges": []}', '"nodes" list'),
        ('{"nodes": [{"kind": "idea", "label": "x"}]}', "nodes[0]: kind must be"),
        ('{"nodes": [{"kind": "concept", "label": ""}]}', "label must be a non-empty"),
        ('{"nodes": [{"kind": "concept", "label": "x", "aliases": "y"}]}', "aliases must be"),
        (
            '{"nodes": [{"kind": "concept", "label": "x"}, {"kind": "concept", "label": "x"}]}',
            "duplicate node",
        ),
        (
            '{"nodes": [{"kind": "concept", "label": "x"}], "edges": [["x", "爱", "x"]]}',
            "unknown relation",
        ),
        ('{"nodes": [{"kind": "concept", "label": "x"}], "edges": [["x", "包含"]]}', "edges[0]"),
        (
            '{"nodes": [{"kind": "concept", "label": "x"}], "edges": [["x", "包含", "没有这个"]]}',
            "neither a node",
        ),
        (
            '{"nodes": [{"kind": "concept", "label": "x"}], "edges": [["x", "根基于", "弗7:1"]]}',
            "Ephesians has 6 chapters",
        ),
    ],
)
async def test_malformed_seed_gives_a_clear_error(
    tmp_path: Path, content: str, message: str
) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(content, encoding="utf-8")
    with pytest.raises(GraphSeedError) as info:
        await KnowledgeGraph.open(tmp_path / "g.sqlite3", seed)
    assert message in str(info.value)
    assert str(seed) in str(info.value)


async def test_missing_seed_file(tmp_path: Path) -> None:
    with pytest.raises(GraphSeedError, match="cannot read"):
        await KnowledgeGraph.open(None, tmp_path / "nope.json")


async def test_no_seed_is_an_empty_graph() -> None:
    kg = await KnowledgeGraph.open(None, seed=None)
    assert kg.stats()["nodes"] == 0
    assert kg.query.link("神圣分赐") == []
    assert kg.query.walk(["concept:神圣分赐"]).chunk_scores == {}


# ---- provenance -------------------------------------------------------------------------------


async def test_provenance_shared_node_and_seed(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    seed_picture = await kg.snapshot()
    await kg.add("docA", *book_contribution("docA", "a1"))
    await kg.add("docB", *book_contribution("docB", "b1"))
    # docB also mentions a seed node and re-adds one seed node under its own name
    await kg.add(
        "docB", [Node(DISPENSING, "concept", "神圣分赐", ("dispensing",))], [], [("b1", DISPENSING)]
    )
    assert kg.query.node("concept:试验概念") is not None
    assert kg.stats()["documents"] == 2
    assert kg.query.chunks_for("concept:试验概念") == {"a1", "b1"}

    await kg.delete_document("docA")
    assert kg.query.node("concept:试验概念") is not None  # docB still has it
    assert kg.query.node("book:docA") is None
    assert kg.query.chunks_for("concept:试验概念") == {"b1"}
    assert kg.query.has_edge("concept:试验概念", DISPENSING, "发展自")  # docB's edge

    await kg.delete_document("docB")
    assert kg.query.node("concept:试验概念") is None
    assert kg.query.node(DISPENSING) is not None  # seed nodes never go
    assert await kg.snapshot() == seed_picture
    with pytest.raises(ValueError, match="seed"):
        await kg.delete_document("seed")
    await kg.close()

    async with aiosqlite.connect(tmp_path / "g.sqlite3") as db:
        async with db.execute("SELECT DISTINCT doc_id FROM graph_nodes") as cur:
            assert [r[0] async for r in cur] == ["seed"]
        async with db.execute("SELECT count(*) FROM graph_mentions") as cur:
            assert (await cur.fetchone()) == (0,)


async def test_reopen_from_sqlite_equals_before(tmp_path: Path) -> None:
    db = tmp_path / "data" / "baibao.sqlite3"
    kg = await KnowledgeGraph.open(db)
    await kg.add("docA", *book_contribution("docA", "a1"))
    await kg.add("docB", *book_contribution("docB", "b1"))
    await kg.add("docB", [], [Edge("person:李常受", "book:docB", "著作")], [("b2", ORGANIC)])
    await kg.delete_chunks(["a1"])
    before = await kg.snapshot()
    stats = kg.stats()
    await kg.close()

    again = await KnowledgeGraph.open(db)
    assert await again.snapshot() == before
    assert again.stats() == stats
    await again.close()
    async with await KnowledgeGraph.open(db, seed=None) as stored_seed:
        assert await stored_seed.snapshot() == before  # seed rows come from SQLite too


async def test_a_changed_seed_replaces_the_stored_seed(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite3"
    kg = await KnowledgeGraph.open(db)
    await kg.add("docA", *book_contribution("docA", "a1"))
    await kg.close()
    seed = tmp_path / "seed.json"
    seed.write_text(
        json.dumps(
            {
                "nodes": [
                    {"kind": "concept", "label": "神圣分赐"},
                    {"kind": "concept", "label": "新概念"},
                ],
                "edges": [["新概念", "根基于", "弗1:3-4"]],
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    kg = await KnowledgeGraph.open(db, seed)
    assert kg.query.node("concept:新概念") is not None
    assert kg.query.node(ORGANIC) is None
    assert kg.query.concepts_for_scripture("Eph.1.4") == ["新概念"]
    assert kg.query.node("concept:试验概念") is not None  # documents untouched
    assert kg.query.has_edge("concept:试验概念", DISPENSING, "发展自")
    await kg.close()


async def test_add_validates_and_writes_nothing_on_error(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    before = await kg.snapshot()
    with pytest.raises(ValueError, match="unknown relation"):
        await kg.add(
            "d", [Node("concept:x", "concept", "x")], [Edge("concept:x", DISPENSING, "爱")], []
        )
    with pytest.raises(ValueError, match="no node"):
        await kg.add("d", [], [Edge("concept:nowhere", DISPENSING, "包含")], [])
    with pytest.raises(ValueError, match="unknown kind"):
        await kg.add("d", [Node("idea:x", "idea", "x")], [], [])
    with pytest.raises(ValueError):
        await kg.add("seed", [], [], [])
    assert await kg.snapshot() == before
    await kg.close()
    again = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    assert await again.snapshot() == before
    await again.close()


async def test_edge_to_a_node_that_goes_away_is_hidden_until_it_returns(kg: KnowledgeGraph) -> None:
    await kg.add("docA", [Node("concept:甲", "concept", "甲")], [], [])
    await kg.add(
        "docB",
        [Node("concept:乙", "concept", "乙")],
        [Edge("concept:乙", "concept:甲", "对应")],
        [],
    )
    await kg.delete_document("docA")
    assert kg.query.node("concept:甲") is None
    assert kg.query.node("concept:甲") is None
    await kg.add("docA", [Node("concept:甲", "concept", "甲")], [], [])
    assert kg.query.has_edge("concept:乙", "concept:甲", "对应")


@dataclass(frozen=True, slots=True)
class OtherNode:
    """A node type without aliases, as another module might define it."""

    id: str
    kind: str
    label: str


async def test_accepts_structurally_similar_nodes(kg: KnowledgeGraph) -> None:
    await kg.add("d", [OtherNode("book:x", "book", "某书")], [], [("c1", "book:x")])
    assert kg.query.node_label("book:x") == "某书"
    assert kg.query.chunks_for("book:x") == {"c1"}


async def test_delete_chunks(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    await kg.add("docA", *book_contribution("docA", "a1"))
    await kg.add("docA", [], [], [("a2", DISPENSING), ("a2", ORGANIC)])
    assert kg.stats()["chunks"] == 2
    await kg.delete_chunks(["a2", "unknown"])
    assert kg.query.chunks_for(DISPENSING) == set()
    assert kg.query.chunks_for("book:docA") == {"a1"}
    assert kg.stats()["chunks"] == 1
    assert kg.query.node("book:docA") is not None  # nodes belong to documents, not chunks
    await kg.close()
    again = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    assert again.query.chunks_for(ORGANIC) == set()
    assert again.query.chunks_for("book:docA") == {"a1"}
    await again.close()


# ---- linking --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("神圣分赐与有机救恩有什么关系？", [DISPENSING, ORGANIC]),
        ("神聖分賜與有機救恩有什麼關係？", [DISPENSING, ORGANIC]),
        (
            "What does Witness Lee say about the divine dispensing and organic salvation?",
            ["person:李常受", DISPENSING, ORGANIC],
        ),
        ("THE BODY OF CHRIST and the New Jerusalem", ["concept:基督的身体", "concept:新耶路撒冷"]),
        ("灵与生命", ["concept:灵", "concept:生命"]),
        ("三一神是父、子、灵", ["concept:三一神", "concept:父", "concept:子", "concept:灵"]),
        ("召会的生命是什么", ["concept:召会的生命"]),  # longest name wins over 召会 / 生命
        ("《神的经纶》怎样讲经纶？", ["book:神的经纶", "concept:经纶"]),
        ("心灵和灵魂，父母与子女", []),  # one-character names inside words do not count
        ("lifelong churches", []),  # English names are whole words
        ("弗1:10讲什么？", ["scripture:Eph.1.10"]),
        ("Eph. 1:10 and the economy", ["concept:经纶", "scripture:Eph.1.10"]),
        ("", []),
    ],
)
def test_link(kg: KnowledgeGraph, question: str, expected: list[str]) -> None:
    assert kg.query.link(question) == expected


async def test_link_scripture_chapter_nodes(kg: KnowledgeGraph) -> None:
    await kg.add("d", [Node("scripture:Ps.23", "scripture", "Ps.23")], [], [])
    assert kg.query.link("诗23:1") == ["scripture:Ps.23"]
    assert kg.query.link("诗篇二十三篇") == ["scripture:Ps.23"]


async def test_link_sees_new_document_nodes(kg: KnowledgeGraph) -> None:
    await kg.add("docA", *book_contribution("docA", "a1"))
    assert kg.query.link("关于试验概念") == ["concept:试验概念"]
    assert kg.query.link("a Test Concept here") == ["concept:试验概念"]
    assert "试验概念" in kg.query.terms()
    await kg.delete_document("docA")
    assert kg.query.link("关于试验概念") == []


# ---- walking ----------------------------------------------------------------------------------


async def test_walk_finds_a_two_hop_path_and_scores_chunks(kg: KnowledgeGraph) -> None:
    await kg.add(
        "doc",
        [],
        [],
        [
            ("c-entry", DISPENSING),
            ("c-1hop", ORGANIC),
            ("c-2hop", "concept:重生"),
            ("c-far", "concept:新耶路撒冷"),
            ("c-both", ORGANIC),
            ("c-both", DISPENSING),
        ],
    )
    walk = kg.query.walk([DISPENSING], depth=2)
    s = walk.chunk_scores
    assert s["c-both"] > s["c-entry"] > s["c-1hop"] > s["c-2hop"]
    assert "c-far" not in s
    assert any(p.labels[0] == "神圣分赐" and len(p.nodes) == 3 for p in walk.paths)
    assert next(iter(walk.nodes)) == DISPENSING


async def test_walk_between_two_entries(kg: KnowledgeGraph) -> None:
    await kg.add("doc", [], [], [("c-mid", "concept:召会的生命"), ("c-side", "concept:神的家")])
    walk = kg.query.walk(kg.query.link("神圣分赐和召会"))
    assert walk.paths[0].labels == ("神圣分赐", "有机救恩", "召会的生命", "召会")
    assert walk.paths[0].render() == "神圣分赐 —发展→ 有机救恩 —发展→ 召会的生命 —发展→ 召会"
    # a node on the path between both entries outranks a neighbour of one entry
    assert walk.chunk_scores["c-mid"] > walk.chunk_scores["c-side"]
    shared = kg.query.walk(["concept:灵", "concept:生命树"])  # both next to 生命
    top = next(iter(shared.nodes))
    assert top == "concept:生命"


async def test_walk_prefers_the_passage_naming_the_entry_over_a_long_survey(
    kg: KnowledgeGraph,
) -> None:
    # An outline/reading-list chunk mentions many neighbours of the entry once each; summing
    # them used to outrank the passage about the entry itself.
    near = [ORGANIC, "concept:经纶", "concept:基督测不透的丰富", "scripture:Eph.1.10"]
    far = ["concept:重生", "concept:变化", "concept:圣别", "concept:更新", "concept:荣化"]
    await kg.add(
        "doc",
        [],
        [],
        [("c-survey", n) for n in near + far] + [("c-entry", DISPENSING)],
    )
    s = kg.query.walk([DISPENSING], depth=2).chunk_scores
    assert s["c-entry"] > s["c-survey"]
    # with two entries, the chunk naming both beats the one naming one of them
    await kg.add(
        "doc2", [], [], [("c-one", DISPENSING), ("c-two", DISPENSING), ("c-two", "concept:召会")]
    )
    both = kg.query.walk([DISPENSING, "concept:召会"]).chunk_scores
    assert both["c-two"] > both["c-one"]


def test_walk_ignores_unknown_entries(kg: KnowledgeGraph) -> None:
    walk = kg.query.walk(["concept:不存在"])
    assert walk.chunk_scores == {} and walk.paths == [] and walk.nodes == {}


async def test_walk_does_not_flood_through_hubs(kg: KnowledgeGraph) -> None:
    books = [Node(f"book:b{i}", "book", f"书{i}") for i in range(100)]
    edges = [Edge("person:李常受", b.id, "著作") for b in books]
    mentions = [(f"c{i}", f"book:b{i}") for i in range(100)]
    await kg.add("many", books, edges, mentions)
    walk = kg.query.walk([ORGANIC], depth=2, limit=50)
    assert not any(c.startswith("c") and c[1:].isdigit() for c in walk.chunk_scores)
    assert len(kg.query.walk(["person:李常受"], limit=50).chunk_scores) == 50


async def test_walk_scores_big_nodes_as_documented(kg: KnowledgeGraph) -> None:
    """Nodes mentioned by more than MANY_CHUNKS chunks give their gain only to the chunks
    already scored and to `limit` more of their own: pinned against a plain reading of
    `Walker._chunk_scores`'s docstring, on mentions drawn with a printed seed."""
    seed = 20261204
    print("seed", seed)
    rng = random.Random(seed)
    names = [f"c{i:05d}" for i in range(1200)]  # added in this order: numbered in name order
    sizes = {ORGANIC: 700, CHURCH: 450, DISPENSING: 320, "concept:重生": 40, "concept:变化": 9}
    mentioned = {node: sorted(rng.sample(names, k)) for node, k in sizes.items()}
    pairs = sorted((c, node) for node, chunks in mentioned.items() for c in chunks)
    await kg.add("doc", [], [], pairs)
    limit = 40
    walk = kg.query.walk([DISPENSING, CHURCH], depth=2, limit=limit)

    gains: dict[str, list[float]] = {}
    for node in sorted(walk.nodes, key=lambda n: (len(mentioned.get(n, ())), n)):
        chunks = mentioned.get(node, [])
        if len(chunks) > MANY_CHUNKS:
            chunks = [c for c in chunks if c in gains] + [c for c in chunks if c not in gains][
                :limit
            ]
        kind = kg.query.node_kind(node) or ""
        damp = 1 / (1 + math.log1p(len(mentioned.get(node, ()))) / 4)
        for c in chunks:
            gains.setdefault(c, []).append(walk.nodes[node] * KIND_WEIGHT.get(kind, 0.5) * damp)
    expected = {}
    for c, got in gains.items():
        total = sum(g * DECAY**k for k, g in enumerate(sorted(got, reverse=True)))
        named = sum(c in mentioned[e] for e in walk.entries)
        expected[c] = total * (1 + named / len(walk.entries))
    best = sorted(expected, key=lambda c: (-expected[c], c))[:limit]
    assert list(walk.chunk_scores) == best
    assert walk.chunk_scores == pytest.approx({c: expected[c] for c in best}, rel=1e-9)


# ---- scripture --------------------------------------------------------------------------------


async def test_concepts_for_scripture(kg: KnowledgeGraph) -> None:
    assert set(kg.query.concepts_for_scripture("Eph.1.10")) == {"神圣分赐", "经纶"}
    assert kg.query.concepts_for_scripture("Eph.3.17") == ["内住的基督", "神圣分赐"]
    assert kg.query.concepts_for_scripture("Gen.1.1") == []
    assert "经纶" in kg.query.concepts_for_scripture("Eph.1.9-Eph.1.11")
    await kg.add(
        "d",
        [Node("scripture:Eph.2", "scripture", "Eph.2")],
        [Edge("concept:一个新人", "scripture:Eph.2", "根基于")],
        [],
    )
    assert "一个新人" in kg.query.concepts_for_scripture("Eph.2.1")
