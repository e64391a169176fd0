"""The change log has one entry per change, on the real stack (through the router as every
transport reaches it): library add, delete, restore; blueprint edit, accept; chapter submit,
revise, rollback, delete; settings. What is not a change (a proposal, a vote, a listing), a
refused attempt and a usage error leave none. `/sources log` shows a chat admin their chat's
entries and an operator every entry; `baibao log` prints them."""

from __future__ import annotations

import argparse
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from bot.actor import Actor
from bot.app import App
from bot.cli import _log
from bot.registry import Upload
from bot.reply import Reply
from bot.router import Invocation, Line
from tests.reliability.helpers.stack import DOC, open_app

ADMIN = Actor("telegram", "-1001", "11", "甲管理员", is_admin=True)
MEMBER = Actor("telegram", "-1001", "12", "甲成员")
OTHER = Actor("telegram", "-1002", "21", "乙管理员", is_admin=True)
OPERATOR = Actor("telegram", "900", "900", "运营者", kind="dm")
CHAPTER = "林远撑船离开青岚渡口，苏晴在船头举着灯笼。" * 8


async def say(app: App, actor: Actor, line: str, upload: Upload | None = None) -> Reply:
    reply = await app.router.answer(Invocation(actor, Line(line), upload=upload))
    assert reply is not None, line
    return reply


async def test_one_entry_per_change_and_none_for_anything_else(tmp_path: Path) -> None:
    async with open_app(tmp_path / "data", corpus=False, operators="telegram:900") as app:
        changes = [
            (ADMIN, "/settings language en", None),
            (ADMIN, "/settings language zh", None),
            (ADMIN, "/settings script 繁体", None),
            (ADMIN, "/ingest 甲组之书", Upload.of(DOC.encode(), "a.md")),
            (ADMIN, "/ingest delete 甲组之书", None),
            (ADMIN, "/ingest restore 甲组之书", None),
            (ADMIN, "/novel blueprint edit title 夜渡江湖", None),
        ]
        round_steps = [
            (ADMIN, "/chapter next"),
            (MEMBER, "/chapter propose 夜渡 | 林远夜里渡河"),
            (ADMIN, "/chapter close"),
            (MEMBER, "/chapter vote 1"),
            (ADMIN, "/chapter close"),
        ]
        chapter_changes = [
            (MEMBER, f"/chapter submit {CHAPTER}", None),
            (ADMIN, "/chapter revise 1", Upload.of((CHAPTER + "又一版。").encode(), "r.txt")),
            (ADMIN, "/chapter rollback 1 1", None),
            (ADMIN, "/chapter delete", None),
        ]
        not_changes = [
            (MEMBER, "/ingest delete 甲组之书"),  # refused
            (MEMBER, "/settings language en"),  # refused
            (ADMIN, "/settings language fr"),  # a usage error
            (ADMIN, "/ingest delete 没有这本书"),  # nothing to delete
            (MEMBER, "/sources"),
            (ADMIN, "/chapter show 1"),
        ]
        for actor, line, upload in changes:
            assert not (await say(app, actor, line, upload)).is_error, line
        for actor, line in round_steps:
            assert not (await say(app, actor, line)).is_error, line
        for actor, line, upload in chapter_changes:
            reply = await say(app, actor, line, upload)
            assert not reply.is_error, (line, reply.plain())
        for actor, line in not_changes:
            await say(app, actor, line)
        await say(app, OTHER, "/settings language en")  # another chat's change

        entries = list(reversed(await app.changes.entries(limit=100)))
        ours = [e for e in entries if e.chat == "telegram:-1001"]
        # each command as given, in its canonical form
        assert [e.what for e in ours] == [
            "/settings language en",
            "/settings language zh",
            "/settings script 繁体",
            "/ingest add 甲组之书 a.md",
            "/ingest delete 甲组之书",
            "/ingest restore 甲组之书",
            "/novel blueprint edit title 夜渡江湖",
            f"/chapter submit {CHAPTER}"[:300],
            "/chapter revise 1 r.txt",
            "/chapter rollback 1 1",
            "/chapter delete",
        ]
        assert ours[3].what.endswith("a.md") and "已导入《甲组之书》" in ours[3].outcome
        assert ours[0].user_id == "11" and ours[0].user_name == "甲管理员"
        assert ours[0].platform == "telegram" and ours[0].at.startswith("20")
        assert [e.chat for e in entries] == ["telegram:-1001"] * len(ours) + ["telegram:-1002"]

        # A chat admin reads their chat's log; an operator every chat's; a member none.
        mine = (await say(app, ADMIN, "/sources log")).plain()
        assert "/chapter delete" in mine and "telegram:-1002" not in mine
        assert "telegram:-1002" in (await say(app, OPERATOR, "/sources log")).plain()
        assert (await say(app, MEMBER, "/sources log")).is_error
        out = StringIO()
        with redirect_stdout(out):
            assert await _log(app, argparse.Namespace(chat="telegram:-1002", limit=10)) == 0
        assert out.getvalue().count("\n") == 1 and "/settings language en" in out.getvalue()
