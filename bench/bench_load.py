"""Load: 200 concurrent /ask through the router on the prepared sample corpus.

    .venv/bin/python bench/bench_load.py [--n 200] [--delay 0.05] [--out bench/results/load.md]

Real stack (`App`: Qdrant Edge + SQLite, hybrid search, answer verification) with the
in-process `HashEmbedder` (the offline E5 model would measure the embedder, not the bot) and a
`ScriptedLLM` behind a fixed `asyncio.sleep(delay)`. Rate limits are off (RATE_LIMIT_* = 0).
Overhead = wall time of one /ask minus the scripted model delay.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import percentile as pct
from bench.measure import rss_mb
from bot.actor import Actor
from bot.app import App
from bot.router import Invocation, Line
from bot.settings import Settings
from retrieval.fakes import HashEmbedder
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMRequest, LLMResponse, OnDelta

QUESTIONS = [
    "神圣的分赐与召会有什么关系？",
    "什么是神的经纶？",
    "有机的救恩包括哪些方面？",
    "新耶路撒冷象征什么？",
    "What is the dispensing of the Triune God?",
    "三一神如何分赐到人里面？",
]


class DelayedLLM:
    """A scripted model that takes `delay` seconds per call."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._inner = ScriptedLLM(
            ["根据所给资料，神圣的分赐使召会成为基督的身体。[1]"], repeat_last=True
        )

    @property
    def context_tokens(self) -> int:
        return self._inner.context_tokens

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        await asyncio.sleep(self.delay)
        return await self._inner.complete(request, on_delta)

    async def aclose(self) -> None:
        return None


async def run(n: int, delay: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            data_dir=Path(tmp) / "data",
            rate_limit_user_per_min=0,
            rate_limit_chat_per_min=0,
        )
        async with App(settings, embedder=HashEmbedder(384), llm=DelayedLLM(delay)) as app:
            t = time.perf_counter()
            await app.prepare_samples()
            prepare_s = time.perf_counter() - t
            warm = await app.router.answer(
                Invocation(Actor("console", "c", "w"), Line("/ask 经纶"))
            )
            assert warm is not None and not warm.is_error
            rss_before = rss_mb()

            async def one(i: int) -> tuple[float, bool]:
                actor = Actor("telegram", f"chat{i % 20}", f"user{i}")
                start = time.perf_counter()
                asked = Line("/ask " + QUESTIONS[i % len(QUESTIONS)])
                reply = await app.router.answer(Invocation(actor, asked))
                ok = reply is not None and not reply.is_error and bool(reply.plain().strip())
                return time.perf_counter() - start, ok

            t = time.perf_counter()
            results = await asyncio.gather(*(one(i) for i in range(n)))
            wall = time.perf_counter() - t
            rss_after = rss_mb()
    totals = [r[0] for r in results]
    overhead = [max(0.0, x - delay) for x in totals]
    return {
        "n": n,
        "delay_ms": delay * 1000,
        "errors": sum(1 for _, ok in results if not ok),
        "wall_s": wall,
        "throughput": n / wall,
        "p50_ms": statistics.median(overhead) * 1000,
        "p95_ms": pct(overhead, 95) * 1000,
        "max_ms": max(overhead) * 1000,
        "rss_before": rss_before,
        "rss_after": rss_after,
        "prepare_s": prepare_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    r = asyncio.run(run(a.n, a.delay))
    md = f"""# Load: {r["n"]} concurrent /ask through the router

Setup: `App` (Qdrant Edge + SQLite, hybrid search, citation verification) on the prepared
sample corpus; `HashEmbedder` (384-d, in-process: the offline E5 model would measure the
embedder, not the bot); a scripted model with a fixed {r["delay_ms"]:.0f} ms delay per call;
`RATE_LIMIT_*` = 0; {os.cpu_count()} CPU cores shared with other work. Overhead = the wall
time of one /ask minus the scripted model delay (it includes queueing behind the other
{r["n"]} requests on one event loop).

| metric | value |
|---|---|
| requests | {r["n"]} |
| errors | {r["errors"]} |
| wall time | {r["wall_s"]:.2f} s |
| throughput | {r["throughput"]:.1f} /ask per s |
| overhead p50 | {r["p50_ms"]:.0f} ms |
| overhead p95 | {r["p95_ms"]:.0f} ms |
| overhead max | {r["max_ms"]:.0f} ms |
| RSS before / after | {r["rss_before"]:.0f} MB / {r["rss_after"]:.0f} MB |
| sample corpus preparation | {r["prepare_s"]:.1f} s |

Run: `.venv/bin/python bench/bench_load.py --n {r["n"]} --delay {r["delay_ms"] / 1000:g} --out bench/results/load.md`
"""
    print(md)
    if a.out:
        a.out.write_text(md, encoding="utf-8")


if __name__ == "__main__":
    main()
