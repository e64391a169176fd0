"""Consistency check: precision and recall on planted contradictions, per kind.

Two sets:

1. **The issue-23 planted set**, `bench/data/consistency/*.toml`: nine original short novels
   (42 clean chapters) in three registers — wuxia, modern urban, translated fiction — each with
   a blueprint frozen at chapter 1, and 123 planted slips (dead_acts, unknown_name, two_places,
   rule_broken), one slip per copy of a chapter. Worlds 1–3 are the tune half; worlds 4–6 the
   **test** half, held out until its first run; worlds 7–9 (**test2**) were written after that
   first run and before the fixes it prompted, and held out until theirs (see the data README).
   `consistency-heldout.json` keeps both first runs. Each chapter is judged with the story
   before it: the story state replayed from the clean chapters before it (who died, who was
   hurt, who was introduced, where everyone was), as `novel.chapters` does without a model. The
   blueprint is never updated, so a death in chapter 2 is known only through the state.
2. **The issue-12 set the rules were first tuned on**: narrative chapters of the 1919 CUV (public
   domain) — Ruth 1–4, Jonah 1–4, Esther 1–10, Genesis 22–24 and 37–45, Daniel 1–6 (35 chapters),
   Simplified by OpenCC — with per-chapter blueprints (statuses follow the deaths) and 36 plants
   (30 of the four rule kinds, 6 timeline/fact errors only judgement sees). Kept as a regression
   check.

A plant is found when a finding quotes a sentence of the planted lines; any other finding on a
planted copy that the clean chapter does not also get is a false finding. Precision per kind is
over the findings of that kind (clean chapters and planted copies); recall per kind over the
plants of that kind, found by a finding of any kind.

Two runs: the offline rules alone, and rules + the LLM pass with a *scripted* model
(`retrieval.llm.scripted.ScriptedLLM`). The script is fixed in advance and imperfect on purpose,
so the numbers measure our plumbing (quote verification, merging, de-duplication), not a real
model's judgement:
- on every planted copy it reports the planted sentence with the matching ConStory class, except
  every 4th copy, where its quote is paraphrased (verification must drop it);
- on every 3rd clean chapter it reports a wrong finding that quotes a real sentence (a false
  positive that verification cannot catch), on every 5th a finding with an invented quote
  (verification must drop it).

    nice .venv/bin/python bench/bench_consistency.py [--out bench/results/consistency.md]
        [--half tune|tune+cuv|test|test2|all] [--json bench/results/consistency.json]

`--half tune` (or `tune+cuv`) runs only the tune half (and the CUV set), for working on the
rules without running a held-out half. "Before" columns come from
`bench/results/consistency-baseline.json`, written by this script's first version at the commit
before the issue-23 rules (acff62c; test2 by that commit's code on the test2 data).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import gzip
import json
import os
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_slips import plant_into
from novel import narrative
from novel.blueprint import Blueprint, Character
from novel.consistency import Finding, check
from novel.story_state import StoryState, replay
from novel.summary import extractive_summary
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMRequest
from retrieval.text import to_simplified

SET_DIR = Path(__file__).resolve().parent / "data/consistency"
BASELINE = Path(__file__).resolve().parent / "results/consistency-baseline.json"
# The held-out halves' first runs: test at the commit before the fixes it prompted (90f6e2f^),
# test2 right after them (its only unseen run). Later runs of both are no longer held out.
HELDOUT = Path(__file__).resolve().parent / "results/consistency-heldout.json"
RULE_KINDS = ("dead_acts", "unknown_name", "two_places", "rule_broken")

DATA = Path("/work/shared/data/cuv-1919-traditional.tsv.gz")
BUNDLED = Path(__file__).resolve().parents[1] / "ingest/samples/cuv-1919-traditional.tsv.gz"

NO_SORCERY = "没有法术。"
DEATH = "人物已死亡不可复活。"
WOUNDS = "受伤会留下后果，伤不会立刻痊愈。"


@dataclass
class Book:
    osis: str
    title: str
    chapters: list[int]
    cast: dict[str, list[str]]  # name → aliases
    places: list[str]
    rules: list[str]
    dead_before: list[str] = field(default_factory=list)  # dead when the excerpt starts
    deaths: dict[int, list[str]] = field(default_factory=dict)  # chapter → who dies in it

    def blueprint(self, chapter: int) -> Blueprint:
        dead = set(self.dead_before)
        for c, names in self.deaths.items():
            if c < chapter:
                dead.update(names)
        return Blueprint(
            title=self.title,
            places=self.places,
            rules=self.rules,
            characters=[
                Character(name=n, aliases=a, status="已死亡" if n in dead else "存活")
                for n, a in self.cast.items()
            ],
        )


def _cast(names: str, **aliases: list[str]) -> dict[str, list[str]]:
    return {n: aliases.get(n, []) for n in names.split()}


BOOKS = [
    Book(
        "Ruth",
        "路得记",
        [1, 2, 3, 4],
        _cast(
            "以利米勒 拿俄米 玛伦 基连 俄珥巴 路得 波阿斯 俄备得 耶西 大卫 法勒斯 他玛 犹大 "
            "希斯仑 兰 亚米拿达 拿顺 撒门 拉结 利亚 耶和华",
            拿俄米=["玛拉"],
            耶和华=["神"],
        ),
        ["伯利恒", "摩押地", "犹大地", "以法他", "场上", "城门"],
        [NO_SORCERY, DEATH, WOUNDS],
        deaths={1: ["以利米勒", "玛伦", "基连"]},
    ),
    Book(
        "Jonah",
        "约拿书",
        [1, 2, 3, 4],
        _cast("约拿 亚米太 耶和华", 耶和华=["神"]),
        ["尼尼微", "他施", "约帕", "尼尼微城"],
        [NO_SORCERY, DEATH, WOUNDS],
    ),
    Book(
        "Esth",
        "以斯帖记",
        list(range(1, 11)),
        _cast(
            "亚哈随鲁 瓦实提 米户曼 比斯他 哈波拿 比革他 亚拔他 西达 甲迦 甲示拿 示达 押玛他 "
            "他施斯 米力 玛西拿 米母干 末底改 以斯帖 希该 辟探 提列 哈曼 哈米大他 哈他革 细利斯 "
            "亚比孩 示每 基士 耶哥尼雅 尼布甲尼撒 沙甲 巴珊大他 达分 亚斯帕他 破拉他 亚大利雅 "
            "亚利大他 帕玛斯他 亚利赛 亚利代 瓦耶撒他 便雅悯 亚甲",
            以斯帖=["哈大沙"],
        ),
        ["书珊城", "书珊", "印度", "古实", "波斯", "玛代", "耶路撒冷", "巴比伦", "王宫", "御园"],
        [NO_SORCERY, DEATH, WOUNDS],
        deaths={
            2: ["辟探", "提列"],
            7: ["哈曼"],
            9: [
                "巴珊大他",
                "达分",
                "亚斯帕他",
                "破拉他",
                "亚大利雅",
                "亚利大他",
                "帕玛斯他",
                "亚利赛",
                "亚利代",
                "瓦耶撒他",
            ],
        },
    ),
    Book(
        "Gen",
        "创世记",
        [22, 23, 24, 37, 39, 40, 41, 42, 43, 44, 45],
        _cast(
            "亚伯拉罕 以撒 撒拉 拿鹤 密迦 彼土利 利百加 拉班 以弗仑 琐辖 乌斯 布斯 基穆伦 亚兰 "
            "基薛 哈琐 必达 益拉 流玛 提八 迦含 他辖 玛迦 亚伯拉罕 以实玛利 "
            "约瑟 雅各 流便 西缅 利未 犹大 以萨迦 西布伦 但 拿弗他利 迦得 亚设 便雅悯 波提乏 "
            "法老 酒政 膳长 亚西纳 波提非拉 玛拿西 以法莲 拉结 利亚 辟拉 悉帕 耶和华",
            雅各=["以色列"],
            耶和华=["神"],
            约瑟=["撒发那忒巴内亚"],
        ),
        [
            "迦南地",
            "迦南",
            "埃及",
            "希伯仑",
            "示剑",
            "多坍",
            "歌珊",
            "基列",
            "别是巴",
            "摩利亚地",
            "拿鹤的城",
            "麦比拉洞",
            "哈兰",
            "米甸",
            "监",
        ],
        [NO_SORCERY, DEATH, WOUNDS],
        deaths={23: ["撒拉"]},
        dead_before=[],
    ),
    Book(
        "Dan",
        "但以理书",
        [1, 2, 3, 4, 5, 6],
        _cast(
            "但以理 哈拿尼雅 米沙利 亚撒利雅 尼布甲尼撒 约雅敬 亚施毗拿 亚略 伯沙撒 大利乌 "
            "古列 耶和华",
            但以理=["伯提沙撒"],
            哈拿尼雅=["沙得拉"],
            米沙利=["米煞"],
            亚撒利雅=["亚伯尼歌"],
            耶和华=["神"],
        ),
        ["巴比伦", "耶路撒冷", "示拿地", "杜拉平原", "书珊", "王宫", "狮子坑"],
        [DEATH, WOUNDS],
        deaths={5: ["伯沙撒"]},
    ),
]
# Gen 37–45 starts after Rachel (35:19) and Isaac (35:29) died; Sarah dies in Gen 23.
BOOKS[3].deaths = {23: ["撒拉"], 36: ["拉结", "以撒"]}


@dataclass(frozen=True)
class Plant:
    book: str
    chapter: int
    after_verse: int
    text: str
    kind: str  # dead_acts | unknown_name | two_places | rule_broken | timeline | facts


PLANTS = [
    # a dead character acts or speaks
    Plant(
        "Ruth",
        2,
        4,
        "以利米勒也从田间走来，对路得说：「女儿啊，你在这里拾取麦穗吧。」",
        "dead_acts",
    ),
    Plant("Ruth", 3, 6, "玛伦站在禾场门口，向婆婆点头。", "dead_acts"),
    Plant("Ruth", 4, 13, "基连举手说：「愿这孩子有福。」", "dead_acts"),
    Plant("Esth", 8, 2, "哈曼跪在王面前，求王饶恕他。", "dead_acts"),
    Plant("Esth", 9, 12, "哈曼对末底改说：「你不要得意。」", "dead_acts"),
    Plant("Esth", 10, 2, "巴珊大他在城门口大声喊叫。", "dead_acts"),
    Plant("Gen", 24, 20, "撒拉也迎上前来，拉着利百加的手说：「我儿，你来了。」", "dead_acts"),
    Plant("Gen", 37, 3, "拉结笑着对约瑟说：「你父亲最爱你。」", "dead_acts"),
    Plant("Gen", 43, 14, "以撒拄着杖走来，为众孙子祝福。", "dead_acts"),
    Plant("Dan", 6, 1, "伯沙撒坐在宝座上，吩咐众总长。", "dead_acts"),
    # a name the blueprint does not know, used as if known
    Plant("Ruth", 2, 5, "赵六点了点头，说：「她是摩押女子。」", "unknown_name"),
    Plant("Jonah", 1, 5, "孙掌柜喊道：「快把货物抛在海中！」", "unknown_name"),
    Plant("Esth", 4, 4, "沈师兄对哈他革说：「王后为何忧愁？」", "unknown_name"),
    Plant("Gen", 39, 2, "李管家对约瑟说：「主人信任你。」", "unknown_name"),
    Plant("Dan", 1, 3, "亚拿突对但以理说：「你们要吃王的膳。」", "unknown_name"),
    Plant("Jonah", 3, 5, "米拿现站起来，向尼尼微的百姓宣告。", "unknown_name"),
    Plant("Ruth", 4, 1, "陈老伯走过来，坐在城门口。", "unknown_name"),
    Plant("Gen", 42, 6, "撒迦拉对约瑟的哥哥们说：「你们从哪里来？」", "unknown_name"),
    # one character in two places in one scene (two planted lines)
    Plant(
        "Ruth", 2, 17, "路得在波阿斯的田里拾取麦穗。\n路得此时正在摩押地的家中纺线。", "two_places"
    ),
    Plant("Esth", 5, 1, "以斯帖站在王宫的内院。\n以斯帖在书珊城外的河边洗衣。", "two_places"),
    Plant("Jonah", 1, 3, "约拿在他施的船舱里睡觉。\n约拿在尼尼微的城门口站着。", "two_places"),
    Plant("Gen", 39, 20, "约瑟在监里。\n约瑟站在法老的宫殿上。", "two_places"),
    Plant("Dan", 6, 16, "但以理在狮子坑中。\n但以理站在王宫的殿上。", "two_places"),
    Plant(
        "Gen", 24, 15, "利百加在城外的井旁打水。\n利百加此时正在彼土利的家中织布。", "two_places"
    ),
    # an explicit blueprint rule broken
    Plant("Ruth", 1, 5, "以利米勒复活了，回到拿俄米身边。", "rule_broken"),
    Plant("Esth", 3, 2, "哈曼念起咒语，施展法术，要害末底改。", "rule_broken"),
    Plant(
        "Jonah", 2, 10, "约拿被鱼吞下时受了重伤。\n第二天，约拿毫发无伤地走上岸。", "rule_broken"
    ),
    Plant("Gen", 37, 24, "约瑟在坑里受了重伤。\n约瑟随即健步如飞地爬出坑来。", "rule_broken"),
    Plant("Gen", 41, 8, "法老的术士施展法术，把河水变成了血。", "rule_broken"),
    Plant("Esth", 9, 4, "末底改中了一箭。\n末底改立刻行动如常，骑马出城。", "rule_broken"),
    # only judgement sees these (timeline, facts)
    Plant("Jonah", 3, 4, "约拿在城里走了整整四十天，城中的人才听见。", "timeline"),
    Plant("Esth", 2, 16, "那时以斯帖年过六十，已经是祖母了。", "facts"),
    Plant("Gen", 41, 8, "约瑟那时已经五十岁了。", "timeline"),
    Plant("Ruth", 1, 22, "她们回到伯利恒的时候，正是冬天下雪的时候。", "timeline"),
    Plant("Dan", 1, 15, "过了三年，委办才察看他们的面貌。", "timeline"),
    Plant("Gen", 45, 3, "约瑟说：「我今年才十岁。」", "facts"),
]

MODEL_CLASS = {
    "dead_acts": "characters",
    "unknown_name": "characters",
    "two_places": "characters",
    "rule_broken": "world_rules",
    "timeline": "timeline",
    "facts": "facts",
}


def load_verses() -> dict[tuple[str, int], list[tuple[int, str]]]:
    path = DATA if DATA.exists() else BUNDLED
    rows: dict[tuple[str, int], list[tuple[int, str]]] = collections.defaultdict(list)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        next(f)
        for line in f:
            book, chapter, verse, text = line.rstrip("\n").split("\t")
            text = to_simplified(text).strip()
            if text and text != "并入上节":
                rows[(book, int(chapter))].append((int(verse), text))
    return rows


def chapter_text(verses: list[tuple[int, str]], plant: Plant | None = None) -> str:
    lines: list[str] = []
    for number, text in verses:
        lines.append(text)
        if plant is not None and number == plant.after_verse:
            lines.extend(plant.text.split("\n"))
    return "\n".join(lines)


def _norm(text: str) -> str:
    return "".join(ch for ch in text if "\u4e00" <= ch <= "\u9fff")


@dataclass(frozen=True)
class Slip:
    """A planted contradiction, whichever set it comes from."""

    text: str
    kind: str
    note: str = ""


@dataclass
class Doc:
    name: str
    base: str  # the clean document this is a copy of (itself when clean)
    text: str
    slip: Slip | None
    index: int  # position among its kind (planted / clean), for the model's script
    state: Callable[[], StoryState]
    chapter: int


# ---- the issue-23 set -------------------------------------------------------------------------


@dataclass
class World:
    name: str
    register: str
    half: str
    blueprint: Blueprint
    chapters: list[str]
    plants: list[dict[str, object]]


def load_worlds(half: str) -> list[World]:
    worlds: list[World] = []
    for path in sorted(SET_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        if half != "all" and data["half"] != half:
            continue
        chapters = [str(c["text"]).strip() for c in data["chapter"]]
        worlds.append(
            World(
                path.stem,
                str(data["register"]),
                str(data["half"]),
                Blueprint.model_validate(data["blueprint"]),
                chapters,
                list(data.get("plant", [])),
            )
        )
    return worlds


def story_before(bp: Blueprint, earlier: Sequence[str]) -> StoryState:
    """What production knows before a chapter (`novel.chapters._story_state` without a model):
    the earlier chapters replayed, plus the names and scenes of their extractive summaries."""
    names: list[str] = []
    places: list[str] = []
    for i, text in enumerate(earlier):
        summary = extractive_summary(text, f"第{i + 1}章", bp)
        names.extend(summary.characters)
        places.extend(summary.scenes)
    return replay(bp, earlier, known=names).seeing(places)


def world_docs(worlds: Sequence[World]) -> tuple[list[Doc], list[Doc]]:
    clean: list[Doc] = []
    planted: list[Doc] = []
    for w in worlds:
        cache: dict[int, StoryState] = {}

        def state(k: int, w: World = w, cache: dict[int, StoryState] = cache) -> StoryState:
            if k not in cache:
                cache[k] = story_before(w.blueprint, w.chapters[: k - 1])
            return cache[k]

        for k, text in enumerate(w.chapters, 1):
            name = f"{w.name} {k}"
            clean.append(Doc(name, name, text, None, len(clean), functools.partial(state, k), k))
        for p in w.plants:
            k = int(p["chapter"])  # type: ignore[call-overload]
            slip = Slip(str(p["text"]), str(p["kind"]), str(p.get("note", "")))
            text = plant_into(w.chapters[k - 1], str(p["after"]), slip.text)
            planted.append(
                Doc(
                    f"{w.name} {k} +{slip.kind}",
                    f"{w.name} {k}",
                    text,
                    slip,
                    len(planted),
                    functools.partial(state, k),
                    k,
                )
            )
    return clean, planted


# ---- the issue-12 CUV set ---------------------------------------------------------------------


def cuv_docs() -> tuple[list[Doc], list[Doc]]:
    verses = load_verses()
    clean: list[Doc] = []
    for book in BOOKS:
        for chapter in book.chapters:
            text = chapter_text(verses[(book.osis, chapter)])
            name = f"{book.osis} {chapter}"
            bp = book.blueprint(chapter)
            clean.append(
                Doc(name, name, text, None, len(clean), functools.partial(StoryState, bp), chapter)
            )
    books = {b.osis: b for b in BOOKS}
    planted: list[Doc] = []
    for plant in PLANTS:
        book = books[plant.book]
        assert plant.chapter in book.chapters, plant
        text = chapter_text(verses[(plant.book, plant.chapter)], plant)
        at = text.index(plant.text.split("\n")[0])
        assert text[:at].count("「") == text[:at].count("」"), ("inside a quotation", plant)
        bp = book.blueprint(plant.chapter)
        planted.append(
            Doc(
                f"{plant.book} {plant.chapter} +{plant.kind}",
                f"{plant.book} {plant.chapter}",
                text,
                Slip(plant.text, plant.kind),
                len(planted),
                functools.partial(StoryState, bp),
                plant.chapter,
            )
        )
    return clean, planted


# ---- scoring ----------------------------------------------------------------------------------


def _judge(doc: Doc, sentences: list[str], _request: LLMRequest) -> str:
    """The scripted judge, answering one request (`script_for`)."""
    return script_for(doc, sentences)


def script_for(doc: Doc, sentences: list[str]) -> str:
    """The scripted judge's answer for one document (see the module docstring)."""
    findings: list[dict[str, str]] = []
    if doc.slip is not None:
        quote = doc.slip.text.strip().split("\n")[-1]
        if doc.index % 4 == 3:  # paraphrased: not the chapter's words
            quote = "据说" + quote[2:-1] + "了"
        findings.append(
            {
                "class": MODEL_CLASS[doc.slip.kind],
                "quote": quote,
                "rule": "与设定或前文矛盾",
                "fix": "改写这一句",
            }
        )
    else:
        if doc.index % 3 == 0 and len(sentences) > 1:
            findings.append({"class": "facts", "quote": sentences[1], "rule": "（误判）"})
        if doc.index % 5 == 0:
            findings.append({"class": "timeline", "quote": "这一句根本不在正文里。", "rule": "x"})
    return json.dumps({"findings": findings}, ensure_ascii=False)


def is_hit(finding: Finding, slip: Slip) -> bool:
    planted = [_norm(line) for line in slip.text.split("\n")]
    quote = _norm(finding.quote)
    return any(p and (p in quote or quote in p) for p in planted) and bool(quote)


@dataclass
class Outcome:
    caught: dict[str, list[bool]] = field(default_factory=lambda: collections.defaultdict(list))
    true: collections.Counter[str] = field(default_factory=collections.Counter)
    false: list[tuple[str, Finding]] = field(default_factory=list)
    missed: list[Doc] = field(default_factory=list)
    notes: dict[str, list[bool]] = field(default_factory=lambda: collections.defaultdict(list))
    millis: list[float] = field(default_factory=list)

    def found(self, kind: str) -> tuple[int, int]:
        return sum(self.caught[kind]), len(self.caught[kind])

    def precision(self, kind: str) -> tuple[int, int]:
        wrong = sum(1 for _, f in self.false if f.kind == kind)
        return self.true[kind], self.true[kind] + wrong

    def totals(self) -> dict[str, float]:
        caught = sum(sum(v) for v in self.caught.values())
        plants = sum(len(v) for v in self.caught.values())
        true = sum(self.true.values())
        return {
            "recall": caught / plants if plants else 0.0,
            "precision": true / (true + len(self.false)) if true + len(self.false) else 1.0,
            "true": true,
            "false": len(self.false),
            "clean_false": sum(1 for name, _ in self.false if "+" not in name),
        }


def _kind(f: Finding) -> str:
    return f.kind if f.source == "rules" else f"model:{f.kind}"


async def evaluate(clean: Sequence[Doc], planted: Sequence[Doc], with_model: bool) -> Outcome:
    out = Outcome()
    on_clean: dict[str, set[str]] = {}
    for doc in [*clean, *planted]:
        llm = None
        if with_model:
            sents = [s.text for s in narrative.sentences(doc.text)]
            llm = ScriptedLLM([functools.partial(_judge, doc, sents)])
        state = doc.state()
        t0 = time.perf_counter()
        found = await check(doc.text, state, llm=llm, number=doc.chapter)
        out.millis.append((time.perf_counter() - t0) * 1000)
        if doc.slip is None:
            on_clean[doc.name] = {_norm(f.quote) for f in found}
            out.false.extend((doc.name, f) for f in found)
            continue
        hits = [f for f in found if is_hit(f, doc.slip)]
        out.caught[doc.slip.kind].append(bool(hits))
        for tag in ("pronoun", "full-name", "state"):
            if doc.slip.note.startswith(tag) or f"; {tag}" in doc.slip.note:
                out.notes[f"{doc.slip.kind}/{tag}"].append(bool(hits))
        if not hits:
            out.missed.append(doc)
        for f in hits:
            out.true[_kind(f)] += 1
        out.false.extend(
            (doc.name, f)
            for f in found
            if f not in hits and _norm(f.quote) not in on_clean[doc.base]
        )
    return out


def _false_kind(out: Outcome, kind: str) -> int:
    return sum(1 for _, f in out.false if _kind(f) == kind)


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b:.2f})" if b else "–"


def kind_table(
    runs: dict[str, Outcome],
    before: dict[str, dict[str, list[int]]] | None,
    heldout: dict[str, dict[str, list[int]]] | None = None,
) -> list[str]:
    """Per kind: recall and precision before issue 23, at the held-out half's first run (when
    it has one) and now — rules alone and rules + the scripted model (whose precision here is
    that of the rules' findings of the kind; the model's own findings have their rows)."""
    rules, both = runs["rules"], runs["rules+model"]
    columns: list[tuple[str, dict[str, list[int]]]] = []
    for label, data in (("before", before), ("held-out first run", heldout)):
        if data:
            columns += [(f"rules, {label}", data["rules"])]
            columns += [(f"rules + model, {label}", data["rules+model"])]
    columns += [("rules, now", numbers(rules)), ("rules + model, now", numbers(both))]
    head = "| kind | planted |" + "".join(f" recall, {c} | precision, {c} |" for c, _ in columns)
    lines = [head, "|---|---|" + "---|---|" * len(columns)]
    for kind in [k for k in (*RULE_KINDS, "timeline", "facts") if rules.caught.get(k)]:
        planted = len(rules.caught[kind])
        row = f"| {kind} | {planted} |"
        for _, counts in columns:
            found, _missed, true, total = counts.get(kind, [0, planted, 0, 0])
            row += f" {_pct(found, planted)} | {_pct(true, total)} |"
        lines.append(row)
    model_kinds = sorted({_kind(f) for _, f in both.false} | {k for k in both.true if ":" in k})
    for mk in (k for k in model_kinds if k.startswith("model:")):
        t, n = both.true[mk], both.true[mk] + _false_kind(both, mk)
        lines.append(
            f"| {mk} (model findings) | |" + " | |" * (len(columns) - 1) + f" | {_pct(t, n)} |"
        )
    return lines


def _overall(data: dict[str, list[int]]) -> str:
    found = sum(v[0] for v in data.values())
    planted = sum(v[1] for v in data.values())
    true = sum(v[2] for v in data.values())
    total = sum(v[3] for v in data.values())
    return f"recall {found / planted:.3f}, precision {true / total if total else 1.0:.3f}"


def summary_line(mode: str, out: Outcome) -> str:
    t = out.totals()
    return (
        f"| {mode} | {t['recall']:.3f} | {t['precision']:.3f} | {t['true']} |"
        f" {t['false']} ({t['clean_false']}) |"
    )


def numbers(out: Outcome) -> dict[str, list[int]]:
    """Per kind: [found, planted, true findings, all findings] (rules' own kind)."""
    return {
        k: [*out.found(k), out.true[k], out.true[k] + _false_kind(out, k)]
        for k in (*RULE_KINDS, "timeline", "facts")
        if out.caught.get(k)
    }


def section(
    title: str,
    runs: dict[str, Outcome],
    before: dict[str, Any] | None,
    extra: Sequence[str] = (),
    heldout: dict[str, Any] | None = None,
) -> list[str]:
    for label, data in (("before", before), ("held-out first run", heldout)):
        if data and data.get("misses"):
            table = [f"| the issue's miss, {label} | result (rules alone) |", "|---|---|"]
            extra = [*extra, *table, *data["misses"], ""]
    lines = [f"## {title}", ""]
    lines += kind_table(
        runs,
        before if before and before.get("rules") else None,
        heldout if heldout and heldout.get("rules") else None,
    )
    lines.append("")
    for label, data in (("before", before), ("held-out first run", heldout)):
        if data and data.get("rules"):
            lines.append(
                f"Rules, {label}: {_overall(data['rules'])}; rules + model: recall "
                f"{_overall(data['rules+model']).split(',')[0].split()[1]}."
            )
    lines.append("")
    lines += [
        "| run | recall | precision | true findings | false findings (on clean chapters) |",
        "|---|---|---|---|---|",
        *(summary_line(mode, out) for mode, out in runs.items()),
        "",
        *extra,
    ]
    for mode, out in runs.items():
        lines += [f"### False findings, {mode}", ""]
        if not out.false:
            lines.append("(none)")
        for name, f in out.false:
            lines.append(f"- {name} · {f.kind} · {f.source}: “{f.quote[:60]}” {dict(f.fields)}")
        lines.append("")
    lines += ["### Missed plants (rules alone)", ""]
    for doc in runs["rules"].missed:
        assert doc.slip is not None
        note = f" ({doc.slip.note})" if doc.slip.note else ""
        lines.append(f"- {doc.name}: {doc.slip.text.strip().replace(chr(10), ' / ')}{note}")
    if not runs["rules"].missed:
        lines.append("(none)")
    return [*lines, ""]


def issue_misses(out: Outcome, clean_names: Sequence[str]) -> list[str]:
    """The three misses issue 23 names, on this half."""
    pron = out.notes.get("rule_broken/pronoun", [])
    full = out.notes.get("unknown_name/full-name", [])
    places = sum(1 for n, f in out.false if f.kind == "two_places" and n in clean_names)
    return [
        "| the issue's miss | result (rules alone) |",
        "|---|---|",
        f"| healed wound said with 他/她 (rule_broken, pronoun plants) | {_pct(sum(pron), len(pron))} caught |",
        f"| unintroduced full name at a sentence head (full-name plants) | {_pct(sum(full), len(full))} caught |",
        f"| part of the current place read as a second place | {places} two_places findings on the clean chapters |",
        "",
    ]


async def run_set(clean: list[Doc], planted: list[Doc]) -> dict[str, Outcome]:
    return {
        "rules": await evaluate(clean, planted, with_model=False),
        "rules+model": await evaluate(clean, planted, with_model=True),
    }


async def run(half: str) -> tuple[str, dict[str, object]]:
    narrative.warm()  # jieba's dictionary loads once, outside the timings
    before = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else {}
    heldout = json.loads(HELDOUT.read_text(encoding="utf-8")) if HELDOUT.exists() else {}
    worlds = load_worlds("all")
    parts = {"all": ("test", "test2", "tune"), "tune+cuv": ("tune",)}.get(half, (half,))
    load = os.getloadavg()[0]
    lines = [
        "# Consistency check: precision and recall",
        "",
        f"Generated by `bench/bench_consistency.py` ({datetime.now(UTC):%Y-%m-%d}); load average"
        f" {load:.1f} on 2 cores. See the script's docstring for the sets, the story state and the"
        ' model\'s script; `bench/data/consistency/` for the planted set. "Before" = the rules'
        " before issue 23 (from `consistency-baseline.json`).",
        "",
    ]
    report: dict[str, object] = {}
    timings: list[float] = []
    for part in parts:
        chosen = [w for w in worlds if w.half == part]
        if not chosen:
            continue
        clean, planted = world_docs(chosen)
        runs = await run_set(clean, planted)
        timings += runs["rules"].millis
        registers = ", ".join(f"{w.name} ({w.register})" for w in chosen)
        title = f"Issue-23 set, {part} half: {registers}"
        title += f" — {len(clean)} clean chapters, {len(planted)} plants"
        extra = issue_misses(runs["rules"], [d.name for d in clean])
        was = {**before.get(part, {}), "misses": before.get(f"{part}-misses")} if before else None
        first = (
            {**heldout[part], "misses": heldout.get(f"{part}-misses")} if part in heldout else None
        )
        lines += section(title, runs, was, extra, first)
        report[part] = {mode: numbers(o) for mode, o in runs.items()}
        report[f"{part}-misses"] = extra[2:5]
    if half in ("all", "tune+cuv"):
        clean, planted = cuv_docs()
        runs = await run_set(clean, planted)
        lines += section(
            f"Issue-12 CUV set (tuned on): {len(clean)} clean chapters, {len(planted)} plants",
            runs,
            before.get("cuv"),
        )
        report["cuv"] = {mode: numbers(o) for mode, o in runs.items()}
    timings.sort()
    if timings:
        lines += [
            f"Offline rules on the issue-23 set: {timings[len(timings) // 2]:.0f} ms median per"
            f" chapter (p95 {timings[int(len(timings) * 0.95)]:.0f} ms), jieba loaded beforehand.",
            "",
        ]
    return "\n".join(lines), report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("bench/results/consistency.md"))
    parser.add_argument(
        "--half", choices=("tune", "tune+cuv", "test", "test2", "all"), default="all"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    text, numbers_out = asyncio.run(run(args.half))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps(numbers_out, indent=1) + "\n", encoding="utf-8")
    print(text)
