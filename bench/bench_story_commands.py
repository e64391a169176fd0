"""How long `/novel characters` (and `map`, `recap`) take to read a story: the story state
replayed from N chapters (`novel.chapters._story_state`, the same replay the consistency check
runs on every save) plus the cast and map built from it, cold and from `StoryService`'s kept
reading, and the replay a save runs when the chapters before it were replayed already
(`novel.story_state.REPLAYS` keeps them; the cold columns clear it first). Chapters are the test
seed's three (tests/story_seed.py) repeated to ~3,100 characters,
so the cast stays small: the time is the replay's.

    nice .venv/bin/python bench/bench_story_commands.py [--chapters 10 30 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from novel.blueprint import Blueprint, default_blueprint
from novel.cast import StoryService, appearances, cast_of, map_of
from novel.repo import Draft, NovelRepo
from novel.story_state import REPLAYS, replay
from novel.summary import ChapterSummary
from tests.story_seed import CHAPTERS

OUT = Path(__file__).parent / "results" / "story-commands.md"


def chapter_text() -> str:
    base = "\n\n".join(t for _, t in CHAPTERS)
    return "\n\n".join([base] * 20)


async def served(n: int, text: str) -> tuple[float, float]:
    """(first, kept) seconds of StoryService.cast over n stored chapters."""
    bp = default_blueprint()
    with tempfile.TemporaryDirectory() as tmp:
        repo = await NovelRepo.open(Path(tmp) / "db.sqlite3")
        now = datetime(2026, 11, 1, tzinfo=UTC)
        await repo.world.ensure_novel("c", bp.to_json(), now)
        for i in range(n):
            await repo.book.add_chapter(
                chat_id="c",
                chapter_id=uuid.uuid4().hex,
                draft=Draft(
                    title=f"第{i + 1}章",
                    text=text,
                    summary=ChapterSummary(summary="林远与苏晴过江。", characters=["林远", "苏晴"]),
                    author="bench",
                    reason="submitted",
                    now=now,
                ),
            )

        async def blueprint(chat_id: str) -> Blueprint:
            return bp

        story = StoryService(repo, None, blueprint)
        REPLAYS.clear()
        t = time.perf_counter()
        await story.cast("c")
        first = time.perf_counter() - t
        t = time.perf_counter()
        await story.cast("c")
        kept = time.perf_counter() - t
        await repo.close()
    return first, kept


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chapters", type=int, nargs="+", default=[10, 30, 100])
    args = parser.parse_args()
    bp = default_blueprint()
    text = chapter_text()
    replay(bp, [text])  # jieba's dictionary loads once, outside the timings
    rows = []
    for n in args.chapters:
        texts = [text] * n
        REPLAYS.clear()
        t = time.perf_counter()
        state = replay(bp, texts)
        replayed = time.perf_counter() - t
        t = time.perf_counter()
        replay(bp, [*texts, f"第{n + 1}章。{text}"])  # a save: one new chapter more
        saved = time.perf_counter() - t
        t = time.perf_counter()
        seen = appearances(state, texts)
        map_of(state, cast_of(state, seen), seen)
        built = time.perf_counter() - t
        first, kept = asyncio.run(served(n, text))
        rows.append((n, replayed, saved, built, first, kept))
        print(
            f"{n} chapters: replay {replayed:.2f} s, save {saved:.2f} s, cast+map {built:.2f} s, "
            f"served first {first:.2f} s, kept {kept * 1000:.1f} ms",
            flush=True,
        )
    load = os.getloadavg()
    lines = [
        "# Story commands: reading the story (`bench_story_commands.py`)",
        "",
        f"Chapters of {len(text):,} characters; load average {load[0]:.1f} {load[1]:.1f}.",
        "",
        "| chapters | replay (story state), cold | save (one more chapter) | cast + map"
        " | StoryService.cast, first | kept |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {n} | {r:.2f} s | {v:.2f} s | {b:.2f} s | {f:.2f} s | {k * 1000:.1f} ms |"
        for n, r, v, b, f, k in rows
    ]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
