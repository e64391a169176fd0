"""Who each clause of a chapter is about, read without a model.

Chinese narration names a character once and then drops the subject or says 他/她: 「陆怀山急忙后仰，
右臂还是中了一刀。片刻之后，他的伤口竟已愈合。」 The consistency rules and the story state need to
know that both the wound and the healing are 陆怀山's. `read` walks a chapter clause by clause:

- a clause's subject is a known name at its head (after a connective such as 这时, 于是), names
  joined by 和/与 (a group), a pronoun, or someone unnamed (船夫, 老人); a clause without one
  carries the subject of the clause before it in the same sentence;
- a pronoun stands for the character last named as subject in the scene whose gender fits
  (他 skips a known woman, 她 a known man); someone unnamed in between, or a group for 他/她,
  leaves it unresolved (precision first). 他们/她们 stand for the last group;
- a possessive (他的伤口) is kept apart: the clause is about him, he is not acting;
- words inside quotation marks, and what follows 他说， without them (reported speech), are
  marked so that nobody is judged for what someone else says;
- a memory or a dream lasts to the end of its paragraph (他想起父亲。那时父亲常常…), and a
  hypothetical (如果…) is its sentence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from novel import narrative, timeline
from novel.narrative import (
    KIN,
    ROLES,
    NameIndex,
    Sentence,
    inside,
    quoted_spans,
    sentences,
)
from novel.timeline import When

_PRONOUN = re.compile(r"他们|她们|他|她")
_CONNECTIVE = re.compile(
    r"(?:于是|便|就|又|也|随即|忽然|突然|这时候|那时候|这时|那时|然后|后来|可是|但是|不过|却|只见|此时|"
    r"此刻|接着|随后|终于|原来|只是|而|同时|最后|其实|谁知|不料|果然|竟然|居然|可|"
    # a time said before the subject with no comma: 其时韩守义却在…, 这一夜郑巡检…, 那天阿廖沙…
    r"其时|彼时|是时|这会儿|那会儿|这当口|那当口|当夜|当晚|当天|当日|是夜|同一夜|同一天|"
    r"[这那]一?(?:夜|日|天|晚)(?![里上])|与此同时)*"
)
_UNNAMED = sorted(
    ROLES
    | set(
        "老人 老头 老汉 汉子 男人 女人 年轻人 少年 少女 姑娘 孩子 众人 大家 人们 两人 二人 三人 四人 "
        "那人 此人 来人 对方 有人 渔民们 仆人们 客人们 邻居们 主人 小哥 阿姨 老者".split()
    ),
    key=len,
    reverse=True,
)
# 一个船夫 / 残存的镖师 / 十几个蒙面人: someone the story does not name
_UNNAMED_RE = re.compile(
    r"(?:[一两几十数那这每]+[个位名群]|[\u4e00-\u9fff]{1,4}的)?(?:"
    + "|".join(_UNNAMED)
    + r"|[\u4e00-\u9fff]{1,2}人(?![群家])|[\u4e00-\u9fff]{0,2}(?:汉子|男人|女人)"
    + r"|[一两三几数十百]+户人家|街坊(?:邻居)?们?|乡亲们?|邻居们?)"
)
_NOT_SUBJECT_AFTER = re.compile(r"(?:的|之|家|氏|所|等人|们)")
# What an unnamed subject is, for a later 他/她: a group (众人, 人们, 两个汉子) is neither; a
# woman (农妇, 姑娘, 老太婆) is no 他; a man (伙计, 汉子, 老汉) is no 她.
_GROUP = re.compile(r"众|们|大家|大伙|[两二三四五六七八九十几数群]|一伙|一群|一帮")
_FEMALE_WORD = re.compile(r"女|妇|娘|婆|姑|嫂|婶|妈|姐|妹|妻|媳|姨|丫|尼")
_MALE_WORD = re.compile(r"男|汉|夫|翁|爷|伯|叔|哥|弟|郎|僧|伙计|后生|小伙|老头|少年|书生|公子|先生")
_JOIN = re.compile(r"[和与跟同及、]")
# 刘大勇的妻子 / 她父母: another person, named through someone
KIN_AFTER = re.compile("的?(?:" + "|".join([*KIN, "父母", *_UNNAMED]) + ")")
_CLAUSE_SEP = re.compile(r"[，；：,;:]")
# 等人散了 / 待众人走后 / 等到天黑了: a clause of time (its subject is not who acts next).
_WHEN_CLAUSE = re.compile(r"(?:等到|等|待)[^，；：,;:]{1,8}(?:了|后|完|罢|以后|之后)[，；,;]?$")
# 说罢 / 说完 / 叫罢 / 言毕: the one who just spoke goes on, unnamed.
_AFTER_SPEAKING = re.compile(r"(?:说|言|叫|喊|骂|笑|哭|问|答|想)(?:罢|完|毕)(?!了?[他她])")
# 他想起父亲。那时父亲常常…: the recalling is narration, what follows in the paragraph is not.
_RECALL_VERB = re.compile(r"想起|回忆起?|记起|忆起|梦见|做了一个梦|做了个梦|又梦到|梦到")
# 梦里 / 小时候 / 照片上: the sentence itself is a memory, a dream or a picture.
_RECALL_SCENE = re.compile(
    r"梦里|梦中|小时候|当年|那年|(?<![和跟同像与如比])从前(?![厅门院面边台屋堂])|往事|那时候|记得|照片上|照片里|照片是|画像里|画像上|相片"
)
_WAKE = re.compile(r"醒来|醒了|醒过来|回过神|想着想着|收回思绪|回到眼前")
_IF = re.compile(r"如果|要是|倘若|假如|若是|万一")
# 他说， / 听说， / 告诉他， followed by no quotation mark: the rest is someone's words.
_REPORTED = re.compile(
    r"(?:(?<![不没别])说|(?<![不没别])道|讲|告诉[^，。！？“]{0,6}?|听说|据说|声称|表示|嘱咐[^，。！？“]{0,4}?|回答)[，：:,:](?![“「『\"])"
)

# 一根圆木正砸在他的左腿上: a thing is the clause's subject, not the one carried before it.
_THING_SUBJECT = re.compile(
    r"(?:正|又|也|却)?(?:[一两几]?[根块支颗枚发片条堆截]|[\u4e00-\u9fff]{0,3}的)?"
    r"(?:圆木|木头|石头|石块|树枝|房梁|横梁|箭|子弹|炮弹|瓦片|滚石|落石|矿石|大树|树干|"
    r"刀刃|刀锋|刀尖|刀口|剑锋|剑尖|枪尖)"  # 刀刃划过他的右臂: the blade, not the one swinging
)
_ROLE_BEFORE = re.compile(
    r"[\u4e00-\u9fff]{1,3}(?:员|工|长|师|夫|匠|手|官|兵|警|医)(?=[\u4e00-\u9fff])"
)
Referent = tuple[str | None, ...]  # one character, a group, or (None,) for someone unnamed


@dataclass(frozen=True, slots=True)
class Actor:
    """Someone a clause is about. `canon` is None for someone the story does not name."""

    canon: str | None
    start: int  # in the sentence: the words that name them (start == end when carried)
    end: int
    pronoun: str = ""  # 他 / 她 / 他们 … when a pronoun names them
    subject: bool = True  # False: a possessor (他的伤口 — about him, not him acting)


@dataclass(frozen=True, slots=True)
class Clause:
    start: int  # in the sentence
    end: int
    actors: tuple[Actor, ...]  # its subject(s); carried ones have start == end == head
    head: int  # where the clause's predicate starts (after its subject, or its connectives)
    explicit: bool  # the subject is named in this clause (else carried or none)
    reported: bool  # quoted or reported speech: someone says it, the narration does not
    quoted: bool = False  # inside quotation marks


@dataclass(frozen=True, slots=True)
class Reading:
    sentence: Sentence
    clauses: tuple[Clause, ...]
    memory: bool  # a memory, a dream or a hypothetical: nothing here happens now
    context: tuple[Referent, ...] = ()  # the scene's subjects before this sentence

    def referent(self, pronoun: str, before: int, genders: Mapping[str, str]) -> str | None:
        """Who a pronoun that is not a clause's subject (一刀砍在他的腿上) stands for: the last
        named subject before it, other than the clause's own subject (the one swinging)."""
        stack = list(self.context)
        own: set[str] = set()
        for c in self.clauses:
            if c.start > before:
                break
            names = tuple(a.canon for a in c.actors if a.subject)
            if c.start <= before < c.end:
                thing = _THING_SUBJECT.match(self.sentence.text, c.head)
                own = set() if thing and not c.explicit else {n for n in names if n}
            elif c.explicit and names and not c.reported:
                stack.append(names)
        named = [e for e in stack if e != (None,)]  # the attacker is often unnamed (蒙面人)
        who = resolve(pronoun, named, genders, exclude=frozenset(own))
        return who[0] if who and len(who) == 1 else None

    def named(self) -> list[Actor]:
        """Everyone the sentence's narration is about, in order (subjects and possessors)."""
        return [a for c in self.clauses if not c.reported for a in c.actors if a.canon]


def resolve(
    pronoun: str,
    stack: Sequence[Referent],
    genders: Mapping[str, str],
    *,
    exclude: frozenset[str] = frozenset(),
) -> Referent | None:
    """Who 他/她/他们 stands for, given the scene's subjects so far (most recent last)."""
    if pronoun in ("他们", "她们"):
        return stack[-1] if stack and len(stack[-1]) > 1 else None
    want = "m" if pronoun == "他" else "f"
    for entry in reversed(stack):
        fits = [c for c in entry if c is None or genders.get(c, want) == want]
        fits = [c for c in fits if c not in exclude]
        if not fits:
            continue
        if len(fits) > 1 or fits[0] is None:
            return None  # 他 after a group of men, or after someone unnamed: unclear
        return (fits[0],)
    return None


def _names_at(text: str, at: int, occurrences: Sequence[tuple[int, int, str]]) -> list[Actor]:
    """Known names starting at `at`, joined by 和/与 (a group)."""
    by_start = {a: (a, b, c) for a, b, c in occurrences}
    out: list[Actor] = []
    while at in by_start:
        a, b, canon = by_start[at]
        out.append(Actor(canon, a, b))
        if _JOIN.match(text, b) and b + 1 in by_start:
            at = b + 1
            continue
        break
    return out


@dataclass
class _Scene:
    """The subjects named so far in the current scene (most recent last)."""

    genders: Mapping[str, str]
    stack: list[Referent]
    # stack index → what an unnamed subject there is ("group", "m", "f"; see _GROUP)
    unnamed: dict[int, str] = field(default_factory=dict)
    # the names of the sentence before, when it had no subject (消息传到了阿廖沙那里。他…)
    aside: tuple[str, ...] = ()

    def _aside(self, pronoun: str) -> Referent | None:
        want = "m" if pronoun == "他" else "f" if pronoun == "她" else ""
        fits = {c for c in self.aside if self.genders.get(c, want) == want}
        return (fits.pop(),) if want and len(fits) == 1 else None

    def subjects_at(
        self, text: str, head: int, occurrences: Sequence[tuple[int, int, str]]
    ) -> list[Actor]:
        names = _names_at(text, head, occurrences)
        role = _ROLE_BEFORE.match(text, head) if not names else None
        if role is not None:  # 卫生员沈秀兰 / 护林员韩冬: the name after who they are
            names = _names_at(text, role.end(), occurrences)
        if names:
            after = text[names[-1].end :]
            kin = KIN_AFTER.match(after)
            if kin is not None:  # 刘大勇的妻子: someone else, whom a later 她 may mean
                return [Actor(None, head, names[-1].end + kin.end())]
            if _NOT_SUBJECT_AFTER.match(after):
                possessive = after.startswith("的")
                return [Actor(a.canon, a.start, a.end, subject=False) for a in names][
                    : 1 if possessive else 0
                ]
            return names
        m = _PRONOUN.match(text, head)
        kin = KIN_AFTER.match(text, m.end()) if m is not None else None
        if m is not None and kin is not None:
            return [Actor(None, head, kin.end())]  # 她父母 / 他的妻子: someone else
        if m is not None:
            possessive = text.startswith("的", m.end())
            who = self._aside(m.group(0)) or resolve(
                m.group(0), self._for(m.group(0)), self.genders
            )
            who = who or (None,)
            return [Actor(c, m.start(), m.end(), m.group(0), not possessive) for c in who]
        m = _UNNAMED_RE.match(text, head)
        if m is not None and not text.startswith("的", m.end()):
            named = _names_at(text, m.end(), occurrences)  # 老管家伊万·伊里奇: the name
            return named or [Actor(None, m.start(), m.end())]
        return []

    def push_affected(self, text: str, occurrences: Sequence[tuple[int, int, str]]) -> None:
        """医生宣布陈国栋死亡: the one who died (or was hurt) is who a 他 next refers to."""
        for _start, end, canon in occurrences:
            after = text[end : end + 12]
            if narrative.DEATH_AFTER.match(after) or narrative.HURT_AFTER.match(after):
                self.stack.append((canon,))

    def last_speaker(self, head: int) -> list[Actor]:
        """The one named subject of the sentence before (说罢… goes on with them), if any."""
        top = self.stack[-1] if self.stack else ()
        return [Actor(top[0], head, head)] if len(top) == 1 and top[0] else []

    def _for(self, pronoun: str) -> list[Referent]:
        """The stack a singular pronoun reads: without groups, nor unnamed people of the other
        sex (伙计吓得大叫起来。她… is not the 伙计)."""
        other = {"他": "f", "她": "m"}.get(pronoun)
        if other is None:
            return self.stack
        return [e for k, e in enumerate(self.stack) if self.unnamed.get(k) not in (other, "group")]

    def push(self, actors: Sequence[Actor], text: str = "") -> None:
        subjects = tuple(a.canon for a in actors if a.subject)
        if subjects:
            if subjects == (None,) and text and not actors[0].pronoun:
                start, end = actors[0].start, actors[0].end
                words = text[start : end + 1 if text.startswith("们", end) else end]  # 伙计们
                self.unnamed[len(self.stack)] = _unnamed_kind(words)
            self.stack.append(subjects)


def _unnamed_kind(words: str) -> str:
    if _GROUP.search(words):
        return "group"
    if _FEMALE_WORD.search(words):
        return "f"
    return "m" if _MALE_WORD.search(words) else ""


def _clauses(s: Sentence, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """(start, end, quoted) of each clause: split at ，；： outside quotation marks, and at
    the edges of the quotations themselves."""
    out: list[tuple[int, int, bool]] = []
    start = 0
    text = s.text
    for i, ch in enumerate(text):
        quoted_here = inside(spans, s.start + i) or ch in "“”「」『』"
        boundary = ch in "“「『" or (i > 0 and text[i - 1] in "”」』")
        if boundary and i > start:
            out.append((start, i, inside(spans, s.start + start) or text[start] in "“「『"))
            start = i
        elif _CLAUSE_SEP.match(ch) and not quoted_here:
            out.append((start, i + 1, inside(spans, s.start + start) or text[start] in "“「『"))
            start = i + 1
    if start < len(text):
        out.append((start, len(text), inside(spans, s.start + start) or text[start] in "“「『"))
    return [(a, b, q) for a, b, q in out if text[a:b].strip("，；：,;: ")]


def _read_sentence(
    s: Sentence,
    scene: _Scene,
    names: NameIndex,
    spans: Sequence[tuple[int, int]],
    memory: bool,
    narrated: int = 0,
) -> Reading:
    """`narrated`: in a memory sentence, the clauses that start before it are narration
    (他想起…: he is the subject a later 他 stands for)."""
    text = s.text
    occurrences = [o for o in names.occurrences(text) if not inside(spans, s.start + o[0])]
    m = _REPORTED.search(text)
    reported_from = m.end() if m else len(text)
    context = tuple(scene.stack)
    carried: list[Actor] = []
    clauses: list[Clause] = []
    for start, end, quoted in _clauses(s, spans):
        if quoted:
            clauses.append(Clause(start, end, (), start, False, True, True))
            continue
        lead = len(text[start:end]) - len(text[start:end].lstrip())
        head = _CONNECTIVE.match(text, start + lead).end()  # type: ignore[union-attr]
        if _WHEN_CLAUSE.match(text, head, end):
            clauses.append(Clause(start, end, (), head, False, start >= reported_from))
            continue  # 等人散了，他…: a time, whose subject is not the sentence's
        actors = scene.subjects_at(text[:end], head, occurrences)
        if not actors and not clauses and _AFTER_SPEAKING.match(text, head):
            actors = scene.last_speaker(head)  # 说罢一骨碌翻下床: who just spoke
        reported = start >= reported_from
        if actors:
            carried = [a for a in actors if a.subject] or carried
            clause_head = max(a.end for a in actors)
            clauses.append(Clause(start, end, tuple(actors), clause_head, True, reported))
            if not reported and (not memory or start < narrated):
                scene.push(actors, text)
        else:
            moved = tuple(Actor(a.canon, head, head, a.pronoun) for a in carried)
            clauses.append(Clause(start, end, moved, head, False, reported))
    if not memory:
        scene.push_affected(text, occurrences)
    explicit = [a for c in clauses if c.explicit and not c.reported for a in c.actors]
    subjects = any(a.canon or a.pronoun for a in explicit)
    topic = clauses[0].actors[0] if clauses and clauses[0].explicit else None
    if not memory and topic and topic.canon and not any(a.subject for a in explicit):
        scene.stack.append((topic.canon,))  # 阿廖沙的左小腿断了。他醒过来…: the topic's owner
    scene.aside = (
        ()
        if subjects or memory
        else tuple(dict.fromkeys(c for _, end, c in occurrences if not text.startswith("的", end)))
    )
    return Reading(s, tuple(clauses), memory, context)


def read(text: str, names: NameIndex, genders: Mapping[str, str]) -> list[Reading]:
    """Every sentence of `text` with its clauses' subjects (see the module docstring)."""
    spans = quoted_spans(text)
    out: list[Reading] = []
    scene = _Scene(genders, [])
    scene_no = -1
    recalling = -1  # the paragraph a memory or dream began in
    for s in sentences(text):
        if s.scene != scene_no:  # a new scene: 他 may still be whom the last one ended on
            scene_no, scene = s.scene, _Scene(genders, scene.stack[-1:])
        if _WAKE.search(s.text):
            recalling = -1
        verb = _RECALL_VERB.search(s.text)
        memory = recalling == s.paragraph or bool(
            _IF.search(s.text) or _RECALL_SCENE.search(s.text)
        )
        if verb is not None or _RECALL_SCENE.search(s.text):
            recalling = s.paragraph
        narrated = verb.start() if verb is not None and not memory else 0
        out.append(_read_sentence(s, scene, names, spans, memory or verb is not None, narrated))
    return out


# ---- where everyone is ------------------------------------------------------------------------

_SETTING = re.compile(
    r"(?:在|横在|坐落|位于|临着|里|中|内|上|只有|是|"
    r"(?:上游|下游|边上|岸边|畔|外)?的[\u4e00-\u9fff]{1,6}(?:只有|有|是|在|里)|"
    r"的(?:大门|院门|后门|门|窗户|窗)(?:虚掩|半掩|半开|敞|开|关|紧闭|大开))"  # 盐仓的门虚掩着
)


StepKind = Literal["present", "arrived", "left"]


@dataclass(frozen=True, slots=True)
class Step:
    """A sentence that puts a character somewhere (or takes them away from a place)."""

    reading: int  # index of the sentence in the chapter's readings
    canon: str
    place: str  # where they are now (a part of a place resolves to the place); left: the place
    words: str  # the name or pronoun as written
    before: str | None = None  # where the same scene had them, with no movement since, if else
    kind: StepKind = "present"
    named: bool = True  # the sentence names the place (not only a part of it: 窗边)
    journey: bool = False  # a journey (动身, 往县城赶去, 赶到县城), not a step across a room


# 她要把…报给…，再去律师事务所: the clauses after a plan are the plan.
_PLANNED = re.compile(r"要把|要去|打算|准备|计划|想要")
_AFTER_EVENT = re.compile(r"^[^，。！？]{2,10}(?:以后|之后|过后|结束后|完了|的时候)，")


def _time_passes(text: str) -> bool:
    """Does the sentence open with a phrase that moves story time (这天夜里, 第二天, 礼拜结束
    以后)?"""
    if _AFTER_EVENT.match(text):
        return True
    return any(
        timeline.move(t, text) != t for t in (When(0, timeline.DAWN), When(0, timeline.LATE))
    )


def _where(
    readings: Sequence[Reading], i: int, c: Clause, places: Sequence[str]
) -> narrative.Location | None:
    """Where clause `c` of sentence `i` puts its subject; 埋伏在那里: the place the sentence
    before named."""
    clause = readings[i].sentence.text[: c.end]
    where = narrative.presence(clause, c.head, places)
    if where is None and i > 0 and narrative.there(clause, c.head):
        named = narrative.places_in(readings[i - 1].sentence.text, places)
        where = narrative.Location(named[-1]) if named else None
    return where


def _same_time(readings: Sequence[Reading], times: Sequence[When], i: int) -> bool:
    still = 0 < i < len(times) and times[i] == times[i - 1]
    return still and timeline.same_stretch(readings[i].sentence.text)


def _unnamed_place(clause: str, head: int, places: Sequence[str]) -> str | None:
    """A known place where someone unnamed goes or is (三辆镖车…在福来客栈门口停下): the scene's."""
    move = narrative.movement(clause, head, places)
    where = move.where if move is not None else narrative.presence(clause, head, places)
    if where is None:
        m = re.search(r"在([\u4e00-\u9fff]{2,8})", clause[head:])
        where = narrative.locate(m.group(1), places) if m else None
    return where.place if where is not None and where.place in places else None


def _scene_place(now: str | None, setting: str | None) -> str | None:
    """A sentence setting the scene somewhere (北岬是岛上最高的地方) moves it there, unless it
    names only the town the scene's place is in (the inn's scene stays at the inn)."""
    if setting is None or (now and setting.endswith(narrative.SETTLEMENTS)):
        return now
    return setting


def _setting(text: str, places: Sequence[str]) -> str | None:
    """A sentence that sets the scene (北山寺在半山腰 / 白沙镇临着寒江)."""
    for place in sorted(places, key=len, reverse=True):
        if place and text.startswith(place) and _SETTING.match(text, len(place)):
            return place
    return None


@dataclass
class _Whereabouts:
    places: Sequence[str]
    last: Mapping[str, str]  # where each character was last seen (earlier chapters)
    at: dict[str, str]
    scene_place: str | None = None
    guessed: set[str] = field(default_factory=set)  # placed only by an earlier chapter
    stale: bool = False  # time passed since the scene's place was set
    far: tuple[str, ...] = ()  # settlements far off (StoryState.far_places)

    def moved(
        self, movers: Sequence[Actor], move: narrative.Move
    ) -> list[tuple[str, str, StepKind]]:
        out: list[tuple[str, str, StepKind]] = []
        if any(a.canon is None and a.pronoun for a in movers):
            self.at.clear()  # someone we cannot name moved: forget where everyone was
        for a in movers:
            if a.canon is None:
                if move.where is not None and move.where.place:
                    self.scene_place = move.where.place  # 他走进酒馆: the scene goes with him
                continue
            if move.left:
                out.append((a.canon, move.left, "left"))
            if move.where is not None and move.where.place:
                self.at[a.canon] = self.scene_place = move.where.place
                self.guessed.discard(a.canon)
                out.append((a.canon, move.where.place, "arrived"))
            elif move.where is None or move.where.part is None:
                self.at.pop(a.canon, None)  # left, for somewhere the words do not name
        return out

    def known(self, *places: str) -> bool:
        """Is one of these places one the story knows (or in one: 县城的百货商店), or a name of
        its own (老营房)? Two spots only the words make (沟底, 坡上) may be one place: never a
        clash."""
        return any(
            any(k in p for k in self.places if len(k) >= 2)
            or (len(p) >= 3 and p[-1] not in "地里上边中下")
            for p in places
        )

    def apart(self, a: str, b: str) -> bool:
        """One is a far-off town and the other a place not said to be in it (盐仓 / 扬州城)."""
        for town in self.far:
            if (a.startswith(town) and town not in b) or (b.startswith(town) and town not in a):
                return a in self.places or b in self.places or town in (a, b)
        return False

    def acting(self, actors: Sequence[Actor]) -> None:
        """Someone named acts in a scene set at a place: they are there (北岬是岛上最高的地方 …
        英格丽德跟在后面)."""
        place = self.scene_place
        if place and place not in self.places:  # 走进酒馆: the 小酒馆 the story knows
            longer = [p for p in self.places if len(place) >= 2 and place in p]
            place = longer[0] if len(longer) == 1 else None
        if not place or self.stale:
            return  # only a scene set at a known place (not 救护车的后门), not hours ago
        for a in actors:
            if a.canon and a.end > a.start and a.canon not in self.at:
                self.at[a.canon] = place
                self.guessed.discard(a.canon)

    def present(
        self, actors: Sequence[Actor], where: narrative.Location
    ) -> list[tuple[Actor, str, str | None]]:
        out: list[tuple[Actor, str, str | None]] = []
        for a in actors:
            if a.canon is None:
                continue
            before = self.at.get(a.canon)
            # a part (窗边, 书房) is in the place they are at: the scene's, or where they last
            # were; that last place may be stale, so it places them but never makes a clash
            place = where.place or before or self.scene_place or self.last.get(a.canon)
            if place is None:
                continue
            if where.place is not None:
                if a.canon in self.guessed:
                    before = None
                self.guessed.discard(a.canon)
            elif before is None and not self.scene_place:
                self.guessed.add(a.canon)
            clash = None
            if where.place is not None and before is not None and where.place in before:
                place = before  # 来到江心岛，在岛上的破庙里: still 江心岛
            elif where.place is not None and before is not None and self.known(before, place):
                same = narrative.same_place(before, place) and not self.apart(before, place)
                clash = None if same else before
            out.append((a, place, clash))
            self.at[a.canon] = place
        if where.place:
            self.scene_place, self.stale = where.place, False
        return out


def whereabouts(
    readings: Sequence[Reading],
    places: Sequence[str],
    last: Mapping[str, str] | None = None,
    times: Sequence[When] = (),
    far: Sequence[str] = (),
) -> list[Step]:
    """Every sentence that puts a named character somewhere, scene by scene, with the place
    the same scene had them before when it is another one and nobody moved in between.
    `times`: each sentence's story time; a sentence that says it is the same stretch (这一夜,
    其时) while the clock stands still lets no time pass. `far`: settlements far off (a place
    not named as in one is not in it)."""
    steps: list[Step] = []
    scene = -1
    walk = _Whereabouts(places, last or {}, {}, far=tuple(far))
    for i, r in enumerate(readings):
        if r.sentence.scene != scene:
            scene = r.sentence.scene
            walk = _Whereabouts(places, last or {}, {}, far=tuple(far))
        elif (
            not r.memory
            and not all(c.quoted for c in r.clauses)  # “晚上好。”: words, not the clock
            and _time_passes(r.sentence.text)
            and not _same_time(readings, times, i)
        ):
            walk.at.clear()  # 这天夜里，… : time passed within the scene, anyone may have moved
            walk.stale = True  # …and the scene's place may no longer be where they act
        walk.scene_place = _scene_place(walk.scene_place, _setting(r.sentence.text, places))
        if r.memory:
            continue
        text = r.sentence.text
        for c in r.clauses:
            if not c.reported and not any(a.canon for a in c.actors):
                there = _unnamed_place(text[: c.end], c.head, places)
                walk.scene_place = _scene_place(walk.scene_place, there)
            if c.reported or not c.actors:
                continue
            subjects = [a for a in c.actors if a.subject]
            planned = not c.explicit and _PLANNED.search(text[: c.start])
            move = None if planned else narrative.movement(text[: c.end], c.head, places)
            if move is not None:
                for canon, place, kind in walk.moved(subjects, move):
                    steps.append(Step(i, canon, place, canon, kind=kind, journey=move.journey))
                continue
            where = _where(readings, i, c, places)
            if where is None:
                walk.acting(subjects)
                continue
            for a, place, before in walk.present(subjects, where):
                words = text[a.start : a.end] or a.canon or ""
                named = where.place is not None
                steps.append(Step(i, a.canon or "", place, words, before, named=named))
    return steps
