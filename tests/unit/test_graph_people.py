"""People and topics in the graph, the generic-word rule and X的Y terms (issue 24), on original
sample text with real jieba, OpenCC and the seed; era inferred from the year."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.manifest import DocMeta, Manifest, infer_era
from ingest.pipeline import build_document, prepare_document
from retrieval.graph import KnowledgeGraph
from retrieval.graph.linking import TermIndex
from retrieval.graph.model import Node
from retrieval.graph.people import heading_label, named_persons, person_relations, topics
from retrieval.types import Chunk

DATA = Path(__file__).parent.parent / "data"
WARFARE = DATA / "message-warfare.md"
TITLE = "属灵的争战（测试）"


def chunks_of(path: Path, title: str, doc_type: str = "message") -> list[Chunk]:
    meta = DocMeta(title=title, type=doc_type)  # type: ignore[arg-type]
    return build_document(path, meta, max_bytes=10**7, tagger=lambda _: ()).chunks


@pytest.fixture
async def grown() -> KnowledgeGraph:
    kg = await KnowledgeGraph.open(None)
    await kg.index_document("doc-w", chunks_of(WARFARE, TITLE))
    return kg


async def test_seed_persons_link_by_every_alias_and_not_inside_a_book_name() -> None:
    kg = await KnowledgeGraph.open(None)
    for text in ("保罗说", "保羅說", "the apostle Paul wrote", "Paul"):
        assert "person:保罗" in kg.query.link(text), text
    assert kg.query.link("约翰看见圣城") == ["person:约翰"]
    assert "person:约翰" not in kg.query.link("约翰福音说")  # the book, not the man
    assert "person:路得" not in kg.query.link("路得记")
    assert "person:彼得" not in kg.query.link("彼得前书")
    assert (
        kg.query.node_kind("topic:得胜") == "topic" and kg.query.node_kind("topic:国度") == "topic"
    )
    assert kg.query.has_edge("topic:国度", "concept:神的国", "包含")
    await kg.close()


async def test_a_person_expounds_the_concepts_his_passages_discuss(grown: KnowledgeGraph) -> None:
    assert grown.query.has_edge("person:保罗", "concept:争战的兵器", "阐明")
    assert grown.query.edge_sources("person:保罗", "concept:争战的兵器", "阐明") == (TITLE,)
    assert grown.query.has_edge("person:保罗", "concept:经纶", "阐明")  # the seed's stays
    # 撒母耳 is in no dictionary: jieba tags it a name, and it stands before 说 / 对 / 看见
    assert grown.query.node_kind("person:撒母耳") == "person"
    assert grown.query.node("concept:撒母耳") is None  # a person's name is no concept
    assert grown.query.has_edge("person:撒母耳", "concept:争战的兵器", "阐明")
    await grown.delete_document("doc-w")
    assert grown.query.node("person:撒母耳") is None
    assert not grown.query.has_edge("person:保罗", "concept:争战的兵器", "阐明")
    await grown.close()


async def test_sections_become_topics_of_the_concepts_they_treat(grown: KnowledgeGraph) -> None:
    topic = "topic:撒母耳的祷告"
    assert grown.query.node_kind(topic) == "topic"
    assert grown.query.has_edge(f"book:{TITLE}", topic, "包含")
    assert grown.query.has_edge(topic, "concept:争战的兵器", "包含")
    assert len(grown.query.chunks_for(topic)) == 1
    # a heading that names a concept (一　争战的兵器) makes no second node
    assert grown.query.node("topic:争战的兵器") is None
    await grown.close()


OUTLINE = """牧养与喂养（测试）
壹　牧养的职分
一、牧养的职分出于神的心——约二一15
二、牧养的职分在于喂养群羊——约二一16
贰　喂养的供应
一、喂养的供应是基督的话
二、喂养的供应使群羊长大
"""


async def test_an_outline_title_is_a_topic_over_its_points(tmp_path: Path) -> None:
    path = tmp_path / "o.txt"
    path.write_text(OUTLINE, encoding="utf-8")
    kg = await KnowledgeGraph.open(None)
    await kg.index_document("doc-o", chunks_of(path, "牧养与喂养（测试）", "outline"))
    assert kg.query.node_kind("topic:牧养与喂养（测试）") == "topic"
    # its points name concepts (grown here): the title topic 包含 them
    assert kg.query.has_edge("topic:牧养与喂养（测试）", "concept:喂养的供应", "包含")
    await kg.close()


async def test_generic_language_does_not_grow_and_x_de_y_grows_whole(
    grown: KnowledgeGraph,
) -> None:
    # 原文 recurs, but once a passage: spread thin, it is the text's language, not a subject
    assert grown.query.node("concept:原文") is None
    # 争战的兵器 (争战 is a verb to jieba) is one term; its head noun alone is not
    assert grown.query.node_kind("concept:争战的兵器") == "concept"
    assert grown.query.node("concept:兵器") is None
    await grown.close()


def test_heading_labels_lose_their_numbering_and_junk_makes_none() -> None:
    assert heading_label("贰　保罗的职事") == "保罗的职事"
    assert heading_label("第三章　禾场上的夜晚") == "禾场上的夜晚"
    assert heading_label("（二）托付的来源") == "托付的来源"
    assert heading_label("1.2 The Body of Christ") == "The Body of Christ"
    for junk in ("", "   ", "一、", "第三章", "结语", "12345", "灵" * 300, "\x00\x01"):
        assert heading_label(junk) is None, junk
    # a section numbered by 段 / 回 / 讲 / 部分 (pandoc's "## 第一段"): the number is no topic,
    # and a path 「拿俄米 —阐明→ 伯利恒 ←包含— 第一段」 says nothing
    for numbered in ("第一段", "第十二回", "第三讲", "第一部分"):
        assert heading_label(numbered) is None, numbered
    assert heading_label("第二段　拿俄米回乡") == "拿俄米回乡"


class Sink:
    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.edges: dict[tuple[str, str, str], float] = {}

    def node(self, node: Node) -> str:
        self.nodes.setdefault(node.id, node)
        return node.id

    def edge(self, src: str, relation: str, dst: str, weight: float = 1.0) -> None:
        self.edges[(src, relation, dst)] = weight


def chunk(text: str, *, chunk_id: str = "c1", chapter: str = "", language: str = "zh") -> Chunk:
    return Chunk(
        id=chunk_id,
        text=text,
        search_text=text,
        source="测试",
        type="message",
        chapter=chapter,
        language=language,  # type: ignore[arg-type]
        doc_id="d",
    )


@pytest.mark.parametrize(
    "text",
    ["", "说说说对对", "保罗", "\x00\ufffd" * 50, "Paul said to them that " * 20, "撒母耳" * 400],
)
def test_malformed_text_makes_no_person_and_no_error(text: str) -> None:
    sink = Sink()
    cut = lambda s: [(s, "x")] if s else []  # noqa: E731 — one token: no name before a cue
    found = named_persons(
        [chunk(text), chunk(text, language="en")], TermIndex({}), cut, lambda _: False, str, sink
    )
    assert found == {} and sink.nodes == {}


def test_relations_and_topics_of_odd_input() -> None:
    sink = Sink()
    person_relations({"c1": [], "c2": ["person:甲", "person:甲"]}, {"c9": ["concept:乙"]}, sink)
    assert sink.edges == {}
    person_relations({"c1": ["person:甲"]}, {"c1": ["concept:乙", "topic:丙"]}, sink)
    assert sink.edges == {("person:甲", "阐明", "concept:乙"): 1.0}  # topics are no concepts
    odd = [chunk("正文", chapter=h, chunk_id=f"c{i}") for i, h in enumerate(["", " > ", "一"])]
    assert topics(odd, TermIndex({}), {}, sink) == {}


@pytest.mark.parametrize(
    ("year", "era"),
    [(1984, "1980s"), (1990, "1990s"), (2001, "2000s"), (None, None), (-5, None), (99999, None)],
)
def test_era_is_the_decade_of_the_year(year: int | None, era: str | None) -> None:
    assert infer_era(year) == era


def test_a_document_with_a_year_and_no_era_gets_its_decade(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    path.write_text("# 测试信息\n\n这是一段测试用的文字，讲到召会的生活。\n", encoding="utf-8")
    given = Manifest({}, DocMeta(year=1984)).for_path(path)
    assert prepare_document(path, given, max_bytes=10**6).meta.era == "1980s"
    built = build_document(path, given, max_bytes=10**6, tagger=lambda _: ())
    assert built.record.era == "1980s" and {c.era for c in built.chunks} == {"1980s"}
    stated = DocMeta(year=1984, era="sample-1980s")
    assert prepare_document(path, stated, max_bytes=10**6).meta.era == "sample-1980s"
    assert prepare_document(path, DocMeta(), max_bytes=10**6).meta.era is None
