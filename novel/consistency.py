"""The consistency check run after every chapter (generated, revised or submitted).

A chapter is judged with the story before it: the `StoryState` folded from the earlier chapters'
stored events (`novel.story_state`, `novel.ledger`) — who died, who was hurt and when in story
time, where everyone is, which names were introduced — on top of the blueprint. Offline rules
(no model) catch the slips a reader catches, each quoted from the chapter:

- `dead_acts`: a character who is dead (in the blueprint, in an earlier chapter or earlier in
  this one) acts or speaks — named, by an alias, or as 他/她 bound to them;
- `wound_ignored`: someone whose wound is still healing does what it forbids (a leg: 跑、跳、攀、
  翻墙; an arm: 抡、划船、攀) before it could heal;
- `healed_too_soon`: a wound healed before the time it needs (the text's, the rules', or a
  default for its severity: `StoryState.heal_days`);
- `two_places`: someone in two places in one stretch of story time with no travel told — in one
  scene; or at a place they left on a journey that same day; or elsewhere while keeping a watch
  until dawn; a part of the place they are at (门口, 窗边, 楼上, 书房) is not a second place;
- `unknown_name`: a personal name the blueprint and earlier chapters do not know, used without
  being introduced (名叫…, 自称…, 同事许曼); a role (司狱, 掌柜, 船夫) or an ordinary noun that
  looks like a name (江风, 春雨) is not a name;
- `rule_broken`: a thing a world rule forbids — named by the rule (没有法术 → 法术) or a member
  of the category it names (没有火器 → 手枪, 猎枪, 左轮: `novel.lexicon`).

Memories, dreams, letters, quoted or reported speech, hypotheticals (如果…), negation (没有跑),
plans and rumours are never findings.

With a model, an LLM judge reads the chapter against the blueprint and earlier summaries for the
ConStory error classes (characters, world rules, timeline, facts). Its findings are kept only if
the quote it gives is really in the chapter (like citations: nothing unverified is shown).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from novel import events, lexicon, modeljson, narrative
from novel.blueprint import Blueprint
from novel.modeljson import loose_object
from novel.reading import Reading
from novel.story_state import Anchor, StoryState, Wound, add_wound, moved, read_chapter
from novel.timeline import When
from retrieval.ports import LLM, LLMError

FindingKind = Literal[
    "dead_acts",
    "wound_ignored",
    "healed_too_soon",
    "unknown_name",
    "two_places",
    "rule_broken",
    "characters",
    "world_rules",
    "timeline",
    "facts",
]
MODEL_CLASSES: tuple[FindingKind, ...] = ("characters", "world_rules", "timeline", "facts")
MAX_FINDINGS = 6

__all__ = ["Finding", "StoryState", "check", "check_rules", "judge", "parse_judgement"]


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    quote: str  # the chapter's own words
    # what the presenter fills into the rule/fix strings: name, status, place, other, rule, fix
    fields: Mapping[str, str] = field(default_factory=dict)
    source: Literal["rules", "model"] = "rules"


class _Chapter:
    """One chapter as the rules read it, against the story before it."""

    def __init__(self, text: str, state: StoryState) -> None:
        self.text = text
        self.state = state
        self.spans = narrative.quoted_spans(text)
        reading = read_chapter(state, text)
        self.names = reading.names
        self.uses = reading.uses
        self.readings = reading.readings
        self.events = reading.events
        self.steps = reading.steps
        self.times = reading.times

    def outside_speech(self, r: Reading, at: int) -> bool:
        """Is offset `at` of the sentence narration (not quoted, not reported)?"""
        if narrative.inside(self.spans, r.sentence.start + at):
            return False
        return not any(c.reported and c.start <= at < c.end for c in r.clauses)

    def narrated(self, i: int) -> bool:
        """Is sentence `i` the story now (not a memory, a dream, a hypothetical, hearsay)?"""
        r = self.readings[i]
        return not r.memory and not _HYPOTHETICAL.search(r.sentence.text)


_MEMORY = re.compile(
    r"想起|回忆|记得|记起|忆起|生前|当年|昔日|信里|信中|信上|遗书|遗嘱|(?<![和跟同像与如比])从前(?![厅门院面边台屋堂])|曾经|曾|梦|遗|墓|坟|尸|灵位|牌位|"
    r"灵柩|棺|祭|悼|死|亡|"
    r"去世|临终|如果|要是|倘若|假如|若是|画像|传说|据说|鬼|魂|幽灵|亡灵|说过|讲过"
)
_HYPOTHETICAL = re.compile(
    r"如果|假如|倘若|要是|若是|传说|据说|(?:^|[，；：])听说(?!了)|有人说|故事|梦|戏文|说书"
)
_PRONOUN = re.compile(r"他|她")
_DONE_TO = re.compile(r"^(?:也|又|就|便|已经|早已|终于)*(?:被|让人|叫人|给人)")


# ---- the dead acting ----------------------------------------------------------------------------


def _dead_in(
    r: Reading, dead: Mapping[str, str], ch: _Chapter, before: Reading | None
) -> Finding | None:
    """The first dead character acting in the sentence: by name, or as 他/她 bound to them."""
    s = r.sentence
    for start, end, canon in ch.names.occurrences(s.text):
        if canon not in dead or not ch.outside_speech(r, start):
            continue
        clause = narrative.subject_clause(s.text, start, end)
        if clause is None or _DONE_TO.match(clause) or _MEMORY.search(clause):
            continue  # 沈默的船, 从沈默那里, 被抬上了爬犁, 沈默死了三个月了: not him acting
        carried = [  # 周师傅在一旁听着，咧开嘴笑了: what the clauses after it say he does
            s.text[c.head : c.end]
            for c in r.clauses
            if c.start > start and not c.explicit and any(a.canon == canon for a in c.actors)
        ]
        acts = bool(narrative.ACTS.match(s.text[end:]) or narrative.CLAUSE_ACTS.search(clause))
        acts = acts or any(
            narrative.CLAUSE_ACTS.search(t) and not _MEMORY.search(t) for t in carried
        )
        if acts:
            fields = {"name": s.text[start:end], "who": canon, "status": dead[canon]}
            return Finding("dead_acts", s.text, fields)
    for c in r.clauses:
        for a in c.actors:
            if not (a.pronoun in ("他", "她") and a.subject and a.end > a.start):
                continue
            who = a.canon if a.canon in dead else _bound_to_dead(a.pronoun, before, dead, ch)
            rest = s.text[a.end :]
            if who is None or c.reported or rest.lstrip().startswith("被"):
                continue
            if _MEMORY.search(s.text[a.start : c.end]):
                continue
            known_gender = ch.state.genders().get(who, "") != ""
            does = bool(narrative.ACTS.match(rest)) or (
                known_gender and bool(narrative.CLAUSE_ACTS.search(s.text[a.end : c.end]))
            )
            if not does:
                continue  # (bound to someone of no known gender: only a plain action counts)
            fields = {"name": who, "who": who, "words": a.pronoun, "status": dead[who]}
            return Finding("dead_acts", s.text, fields)
    return None


def _bound_to_dead(
    pronoun: str, before: Reading | None, dead: Mapping[str, str], ch: _Chapter
) -> str | None:
    """他 right after a sentence whose subject cannot be 他 (她, someone unnamed, a group, none)
    and that names exactly one person who can: that person (她回头看了一眼钱守业的空椅子。他正坐
    在那里 — 他 is 钱守业; 港口的人还在议论老汉森。他从人群里挤出来 — 他 is 老汉森)."""
    if before is None or before.memory:
        return None
    want = "m" if pronoun == "他" else "f"
    genders = ch.state.genders()
    subjects = [a.canon for c in before.clauses if not c.reported for a in c.actors if a.subject]
    if not subjects and before.context:
        subjects = list(before.context[-1])  # a sentence with no subject: the one before it
    if any(s is not None and genders.get(s, want) == want for s in subjects):
        return None  # 他 may be the subject
    fits = {
        canon
        for _, _, canon in ch.names.occurrences(before.sentence.text)
        if genders.get(canon) == want  # known to be a man (a woman): nobody's guess
    }
    who = next(iter(fits)) if len(fits) == 1 else None
    return who if who in dead else None


def _dead_acts(ch: _Chapter) -> list[Finding]:
    dead = ch.state.dead()
    died_at: dict[int, list[str]] = {}
    for e in ch.events:
        if e.kind == "died":
            died_at.setdefault(e.reading, []).append(e.who)
    out: list[Finding] = []
    told: set[tuple[int, str]] = set()
    for i, r in enumerate(ch.readings):
        question = r.sentence.text.rstrip("”」』 ").endswith(("？", "?"))
        if not r.memory and not question and dead:
            before = (
                ch.readings[i - 1]
                if i > 0 and ch.readings[i - 1].sentence.scene == r.sentence.scene
                else None
            )
            found = _dead_in(r, dead, ch, before)
            key = (r.sentence.scene, found.fields["who"] if found else "")
            if found is not None and key not in told:
                told.add(key)  # once a scene: 他 after it is him too
                out.append(found)
        for name in died_at.get(i, []):  # dead from the next sentence on
            dead = {**dead, name: dead.get(name, "已死亡（本章）")}
    return out


# ---- names --------------------------------------------------------------------------------------


def _unknown_names(ch: _Chapter) -> list[Finding]:
    out: list[Finding] = []
    sents = [r.sentence for r in ch.readings]
    for use in ch.uses:
        if use.introduced or lexicon.ordinary_noun(use.name):
            continue  # 江风带着潮腥: a river wind, no one's name
        before = [s for s in sents if s.start <= use.start]
        sentence = before[-1].text if before else use.name
        out.append(Finding("unknown_name", sentence, {"name": use.name}))
    return out


# ---- places --------------------------------------------------------------------------------------


def _two_places(ch: _Chapter) -> list[Finding]:
    """In reading order, once a scene a person: where they are after the first clash follows
    from it."""
    found: list[tuple[int, str, Finding]] = []
    for step in ch.steps:
        if step.before is not None:
            fields = {"name": step.words, "place": step.before, "other": step.place}
            text = ch.readings[step.reading].sentence.text
            found.append((step.reading, step.canon, Finding("two_places", text, fields)))
    found += _away(ch)
    out: list[Finding] = []
    told: set[tuple[int, str]] = set()
    for reading, who, finding in sorted(found, key=lambda f: f[0]):
        key = (ch.readings[reading].sentence.scene, who)
        if key not in told:
            told.add(key)
            out.append(finding)
    return out


def _away(ch: _Chapter) -> list[tuple[int, str, Finding]]:
    """Someone at a place while the story has them elsewhere in the same stretch of time: at
    the place they left on a journey that day, away from the place they travelled to that day,
    or away from a watch kept until dawn."""
    known = ch.state.known_places()
    far = ch.state.far_places()
    anchors = {a.who: a for a in ch.state.anchors}
    out: list[tuple[int, str, Finding]] = []
    for e in ch.events:
        if e.kind not in ("present", "arrived", "left") or not ch.narrated(e.reading):
            continue
        a = anchors.get(e.who)
        staying = a is not None and a.journey and a.until is not None  # 在扬州住上三五日
        if e.kind == "present" and (e.named or staying) and a is not None and e.place:
            clash = _clash(a, e.place, e.when, known, far)
            if clash is not None:
                fields = {"name": e.who, "place": clash, "other": e.place}
                out.append((e.reading, e.who, Finding("two_places", e.sentence, fields)))
        now = moved(a, e, ch.state.homes(e.who))
        if now is not None:
            anchors[e.who] = now
    return out


def _within(place: str, left: str) -> bool:
    """Is `place` the place `left`, a place in it, or one it is in? A one-character place (江 in
    在江上漂了两天: on the river) is in no place by a shared character (江边)."""
    if not place or not left:
        return False
    return (
        place == left or (len(place) >= 2 and place in left) or (len(left) >= 2 and left in place)
    )


def _known(place: str, known: Sequence[str]) -> bool:
    """A known place, or one in it (科罗温卡村, 县城的旅店)."""
    return any(k and len(k) >= 2 and place.startswith(k) for k in known)


def _clash(
    a: Anchor, place: str, when: When, known: Sequence[str], far: Sequence[str] = ()
) -> str | None:
    """The place `a` has them at instead, if being at `place` at `when` contradicts it (a
    far-off town holds no place not said to be in it)."""
    apart = any(a.place.startswith(t) and t not in place for t in far)
    if (
        a.until is not None
        and when <= a.until
        and a.place
        and (apart or not narrative.same_place(a.place, place))
    ):
        return a.place
    if when.day != a.when.day:
        return None
    if a.away_from and any(_within(place, p) for p in a.away_from):
        return a.away_from[0]  # (not 临安城 for 桐庐渡口: nothing says one is in the other)
    both_known = _known(a.place, known) and _known(place, known)
    if a.journey and both_known and not narrative.same_place(a.place, place):
        return a.place
    return None


# ---- wounds ---------------------------------------------------------------------------------------

# What a wound forbids, by where it is (the 跑、跳、攀、抡、翻墙, and their kin).
_FORBIDDEN: Mapping[str, re.Pattern[str]] = {
    "leg": re.compile(
        r"跑(?!不)|奔(?!不)|蹿|跳(?!不)|跃|蹦|纵身|攀|爬上|爬到[^，。；！？]{0,4}(?:顶|上|头)|翻过|翻墙|"
        r"翻进|翻上|翻下(?!来)|一骨碌(?:爬|翻|跳|坐)|踢|健步如飞|飞奔|"
        r"一溜烟|撒腿|撒开腿|迈开腿|拔腿|大步流星|大步|一路小跑|冲了出去|冲出|追了上去|追上去|追了出去|追出去"
    ),
    "arm": re.compile(
        r"抡|挥起|挥舞|举起|攀|翻过|翻墙|翻进|划船|划桨|划出|摇橹|摇着桨|船桨|拉网|提起|扛起|劈|"
        # archery takes both arms: 开弓, 弯弓搭箭, 一箭射落
        r"拉弓|开弓|弯弓|张弓|挽弓|引弓|搭箭|放箭|射箭|一箭|"
        r"一拳|双手|拍了一下"
    ),
}
_NOT_DONE = re.compile(
    r"(?:没|不|别|未|不能|无法|想|要是|如果|试着|试图|怎么也|没能|不敢|恨不得|巴不得|差点|险些|打算|准备)"
    r"[^，。；！？]{0,5}$"
)
_OTHER_SIDE = {
    "左": re.compile(r"右(?:手|臂|胳膊|腿|脚)"),
    "右": re.compile(r"左(?:手|臂|胳膊|腿|脚)"),
}


def _healing(ch: _Chapter) -> list[Wound]:
    return [w for w in ch.state.wounds if ch.state.healing(w, ch.state.clock)]


def _wound_now(ch: _Chapter, wounds: Sequence[Wound], who: str, when: When) -> Wound | None:
    live = [w for w in wounds if w.who == who and w.since <= when and ch.state.healing(w, when)]
    return live[-1] if live else None


def _chapter_wounds(ch: _Chapter, i: int, wounds: list[Wound]) -> None:
    for e in ch.events:
        if e.reading == i and e.kind == "wounded":
            w = Wound(0, e.sentence, e.who, e.body, e.side, e.severity, e.heals, e.when)
            wounds[:] = add_wound(wounds, w)


# 拖着断腿, 一瘸一拐, 一点一点地挪: the way a wounded body moves.
_AS_HURT = re.compile(r"拖着|一瘸一拐|一点一点|挪|拄着|扶着|瘸着|单腿|吊着|忍着疼|咬着牙")


def _forbidden_act(w: Wound, clause: str) -> str | None:
    pattern = _FORBIDDEN.get(w.body)
    if pattern is None or _AS_HURT.search(clause):
        return None
    m = pattern.search(clause)
    if m is None or _NOT_DONE.search(clause[: m.start()]):
        return None
    other = _OTHER_SIDE.get(w.side)
    if other is not None and other.search(clause) and "双手" not in clause:
        return None  # 换到右手: the arm that is not hurt
    return m.group(0)


def _wound_ignored(ch: _Chapter) -> list[Finding]:
    wounds = _healing(ch)
    out: list[Finding] = []
    for i, r in enumerate(ch.readings):
        if ch.narrated(i):
            found = _ignored_in(ch, i, r, wounds)
            if found is not None:
                out.append(found)
        _chapter_wounds(ch, i, wounds)
        healed = {e.who for e in ch.events if e.reading == i and e.kind == "healed"}
        wounds[:] = [w for w in wounds if w.who not in healed]
    return out


def _ignored_in(ch: _Chapter, i: int, r: Reading, wounds: Sequence[Wound]) -> Finding | None:
    text = r.sentence.text
    for c in r.clauses:
        if c.reported or c.quoted:
            continue
        for a in c.actors:
            if not a.canon or not a.subject:
                continue
            w = _wound_now(ch, wounds, a.canon, ch.times[i])
            act = _forbidden_act(w, text[c.head : c.end]) if w is not None else None
            if w is not None and act is not None:
                fields = {
                    "name": a.canon,
                    "wound": _wound_words(w),
                    "act": act,
                    "days": str(ch.state.heal_days(w)),
                    "elapsed": str(ch.times[i].day - w.since.day),
                }
                return Finding("wound_ignored", text, fields)
    return None


_BODY_ZH = {"leg": "腿", "arm": "胳膊", "torso": "身上", "head": "头上", "": ""}


def _wound_words(w: Wound) -> str:
    return f"{w.side}{_BODY_ZH.get(w.body, '')}的伤" if w.body else "伤"


def _whose_wound(wounds: Sequence[Wound], words: str) -> list[str]:
    body = events.wound_shape(words)[0]
    owners = {w.who for w in wounds if body and w.body == body}
    return list(owners) if len(owners) == 1 else []


# 消了肿，只是还不能着地 / 好多了，可仍旧下不了地: mending, not healed.
_STILL_NOT = re.compile(
    r"[^。！？]{0,12}?(?:只是|但是|但|可是|可|却|不过)[^，。；！？]{0,4}?(?:还|仍|仍然|仍旧|依旧|尚)"
    r"[^，。；！？]{0,2}?(?:不|没|未|下不了|使不上)"
)


def _healed_too_soon(ch: _Chapter) -> list[Finding]:
    """A wound healed before its time: named, or 他/她, or said of someone wounded."""
    rule = next((r for r in ch.state.blueprint.rules if _INJURY_RULE.search(r)), "")
    wounds = _healing(ch)
    out: list[Finding] = []
    for i, r in enumerate(ch.readings):
        text = r.sentence.text
        healed = [e.who for e in ch.events if e.reading == i and e.kind == "healed"]
        m = narrative.HEALED.search(text)
        if m is not None and _STILL_NOT.search(text, m.end()):
            healed = []  # 消了肿，只是还不能着地: better, not healed
            m = None
        if m is not None and not healed and ch.outside_speech(r, m.start()):
            about = [c for _, _, c in ch.names.occurrences(text)]
            about += [a.canon for c in r.clauses for a in c.actors if a.canon and a.pronoun]
            healed = [c for c in dict.fromkeys(about) if any(w.who == c for w in wounds)]
            if not about:  # 那条断腿竟已痊愈: the one wound of that body part healing now
                healed = _whose_wound(wounds, text[max(0, m.start() - 4) : m.end()])
        clause = text[: m.start()].rsplit("，", 1)[-1][-8:] if m else ""
        body = events.wound_shape(clause + text[m.start() : m.end()])[0] if m else ""
        told = [w for w in wounds if not body or not w.body or w.body == body]
        for who in healed:
            w = _wound_now(ch, told, who, ch.times[i])  # 腿好了 heals a leg, not an arm
            if w is None or not ch.narrated(i) or w.sentence == text:
                continue
            fields = {
                "name": who,
                "rule": rule,
                "wound": _wound_words(w),
                "days": str(ch.state.heal_days(w)),
                "elapsed": str(ch.times[i].day - w.since.day),
            }
            out.append(Finding("healed_too_soon", text, fields))
            break
        wounds[:] = [w for w in wounds if w.who not in healed]
        _chapter_wounds(ch, i, wounds)
    return out


# ---- world rules ----------------------------------------------------------------------------------

_NEGATION = re.compile(
    r"没有|不存在|禁止|不许|不可|不能|不得|无法|绝无|从无|从不|不会有|并无|不会|不通|严禁|还没有"
)
_NEGATED_BEFORE = re.compile(r"没|不|无|未|别|非|莫|假|难以|无法|哪有|何来|岂有|传说|据说|以为")
_INJURY_RULE = re.compile(
    r"伤.*(?:后果|痊愈|代价|不会立刻|需要时间|留下|养|恢复|至少|数周|几周|很长时间|慢慢|复原|长好)"
)
_GENERIC = frozenset(("力量", "现象", "东西", "事情", "事件", "能力", "存在", "情况", "任何"))


@dataclass(frozen=True, slots=True)
class _Forbidden:
    terms: Mapping[str, str]  # a word → the rule that forbids it
    categories: Mapping[str, str]  # a category (火器) → the rule that forbids it


def _terms_of(rest: str, literal: bool) -> tuple[list[str], list[str]]:
    """What one negated phrase forbids (`法术和妖怪`, `任何超自然的力量`, `火器`): words, and
    the categories they name."""
    terms: list[str] = []
    cats: list[str] = []
    for part in re.split(r"和|与|或|及|、|也没有|也不", rest):
        head = part[part.rindex("的") + 1 :] if "的" in part else part
        head = re.sub(r"^(?:任何|真正|所谓|再|一丝|半点|什么|也|还|过)+", "", head)
        cut = [(w, f) for w, f in narrative.tagged(head) if len(w) >= 2][:2]
        for word, flag in cut or ([(head, "n")] if head else []):
            named = lexicon.categories_named(word)
            if named:
                cats.extend(named)
            elif literal and word not in _GENERIC and flag.startswith(("n", "vn", "an")):
                terms.append(word)  # a thing (法术, 汽车), not a verb (再活过来 → 过来)
    return terms, cats


def _forbidden_terms(rules: Sequence[str]) -> _Forbidden:
    """`没有夸张的法术` → the category 法术 (法术, 魔法, 咒语 …); `禁止私藏火器` → 火器 (手枪, 猎枪
    …); `人物已死亡不可复活` → 复活. After 不会 only a category counts (伤不会立刻痊愈 forbids
    no thing)."""
    terms: dict[str, str] = {}
    cats: dict[str, str] = {}
    for rule in rules:
        for clause in re.split(r"[；;。，,！!？?]", rule):
            m = _NEGATION.search(clause)
            if m is None:
                continue
            words, named = _terms_of(clause[m.end() :], literal=m.group(0) != "不会")
            for term in words:
                terms.setdefault(term, rule)
            for cat in named:
                cats.setdefault(cat, rule)
    return _Forbidden(terms, cats)


def _forbidden(ch: _Chapter, rules: Sequence[str]) -> list[Finding]:
    forbidden = _forbidden_terms(rules)
    terms = sorted(forbidden.terms.items(), key=lambda t: -len(t[0]))
    cats = tuple(sorted(forbidden.categories))
    out: list[Finding] = []
    for i, r in enumerate(ch.readings):
        s = r.sentence
        if not ch.narrated(i):
            continue
        hits = [(s.text.find(t), t, rule) for t, rule in terms if t in s.text]
        match = lexicon.member_in(s.text, cats) if cats else None
        if match is not None:
            hits.append((match.start, match.word, forbidden.categories[match.category]))
        for at, _word, rule in sorted(hits):
            if not ch.outside_speech(r, at) or _NEGATED_BEFORE.search(s.text[max(0, at - 4) : at]):
                continue
            out.append(Finding("rule_broken", s.text, {"rule": rule}))
            break
    return out


def _rules_broken(ch: _Chapter) -> list[Finding]:
    rules = ch.state.blueprint.rules
    return _forbidden(ch, rules) if rules else []


def check_rules(text: str, state: StoryState) -> list[Finding]:
    """Every offline rule, in reading order, one finding per sentence at most."""
    chapter = _Chapter(text, state)
    found: list[Finding] = []
    for rule in (
        _dead_acts,
        _wound_ignored,
        _healed_too_soon,
        _unknown_names,
        _two_places,
        _rules_broken,
    ):
        found.extend(rule(chapter))
    return _dedupe(found, text)


def _dedupe(found: Sequence[Finding], text: str) -> list[Finding]:
    seen: set[str] = set()
    out: list[Finding] = []
    for f in sorted(found, key=lambda f: max(text.find(f.quote), 0)):
        key = _norm(f.quote)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# ---- the model's pass -------------------------------------------------------------------------

JUDGE_SYSTEM = "你是严谨的小说审校编辑，检查新章节与世界设定和前文是否一致。只报告确实存在的矛盾，只输出 JSON。"
_JUDGE_ASK = (
    "请检查【本章正文】与【世界设定】【前情摘要】之间的矛盾，类别只有四种：\n"
    "characters（人物：已死亡的人物出场或说话、身份/性格/关系前后不一、人物同时出现在两地）、\n"
    "world_rules（违反世界设定中的规则）、timeline（时间线矛盾：先后、天数、季节、年龄）、\n"
    "facts（与前文事实矛盾：物品、地点、数字、已发生的事件）。\n"
    '输出一个 JSON 对象：{"findings": [{"class": "characters", "quote": "逐字摘录本章正文中出错的一句", '
    '"rule": "违反了什么（引用设定或前文）", "fix": "一句修改建议"}]}。没有矛盾时输出 {"findings": []}。'
)


def _norm(text: str) -> str:
    """For comparing quotes: no whitespace, quote marks or punctuation."""
    return re.sub(r"[\s“”\"'‘’「」『』，。！？、；：,.!?;:…—（）()]", "", text)


def _verify_quote(quote: str, text: str) -> str | None:
    """The chapter's sentence that contains `quote` (whitespace and punctuation ignored)."""
    wanted = _norm(quote)
    if len(wanted) < 4:
        return None
    for s in narrative.sentences(text):
        if wanted in _norm(s.text):
            return s.text
    return None


def parse_judgement(raw: str, text: str) -> list[Finding]:
    """The model's JSON → findings whose quotes are verified against the chapter."""
    data = loose_object(raw)
    items = data.get("findings") if data is not None else None
    if not isinstance(items, list):
        return []
    out: list[Finding] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = str(item.get("class", "")).strip().lower().replace(" ", "_")
        if kind not in MODEL_CLASSES:
            continue
        quote = _verify_quote(str(item.get("quote", "")), text)
        if quote is None:
            continue  # an unverifiable quote is never shown as the chapter's words
        fields = {
            "rule": str(item.get("rule", "")).strip()[:300],
            "fix": str(item.get("fix", "")).strip()[:300],
        }
        out.append(Finding(kind, quote, fields, source="model"))
    return out


async def judge(
    llm: LLM, text: str, bp: Blueprint, earlier: Sequence[str], number: int
) -> list[Finding]:
    """The LLM pass; a failing or unparseable model gives no findings (never blocks a chapter)."""
    context = "\n".join(earlier[-8:]) or "（无）"
    prompt = (
        _JUDGE_ASK
        + f"\n\n【世界设定】\n{bp.model_dump_json()}\n\n【前情摘要】\n{context}"
        + f"\n\n【本章正文：第{number}章】\n{text}"
    )
    try:
        answer = await modeljson.ask(llm, JUDGE_SYSTEM, prompt)
    except LLMError:
        return []
    return parse_judgement(answer, text)


async def check(
    text: str,
    state: StoryState,
    *,
    llm: LLM | None = None,
    earlier: Sequence[str] = (),
    number: int = 0,
) -> list[Finding]:
    """Offline rules, then the model's findings that no rule already made (same sentence)."""
    found = await asyncio.to_thread(check_rules, text, state)  # jieba: CPU work off the loop
    if llm is not None:
        taken = {_norm(f.quote) for f in found}
        for f in await judge(llm, text, state.blueprint, earlier, number):
            if _norm(f.quote) not in taken:
                found.append(f)
                taken.add(_norm(f.quote))
    return _dedupe(found, text)[:MAX_FINDINGS]
