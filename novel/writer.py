"""Writing a chapter: the five prompt layers, generation, and the JSON summary (L3).

L1 blueprint JSON · L4 bridge (previous summary + its last 500 characters) · L2 retrieved plot
chunks (dynamic top-K within a token budget) · L3 chapter summaries (relevant + recent) · L5 the
chapter goal · fixed style instructions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from novel.blueprint import Blueprint
from novel.memory import PlotHit
from retrieval.ports import LLM, LLMError, LLMRequest, Message

BRIDGE_CHARS = 500


@dataclass(frozen=True, slots=True)
class Goal:
    """L5: the winning proposal (or a revision's goal)."""

    title: str
    summary: str = ""
    notes: str = ""


@dataclass(frozen=True, slots=True)
class PriorChapter:
    number: int
    title: str
    summary: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Context:
    blueprint: Blueprint
    goal: Goal
    number: int  # the chapter being written
    previous_summary: dict[str, Any] | None = None
    previous_tail: str = ""
    plot: Sequence[PlotHit] = ()
    summaries: Sequence[PriorChapter] = ()
    instructions: str = ""  # a revision's instructions
    draft: str = ""  # the text being revised


def top_k(chapters: int) -> int:
    """More plot memory while the novel is young, less once there is much of it."""
    if chapters <= 5:
        return 8
    if chapters <= 20:
        return 6
    if chapters <= 100:
        return 5
    return 4


def estimate_tokens(text: str) -> int:
    """Rough: a CJK character ≈ 1 token, other text ≈ 4 characters a token."""
    cjk = len(re.findall(r"[\u3400-\u9fff]", text))
    return cjk + (len(text) - cjk) // 4 + 1


def within_budget(hits: Sequence[PlotHit], budget: int) -> list[PlotHit]:
    out: list[PlotHit] = []
    used = 0
    for h in hits:
        cost = estimate_tokens(h.text)
        if out and used + cost > budget:
            break
        out.append(h)
        used += cost
    return out


def memory_query(bp: Blueprint, goal: Goal) -> str:
    """The L2 query: goal title + summary + the characters it names (with their aliases)."""
    text = f"{goal.title}\n{goal.summary}\n{goal.notes}"
    names: list[str] = []
    for canon in bp.characters_in(text):
        c = bp.character(canon)
        if c is not None:
            names.extend([c.name, *c.aliases])
    return "\n".join(p for p in (goal.title, goal.summary, " ".join(names)) if p)


def pick_summaries(
    all_prior: Sequence[PriorChapter], plot: Sequence[PlotHit], limit: int = 5, recent: int = 2
) -> list[PriorChapter]:
    """L3: the most recent chapters plus those the plot hits came from, at most `limit`, in order."""
    by_no = {p.number: p for p in all_prior}
    chosen: list[int] = [p.number for p in all_prior[-recent:]]
    for h in plot:
        if len(chosen) >= limit:
            break
        if h.chapter_no in by_no and h.chapter_no not in chosen:
            chosen.append(h.chapter_no)
    for p in reversed(all_prior):
        if len(chosen) >= min(limit, len(all_prior)):
            break
        if p.number not in chosen:
            chosen.append(p.number)
    return [by_no[n] for n in sorted(chosen)]


STYLE = (
    "写作要求：\n"
    "- 用简体中文写一章小说正文，约 1500–2500 字；只输出正文，第一行不要写章节标题。\n"
    "- 遵守世界设定与规则；已死亡的人物不能再出场说话；人物言行符合其性格与关系。\n"
    "- 紧接上一章的结尾继续，不重复已写过的情节；完成本章目标。\n"
    "- 用自己原创的文字，不要照抄设定或前文的句子，不要模仿任何现有作品的文字。\n"
    "- 按文风说明写作；分段清晰，对白用中文引号“”。"
)

SYSTEM = (
    "你是一位中文小说作者，正在与一群读者接龙写作一部长篇小说。你严格遵守给定的世界设定和前文事实。"
)


def _summary_line(s: dict[str, Any]) -> str:
    return str(s.get("summary", "")).strip()


def build_request(ctx: Context, max_tokens: int = 4096) -> LLMRequest:
    bp_json = ctx.blueprint.model_dump_json(indent=None)
    parts: list[str] = [f"【世界设定（L1）】\n{bp_json}"]
    if ctx.summaries:
        lines = [f"第{p.number}章《{p.title}》：{_summary_line(p.summary)}" for p in ctx.summaries]
        parts.append("【相关章节摘要（L3）】\n" + "\n".join(lines))
    if ctx.plot:
        lines = [f"〔第{h.chapter_no}章《{h.title}》片段〕{h.text}" for h in ctx.plot]
        parts.append("【相关情节片段（L2，供保持一致，勿照抄）】\n" + "\n\n".join(lines))
    if ctx.previous_summary is not None:
        parts.append(
            "【上一章衔接（L4）】\n摘要："
            + _summary_line(ctx.previous_summary)
            + f"\n结尾原文：……{ctx.previous_tail}"
        )
    goal = f"标题：{ctx.goal.title}"
    if ctx.goal.summary:
        goal += f"\n内容：{ctx.goal.summary}"
    if ctx.goal.notes:
        goal += f"\n写作要点：{ctx.goal.notes}"
    parts.append(f"【本章目标（L5）：第{ctx.number}章】\n{goal}")
    if ctx.draft:
        parts.append(f"【需要修改的原稿】\n{ctx.draft}")
        parts.append(f"【修改要求】\n{ctx.instructions or '整体润色，保持情节不变。'}")
    parts.append(STYLE)
    return LLMRequest(
        system=SYSTEM,
        messages=[Message("user", "\n\n".join(parts))],
        max_tokens=max_tokens,
        temperature=0.8,
    )


Progress = Callable[[str], Awaitable[None]]


async def generate(
    llm: LLM, ctx: Context, progress: Progress | None = None, max_tokens: int = 4096
) -> str:
    """The chapter text; raises LLMError (nothing is saved by the caller on error)."""
    request = build_request(ctx, max_tokens)
    received: list[str] = []

    async def on_delta(delta: str) -> None:
        received.append(delta)
        if progress is not None:
            await progress("".join(received))

    response = await llm.complete(request, on_delta if progress is not None else None)
    text = clean_chapter(response.text, ctx.goal.title)
    if not text:
        raise LLMError("malformed", "empty chapter")
    return text


def clean_chapter(text: str, title: str) -> str:
    """Strip a heading line the model may add despite the instruction."""
    lines = text.strip().splitlines()
    if lines and re.match(
        r"^\s*(#+\s*)?(第.{1,6}章|《?" + re.escape(title) + r"》?\s*$)", lines[0]
    ):
        lines = lines[1:]
    return "\n".join(lines).strip()


# ---- summary (L3) -----------------------------------------------------------------------------


class ChapterSummary(BaseModel):
    title: str = ""
    summary: str = Field(min_length=1)
    characters: list[str] = Field(default_factory=list)
    scenes: list[str] = Field(default_factory=list)
    events: list[str] = Field(default_factory=list)


SUMMARY_SYSTEM = "你是小说编辑，负责为章节写结构化摘要。只输出 JSON。"

_SUMMARY_ASK = (
    "为下面这一章写摘要，输出一个 JSON 对象，键为：title（章节标题）、summary（150 字以内的情节摘要）、"
    "characters（出场主要人物名的数组）、scenes（场景/地点名的数组）、events（关键事件的短语数组）。"
)
_STRICT = "只输出一个 JSON 对象本身：不要 Markdown 代码块，不要任何解释文字，以 { 开头，以 } 结尾。"


def parse_summary(raw: str) -> ChapterSummary | None:
    """Tolerant: code fences, text around the object, trailing commas."""
    text = re.sub(r"```(?:json)?", "", raw).strip()
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end <= start:
        return None
    body = text[start : end + 1]
    for candidate in (body, re.sub(r",\s*([}\]])", r"\1", body)):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            return None
        for key in ("characters", "scenes", "events"):
            if isinstance(data.get(key), str):
                data[key] = [p for p in re.split(r"[,，、]", data[key]) if p.strip()]
        try:
            return ChapterSummary.model_validate(data)
        except ValidationError:
            return None
    return None


def fallback_summary(text: str, title: str, bp: Blueprint) -> ChapterSummary:
    return ChapterSummary(
        title=title, summary=text.strip()[:200], characters=bp.characters_in(text)
    )


async def summarise(llm: LLM | None, text: str, title: str, bp: Blueprint) -> dict[str, Any]:
    """JSON summary via the model: one retry with a stricter instruction, then a fallback."""
    if llm is not None:
        for strict in (False, True):
            ask = _SUMMARY_ASK + (_STRICT if strict else "") + f"\n\n章节标题：{title}\n\n{text}"
            try:
                response = await llm.complete(
                    LLMRequest(
                        system=SUMMARY_SYSTEM,
                        messages=[Message("user", ask)],
                        max_tokens=800,
                        temperature=0.0,
                    )
                )
            except LLMError:
                break
            parsed = parse_summary(response.text)
            if parsed is not None:
                if not parsed.title:
                    parsed.title = title
                return parsed.model_dump()
    return fallback_summary(text, title, bp).model_dump()
