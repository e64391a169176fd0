"""Faults end to end through `App` and the router: model provider timeouts / 429 / 5xx (the
OpenAI SDK against the loopback stub), the embedding provider down during ingest, an
unreachable Qdrant server, SQLite busy."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.presenters.answer import notice_text
from bot.router import Invocation, Line
from ingest.pipeline import Pipeline
from retrieval.answer import ModelFailed
from retrieval.fakes import HashEmbedder
from retrieval.types import Filter
from tests.reliability.helpers.stack import DOC, open_app, settings
from tests.stubs.embeddings_server import EmbeddingsServer
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion, openai_error

USER = Actor("telegram", "g1", "u1", "用户")
ADMIN = Actor("telegram", "g1", "admin", "管理员", is_admin=True)


async def _app_with_model(tmp: Path, server: LLMStubServer, **kw: object) -> App:
    app = App(
        settings(
            tmp / "data",
            llm_provider="openai",
            llm_base_url=server.openai_url,
            openai_api_key="sk-test-0000",
            llm_model="stub-model",
            **kw,
        ),
        embedder=HashEmbedder(64),
    )
    await app.__aenter__()
    (tmp / "doc.md").write_text(DOC, encoding="utf-8")
    await Pipeline(app.indexer).ingest_paths([tmp / "doc.md"])
    return app


async def test_model_429_then_success_is_retried(tmp_path: Path) -> None:
    async with LLMStubServer() as server:
        app = await _app_with_model(tmp_path, server, llm_max_retries=2)
        try:
            server.openai.append(Scripted.error(429, openai_error(), retry_after=0))
            server.openai.append(
                Scripted.json(openai_completion("神圣的分赐使召会成为基督的身体。[1]"))
            )
            reply = await app.router.answer(Invocation(USER, Line("/ask 什么是神圣的分赐？")))
            assert reply is not None and not reply.is_error
            assert "神圣的分赐使召会成为基督的身体" in reply.plain()
            assert len(server.requests_to("/v1/chat/completions")) == 2
        finally:
            await app.__aexit__(None, None, None)


@pytest.mark.parametrize("kind", ["unavailable", "rate_limited", "timeout"])
async def test_model_failure_gives_a_clear_answer_in_the_users_language(
    tmp_path: Path, kind: str
) -> None:
    late = asyncio.Event()  # the timed-out answers come only after the reply: never too early
    scripts = {
        "unavailable": [Scripted.error(503, openai_error("server_error", "down"))] * 3,
        "rate_limited": [Scripted.error(429, openai_error(), retry_after=0)] * 3,
        "timeout": [Scripted.held(openai_completion("迟到的回答"), late)] * 3,
    }[kind]
    # Only the timeout case needs a short timeout (its answers are held until after the
    # reply); the others get one no busy machine runs out of.
    timeout_s = 0.4 if kind == "timeout" else 60.0
    async with LLMStubServer() as server:
        app = await _app_with_model(tmp_path, server, llm_max_retries=2, llm_timeout_s=timeout_s)
        try:
            server.openai.extend(scripts)
            zh = await app.router.answer(Invocation(USER, Line("/ask 什么是神圣的分赐？")))
            late.set()
            assert zh is not None and notice_text(ModelFailed(kind), "zh") in zh.plain()
            assert "迟到的回答" not in zh.plain()
            assert len(server.requests_to("/v1/chat/completions")) == 3  # 1 + 2 retries
            late.clear()
            server.openai.extend(scripts)
            en = await app.router.answer(
                Invocation(USER, Line("/ask What is the divine dispensing?"))
            )
            late.set()
            assert en is not None and notice_text(ModelFailed(kind), "en") in en.plain()
        finally:
            await app.__aexit__(None, None, None)


async def test_model_failure_while_writing_saves_no_chapter(tmp_path: Path) -> None:
    """End to end through the router (tests/unit/test_novel_service.py::
    test_generation_failure_saves_nothing_and_retries covers the service with ScriptedLLM).
    The failures are 500s, not timeouts: the timeout is a hang guard no busy machine hits."""
    async with LLMStubServer() as server:
        app = await _app_with_model(tmp_path, server, llm_max_retries=1, llm_timeout_s=60.0)
        try:
            for line in ("/chapter next", "/chapter propose 夜渡 | 林远夜里渡河", "/chapter close"):
                reply = await app.router.answer(Invocation(ADMIN, Line(line)))
                assert reply is not None and not reply.is_error, reply.plain() if reply else line
            server.openai.extend([Scripted.error(500, openai_error("server_error", "boom"))] * 2)
            failed = await app.router.answer(Invocation(ADMIN, Line("/chapter close")))
            assert failed is not None and failed.is_error
            assert "没有保存任何内容" in failed.plain()
            novels = app.novels
            assert await novels.service.repo.book.chapters("g1") == []
            assert await app.store.count(Filter(equals={"namespace": "novel:g1"})) == 0
        finally:
            await app.__aexit__(None, None, None)


async def test_embedding_provider_down_during_ingest_is_resumable(tmp_path: Path) -> None:
    async with EmbeddingsServer(fail_next=[500] * 8) as emb:
        s = settings(
            tmp_path / "data",
            embedding_provider="openai",
            embedding_base_url=emb.base_url,
            embedding_api_key="emb-key-1234",
            embedding_model="stub-embed",
            embedding_dimensions=64,
        )
        (tmp_path / "doc.md").write_text(DOC, encoding="utf-8")
        async with App(s, llm=None) as app:
            first = await Pipeline(app.indexer).ingest_paths([tmp_path / "doc.md"])
            assert first.documents == 0 and len(first.skipped) == 1
            reason = first.skipped[0][1]
            assert "索引失败" in reason and "emb-key-1234" not in reason
            assert await app.indexer.documents() == []
            assert await app.store.count(Filter(equals={"namespace": "corpus"})) == 0
            emb.fail_next.clear()  # the provider is back
            second = await Pipeline(app.indexer).ingest_paths([tmp_path / "doc.md"])
            assert second.documents == 1, second.skipped
            docs = await app.indexer.documents()
            n = await app.store.count(Filter(equals={"namespace": "corpus"}))
            assert len(docs) == 1 and n == docs[0].chunk_count > 0
            reply = await app.router.answer(Invocation(USER, Line("/ask 神圣的分赐")))
            assert reply is not None and "召会" in reply.plain()


async def test_qdrant_server_unreachable_is_a_clear_message(tmp_path: Path) -> None:
    from retrieval.store import StoreUnavailable

    with socketless_port() as port:
        s = settings(
            tmp_path / "data", qdrant_url=f"http://127.0.0.1:{port}", qdrant_api_key="qk-secret"
        )
        with pytest.raises(StoreUnavailable) as info:
            async with App(s, llm=None):
                pass
    message = str(info.value)
    assert "unreachable" in message and "qk-secret" not in message


async def test_store_failing_after_start_gives_a_reply_not_a_crash(tmp_path: Path) -> None:
    """The store goes away while the bot runs (a closed store raises StoreUnavailable, the
    same error a lost Qdrant server raises): /ask answers with the error reply and a ref."""
    async with open_app(tmp_path / "data") as app:
        await app.store.close()
        reply = await app.router.answer(Invocation(USER, Line("/ask 什么是神圣的分赐？")))
        assert reply is not None and reply.is_error
        assert "错误编号" in reply.plain()


async def test_sqlite_busy_is_waited_out(tmp_path: Path) -> None:
    """Another connection holds the write lock: busy_timeout (5 s) waits it out. The lock is
    released once the command's own write has started (and so must wait for it), not after
    a guessed delay."""
    async with open_app(tmp_path / "data", corpus=False) as app:
        other = sqlite3.connect(app.db_path, timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("CREATE TABLE IF NOT EXISTS holder (x)")
        loop = asyncio.get_running_loop()
        writing = asyncio.Event()

        def traced(sql: str) -> None:  # runs in aiosqlite's thread as a statement starts
            if sql.lstrip().upper().startswith(("BEGIN", "INSERT", "UPDATE")):
                loop.call_soon_threadsafe(writing.set)

        # The novel store's connection (aiosqlite's own trace hook, no project code replaced).
        await app.novels.service.repo._db.set_trace_callback(traced)  # type: ignore[attr-defined]
        ask = asyncio.create_task(app.router.answer(Invocation(ADMIN, Line("/chapter next"))))
        async with asyncio.timeout(60):  # a hang guard, not a time limit
            await writing.wait()  # the write began while the lock is held: it has to wait
        assert not ask.done()
        other.execute("COMMIT")
        reply = await ask
        other.close()
        assert reply is not None and not reply.is_error, reply.plain() if reply else ""


class socketless_port:
    """A loopback port with nothing listening (bound, then closed)."""

    def __enter__(self) -> int:
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = int(sock.getsockname()[1])
        sock.close()
        return self.port

    def __exit__(self, *exc: object) -> None:
        return None
