"""The story so far, as a pure computation over the chapters.

`replay(blueprint, chapters)` reads the chapters in order and returns what they established:

- each character's status — dead, hurt or missing — with the chapter and the sentence that
  says so (a death is final; a wound stays fresh until the narration heals it or weeks pass);
- each character's last known place, with the chapter and the sentence;
- the names the chapters introduced (or simply used), with the chapter and the sentence.

It is deterministic and immutable: recomputing after a revise, rollback or delete is
`replay(blueprint, remaining_chapters)`; `advance(state, text)` reads one more chapter. The
consistency check judges a chapter against the state of the chapters before it.

The blueprint stays the writers' own record: nothing here edits it. A death the chapters narrate
counts even while the blueprint (not yet updated) still says 存活.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from novel import narrative
from novel.blueprint import Blueprint, Character
from novel.reading import KIN_AFTER, Clause, Reading, Step, read, whereabouts

Status = Literal["dead", "hurt", "missing"]
EventKind = Literal["dead", "hurt", "missing", "healed"]


@dataclass(frozen=True, slots=True)
class Narrated:
    """Where the narration said something: the chapter and the sentence, in its words."""

    chapter: int
    sentence: str


@dataclass(frozen=True, slots=True)
class Mark(Narrated):
    """A status the narration gave a character."""

    status: Status


@dataclass(frozen=True, slots=True)
class Sighting(Narrated):
    """A place the narration put a character."""

    place: str


@dataclass(frozen=True, slots=True)
class Introduction(Narrated):
    """A name the narration used."""

    name: str
    formal: bool  # introduced (名叫…, 自我介绍说叫…), not only used


@dataclass(frozen=True, slots=True)
class CharacterState:
    name: str  # canonical
    status: Mark | None = None  # None: nothing the chapters said changed it
    seen: Sighting | None = None
    fresh_wound: bool = False  # hurt, and neither healed nor weeks passed since


@dataclass(frozen=True, slots=True)
class Event:
    """Something a chapter's narration says happened to a character."""

    kind: EventKind
    name: str
    reading: int  # index of the sentence in the chapter's readings
    sentence: str


@dataclass(frozen=True, slots=True)
class StoryState:
    """What the story has established before the next chapter."""

    blueprint: Blueprint
    chapters: int = 0  # how many chapters were read
    characters: tuple[CharacterState, ...] = ()  # blueprint order, then by first appearance
    introduced: tuple[Introduction, ...] = ()
    places: tuple[str, ...] = ()  # places the chapters named
    surnames: frozenset[str] = frozenset()  # given to people named by role (民警姓孙)
    known: tuple[str, ...] = ()  # names known elsewhere (model summaries, pending proposals)

    def character(self, name: str) -> CharacterState | None:
        return next((c for c in self.characters if c.name == name), None)

    def knowing(self, names: Iterable[str]) -> StoryState:
        """The same state, also knowing `names` (from outside the chapters' text)."""
        extra = [n for n in names if n and n not in self.known]
        return replace(self, known=(*self.known, *dict.fromkeys(extra)))

    def seeing(self, places: Iterable[str]) -> StoryState:
        """The same state, also knowing `places` (from chapter summaries)."""
        return replace(self, places=tuple(dict.fromkeys((*self.places, *places))))

    def noting(self, name: str, status: Status, chapter: int, sentence: str = "") -> StoryState:
        """The same state with a status a model summary reported (霍三: 受伤 in chapter 4)."""
        current = self.character(name) or CharacterState(name)
        changed = _apply(current, status, Mark(chapter, sentence, status))
        others = tuple(c for c in self.characters if c.name != name)
        if self.character(name) is None:
            return replace(self, characters=(*others, changed))
        return replace(
            self, characters=tuple(changed if c.name == name else c for c in self.characters)
        )

    def dead(self) -> dict[str, str]:
        """Canonical name → the status to quote: the blueprint's, or the chapters'."""
        out = {c.name: c.status for c in self.blueprint.characters if narrative.dead(c.status)}
        for c in self.characters:
            if c.status is not None and c.status.status == "dead":
                out.setdefault(c.name, f"已死亡（第{c.status.chapter}章）")
        return out

    def wounded(self) -> dict[str, Mark]:
        """Fresh wounds from the last chapter read: healing now would be too soon."""
        return {
            c.name: c.status
            for c in self.characters
            if c.fresh_wound and c.status is not None and c.status.chapter >= self.chapters
        }

    def last_places(self) -> dict[str, str]:
        out = {c.name: c.location for c in self.blueprint.characters if c.location}
        out.update({c.name: c.seen.place for c in self.characters if c.seen is not None})
        return out

    def names(self) -> narrative.NameIndex:
        index = {n: n for n in (*self.known, *(i.name for i in self.introduced))}
        index.update(self.blueprint.name_index())
        return narrative.NameIndex(index, self.known_places(), self.surnames)

    def known_places(self) -> list[str]:
        bp = self.blueprint
        found = [*bp.places, *(c.location for c in bp.characters), *self.places]
        return list(dict.fromkeys(p for p in found if p and len(p) >= 2))

    def genders(self) -> dict[str, str]:
        return {c.name: g for c in self.blueprint.characters if (g := gender(c))}


# ---- gender, for 他 / 她 ------------------------------------------------------------------------

_FEMALE = re.compile(
    r"女|她|姑娘|小姐|夫人|太太|娘|妻子|母亲|姐|妹|婆|嫂|婶|姨|公主|王后|皇后|少妇|寡妇"
)
_MALE = re.compile(
    r"男|他|汉子|少爷|先生|公子|父亲|儿子|丈夫|兄|弟|叔|伯|爷|老头|和尚|上尉|中尉|军官|将军|王子|书生"
)
_FEMALE_NAME_END = re.compile(r"[娜莎娅莉丽丝薇娃妮琳雯婷娟芳兰梅娘]$")


def gender(c: Character) -> str:
    """'f', 'm' or '' from what the blueprint says of a character (女医, 裴照的师兄, 格雷小姐)."""
    words = " ".join([c.description, *c.traits, *c.aliases])
    female = len(_FEMALE.findall(words)) + bool(_FEMALE_NAME_END.search(c.name))
    male = len(_MALE.findall(words))
    if female > male:
        return "f"
    return "m" if male > female else ""


# ---- what happens to whom ------------------------------------------------------------------------

_NEGATED = re.compile(r"(?:没|不|未|免|险些|差点|以为|如果|要是)[^，。；！？]{0,4}$")
_BODY = re.compile(r"(?:的|[背肩腿臂胸腹头手脚腰腕]|身上)")


def _after(text: str, at: int) -> str:
    return text[at : at + 14].lstrip()


def _actor_events(r: Reading, c: Clause) -> Iterable[tuple[EventKind, str]]:
    text = r.sentence.text
    segment = text[c.head : c.end]
    for a in c.actors:
        if a.canon is None:
            continue
        rest = _after(text, a.end if a.end > a.start else c.head)
        if _NEGATED.search(text[c.start : a.start]):
            continue
        died = narrative.DEATH_IN_CLAUSE.search(segment)
        if died and (
            _NEGATED.search(segment[: died.start()]) or KIN_AFTER.search(segment[: died.start()])
        ):
            died = None  # 差点死在江里; 他父母死了 is not his death
        if a.subject and (narrative.DEATH_AFTER.match(rest) or died):
            yield "dead", a.canon
        elif a.subject and narrative.MISSING_AFTER.match(rest):
            yield "missing", a.canon
        elif narrative.HURT_AFTER.match(rest) or narrative.hurt_in(segment):
            yield "hurt", a.canon
        if narrative.HEALED.search(segment):
            yield "healed", a.canon


def _object_events(
    r: Reading, genders: Mapping[str, str], names: narrative.NameIndex
) -> Iterable[tuple[EventKind, str]]:
    """一刀砍在他的左腿上, 医生宣布陈国栋死亡: the one it happens to is not the subject."""
    text = r.sentence.text
    occurrences = {a: (b, canon) for a, b, canon in names.occurrences(text)}
    for m in narrative.HURT_OBJECT.finditer(text):
        at = m.end()
        pronoun = re.match(r"他们|她们|他|她", text[at:])
        if pronoun and _BODY.match(text, at + pronoun.end()):
            who = r.referent(pronoun.group(0), at, genders)
            if who:
                yield "hurt", who
        elif at in occurrences and _BODY.match(text, occurrences[at][0]):
            yield "hurt", occurrences[at][1]
    for start, (end, canon) in occurrences.items():
        after = text[end : end + 12]
        if (
            narrative.DEATH_AFTER.match(after)
            or narrative.CORPSE.match(after)  # 找到了勒鲁船长的尸体
            or narrative.DEATH_BEFORE.search(text[max(0, start - 6) : start])
        ):
            if not _NEGATED.search(text[max(0, start - 6) : start]):
                yield "dead", canon


def events(
    readings: Sequence[Reading], state: StoryState, names: narrative.NameIndex
) -> list[Event]:
    """Deaths, wounds, disappearances and healings the narration states, in reading order
    (not in speech, memories, dreams or hypotheticals; reported words count: 医生说，他死了)."""
    genders = state.genders()
    out: list[Event] = []
    for i, r in enumerate(readings):
        if r.memory:
            continue
        found: list[tuple[EventKind, str]] = []
        for c in r.clauses:
            if not c.quoted:
                found.extend(_actor_events(r, c))
        found.extend(_object_events(r, genders, names))
        for kind, name in dict.fromkeys(found):
            out.append(Event(kind, name, i, r.sentence.text))
    return out


@dataclass(frozen=True, slots=True)
class ChapterReading:
    """One chapter read against the story before it — by `advance` and by the check alike."""

    text: str
    names: narrative.NameIndex  # the state's names and the ones this chapter uses
    uses: tuple[narrative.NameUse, ...]  # names the state did not know, first use first
    readings: tuple[Reading, ...]
    events: tuple[Event, ...]
    steps: tuple[Step, ...]  # sentences that put someone somewhere


def read_chapter(state: StoryState, text: str) -> ChapterReading:
    known = state.names()
    uses = narrative.person_names(text, known)
    index = dict(known.names)
    for use in uses:  # so that 他 after a new name is not an older character
        index.setdefault(use.name, use.name)
    names = narrative.NameIndex(index, known.places, known.introduced_surnames)
    readings = read(text, names, state.genders())
    steps = whereabouts(readings, state.known_places(), state.last_places())
    return ChapterReading(
        text,
        names,
        tuple(uses),
        tuple(readings),
        tuple(events(readings, state, names)),
        tuple(steps),
    )


# ---- reading the chapters ----------------------------------------------------------------------


def _apply(current: CharacterState, kind: EventKind, mark: Mark) -> CharacterState:
    if current.status is not None and current.status.status == "dead":
        return current  # the dead stay dead (the check reports what contradicts it)
    if kind == "dead":
        return replace(current, status=mark, fresh_wound=False)
    if kind == "hurt":
        return replace(current, status=mark, fresh_wound=True)
    if kind == "missing":
        return replace(current, status=mark)
    healed = current.status if current.status and current.status.status != "hurt" else None
    return replace(current, status=healed, fresh_wound=False)


class _Cast:
    """The characters while a chapter is read (a mutable working copy of the state's)."""

    def __init__(self, state: StoryState) -> None:
        self.by_name = {c.name: c for c in state.characters}
        for c in state.blueprint.characters:
            self.by_name.setdefault(c.name, CharacterState(c.name))

    def get(self, name: str) -> CharacterState:
        return self.by_name.setdefault(name, CharacterState(name))

    def lapse(self) -> None:
        """Weeks pass: every wound so far may have healed."""
        for name, c in self.by_name.items():
            if c.fresh_wound:
                self.by_name[name] = replace(c, fresh_wound=False)

    def seen(self, name: str, where: Sighting) -> None:
        """Seen somewhere: no longer missing."""
        current = self.get(name)
        missing = current.status is not None and current.status.status == "missing"
        self.by_name[name] = replace(
            current, seen=where, status=None if missing else current.status
        )

    def ordered(self, bp: Blueprint) -> tuple[CharacterState, ...]:
        """Blueprint characters in its order, then the others as they appeared."""
        first = {c.name for c in bp.characters}
        return (
            *(self.by_name[c.name] for c in bp.characters),
            *(c for n, c in self.by_name.items() if n not in first),
        )


def advance(state: StoryState, text: str) -> StoryState:
    """The state after one more chapter."""
    number = state.chapters + 1
    chapter = read_chapter(state, text)
    cast = _Cast(state)
    for i, r in enumerate(chapter.readings):
        if narrative.LONG_LAPSE.search(r.sentence.text) and not r.memory:
            cast.lapse()
        for e in chapter.events:
            if e.reading == i:
                mark = Mark(number, e.sentence, "hurt" if e.kind == "healed" else e.kind)
                cast.by_name[e.name] = _apply(cast.get(e.name), e.kind, mark)
        for step in chapter.steps:
            if step.reading == i:
                cast.seen(step.canon, Sighting(number, r.sentence.text, step.place))
    state = replace(state, chapters=number, characters=cast.ordered(state.blueprint))
    return _with_names(state, chapter, number)


def _with_names(state: StoryState, chapter: ChapterReading, number: int) -> StoryState:
    sents = [r.sentence for r in chapter.readings]
    new: list[Introduction] = []
    for use in chapter.uses:
        sentence = next((s.text for s in reversed(sents) if s.start <= use.start), use.name)
        new.append(Introduction(number, sentence, use.name, use.introduced))
    places = narrative.places_in(chapter.text, state.known_places())
    return replace(
        state,
        introduced=(*state.introduced, *new),
        places=tuple(dict.fromkeys((*state.places, *places))),
        surnames=state.surnames | narrative.surnames_introduced(chapter.text),
    )


class _Replays:
    """States already replayed, by the blueprint, the outside names and the chapters so far.

    `advance` is pure, so the state after the same chapters from the same start is the same
    state: the consistency check on every save and `/novel characters` replay the story from its
    first chapter, and only the chapters after the longest remembered prefix are read again.
    A prefix is keyed by a chain of hashes (each chapter's hash folded into the one before), so
    a revised chapter changes its key and every later one. The oldest keys go first.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()  # replays run in worker threads (asyncio.to_thread)
        self.states: OrderedDict[tuple[str, tuple[str, ...], bytes], StoryState] = OrderedDict()

    def replay(self, start: StoryState, chapters: Sequence[str]) -> StoryState:
        origin = (start.blueprint.model_dump_json(), start.known)
        keys: list[bytes] = []
        chain = b""
        for text in chapters:
            chain = hashlib.blake2b(chain + text.encode("utf-8"), digest_size=20).digest()
            keys.append(chain)
        state, done = start, 0
        with self.lock:
            for k in range(len(keys), 0, -1):
                kept = self.states.get((*origin, keys[k - 1]))
                if kept is not None:
                    self.states.move_to_end((*origin, keys[k - 1]))
                    # the caller's blueprint object, not the one of the replay that was kept
                    state, done = replace(kept, blueprint=start.blueprint), k
                    break
        for k in range(done, len(chapters)):
            state = advance(state, chapters[k])
            with self.lock:
                self.states[(*origin, keys[k])] = state
                if len(self.states) > self.size:
                    self.states.popitem(last=False)
        return state

    def clear(self) -> None:
        with self.lock:
            self.states.clear()


REPLAYS = _Replays(size=4096)


def replay(blueprint: Blueprint, chapters: Sequence[str], known: Iterable[str] = ()) -> StoryState:
    """The state after `chapters` (texts, in order), from the blueprint (the chapters read
    before, from the same start, are not read again: see `_Replays`)."""
    return REPLAYS.replay(StoryState(blueprint).knowing(known), chapters)
