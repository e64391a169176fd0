"""A restart needs no replay (issue 42): the story state read back from stored events.

The first N chapters of the 1919 CUV (public domain; Genesis onward, simplified, one verse a
line) are saved as a novel's chapters in a fresh SQLite file (`NovelRepo`). Each run is a new
process (nothing in memory), timed:

- **replay**: the state read from the chapters' texts (`story_state.replay`, what every process
  did after a restart before issue 42);
- **ledger, first process**: `StoryLedger.state` on the fresh database: every chapter read once
  and its events stored;
- **ledger, after a restart**: the same database, a new process: the stored events folded, no
  chapter read (the run counts the chapters it read).

Each run prints a hash of the final state: all three must be the same state.

    nice .venv/bin/python bench/bench_story_restart.py [--chapters 200] [--out bench/results/story-restart.md]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_consistency import load_verses  # noqa: E402
from novel import names, story_state  # noqa: E402
from novel.blueprint import default_blueprint  # noqa: E402
from novel.ledger import StoryLedger  # noqa: E402
from novel.repo import Draft, NovelRepo  # noqa: E402
from novel.summary import ChapterSummary  # noqa: E402

RUNS = ("replay", "ledger, first process", "ledger, after a restart")
CHAT = "bench"


def chapters(count: int) -> list[str]:
    verses = load_verses()
    return ["\n".join(t for _, t in verses[key]) for key in list(verses)[:count]]


async def seed(db: Path, texts: list[str]) -> None:
    bp = default_blueprint()
    async with await NovelRepo.open(db) as repo:
        await repo.world.ensure_novel(CHAT, bp.to_json(), datetime.now(UTC))
        for i, text in enumerate(texts, 1):
            draft = Draft(
                f"第{i}章",
                text,
                ChapterSummary(summary=f"第{i}章"),
                "b",
                "bench",
                datetime.now(UTC),
            )
            await repo.book.add_chapter(CHAT, f"c{i}", draft)


def _digest(state: story_state.StoryState) -> str:
    return hashlib.blake2b(repr(state).encode("utf-8"), digest_size=8).hexdigest()


async def ledger_run(db: Path) -> dict[str, float | str | int]:
    read = 0
    original = story_state.read_chapter

    def counting(state: story_state.StoryState, text: str) -> story_state.ChapterReading:
        nonlocal read
        read += 1
        return original(state, text)

    import novel.ledger

    setattr(novel.ledger, "read_chapter", counting)  # noqa: B010 (count, do not change)
    async with await NovelRepo.open(db) as repo:
        current = await repo.book.current_versions(CHAT)
        t0 = time.perf_counter()
        state = await StoryLedger(repo.events).state(CHAT, default_blueprint(), current)
        seconds = time.perf_counter() - t0
    return {"seconds": seconds, "state": _digest(state), "read": read}


def child(kind: str, count: int, db: str) -> None:
    names.warm()  # the analyser's model loads once per process either way: not timed
    if kind == "replay":
        texts = chapters(count)
        t0 = time.perf_counter()
        state = story_state.replay(default_blueprint(), texts)
        out: dict[str, float | str | int] = {
            "seconds": time.perf_counter() - t0,
            "state": _digest(state),
            "read": len(texts),
        }
    else:
        out = asyncio.run(ledger_run(Path(db)))
    print(json.dumps(out))


def run_child(kind: str, count: int, db: str) -> dict[str, float | str | int]:
    done = subprocess.run(
        [sys.executable, __file__, "--chapters", str(count), "--child", kind, "--db", db],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float | str | int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chapters", type=int, default=200)
    ap.add_argument("--child", default="")
    ap.add_argument("--db", default="")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.chapters, args.db)
        return
    texts = chapters(args.chapters)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "baibao.sqlite3"
        asyncio.run(seed(db, texts))
        results = {
            "replay": run_child("replay", args.chapters, ""),
            "ledger, first process": run_child("ledger", args.chapters, str(db)),
            "ledger, after a restart": run_child("ledger", args.chapters, str(db)),
        }
    lines = [
        "## A restart needs no replay: the story state from stored events",
        "",
        f"Generated by `bench/bench_story_restart.py --chapters {args.chapters}`"
        f" ({datetime.now(UTC):%Y-%m-%d}); load average {os.getloadavg()[0]:.1f} on"
        f" {os.cpu_count()} cores. The first {args.chapters} chapters of the 1919 CUV"
        f" ({sum(map(len, texts))} characters), default blueprint, each run a new process"
        " (the analyser's model loaded before timing).",
        "",
        "| run | chapters read | time | per chapter | final state (hash) |",
        "|---|---|---|---|---|",
    ]
    for run in RUNS:
        r = results[run]
        seconds = float(r["seconds"])
        lines.append(
            f"| {run} | {r['read']} | {seconds:.2f} s | {1000 * seconds / args.chapters:.1f} ms"
            f" | `{r['state']}` |"
        )
    same = len({r["state"] for r in results.values()}) == 1
    lines += ["", f"Same final state in all three runs: {'yes' if same else 'NO'}.", ""]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
