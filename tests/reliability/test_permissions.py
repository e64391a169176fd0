"""Permissions and isolation through the router on the real stack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.actor import Actor
from bot.registry import Upload
from bot.router import Invocation, Line
from novel.blueprint import default_blueprint
from retrieval.llm.base import RetryPolicy
from retrieval.llm.openai import OpenAICompatLLM
from tests.reliability.helpers.stack import open_app
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion, openai_stream

ADMIN = Actor("telegram", "g1", "admin", "管理员", is_admin=True)
MEMBER = Actor("telegram", "g1", "u1", "成员")
OTHER_GUILD = Actor("telegram", "g2", "admin2", "另一群管理员", is_admin=True)

CHAPTER = "\n\n".join(["林远撑船离开青岚渡口，苏晴在船头举着灯笼，江水拍打着船舷。" * 3] * 4)


def writer(body: Any) -> Scripted:
    """The loopback model: a summary (JSON) for the summary prompt, else the chapter."""
    system = next((str(m["content"]) for m in body["messages"] if m["role"] == "system"), "")
    text = CHAPTER
    if "摘要" in system or "JSON" in system:
        text = json.dumps({"title": "夜渡", "summary": "夜里渡河。", "characters": ["林远"]})
    return (
        Scripted.sse(openai_stream(text, piece=40))
        if body.get("stream")
        else Scripted.json(openai_completion(text))
    )


@pytest.fixture
def model(llm_wire: LLMStubServer) -> OpenAICompatLLM:
    """The real OpenAI adapter against the loopback model (the app closes it)."""
    llm_wire.openai_responder = writer
    return OpenAICompatLLM(
        "sk-test", base_url=llm_wire.openai_url, policy=RetryPolicy(max_retries=0, timeout_s=60)
    )


@pytest.mark.parametrize(
    ("line", "attachment"),
    [
        ("/chapter next", None),
        ("/chapter close", None),
        ("/chapter revise 1 写得更紧张", None),
        ("/chapter revise 1", "另一个版本的正文。".encode()),
        ("/chapter rollback 1 1", None),
        ("/chapter delete 1 confirm", None),
        ("/novel blueprint set", default_blueprint().to_json().encode()),
        ("/novel blueprint edit title 新书名", None),
    ],
)
async def test_non_admin_is_refused_every_time(
    tmp_path: Path, line: str, attachment: bytes | None, model: OpenAICompatLLM
) -> None:
    async with open_app(tmp_path / "data", model) as app:
        for step in ("/chapter next", "/chapter propose 夜渡 | 渡河", "/chapter close"):
            assert not (await app.router.answer(Invocation(ADMIN, Line(step)))).is_error  # type: ignore[union-attr]
        done = await app.router.answer(Invocation(ADMIN, Line("/chapter close")))
        assert done is not None and not done.is_error, done.plain() if done else ""
        assert not (
            await app.router.answer(Invocation(ADMIN, Line("/chapter revise 1 改")))
        ).is_error  # type: ignore[union-attr]
        repo = app.novels.service.repo
        before = (await repo.world.blueprint_json("g1"), await repo.book.current_map("g1"))
        for _ in range(2):  # checked on every call, not once
            # named as a real upload is (a chapter's text is a .txt file)
            name = "第1章.txt" if line.startswith("/chapter") else "upload"
            upload = None if attachment is None else Upload.of(attachment, name)
            reply = await app.router.answer(Invocation(MEMBER, Line(line), upload=upload))
            assert reply is not None and reply.is_error
            assert "只有管理员可以" in reply.plain()
        assert (await repo.world.blueprint_json("g1"), await repo.book.current_map("g1")) == before
        assert await repo.rounds.open_round("g1") is None


async def test_one_servers_novel_is_never_retrieved_in_another(
    tmp_path: Path, model: OpenAICompatLLM
) -> None:
    """Also: tests/unit/test_novel_memory.py::test_isolation_between_chats (memory level)."""
    async with open_app(tmp_path / "data", model) as app:
        for step in ("/chapter next", "/chapter propose 夜渡", "/chapter close", "/chapter close"):
            assert not (await app.router.answer(Invocation(ADMIN, Line(step)))).is_error  # type: ignore[union-attr]
        memory = app.novels.service.memory
        assert await memory.search("g1", "林远 渡口 灯笼")
        assert await memory.search("g2", "林远 渡口 灯笼") == []
        other = await app.router.answer(Invocation(OTHER_GUILD, Line("/chapter show 1")))
        assert other is not None and "青岚渡口" not in other.plain()
        found = await app.search.search("林远 青岚渡口 灯笼", limit=20)  # what /ask retrieves
        assert found.hits and all("青岚渡口" not in h.chunk.text for h in found.hits)


async def test_ingest_in_chat_is_for_admins_and_reads_only_the_upload(tmp_path: Path) -> None:
    async with open_app(tmp_path / "data", corpus=False) as app:
        for line in ("/ingest delete 神圣的分赐", "/ingest 书名"):
            refused = await app.router.answer(
                Invocation(MEMBER, Line(line), upload=Upload.of(b"# x", "a.md"))
            )
            assert refused is not None and refused.is_error
            assert "只有管理员可以" in refused.plain()
        # A path in the arguments is only a title: nothing on the server is read.
        reply = await app.router.answer(
            Invocation(ADMIN, Line("/ingest /etc/passwd"), upload=Upload.of(b"x"))
        )
        assert reply is not None and reply.is_error
        assert "That kind of file is not supported" in reply.plain()  # Latin words: English
        assert await app.indexer.documents() == []
