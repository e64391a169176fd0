"""The real stack for reliability tests: `App` with the in-process `HashEmbedder`, real Qdrant
Edge + SQLite on a temporary data directory, and an injectable model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from bot.app import App
from bot.settings import Settings
from retrieval.fakes import HashEmbedder
from retrieval.ports import LLM

T = TypeVar("T")
DIM = 64

DOC = """# 神圣的分赐

神圣的分赐是神将祂自己分赐到人里面，使召会成为基督的身体。这是神永远经纶的中心。

召会是基督的身体，是三一神分赐的结果；信徒借着吃喝享受基督而长大。

## 新耶路撒冷

新耶路撒冷是神经纶的终极完成，是神与人调和的建造。
"""


def settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "llm_provider": "none",
        "sample_corpus": False,
        "rate_limit_user_per_min": 0,
        "rate_limit_chat_per_min": 0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@asynccontextmanager
async def open_app(
    data_dir: Path, llm: LLM | None = None, *, corpus: bool = True, **overrides: Any
) -> AsyncIterator[App]:
    """`App` on `data_dir`; with `corpus`, one small Markdown document ingested."""
    from ingest.pipeline import Pipeline

    async with App(settings(data_dir, **overrides), embedder=HashEmbedder(DIM), llm=llm) as app:
        if corpus:
            src = data_dir.parent / "src"
            src.mkdir(parents=True, exist_ok=True)
            (src / "dispensing.md").write_text(DOC, encoding="utf-8")
            summary = await Pipeline(app.indexer).ingest_paths([src / "dispensing.md"])
            assert summary.documents == 1, summary.skipped
        yield app


class Loop:
    """One event loop kept across Hypothesis examples (Hypothesis runs sync test bodies):
    open the stack once, then `loop.run(coro)` per example."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, awaitable: Awaitable[T]) -> T:
        return self._loop.run_until_complete(awaitable)

    def close(self) -> None:
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()


def with_app(
    data_dir: Path, body: Callable[[App, Loop], None], llm: LLM | None = None, **overrides: Any
) -> None:
    """Open the stack on a private loop, run the (sync, Hypothesis-driven) body, close."""
    loop = Loop()
    cm = open_app(data_dir, llm, **overrides)
    app = loop.run(cm.__aenter__())
    try:
        body(app, loop)
    finally:
        loop.run(cm.__aexit__(None, None, None))
        loop.close()
