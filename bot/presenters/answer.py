"""An `Answer` (`retrieval.answer.result`) worded as the `Reply` every transport renders.

- addressed, with a model: the verified answer in its two sections, its sources, a note when
  citations were removed, the graph path when the graph helped;
- addressed, without a model (or when it failed): the passages verbatim, each labelled, under
  the notice that says why the model's answer fell back (`notice_text`);
- not addressed: said plainly, then the nearest passages as related reading — never as the
  answer — whether the relevance gate or the model decided it; when they share no meaning with
  the question (`RelevanceGate.related`), that the corpus has nothing near it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import assert_never

from bot.reply import Block, Citation, Reply
from retrieval.answer.notices import EmptyModelAnswer, ModelFailed, Notice
from retrieval.answer.quotes import verify_form
from retrieval.answer.result import Answer, Cited
from retrieval.answer.verify import SECTION_TITLES
from retrieval.i18n import Catalog, Lang
from retrieval.types import GraphPath

T = Catalog(
    {
        "offline_header": (
            "（未使用语言模型：以下为检索到的原文摘录）",
            "(No language model used: below are excerpts of the retrieved passages)",
        ),
        "not_addressed": (
            "职事语料中没有直接论及「{question}」的内容，所以这里不作回答。",
            "The ministry corpus does not directly address “{question}”, so there is no "
            "answer here.",
        ),
        "related_heading": (
            "相关参考（仅供延伸阅读，并非这个问题的答案）",
            "Related reading (not an answer to this question)",
        ),
        "no_related": (
            "语料中也没有与这个问题相近的内容。可以换个说法、加上经文出处，或用 /cite 查某处经文。",
            "Nothing close to it is in the corpus either. Try other words, add a scripture "
            "reference, or look a verse up with /cite.",
        ),
        "graph_path": ("知识图谱路径：{path}", "Knowledge-graph path: {path}"),
        "removed_note": (
            "有 {n} 处引用无法在检索到的原文中核实，已删除；相关说法标为〔未经证实〕。",
            "{n} citation(s) could not be verified against the retrieved text and were removed; "
            "the claims are marked [unsupported].",
        ),
        "llm_failed": (
            "语言模型暂时无法回答（{reason}），以下改为列出检索到的原文摘录。",
            "The language model could not answer ({reason}); here are the retrieved passages instead.",
        ),
        "empty_answer": (
            "语言模型没有给出回答，以下为检索到的原文摘录。",
            "The language model returned no answer; here are the retrieved passages.",
        ),
    }
)
# Why the model failed (`LLMError.kind`); a kind not listed reads as "unavailable".
REASONS = Catalog(
    {
        "timeout": ("超时", "timed out"),
        "rate_limited": ("请求过多，已被限流", "rate limited"),
        "unavailable": ("服务不可用", "service unavailable"),
        "malformed": ("返回格式错误", "malformed response"),
    }
)

QUESTION_IN_REPLY = 60  # characters of the question repeated in a not-addressed reply


def citation(cited: Cited, lang: Lang) -> Citation:
    return Citation(
        label=cited.label.text(lang),
        source=cited.chunk.source,
        chapter=cited.chunk.chapter,
        quote=cited.quote,
        chunk_id=cited.chunk.id,
    )


def graph_block(paths: Sequence[GraphPath], lang: Lang, limit: int = 2) -> Block | None:
    shown = [p.render(lang) for p in paths if len(p.nodes) >= 2][:limit]
    if not shown:
        return None
    joined = "；".join(shown) if lang == "zh" else "; ".join(shown)
    return Block(T(lang, "graph_path", path=joined), "note")


def notice_text(notice: Notice, lang: Lang) -> str:
    """Why an answer fell back to the passages: the model failed (naming the reason), or it
    said nothing."""
    match notice:
        case ModelFailed():
            kind = notice.kind if notice.kind in REASONS.keys() else "unavailable"
            return T(lang, "llm_failed", reason=REASONS(lang, kind))
        case EmptyModelAnswer():
            return T(lang, "empty_answer")
        case _:
            assert_never(notice)


def _heading_key(paragraph: str) -> str:
    return verify_form(paragraph.strip().strip("#*：:").strip())


def answer_blocks(text: str) -> list[Block]:
    """The model's answer: its section titles as headings, the rest as paragraphs."""
    blocks: list[Block] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        first, _, rest = paragraph.partition("\n")
        if _heading_key(first) in SECTION_TITLES - {"无", "none"}:
            blocks.append(Block(first.strip().strip("#*").strip().strip("「」").strip(), "heading"))
            if rest.strip():
                blocks.append(Block(rest.strip()))
            continue
        blocks.append(Block(paragraph))
    return blocks


def _short(question: str) -> str:
    question = " ".join(question.split()).rstrip("？?。.!！")
    return (
        question if len(question) <= QUESTION_IN_REPLY else question[: QUESTION_IN_REPLY - 1] + "…"
    )


def _not_addressed(answer: Answer) -> Reply:
    lang = answer.lang
    blocks = [Block(T(lang, "not_addressed", question=_short(answer.question)))]
    if answer.related:
        blocks.append(Block(T(lang, "related_heading"), "heading"))
        blocks += [Block(f"【{c.label.text(lang)}】{c.quote}", "item") for c in answer.related]
    else:
        blocks.append(Block(T(lang, "no_related"), "note"))
    return Reply(blocks=tuple(blocks), lang=lang)


def _model_answer(answer: Answer) -> Reply:
    lang = answer.lang
    blocks = answer_blocks(answer.text)
    if answer.removed:
        blocks.append(Block(T(lang, "removed_note", n=answer.removed), "note"))
    return _with_graph(blocks, answer, [citation(c, lang) for c in answer.citations if c.verified])


def _extractive(answer: Answer) -> Reply:
    lang = answer.lang
    blocks = [Block(notice_text(answer.notice, lang), "note")] if answer.notice is not None else []
    blocks.append(Block(T(lang, "offline_header"), "heading"))
    blocks += [Block(f"{c.excerpt}【{c.label.text(lang)}】", "quote") for c in answer.citations]
    return _with_graph(blocks, answer, [citation(c, lang) for c in answer.citations])


def _with_graph(blocks: list[Block], answer: Answer, citations: list[Citation]) -> Reply:
    if answer.graph_helped:
        block = graph_block(answer.graph_paths, answer.lang)
        if block is not None:
            blocks.append(block)
    return Reply(blocks=tuple(blocks), citations=tuple(citations), lang=answer.lang)


def answer_reply(answer: Answer) -> Reply:
    if not answer.addressed:
        return _not_addressed(answer)
    if answer.mode == "llm":
        return _model_answer(answer)
    return _extractive(answer)
