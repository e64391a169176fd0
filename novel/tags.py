"""Scene and event tags, named one way across chapters — as character tags are.

A character tag is the canonical name of a character a chunk names (aliases folded in), so the
same person is the same tag in chapter 3 and chapter 300. Scene and event tags follow the same
rule here, and the goal of a chapter is read by the same functions, so a goal's tags and a
chunk's tags meet:

- a **scene** tag (`场景:听潮阁`) is a place the chunk names — from the blueprint, the chapter
  summary's scenes, or a presence/motion phrase (在…阁, 来到…镇) — cut to the place itself: the
  longest known place it contains (听潮阁二楼 → 听潮阁), else without a part of the place or a
  locative ending (江心岛上 → 江心岛);
- an **event** tag (`事件:发誓`) is one of a small fixed vocabulary of story events whose words
  the chunk uses (发誓, 起誓, 立下重誓 → 发誓). A free-text event phrase from a summary
  ("苏晴提灯笼等他") differs in every chapter and every summariser run, so it cannot filter.

Tags depend only on the chunk's own text, the blueprint and its chapter's summary: re-indexing
a version (reconcile) gives it the same tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from novel import narrative
from novel.blueprint import Blueprint

SCENE = "场景:"
EVENT = "事件:"

# One name per kind of event; the words that say it happened (or is recalled: 旧誓, 当年捡到).
EVENT_WORDS: dict[str, str] = {
    "死亡": r"死了|身亡|丧命|断了?气|咽了?气|去世|遇害|被杀|尸体|尸首|遗体|殒命|阵亡",
    "受伤": r"受伤|受了伤|负伤|重伤|伤口|伤势|中箭|中刀|中了一[刀剑箭]|挂彩|流血",
    "失踪": r"失踪|下落不明|不知去向|不见了踪影|杳无音信",
    "发誓": r"誓",
    "拾获": r"捡到|拾到|捡起|拾起|捡来|捡回",
    "结识": r"名叫|自称|自我介绍|初次见面|结识|外乡人|陌生人",
    "重逢": r"重逢|重现|又出现|再次出现|认出",
    "交手": r"交手|打斗|厮杀|拔刀|拔剑|比武|动起手|过招",
    "离别": r"告别|辞别|不辞而别|远行|送别",
    "背叛": r"背叛|出卖|反水|倒戈|告密",
    "婚约": r"成亲|婚约|提亲|订婚|出嫁|嫁给|娶了",
}  # not 秘密 / 真相: what a goal calls "the secret of X" is a topic, not an event
_EVENTS = [(kind, re.compile(words)) for kind, words in EVENT_WORDS.items()]
_PART_END = re.compile(
    "(?:" + "|".join(sorted(narrative.PLACE_PARTS, key=len, reverse=True)) + r"|"
    r"(?:\d+|[一二三四五六七八九十]+)楼|附近|一带|四周|周围|[里上中内外边前后下旁])$"
)


def scene_name(phrase: str, known: Sequence[str]) -> str:
    """The place a scene phrase names: the longest known place in it, else the phrase without
    a part of the place (门口, 二楼) or a locative ending (里, 上); '' when nothing is left."""
    phrase = "".join(phrase.split())
    inside = [p for p in known if p and p in phrase]
    if inside:
        return max(inside, key=len)
    for _ in range(2):  # 客栈二楼里
        cut = _PART_END.sub("", phrase)
        if cut == phrase:
            break
        phrase = cut
    return phrase if len(phrase) >= 2 else ""


def blueprint_places(bp: Blueprint) -> list[str]:
    return list(dict.fromkeys([*bp.places, *(c.location for c in bp.characters if c.location)]))


def known_places(places: Iterable[str], scenes: Iterable[str]) -> list[str]:
    """The places a chapter's chunks can name: the blueprint's, then its summary's scenes cut
    to their place."""
    base = [p for p in dict.fromkeys(places) if p and len(p) >= 2]
    out = list(base)
    for scene in scenes:
        name = scene_name(scene, base)
        if name and name not in out:
            out.append(name)
    return out


def scene_tags(text: str, places: Sequence[str]) -> list[str]:
    """`场景:<place>` for each place `text` names, longest first (青岚渡口 hides 渡口)."""
    found: list[str] = []
    masked = text
    for place in sorted(places, key=len, reverse=True):
        if place in masked:
            found.append(place)
            masked = masked.replace(place, "\0" * len(place))
    for place in narrative.places_in(masked, ()):
        name = scene_name(place, places)
        if name and name not in found and "\0" not in name:
            found.append(name)
    return [SCENE + p for p in found]


def event_tags(text: str) -> list[str]:
    """`事件:<kind>` for each kind of event whose words `text` uses."""
    return [EVENT + kind for kind, words in _EVENTS if words.search(text)]


def text_tags(text: str, places: Sequence[str]) -> list[str]:
    return scene_tags(text, places) + event_tags(text)
