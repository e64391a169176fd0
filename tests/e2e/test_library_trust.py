"""The trust scenario of issue 39, as a stranger would try it, on both platforms and over the
real stack (the bundled sample corpus in Qdrant Edge + SQLite):

- Discord through SimCord (`DiscordTransport`'s own client): a user who shares no server with
  the bot DMs `/ingest delete 神的经纶与神人的调和` (as a slash command and as typed text) and
  `/ingest add` a file; a server admin tries the delete in the server. Every attempt is
  refused, saying who may; the book stays, and a server's /ask still cites it.
- Telegram through the loopback Bot API: the same from a private chat and from a group's
  administrator; nothing is downloaded for a refused upload.
- An operator (OPERATORS) may, from a DM: the delete goes to the trash, the restore brings it
  back. The change log holds one entry per change, and each refusal is one log line.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.app import App
from bot.permissions import Roles
from tests.discord_sim import answer_text, app_settings, discord_app
from tests.e2e.test_full_stack import data_dir, prepared
from tests.reliability.helpers.stack import DOC
from tests.stubs.fixtures import telegram_transport
from tests.stubs.telegram_server import Call, TelegramServer

__all__ = ["data_dir", "prepared"]  # fixtures used here

BOOK = "神的经纶与神人的调和"
TABERNACLE = (Path(__file__).parent.parent / "data" / "message-tabernacle.md").read_bytes()
A_TITLE = "帐幕与召会（甲组）"
WHO_MAY = "共享书库只有机器人的运营者"
GROUP, ADMIN, STRANGER, OPERATOR = -100, 7, 555, 900
MARKERS = ("<b>百宝箱 · 可用命令", "<b>Baibao · commands")


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("refused ")]


async def still_there(app: App) -> None:
    assert BOOK in {d.source for d in await app.indexer.documents()}
    assert await app.indexer.trash() == []


# ---- Discord ------------------------------------------------------------------------------


async def test_discord_a_strangers_dm_and_a_server_admin_cannot_change_the_shared_library(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with discord_app(app_settings(data_dir)) as (app, server):
        stranger = server.env.create_user("stranger")  # shares no server with the bot
        deleting = await stranger.slash("ingest delete", source=BOOK)
        assert WHO_MAY in answer_text(deleting) and deleting.ephemeral
        await stranger.send_dm(f"/ingest delete {BOOK}")
        typed = [m.content for m in stranger.dm_channel.history() if m.author.bot]
        assert len(typed) == 1 and WHO_MAY in typed[0]
        adding = await stranger.slash("ingest add", file=("a.md", DOC.encode()), title="陌生人的书")
        assert WHO_MAY in answer_text(adding)
        admin = server.member("admin", server.mods)
        in_server = await admin.slash(server.channel, "ingest delete", source=BOOK)
        assert WHO_MAY in answer_text(in_server) and in_server.ephemeral
        await still_there(app)
        assert "陌生人的书" not in {d.source for d in await app.indexer.documents()}
        asked = await server.member("reader").slash(
            server.channel, "ask", question="神的经纶是什么？"
        )
        assert f"【{BOOK}" in answer_text(asked)
        assert len(refusals(caplog)) == 4 and not any(r.exc_info for r in refusals(caplog))
        assert await app.changes.entries() == []

        # An operator may, from a DM: to the trash and back.
        operator = server.env.create_user("operator")
        roles = Roles(frozenset({f"discord:{operator.id}"}), app.router.permissions.roles.policy)
        app.router.permissions = dataclasses.replace(app.router.permissions, roles=roles)
        deleted = await operator.slash("ingest delete", source=BOOK)
        assert f"已删除《{BOOK}》" in answer_text(deleted)
        assert BOOK not in {d.source for d in await app.indexer.documents()}
        restored = await operator.slash("ingest restore", source=BOOK)
        assert f"已恢复《{BOOK}》" in answer_text(restored)
        await still_there(app)
        log = await app.changes.entries()
        assert [e.what for e in reversed(log)] == [
            f"/ingest delete {BOOK}",
            f"/ingest restore {BOOK}",
        ]
        assert all(e.user_id == str(operator.id) and e.platform == "discord" for e in log)


async def test_discord_a_servers_upload_is_answered_from_in_that_server_only(
    data_dir: Path,
) -> None:
    async with discord_app(app_settings(data_dir)) as (_, server):
        admin = server.member("admin", server.mods)
        added = await admin.slash(
            server.channel, "ingest add", file=("t.md", TABERNACLE), title=A_TITLE
        )
        await server.env.advance_time(1)  # the streamed progress's throttled final edit
        assert f"已导入《{A_TITLE}》" in answer_text(added)
        other = server.env.create_guild("乙组")
        channel = other.create_text_channel("读经")
        reader = other.add_member(server.env.create_user("reader"))
        for name, options in (
            ("ask", {"question": "帐幕与召会有什么关系？"}),
            ("sources", {}),
            ("cite", {"reference": "弗2:22"}),
            ("graph", {"concept": "帐幕"}),
        ):
            elsewhere = answer_text(await reader.slash(channel, name, **options))
            assert A_TITLE not in elsewhere, (name, elsewhere)
            here = answer_text(await server.member("m").slash(server.channel, name, **options))
            if name in ("ask", "sources", "cite"):
                assert A_TITLE in here, (name, here)


# ---- Telegram -----------------------------------------------------------------------------


@dataclass
class Telegram:
    app: App
    server: TelegramServer

    async def say(self, text: str, chat_id: int, user_id: int) -> str:
        """Send `text`; what the bot said to it last (sent or edited)."""
        self.server.push_message(text, chat_id=chat_id, user_id=user_id)
        return await self._settled(chat_id, user_id)

    async def upload(self, caption: str, chat_id: int, user_id: int) -> str:
        self.server.push_document(
            caption, DOC.encode(), file_name="a.md", chat_id=chat_id, user_id=user_id
        )
        return await self._settled(chat_id, user_id)

    async def _settled(self, chat_id: int, user_id: int) -> str:
        """Updates are handled one at a time: once a /help sent after them is answered, theirs
        are too."""

        def marker(call: Call) -> bool:
            return str(call.params["text"]).startswith(MARKERS)

        before = len([c for c in self.server.named("sendMessage") if marker(c)])
        self.server.push_message("/help@baibao_bot", chat_id=chat_id, user_id=user_id)
        await self.server.wait_for("sendMessage", before + 1, where=marker)
        said = [
            str(c.params.get("text", ""))
            for c in self.server.calls
            if c.status == 200
            and c.method in ("sendMessage", "editMessageText")
            and str(c.params.get("chat_id")) == str(chat_id)
        ]
        return [t for t in said if not t.startswith(MARKERS)][-1]


@pytest.fixture
async def telegram(data_dir: Path, telegram_wire: TelegramServer) -> AsyncIterator[Telegram]:
    settings = app_settings(data_dir, discord_token=None, operators=f"telegram:{OPERATOR}")
    from retrieval.fakes import HashEmbedder
    from tests.discord_sim import DIM

    async with App(settings, embedder=HashEmbedder(DIM), llm=None) as app:
        telegram_wire.member_status[(GROUP, ADMIN)] = "administrator"
        transport = telegram_transport(app.router, telegram_wire)
        async with transport:
            yield Telegram(app, telegram_wire)


async def test_telegram_a_strangers_dm_and_a_group_admin_cannot_change_the_shared_library(
    telegram: Telegram, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    t = telegram
    assert WHO_MAY in await t.say(f"/ingest delete {BOOK}", STRANGER, STRANGER)
    assert WHO_MAY in await t.upload("/ingest 陌生人的书", STRANGER, STRANGER)
    assert WHO_MAY in await t.say(f"/ingest delete {BOOK}", GROUP, ADMIN)
    assert t.server.named("getFile") == []  # the refused file was never downloaded
    await still_there(t.app)
    assert f"【{BOOK}" in await t.say("/ask 神的经纶是什么？", GROUP, STRANGER)
    assert len(refusals(caplog)) == 3 and not any(r.exc_info for r in refusals(caplog))

    deleted = await t.say(f"/ingest delete {BOOK}", OPERATOR, OPERATOR)
    assert f"已删除《{BOOK}》" in deleted
    assert f"已恢复《{BOOK}》" in await t.say(f"/ingest restore {BOOK}", OPERATOR, OPERATOR)
    await still_there(t.app)
    log = await t.app.changes.entries()
    assert [(e.what, e.chat, e.user_id) for e in reversed(log)] == [
        (f"/ingest delete {BOOK}", f"telegram:{OPERATOR}", str(OPERATOR)),
        (f"/ingest restore {BOOK}", f"telegram:{OPERATOR}", str(OPERATOR)),
    ]
    shown = await t.say("/sources log", OPERATOR, OPERATOR)
    assert f"/ingest delete {BOOK}" in shown and f"telegram:{OPERATOR}" in shown
    assert "还没有任何修改记录" in await t.say("/sources log", GROUP, ADMIN)  # only the group's
    refused_log = await t.say("/sources log", STRANGER, STRANGER)  # a DM's own log: empty
    assert "还没有任何修改记录" in refused_log


async def test_telegram_a_groups_upload_is_answered_from_in_that_group_only(
    telegram: Telegram,
) -> None:
    t, other = telegram, GROUP - 1
    t.server.push_document(
        f"/ingest {A_TITLE}", TABERNACLE, file_name="t.md", chat_id=GROUP, user_id=ADMIN
    )
    assert f"已导入《{A_TITLE}》" in await t._settled(GROUP, ADMIN)
    for line in ("/ask 帐幕与召会有什么关系？", "/sources", "/cite 弗2:22", "/graph 帐幕"):
        assert A_TITLE not in await t.say(line, other, STRANGER), line
    for line in ("/ask 帐幕与召会有什么关系？", "/sources", "/cite 弗2:22"):
        assert A_TITLE in await t.say(line, GROUP, STRANGER), line
