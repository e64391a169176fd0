"""The consistency check run after every chapter (generated, revised or submitted).

A chapter is judged with the story before it: the `StoryState` replayed from the earlier
chapters (`novel.story_state`) — who died, who was hurt, where everyone last was, which names
were introduced — on top of the blueprint. Offline rules (no model) catch four kinds of slips,
each quoted from the chapter:

- `dead_acts`: a character who is dead (in the blueprint, in an earlier chapter or earlier in
  this one) acts or speaks — named, or as 他/她 standing for them — in narration, not in a
  memory, a dream, a hypothetical or someone's (quoted or reported) speech;
- `unknown_name`: a personal name the blueprint and earlier chapters do not know, used without
  being introduced (名叫…, 自称…, 同事许曼); a role (司狱, 掌柜, 船夫) is not a name;
- `two_places`: one character put in two places within one scene with no movement between; a
  part of the place they are at (门口, 窗边, 楼上, 书房) is not a second place;
- `rule_broken`: an explicit blueprint rule broken — a thing a rule says does not exist (没有法术
  → 法术, 咒语), or a wound that heals at once when a rule says wounds have consequences (the
  wound from this chapter or the one before, the healed one named or 他/她, no weeks between).

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

from novel import modeljson, narrative
from novel.blueprint import Blueprint
from novel.modeljson import loose_object
from novel.reading import Reading
from novel.story_state import Event, StoryState, read_chapter
from retrieval.ports import LLM, LLMError

FindingKind = Literal[
    "dead_acts",
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

    def outside_speech(self, r: Reading, at: int) -> bool:
        """Is offset `at` of the sentence narration (not quoted, not reported)?"""
        if narrative.inside(self.spans, r.sentence.start + at):
            return False
        return not any(c.reported and c.start <= at < c.end for c in r.clauses)


_MEMORY = re.compile(
    r"想起|回忆|记得|记起|忆起|生前|当年|昔日|从前|曾经|曾|梦|遗|墓|坟|尸|灵位|牌位|灵柩|棺|祭|悼|死|亡|"
    r"去世|临终|如果|要是|倘若|假如|若是|画像|传说|据说|鬼|魂|幽灵|亡灵|说过|讲过"
)


def _dead_in(r: Reading, dead: Mapping[str, str], ch: _Chapter) -> Finding | None:
    """The first dead character acting in the sentence: by name, or as 他/她."""
    s = r.sentence
    for start, end, canon in ch.names.occurrences(s.text):
        if canon not in dead or not ch.outside_speech(r, start):
            continue
        clause = narrative.subject_clause(s.text, start, end)
        if clause is None:
            continue  # 沈默的船, 从沈默那里: he is not the one acting
        if narrative.ACTS.match(s.text[end:]) or narrative.CLAUSE_ACTS.search(clause):
            return Finding("dead_acts", s.text, {"name": s.text[start:end], "status": dead[canon]})
    for c in r.clauses:
        for a in c.actors:
            if not (a.pronoun and a.subject and a.end > a.start and a.canon in dead):
                continue
            rest = s.text[a.end :]
            if c.reported or rest.lstrip().startswith("被") or not narrative.ACTS.match(rest):
                continue
            fields = {"name": a.pronoun, "status": dead[a.canon or ""], "who": a.canon or ""}
            return Finding("dead_acts", s.text, fields)
    return None


def _dead_acts(ch: _Chapter) -> list[Finding]:
    dead = ch.state.dead()
    died_at: dict[int, list[str]] = {}
    for e in ch.events:
        if e.kind == "dead":
            died_at.setdefault(e.reading, []).append(e.name)
    out: list[Finding] = []
    for i, r in enumerate(ch.readings):
        if not r.memory and not _MEMORY.search(r.sentence.text) and dead:
            found = _dead_in(r, dead, ch)
            if found is not None:
                out.append(found)
        for name in died_at.get(i, []):  # dead from the next sentence on
            dead = {**dead, name: dead.get(name, "已死亡（本章）")}
    return out


def _unknown_names(ch: _Chapter) -> list[Finding]:
    out: list[Finding] = []
    sents = [r.sentence for r in ch.readings]
    for use in ch.uses:
        if use.introduced:
            continue
        before = [s for s in sents if s.start <= use.start]
        sentence = before[-1].text if before else use.name
        out.append(Finding("unknown_name", sentence, {"name": use.name}))
    return out


def _two_places(ch: _Chapter) -> list[Finding]:
    out: list[Finding] = []
    for step in ch.steps:
        if step.before is not None:
            fields = {"name": step.words, "place": step.before, "other": step.place}
            out.append(Finding("two_places", ch.readings[step.reading].sentence.text, fields))
    return out


_NEGATION = re.compile(r"没有|不存在|禁止|不许|不可|不能|不得|无法|绝无|从无|从不|不会有|并无|不会")
_NEGATED_BEFORE = re.compile(r"没|不|无|未|别|非|莫|假|难以|无法|哪有|何来|岂有|传说|据说|以为")
_HYPOTHETICAL = re.compile(r"如果|假如|倘若|要是|若是|传说|据说|故事|梦|戏文|说书")
_INJURY_RULE = re.compile(
    r"伤.*(?:后果|痊愈|代价|不会立刻|需要时间|留下|养|恢复|至少|数周|几周|很长时间|慢慢)"
)
# What a rule forbids, by kind: 没有法术 also rules out 咒语 and 施法.
_FAMILIES = (
    ("法术", "魔法", "咒语", "施法", "妖法", "念咒", "法诀", "巫术", "仙术", "邪术"),
    ("鬼魂", "幽灵", "亡灵", "灵魂出窍", "阴魂", "鬼影", "闹鬼"),
    ("超自然", "鬼魂", "幽灵", "亡灵", "灵异", "超能力", "灵魂出窍", "魔法", "法术", "特异功能"),
    ("灵异", "鬼魂", "幽灵", "灵魂出窍", "闹鬼"),
    ("超能力", "异能", "特异功能", "读心术", "隐身术", "念力"),
    ("妖怪", "妖精", "妖魔", "精怪", "鬼怪"),
    ("复活", "复生", "起死回生", "死而复生", "还魂"),
)
_GENERIC = frozenset(("力量", "现象", "东西", "事情", "事件", "能力", "存在", "情况"))


def _terms_of(rest: str, literal: bool) -> list[str]:
    """What one negated phrase forbids (`法术和妖怪`, `任何超自然的力量`)."""
    pos, _ = narrative._jieba()
    terms = [w for fam in _FAMILIES if any(x in rest for x in fam) for w in fam]
    for part in re.split(r"和|与|或|及|、", rest):
        head = part[part.rindex("的") + 1 :] if "的" in part else part
        head = re.sub(r"^(?:任何|真正|所谓|再|一丝|半点|什么)", "", head)
        word = next((w for w, _f in pos.cut(head) if len(w) >= 2), "")  # type: ignore[attr-defined]
        family = [w for fam in _FAMILIES if word in fam for w in fam]
        if family:
            terms.extend(family)
        elif literal and word and word not in _GENERIC:
            terms.append(word)
    return terms


def _forbidden_terms(rules: Sequence[str]) -> dict[str, str]:
    """`没有夸张的法术` → {法术, 魔法, 咒语 …: rule}; `人物已死亡不可复活` → {复活, 复生 …: rule}.
    After 不会 only a known kind counts (伤不会立刻痊愈 forbids no thing)."""
    terms: dict[str, str] = {}
    for rule in rules:
        for clause in re.split(r"[；;。，,！!？?]", rule):
            m = _NEGATION.search(clause)
            if m is None:
                continue
            for term in _terms_of(clause[m.end() :], literal=m.group(0) != "不会"):
                terms.setdefault(term, rule)
    return terms


def _forbidden(ch: _Chapter, rules: Sequence[str]) -> list[Finding]:
    terms = sorted(_forbidden_terms(rules).items(), key=lambda t: -len(t[0]))
    out: list[Finding] = []
    for r in ch.readings:
        s = r.sentence
        if r.memory or _HYPOTHETICAL.search(s.text):
            continue
        for term, rule in terms:
            at = s.text.find(term)
            if at < 0 or not ch.outside_speech(r, at):
                continue
            if _NEGATED_BEFORE.search(s.text[max(0, at - 4) : at]):
                continue
            out.append(Finding("rule_broken", s.text, {"rule": rule}))
            break
    return out


def _healed_too_soon(ch: _Chapter, rule: str) -> list[Finding]:
    """A wound from this chapter or the last one healed with no weeks between."""
    hurt = set(ch.state.wounded())
    out: list[Finding] = []
    by_reading: dict[int, list[Event]] = {}
    for e in ch.events:
        by_reading.setdefault(e.reading, []).append(e)
    for i, r in enumerate(ch.readings):
        text = r.sentence.text
        if narrative.LONG_LAPSE.search(text) and not r.memory:
            hurt.clear()
        happened = by_reading.get(i, [])
        healed = [e.name for e in happened if e.kind == "healed" and e.name in hurt]
        m = narrative.HEALED.search(text)
        if m is not None and not healed and ch.outside_speech(r, m.start()):
            healed = [c for _, _, c in ch.names.occurrences(text) if c in hurt]
        if healed and not r.memory and not _HYPOTHETICAL.search(text):
            out.append(Finding("rule_broken", text, {"rule": rule, "name": healed[0]}))
        hurt.update(e.name for e in happened if e.kind == "hurt")
    return out


def _rules_broken(ch: _Chapter) -> list[Finding]:
    rules = ch.state.blueprint.rules
    if not rules:
        return []
    out = _forbidden(ch, rules)
    injury_rule = next((r for r in rules if _INJURY_RULE.search(r)), None)
    if injury_rule is not None:
        taken = {f.quote for f in out}
        out += [f for f in _healed_too_soon(ch, injury_rule) if f.quote not in taken]
    return out


def check_rules(text: str, state: StoryState) -> list[Finding]:
    """Every offline rule, in reading order, one finding per sentence at most."""
    chapter = _Chapter(text, state)
    found: list[Finding] = []
    for rule in (_dead_acts, _unknown_names, _two_places, _rules_broken):
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
