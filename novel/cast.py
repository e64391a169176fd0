"""The cast as the story stands, for the members: who is who and what the chapters did to them
(`/novel characters`), what happened lately (`/novel recap`), and the cast map (`/novel map`).

Everything is read from the story state (`novel.ledger`: the stored events of the current
versions of the chapters, as the consistency check reads it) and the stored summaries. The
results are typed; `bot/` words and draws them.

The recap's rule for a model: the model writes a few lines per chapter from the stored
summaries; a chapter whose written lines name someone the story state does not know (not in the
blueprint, not introduced or used by the chapters, not listed by their summaries) is shown
extractively instead, and the unknown names are reported. No model, a model error or an answer
that does not parse: every chapter is extractive (its summary's first sentences). The lines are
in the novel's language (its summaries'), whatever the chat's: names can only be checked there.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

from novel import modeljson, narrative
from novel.blueprint import Blueprint
from novel.ledger import StoryLedger, with_summaries
from novel.repo import ChangeRow, NovelRepo, VersionRow
from novel.story_state import Mark, Sighting, StoryState
from retrieval.ports import LLM, LLMError

log = logging.getLogger(__name__)

RECAP_DEFAULT = 3
RECAP_MAX = 10
RECAP_LINES = 3  # lines per chapter
RECAP_LINE_CHARS = 120
MAP_NODES = 30  # a cast of thirty still reads as a picture

Standing = Literal["alive", "dead", "hurt", "missing"]
RecapSource = Literal["extractive", "model", "model_failed"]


@dataclass(frozen=True, slots=True)
class CastMember:
    name: str
    aliases: tuple[str, ...] = ()
    role: str = ""  # the blueprint's description
    standing: Standing = "alive"
    status: Mark | None = None  # what the chapters said (None: the blueprint's word stands)
    blueprint_status: str = ""  # the blueprint's own word (存活, 已死亡 …)
    seen: Sighting | None = None  # where the chapters last placed them
    home: str = ""  # the blueprint's location, when no chapter placed them
    introduced: int | None = None  # the chapter that first named someone not in the blueprint
    appearances: int = 0  # chapters that name them


@dataclass(frozen=True, slots=True)
class CastView:
    title: str
    chapters: int
    members: tuple[CastMember, ...]


@dataclass(frozen=True, slots=True)
class MapEdge:
    a: str
    b: str
    relation: str = ""  # the blueprint's word for b to a ("" = only seen together)
    shared: int = 0  # chapters that name both


@dataclass(frozen=True, slots=True)
class CastMap:
    title: str
    chapters: int
    members: tuple[CastMember, ...]  # the nodes, most present first
    edges: tuple[MapEdge, ...]
    left_out: int = 0  # characters beyond MAP_NODES


@dataclass(frozen=True, slots=True)
class RecapChapter:
    number: int
    title: str
    lines: tuple[str, ...]
    written: bool = False  # by the model (else from the stored summary)
    unknown: tuple[str, ...] = ()  # names the model used that the story does not know


@dataclass(frozen=True, slots=True)
class Recap:
    title: str
    asked: int
    total: int  # chapters the novel has
    chapters: tuple[RecapChapter, ...]
    source: RecapSource = "extractive"


# ---- the cast --------------------------------------------------------------------------------


def _standing(
    mark: Mark | None, blueprint_status: str, seen: Sighting | None, acted: bool = False
) -> Standing:
    """The chapters' word, else the blueprint's (missing no more once a chapter placed them or
    showed them acting: 沈默 speaks in chapter 3)."""
    if mark is not None:
        return mark.status
    if narrative.dead(blueprint_status):
        return "dead"
    if "失踪" in blueprint_status or "下落不明" in blueprint_status:
        return "alive" if seen is not None or acted else "missing"
    return "hurt" if "伤" in blueprint_status else "alive"


def appearances(state: StoryState, texts: Sequence[str]) -> list[frozenset[str]]:
    """For each chapter, the canonical names it mentions (by name or alias), read paragraph by
    paragraph (the name search costs more than linear in the text's length)."""
    names = state.names()
    return [
        frozenset(canon for p in t.split("\n") for _, _, canon in names.occurrences(p))
        for t in texts
    ]


def cast_of(state: StoryState, seen_in: Sequence[frozenset[str]]) -> tuple[CastMember, ...]:
    """Blueprint characters in its order, then the ones the chapters brought in."""
    count = Counter(n for chapter in seen_in for n in chapter)
    out: list[CastMember] = []
    for c in state.blueprint.characters:
        st = state.character(c.name)
        mark, seen = (st.status, st.seen) if st else (None, None)
        acted = st is not None and st.acted is not None
        out.append(
            CastMember(
                c.name,
                aliases=tuple(c.aliases),
                role=c.description,
                standing=_standing(mark, c.status, seen, acted),
                status=mark,
                blueprint_status=c.status,
                seen=seen,
                home=c.location,
                appearances=count[c.name],
            )
        )
    listed = {m.name for m in out}
    first: dict[str, int] = {}
    for intro in state.introduced:
        first.setdefault(intro.name, intro.chapter)
    for number, names in enumerate(seen_in, start=1):
        for name in names:
            first.setdefault(name, number)
    # people the chapters did something to, introduced, or their summaries list and they name
    extra = [c.name for c in state.characters]
    extra += [i.name for i in state.introduced]
    extra += [n for n in state.known if count[n]]
    for name in dict.fromkeys(n for n in extra if n not in listed):
        st = state.character(name)
        mark, seen = (st.status, st.seen) if st else (None, None)
        out.append(
            CastMember(
                name,
                standing=_standing(mark, "", seen),
                status=mark,
                seen=seen,
                introduced=first.get(name),
                appearances=count[name],
            )
        )
    return tuple(out)


def map_of(
    state: StoryState, members: Sequence[CastMember], seen_in: Sequence[frozenset[str]]
) -> tuple[tuple[CastMember, ...], tuple[MapEdge, ...], int]:
    """The map's nodes (the most present first, blueprint characters ahead of ties) and edges:
    blueprint relationships, plus every pair that shares a chapter, weighted by how many."""
    order = {m.name: i for i, m in enumerate(members)}
    ranked = sorted(members, key=lambda m: (-m.appearances, order[m.name]))
    nodes = tuple(ranked[:MAP_NODES])
    chosen = {m.name for m in nodes}
    shared: Counter[tuple[str, str]] = Counter()
    for names in seen_in:
        for a, b in combinations(sorted(names & chosen, key=order.__getitem__), 2):
            shared[(a, b)] += 1
    relation: dict[tuple[str, str], str] = {}
    index = state.blueprint.name_index()
    for c in state.blueprint.characters:
        for other, word in c.relationships.items():
            canon = index.get(other, other)
            if canon in chosen and c.name in chosen and canon != c.name:
                a, b = sorted((c.name, canon), key=order.__getitem__)
                relation.setdefault((a, b), word)
    pairs = sorted({*shared, *relation}, key=lambda p: (order[p[0]], order[p[1]]))
    edges = tuple(MapEdge(a, b, relation.get((a, b), ""), shared[(a, b)]) for a, b in pairs)
    return nodes, edges, len(members) - len(nodes)


# ---- the recap -------------------------------------------------------------------------------

RECAP_SYSTEM = "你是小说编辑，为错过了几章的读者写前情提要。只输出 JSON。"

_RECAP_ASK = (
    "下面是小说最近几章的摘要。为每一章写 1 到 3 行前情提要，每行一句、40 字以内，只写摘要里有的事，"
    "只用摘要和人物表里出现过的人名，不要编造人物。输出一个 JSON 对象："
    '{"chapters": [{"number": 章节号, "lines": ["……"]}]}。'
)


def extractive_lines(summary: str, limit: int = RECAP_LINES) -> tuple[str, ...]:
    """The summary's first sentences, a line each, cut as the reader cuts them: a closing
    quotation mark stays with the sentence it closes (…有人去算。” — not a line opening with ”)."""
    parts = [s.text for s in narrative.sentences(summary)]
    return tuple(p[:RECAP_LINE_CHARS] for p in parts[:limit]) or ("…",)


def _prompt(state: StoryState, chapters: Sequence[tuple[int, VersionRow]]) -> str:
    cast = "、".join(
        dict.fromkeys(
            [c.name for c in state.blueprint.characters]
            + [i.name for i in state.introduced]
            + list(state.known)
        )
    )
    body = "\n".join(f"第{n}章《{v.title}》：{v.summary.summary.strip()}" for n, v in chapters)
    return f"{_RECAP_ASK}\n\n人物表：{cast or '（无）'}\n\n{body}"


def _written(raw: str) -> dict[int, tuple[str, ...]]:
    """The model's lines by chapter number (whatever does not parse is left out)."""
    data = modeljson.loose_object(raw) or {}
    out: dict[int, tuple[str, ...]] = {}
    entries = data.get("chapters")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        number, lines = entry.get("number"), entry.get("lines")
        if isinstance(lines, str):
            lines = [lines]
        if not isinstance(number, int) or not isinstance(lines, list):
            continue
        kept = tuple(str(x).strip()[:RECAP_LINE_CHARS] for x in lines if str(x).strip())
        if kept:
            out[number] = kept[:RECAP_LINES]
    return out


def check_names(state: StoryState, lines: Sequence[str]) -> tuple[str, ...]:
    """The personal names in `lines` that the story state does not know."""
    uses = narrative.person_names("\n".join(lines), state.names())
    return tuple(dict.fromkeys(u.name for u in uses))


def recap_chapters(
    state: StoryState,
    chapters: Sequence[tuple[int, VersionRow]],
    written: dict[int, tuple[str, ...]],
) -> tuple[RecapChapter, ...]:
    out: list[RecapChapter] = []
    for n, v in chapters:
        fallback = extractive_lines(v.summary.summary)
        lines = written.get(n)
        if not lines:
            out.append(RecapChapter(n, v.title, fallback))
            continue
        unknown = check_names(state, lines)
        if unknown:
            out.append(RecapChapter(n, v.title, fallback, False, unknown))
        else:
            out.append(RecapChapter(n, v.title, lines, True))
    return tuple(out)


# ---- the service -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Story:
    """One chat's story as its chapters stand, read once."""

    blueprint: Blueprint
    current: tuple[tuple[int, VersionRow], ...]
    state: StoryState
    seen_in: tuple[frozenset[str], ...]
    members: tuple[CastMember, ...]


def _read(
    bp: Blueprint,
    current: Sequence[tuple[int, VersionRow]],
    pending: Sequence[ChangeRow],
    folded: StoryState,
) -> _Story:
    state = with_summaries(folded, current, pending, len(current) + 1)
    seen_in = tuple(appearances(state, [v.text for _, v in current]))
    return _Story(bp, tuple(current), state, seen_in, cast_of(state, seen_in))


class StoryService:
    """Reads; never writes. `blueprint` is the chat's current blueprint.

    The state is folded from the stored events (`novel.ledger`), but who appears where still
    scans every chapter's text, so the last reading of each chat is kept, keyed by everything
    it was read from: the blueprint, each chapter's current version and the pending blueprint
    changes. Any write changes the key."""

    def __init__(
        self,
        repo: NovelRepo,
        llm: LLM | None,
        blueprint: Callable[[str], Awaitable[Blueprint]],
        *,
        remembered: int = 64,
    ) -> None:
        self._repo = repo
        self._llm = llm
        self._blueprint = blueprint
        self._remembered = remembered
        self._read: dict[str, tuple[Hashable, _Story]] = {}
        self._ledger = StoryLedger(repo.events)

    async def _story(self, chat_id: str) -> _Story:
        bp = await self._blueprint(chat_id)
        current = await self._repo.book.current_versions(chat_id)
        pending = await self._repo.world.pending_changes(chat_id)
        key = (
            bp.to_json(),
            tuple((n, v.chapter_id, v.version) for n, v in current),
            tuple((c.id, c.status) for c in pending),
        )
        cached = self._read.get(chat_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        folded = await self._ledger.state(chat_id, bp, current)
        story = await asyncio.to_thread(_read, bp, current, pending, folded)
        self._read.pop(chat_id, None)
        self._read[chat_id] = (key, story)
        while len(self._read) > self._remembered:
            self._read.pop(next(iter(self._read)))
        return story

    async def cast(self, chat_id: str) -> CastView:
        story = await self._story(chat_id)
        return CastView(story.blueprint.title, len(story.current), story.members)

    async def cast_map(self, chat_id: str) -> CastMap:
        story = await self._story(chat_id)
        nodes, edges, left_out = map_of(story.state, story.members, story.seen_in)
        return CastMap(story.blueprint.title, len(story.current), nodes, edges, left_out)

    async def recap(self, chat_id: str, count: int = RECAP_DEFAULT) -> Recap:
        if not 1 <= count <= RECAP_MAX:
            raise ValueError(f"recap count {count} outside 1..{RECAP_MAX}")
        story = await self._story(chat_id)
        bp, current, state = story.blueprint, story.current, story.state
        last = current[-count:]
        if not last:
            return Recap(bp.title, count, 0, ())
        written: dict[int, tuple[str, ...]] = {}
        source: RecapSource = "extractive"
        if self._llm is not None:
            try:
                raw = await modeljson.ask(self._llm, RECAP_SYSTEM, _prompt(state, last), 900)
                written = _written(raw)
                source = "model"
            except LLMError as err:
                log.warning("recap of %s: the model failed (%s)", chat_id, err.kind)
                source = "model_failed"
        chapters = recap_chapters(state, last, written)
        if source == "model" and not any(c.written for c in chapters):
            source = "model_failed"  # every written chapter named a stranger
        return Recap(bp.title, count, len(current), chapters, source)
