"""Writing a chapter: the prompt in the seed's order, and generation.

L1 blueprint (JSON) → L4 previous chapter's summary → L4 its last 500 characters → retrieved
memory as Markdown (L3 similar chapter summaries, L2 plot chunks within a token budget) → L5 the
chapter goal → fixed style instructions. Nobody has measured another order on a real model
here, so the seed's stands (see bench/results/novel.md).

The order is also said in words (`PRIORITY`, issue 23): the blueprint, then the previous
summary, then the previous ending outrank the retrieved passages, which are only for reference —
a model must not follow an old chunk against the story's latest state.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from novel.blueprint import Blueprint
from novel.memory import PlotHit
from novel.summary import ChapterSummary
from novel.tags import blueprint_places, known_places, text_tags
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
    summary: ChapterSummary


@dataclass(frozen=True, slots=True)
class Context:
    blueprint: Blueprint
    goal: Goal
    number: int  # the chapter being written
    previous_summary: ChapterSummary | None = None
    previous_tail: str = ""
    plot: Sequence[PlotHit] = ()
    summaries: Sequence[PriorChapter] = ()  # L3: similar earlier chapters (not the previous)
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


def summary_k(chapters: int) -> int:
    """L3: 5 similar summaries while they fit, 3 once the novel is long."""
    return 5 if chapters <= 100 else 3


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


def goal_characters(bp: Blueprint, goal: Goal) -> list[str]:
    """Canonical names of the characters the goal names (by name or alias)."""
    return bp.characters_in(f"{goal.title}\n{goal.summary}\n{goal.notes}")


def goal_tags(bp: Blueprint, goal: Goal, scenes: Sequence[str] = ()) -> list[str]:
    """The scene and event tags of the goal, named as the chunks' are (`novel.tags`); `scenes`
    are the earlier chapters' summary scenes (places the blueprint may not list)."""
    places = known_places(blueprint_places(bp), scenes)
    return text_tags(f"{goal.title}\n{goal.summary}\n{goal.notes}", places)


def memory_query(bp: Blueprint, goal: Goal) -> str:
    """The memory query: goal title + summary + the characters it names (with their aliases)."""
    names: list[str] = []
    for canon in goal_characters(bp, goal):
        c = bp.character(canon)
        if c is not None:
            names.extend([c.name, *c.aliases])
    return "\n".join(p for p in (goal.title, goal.summary, " ".join(names)) if p)


# Which material wins when they disagree: the order of the layers above, said in words.
PRIORITY = (
    "材料的优先级：【世界设定（L1）】高于【上一章摘要（L4）】，【上一章摘要（L4）】高于"
    "【上一章结尾（L4）】，三者都高于【相关前情（L3 摘要与 L2 片段）】。"
    "相互矛盾时以排在前面的为准；检索到的前情只作参考，不得据此推翻前三者。"
)

STYLE = (
    "写作要求：\n"
    f"- {PRIORITY}\n"
    "- 用简体中文写一章小说正文，约 1500–2500 字；只输出正文，第一行不要写章节标题。\n"
    "- 遵守世界设定与规则；已死亡的人物不能再出场说话；人物言行符合其性格与关系。\n"
    "- 紧接上一章的结尾继续，不重复已写过的情节；完成本章目标。\n"
    "- 用自己原创的文字，不要照抄设定或前文的句子，不要模仿任何现有作品的文字。\n"
    "- 按文风说明写作；分段清晰，对白用中文引号“”。"
)

SYSTEM = (
    "你是一位中文小说作者，正在与一群读者接龙写作一部长篇小说。你严格遵守给定的世界设定和前文事实。"
)


def _md(text: str) -> str:
    """Plain text inside a Markdown block quote (each line quoted; no heading injection)."""
    return "\n".join("> " + line.lstrip("#") for line in text.strip().splitlines() if line.strip())


def retrieved_markdown(ctx: Context) -> str:
    """L3 + L2 as Markdown: similar chapters' summaries, then the plot passages."""
    parts: list[str] = []
    if ctx.summaries:
        parts.append("## 相关章节摘要")
        parts += [
            f"- 第{p.number}章《{p.title}》：{p.summary.summary.strip()}" for p in ctx.summaries
        ]
    if ctx.plot:
        parts.append("## 相关情节片段（供保持一致，勿照抄）")
        for h in ctx.plot:
            parts.append(f"### 第{h.chapter_no}章《{h.title}》")
            parts.append(_md(h.text))
    return "\n".join(parts)


def build_request(ctx: Context, max_tokens: int = 4096) -> LLMRequest:
    bp_json = ctx.blueprint.model_dump_json(indent=None)
    parts: list[str] = [f"【世界设定（L1）】\n{bp_json}"]
    if ctx.previous_summary is not None:
        parts.append(f"【上一章摘要（L4）】\n{ctx.previous_summary.summary.strip()}")
        parts.append(f"【上一章结尾（L4）】\n……{ctx.previous_tail}")
    memory = retrieved_markdown(ctx)
    if memory:
        parts.append(f"【相关前情（L3 摘要与 L2 片段）】\n{memory}")
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


DraftPreview = Callable[[str], Awaitable[None]]


async def generate(
    llm: LLM, ctx: Context, progress: DraftPreview | None = None, max_tokens: int = 4096
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
