"""Daily model-token budgets (`bot.budget`), through `App` and the router with the real OpenAI
SDK against the loopback model: a user's or a chat's budget spent, /ask says so and answers
from the passages (no request reaches the model); /settings shows today's use; the daily reset
makes them whole again; an operator is not budgeted; a refusal is one log line."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.presenters.answer import notice_text
from bot.router import Invocation, Line
from ingest.pipeline import Pipeline
from retrieval.answer import ModelFailed
from retrieval.fakes import HashEmbedder
from tests.reliability.helpers.stack import DOC, settings
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion

ALICE = Actor("telegram", "-1001", "1", "甲")
BOB = Actor("telegram", "-1001", "2", "乙")
CAROL = Actor("telegram", "-1002", "3", "丙")
OPERATOR = Actor("telegram", "900", "900", kind="dm")
QUESTION = "/ask 什么是神圣的分赐？"
ANSWER = "神圣的分赐使召会成为基督的身体。[1]"
SPENT = 366  # tokens one stub completion reports (321 in + 45 out)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[tuple[App, LLMStubServer]]:
    async with LLMStubServer() as server:
        values = settings(
            tmp_path / "data",
            llm_provider="openai",
            llm_base_url=server.openai_url,
            openai_api_key="sk-test-0000",
            llm_model="stub-model",
            llm_max_retries=0,
            llm_daily_tokens_per_user=500,
            llm_daily_tokens_per_chat=1000,
            operators="telegram:900",
        )
        async with App(values, embedder=HashEmbedder(64)) as app:
            (tmp_path / "doc.md").write_text(DOC, encoding="utf-8")
            await Pipeline(app.indexer).ingest_paths([tmp_path / "doc.md"])
            yield app, server


async def ask(app: App, actor: Actor, server: LLMStubServer) -> str:
    server.openai.append(Scripted.json(openai_completion(ANSWER)))
    reply = await app.router.answer(Invocation(actor, Line(QUESTION)))
    assert reply is not None and not reply.is_error
    return reply.plain()


async def test_a_spent_budget_answers_from_the_passages_and_says_why(
    app: tuple[App, LLMStubServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    bot, server = app
    spent_notice = notice_text(ModelFailed("budget"), "zh")
    assert "今天的模型额度已用完" in spent_notice
    assert "神圣的分赐使召会成为基督的身体" in await ask(bot, ALICE, server)  # 366 of 500
    assert "神圣的分赐使召会成为基督的身体" in await ask(bot, ALICE, server)  # 732: now spent
    calls = len(server.requests_to("/v1/chat/completions"))
    third = await ask(bot, ALICE, server)
    assert spent_notice in third and "【" in third  # the passages, with their citations
    assert len(server.requests_to("/v1/chat/completions")) == calls  # nothing was sent
    refused = [r for r in caplog.records if "budget" in r.getMessage()]
    assert len(refused) == 1 and refused[0].exc_info is None
    # Bob has his own budget, but the chat's (1000) is spent after his first answer.
    assert "神圣的分赐使召会成为基督的身体" in await ask(bot, BOB, server)  # chat: 1098
    assert spent_notice in await ask(bot, BOB, server)
    assert "神圣的分赐使召会成为基督的身体" in await ask(bot, CAROL, server)  # another chat
    assert "神圣的分赐使召会成为基督的身体" in await ask(bot, OPERATOR, server)  # no budget
    shown = (await bot.router.answer(Invocation(ALICE, Line("/settings")))).plain()  # type: ignore[union-attr]
    assert f"你 {2 * SPENT:,} / 500 token" in shown and f"本聊天 {3 * SPENT:,} / 1,000" in shown
    assert bot.budget is not None
    await bot.budget.reset()  # the daily job (bot.jobs) at 00:00 UTC
    assert "神圣的分赐使召会成为基督的身体" in await ask(bot, ALICE, server)
    shown = (await bot.router.answer(Invocation(ALICE, Line("/settings")))).plain()  # type: ignore[union-attr]
    assert f"你 {SPENT} / 500 token" in shown


async def test_budgets_survive_a_restart(tmp_path: Path) -> None:
    async with LLMStubServer() as server:
        values = settings(
            tmp_path / "data",
            llm_provider="openai",
            llm_base_url=server.openai_url,
            openai_api_key="sk-test-0000",
            llm_daily_tokens_per_user=300,
        )
        async with App(values, embedder=HashEmbedder(64)) as first:
            (tmp_path / "doc.md").write_text(DOC, encoding="utf-8")
            await Pipeline(first.indexer).ingest_paths([tmp_path / "doc.md"])
            await ask(first, ALICE, server)
        async with App(values, embedder=HashEmbedder(64)) as again:
            assert notice_text(ModelFailed("budget"), "zh") in await ask(again, ALICE, server)
