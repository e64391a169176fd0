"""Consistency check: precision and recall on planted contradictions in text the team did not
write — narrative chapters of the 1919 Chinese Union Version (public domain): Ruth 1–4, Jonah
1–4, Esther 1–10, Genesis 22–24 and 37–45, Daniel 1–6 (35 chapters), Simplified by OpenCC.

Each book gets a blueprint as a writing group would keep it: every person the book names (with
aliases), its places, and three rules (no sorcery — except Daniel, whose world has it —, the
dead stay dead, wounds have consequences). Statuses follow the story: a character who dies in
chapter k is 已死亡 in the blueprint from chapter k+1 on.

- clean: the 35 chapters as they are. Every finding on them is a false positive.
- planted: 36 copies of a chapter, each with one contradiction inserted as new lines (one
  sentence, or two for "in two places at once"): 10 dead characters acting or speaking, 8
  unknown names used as if known, 6 characters in two places in one scene, 6 broken blueprint
  rules, 6 timeline/fact errors that only a reader with judgement can see.

A planted contradiction is found when a finding quotes a sentence of the planted lines; any other
finding on a planted copy that the clean chapter does not also get is a false positive.

Two runs: the offline rules alone, and rules + the LLM pass with a *scripted* model. The script
is fixed in advance and imperfect on purpose, so the numbers measure our plumbing (quote
verification, merging, de-duplication), not a real model's judgement:
- on every planted copy it reports the planted sentence with the right ConStory class, except
  every 4th copy, where its quote is paraphrased (verification must drop it);
- on every 3rd clean chapter it reports a wrong finding that quotes a real sentence (a false
  positive that verification cannot catch), on every 5th a finding with an invented quote
  (verification must drop it).

    nice .venv/bin/python bench/bench_consistency.py [--out bench/results/consistency.md]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gzip
import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from novel.blueprint import Blueprint, Character
from novel.consistency import Finding, StoryState, check, check_rules
from retrieval.llm.scripted import ScriptedLLM
from retrieval.text import to_simplified

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


@dataclass
class Doc:
    name: str
    book: Book
    chapter: int
    text: str
    plant: Plant | None
    index: int  # position among its kind (planted / clean), for the model's script


def script_for(doc: Doc, sentences: list[str]) -> str:
    """The scripted judge's answer for one document (see the module docstring)."""
    findings: list[dict[str, str]] = []
    if doc.plant is not None:
        quote = doc.plant.text.split("\n")[-1]
        if doc.index % 4 == 3:  # paraphrased: not the chapter's words
            quote = "据说" + quote[2:-1] + "了"
        findings.append(
            {
                "class": MODEL_CLASS[doc.plant.kind],
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


def is_hit(finding: Finding, plant: Plant) -> bool:
    planted = [_norm(line) for line in plant.text.split("\n")]
    quote = _norm(finding.quote)
    return any(p and (p in quote or quote in p) for p in planted) and bool(quote)


async def run() -> str:
    verses = load_verses()
    clean: list[Doc] = []
    for book in BOOKS:
        for chapter in book.chapters:
            text = chapter_text(verses[(book.osis, chapter)])
            clean.append(Doc(f"{book.osis} {chapter}", book, chapter, text, None, len(clean)))
    books = {b.osis: b for b in BOOKS}
    planted: list[Doc] = []
    for plant in PLANTS:
        book = books[plant.book]
        assert plant.chapter in book.chapters, plant
        text = chapter_text(verses[(plant.book, plant.chapter)], plant)
        at = text.index(plant.text.split("\n")[0])
        assert text[:at].count("「") == text[:at].count("」"), ("inside a quotation", plant)
        planted.append(
            Doc(
                f"{plant.book} {plant.chapter} +{plant.kind}",
                book,
                plant.chapter,
                text,
                plant,
                len(planted),
            )
        )
    from novel import narrative

    narrative.sentences("预热")  # jieba's dictionary loads once, outside the timings
    check_rules("林远说。", StoryState(BOOKS[0].blueprint(1)))

    results: dict[str, dict[str, object]] = {}
    timings: list[float] = []
    for mode in ("rules", "rules+model"):
        clean_findings: dict[str, list[Finding]] = {}
        per_kind: dict[str, list[bool]] = collections.defaultdict(list)
        fp: list[tuple[str, Finding]] = []
        tp = 0
        for doc in [*clean, *planted]:
            state = StoryState(doc.book.blueprint(doc.chapter))
            llm = None
            if mode == "rules+model":
                sents = [s.text for s in narrative.sentences(doc.text)]
                llm = ScriptedLLM([lambda _r, d=doc, ss=sents: script_for(d, ss)])
            t0 = time.perf_counter()
            found = await check(doc.text, state, llm=llm, number=doc.chapter)
            if mode == "rules":
                timings.append((time.perf_counter() - t0) * 1000)
            if doc.plant is None:
                clean_findings[doc.name] = found
                fp.extend((doc.name, f) for f in found)
                continue
            base = {_norm(f.quote) for f in clean_findings[f"{doc.book.osis} {doc.chapter}"]}
            hits = [f for f in found if is_hit(f, doc.plant)]
            per_kind[doc.plant.kind].append(bool(hits))
            tp += 1 if hits else 0
            for f in found:
                if f not in hits and _norm(f.quote) not in base:
                    fp.append((doc.name, f))
        found_total = sum(sum(v) for v in per_kind.values())
        results[mode] = {
            "per_kind": {k: (sum(v), len(v)) for k, v in per_kind.items()},
            "recall": found_total / len(planted),
            "tp": tp,
            "fp": fp,
            "precision": tp / (tp + len(fp)) if tp + len(fp) else 1.0,
            "clean_fp": sum(1 for name, _ in fp if "+" not in name),
        }

    chars = sum(len(d.text) for d in clean) / len(clean)
    load = os.getloadavg()[0]
    lines = [
        "# Consistency check: precision and recall",
        "",
        f"Generated by `bench/bench_consistency.py` ({datetime.now(UTC):%Y-%m-%d}); load average"
        f" {load:.1f} on 2 cores. Data: CUV 1919 (public domain) narrative chapters in"
        f" Simplified Chinese, {len(clean)} clean chapters (mean {chars:.0f} characters) and"
        f" {len(planted)} planted contradictions; see the script's docstring for the blueprints"
        " and the model's script.",
        "",
        "| kind | planted | found by rules | found by rules + model (scripted) |",
        "|---|---|---|---|",
    ]
    for kind in ("dead_acts", "unknown_name", "two_places", "rule_broken", "timeline", "facts"):
        r1 = results["rules"]["per_kind"][kind]  # type: ignore[index]
        r2 = results["rules+model"]["per_kind"][kind]  # type: ignore[index]
        lines.append(f"| {kind} | {r1[1]} | {r1[0]} | {r2[0]} |")
    lines += [
        "",
        "| run | recall | precision | true findings | false findings (on clean chapters) |",
        "|---|---|---|---|---|",
    ]
    for mode, r in results.items():
        fps = r["fp"]
        assert isinstance(fps, list)
        lines.append(
            f"| {mode} | {r['recall']:.3f} | {r['precision']:.3f} | {r['tp']} |"
            f" {len(fps)} ({r['clean_fp']}) |"
        )
    timings.sort()
    lines += [
        "",
        f"Offline rules: {timings[len(timings) // 2]:.0f} ms median per chapter"
        f" (p95 {timings[int(len(timings) * 0.95)]:.0f} ms), jieba loaded beforehand.",
        "",
        "## False findings",
        "",
    ]
    for mode, r in results.items():
        fps = r["fp"]
        assert isinstance(fps, list)
        lines.append(f"### {mode}")
        lines.append("")
        if not fps:
            lines.append("(none)")
        for name, f in fps:
            lines.append(f"- {name} · {f.kind} · {f.source}: “{f.quote[:60]}” {dict(f.fields)}")
        lines.append("")
    lines += ["## Missed plants (rules alone)", ""]
    for doc in planted:
        assert doc.plant is not None
        state = StoryState(doc.book.blueprint(doc.chapter))
        if not any(is_hit(f, doc.plant) for f in check_rules(doc.text, state)):
            lines.append(f"- {doc.name}: {doc.plant.text.replace(chr(10), ' / ')}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("bench/results/consistency.md"))
    args = parser.parse_args()
    report = asyncio.run(run())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
