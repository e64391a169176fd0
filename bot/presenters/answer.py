"""An `Answer` (`retrieval.answer.result`) worded as the `Reply` every transport renders.

- addressed, with a model: the verified answer in its two sections, its sources, a note when
  citations were removed, the graph path when the graph helped;
- addressed, without a model (or when it failed): the passages verbatim, each labelled, under
  the notice that says why the model's answer fell back (`notice_text`);
- not addressed: said plainly, then the nearest passages as related reading — never as the
  answer — whether the relevance gate or the model decided it; when they share no meaning with
  the question (`RelevanceGate.related`), that the corpus has nothing near it. A question about
  the subject of the passages that asks for a year, a number, a place or a person none of them
  states (`Answer.unstated`) is told what is missing: 「职事语料没有直接论及…所问的年份」.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import assert_never

from bot.i18n import catalog
from bot.reply import Block, Citation, Reply
from kernel.i18n import Lang
from retrieval.answer.notices import EmptyModelAnswer, ModelFailed, Notice
from retrieval.answer.quotes import verify_form
from retrieval.answer.result import Answer, Cited
from retrieval.answer.verify import SECTION_TITLES
from retrieval.types import GraphPath

T = catalog("answer")
# Why the model failed (`LLMError.kind`); a kind not listed reads as "unavailable".
REASONS = catalog("answer_reasons")

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


def failure_reason(kind: str, lang: Lang) -> str:
    """Why a model call failed (`LLMError.kind`), in words: a spent daily budget, a timeout…"""
    return REASONS(lang, kind if kind in REASONS.keys() else "unavailable")


def notice_text(notice: Notice, lang: Lang) -> str:
    """Why an answer fell back to the passages: the model failed (naming the reason), or it
    said nothing."""
    match notice:
        case ModelFailed():
            return T(lang, "llm_failed", reason=failure_reason(notice.kind, lang))
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
    question = _short(answer.question)
    asked = answer.unstated
    if asked is not None:  # about the subject, but no passage says what was asked
        what = T(lang, f"what_{asked.kind}_{asked.detail}")
        blocks = [Block(T(lang, "not_stated", question=question, what=what))]
    else:
        blocks = [Block(T(lang, "not_addressed", question=question))]
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
