"""L3: a chapter's structured summary — by the model when there is one, extractively without.

Both paths give the same shape (`ChapterSummary`): the summary line, the characters, scenes and
events that tag plot-memory chunks, and what the chapter changed about the world (deaths, new
characters, relationships) for the blueprint proposals.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from novel import modeljson, narrative
from novel.blueprint import Blueprint
from novel.modeljson import loose_object
from retrieval.ports import LLM, LLMError

SUMMARY_CHARS = 150


class StatusChange(BaseModel):
    name: str = Field(min_length=1)
    status: str = Field(min_length=1)


class NewCharacter(BaseModel):
    name: str = Field(min_length=1)
    description: str = ""


class RelationChange(BaseModel):
    a: str = Field(min_length=1)  # whose relationship
    b: str = Field(min_length=1)  # with whom
    relation: str = Field(min_length=1)  # what b is to a


class ChapterSummary(BaseModel):
    title: str = ""
    summary: str = Field(min_length=1)
    characters: list[str] = Field(default_factory=list)
    scenes: list[str] = Field(default_factory=list)
    events: list[str] = Field(default_factory=list)
    status_changes: list[StatusChange] = Field(default_factory=list)
    new_characters: list[NewCharacter] = Field(default_factory=list)
    relationships: list[RelationChange] = Field(default_factory=list)
    extractive: bool = False  # written without a model


def load(stored: object, title: str = "") -> ChapterSummary:
    """A stored summary of any shape so far → ChapterSummary. Older ones lack the newer keys;
    a looser one keeps what validates (`_cleaned`) with at least its summary line (else the
    chapter's title); plain text is the summary line."""
    if not isinstance(stored, dict):
        stored = {"summary": stored} if isinstance(stored, str) else {}
    try:
        return ChapterSummary.model_validate(stored)
    except ValidationError:
        pass
    line = str(stored.get("summary") or title or "…")
    try:
        return ChapterSummary.model_validate(
            {
                **_cleaned(dict(stored)),
                "title": title,
                "summary": line,
                "extractive": stored.get("extractive") is True,
            }
        )
    except ValidationError:
        return ChapterSummary(title=title, summary=line)


SUMMARY_SYSTEM = "你是小说编辑，负责为章节写结构化摘要。只输出 JSON。"

_SUMMARY_ASK = (
    "为下面这一章写摘要，输出一个 JSON 对象，键为：title（章节标题）、summary（150 字以内的情节摘要）、"
    "characters（出场主要人物名的数组）、scenes（场景/地点名的数组）、events（关键事件的短语数组，每项 20 字以内）、"
    "status_changes（本章中人物状态的变化，如死亡、失踪、受伤：[{name, status}]）、"
    "new_characters（本章新出场、世界设定中没有的人物：[{name, description}]）、"
    "relationships（本章建立或改变的人物关系：[{a, b, relation}]，relation 是 b 对 a 而言的身份）。"
)
_STRICT = "只输出一个 JSON 对象本身：不要 Markdown 代码块，不要任何解释文字，以 { 开头，以 } 结尾。"


def _listify(data: dict[str, Any]) -> None:
    for key in ("characters", "scenes", "events"):
        value = data.get(key)
        if isinstance(value, str):
            data[key] = [p.strip() for p in re.split(r"[,，、]", value) if p.strip()]
        elif isinstance(value, list):
            data[key] = [str(v).strip() for v in value if isinstance(v, str | int) and str(v)]
    for key in ("status_changes", "new_characters", "relationships"):
        value = data.get(key)
        if not isinstance(value, list):
            data[key] = []
        else:  # drop malformed items rather than the whole summary
            data[key] = [v for v in value if isinstance(v, dict)]


_ITEMS: dict[str, type[BaseModel]] = {
    "status_changes": StatusChange,
    "new_characters": NewCharacter,
    "relationships": RelationChange,
}


def _cleaned(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its lists as lists of strings and its malformed list items dropped."""
    _listify(data)
    for key, model in _ITEMS.items():
        kept = []
        for item in data[key]:
            try:
                kept.append(model.model_validate(item).model_dump())
            except ValidationError:
                continue
        data[key] = kept
    return data


def parse_summary(raw: str) -> ChapterSummary | None:
    """Tolerant: code fences, text around the object, trailing commas, malformed list items."""
    data = loose_object(raw)
    if data is None:
        return None
    data = _cleaned(data)
    data.pop("extractive", None)
    try:
        return ChapterSummary.model_validate(data)
    except ValidationError:
        return None


# ---- without a model --------------------------------------------------------------------------


def extractive_summary(
    text: str, title: str, bp: Blueprint, known_places: list[str] | None = None
) -> ChapterSummary:
    """A summary made only of the chapter's own sentences, plus what the narration states.

    Sentences score by the known characters and places they name, with a bonus for the first
    and last (where chapters set up and land); the best fill up to 150 characters, in order.
    """
    names = narrative.NameIndex(bp.name_index())
    places = [*bp.places, *(c.location for c in bp.characters if c.location)]
    if known_places:
        places.extend(known_places)
    found_places = narrative.places_in(text, places)
    sents = narrative.sentences(text)
    words = [set(narrative.words(s.text)) for s in sents]
    counts = Counter(w for ws in words for w in ws)
    scored: list[tuple[float, int, str]] = []
    for i, s in enumerate(sents):
        who = {canon for _, _, canon in names.occurrences(s.text)}
        where = sum(1 for p in found_places if p in s.text)
        # what only this sentence mentions (a new name, an object, a vow) is what a later
        # chapter will call back to
        novel_words = min(4, sum(1 for w in words[i] if counts[w] == 1))
        score = (
            2.0 * len(who)
            + where
            + novel_words
            + (1.5 if i == 0 else 0)
            + (1.0 if i == len(sents) - 1 else 0)
        )
        if len(s.text) < 6:
            score -= 2
        scored.append((score, i, s.text))
    chosen: list[tuple[int, str]] = []
    used = 0
    for _score, i, sentence in sorted(scored, key=lambda t: (-t[0], t[1])):
        if used + len(sentence) > SUMMARY_CHARS and chosen:
            continue
        chosen.append((i, sentence[:SUMMARY_CHARS]))
        used += len(sentence)
        if used >= SUMMARY_CHARS * 0.8:
            break
    summary = "".join(s for _, s in sorted(chosen)) or text.strip()[:SUMMARY_CHARS] or title
    events = narrative.status_events(text, names)
    introduced = [u for u in narrative.person_names(text, names) if u.introduced]
    characters = bp.characters_in(text) + [u.name for u in introduced]
    event_phrases = [e.sentence[:24] for e in events]
    for _, _i, sentence in sorted(scored, key=lambda t: (-t[0], t[1]))[:3]:
        phrase = re.split(r"[，,：:；]", sentence)[0][:24]
        if phrase and phrase not in event_phrases:
            event_phrases.append(phrase)
    return ChapterSummary(
        title=title,
        summary=summary,
        characters=list(dict.fromkeys(characters)),
        scenes=found_places[:6],
        events=event_phrases[:6],
        status_changes=[
            StatusChange(name=e.name, status=e.status)
            for e in {(e.name, e.status): e for e in events}.values()
        ],
        new_characters=[
            NewCharacter(name=u.name, description=_first_sentence_with(text, u.name))
            for u in introduced
        ],
        relationships=[
            RelationChange(a=r.a, b=r.b, relation=r.relation)
            for r in narrative.relations(text, names)
        ],
        extractive=True,
    )


def _first_sentence_with(text: str, name: str) -> str:
    for s in narrative.sentences(text):
        if name in s.text:
            return s.text[:120]
    return ""


async def summarise(
    llm: LLM | None, text: str, title: str, bp: Blueprint, known_places: list[str] | None = None
) -> ChapterSummary:
    """The model's JSON summary (one retry with a stricter instruction), else extractive."""
    if llm is not None:
        for strict in (False, True):
            prompt = _SUMMARY_ASK + (_STRICT if strict else "") + f"\n\n章节标题：{title}\n\n{text}"
            try:
                answer = await modeljson.ask(llm, SUMMARY_SYSTEM, prompt)
            except LLMError:
                break
            parsed = parse_summary(answer)
            if parsed is not None:
                if not parsed.title:
                    parsed.title = title
                return parsed
    return extractive_summary(text, title, bp, known_places)
