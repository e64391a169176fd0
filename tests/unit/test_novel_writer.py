"""Prompt layers in the seed's order, dynamic top-K, robust summary parsing with one retry and
an extractive fallback."""

from __future__ import annotations

from novel.blueprint import default_blueprint
from novel.memory import PlotHit
from novel.summary import ChapterSummary, parse_summary, summarise
from novel.writer import (
    Context,
    Goal,
    PriorChapter,
    build_request,
    goal_characters,
    memory_query,
    top_k,
    within_budget,
)
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMError


def hit(n: int, text: str = "片段") -> PlotHit:
    return PlotHit(n, f"c{n}", 1, f"章{n}", text, (), 1.0)


def test_top_k_shrinks_and_budget() -> None:
    assert top_k(3) == 8 and top_k(10) == 6 and top_k(50) == 5 and top_k(300) == 4
    hits = [hit(i, "字" * 400) for i in range(8)]
    assert len(within_budget(hits, 1000)) == 2
    assert len(within_budget(hits, 10)) == 1  # always at least one


def test_memory_query_names_aliases() -> None:
    q = memory_query(default_blueprint(), Goal("夜渡", "阿远去找沈师父"))
    assert "林远" in q and "阿远" in q and "沈默" in q and "苏晴" not in q
    assert goal_characters(default_blueprint(), Goal("夜渡", "阿远去找沈师父")) == ["林远", "沈默"]


def test_prompt_layers_in_order() -> None:
    ctx = Context(
        blueprint=default_blueprint(),
        goal=Goal("夜渡", "过江", "多写环境"),
        number=3,
        previous_summary=ChapterSummary(summary="上一章摘要"),
        previous_tail="上一章结尾",
        plot=[hit(1, "旧情节")],
        summaries=[PriorChapter(1, "起", ChapterSummary(summary="第一章摘要"))],
    )
    text = build_request(ctx).messages[0].content
    # The seed's order: blueprint → previous summary → previous ending → retrieved (L3 + L2,
    # Markdown) → goal.
    order = [
        "（L1）",
        "上一章摘要（L4）",
        "上一章结尾（L4）",
        "## 相关章节摘要",
        "## 相关情节片段",
        "（L5）：第3章",
        "写作要求",
    ]
    positions = [text.index(m) for m in order]
    assert positions == sorted(positions)
    assert "上一章结尾" in text and "> 旧情节" in text and "多写环境" in text
    assert "- 第1章《起》：第一章摘要" in text and "### 第1章《章1》" in text
    # Issue 23: the prompt says the blueprint, the previous summary and the previous ending
    # outrank the retrieved passages, in that order.
    [priority] = [line for line in text.splitlines() if "优先级" in line]
    ranked = ["【世界设定（L1）】", "【上一章摘要（L4）】", "【上一章结尾（L4）】", "【相关前情"]
    firsts = [priority.index(r) for r in ranked]
    assert firsts == sorted(firsts)
    assert "以排在前面的为准" in priority and "只作参考" in priority
    assert text.index("优先级") > text.index("（L5）：第3章")  # with the instructions, last


def test_parse_summary_tolerant() -> None:
    assert parse_summary('```json\n{"summary": "甲", "characters": "林远，苏晴",}\n```') is not None
    parsed = parse_summary('说明文字 {"title": "t", "summary": "s", "scenes": ["渡口"]} 结束')
    assert parsed is not None and parsed.scenes == ["渡口"]
    assert parse_summary("没有 JSON") is None
    assert parse_summary('{"summary": ""}') is None


async def test_summarise_retry_then_fallback() -> None:
    bp = default_blueprint()
    llm = ScriptedLLM(["不是 JSON", '{"summary": "好", "characters": ["林远"]}'])
    out = await summarise(llm, "林远过江。", "夜渡", bp)
    assert out.summary == "好" and out.title == "夜渡" and len(llm.requests) == 2
    assert "不要 Markdown" in llm.requests[1].messages[0].content
    text = "苏晴" + "江" * 300
    # Issue 12: without a usable answer the summary is extractive (the chapter's own words).
    out = await summarise(ScriptedLLM(["x", "y"]), text, "夜渡", bp)
    assert out.summary == text[:150] and out.characters == ["苏晴"] and out.extractive
    out = await summarise(ScriptedLLM([LLMError("timeout")]), text, "夜渡", bp)
    assert out.summary == text[:150]
    assert (await summarise(None, text, "夜渡", bp)).title == "夜渡"
