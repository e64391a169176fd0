"""`/novel characters`, `/novel recap [N]` and `/novel map` end to end on the three transports,
over the whole product (`App`: SQLite, Qdrant Edge, plot memory; the story state replayed from
the stored chapters): the console (the map as a file), Telegram (python-telegram-bot's
HTTPXRequest against the loopback Bot API, the map as a photo; the recap written by the model
through the real OpenAI SDK against the loopback model server) and Discord (`DiscordTransport`'s
own client in SimCord, the map as a file). Malformed counts get a clear message everywhere."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.transports.console import ConsoleTransport
from retrieval.fakes import HashEmbedder
from tests.discord_sim import answer_text, discord_app
from tests.reliability.helpers.stack import DIM, open_app, settings
from tests.story_seed import seed
from tests.stubs.fixtures import llm_settings, telegram_transport
from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion
from tests.stubs.telegram_server import TelegramServer

PNG = b"\x89PNG\r\n\x1a\n"
GROUP, MEMBER = -100, 8


async def test_console_characters_recap_map_and_malformed_counts(tmp_path: Path) -> None:
    async with open_app(tmp_path / "data", corpus=False) as app:
        files = tmp_path / "files"
        console = ConsoleTransport(
            app.router, stdin=io.StringIO(), stdout=io.StringIO(), files=files
        )
        assert "还没有任何章节" in await console.handle_line("/novel recap")
        await seed(app.novels.service.repo, app.novels.service.memory, "console")

        cast = await console.handle_line("/novel characters")
        assert "《青岚渡》人物（截至第 3 章）" in cast
        assert "林远（又名：阿远） — 渡口船家之子" in cast
        assert "状态：受伤（第 2 章）「霍三的人追上来，一刀砍在林远的左臂上。」" in cast
        assert "状态：已死亡（第 3 章）「钱七死了。」" in cast
        assert "最后出现：听潮阁（第 3 章）「沈默站在听潮阁门口，望着江面。」" in cast
        assert "第 1 章出场，不在世界设定中" in cast

        recap = await console.handle_line("/novel recap")
        assert "前情提要：第 1–3 章" in recap and "第 3 章《听潮》" in recap
        assert "摘自各章摘要" in recap
        assert "前情提要：第 2–3 章" in await console.handle_line("/novel recap 2")
        assert "前情提要：第 3 章" in await console.handle_line("/novel recap １")  # full-width

        for bad, said in (
            ("0", "「章数」应为正整数，收到：0"),
            ("-2", "「章数」应为正整数，收到：-2"),
            ("三章", "「章数」应为正整数，收到：三章"),
            ("11", "一次最多回顾 10 章，收到：11"),
            ("99999999999", "「章数」应为正整数"),
        ):
            answer = await console.handle_line(f"/novel recap {bad}")
            assert said in answer and "/novel recap 5" in answer, (bad, answer)

        drawn = await console.handle_line("/novel map")
        assert "《青岚渡》人物关系图（截至第 3 章，5 人）" in drawn
        assert "林远：受伤" in drawn and "钱七：已死亡" in drawn
        assert "林远 — 苏晴：同伴 · 同场 3 章" in drawn and "沈默 — 霍三：旧怨" in drawn
        [picture] = list(files.glob("cast-map-*.png"))
        assert str(picture) in drawn and picture.read_bytes().startswith(PNG)

        helped = await console.handle_line("/help")
        assert "/novel recap" in helped and "/novel characters" in helped
        assert "/novel map" in helped

        english = ConsoleTransport(
            app.router, stdin=io.StringIO(), stdout=io.StringIO(), lang="en", files=files
        )
        await english.handle_line("/settings language en")  # the chat reads English now
        said = await english.handle_line("/novel recap 5")
        assert "Previously: chapters 1–3" in said and "only 3 chapter(s)" in said
        assert "Status: dead (chapter 3)" in await english.handle_line("/novel characters")
        assert "A recap covers at most 10 chapters" in await english.handle_line("/novel recap 12")


# ---- Telegram --------------------------------------------------------------------------------


@pytest.fixture
async def llm_wire() -> AsyncIterator[LLMStubServer]:
    async with LLMStubServer() as server:
        yield server


@pytest.fixture
async def telegram_app(
    tmp_path: Path, telegram_wire: TelegramServer, llm_wire: LLMStubServer
) -> AsyncIterator[App]:
    app = App(
        settings(
            tmp_path / "data",
            telegram_token=telegram_wire.token,
            telegram_api_base=telegram_wire.api_base,
            llm_max_retries=0,
            **llm_settings(llm_wire, "openai"),
        ),
        embedder=HashEmbedder(DIM),
    )
    await app.__aenter__()
    transport = telegram_transport(app.router, telegram_wire)
    await transport.start()
    try:
        yield app
    finally:
        await transport.stop()
        await app.__aexit__(None, None, None)


def _recap_answer() -> Scripted:
    lines = {
        "chapters": [
            {"number": 2, "lines": ["林远和苏晴上了江心岛，林远被霍三的人砍伤了左臂。"]},
            {"number": 3, "lines": ["钱七死了。王大锤闯进听潮阁。"]},
        ]
    }
    return Scripted.json(openai_completion(json.dumps(lines, ensure_ascii=False)))


async def test_telegram_characters_recap_by_the_model_and_the_map_as_a_photo(
    telegram_app: App, telegram_wire: TelegramServer, llm_wire: LLMStubServer
) -> None:
    s = telegram_wire
    await seed(telegram_app.novels.service.repo, telegram_app.novels.service.memory, str(GROUP))
    llm_wire.openai.append(_recap_answer())
    for command in (
        "/novel characters",
        "/novel recap 2",
        "/novel map",
        "/novel recap 0",
        "/novel recap 50",
    ):
        s.push_message(command, chat_id=GROUP, user_id=MEMBER)
    [photo] = await s.wait_for("sendPhoto")
    await s.wait_until(lambda: "一次最多回顾 10 章，收到：50" in s.texts())
    said = s.texts()
    assert "状态：已死亡（第 3 章）「钱七死了。」" in said
    assert "最后出现：听潮阁（第 3 章）" in said
    # the model's lines for chapter 2; chapter 3 named a stranger: its summary instead
    assert "林远和苏晴上了江心岛，林远被霍三的人砍伤了左臂。" in said
    assert "王大锤闯进听潮阁" not in said
    assert "第 3 章：模型写到了故事中没有的人物（王大锤），这一章改用摘要原文。" in said
    assert "「章数」应为正整数，收到：0" in said
    assert photo.files["photo"].startswith(PNG)
    assert "林远：受伤" in said and "林远 — 苏晴：同伴 · 同场 3 章" in said
    [asked] = [r for r in llm_wire.received if "前情提要" in json.dumps(r.body, ensure_ascii=False)]
    assert "第3章《听潮》" in json.dumps(asked.body, ensure_ascii=False)


# ---- Discord (SimCord) -----------------------------------------------------------------------


async def test_discord_characters_recap_map_and_a_count_too_big(tmp_path: Path) -> None:
    app_settings = settings(tmp_path / "data", discord_token="simcord")
    async with discord_app(app_settings) as (app, server):
        await seed(app.novels.service.repo, app.novels.service.memory, str(server.guild.id))
        member = server.member("alice")
        cast = answer_text(await member.slash(server.channel, "novel characters"))
        assert "状态：受伤（第 2 章）「霍三的人追上来，一刀砍在林远的左臂上。」" in cast
        assert "状态：已死亡（第 3 章）「钱七死了。」" in cast
        recap = answer_text(await member.slash(server.channel, "novel recap", count=2))
        assert "前情提要：第 2–3 章" in recap and "摘自各章摘要" in recap
        too_many = await member.slash(server.channel, "novel recap", count=11)
        assert "一次最多回顾 10 章，收到：11" in answer_text(too_many)
        drawn = await member.slash(server.channel, "novel map")
        messages = [m for m in [drawn.response, *drawn.followups] if m is not None]
        files = {a.filename: await a.read() for m in messages for a in m.attachments}
        assert files["cast-map.png"].startswith(PNG)
        assert "林远：受伤" in answer_text(drawn)
