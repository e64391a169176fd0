"""The consistency check run after every chapter (generated, revised or submitted).

Offline rules (no model) catch four kinds of slips, each quoted from the chapter:

- `dead_acts`: a character whose blueprint status is dead acts or speaks (narration, not a
  memory, a dream or someone else's speech);
- `unknown_name`: a personal name the blueprint and earlier chapters do not know, used without
  being introduced (名叫…, 自称…);
- `two_places`: one character put in two places within one scene with no movement between;
- `rule_broken`: an explicit blueprint rule broken — a thing a rule says does not exist
  (没有法术 → 法术), or an injury that heals at once when a rule says wounds have consequences.

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


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    quote: str  # the chapter's own words
    # what the presenter fills into the rule/fix strings: name, status, place, other, rule, fix
    fields: Mapping[str, str] = field(default_factory=dict)
    source: Literal["rules", "model"] = "rules"


@dataclass(frozen=True, slots=True)
class StoryState:
    """What the story knows before this chapter."""

    blueprint: Blueprint
    # names from earlier chapters and pending blueprint changes → canonical
    extra_names: Mapping[str, str] = field(default_factory=dict)
    injured: frozenset[str] = frozenset()  # hurt in the previous chapter
    places: Sequence[str] = ()  # scenes of earlier chapters

    def names(self) -> narrative.NameIndex:
        return narrative.NameIndex(
            {**self.extra_names, **self.blueprint.name_index()}, self.known_places()
        )

    def known_places(self) -> list[str]:
        bp = self.blueprint
        found = [*bp.places, *(c.location for c in bp.characters), *self.places]
        return list(dict.fromkeys(p for p in found if p and len(p) >= 2))


_MEMORY = re.compile(
    r"想起|回忆|记得|记起|忆起|生前|当年|昔日|从前|曾经|曾|梦|遗|墓|坟|尸|灵位|牌位|灵柩|棺|祭|悼|死|亡|"
    r"去世|临终|如果|要是|倘若|假如|若是|画像|传说|据说|鬼|魂|幽灵|亡灵|说过|讲过"
)


def _dead_acts(text: str, state: StoryState) -> list[Finding]:
    bp = state.blueprint
    dead = {c.name: c.status for c in bp.characters if narrative.dead(c.status)}
    if not dead:
        return []
    names = state.names()
    spans = narrative.quoted_spans(text)
    out: list[Finding] = []
    for s in narrative.sentences(text):
        if _MEMORY.search(s.text):
            continue
        for start, end, canon in names.occurrences(s.text):
            if canon not in dead or narrative.inside(spans, s.start + start):
                continue
            clause = narrative.subject_clause(s.text, start, end)
            if clause is None:
                continue  # 沈默的船, 从沈默那里: he is not the one acting
            if narrative.ACTS.match(s.text[end:]) or narrative.CLAUSE_ACTS.search(clause):
                fields = {"name": s.text[start:end], "status": dead[canon]}
                out.append(Finding("dead_acts", s.text, fields))
                break
    return out


def _unknown_names(text: str, state: StoryState) -> list[Finding]:
    out: list[Finding] = []
    sents = narrative.sentences(text)
    for use in narrative.person_names(text, state.names()):
        if use.introduced:
            continue
        before = [s for s in sents if s.start <= use.start]
        sentence = before[-1].text if before else use.name
        out.append(Finding("unknown_name", sentence, {"name": use.name}))
    return out


def _same_place(a: str, b: str) -> bool:
    return a == b or a in b or b in a


def _two_places(text: str, state: StoryState) -> list[Finding]:
    names = state.names()
    places = state.known_places()
    spans = narrative.quoted_spans(text)
    out: list[Finding] = []
    at: dict[str, str] = {}
    scene = -1
    for s in narrative.sentences(text):
        if s.scene != scene:
            scene, at = s.scene, {}
        occurrences = names.occurrences(s.text)
        if any(m in s.text for m in narrative.MOVES):
            for _, _, canon in occurrences:
                at.pop(canon, None)
            if re.search(r"[他她]们?", s.text):
                at.clear()
            continue
        for start, end, canon in occurrences:
            if narrative.inside(spans, s.start + start):
                continue
            place = narrative.presence(s.text, end, places)
            if place is None:
                continue
            before = at.get(canon)
            if before is not None and not _same_place(before, place):
                fields = {"name": s.text[start:end], "place": before, "other": place}
                out.append(Finding("two_places", s.text, fields))
            at[canon] = place
    return out


_NEGATION = re.compile(r"没有|不存在|禁止|不许|不可|不能|不得|无法|绝无|从无|从不|不会有|并无")
_NEGATED_BEFORE = re.compile(r"没|不|无|未|别|非|莫|假|难以|无法|哪有|何来|岂有|传说|据说|以为")
_HYPOTHETICAL = re.compile(r"如果|假如|倘若|要是|若是|传说|据说|故事|梦|戏文|说书")
_INJURY_RULE = re.compile(r"伤.*(?:后果|痊愈|代价|不会立刻|需要时间|留下|养)")


def _forbidden_terms(rules: Sequence[str]) -> dict[str, str]:
    """`没有夸张的法术` → {法术: rule}; `人物已死亡不可复活` → {复活: rule}."""
    pos, _ = narrative._jieba()
    terms: dict[str, str] = {}
    for rule in rules:
        for clause in re.split(r"[；;。，,！!？?]", rule):
            m = _NEGATION.search(clause)
            if m is None:
                continue
            rest = clause[m.end() :]
            if "的" in rest:
                rest = rest[rest.rindex("的") + 1 :]
            rest = re.sub(r"^(?:任何|真正|所谓|再|一丝|半点)", "", rest)
            for word, _flag in pos.cut(rest):  # type: ignore[attr-defined]
                if len(word) >= 2:
                    terms.setdefault(word, rule)
                    break
    return terms


def _rules_broken(text: str, state: StoryState) -> list[Finding]:
    rules = state.blueprint.rules
    out: list[Finding] = []
    if not rules:
        return out
    spans = narrative.quoted_spans(text)
    terms = _forbidden_terms(rules)
    sents = narrative.sentences(text)
    for s in sents:
        if _HYPOTHETICAL.search(s.text):
            continue
        for term, rule in terms.items():
            at = s.text.find(term)
            if at < 0 or narrative.inside(spans, s.start + at):
                continue
            if _NEGATED_BEFORE.search(s.text[max(0, at - 4) : at]):
                continue
            out.append(Finding("rule_broken", s.text, {"rule": rule}))
            break
    injury_rule = next((r for r in rules if _INJURY_RULE.search(r)), None)
    if injury_rule is None:
        return out
    names = state.names()
    hurt = set(state.injured)
    for s in sents:
        for event in narrative.status_events(s.text, names):
            if event.status == "受伤":
                hurt.add(event.name)
        if not narrative.HEALED.search(s.text) or _HYPOTHETICAL.search(s.text):
            continue
        who = [canon for _, _, canon in names.occurrences(s.text) if canon in hurt]
        if who and not any(f.quote == s.text for f in out):
            out.append(Finding("rule_broken", s.text, {"rule": injury_rule, "name": who[0]}))
    return out


def check_rules(text: str, state: StoryState) -> list[Finding]:
    """Every offline rule, in reading order, one finding per sentence at most."""
    found: list[Finding] = []
    for rule in (_dead_acts, _unknown_names, _two_places, _rules_broken):
        found.extend(rule(text, state))
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
