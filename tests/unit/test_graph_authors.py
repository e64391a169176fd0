"""Authors are not concepts, people named throughout a document, terms named whole (issue 43,
item 5): real jieba, OpenCC, the seed, SQLite-free in-memory graphs, python-docx files and the
bundled sample corpus (original texts)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import docx
import pytest

from bench.eval_author_paths import grown as grown_samples
from ingest.manifest import DocMeta
from ingest.pipeline import build_document, prepare_document
from retrieval.graph import KnowledgeGraph
from retrieval.graph.view import GraphViewer, PhraseView
from retrieval.library import Reading
from retrieval.producers import is_producer, usable_author
from retrieval.types import Chunk

DATA = Path(__file__).parent.parent / "data"


def chunks_of(path: Path, meta: DocMeta) -> list[Chunk]:
    return build_document(path, meta, max_bytes=10**7, tagger=lambda _: ()).chunks


def message(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- producers are never authors ----------------------------------------------------------------

PRODUCERS = [
    "python-docx",
    "pandoc",
    "LibreOffice",
    "LibreOffice 7.4.7.2",
    "Microsoft Office Word",
    "Microsoft® Word 2016",
    "Microsoft Office User",
    "WeasyPrint",
    "WeasyPrint 62.3",
    "Typst",
    "typst 0.12.0",
    "LaTeX",
    "LaTeX with hyperref",
    "pdfTeX-1.40.25",
    "XeTeX",
    "calibre (7.1.0)",
    "Administrator",
    "  ",
]
PEOPLE = [
    "示例作者",
    "Sample Author",
    "Witness Lee",
    "李常受",
    "作者甲",
    "Word Smith",
    "Texas Press",
]


@pytest.mark.parametrize("name", PRODUCERS)
def test_a_producer_or_placeholder_is_no_author(name: str) -> None:
    assert is_producer(name) and usable_author(name) == ""


@pytest.mark.parametrize("name", PEOPLE)
def test_a_person_is_an_author(name: str) -> None:
    assert not is_producer(name) and usable_author(f" {name} ") == name


def _docx(path: Path, author: str | None) -> Path:
    document = docx.Document()  # python-docx signs the file "python-docx"
    if author is not None:
        document.core_properties.author = author
    document.add_heading("祭坛与基督", level=1)
    for _ in range(3):
        document.add_paragraph("祭坛预表基督的十字架；祭坛是人与神相会之处，基督是真祭坛。")
    document.save(str(path))
    return path


async def test_a_python_docx_file_has_no_author_in_sources_or_graph(tmp_path: Path) -> None:
    plain = _docx(tmp_path / "altar.docx", None)
    assert docx.Document(str(plain)).core_properties.author == "python-docx"
    prepared = prepare_document(plain, DocMeta(title="祭坛与基督"), max_bytes=10**7)
    assert prepared.meta.author is None  # what /sources lists comes from here
    chunks = chunks_of(plain, DocMeta(title="祭坛与基督"))
    assert chunks and all(c.author == "" for c in chunks)
    kg = await KnowledgeGraph.open(None)
    await kg.index_document(chunks[0].doc_id, chunks)
    assert kg.query.node("person:python-docx") is None
    assert not [n for n in kg.query.node_ids("person") if is_producer(kg.query.node_label(n))]
    # a person the file names as its author stays one
    signed = _docx(tmp_path / "signed.docx", "作者丙")
    assert prepare_document(signed, DocMeta(), max_bytes=10**7).meta.author == "作者丙"
    await kg.close()


async def test_chunks_stored_with_a_producer_author_grow_no_author_node() -> None:
    """A store ingested before producers were told apart: its chunks still name python-docx."""
    path = DATA / "message-two-sections.md"
    chunks = chunks_of(path, DocMeta(title="两段", author="作者乙"))
    stale = [dataclasses.replace(c, author="python-docx") for c in chunks]
    kg = await KnowledgeGraph.open(None)
    await kg.index_document(stale[0].doc_id, stale)
    assert kg.query.node("person:python-docx") is None
    assert kg.query.node("book:两段") is not None
    await kg.close()


# ---- an author never explains how two concepts relate ---------------------------------------

TABERNACLE = """# 帐幕（测试）

## 一　帐幕

帐幕是神在地上的居所。帐幕有外院、圣所与至圣所；帐幕预表基督，也预表召会。帐幕的中心是约柜。

帐幕随着百姓在旷野行走。帐幕所在之处，就是神与人同住之处；帐幕的建造照着山上的样式。
"""
VINE = """# 葡萄树（测试）

## 一　葡萄树

葡萄树与枝子是生命的联结。葡萄树的汁浆流进枝子；葡萄树结果子，是藉着枝子。

枝子离了葡萄树就不能结果子。葡萄树是基督，枝子是信徒；葡萄树的生命在枝子里长大。
"""


async def test_an_author_is_never_the_middle_of_a_path(tmp_path: Path) -> None:
    kg = await KnowledgeGraph.open(None)
    for name, text, title in (
        ("t.md", TABERNACLE, "帐幕（测试）"),
        ("v.md", VINE, "葡萄树（测试）"),
    ):
        chunks = chunks_of(message(tmp_path, name, text), DocMeta(title=title, author="作者丁"))
        await kg.index_document(chunks[0].doc_id, chunks)
    q = kg.query
    # the author develops both (the relation a path could have walked) …
    assert q.has_edge("person:作者丁", "concept:帐幕", "发展")
    assert q.has_edge("person:作者丁", "concept:葡萄树", "发展")
    # … and only he joins them: no path between them goes through him
    walk = q.walk(["concept:帐幕", "concept:葡萄树"])
    assert all("person:作者丁" not in p.nodes for p in walk.paths), [p.render() for p in walk.paths]
    around = q.walk(["concept:帐幕"])
    assert all("person:作者丁" not in p.nodes for p in around.paths)
    # a question about the author himself still reaches what he developed
    about = q.walk(["person:作者丁"])
    assert about.paths and all(p.nodes[0] == "person:作者丁" for p in about.paths)
    await kg.close()


async def test_a_book_is_never_inside_or_at_the_far_end_of_a_path_shown(tmp_path: Path) -> None:
    """A path through a document (「revelation ←expounds— The Overcomers… —expounds→ christ」)
    says where two concepts are discussed, not how they relate: a walk still passes through
    it, but no path shown goes through it or ends at it."""
    kg = await KnowledgeGraph.open(None)
    for name, text, title in (
        ("t.md", TABERNACLE, "帐幕（测试）"),
        ("v.md", VINE, "葡萄树（测试）"),
    ):
        chunks = chunks_of(message(tmp_path, name, text), DocMeta(title=title))
        await kg.index_document(chunks[0].doc_id, chunks)
    q = kg.query
    books = [n for n in ("book:帐幕（测试）", "book:葡萄树（测试）") if q.node(n) is not None]
    assert books  # the documents are nodes of the graph, joined to their concepts
    for entries in (["concept:帐幕", "concept:葡萄树"], ["concept:帐幕"], ["concept:葡萄树"]):
        walk = q.walk(entries)
        assert all(n not in p.nodes[1:] for p in walk.paths for n in books), [
            p.render() for p in walk.paths
        ]
    await kg.close()


@pytest.fixture
async def samples() -> KnowledgeGraph:
    return await grown_samples()  # the sample corpus, grown as bench/eval_author_paths.py does


async def test_no_path_of_the_sample_corpus_goes_through_its_author(
    samples: KnowledgeGraph,
) -> None:
    q = samples.query
    author = "person:示例作者"
    assert q.has_edge(author, "concept:枝子", "发展") or q.has_edge(
        author, "concept:三一神", "发展"
    )
    questions = [
        "枝子与三一神有什么关系？",
        "神圣分赐与召会有什么关系？",
        "得胜者和锡安有什么关系？",
        "变化形状与新耶路撒冷有什么关系？",
    ]
    for question in questions:
        paths = q.walk(q.link(question)).paths
        assert all(author not in p.nodes for p in paths), (question, [p.render() for p in paths])


# ---- a person named throughout a document ----------------------------------------------------------


async def test_a_person_named_in_every_section_gets_the_documents_edges() -> None:
    chunks = chunks_of(DATA / "message-two-sections.md", DocMeta(title="两段的信息（测试）"))
    assert len(chunks) == 2 and all("保罗" in c.text for c in chunks)
    kg = await KnowledgeGraph.open(None)
    await kg.index_document("doc-2", chunks)

    def expounds(person: str) -> set[str]:
        return {
            e.dst
            for e in kg.query.relations(person)
            if e.src == person
            and e.relation == "阐明"
            and kg.query.edge_sources(e.src, e.dst, e.relation) == ("两段的信息（测试）",)
        }

    paul, peter = expounds("person:保罗"), expounds("person:彼得")
    # 彼得, named once (in the second section), gets what that section discusses …
    assert {"concept:召会", "concept:建造"} <= peter
    # … and 保罗, named in both, what both discuss: the gospel of the first, the building of
    # the second (before: only 生命, the one concept both sections name)
    assert {"concept:福音", "concept:恩典"} <= paul and {"concept:召会", "concept:建造"} <= paul
    await kg.close()


# ---- a term named whole grows whole ------------------------------------------------------------

TEMPLATE = """# {term}

读经：约十10；罗八2

## 一　{term}的源头

{term}不是天然的，乃是从神来的。保罗说，赐生命之灵的律，在基督耶稣里释放了我们。人天然的观念再好，也不能产生{term}；{term}的源头乃是神自己。

主来了，是要叫人得生命，并且得的更丰盛。{term}藉着重生进到我们里面。彼得说，我们蒙了重生，不是由于能坏的种子。保罗也说，{term}在我们里面有一个律，会自动运行。

## 二　{term}的长大

{term}需要长大，正如婴孩需要吃奶。保罗在哥林多前书说，他只能用奶喂养哥林多人，因为他们还是婴孩。{term}的长大在于吃主的话，也在于顺从里面的感觉。

{term}长大，我们的性情也就被变化。保罗在罗马书说，要心思更新而变化。{term}越长大，召会就越被建造，众圣徒就越在身体里彼此配搭。

{term}的长大不是一天的事，乃是一生的过程。我们天天吃主的话，天天转向灵，{term}就天天长大。
"""


@pytest.mark.parametrize(
    ("term", "head"),
    [
        ("属天的异象", "异象"),  # jieba: 属 a verb, 天 a measure word
        ("深奥的启示", "启示"),  # 启示 a verb
        ("清洁的良心", "良心"),  # 良心 an adjective
        ("隐藏的吗哪", "吗哪"),  # 吗哪: the domain dictionary keeps it whole
    ],
)
async def test_a_term_named_in_title_headings_and_text_grows_whole(
    tmp_path: Path, term: str, head: str
) -> None:
    path = message(tmp_path, "m.md", TEMPLATE.format(term=term))
    chunks = chunks_of(path, DocMeta(title=term, type="message"))
    kg = await KnowledgeGraph.open(None)
    await kg.index_document("doc-t", chunks)
    whole = f"concept:{term}"
    assert kg.query.node_kind(whole) == "concept"
    assert kg.query.node(f"concept:{head}") is None  # not the head noun alone
    assert kg.query.has_edge(f"book:{term}", whole, "阐明")
    assert kg.query.link(f"{term}是什么？")[0] == whole
    # a path from it starts at the whole term, not at its head noun
    paths = kg.query.walk(kg.query.link(f"{term}与召会有什么关系？")).paths
    assert paths and all(f"concept:{head}" not in p.nodes for p in paths)
    await kg.close()


async def test_a_heading_phrase_the_text_does_not_repeat_grows_nothing(tmp_path: Path) -> None:
    text = TEMPLATE.format(term="属灵的生命").replace(
        "## 二　属灵的生命的长大", "## 二　奇妙的恩典"
    )
    chunks = chunks_of(message(tmp_path, "m.md", text), DocMeta(title="属灵的生命"))
    kg = await KnowledgeGraph.open(None)
    await kg.index_document("doc-h", chunks)
    assert kg.query.node("concept:奇妙的恩典") is None  # named once, in one heading
    assert kg.query.node_kind("concept:属灵的生命") == "concept"
    await kg.close()


RUTH = """# 路得记札记（测试）

## 第一章　拿俄米回乡

以利米勒离开伯利恒，往摩押地去寄居。路得对婆婆说：你的神就是我的神。路得跟从拿俄米。

## 第二章　在田里拾穗

路得到田间拾取麦穗，恰巧到了波阿斯那块田里。波阿斯是大能的财主，恩典是有人故意留下的。

## 第三章　禾场

路得下到禾场。波阿斯说：女儿啊，现在不要惧怕。波阿斯豫表基督作我们的至亲救赎主。
"""


async def test_a_name_with_no_relation_is_shown_where_the_corpus_says_it(tmp_path: Path) -> None:
    """/graph 波阿斯: the graph holds the name (two chapters of three say it) but no relation;
    the reader sees the passages that say it and the concepts there, as for a phrase the graph
    has no node for — not 「在图谱中还没有任何关系」."""
    kg = await KnowledgeGraph.open(None)
    chunks = chunks_of(message(tmp_path, "ruth.md", RUTH), DocMeta(title="路得记札记（测试）"))
    await kg.index_document(chunks[0].doc_id, chunks)
    q = kg.query
    node = GraphViewer(q).find("波阿斯")
    assert node is not None and not q.relations(node)

    async def passages(text: str, limit: int, reading: Reading) -> list[Chunk]:
        return [c for c in chunks if text in c.text][:limit]

    shown = await GraphViewer(q, passages=passages).show("波阿斯", "zh")
    assert isinstance(shown, PhraseView), shown
    assert shown.documents == ("路得记札记（测试）",) and shown.passages == 2
    await kg.close()
