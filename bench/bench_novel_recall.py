"""Plot memory recall: does the prompt for chapter j carry what chapter k planted, k ≤ j − 40?

A synthetic 300-chapter novel (generated here, deterministic) with 30 planted callbacks: 10
names (a stranger introduced in chapter k), 10 objects (a thing found in chapter k), 10 vows
(an oath sworn in chapter k). The goal (L5) of chapter j = k + 40 … k + 59 recalls the plant in
its own words, as a proposal would. Everything runs on Qdrant Edge + SQLite through
`PlotMemory` and the chapter service's prompt builder; no model (summaries are extractive).

For each callback we build chapter j's prompt context when chapters 1 … j−1 exist and count:
- planted chunk in the prompt: an L2 passage of chapter k containing the plant;
- planted summary in the prompt: chapter k among the L3 summaries.

"before" is the algorithm issue 12 replaced (kept here to measure it): L2 by dense + BM25 only,
L3 = the 2 most recent summaries + the chapters of the L2 hits, up to 5 (and summaries were the
first 200 characters of a chapter without a model). The other rows share L3 by similarity over
indexed summaries (top 3–5, the previous chapter always in through L4) and differ in L2:
"no tags" is dense + BM25 alone; "character boost, no filter" is issue 12's (the goal's
selective characters as a third ranking); "all tags boost, no filter" adds the goal's scene and
event tags to that ranking; "tag filter, fill-up (issue 23)" is issue 23's first filter (the
goal's selective tags filter first, `novel.memory.MIN_FILTERED`, the unfiltered search filling
up), "fused with unfiltered (RRF)" merges the filtered and unfiltered hits by rank instead, and
the shipped row filters on characters and scenes only (event tags do not count in L2).

Filler sentences now and then carry an event (a vow, a find, a stranger, a fight, a secret), so
an event tag is not the planted callback's alone.

    nice .venv/bin/python bench/bench_novel_recall.py [--embedder use|e5|hash] [--chapters 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from novel.blueprint import Blueprint, Character
from novel.chapters import ChapterService, _story_names_in
from novel.memory import Merge, PlotHit, PlotMemory
from novel.repo import Draft, NovelRepo
from novel.settings import NovelSettings
from novel.summary import ChapterSummary, extractive_summary
from novel.writer import (
    Goal,
    PriorChapter,
    estimate_tokens,
    goal_characters,
    goal_tags,
    memory_query,
    top_k,
    within_budget,
)
from retrieval.fakes import HashEmbedder
from retrieval.keyword import Bm25Encoder
from retrieval.ports import Embedder
from retrieval.store.edge import EdgeStore

CAST = [
    ("林远", ["阿远"]),
    ("苏晴", ["晴儿"]),
    ("沈默", ["沈师父"]),
    ("霍三", []),
    ("周冲", ["周大哥"]),
    ("柳娘", []),
    ("韩七", []),
    ("白鹭", ["鹭儿"]),
]
PLACES = [
    "青岚渡",
    "江心岛",
    "听潮阁",
    "漕帮总舵",
    "白石镇",
    "芦苇荡",
    "望江楼",
    "古渡口",
    "药铺",
    "城隍庙",
]
THINGS = ["渔网", "灯笼", "药箱", "木桨", "酒坛", "竹篮", "斗笠", "铜锣", "麻绳", "蓑衣"]
ACTS = [
    "在{p}修补{t}",
    "沿着{p}的石阶慢慢走",
    "在{p}和人争吵",
    "把{t}交给了船家",
    "在{p}等到天黑",
    "背着{t}赶路",
    "在{p}听人说起漕帮的事",
    "在{p}喝了一碗粥",
    "拿着{t}四处打听消息",
    "在{p}躲雨",
]
# Now and then a filler sentence with an event in it (a vow, a find, a stranger, a fight), so
# an event tag is not a planted callback's alone: the filter has to choose among many.
NOISE = [
    "{a}发誓明天一早就去{p}。",
    "{a}在{p}捡到几枚铜钱。",
    "{p}来了一个陌生人，问了路就走了。",
    "{a}和几个醉汉在{p}交手，打翻了桌子。",
    "{a}说出了一个藏了很久的秘密。",
    "{a}在{p}认出了一个旧相识。",
]
WEATHER = ["江风很冷", "雨下个不停", "月色很亮", "雾气从江面升起", "太阳晒得人发昏", "潮水正在上涨"]

NAMES = [
    "钱七",
    "孟青山",
    "欧阳朔",
    "杜九娘",
    "魏长庚",
    "贺兰舟",
    "蒋小满",
    "邵寒衣",
    "丁不二",
    "骆千帆",
]
OBJECTS = [
    ("青铜钥匙", "鹤纹"),
    ("玉佩", "半轮明月"),
    ("铁牌", "漕帮暗记"),
    ("木匣", "三道锁"),
    ("铜镜", "裂痕"),
    ("羊皮地图", "红色标记"),
    ("银簪", "梅花"),
    ("旧账本", "血手印"),
    ("骨笛", "七个孔"),
    ("石印", "听潮二字"),
]
VOWS = [
    ("不找回古钟", "此生不再渡江"),
    ("不查清师父的下落", "绝不离开青岚渡"),
    ("霍三不死", "永不回白石镇"),
    ("不为父亲洗清冤屈", "终身不饮酒"),
    ("不能护住渡口百姓", "就把这条命还给江水"),
    ("江心岛的秘密公开之前", "不对任何人提起听潮阁"),
    ("还清欠柳娘的债之前", "不再赌钱"),
    ("找到失散的妹妹之前", "不穿新衣"),
    ("漕帮还在收过路钱", "就不放下手中的桨"),
    ("不学会师父的剑法", "不再踏进望江楼"),
]


@dataclass(frozen=True)
class Callback:
    kind: str  # name | object | vow
    planted: int  # chapter k
    recalled: int  # chapter j
    sentence: str  # what chapter k says
    marker: str  # a string only the planted passage contains
    goal: Goal


def blueprint() -> Blueprint:
    return Blueprint(
        title="青岚渡",
        places=PLACES,
        characters=[Character(name=n, aliases=a) for n, a in CAST],
        rules=["没有夸张的法术。", "人物已死亡不可复活。"],
    )


def callbacks(chapters: int) -> list[Callback]:
    out: list[Callback] = []
    rng = random.Random(11)
    for i in range(30):
        k = 5 + 8 * i
        j = min(k + 40 + (i * 7) % 20, chapters)
        a, b = CAST[i % 8][0], CAST[(i + 3) % 8][0]
        place = PLACES[(i * 3) % len(PLACES)]
        if i % 3 == 0:
            n = NAMES[i // 3]
            sentence = f"渡口来了一个名叫{n}的外乡人，{n}说他从{place}来，要找一口沉在江底的钟。"
            goal = Goal(f"{n}重现", f"{n}又出现在{PLACES[(i + 5) % 10]}，{a}认出了这个外乡人")
            out.append(Callback("name", k, j, sentence, n, goal))
        elif i % 3 == 1:
            obj, sym = OBJECTS[i // 3]
            sentence = f"{a}在{place}捡到一个{obj}，上面有{sym}。"
            goal = Goal(f"{obj}的秘密", f"{a}拿出当年捡到的{obj}，去找有{sym}的地方")
            out.append(Callback("object", k, j, sentence, obj, goal))
        else:
            cond, oath = VOWS[i // 3]
            sentence = f"{a}对{b}发誓：{cond}，{oath}。"
            goal = Goal("旧誓", f"{b}提醒{a}：你说过{cond}就{oath[-4:]}，如今怎么办")
            out.append(Callback("vow", k, j, sentence, cond, goal))
        rng.random()
    return out


def chapter_text(rng: random.Random, n: int, plant: str | None) -> str:
    paragraphs: list[str] = []
    where = rng.randrange(3, 11)
    for p in range(14):
        sentences = []
        for _ in range(rng.randint(3, 5)):
            who = rng.choice(CAST)
            name = rng.choice([who[0], *who[1]])
            act = rng.choice(ACTS).format(p=rng.choice(PLACES), t=rng.choice(THINGS))
            sentences.append(f"{name}{act}，{rng.choice(WEATHER)}。")
        if plant is not None and p == where:
            sentences.insert(rng.randrange(len(sentences) + 1), plant)
        elif rng.random() < 0.12:
            noise = rng.choice(NOISE).format(a=rng.choice(CAST)[0], p=rng.choice(PLACES))
            sentences.insert(rng.randrange(len(sentences) + 1), noise)
        paragraphs.append("".join(sentences))
    return "\n\n".join(paragraphs)


def _old_pick_summaries(
    prior: list[PriorChapter], plot: list[PlotHit], limit: int = 5, recent: int = 2
) -> list[PriorChapter]:
    """The L3 selection this issue replaced: recent + the chapters of the L2 hits."""
    by_no = {p.number: p for p in prior}
    chosen: list[int] = [p.number for p in prior[-recent:]]
    for h in plot:
        if len(chosen) >= limit:
            break
        if h.chapter_no in by_no and h.chapter_no not in chosen:
            chosen.append(h.chapter_no)
    for p in reversed(prior):
        if len(chosen) >= min(limit, len(prior)):
            break
        if p.number not in chosen:
            chosen.append(p.number)
    return [by_no[n] for n in sorted(chosen)]


def make_embedder(name: str) -> Embedder:
    if name == "use":
        from retrieval.embed.use import USEEmbedder

        return USEEmbedder()
    if name == "e5":
        from retrieval.embed.offline import E5Embedder

        return E5Embedder()
    return HashEmbedder(384)


async def run(chapters: int, embedder_name: str, partial: Path | None = None) -> str:
    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="bench-recall-"))
    embedder = make_embedder(embedder_name)
    repo = await NovelRepo.open(tmp / "novel.sqlite3")
    store = await EdgeStore.open(tmp / "qdrant", embedder.dim)
    encoder = Bm25Encoder()
    memory = PlotMemory(
        repo, store, embedder, encoder.encode_document, encode_query_sparse=encoder.encode_query
    )
    settings = NovelSettings()
    service = ChapterService(repo, memory, None, settings, lambda: datetime.now(UTC))
    bp = blueprint()
    now = datetime.now(UTC)
    await repo.world.ensure_novel("bench", bp.to_json(), now)
    cbs = callbacks(chapters)
    plants = {c.planted: c for c in cbs}
    due: dict[int, list[Callback]] = {}
    for c in cbs:
        due.setdefault(c.recalled, []).append(c)
    modes = (
        "before",
        "no tags",
        "character boost, no filter",
        "all tags boost, no filter",
        "tag filter, fill-up (issue 23)",
        "tag filter, fused with unfiltered (RRF)",
        "filter on characters + scenes, fill-up (shipped)",
    )
    hits: dict[str, dict[str, list[tuple[bool, bool]]]] = {m: {} for m in modes}
    tokens: dict[str, list[int]] = {m: [] for m in modes}
    query_ms: list[float] = []
    index_ms: list[float] = []
    first_200: dict[int, ChapterSummary] = {}
    for n in range(1, chapters + 1):
        for cb in due.get(n, []):
            t0 = time.perf_counter()
            after = await service.context("bench", bp, cb.goal, n)
            query_ms.append((time.perf_counter() - t0) * 1000)
            before = await _context_before(memory, repo, bp, cb.goal, n, settings, first_200)
            variants: list[tuple[str, tuple[Sequence[PlotHit], Sequence[PriorChapter]]]] = [
                ("before", before)
            ]
            current = await repo.book.current_versions("bench")
            people = goal_characters(bp, cb.goal) + _story_names_in(current, cb.goal, bp)
            scenes = [s for _, v in current for s in v.summary.scenes]
            for mode, tags in (
                ("no tags", []),
                ("character boost, no filter", people),
                ("all tags boost, no filter", people + goal_tags(bp, cb.goal, scenes)),
            ):
                variants.append(
                    (
                        mode,
                        await _context_unfiltered(service, memory, bp, cb.goal, n, settings, tags),
                    )
                )
            all_tags = people + goal_tags(bp, cb.goal, scenes)
            merges: tuple[tuple[str, list[str], Merge], ...] = (
                ("tag filter, fill-up (issue 23)", all_tags, "fill"),
                ("tag filter, fused with unfiltered (RRF)", all_tags, "fuse"),
            )
            for mode, tags, merge in merges:
                variants.append(
                    (
                        mode,
                        await _context_unfiltered(
                            service, memory, bp, cb.goal, n, settings, tags, merge=merge
                        ),
                    )
                )
            variants.append(
                ("filter on characters + scenes, fill-up (shipped)", (after.plot, after.summaries))
            )
            planted_in = {
                m: any(h.chapter_no == cb.planted and cb.marker in h.text for h in v[0])
                for m, v in variants
            }
            if planted_in["character boost, no filter"] and not all(
                planted_in[m] for m in modes[-3:]
            ):
                print(
                    f"LOST {cb.kind} k={cb.planted} j={n} tags={all_tags} {planted_in}",
                    file=sys.stderr,
                )
                for m, v in variants[-3:]:
                    print(
                        f"  {m}: "
                        + " | ".join(
                            f"{h.chapter_no}:{','.join(h.tags)}:{h.text[:20]}" for h in v[0]
                        ),
                        file=sys.stderr,
                    )
            for mode, (plot, summaries) in variants:
                chunk = any(h.chapter_no == cb.planted and cb.marker in h.text for h in plot)
                in_summary = any(p.number == cb.planted for p in summaries)
                hits[mode].setdefault(cb.kind, []).append((chunk, in_summary))
                tokens[mode].append(
                    sum(estimate_tokens(h.text) for h in plot)
                    + sum(estimate_tokens(p.summary.summary) for p in summaries)
                )
        if due.get(n) and partial is not None:
            # A long run (e5 on a loaded machine) leaves its tallies so far if it is stopped.
            done = [c for c in cbs if c.recalled <= n]
            _write_partial(
                partial, n, embedder_name, done, len(cbs), (hits, tokens, query_ms, index_ms)
            )
            print(f"[chapter {n}] {len(done)}/{len(cbs)} callbacks measured", file=sys.stderr)
        plant = plants.get(n)
        text = chapter_text(rng, n, plant.sentence if plant else None)
        title = f"第{n}回"
        summary = extractive_summary(text, title, bp)
        first_200[n] = ChapterSummary(summary=text.strip()[:200] or "…")
        t0 = time.perf_counter()
        await memory.add_chapter(
            chat_id="bench",
            chapter_id=uuid.uuid4().hex,
            draft=Draft(
                title=title,
                text=text,
                summary=summary,
                author="bench",
                reason="bench",
                now=now,
            ),
        )
        index_ms.append((time.perf_counter() - t0) * 1000)
    await store.close()
    await repo.close()
    return _report(chapters, embedder_name, cbs, hits, tokens, query_ms, index_ms)


async def _context_unfiltered(
    service: ChapterService,
    memory: PlotMemory,
    bp: Blueprint,
    goal: Goal,
    number: int,
    settings: NovelSettings,
    tags: list[str],
    merge: Merge | None = None,
) -> tuple[list[PlotHit], list[PriorChapter]]:
    """The shipped context with L2 searched without the tag filter (`tags` only boost), or,
    with `merge`, with the tag filter (event tags counting) merged that way."""
    ctx = await service.context("bench", bp, goal, number)
    k = top_k(number - 1)
    plot = await memory.search(
        "bench",
        memory_query(bp, goal),
        limit=k + 2,
        tags=tags,
        **({"min_filtered": 1 << 30} if merge is None else {"merge": merge, "events": True}),
    )
    plot = within_budget(
        [h for h in plot if h.chapter_no != number][:k], settings.plot_token_budget
    )
    return plot, list(ctx.summaries)


async def _context_before(
    memory: PlotMemory,
    repo: NovelRepo,
    bp: Blueprint,
    goal: Goal,
    number: int,
    settings: NovelSettings,
    first_200: dict[int, ChapterSummary],
) -> tuple[list[PlotHit], list[PriorChapter]]:
    k = top_k(number - 1)
    plot = await memory.search("bench", memory_query(bp, goal), limit=k + 2)
    plot = within_budget(
        [h for h in plot if h.chapter_no != number][:k], settings.plot_token_budget
    )
    prior = [PriorChapter(n, f"第{n}回", first_200[n]) for n in range(1, number)]
    return plot, _old_pick_summaries(prior[:-1], plot) if prior else []


def _write_partial(
    path: Path,
    chapter: int,
    embedder: str,
    done: list[Callback],
    total: int,
    tallies: tuple[
        dict[str, dict[str, list[tuple[bool, bool]]]],
        dict[str, list[int]],
        list[float],
        list[float],
    ],
) -> None:
    hits, tokens, query_ms, index_ms = tallies
    note = f"PARTIAL: {len(done)} of {total} callbacks, through chapter {chapter}.\n\n"
    body = _report(chapter, embedder, done, hits, tokens, list(query_ms), list(index_ms) or [0.0])
    path.write_text(note + body, encoding="utf-8")


def _report(
    chapters: int,
    embedder: str,
    cbs: list[Callback],
    hits: dict[str, dict[str, list[tuple[bool, bool]]]],
    tokens: dict[str, list[int]],
    query_ms: list[float],
    index_ms: list[float],
) -> str:
    load = os.getloadavg()[0]
    lines = [
        "## Plot memory recall: planted callbacks, 40–59 chapters later",
        "",
        f"Generated by `bench/bench_novel_recall.py --embedder {embedder}`"
        f" ({datetime.now(UTC):%Y-%m-%d}); load average {load:.1f} on 2 cores."
        f" {chapters} synthetic chapters, {len(cbs)} callbacks (10 names, 10 objects, 10 vows),"
        " each recalled by the goal of a chapter 40–59 chapters later; no model (extractive"
        " summaries).",
        "",
        "| algorithm | planted chunk in the prompt | planted summary in the prompt | either |"
        " L2 + L3 tokens (mean) |",
        "|---|---|---|---|---|",
    ]
    for mode, by_kind in hits.items():
        allv = [v for vs in by_kind.values() for v in vs]
        chunk = sum(c for c, _ in allv)
        summ = sum(s for _, s in allv)
        either = sum(c or s for c, s in allv)
        mean_tokens = sum(tokens[mode]) / max(1, len(tokens[mode]))
        lines.append(
            f"| {mode} | {chunk}/{len(allv)} | {summ}/{len(allv)} | {either}/{len(allv)} |"
            f" {mean_tokens:.0f} |"
        )
    lines += ["", "By kind (chunk / summary):", ""]
    lines.append("| algorithm | names | objects | vows |")
    lines.append("|---|---|---|---|")
    for mode, by_kind in hits.items():
        cells = []
        for kind in ("name", "object", "vow"):
            vs = by_kind.get(kind, [])
            cells.append(f"{sum(c for c, _ in vs)}/{len(vs)} · {sum(s for _, s in vs)}/{len(vs)}")
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    query_ms.sort()
    index_ms.sort()
    lines += [
        "",
        f"Building the prompt context (L2 with the tag track + L3 by similarity) took"
        f" {query_ms[len(query_ms) // 2]:.0f} ms median (p95"
        f" {query_ms[int(len(query_ms) * 0.95)]:.0f} ms) with the query embedding; indexing a"
        f" chapter (chunks + summary point) {index_ms[len(index_ms) // 2]:.0f} ms median.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chapters", type=int, default=300)
    parser.add_argument("--embedder", choices=("use", "e5", "hash"), default="use")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(f"bench/results/novel-recall-{args.embedder}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.stem + ".partial.md")
    report = asyncio.run(run(args.chapters, args.embedder, partial))
    partial.unlink(missing_ok=True)
    out.write_text(report, encoding="utf-8")
    print(report)
