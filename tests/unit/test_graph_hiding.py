"""The graph as one reader sees it (`retrieval.graph.hiding`, `KnowledgeGraph.seen_without`):
what only hidden documents contributed is gone — their nodes, their edges, their titles among
an edge's sources — and what another document contributes too stays; the same whether the
graph holds every document's rows in memory or reads from its snapshot (asking SQLite)."""

from __future__ import annotations

from pathlib import Path

from retrieval.graph import Edge, KnowledgeGraph, Node

SHARED, SHELF = "doc-shared", "shelf:telegram:-1/doc-s"


async def build(graph: KnowledgeGraph) -> None:
    await graph.add(
        SHARED,
        [Node("concept:灯台", "concept", "灯台"), Node("concept:帐幕", "concept", "帐幕")],
        [Edge("concept:灯台", "concept:帐幕", "相关")],
        [("c1", "concept:灯台")],
        title="共享之书",
    )
    await graph.add(
        SHELF,
        [
            Node("concept:紫檀灯台", "concept", "紫檀灯台"),
            Node("concept:灯台", "concept", "灯台"),
            Node("concept:帐幕", "concept", "帐幕"),
        ],
        [
            Edge("concept:紫檀灯台", "concept:灯台", "包含"),
            Edge("concept:灯台", "concept:帐幕", "相关"),  # the shared book has it too
        ],
        [("c2", "concept:紫檀灯台")],
        title="甲组之书",
    )


def seen(view: object) -> tuple[object, ...]:
    from retrieval.graph.queries import GraphQueries

    assert isinstance(view, GraphQueries)
    return (
        view.node("concept:紫檀灯台"),
        view.link("紫檀灯台与灯台"),
        sorted((e.src, e.dst, e.relation) for e in view.relations("concept:灯台")),
        view.edge_sources("concept:灯台", "concept:帐幕", "相关"),
        sorted(view.walk(["concept:帐幕"]).nodes),
    )


async def test_a_reader_does_not_see_what_only_a_hidden_document_grew(tmp_path: Path) -> None:
    db = tmp_path / "baibao.sqlite3"
    graph = await KnowledgeGraph.open(db)
    await build(graph)
    whole = graph.query
    assert whole.node("concept:紫檀灯台") is not None
    view = await graph.seen_without(frozenset({SHELF}))
    node, linked, relations, sources, walked = seen(view)
    assert node is None
    assert "concept:紫檀灯台" not in linked and "concept:灯台" in linked  # 灯台 still links
    assert relations == [("concept:灯台", "concept:帐幕", "相关")]
    assert sources == ("共享之书",)  # the hidden book is never named
    assert "concept:紫檀灯台" not in walked
    assert await graph.seen_without(frozenset({SHELF})) is view  # kept while nothing changes
    assert await graph.seen_without(frozenset()) is whole
    in_memory = seen(view)
    await graph.close()

    reopened = await KnowledgeGraph.open(db)  # from its snapshot: the rows are asked
    assert not reopened.loaded_rows
    assert seen(await reopened.seen_without(frozenset({SHELF}))) == in_memory
    await reopened.close()


async def test_a_change_to_the_graph_builds_the_view_again(tmp_path: Path) -> None:
    graph = await KnowledgeGraph.open(None)
    await build(graph)
    view = await graph.seen_without(frozenset({SHELF}))
    await graph.delete_document(SHARED)  # now only the shelf's book relates 灯台 and 帐幕
    again = await graph.seen_without(frozenset({SHELF}))
    assert again is not view
    assert again.relations("concept:灯台") == [] and again.node("concept:灯台") is None
    await graph.close()
