"""Scholar over Qdrant Edge and the in-process HashEmbedder, a real SQLite Indexer, the
seeded knowledge graph and HybridSearch; the model is ScriptedLLM, or ClaudeLLM through the
loopback stub. All corpus text here is original test prose."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.presenters.scholar import ScholarPresenter
from retrieval.answer import AnswerBearing, FactReader
from retrieval.fakes import HashEmbedder
from retrieval.graph import KnowledgeGraph
from retrieval.index import DocumentRecord, Indexer, VerseRow
from retrieval.keyword import Bm25Encoder
from retrieval.llm.anthropic import ClaudeLLM
from retrieval.llm.base import RetryPolicy
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLM, LLMError, LLMRequest, LLMResponse, ModelCitation, TextSegment
from retrieval.relevance import RelevanceGate
from retrieval.requests import AskRequest, CiteRequest
from retrieval.scholar import Scholar, one_per_source_first
from retrieval.search import HybridSearch
from retrieval.store.edge import EdgeStore
from retrieval.synonyms import SynonymTable
from retrieval.text import Tokenizer, search_form
from retrieval.types import Chunk, chunk_id, content_hash
from tests.stubs.llm_server import LLMStubServer, Scripted, anthropic_message

DIM = 64
ZH = Actor("console", "console", "u1")
EN = Actor("console", "console", "u1", lang="en")

# doc_id: (source, type, [(chapter, text, refs)])
Doc = tuple[str, str, list[tuple[str, str, tuple[str, ...]]]]
DOCS: dict[str, Doc] = {
    "m1": (
        "经纶的异象",
        "message",
        [
            (
                "一　神的计划",
                "神的经纶是祂要在基督里将万有归一的计划。这计划的中心是基督。",
                ("Eph.1.10",),
            ),
            ("二　分赐的路", "神圣分赐是神把自己供应到人里面。人要用灵来接受这供应。", ()),
        ],
    ),
    "m2": (
        "召会的奥秘",
        "message",
        [
            (
                "一　身体",
                "召会是基督的身体，是基督的丰满。弗一10所说的归一在召会里开始。",
                ("Eph.1.10",),
            ),
            ("二　建造", "身体的建造是在爱里。每个肢体都尽功用。弗一10也与此有关。", ("Eph.1.10",)),
        ],
    ),
    "f1": (
        "以弗所书注解",
        "footnote",
        [
            (
                "弗1:10 注1",
                "弗一10注：归一是指万有在基督之下得以联结，这是测试用的原创注解。",
                ("Eph.1.10",),
            )
        ],
    ),
}


@dataclass
class Env:
    search: HybridSearch
    indexer: Indexer
    graph: KnowledgeGraph

    def core(self, llm: LLM | None) -> Scholar:
        return Scholar(self.search, self.indexer, self.graph.query, llm)

    def scholar(self, llm: LLM | None) -> ScholarPresenter:
        """The scholar as the chat sees it: replies, as the commands get them."""
        return ScholarPresenter(self.core(llm))


ERAS = {"m1": "sample-1960s", "m2": "sample-1980s"}  # the footnotes have none


async def _index(ix: Indexer, docs: Mapping[str, Doc] = DOCS) -> None:
    for doc_id, (source, kind, paras) in docs.items():
        era = ERAS.get(doc_id, "")
        chunks = []
        for pos, (chapter, text, refs) in enumerate(paras):
            st = search_form(text)
            chunks.append(
                Chunk(
                    id=chunk_id("corpus", doc_id, pos, content_hash(st)),
                    text=text,
                    search_text=st,
                    doc_id=doc_id,
                    source=source,
                    type=kind,  # type: ignore[arg-type]
                    chapter=chapter,
                    position=pos,
                    scripture_refs=refs,
                    era=era,
                )
            )
        record = DocumentRecord(doc_id, source, content_hash(repr(paras)), type=kind, era=era)
        await ix.replace_document(record, chunks)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    embedder = HashEmbedder(DIM)
    encoder = Bm25Encoder(avgdl=12)
    graph = await KnowledgeGraph.open(None)
    try:
        async with Indexer(tmp_path / "db.sqlite3", store, embedder, encoder, graph) as ix:
            await _index(ix)
            search = HybridSearch(store, embedder, encoder, graph.query, SynonymTable.load())
            yield Env(search, ix, graph)
    finally:
        await store.close()


def _cite_by_title(title_part: str, claim: str) -> object:
    """A scripted model that cites whichever document it was given under `title_part`."""

    def reply(request: LLMRequest) -> str:
        doc = next(d for d in request.documents if title_part in d.title)
        return f"职事明确教导\n\n{claim}[{doc.index}]。另有一说[{len(request.documents) + 3}]。\n\n推论\n\n无"

    return reply


# ---- /ask ----------------------------------------------------------------------------------


async def test_ask_offline_is_extractive(env: Env) -> None:
    reply = await env.scholar(None).ask(ZH, AskRequest("什么是神的经纶？"))
    assert reply.blocks[0].text == "（未使用语言模型：以下为检索到的原文摘录）"
    quotes = [b.text for b in reply.blocks if b.kind == "quote"]
    assert quotes and any("经纶的异象" in q for q in quotes)
    all_text = "".join(t for _, _, paras in DOCS.values() for _, t, _ in paras)
    for q in quotes:
        assert q.rsplit("【", 1)[0].strip("…") in all_text  # nothing invented
    assert reply.citations and all(c.chunk_id for c in reply.citations)


async def test_ask_with_model_verifies_citations(env: Env) -> None:
    llm = ScriptedLLM([_cite_by_title("经纶的异象", "神要在基督里将万有归一")])  # type: ignore[list-item]
    scholar = env.scholar(llm)
    reply = await scholar.ask(ZH, AskRequest("神的经纶是什么？"))
    text = reply.plain()
    assert "【经纶的异象，一　神的计划】" in text
    assert "〔未经证实〕" in text  # the made-up [n+3] marker
    assert reply.blocks[0] == reply.blocks[0].__class__("职事明确教导", "heading")
    assert [c.source for c in reply.citations] == ["经纶的异象"]
    stats = scholar.scholar.citation_stats
    assert stats.shown == 1 and stats.removed == 1
    (request,) = llm.requests
    assert request.documents and len(request.documents) <= 6


async def test_ask_streams_previews_without_markers(env: Env) -> None:
    llm = ScriptedLLM([_cite_by_title("经纶的异象", "万有在基督里归一")], delta_chars=3)  # type: ignore[list-item]
    seen: list[str] = []

    async def progress(partial: str) -> None:
        seen.append(partial)

    reply = await env.scholar(llm).ask(ZH, AskRequest("神的经纶是什么？"), progress)
    assert len(seen) > 5
    assert all("[" not in s and "【" not in s for s in seen)
    assert seen[-1].startswith("职事明确教导")
    assert "【经纶的异象，一　神的计划】" in reply.plain()


async def test_broken_progress_does_not_lose_the_answer(env: Env) -> None:
    llm = ScriptedLLM([_cite_by_title("经纶的异象", "万有归一")])  # type: ignore[list-item]

    async def progress(partial: str) -> None:
        raise RuntimeError("edit failed")

    reply = await env.scholar(llm).ask(ZH, AskRequest("神的经纶是什么？"), progress)
    assert "【经纶的异象，一　神的计划】" in reply.plain()


async def test_native_citations(env: Env) -> None:
    def reply(request: LLMRequest) -> LLMResponse:
        doc = next(d for d in request.documents if "召会的奥秘，一" in d.title)
        return LLMResponse(
            (
                TextSegment("召会是基督的身体", (ModelCitation(doc.index, "召会是基督的身体"),)),
                TextSegment("，并且是神的殿", (ModelCitation(doc.index, "召会是神的殿"),)),
                TextSegment("。"),
            ),
            native_citations=True,
        )

    result = await env.scholar(ScriptedLLM([reply])).ask(ZH, AskRequest("召会是基督的身体吗？"))
    text = result.plain()
    assert "召会是基督的身体【召会的奥秘，一　身体】" in text
    assert "并且是神的殿〔未经证实〕。" in text


@pytest.mark.parametrize(
    ("kind", "zh", "en"),
    [("timeout", "超时", "timed out"), ("rate_limited", "限流", "rate limited")],
)
async def test_model_failure_falls_back_to_extractive(
    env: Env, kind: str, zh: str, en: str
) -> None:
    reply = await env.scholar(ScriptedLLM([LLMError(kind)])).ask(ZH, AskRequest("神的经纶？"))
    assert reply.blocks[0].kind == "note" and zh in reply.blocks[0].text
    assert reply.blocks[1].text.startswith("（未使用语言模型")
    reply = await env.scholar(ScriptedLLM([LLMError(kind)])).ask(EN, AskRequest("God's economy?"))
    assert en in reply.blocks[0].text and reply.blocks[1].text.startswith("(No language model")


async def test_a_model_that_says_not_addressed_is_rendered_like_the_gate(env: Env) -> None:
    from retrieval.answer import NOT_ADDRESSED

    llm = ScriptedLLM([NOT_ADDRESSED["zh"]])
    reply = await env.scholar(llm).ask(ZH, AskRequest("神的经纶是什么？"))
    text = reply.plain()
    assert text.startswith("职事语料中没有直接论及「神的经纶是什么」的内容")
    assert "相关参考（仅供延伸阅读，并非这个问题的答案）" in text and not reply.citations
    offline = await env.scholar(None).ask(ZH, AskRequest("今天天气怎么样？"))
    assert offline.plain().startswith("职事语料中没有直接论及")
    assert len(llm.requests) == 1  # the gate declined the weather before any model call


@pytest.mark.parametrize(
    ("actor", "question", "said", "shown"),
    [
        (
            ZH,
            "神的经纶是什么？",
            "[NOT_ADDRESSED] 职事资料中没有找到相关的教导。",
            "职事语料中没有直接论及",
        ),
        (ZH, "神的经纶是什么？", "所提供的资料并未提到这个问题。", "职事语料中没有直接论及"),
        (
            EN,
            "What is God's economy?",
            "[NOT_ADDRESSED]\nThe ministry passages do not address this question.",
            "does not directly address",
        ),
        (
            EN,
            "What is God's economy?",
            "The ministry does not address this question.",
            "does not directly address",
        ),
        (
            EN,
            "What is God's economy?",
            "This is not addressed in the passages.",
            "does not directly address",
        ),
    ],
)
async def test_every_way_a_model_declines_is_rendered_like_the_gate(
    env: Env, actor: Actor, question: str, said: str, shown: str
) -> None:
    reply = await env.scholar(ScriptedLLM([said])).ask(actor, AskRequest(question))
    text = reply.plain()
    assert shown in text.split("\n")[0], text
    assert said.split("\n")[-1] not in text and "NOT_ADDRESSED" not in text
    assert not reply.citations
    related = "相关参考（仅供延伸阅读" if actor.lang == "zh" else "Related reading"
    assert related in text, text
    gate = await env.scholar(None).ask(
        actor,
        AskRequest("今天天气怎么样？" if actor.lang == "zh" else "What's the weather like today?"),
    )
    assert shown in gate.plain().split("\n")[0]  # the gate's own decline says the same


async def test_an_unknown_era_is_refused_naming_the_eras_the_corpus_has(env: Env) -> None:
    llm = ScriptedLLM()
    scholar = env.scholar(llm)
    zh = await scholar.ask(ZH, AskRequest("神的经纶？", filters={"era": "1850s"}))
    en = await scholar.ask(EN, AskRequest("God's economy?", filters={"era": "1850s"}))
    assert (
        zh.is_error
        and zh.plain() == "语料中没有「1850s」这个时代。已有：sample-1960s、sample-1980s"
    )
    assert en.is_error and en.plain() == (
        "The corpus holds no era “1850s”. It has: sample-1960s, sample-1980s"
    )
    assert not llm.requests  # refused before any search or model call
    offline = env.core(None)
    request = await offline.resolve_filters(AskRequest("神的经纶？", {"era": "sample-1960s"}))
    known = await offline.answer(ZH.lang, request)
    assert known.addressed and known.citations
    assert {c.chunk.doc_id for c in known.citations} == {"m1"}  # the era filter held


async def test_empty_model_answer_falls_back(env: Env) -> None:
    reply = await env.scholar(ScriptedLLM(["   "])).ask(ZH, AskRequest("神的经纶？"))
    assert "没有给出回答" in reply.blocks[0].text


async def test_nothing_retrieved(env: Env) -> None:
    llm = ScriptedLLM()
    request = AskRequest("神的经纶？", filters={"source": "不存在的书"})
    reply = await env.scholar(llm).ask(ZH, request)
    # an unknown source is a clear error that names what the corpus holds
    assert reply.is_error and "语料中没有「不存在的书」这本书" in reply.plain()
    assert "经纶的异象" in reply.plain() and not reply.citations
    assert llm.requests == []  # no model call when there is nothing to ground an answer in
    en = await env.scholar(llm).ask(EN, AskRequest("economy?", filters={"era": "1066"}))
    assert en.is_error and "no era “1066”" in en.plain()
    narrowed = await env.core(None).answer(
        ZH.lang, await env.core(None).resolve_filters(AskRequest("神的经纶？", {"source": "召会"}))
    )
    assert {c.chunk.source for c in narrowed.citations} <= {"召会的奥秘"}
    assert (await env.scholar(None).ask(ZH, AskRequest("   "))).is_error


async def test_ask_through_claude_and_the_stub(env: Env) -> None:
    async with LLMStubServer() as server:
        llm = ClaudeLLM("k", base_url=server.url, policy=RetryPolicy(max_retries=0, timeout_s=5))
        scholar = env.scholar(llm)
        # First call: learn which passage the prompt sent as document 0.
        server.anthropic.append(Scripted.json(anthropic_message([("占位", [])])))
        await scholar.ask(ZH, AskRequest("神的经纶是什么？"))
        doc0 = server.received[0].body["messages"][0]["content"][0]
        assert doc0["type"] == "document" and doc0["citations"] == {"enabled": True}
        first_sentence = doc0["source"]["data"].split("。")[0] + "。"
        # Second call: cite it truly once, and a document that was never sent once.
        server.anthropic.append(
            Scripted.json(
                anthropic_message(
                    [("职事如此说", [(0, first_sentence)]), ("。又有杜撰", [(5, "无")])]
                )
            )
        )
        reply = await scholar.ask(ZH, AskRequest("神的经纶是什么？"))
        await llm.aclose()
    text = reply.plain()
    assert f"职事如此说【{doc0['title']}】" in text
    assert "又有杜撰〔未经证实〕" in text
    assert reply.citations[0].label == doc0["title"]


# ---- /cite -----------------------------------------------------------------------------------


async def test_cite_verse_footnotes_passages_and_concepts(env: Env) -> None:
    await env.indexer.put_verses(
        [
            VerseRow(
                "CUV",
                "Eph.1.10",
                "Eph",
                1,
                10,
                "要照所安排的，在日期滿足的時候，使天上地上一切所有的，都在基督裏面同歸於一。",
            )
        ]
    )
    reply = await env.scholar(None).cite(ZH, CiteRequest("弗1:10", (("Eph.1.10", "Eph.1.10"),)))
    blocks = [(b.kind, b.text) for b in reply.blocks]
    assert blocks[0] == ("heading", "弗1:10")
    # the verse once, in Simplified by default (the CUV is stored Traditional), version named
    assert blocks[1][0] == "quote" and "同归于一" in blocks[1][1]
    assert blocks[2] == ("note", "CUV")
    assert ("heading", "注解") in blocks
    footnote = blocks[blocks.index(("heading", "注解")) + 1]
    assert footnote[0] == "item" and "【以弗所书注解，弗1:10】" in footnote[1]
    start = blocks.index(("heading", "阐述这处经文的职事段落")) + 1
    passages = [t for k, t in blocks[start:] if k == "quote"]
    sources = [t.rsplit("【", 1)[1] for t in passages]
    assert len(passages) == 3
    assert {sources[0].split("，")[0], sources[1].split("，")[0]} == {"经纶的异象", "召会的奥秘"}
    assert "二　分赐的路" not in "".join(sources)  # it does not cite the verse
    assert blocks[-1] == ("note", "相关概念：神圣分赐 · 经纶")
    assert not reply.citations  # every passage is labelled in place: no text shown twice


async def test_cite_own_notes_apart_from_notes_that_mention_the_verse(env: Env) -> None:
    """Issue 10: /cite 腓2:5 listed the note of 腓2:13 (which only mentions 2:5) as 2:5's note,
    and /cite 弗1:10 showed the verse three times."""
    await env.indexer.put_verses(
        [
            VerseRow("cuv1919", "Phil.2.5", "Phil", 2, 5, "你們當以基督耶穌的心為心。"),
            VerseRow(
                "cuv1919", "Phil.2.13", "Phil", 2, 13, "因為你們立志行事，都是神在你們心裏運行。"
            ),
        ]
    )
    notes = [
        (
            "腓2:5",
            "腓2:5　你们当以基督耶稣的心为心。\n注1　这心是基督的心思，测试用的原创注解。",
            ("Phil.2.5",),
        ),
        (
            "腓2:13",
            "腓2:13　因为你们立志行事，都是神在你们心里运行。\n注1　神在里面运行，与腓2:5的心思相连。",
            ("Phil.2.13", "Phil.2.5"),
        ),
    ]
    chunks = [
        Chunk(
            id=chunk_id("corpus", "f2", pos, content_hash(text)),
            text=text,
            search_text=search_form(text),
            doc_id="f2",
            source="腓立比书注解",
            type="footnote",
            chapter=heading,
            position=pos,
            scripture_refs=refs,
            extra={"verse": heading},
        )
        for pos, (heading, text, refs) in enumerate(notes)
    ]
    await env.indexer.replace_document(DocumentRecord("f2", "腓立比书注解", "h-f2"), chunks)
    reply = await env.scholar(None).cite(ZH, CiteRequest("腓2:5", (("Phil.2.5", "Phil.2.5"),)))
    blocks = [(b.kind, b.text) for b in reply.blocks]
    own = blocks[blocks.index(("heading", "注解")) + 1][1]
    assert own.startswith("注1　这心是基督的心思") and "【腓立比书注解，腓2:5】" in own
    related = blocks[blocks.index(("heading", "相关注解")) + 1][1]
    assert "【腓立比书注解，腓2:13】" in related
    text = "\n".join(t for _, t in blocks)
    assert text.count("以基督耶稣的心为心") == 1  # the verse once, not again under 注解
    assert "以基督耶穌的心為心" not in text  # and in Simplified, like everything else

    traditional = await env.scholar(None).cite(
        ZH, CiteRequest("腓立比書二章五節", (("Phil.2.5", "Phil.2.5"),))
    )
    assert "2:5 你們當以基督耶穌的心為心。" in [b.text for b in traditional.blocks]
    chosen = await env.scholar(None).cite(
        ZH, CiteRequest("腓2:5", (("Phil.2.5", "Phil.2.5"),), script="traditional")
    )
    assert "2:5 你們當以基督耶穌的心為心。" in [b.text for b in chosen.blocks]
    assert ("note", "和合本（1919）") in [(b.kind, b.text) for b in chosen.blocks]


async def test_cite_without_a_bible(env: Env) -> None:
    reply = await env.scholar(None).cite(EN, CiteRequest("Eph 1:10", (("Eph.1.10", "Eph.1.10"),)))
    assert reply.blocks[0].text == "Eph 1:10"
    assert "No Bible text has been ingested" in reply.blocks[1].text
    assert any("召会的奥秘" in b.text for b in reply.blocks)  # passages still shown


async def test_cite_verse_without_passages(env: Env) -> None:
    await env.indexer.put_verses([VerseRow("CUV", "John.4.24", "John", 4, 24, "神是個靈。")])
    reply = await env.scholar(None).cite(ZH, CiteRequest("约4:24", (("John.4.24", "John.4.24"),)))
    texts = [b.text for b in reply.blocks]
    assert "4:24 神是个灵。" in texts
    assert "语料中没有找到引用这处经文的职事段落。" in texts
    assert not reply.citations


async def test_cite_book_not_ingested(env: Env) -> None:
    await env.indexer.put_verses([VerseRow("CUV", "John.4.24", "John", 4, 24, "神是個靈。")])
    reply = await env.scholar(None).cite(ZH, CiteRequest("弗1:10-12", (("Eph.1.10", "Eph.1.12"),)))
    assert reply.blocks[0].text == "弗1:10-12"
    assert "已导入的圣经中没有这处经文的本文" in reply.blocks[1].text


async def test_cite_bad_request(env: Env) -> None:
    assert (await env.scholar(None).cite(ZH, CiteRequest("", ()))).is_error
    assert (await env.scholar(None).cite(ZH, CiteRequest("x", (("Eph", "x.y"),)))).is_error


def test_one_per_source_first() -> None:
    def c(i: int, source: str) -> Chunk:
        return Chunk(f"c{i}", "t", "t", f"d{i}", source, "message")

    ranked = [c(1, "A"), c(2, "A"), c(3, "B"), c(4, "A"), c(5, "C")]
    assert [x.id for x in one_per_source_first(ranked)] == ["c1", "c3", "c5", "c2", "c4"]


# ---- a fact question in other words than the passages' (issue 43, item 7) ------------------


async def test_a_fact_question_the_gate_declines_is_answered_by_a_close_sentence(
    env: Env,
) -> None:
    """The gate finds too few of the question's words (here: a gate that never answers, but
    finds every question near); a sentence close in meaning whose follower names the day
    answers it. A scorer that finds nothing close, or a close sentence stating no day, leaves
    it declined with related reading. Without a scorer nothing changes."""
    text = "弟兄们在楼上同心祷告。那一天就是主日。\n后来众人各自回家。"
    await _index(env.indexer, {"m3": ("晨更的操练", "message", [("一　同心", text, ())])})
    never = RelevanceGate(min_coverage=2.0, partial_coverage=2.0, related_coverage=0.0)
    facts = FactReader(Tokenizer().tag)

    def scholar(near: str) -> Scholar:
        async def score(question: str, sentences: Sequence[str]) -> list[float]:
            return [0.95 if near and near in s else 0.1 for s in sentences]

        bearing = AnswerBearing(score, floor=0.9)
        return Scholar(
            env.search, env.indexer, env.graph.query, None, gate=never, facts=facts, bearing=bearing
        )

    question = AskRequest("弟兄们是在哪一天一起祷告的？")
    answered = await scholar("同心祷告").answer("zh", question)
    assert answered.addressed and any(c.chunk.doc_id == "m3" for c in answered.citations)
    for near in ("", "众人各自回家"):  # nothing close; close, but no day said
        declined = await scholar(near).answer("zh", question)
        assert not declined.addressed and declined.unstated is None and declined.related
    plain = Scholar(env.search, env.indexer, env.graph.query, None, gate=never, facts=facts)
    assert not (await plain.answer("zh", question)).addressed
    open_question = await scholar("同心祷告").answer("zh", AskRequest("弟兄们为什么同心祷告？"))
    assert not open_question.addressed  # it asks for no fact: the gate's call alone
