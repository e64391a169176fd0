"""Telegram flood control: the bot's `FloodControl` against PTB's `AIORateLimiter`, through
the loopback Bot API and its flood model (per chat 3 messages in any 3 s, per group 20 in any
60 s, the whole bot 30 in any 1 s; `tests/stubs/telegram_rules.FloodModel`).

    .venv/bin/python bench/bench_telegram_flood.py [--out bench/results/telegram-flood.md]

Two workloads into one group: 25 posts in a row (a round's announcements, a long answer in
pieces), then 10 answers each preceded by a typing action and an admin lookup. For each layer:
wall time, time on the server's clock, 429 answers, sends that failed. `AIORateLimiter` needs
`pip install "python-telegram-bot[rate-limiter]"` (aiolimiter); without it only FloodControl
runs. It cannot wait on an injected clock (aiolimiter reads the event loop's time), so it runs
on the system clock, as FloodControl does in production.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from telegram.error import TelegramError
from telegram.ext import BaseRateLimiter, ExtBot

from bot.transports.telegram_flood import FloodControl
from retrieval.clock import Clock
from tests.stubs.clock import ServerTime, SystemTime, VirtualClock
from tests.stubs.telegram_server import TelegramServer

GROUP, ADMIN = -100700, 7


@dataclass
class Run:
    layer: str
    clock: str
    workload: str
    wall_s: float
    server_s: float
    refused_429: int
    failed: int


async def _workload(
    server: TelegramServer, bot: ExtBot[Any], name: str, layer: str, label: str
) -> Run:
    start_calls, wall, start = len(server.calls), time.monotonic(), server.time.now()
    failed = 0
    for i in range(25 if name == "25 posts" else 10):
        try:
            if name != "25 posts":
                await bot.send_chat_action(GROUP, "typing")
                await bot.get_chat_administrators(GROUP)
            await bot.send_message(GROUP, f"{name} {i}")
        except TelegramError:
            failed += 1
    refused = sum(c.status == 429 for c in server.calls[start_calls:])
    return Run(
        layer, label, name, time.monotonic() - wall, server.time.now() - start, refused, failed
    )


async def measure(
    layer: str, make: Callable[[Clock], BaseRateLimiter[Any]], now: ServerTime, label: str
) -> list[Run]:
    runs = []
    async with TelegramServer(time=now) as server:
        server.join(GROUP)
        server.member_status[(GROUP, ADMIN)] = "creator"
        for name in ("25 posts", "10 answers + typing + admin lookup"):
            server.flood_model.accepted.clear()  # each workload starts on a quiet minute
            async with ExtBot(
                server.token, base_url=server.api_base, rate_limiter=make(server.clock)
            ) as bot:
                runs.append(await _workload(server, bot, name, layer, label))
    return runs


async def main() -> list[str]:
    runs = await measure("FloodControl", FloodControl, VirtualClock(), "virtual")
    runs += await measure("FloodControl", FloodControl, SystemTime(), "system")
    try:
        from telegram.ext import AIORateLimiter

        def aio(clock: Clock) -> BaseRateLimiter[Any]:
            return AIORateLimiter(max_retries=2)

        runs += await measure("AIORateLimiter(max_retries=2)", aio, SystemTime(), "system")
    except RuntimeError as err:  # aiolimiter is not installed
        print(f"AIORateLimiter skipped: {err}")
    lines = [
        "| layer | clock | workload | wall s | server-clock s | 429s | failed sends |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.layer} | {r.clock} | {r.workload} | {r.wall_s:.1f} | {r.server_s:.1f} | "
        f"{r.refused_429} | {r.failed} |"
        for r in runs
    ]
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    out = parser.parse_args().out
    table = "\n".join(asyncio.run(main()))
    print(table)
    if out is not None:
        out.write_text(f"# Telegram flood control\n\n{table}\n", encoding="utf-8")
