"""Who did what to whom: the agent and the patient of a killing, a wounding or a rescue.

「霍三在江心岛上拔刀，一刀刺死了林远。」 says that 林远 died and 霍三 killed him; a pattern that
only sees 死了 in the clause whose subject is 霍三 records the killer as dead. `acts(reading)`
reads each clause of a sentence (`novel.reading`) for the verbs of killing (杀死, 刺死, 捅死, 杀害
…), wounding (打伤, 刺伤, 砍伤 …) and rescue (救, 救起, 救出 …) in three constructions:

- active: the clause's subject (named, carried, or 他 resolved) acts on the name after the verb
  (霍三刺死了林远; 霍三回身一刀，刺死了他);
- 被 passive: the name before 被 (or the clause's subject) is the patient, the name right after
  被 the agent (林远被霍三刺死; 林远被刺死了 names none);
- 把: the subject is the agent, the name after 把 the patient (霍三把林远刺死了).

Also a cleft (杀死林远的是霍三, 钱守业是刘疤子杀的), a causer (让刘疤子杀了钱守业: the one told to
kill is the agent) and an owner of the weapon (霍三的刀刺伤了林远). Someone unnamed (一个蒙面人,
霍三的手下) is no one (`-`). An act that did not happen — negated (没能, 险些), wanted or planned
(想, 打算), hypothetical (如果), dreamt or remembered, or said by someone — is read with
`happened=False`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from novel.narrative import NameIndex
from novel.reading import Clause, Reading

Verb = Literal["kill", "hurt", "save"]

_KILL = (
    r"杀死|杀害|杀掉|刺死|捅死|砍死|打死|害死|勒死|掐死|毒死|射死|烧死|砸死|击毙|枪杀|射杀|斩杀|"
    r"处死|(?<![自厮暗])杀(?=了|过|的|不|[\u4e00-\u9fff]{2,3}(?:[，。！？；]|$))"
)
# 钱守业死在刘疤子的刀下: the one before 死 died, the owner of the blade killed him.
_DIED_BY = re.compile(r"死在([\u4e00-\u9fff]{2,4}?)的(?:刀|剑|枪|手|拳|掌|斧)下")
_HURT = (
    r"打伤|刺伤|砍伤|砸伤|射伤|咬伤|击伤|弄伤|撞伤|划伤|踢伤|炸伤|抓伤|戳伤|扎伤|伤了(?=[\u4e00-\u9fff]{2,3}的)|"
    r"(?:砍|捅|刺|扎|戳|划)了[一两几]刀|打了[一两几]拳|踢了[一两几]脚|咬了[一两几]口"
)
_SAVE = (
    r"救起|救出|救下|救活|救回|搭救|营救|救上|救了|救(?=[\u4e00-\u9fff]{2,3}[，。！？；一]|$)|救"
)
_VERBS: tuple[tuple[Verb, re.Pattern[str]], ...] = (
    ("kill", re.compile(_KILL)),
    ("hurt", re.compile(_HURT)),
    ("save", re.compile(_SAVE)),
)
_NEGATED = re.compile(
    r"(?:没能|没有|没|未能|未|不能|不敢|无法|别|莫|险些|差点儿?|差一点|几乎|想|要想|打算|准备|企图|"
    r"试图|妄图|要|想要|恨不得|来不及)[^，。；！？]{0,6}$"
)
_CANNOT = re.compile(r"^(?:了)?(?:不了|不死|不成)")
_IF = re.compile(r"如果|要是|倘若|假如|若是|万一|假使")
_HEARSAY = re.compile(r"听说|据说|传说|有人说|梦见|梦到|梦里|以为")
_PURPOSE = re.compile(r"为了$|为$|要去$|去$")
_CAUSE = re.compile(r"(?:让|叫|派|命|命令|令|雇|请|逼|指使)$")
_INSTRUMENT = re.compile(r"^的(?:刀|剑|枪|斧子|斧头|匕首|拳头|弯刀|箭|掌)")
# 马六的右腿: the owner of a body part is who it happens to; 霍三的手下 is someone else.
_BODY = re.compile(
    r"^的?(?:左|右|双|两条|一条)?(?:腿|脚|膝|踝|胳膊|手臂|臂|手|肩|胸|背|腰|腹|头|脸|眼|脖子|颈|心口|胸口|肚子|后背|后脑)"
)
_PASSIVE = re.compile(r"被|惨遭|遭到|遭")
_UNNAMED_AFTER = re.compile(
    r"^(?:了)?(?:[一两几三四五六七八九十]+[个名位]|一个|两个|他们|她们|那个|这个)"
)


@dataclass(frozen=True, slots=True)
class Act:
    verb: Verb
    agents: tuple[str, ...]
    patients: tuple[str, ...]
    happened: bool
    start: int  # the verb, in the sentence
    end: int
    clause: int  # index of the clause in the reading


def _names_from(text: str, at: int, occ: Sequence[tuple[int, int, str]]) -> list[str]:
    """Names starting at `at` (after 了, 把 …), joined by 和/与 (林远和苏晴)."""
    by_start = {a: (b, c) for a, b, c in occ}
    out: list[str] = []
    while at in by_start:
        end, canon = by_start[at]
        out.append(canon)
        if text[end : end + 1] in ("和", "与", "跟", "、") and end + 1 in by_start:
            at = end + 1
            continue
        break
    return out


def _name_before(text: str, end: int, occ: Sequence[tuple[int, int, str]], lo: int) -> list[str]:
    """Names ending at `end` (霍三 in 霍三被…), from the clause's start `lo`."""
    for a, b, canon in occ:
        if b == end and a >= lo:
            joined = [c for x, y, c in occ if y + 1 == a and text[y : y + 1] in "和与跟、"]
            return [*joined, canon]
    return []


class _Clause:
    """One clause with what the reading knows about it."""

    def __init__(
        self,
        r: Reading,
        c: Clause,
        occ: Sequence[tuple[int, int, str]],
        genders: Mapping[str, str],
    ) -> None:
        self.r, self.c, self.occ, self.genders = r, c, occ, genders
        self.text = r.sentence.text
        self.subjects = [a.canon for a in c.actors if a.subject and a.canon]
        self.unnamed_subject = any(a.subject and a.canon is None for a in c.actors)

    def who_at(self, at: int) -> list[str]:
        """The name(s) or the pronoun's referent at `at` (not the owner of someone else:
        霍三的手下 is nobody named; 马六的右腿 is 马六)."""
        rest = self.text[at:]
        skip = re.match(r"(?:了|出来|上来|下来| )*(?:被[\u4e00-\u9fff]{1,3}的)?", rest)
        at += skip.end() if skip else 0
        named = _names_from(self.text, at, self.occ)
        if named:
            end = next(b for a, b, _ in self.occ if a == at) if len(named) == 1 else at
            owner = self.text.startswith("的", end)
            return named if not owner or _BODY.match(self.text[end:]) else []
        m = re.match(r"他们|她们|他|她", self.text[at:])
        if m is None:
            return []
        if self.text.startswith("的", at + m.end()) and not _BODY.match(self.text[at + m.end() :]):
            return []
        who = self.r.referent(m.group(0), at, self.genders) or self._mentioned(m.group(0), at)
        return [who] if who else []

    def _mentioned(self, pronoun: str, at: int) -> str | None:
        """The last name of the sentence before `at` that fits the pronoun and is not the
        clause's subject (把马奎从冰窟窿里拽上来，救了他一命: 他 is 马奎)."""
        want = "f" if pronoun == "她" else "m"
        fits = [
            canon
            for a, _b, canon in self.occ
            if a < at and canon not in self.subjects and self.genders.get(canon, want) == want
        ]
        return fits[-1] if len(set(fits)) == 1 else None

    def subject_or_before(self, at: int) -> list[str]:
        before = _name_before(self.text, at, self.occ, self.c.start)
        if before:
            return before
        if self.unnamed_subject:
            return []
        owner = [
            canon
            for a, b, canon in self.occ
            if self.c.start <= a < at and _INSTRUMENT.match(self.text[b:])
        ]
        possessor = [  # 马六的右腿被砍了一刀: the leg's owner
            a.canon
            for a in self.c.actors
            if a.canon and not a.subject and _BODY.match(self.text[a.end :])
        ]
        return owner[:1] or self.subjects or possessor[:1]

    def happened(self, start: int, end: int) -> bool:
        r, c, text = self.r, self.c, self.text
        if r.memory or c.reported or c.quoted:
            return False
        if _NEGATED.search(text[c.start : start]) or _CANNOT.match(text[end:]):
            return False
        if _PURPOSE.search(text[c.start : start]):
            return False
        return not (_IF.search(text[:start]) or _HEARSAY.search(text[:start]))


def _cleft(cl: _Clause, verb: Verb, m: re.Match[str]) -> Act | None:
    """杀死林远的是霍三 / 钱守业是刘疤子杀的 / 救了苏晴的是林远."""
    text = cl.text
    after = text[m.end() :].lstrip("了")
    start = len(text) - len(after)
    patients = _names_from(text, start, cl.occ)
    agents: list[str] = []
    k = re.match(r"[\u4e00-\u9fff]{2,4}?的(?:人)?(?:是|乃是|就是)", text[start:])
    if patients and k is not None:
        agents = _names_from(text, start + k.end(), cl.occ)
    elif re.match(r"(?:下来|上来|出来|起来|了)?的", text[m.end() :]):
        shi = text.rfind("是", cl.c.start, m.start())
        if shi >= 0:
            agents = _names_from(text, shi + 1, cl.occ)
            patients = _name_before(text, shi, cl.occ, cl.c.start) or cl.subjects
    if not (agents and patients):
        return None
    happened = cl.happened(m.start(), m.end())
    return Act(verb, tuple(agents), tuple(patients), happened, m.start(), m.end(), 0)


def _one(cl: _Clause, verb: Verb, m: re.Match[str], index: int) -> Act:
    text = cl.text
    lo = cl.c.start
    before = text[lo : m.start()]
    happened = cl.happened(m.start(), m.end())
    passive = list(_PASSIVE.finditer(before))
    ba = max(before.rfind("把"), before.rfind("将"))
    if passive:
        at = lo + passive[-1].start()
        agents = cl.who_at(lo + passive[-1].end())
        patients = cl.subject_or_before(at)
        return Act(verb, tuple(agents), tuple(patients), happened, m.start(), m.end(), index)
    cause = next((c for c in re.finditer(r"让|叫|派|命令|命|令|雇|逼|指使", before)), None)
    agents = cl.subject_or_before(m.start())
    if cause is not None and _CAUSE.search(before[: cause.end()]):
        told = cl.who_at(lo + cause.end())
        agents = told or agents
    if ba >= 0:
        patients = cl.who_at(lo + ba + 1)
        agents = cl.subject_or_before(lo + ba) if cause is None else agents
        return Act(verb, tuple(agents), tuple(patients), happened, m.start(), m.end(), index)
    after = text[m.end() :]
    if _UNNAMED_AFTER.match(after) and not re.match(r"^(?:了)?(?:他们|她们)", after):
        return Act(verb, tuple(agents), (), happened, m.start(), m.end(), index)
    patients = cl.who_at(m.end())
    return Act(verb, tuple(agents), tuple(patients), happened, m.start(), m.end(), index)


def acts(r: Reading, names: NameIndex, genders: Mapping[str, str]) -> list[Act]:
    """The killings, woundings and rescues of one sentence, in order (see the module
    docstring)."""
    occ = names.occurrences(r.sentence.text)
    out: list[Act] = []
    for i, c in enumerate(r.clauses):
        cl = _Clause(r, c, occ, genders)
        segment = r.sentence.text[: c.end]
        for verb, pattern in _VERBS:
            for m in pattern.finditer(segment, c.start):
                if any(a.start <= m.start() < a.end for a in out):
                    continue
                act = _cleft(cl, verb, m) or _one(cl, verb, m, i)
                out.append(
                    Act(act.verb, act.agents, act.patients, act.happened, act.start, act.end, i)
                )
        for m in _DIED_BY.finditer(segment, c.start):
            agents = _names_from(r.sentence.text, m.start(1), occ)
            patients = cl.subject_or_before(m.start())
            if agents and patients:
                happened = cl.happened(m.start(), m.end())
                out.append(
                    Act("kill", tuple(agents), tuple(patients), happened, m.start(), m.end(), i)
                )
    return sorted(out, key=lambda a: a.start)


def kill_spans(r: Reading, names: NameIndex, genders: Mapping[str, str]) -> list[tuple[int, int]]:
    """Where a transitive killing verb stands (its 死 is not the subject's death)."""
    return [(a.start, a.end) for a in acts(r, names, genders) if a.verb == "kill"]
