"""Concurrency and limits: the global cap on model calls, per-user / per-chat rate limits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.router import Invocation, Line
from retrieval.fakes import HashEmbedder
from tests.reliability.helpers.stack import open_app, settings
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion


async def test_global_cap_on_concurrent_model_calls(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    n = 8
    server = LLMStubServer()  # counts the requests it is answering at once
    gate = asyncio.Event()  # every answer waits for it: the first requests stay in flight
    async with server:
        server.openai.extend([Scripted.held(openai_completion("神圣的分赐。[1]"), gate)] * n)
        s = settings(
            tmp_path / "data",
            llm_provider="openai",
            llm_base_url=server.openai_url,
            openai_api_key="sk-test-0000",
            llm_model="stub-model",
            llm_max_concurrency=2,
        )
        async with App(s, embedder=HashEmbedder(64)) as app:
            from ingest.pipeline import Pipeline
            from tests.reliability.helpers.stack import DOC

            (tmp_path / "doc.md").write_text(DOC, encoding="utf-8")
            await Pipeline(app.indexer).ingest_paths([tmp_path / "doc.md"])
            asks = asyncio.gather(
                *(
                    app.router.answer(
                        Invocation(Actor("telegram", f"c{i}", f"u{i}"), Line("/ask 神圣的分赐？"))
                    )
                    for i in range(n)
                )
            )
            # The cap is reached (two held in flight) before any answer is let through; the
            # other six wait on the cap, not on the server, until the gate opens.
            await server.wait_until(lambda: server.in_flight == 2)
            gate.set()
            replies = await asks
        errors = [r.getMessage() + "\n" + (r.exc_text or "") for r in caplog.records if r.exc_info]
        assert all(r is not None and not r.is_error for r in replies), errors
        assert len(server.requests_to("/v1/chat/completions")) == n
        assert server.max_in_flight == 2, server.max_in_flight


async def test_rate_limits_per_user_and_per_chat(tmp_path: Path) -> None:
    async with open_app(
        tmp_path / "data", rate_limit_user_per_min=2, rate_limit_chat_per_min=3
    ) as app:
        a = Actor("telegram", "g1", "u1")
        b = Actor("telegram", "g1", "u2")
        c = Actor("telegram", "g2", "u3")
        r = [await app.router.answer(Invocation(a, Line("/cite 弗1:10"))) for _ in range(3)]
        assert [x is not None and x.is_error for x in r] == [False, False, True]
        assert r[2] is not None and "请求太频繁了" in r[2].plain()
        assert not (await app.router.answer(Invocation(b, Line("/cite 弗1:10")))).is_error  # type: ignore[union-attr]
        chat_full = await app.router.answer(Invocation(b, Line("/cite 弗1:10")))  # 4th in chat g1
        assert chat_full is not None and "请求太频繁了" in chat_full.plain()
        assert not (await app.router.answer(Invocation(c, Line("/cite 弗1:10")))).is_error  # type: ignore[union-attr]
        en = await app.router.answer(Invocation(a, Line("/ask What is the divine dispensing?")))
        assert en is not None and "Too many requests" in en.plain()
        helped = await app.router.answer(Invocation(a, Line("/help")))
        assert helped is not None and not helped.is_error  # /help is never limited
