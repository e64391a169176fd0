"""What a chapter says happened, as typed events in story time.

A chapter yields events — died, wounded (who, body part, severity, the healing time the text
says), healed, left (a place), arrived (a place), present (at a place, perhaps until dawn),
introduced and appeared (a name), missing, found — each with the sentence that says it and its
story time (`novel.timeline`). `extract` reads them from a chapter's readings; they are stored
per chapter version (`novel.ledger`) and folded into the story state (`novel.story_state`),
so a restart reads them back instead of reading the chapters again.

Only narration counts: memories, dreams, hypotheticals and anyone's speech make no event,
except that a healing time may be said by someone (the doctor: 没有三个月好不了).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from novel import narrative, roles, timeline
from novel.narrative import NameIndex, NameUse
from novel.reading import KIN_AFTER, Clause, Reading, Step
from novel.timeline import When

Kind = Literal[
    "died",
    "wounded",
    "healed",
    "left",
    "arrived",
    "present",
    "introduced",
    "appeared",
    "missing",
    "found",
]
Severity = Literal["light", "wound", "serious", "bone", ""]
Body = Literal["leg", "arm", "torso", "head", ""]


@dataclass(frozen=True, slots=True)
class StoryEvent:
    kind: Kind
    who: str  # canonical name
    reading: int  # the sentence's index in the chapter
    sentence: str
    when: When
    place: str = ""  # left / arrived / present
    body: Body = ""  # wounded: where
    side: str = ""  # 左 / 右 when the text says
    severity: Severity = ""
    heals: int = 0  # wounded: the days the text says it needs (0: not said)
    until: When | None = None  # present: until then (a watch kept until dawn)
    by: str = ""  # died / wounded: the one who did it, when named
    formal: bool = False  # introduced: by the narration (名叫…), not only used
    journey: bool = False  # left / arrived on a journey (not across a room)
    named: bool = True  # present / arrived: the sentence names the place


@dataclass(frozen=True, slots=True)
class ChapterEvents:
    """Everything a chapter's reading contributes to the story state."""

    events: tuple[StoryEvent, ...] = ()
    places: tuple[str, ...] = ()  # places the chapter names
    surnames: tuple[str, ...] = ()  # given to people named by role (民警姓孙)
    start: When = field(default_factory=When)
    end: When = field(default_factory=When)  # the story time the chapter ends at

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> ChapterEvents:
        data = json.loads(raw)
        return cls(
            tuple(_event(e) for e in data["events"]),
            tuple(data["places"]),
            tuple(data["surnames"]),
            When(**data["start"]),
            When(**data["end"]),
        )


def _event(data: Mapping[str, Any]) -> StoryEvent:
    fields = dict(data)
    fields["when"] = When(**fields["when"])
    if fields.get("until") is not None:
        fields["until"] = When(**fields["until"])
    return StoryEvent(**fields)


# ---- wounds ------------------------------------------------------------------------------------

_BODY_WORDS: tuple[tuple[Body, str], ...] = (
    ("leg", "小腿|大腿|腿|膝盖|膝|脚踝|脚|踝"),
    ("arm", "胳膊|手臂|臂膀|臂|肩膀|肩头|肩|手腕|腕|手"),
    ("torso", "胸口|胸|腹|肚子|背|腰|肋"),
    ("head", "脖子|颈|头|脸|额|眼"),
)
_BODY = re.compile("|".join(f"(?P<{k}>{w})" for k, w in _BODY_WORDS))
# Words with a body part's character that name no body part (眼前, 骨头, 码头, 手里 …).
_NO_BODY = re.compile(
    r"眼前|骨头|石头|木头|馒头|枕头|码头|里头|外头|上头|前头|后头|两头|回头|点头|摇头|低头|抬头|"
    r"满头|头也不|手里|手中|手下|手段|手艺|脚步|脚下|脚印|背后|背影|背着|转眼|眨眼|眼看|眼见|眼下|"
    r"(?:吊|挂|托|抱|揣)在(?:胸前|脖子上|怀里)"  # an arm in a sling: not a chest wound
)
_SEVERITY: tuple[tuple[Severity, re.Pattern[str]], ...] = (
    (
        "bone",
        re.compile(
            r"骨折|骨裂|骨头?断|断了骨|折断|断成了?两截|伤了骨头|伤到(?:了)?筋骨|筋骨|接骨|正了骨|正骨|"
            r"夹板|木板夹|打上石膏|咔嚓一声|断了"
        ),
    ),
    ("serious", re.compile(r"重伤|伤得很重|伤得不轻|很深|深得|深可见骨|见了骨头|血流不止|昏死")),
    ("light", re.compile(r"擦伤|轻伤|皮外伤|擦破|蹭破|划破了点皮|一点小伤")),
)
# Someone treating someone's wound: 给韩冬正了骨, 给马六上了药, 给陆明远缝了五针.
_TREATED = re.compile(
    r"给(?P<who>[\u4e00-\u9fff]{1,5}?)(?:的[\u4e00-\u9fff]{1,3})?"
    r"(?:接了?骨|正了?骨|上了?药|敷了?药|缝了[一二三四五六七八九十几\d]+针|包扎|处理伤口|打上了?夹板|上了?夹板)"
)
# A verdict on a death: (验了伤，)说他是三更前后死的 — the one whose death it is.
_DIED_WHEN = re.compile(r"(?:说|断定|认定|看出|验明|验出|知道)(他|她)是[^，。；！？不没]{1,8}死的")
_HEAL_TIME = re.compile(
    r"好不了|才能(?:好|长好|痊愈|复原|下地|愈合)|得(?:养|躺)|要养|之内|至少|起码|少说"
)


def wound_shape(text: str) -> tuple[Body, str, Severity]:
    """Where a wound is (leg, arm …), on which side, and how bad, from the words about it."""
    m = _BODY.search(_NO_BODY.sub(lambda x: "□" * len(x.group(0)), text))
    body: Body = ""
    side = ""
    if m is not None:
        body = next(k for k, pattern in _BODY_WORDS if m.group(k))
        before = text[max(0, m.start() - 3) : m.start()]
        side = "左" if "左" in before else "右" if "右" in before else ""
    severity: Severity = "wound"
    for name, pattern in _SEVERITY:
        if pattern.search(text):
            severity = name
            break
    return body, side, severity


# ---- reading one chapter -------------------------------------------------------------------------

# 刀刃划过他的右臂, 箭擦过她的肩头: a blade passing over someone's body wounds them when the
# sentence says what it left (口子, 血); a glance or a hand passing over a face does not.
_GRAZED = re.compile(r"(?<![目眼光手指])(?:划|擦|削|扫|掠)过(?=[^，。！？；]{0,6}的)")
_LEFT_A_WOUND = re.compile(r"口子|伤口|血|伤痕|皮开肉绽")
_NEGATED = re.compile(r"(?:没|不|未|免|险些|差点|以为|如果|要是)[^，。；！？]{0,4}$")
_CLAUSE_BODY = re.compile(r"(?:的|[背肩腿臂胸腹头手脚腰腕]|身上)")


@dataclass
class _Reader:
    readings: Sequence[Reading]
    names: NameIndex
    genders: Mapping[str, str]
    times: Sequence[When]
    chapter: str = ""  # the chapter's text (its analyser cut is the one already made)
    out: list[StoryEvent] = field(default_factory=list)

    def words_between(self, i: int, start: int, end: int) -> list[tuple[str, str]]:
        """The analyser's words of sentence `i` from `start` to `end` (sentence offsets), from
        the chapter's cut: the cut the names were read from, not one more."""
        base = self.readings[i].sentence.start if self.chapter else 0
        text = self.chapter or self.readings[i].sentence.text
        out: list[tuple[str, str]] = []
        offset = 0
        for word, flag in narrative.tagged(text):
            if offset + len(word) > base + end:
                break
            if offset >= base + start:
                out.append((word, flag))
            offset += len(word)
        return out

    def add(self, kind: Kind, who: str, i: int, **more: Any) -> None:
        r = self.readings[i]
        self.out.append(StoryEvent(kind, who, i, r.sentence.text, self.times[i], **more))

    def wound(self, who: str, i: int, words: str, by: str = "") -> None:
        body, side, severity = wound_shape(words)
        self.add("wounded", who, i, body=body, side=side, severity=severity, by=by)

    def acts(self, i: int) -> list[tuple[int, int]]:
        """The sentence's killings and woundings as events; their verbs' spans."""
        r = self.readings[i]
        spans: list[tuple[int, int]] = []
        for act in roles.acts(r, self.names, self.genders):
            if act.verb == "save":
                continue
            spans.append((act.start, act.end))
            if not act.happened:
                continue
            by = act.agents[0] if len(act.agents) == 1 else ""
            for who in act.patients:
                if act.verb == "kill":
                    self.add("died", who, i, by=by)
                else:
                    clause = r.clauses[act.clause]
                    words = r.sentence.text[clause.start : act.end + 12]
                    self.wound(who, i, words, by)
        return spans

    def subjects(self, i: int, spans: Sequence[tuple[int, int]]) -> None:
        """What the narration says of a clause's subject (死了, 失踪了, 受了伤, 伤好了)."""
        r = self.readings[i]
        text = r.sentence.text
        for c in r.clauses:
            if c.quoted:
                continue
            for kind, who in _subject_events(r, c, spans, lambda a, b: self.words_between(i, a, b)):
                if kind == "wounded":
                    self.wound(who, i, text[c.start : c.end])
                else:
                    self.add(kind, who, i)

    def objects(self, i: int) -> None:
        """一刀砍在他的左腿上; 找到了X的尸体; 给韩冬正了骨: it happens to the one named after."""
        r = self.readings[i]
        text = r.sentence.text
        occurrences = {a: (b, canon) for a, b, canon in self.names.occurrences(text)}
        for m in narrative.HURT_OBJECT.finditer(text):
            who = self._owner_at(r, m.end(), occurrences)
            if who:
                self.wound(who, i, text[m.end() : m.end() + 14])
        for m in _GRAZED.finditer(text):
            who = self._owner_at(r, m.end(), occurrences)
            body = _BODY.search(text, m.end(), m.end() + 10)
            if who and body and _LEFT_A_WOUND.search(text, m.end()):
                self.wound(who, i, text[m.end() : m.end() + 14])
        self.treated(r, i, occurrences)
        for start, (end, canon) in occurrences.items():
            after = text[end : end + 12]
            if (narrative.DEATH_AFTER.match(after) and not _subject_at(r, start)) or (
                narrative.CORPSE.match(after)
            ):
                if not _NEGATED.search(text[max(0, start - 6) : start]):
                    self.add("died", canon, i)
        for m in _DIED_WHEN.finditer(text):  # (医生看过以后，)说她是半夜前后死的
            who = r.referent(m.group(1), m.start(1), self.genders) or self._named_lately(
                i, m.group(1)
            )
            if who:
                self.add("died", who, i)
        for m in re.finditer(r"(他|她)的(?:尸体|遗体|尸首|尸身)", text):
            who = r.referent(m.group(1), m.start(), self.genders) or _mentioned_before(
                self.readings, i, m.group(1), self.names, self.genders
            )
            if who:
                self.add("died", who, i)  # 人们找到了他的尸体

    def treated(self, r: Reading, i: int, occurrences: Mapping[int, tuple[int, str]]) -> None:
        """给韩冬正了骨 / 苏郎中给他接了骨: the treated one was wounded."""
        text = r.sentence.text
        for m in _TREATED.finditer(text):
            who = occurrences.get(m.start("who"), (0, ""))[1] or self._owner_at(
                r, m.start("who"), occurrences
            )
            if not who and m.group("who") in ("他", "她"):
                who = self._named_before(r, m.group("who"), m.start("who")) or (
                    r.referent(m.group("who"), m.start("who"), self.genders) or ""
                )
            if who:
                self.wound(who, i, text[m.start() : m.end() + 16] + _after(self.readings, i))

    def _named_lately(self, i: int, pronoun: str) -> str:
        """The one person of the pronoun's gender the nearest of the last three sentences names."""
        for j in range(i, max(0, i - 3), -1):
            who = _mentioned_before(self.readings, j, pronoun, self.names, self.genders)
            if who:
                return who
        return ""

    def _named_before(self, r: Reading, pronoun: str, at: int) -> str:
        """The one person of the pronoun's gender the sentence names before it (安德烈的伤只是
        擦破了皮，医生给他包扎好 — 他 is 安德烈)."""
        want = "f" if pronoun == "她" else "m"
        fits = {
            c
            for a, _, c in self.names.occurrences(r.sentence.text[:at])
            if self.genders.get(c, want) == want
        }
        return next(iter(fits)) if len(fits) == 1 else ""

    def _owner_at(self, r: Reading, at: int, occurrences: Mapping[int, tuple[int, str]]) -> str:
        text = r.sentence.text
        pronoun = re.match(r"他们|她们|他|她", text[at:])
        if pronoun and _CLAUSE_BODY.match(text, at + pronoun.end()):
            return r.referent(pronoun.group(0), at, self.genders) or ""
        if at in occurrences and _CLAUSE_BODY.match(text, occurrences[at][0]):
            return occurrences[at][1]
        return ""

    def heal_times(self, i: int) -> None:
        """没有三个月好不了 (said by anyone): the healing time of the latest wound."""
        text = self.readings[i].sentence.text
        if not _HEAL_TIME.search(text):
            return
        days = timeline.lapse(text)
        if not days:
            return
        for k in range(len(self.out) - 1, -1, -1):
            e = self.out[k]
            if e.kind == "wounded" and i - e.reading <= 4:
                self.out[k] = replace(e, heals=max(e.heals, days))
                return


def _mentioned_before(
    readings: Sequence[Reading], i: int, pronoun: str, names: NameIndex, genders: Mapping[str, str]
) -> str:
    """The one person of the pronoun's gender the sentence before names, if just one."""
    if i == 0:
        return ""
    want = "f" if pronoun == "她" else "m"
    fits = {
        c
        for _, _, c in names.occurrences(readings[i - 1].sentence.text)
        if genders.get(c, want) == want
    }
    return next(iter(fits)) if len(fits) == 1 else ""


def _after(readings: Sequence[Reading], i: int) -> str:
    """The sentence after a treatment (“骨头断成了两截，”她说): what the wound is."""
    return readings[i + 1].sentence.text if i + 1 < len(readings) else ""


def _subject_at(r: Reading, start: int) -> bool:
    return any(a.start == start and a.subject for c in r.clauses for a in c.actors)


def _in_spans(at: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(a <= at < b for a, b in spans)


def _subject_events(
    r: Reading,
    c: Clause,
    spans: Sequence[tuple[int, int]],
    words: Callable[[int, int], list[tuple[str, str]]],
) -> Iterable[tuple[Kind, str]]:
    text = r.sentence.text
    segment = text[c.head : c.end]
    for a in c.actors:
        if a.canon is None or _NEGATED.search(text[c.start : a.start]):
            continue
        rest = text[a.end if a.end > a.start else c.head :][:14].lstrip()
        died = narrative.DEATH_IN_CLAUSE.search(segment)
        if died and (
            _NEGATED.search(segment[: died.start()])
            or KIN_AFTER.search(segment[: died.start()])
            or _in_spans(c.head + died.start(), spans)
            or _own_subject(words(c.head, c.head + died.start()))
        ):
            died = None  # 差点死在江里; 他父母死了; 刺死了林远 is 林远's death
        hurt = narrative.hurt_in(segment) and not any(c.head <= x < c.end for x, _ in spans)
        if a.subject and (narrative.DEATH_AFTER.match(rest) or died):
            yield "died", a.canon
        elif a.subject and narrative.MISSING_AFTER.match(rest):
            yield "missing", a.canon
        elif narrative.HURT_AFTER.match(rest) or hurt:
            yield "wounded", a.canon
        if narrative.HEALED.search(segment):
            yield "healed", a.canon


_PERSONAL = frozenset("他 她 他们 她们 我 你 我们 你们".split())
# What a noun phrase after a preposition is made of (市/第一/医院, 村口的/老/槐树).
_IN_A_PHRASE = ("n", "m", "q", "a", "u", "f", "s", "t")


def _own_subject(before: list[tuple[str, str]]) -> bool:
    """Does a death have a subject of its own after the clause's predicate starts (`before`:
    the analyser's words from there to the death) — a noun or a pronoun right before it, with
    only adverbs between (知道卢三早已死了, 爹娘都死在山洪里, 看着她死去)? Then it is that one's
    death, not the clause subject's. A noun after a preposition (在路上死了) is where, not who."""
    words = list(before)
    while words and words[-1][1].startswith("d"):
        words.pop()
    if not words:
        return False
    word, flag = words[-1]
    if not (flag in ("n", "nr", "nz") or (flag == "r" and word in _PERSONAL)):
        return False
    for _, before_flag in reversed(words[:-1]):  # 在市/第一/医院: still inside 在's phrase
        if before_flag == "p":
            return False
        if not before_flag.startswith(_IN_A_PHRASE):
            break
    return True


def _watches(reader: _Reader, steps: Sequence[Step]) -> None:
    """他守了整整一夜，直到天亮 with no place in the sentence: a watch where they are."""
    placed = {(s.reading, s.canon) for s in steps}
    for i, r in enumerate(reader.readings):
        if r.memory or not timeline.UNTIL_DAWN.search(r.sentence.text):
            continue
        until = timeline.until_dawn(reader.times[i])
        for c in r.clauses:
            for a in c.actors:
                if a.canon and a.subject and not c.reported and (i, a.canon) not in placed:
                    reader.add("present", a.canon, i, until=until, named=False)
                    placed.add((i, a.canon))


# A stay of days at the place a departure is for: 少说也得在扬州住上三五日 / 说好一个星期以后
# 才回来 — right after setting out (上了船, 跟着一道去), they are away that long.
_STAY = re.compile(
    r"在(?P<place>[\u4e00-\u9fff]{2,5}?)(?:住|待|呆|留)(?:上|下)?"
    r"(?P<span>[一二两三四五六七八九十几]+(?:日|天|个?星期|周|个月))|"
    r"(?P<back>[一二两三四五六七八九十几]+(?:日|天|个?星期|周|个月))(?:以后|之后|后)才(?:能)?回"
)
_SET_OUT = re.compile(r"上了(?:船|车|马车)|随(?:船|车)|跟着[^，。]{0,3}去|动身|启程|出发|上路")


def _stays(reader: _Reader, places: Sequence[str]) -> None:
    for i, r in enumerate(reader.readings):
        m = _STAY.search(r.sentence.text)
        near = " ".join(x.sentence.text for x in reader.readings[max(0, i - 2) : i + 1])
        if m is None or r.memory or not _SET_OUT.search(near):
            continue
        span = m.group("span") or m.group("back")
        days = timeline.lapse(
            re.sub(r"^([一二三四五六七八九])[二三四五六七八九]", r"\1", span)
        )  # 三五日
        named = narrative.places_in(m.group("place") or r.sentence.text, places)
        place = next((p for p in named if p in places), "") or _stem_place(
            m.group("place") or "", places
        )
        if not days or not place:
            continue
        until = reader.times[i].later(days, reader.times[i].part)
        for who in {a.canon for c in r.clauses if not c.quoted for a in c.actors if a.canon}:
            reader.add("arrived", who, i, place=place, until=until, journey=True)


def _stem_place(words: str, places: Sequence[str]) -> str:
    """扬州 for 扬州城: a known town named without its 城/镇/村."""
    return next((p for p in places if len(p) >= 3 and words.startswith(p[:-1])), "")


def _whereabouts(reader: _Reader, steps: Sequence[Step]) -> None:
    _watches(reader, steps)
    for step in steps:
        r = reader.readings[step.reading]
        if step.kind == "present":
            until = None
            if timeline.UNTIL_DAWN.search(r.sentence.text):
                until = timeline.until_dawn(reader.times[step.reading])
            reader.add(
                "present", step.canon, step.reading, place=step.place, until=until, named=step.named
            )
        else:
            reader.add(step.kind, step.canon, step.reading, place=step.place, journey=step.journey)


def extract(
    readings: Sequence[Reading],
    steps: Sequence[Step],
    uses: Sequence[NameUse],
    names: NameIndex,
    genders: Mapping[str, str],
    start: When,
    chapter: str = "",
) -> list[StoryEvent]:
    """The chapter's events in reading order (see the module docstring). `chapter`: its text,
    whose analyser cut the reading reuses."""
    texts = [r.sentence.text for r in readings]
    times = timeline.clock(texts, start, [r.memory for r in readings])
    reader = _Reader(readings, names, genders, times, chapter)
    for i, r in enumerate(readings):
        if not r.memory:
            spans = reader.acts(i)
            reader.subjects(i, spans)
            reader.objects(i)
        reader.heal_times(i)
    _whereabouts(reader, steps)
    _stays(reader, sorted(names.places))
    for use in uses:
        i = max((k for k, r in enumerate(readings) if r.sentence.start <= use.start), default=0)
        if readings:
            reader.add("introduced" if use.introduced else "appeared", use.name, i)
    return sorted(_dedupe(reader.out), key=lambda e: e.reading)


def _dedupe(events: Iterable[StoryEvent]) -> list[StoryEvent]:
    """One event of a kind per person and sentence (the most specific wound kept)."""
    out: dict[tuple[str, str, int], StoryEvent] = {}
    for e in events:
        key = (e.kind, e.who, e.reading)
        kept = out.get(key)
        if kept is None or e.kind == "wounded":
            out[key] = e if kept is None else _merge(kept, e)
        elif e.kind in ("present", "arrived", "left") and e.place != kept.place:
            out[(e.kind, e.who + "\0" + e.place, e.reading)] = e
    return list(out.values())


def _rank(e: StoryEvent) -> int:
    return ("", "light", "wound", "serious", "bone").index(e.severity) + (2 if e.body else 0)


def _merge(a: StoryEvent, b: StoryEvent) -> StoryEvent:
    """Two readings of one wound: the more specific one, with the other's details."""
    hi, lo = (b, a) if _rank(b) >= _rank(a) else (a, b)
    return replace(
        hi,
        body=hi.body or lo.body,
        side=hi.side or lo.side,
        by=hi.by or lo.by,
        heals=max(hi.heals, lo.heals),
    )


def end_of(readings: Sequence[Reading], start: When) -> When:
    """The story time a chapter ends at."""
    texts = [r.sentence.text for r in readings]
    times = timeline.clock(texts, start, [r.memory for r in readings])
    return times[-1] if times else start
