"""The story so far, as a fold over the events of the chapters.

Each chapter yields typed events in story time (`novel.events`: died, wounded, healed, left,
arrived, present, introduced …). `apply(state, events)` folds one chapter's events into the
state; `advance(state, text)` reads a chapter and folds it; `replay(blueprint, chapters)` does it
for every chapter. The events are stored per chapter version (`novel.ledger`), so production
folds what it stored instead of reading the chapters again.

The state holds:

- each character's status — dead, hurt or missing — with the chapter and the sentence that says
  so (a death is final; someone missing who acts again is found);
- the wounds not yet healed: where, how bad, since when in story time, and the healing time the
  text said (the rules' and a default per severity otherwise: `heal_days`);
- each character's last known place — only a place a sentence names, quoted from it — and where
  they are firmly known to be now (`Anchor`: arrived at the end of a journey, keeping watch until
  dawn, or gone from a place on a journey that day);
- the names the chapters introduced (or simply used), the places they named, and the story's
  clock at the end of the last chapter.

It is deterministic and immutable. The consistency check judges a chapter against the state of
the chapters before it. The blueprint stays the writers' own record: nothing here edits it. A
death the chapters narrate counts even while the blueprint (not yet updated) still says 存活.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from novel import events as ev
from novel import narrative, timeline
from novel.blueprint import Blueprint, Character
from novel.events import ChapterEvents, StoryEvent
from novel.reading import Reading, Step, read, whereabouts
from novel.timeline import When

Status = Literal["dead", "hurt", "missing"]


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
    """A place the narration put a character (the sentence names it)."""

    place: str


@dataclass(frozen=True, slots=True)
class Introduction(Narrated):
    """A name the narration used."""

    name: str
    formal: bool  # introduced (名叫…, 自我介绍说叫…), not only used


@dataclass(frozen=True, slots=True)
class Wound(Narrated):
    """A wound not yet healed."""

    who: str
    body: str  # leg | arm | torso | head | ""
    side: str  # 左 | 右 | ""
    severity: str  # light | wound | serious | bone
    heals: int  # the days the text said it needs (0: not said)
    since: When


@dataclass(frozen=True, slots=True)
class Anchor(Narrated):
    """Where someone is firmly known to be: a watch kept until `until`, an arrival at the end
    of a journey, or (`away_from`) gone on a journey from these places on day `when.day`."""

    who: str
    place: str
    when: When
    until: When | None = None
    journey: bool = False
    away_from: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CharacterState:
    name: str  # canonical
    status: Mark | None = None  # None: nothing the chapters said changed it
    seen: Sighting | None = None
    fresh_wound: bool = False  # hurt, and the wound has neither healed nor had its time
    acted: Narrated | None = None  # the last chapter that showed them acting (found if missing)


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
    clock: When = field(default_factory=When)  # story time at the end of the last chapter read
    wounds: tuple[Wound, ...] = ()  # not yet healed
    anchors: tuple[Anchor, ...] = ()  # one per character at most

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
        if current.status is not None and current.status.status in ("dead", status):
            return self  # already so: the chapter's own sentence stays the evidence
        changed = replace(current, status=Mark(chapter, sentence, status))
        if status == "hurt":
            changed = replace(changed, fresh_wound=True)
        others = tuple(c for c in self.characters if c.name != name)
        state = self
        if status == "hurt" and not any(w.who == name for w in self.wounds):
            wound = Wound(chapter, sentence, name, "", "", "wound", 0, self.clock)
            state = replace(self, wounds=(*self.wounds, wound))
        if self.character(name) is None:
            return replace(state, characters=(*others, changed))
        return replace(
            state, characters=tuple(changed if c.name == name else c for c in self.characters)
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

    def wounds_of(self, name: str) -> list[Wound]:
        return [w for w in self.wounds if w.who == name]

    def anchor(self, name: str) -> Anchor | None:
        return next((a for a in self.anchors if a.who == name), None)

    def homes(self, name: str) -> tuple[str, ...]:
        """Where the story last had someone, and where the blueprint has them."""
        c = self.blueprint.character(name)
        found = (self.last_places().get(name, ""), c.location if c is not None else "")
        return tuple(dict.fromkeys(p for p in found if p and p != "不明"))

    def last_places(self) -> dict[str, str]:
        out = {c.name: c.location for c in self.blueprint.characters if c.location}
        out.update({c.name: c.seen.place for c in self.characters if c.seen is not None})
        return out

    def names(self) -> narrative.NameIndex:
        index = {i.name: i.name for i in self.introduced}
        index.update(self.blueprint.name_index())
        index = _with_parts(index)
        for name in self.known:  # a summary's 约纳斯 is the 约纳斯·贝克 the chapters introduced
            index.setdefault(name, name)
        return narrative.NameIndex(index, self.known_places(), self.surnames)

    def known_places(self) -> list[str]:
        bp = self.blueprint
        found = [*bp.places, *(c.location for c in bp.characters), *self.places]
        return list(dict.fromkeys(p for p in found if p and len(p) >= 2 and p != "不明"))

    def far_places(self) -> tuple[str, ...]:
        """Settlements the blueprint says are far off (从柳浦镇搭船到扬州城，要走大半日): a
        place not named as being in one is not in it."""
        return far_settlements(
            " ".join((self.blueprint.setting, *self.blueprint.rules)), tuple(self.known_places())
        )

    def genders(self) -> dict[str, str]:
        return {c.name: g for c in self.blueprint.characters if (g := gender(c))}

    def heal_days(self, w: Wound) -> int:
        """The days a wound needs: what the text said, else the rules' (for its body part, or
        for any), else a default."""
        rules = healing_rules(tuple(self.blueprint.rules))
        return (
            w.heals
            or rules.get(f"{w.severity}:{w.body}", 0)
            or rules.get(w.severity, DEFAULT_HEAL_DAYS.get(w.severity, 14))
        )

    def healing(self, w: Wound, now: When) -> bool:
        """Is the wound still healing at `now`?"""
        return now.day - w.since.day < self.heal_days(w)


def _with_parts(index: dict[str, str]) -> dict[str, str]:
    """The index, also naming someone by a part of a foreign full name (约纳斯 for 约纳斯·贝克)
    when that part names nobody else."""
    parts: dict[str, set[str]] = {}
    for alias, canon in index.items():
        for part in alias.split("·") if "·" in alias else ():
            if len(part) >= 2:
                parts.setdefault(part, set()).add(canon)
    out = dict(index)
    for part, canons in parts.items():
        if len(canons) == 1 and part not in out:
            out[part] = next(iter(canons))
    return out


# ---- distances -------------------------------------------------------------------------------------

# 从科罗温卡到县城，坐马车要走大半天 / 从柳浦镇搭船到扬州城，顺水要走大半日: a journey of hours.
_FAR = re.compile(
    r"从[\u4e00-\u9fff]{2,8}?(?:搭船|坐船|乘船|坐车|坐马车|骑马|走路|步行)?(?:到|去|往)"
    r"(?P<to>[\u4e00-\u9fff]{2,8}?)[，,]?[^。；]{0,10}?(?:要|得|需|需要|足足|也得)"
    r"[^。；]{0,4}?(?:大半日|大半天|半日|半天|一整天|一天|一日|[两三四五六七八九十几]+(?:天|日))"
)


@functools.cache
def far_settlements(text: str, places: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for m in _FAR.finditer(text):
        after = text[m.start("to") :]
        out += sorted((p for p in places if p and after.startswith(p)), key=len)[-1:]
    return tuple(dict.fromkeys(out))


# ---- gender, for 他 / 她 ------------------------------------------------------------------------

_FEMALE = re.compile(
    r"女|她|姑娘|小姐|夫人|太太|娘|妻子|母亲|姐|妹|婆|嫂|婶|姨|公主|王后|皇后|少妇|寡妇"
)
_MALE = re.compile(
    r"男|他|汉子|少爷|先生|公子|父亲|儿子|丈夫|兄|弟|叔|伯|爷|老头|和尚|上尉|中尉|军官|将军|王子|书生|"
    # 后生, 大郎, 军汉, 秀才, 周哥儿, 山羊胡子, 面白无须, 小乙的爹: a man, in older or plainer words
    r"后生|郎(?!中)|汉|秀才|哥儿|胡子|胡须|无须|爹|爸|农夫|渔夫|樵夫|船夫|车夫|马夫|屠夫|小伙"
)
_FEMALE_NAME_END = re.compile(r"[娜莎娅莉丽丝薇娃妮琳雯婷娟芳兰梅娘]$")
# A translated Russian name: a patronymic in -维奇/-奇 (Kuzmich) or a surname in -夫/-宁/-斯基
# is a man's (a woman's ends in -娜/-娃/-娅).
_MALE_FOREIGN_PART = re.compile(r"(?:维奇|[米里洛]奇|夫|宁|斯基)$")


def gender(c: Character) -> str:
    """'f', 'm' or '' from what the blueprint says of a character (女医, 裴照的师兄, 格雷小姐)."""
    words = " ".join([c.description, *c.traits, *c.aliases])
    female = len(_FEMALE.findall(words)) + bool(_FEMALE_NAME_END.search(c.name))
    male = len(_MALE.findall(words))
    for name in (c.name, *c.aliases):
        if "·" in name or name.endswith("维奇"):
            male += sum(
                bool(_MALE_FOREIGN_PART.search(part)) for part in name.split("·")[1:] or [name]
            )
    if female > male:
        return "f"
    return "m" if male > female else ""


# ---- healing times -------------------------------------------------------------------------------

# Days a wound needs when neither the text nor a rule says: a scratch, a cut, a bad wound, a
# broken bone.
DEFAULT_HEAL_DAYS = {"light": 3, "wound": 14, "serious": 60, "bone": 60}
_BONE_RULE = re.compile(r"骨|筋")
_SERIOUS_RULE = re.compile(r"重伤|伤重|大伤")
_NOT_WITHIN = re.compile(r"不会|不能|不可|不该|绝不")
_ANY_RULE = re.compile(r"伤|骨折|骨头|痊愈|长好|复原")


@functools.cache
def healing_rules(rules: tuple[str, ...]) -> dict[str, int]:
    """Healing times a blueprint's rules state, by severity: 伤筋动骨一百天 → bone 100, 重伤要养
    三个月 → serious 90, 受伤至少半个月才能好 → every wound 15. A rule that names a body part
    holds for wounds there only, keyed `severity:body` (腿上的刀伤要两个月 → wound:leg 60)."""
    out: dict[str, int] = {}
    for rule in rules:
        for part in re.split(r"[，,；;。]", rule):
            if _NOT_WITHIN.search(part):
                continue  # 不会在一夜之间痊愈: a bound, no healing time
            days = timeline.lapse(part) if _ANY_RULE.search(part) else None
            if not days:
                continue
            body = ev.wound_shape(part)[0]
            where = f":{body}" if body else ""
            if _BONE_RULE.search(part):
                severities: tuple[str, ...] = ("bone",)
            elif _SERIOUS_RULE.search(part):
                severities = ("serious", "bone")
            else:
                severities = ("wound", "serious", "bone")
            for severity in severities:
                out.setdefault(severity + where, days)
    return out


_SEVERITY_ORDER = ("", "light", "wound", "serious", "bone")


def add_wound(wounds: Sequence[Wound], w: Wound) -> list[Wound]:
    """`wounds` with `w`: a wound told again the same day (砍在马六的右腿上 … 给马六上了药，用夹板
    把腿固定住) is one wound, with the worse severity and every detail either telling gives."""
    for k, old in enumerate(wounds):
        same_part = not old.body or not w.body or old.body == w.body
        if old.who == w.who and old.since.day == w.since.day and same_part:
            worse = (
                w
                if _SEVERITY_ORDER.index(w.severity) > _SEVERITY_ORDER.index(old.severity)
                else old
            )
            merged = replace(
                old,
                body=old.body or w.body,
                side=old.side or w.side,
                severity=worse.severity,
                heals=max(old.heals, w.heals),
            )
            return [*wounds[:k], merged, *wounds[k + 1 :]]
    return [*wounds, w]


# ---- reading a chapter -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChapterReading:
    """One chapter read against the story before it — by `advance` and by the check alike."""

    text: str
    names: narrative.NameIndex  # the state's names and the ones this chapter uses
    uses: tuple[narrative.NameUse, ...]  # names the state did not know, first use first
    readings: tuple[Reading, ...]
    steps: tuple[Step, ...]  # sentences that put someone somewhere
    times: tuple[When, ...]  # each sentence's story time
    events: tuple[StoryEvent, ...]
    acted: tuple[tuple[str, int], ...]  # who the narration shows acting, first sentence first


def read_chapter(state: StoryState, text: str) -> ChapterReading:
    known = state.names()
    uses = narrative.person_names(text, known)
    index = dict(known.names)
    for use in uses:  # so that 他 after a new name is not an older character
        index.setdefault(use.name, use.name)
    names = narrative.NameIndex(index, known.places, known.introduced_surnames)
    genders = state.genders()
    readings = read(text, names, genders)
    texts = [r.sentence.text for r in readings]
    times = timeline.clock(texts, state.clock, [r.memory for r in readings])
    steps = [  # 周大山 ends like a mountain's name; a person is no place
        s
        for s in whereabouts(
            readings, state.known_places(), state.last_places(), times, state.far_places()
        )
        if s.place not in names.names and (s.before or "") not in names.names
    ]
    found = ev.extract(readings, steps, uses, names, genders, state.clock, text)
    return ChapterReading(
        text,
        names,
        tuple(uses),
        tuple(readings),
        tuple(steps),
        tuple(times),
        tuple(found),
        tuple(_acted(readings)),
    )


def _acted(readings: Sequence[Reading]) -> list[tuple[str, int]]:
    """Named subjects of narration clauses that act (speak, move, do), first time each."""
    out: dict[str, int] = {}
    for i, r in enumerate(readings):
        if r.memory:
            continue
        text = r.sentence.text
        for c in r.clauses:
            if c.reported or c.quoted:
                continue
            rest = text[c.head : c.end]
            if not (narrative.ACTS.match(rest) or narrative.CLAUSE_ACTS.search(rest)):
                continue
            for a in c.actors:
                if a.canon and a.subject and a.end > a.start:
                    out.setdefault(a.canon, i)
    return sorted(out.items(), key=lambda x: x[1])


def chapter_events(state: StoryState, chapter: ChapterReading) -> ChapterEvents:
    """What a read chapter contributes to the state (what `novel.ledger` stores)."""
    found = list(chapter.events)
    for name, i in chapter.acted:
        found.append(
            StoryEvent("found", name, i, chapter.readings[i].sentence.text, chapter.times[i])
        )
    places = narrative.places_in(chapter.text, state.known_places())
    end = chapter.times[-1] if chapter.times else state.clock
    return ChapterEvents(
        tuple(sorted(found, key=lambda e: e.reading)),
        tuple(places),
        tuple(sorted(narrative.surnames_introduced(chapter.text))),
        state.clock,
        end,
    )


# ---- folding events into the state -----------------------------------------------------------------


class _Cast:
    """The characters while a chapter's events are folded (a mutable working copy)."""

    def __init__(self, state: StoryState, number: int) -> None:
        self.state = state
        self.number = number
        self.by_name = {c.name: c for c in state.characters}
        for c in state.blueprint.characters:
            self.by_name.setdefault(c.name, CharacterState(c.name))
        self.wounds = list(state.wounds)
        self.anchors = {a.who: a for a in state.anchors}

    def get(self, name: str) -> CharacterState:
        return self.by_name.setdefault(name, CharacterState(name))

    def dead(self, name: str) -> bool:
        st = self.get(name).status
        return st is not None and st.status == "dead"

    def mark(self, e: StoryEvent, status: Status) -> None:
        if self.dead(e.who):
            return  # the dead stay dead (the check reports what contradicts it)
        current = self.get(e.who)
        self.by_name[e.who] = replace(
            current, status=Mark(self.number, e.sentence, status), fresh_wound=status == "hurt"
        )
        if status == "dead":
            self.wounds = [w for w in self.wounds if w.who != e.who]
            self.anchors.pop(e.who, None)

    def wound(self, e: StoryEvent) -> None:
        if self.dead(e.who) or self._told_again(e):
            return
        self.mark(e, "hurt")
        w = Wound(self.number, e.sentence, e.who, e.body, e.side, e.severity, e.heals, e.when)
        self.wounds = add_wound(self.wounds, w)

    def _told_again(self, e: StoryEvent) -> bool:
        """A wound said with nothing new (躺在船舱里养伤, 伤还疼得厉害) of someone whose wound
        is still open is that wound: its day, healing time and sentence stay."""
        vague = not e.body and not e.heals and e.severity in ("", "light", "wound")
        return vague and any(w.who == e.who and w.since.day < e.when.day for w in self.wounds)

    def heal(self, e: StoryEvent) -> None:
        self.wounds = [w for w in self.wounds if w.who != e.who]
        current = self.get(e.who)
        hurt = current.status is not None and current.status.status == "hurt"
        self.by_name[e.who] = replace(
            current, status=None if hurt else current.status, fresh_wound=False
        )

    def seen(self, e: StoryEvent) -> None:
        current = self.get(e.who)
        missing = current.status is not None and current.status.status == "missing"
        seen = Sighting(self.number, e.sentence, e.place) if e.named else current.seen
        self.by_name[e.who] = replace(
            current, seen=seen, status=None if missing else current.status
        )

    def found(self, e: StoryEvent) -> None:
        """Shown acting: no longer missing."""
        current = self.get(e.who)
        missing = current.status is not None and current.status.status == "missing"
        self.by_name[e.who] = replace(
            current,
            status=None if missing else current.status,
            acted=Narrated(self.number, e.sentence),
        )

    def place(self, e: StoryEvent) -> None:
        if self.dead(e.who):
            return
        now = moved(self.anchors.get(e.who), e, self.state.homes(e.who))
        if now is not None:
            self.anchors[e.who] = replace(now, chapter=self.number, sentence=e.sentence)
        if e.kind != "left":
            self.seen(e)

    def settle(self, now: When) -> None:
        """Wounds whose time has come are healed by now (the story moved on)."""
        still: list[Wound] = []
        for w in self.wounds:
            if self.state.healing(w, now):
                still.append(w)
                continue
            current = self.get(w.who)
            self.by_name[w.who] = replace(current, fresh_wound=False)
        self.wounds = still

    def ordered(self, bp: Blueprint) -> tuple[CharacterState, ...]:
        """Blueprint characters in its order, then the others as they appeared."""
        first = {c.name for c in bp.characters}
        return (
            *(self.by_name[c.name] for c in bp.characters),
            *(c for n, c in self.by_name.items() if n not in first),
        )


def moved(a: Anchor | None, e: StoryEvent, home: Sequence[str] = ()) -> Anchor | None:
    """Where someone is firmly known to be after `e` (left / arrived / present), given `a`
    before it and `home` (where the story last had them, where the blueprint has them): setting
    out on a journey makes them away, for that day, from the place left, from where they were
    and from home; arriving on that journey keeps them away; a sentence naming a place puts
    them there; a part of a place (窗边) changes nothing."""
    same_day = a is not None and a.when.day == e.when.day
    here = (a.place,) if a is not None and a.place else ()
    if e.kind == "left":
        away = tuple(dict.fromkeys(p for p in (e.place, *here, *home) if p))
        return Anchor(0, "", e.who, "", e.when, journey=True, away_from=away)
    if e.kind == "present" and not e.named:
        if a is not None and e.until is not None:
            return replace(a, until=e.until)  # 他在柴房里守了一整夜: the watch, where he was
        return a
    if (
        a is not None
        and a.journey
        and same_day
        and a.place
        and e.kind == "present"
        and (a.place in e.place or not e.place.endswith(narrative.SETTLEMENTS))
        and not any(p in e.place or e.place in p for p in a.away_from)
    ):
        return a  # 赶到了县城 … 在县衙对面的客栈里住了下来: still in the town the journey reached
    went = a is not None and a.journey and same_day and a.place == e.place  # 往X去了 … 到了X
    trip = e.kind == "arrived" and (e.journey or bool(a and a.away_from) or went)
    away = a.away_from if a is not None and same_day and e.kind == "arrived" else ()
    if trip and not away and not went:
        away = tuple(dict.fromkeys(p for p in (*here, *home) if p))
    if any(p in e.place or e.place in p for p in away):
        away = ()  # 回到了盐井镇: back where they set out from
    return Anchor(0, "", e.who, e.place, e.when, e.until, trip, away)


_FOLD = {
    "died": lambda cast, e: cast.mark(e, "dead"),
    "missing": lambda cast, e: cast.mark(e, "missing"),
    "wounded": _Cast.wound,
    "healed": _Cast.heal,
    "found": _Cast.found,
    "present": _Cast.place,
    "arrived": _Cast.place,
    "left": _Cast.place,
}


def apply(state: StoryState, chapter: ChapterEvents) -> StoryState:
    """The state after one more chapter, from its events."""
    number = state.chapters + 1
    cast = _Cast(state, number)
    new: list[Introduction] = []
    for e in chapter.events:
        if e.kind in ("introduced", "appeared"):
            new.append(Introduction(number, e.sentence, e.who, e.kind == "introduced"))
            continue
        _FOLD[e.kind](cast, e)
    cast.settle(chapter.end)
    return replace(
        state,
        chapters=number,
        characters=cast.ordered(state.blueprint),
        introduced=(*state.introduced, *new),
        places=tuple(dict.fromkeys((*state.places, *chapter.places))),
        surnames=state.surnames | frozenset(chapter.surnames),
        clock=chapter.end,
        wounds=tuple(cast.wounds),
        anchors=tuple(cast.anchors.values()),
    )


def advance(state: StoryState, text: str) -> StoryState:
    """The state after one more chapter, read from its text."""
    return apply(state, chapter_events(state, read_chapter(state, text)))


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
    """The state after `chapters` (texts, in order), from the blueprint, then also knowing
    `known` (the chapters are read as `novel.ledger` reads them: without outside names; the
    chapters read before, from the same start, are not read again: see `_Replays`)."""
    return REPLAYS.replay(StoryState(blueprint), chapters).knowing(known)
