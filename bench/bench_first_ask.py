"""The first English `/ask` of a process against the next one (issue 24, item 6).

An English question is glossed through CC-CEDICT read backwards (`retrieval.gloss`), an index
built once per process (1.5–2.6 s). Each mode runs in a fresh process over the same prepared
corpus (the sample corpus + Ephesians, e5 unless `--embedder`), through the router as a chat
command, with the offline (extractive) answerer. The process's first question is Chinese (it
pays what any first question pays: the store's first query, the model's first batch …); then
three English ones:

- `cold`: the bot serves and nothing warms the index (before: the first question builds it);
- `warmed`: the bot serves, `App.serving()` warmed it on a worker thread, and the first
  question comes after that (after);
- `racing`: the first question arrives the moment the bot starts serving, while the warm-up
  runs (the worst case after: it waits for the rest of the load, or shares the GIL with it).

    nice .venv/bin/python bench/bench_first_ask.py --data-dir /tmp/q
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval_quality import _settings, corpus_dir, make_embedder  # noqa: E402
from bot.actor import Actor  # noqa: E402
from bot.app import App  # noqa: E402
from bot.router import Invocation, Line  # noqa: E402

MODES = ("cold", "warmed", "racing")
FIRST = "/ask 神圣的分赐是什么意思？"  # the process's first question, in Chinese
QUESTIONS = (  # then the first English question, the next, and the one after
    "/ask What is the divine dispensing?",
    "/ask How does the church become the Body of Christ?",
    "/ask What does it mean to overcome?",
)
ZH = Actor("console", "bench", "u1")
EN = Actor("console", "bench", "u1", lang="en")


async def one_process(mode: str, data_dir: Path, embedder: str) -> list[float]:
    """Seconds each question of `QUESTIONS` took, in this process."""
    settings = _settings(corpus_dir(data_dir, embedder, "Eph"), "Eph")
    async with App(settings, embedder=make_embedder(embedder)) as app:
        await app.prepare_samples()
        await app.embedder.embed_query("warm the model")  # not what is measured here
        if mode != "cold":
            warmed = app.serving()
            if mode == "warmed":
                await warmed
        out = []
        for actor, line in [(ZH, FIRST), *((EN, q) for q in QUESTIONS)]:
            start = time.perf_counter()
            await app.router.answer(Invocation(actor, Line(line)))
            out.append(time.perf_counter() - start)
        return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--embedder", default="e5")
    p.add_argument("--runs", type=int, default=3, help="fresh processes per mode")
    p.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # a child process
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(asyncio.run(one_process(args.one, args.data_dir, args.embedder))))
        return
    # the corpus is prepared once, before anything is timed
    asyncio.run(one_process("cold", args.data_dir, args.embedder))
    print(
        "| mode | first /ask, Chinese (s) | first English /ask (s) | next (s) | the one after (s) |"
    )
    print("|---|---|---|---|---|")
    for mode in MODES:
        times = [
            json.loads(
                subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--data-dir",
                        str(args.data_dir),
                        "--embedder",
                        args.embedder,
                        "--one",
                        mode,
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.splitlines()[-1]
            )
            for _ in range(args.runs)
        ]
        cells = [statistics.median(t[i] for t in times) for i in range(len(QUESTIONS) + 1)]
        print(f"| {mode} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    print(f"\nMedians of {args.runs} fresh processes per mode ({args.embedder}).")


if __name__ == "__main__":
    main()
