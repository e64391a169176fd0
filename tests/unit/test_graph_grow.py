"""Growing the graph from ingested documents: concepts, aliases, structure, provenance; the
typed walk and its paths. Real jieba, OpenCC, synonym table and SQLite."""

from __future__ import annotations

from pathlib import Path

import aiosqlite
import pytest

from ingest.manifest import DocMeta
from ingest.pipeline import build_document
from retrieval.graph import KnowledgeGraph, Node
from retrieval.graph.model import Edge
from retrieval.types import Chunk

DATA = Path(__file__).parent.parent / "data"
TABERNACLE = "concept:帐幕"
CHURCH = "concept:召会"


def chunks_of(path: Path, title: str, doc_type: str = "message", **meta: object) -> list[Chunk]:
    built = build_document(
        path,
        DocMeta(title=title, type=doc_type, **meta),  # type: ignore[arg-type]
        max_bytes=10**7,
        tagger=lambda _: (),
    )
    return built.chunks


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


async def test_a_document_grows_a_concept_and_deleting_it_removes_exactly_that(
    tmp_path: Path,
) -> None:
    db = tmp_path / "g.sqlite3"
    kg = await KnowledgeGraph.open(db)
    before = await kg.snapshot()
    assert kg.query.node(TABERNACLE) is None
    chunks = chunks_of(DATA / "message-tabernacle.md", "帐幕与召会", author="作者甲")
    doc = chunks[0].doc_id
    mentions = await kg.index_document(doc, chunks)
    assert mentions > 0
    assert kg.query.node_kind(TABERNACLE) == "concept"
    assert "帳幕" in kg.query.node(TABERNACLE).aliases  # OpenCC: the Traditional form
    assert kg.query.chunks_for(TABERNACLE) <= {c.id for c in chunks}
    assert len(kg.query.chunks_for(TABERNACLE)) >= 3
    # the book treats it at length; its author develops it; it meets 召会 in the sections
    assert kg.query.has_edge("book:帐幕与召会", TABERNACLE, "阐明")
    assert kg.query.has_edge("person:作者甲", TABERNACLE, "发展")
    assert kg.query.has_edge(CHURCH, TABERNACLE, "相关") or kg.query.has_edge(
        TABERNACLE, CHURCH, "相关"
    )
    assert kg.query.link("帐幕是什么？") == [TABERNACLE]
    # the path names the relation and its source document
    walk = kg.query.walk(kg.query.link("帐幕和召会是什么关系？"))
    path = walk.paths[0]
    assert set(path.nodes) == {TABERNACLE, CHURCH}
    assert path.render() in ("帐幕 —相关— 召会", "召会 —相关— 帐幕")
    assert path.steps[0].sources == ("帐幕与召会",)
    assert "church" in path.render("en")
    await kg.close()

    again = await KnowledgeGraph.open(db)
    assert again.query.node(TABERNACLE) is not None
    await again.delete_document(doc)
    assert again.query.node(TABERNACLE) is None
    assert await again.snapshot() == before
    await again.close()
    async with aiosqlite.connect(db) as conn:
        for table in ("graph_nodes", "graph_edges", "graph_mentions", "graph_terms"):
            async with conn.execute(f"SELECT count(*) FROM {table} WHERE doc_id = ?", (doc,)) as c:
                assert (await c.fetchone()) == (0,)


async def test_a_second_document_sharing_the_concept_keeps_it(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(None)
    first = chunks_of(DATA / "message-tabernacle.md", "帐幕甲")
    second = chunks_of(DATA / "message-tabernacle.md", "帐幕乙")
    await kg.index_document("doc-a", first)
    await kg.index_document("doc-b", second)
    await kg.delete_document("doc-a")
    assert kg.query.node(TABERNACLE) is not None
    await kg.delete_document("doc-b")
    assert kg.query.node(TABERNACLE) is None


OUTLINE = """灯台的见证
壹　灯台是神的见证
一、灯台包括灯盏与金油——亚四2
（一）灯盏发展自灯台的枝子
（二）金油是灯台发光的供应
二、金油是那灵的供应——亚四6
三、灯盏盛满金油，灯盏就发光
贰　众灯台与金油
一、灯台表征召会
二、金油使灯台发光
"""


async def test_outline_hierarchy_and_sentences_give_typed_relations(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(None)
    chunks = chunks_of(write(tmp_path, "o.txt", OUTLINE), "灯台的见证", "outline")
    await kg.index_document("doc-o", chunks)
    assert all(kg.query.node(n) for n in ("concept:灯台", "concept:灯盏", "concept:金油"))
    assert kg.query.has_edge("concept:灯台", "concept:灯盏", "包含")  # "灯台包括灯盏与金油"
    assert kg.query.has_edge("concept:灯台", "concept:金油", "包含")
    assert kg.query.has_edge("concept:灯盏", "concept:灯台", "发展自")  # the sub-point says so


FOOTNOTES = """# 撒迦利亚书注解（测试）

## 亚4:2

> 他问我说：「你看见了什么？」我说：「我看见了一个纯金的灯台，顶上有灯盏，灯台上有七盏灯，每盏有七个管子。

注1　金灯台是神的见证。金灯台的金表征神圣的性情；金灯台发光，是因为里面有金油。

## 亚4:6

> 他对我说：「这是耶和华指示所罗巴伯的。万军之耶和华说：不是倚靠势力，不是倚靠才能，乃是倚靠我的灵方能成事。」

注1　金油是灵的供应。金灯台不是靠自己发光，乃是靠金油的供应；金油一断，金灯台就暗了。
"""


async def test_a_footnote_grounds_its_concepts_in_its_verse(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(None)
    chunks = chunks_of(write(tmp_path, "f.md", FOOTNOTES), "撒迦利亚书注解（测试）", "footnote")
    await kg.index_document("doc-f", chunks)
    assert kg.query.has_edge("concept:金灯台", "scripture:Zech.4.2", "根基于")
    assert "金灯台" in kg.query.concepts_for_scripture("Zech.4.2")


async def test_a_synonym_of_an_existing_node_becomes_its_alias(tmp_path: Path) -> None:
    # 生机的救恩 is a seed alias of 有机救恩 already; 有机的救恩 (的-insensitive) and the
    # synonym table's terms map onto existing nodes instead of growing duplicates.
    text = "# 一　救恩\n\n" + "有机的救恩是生命的过程。" * 4
    kg = await KnowledgeGraph.open(None)
    await kg.index_document("doc-s", chunks_of(write(tmp_path, "s.md", text), "救恩"))
    assert kg.query.node("concept:有机的救恩") is None
    assert "有机的救恩" in kg.query.node("concept:有机救恩").aliases
    await kg.delete_document("doc-s")
    assert "有机的救恩" not in kg.query.node("concept:有机救恩").aliases


async def test_the_seed_wins_a_conflicting_edge() -> None:
    kg = await KnowledgeGraph.open(None)
    assert kg.query.has_edge("concept:有机救恩", "concept:重生", "包含")
    # a document claims the opposite between the same two concepts, and a new pair
    await kg.add(
        "doc",
        [Node("concept:新甲", "concept", "新甲")],
        [
            Edge("concept:重生", "concept:有机救恩", "包含"),
            Edge("concept:新甲", "concept:重生", "相关", 0.5),
        ],
        [],
    )
    assert not kg.query.has_edge("concept:重生", "concept:有机救恩", "包含")  # hidden
    assert kg.query.has_edge("concept:有机救恩", "concept:重生", "包含")
    weights = {(e.src, e.dst, e.relation): e.weight for e in kg.query.relations("concept:新甲")}
    assert weights["concept:新甲", "concept:重生", "相关"] == pytest.approx(0.5)


async def test_the_walk_follows_direction_and_renders_english() -> None:
    kg = await KnowledgeGraph.open(None)
    # 有机救恩 包含 重生: from the whole, the part is near; from the part, the whole is further
    down = kg.query.walk(["concept:有机救恩"]).nodes["concept:重生"]
    up = kg.query.walk(["concept:重生"]).nodes["concept:有机救恩"]
    assert down > up
    walk = kg.query.walk(kg.query.link("神圣分赐和召会"))
    assert walk.paths[0].render("en") == (
        "divine dispensing —develops→ organic salvation —develops→ church life —develops→ church"
    )
    assert walk.entries == ["concept:神圣分赐", "concept:召会"]
    # walking up a 包含 edge shows the arrow against the reading direction
    part = kg.query.walk(["concept:重生", "concept:变化"])
    assert part.paths[0].render() == "重生 ←包含— 有机救恩 —包含→ 变化"


async def test_growth_off_keeps_to_the_curated_graph() -> None:
    kg = await KnowledgeGraph.open(None, growth=False)
    chunks = chunks_of(DATA / "message-tabernacle.md", "帐幕与召会")
    await kg.index_document("doc", chunks)
    assert kg.query.node(TABERNACLE) is None
    assert kg.query.node("book:帐幕与召会") is not None
    assert kg.query.chunks_for(CHURCH)  # existing concepts are still linked to the chunks


async def test_a_concept_without_an_english_alias_is_named_by_the_dictionary() -> None:
    kg = await KnowledgeGraph.open(None)
    chunks = chunks_of(DATA / "message-tabernacle.md", "帐幕与召会")
    await kg.index_document(chunks[0].doc_id, chunks)
    assert not any(str(a).isascii() for a in kg.query.node(TABERNACLE).aliases)
    assert kg.query.label(TABERNACLE, "en") == "tent"  # CC-CEDICT: 帐幕 /tent/
    path = kg.query.walk(kg.query.link("帐幕和召会是什么关系？")).paths[0]
    assert path.render("en") in ("tent —is related to— church", "church —is related to— tent")
    # No gloss: the Chinese term stays (never an empty label); an English alias still wins.
    await kg.add(
        "doc-x",
        [
            Node("concept:甲乙丙丁", "concept", "甲乙丙丁"),
            Node("concept:会幕", "concept", "会幕", ("Tent of Meeting",)),
            Node("book:帐幕之书", "book", "帐幕之书"),
        ],
        [],
        [],
    )
    assert kg.query.label("concept:甲乙丙丁", "en") == "甲乙丙丁"
    assert kg.query.label("concept:会幕", "en") == "Tent of Meeting"
    assert kg.query.label("book:帐幕之书", "en") == "帐幕之书"  # a title is not translated
    await kg.close()


def test_a_reference_asked_again_is_answered_as_the_first_time() -> None:
    """`_is_reference` keeps its answers (candidate terms are asked ~200 times a chunk): the
    kept answer is the parser's, for references and for terms alike."""
    from retrieval.graph import grow

    probes = ["参罗八", "彼前四", "林后", "以弗所", "约三16", "罗马书八章", "召会", "神圣的分赐"]
    probes += ["约翰", "启示录", "弗一10", "生命", "参", "创世记一"]
    grow._is_reference.cache_clear()
    first = [grow._is_reference(p) for p in probes]
    again = [grow._is_reference(p) for p in probes]
    assert first == again == [grow._is_reference.__wrapped__(p) for p in probes]
    assert first[:3] == [True] * 3 and not first[6] and not first[7]
    # 以弗所 alone is the city (a candidate term); with 书 it is the book.
    assert not first[3] and grow._is_reference("以弗所书")
