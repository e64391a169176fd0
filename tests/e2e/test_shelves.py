"""A shelf per chat and a trash, on the real stack (Qdrant Edge, SQLite, the graph, the
ingest pipeline; the router as every transport reaches it):

- group A's upload is answered from in A only: /ask (answers and related reading), /cite
  (notes and passages), /graph, /sources, an /ask source filter's "did you mean" list and
  `baibao search --json --chat` see the shared library plus the chat's own shelf, and no chat
  sees another's;
- `/ingest delete` → `/ingest restore` gives byte-identical /ask replies (text and picture),
  and the restore embeds nothing;
- the trash is listed, purged after TRASH_DAYS (logged), and a purge is the end;
- a shelf's quota and the daily upload limit refuse with a clear message, writing nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
from contextlib import redirect_stdout
from datetime import datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.cli import _search
from bot.registry import Upload
from bot.render.telegram import render
from bot.reply import Reply
from bot.router import Invocation, Line
from retrieval.library import SHARED, TRASH
from retrieval.types import Filter
from tests.reliability.helpers.stack import DIM, open_app, settings
from tests.unit.test_index import CountingEmbedder

TABERNACLE = (Path(__file__).parent.parent / "data" / "message-tabernacle.md").read_bytes()
A_TITLE = "帐幕与召会（甲组）"
NOTE = """# 甲组注解

## 弗2:22

> 你们也靠他同被建造，成为神借着圣灵居住的所在。

注1　甲组独有的注解：同被建造，像帐幕的立板彼此连结，成为神的居所。
"""
A_ADMIN = Actor("telegram", "-1001", "11", "甲管理员", is_admin=True)
A_MEMBER = Actor("telegram", "-1001", "12", "甲成员")
B_MEMBER = Actor("telegram", "-1002", "22", "乙成员")
OPERATOR = Actor("telegram", "900", "900", "运营者", kind="dm")


async def say(app: App, actor: Actor, line: str, upload: Upload | None = None) -> Reply:
    reply = await app.router.answer(Invocation(actor, Line(line), upload=upload))
    assert reply is not None, line
    return reply


def text_of(reply: Reply) -> str:
    return reply.plain() + "\n".join(a.filename for a in reply.attachments)


async def upload_to_a(app: App) -> None:
    added = await say(app, A_ADMIN, f"/ingest {A_TITLE}", Upload.of(TABERNACLE, "帐幕.md"))
    assert f"已导入《{A_TITLE}》" in added.plain(), added.plain()
    noted = await say(
        app, A_ADMIN, "/ingest 甲组注解 | | | footnote", Upload.of(NOTE.encode(), "n.md")
    )
    assert "已导入《甲组注解》" in noted.plain(), noted.plain()


async def search_json(app: App, query: str, chat: str | None) -> str:
    args = argparse.Namespace(query=[query], filter=[], limit=20, json=True, chat=chat)
    out = StringIO()
    with redirect_stdout(out):
        assert await _search(app, args) == 0
    return out.getvalue()


async def test_group_a_upload_is_answered_from_in_a_only(tmp_path: Path) -> None:
    async with open_app(tmp_path / "data", operators="telegram:900") as app:
        await upload_to_a(app)
        shelf_a = "shelf:telegram:-1001"
        assert {d.namespace for d in await app.indexer.documents()} == {SHARED, shelf_a}

        # In A: the shared library and A's shelf.
        asked = text_of(await say(app, A_MEMBER, "/ask 帐幕与召会有什么关系？"))
        assert A_TITLE in asked
        cited = text_of(await say(app, A_MEMBER, "/cite 弗2:22"))
        assert "甲组独有的注解" in cited and A_TITLE in cited
        graph = text_of(await say(app, A_MEMBER, "/graph 帐幕"))
        assert A_TITLE in graph
        listed = text_of(await say(app, A_MEMBER, "/sources"))
        assert "本群书架（2）" in listed and A_TITLE in listed and "神圣的分赐" in listed
        assert A_TITLE in await search_json(app, "帐幕与召会", "telegram:-1001")

        # In B, and with no chat (the CLI): nothing of A's shelf, in any command.
        for line in (
            "/ask 帐幕与召会有什么关系？",
            "/ask 帐幕是什么？",  # addressed or not, its related reading is not A's either
            "/cite 弗2:22",
            "/cite 出25:8",
            "/graph 帐幕",
            "/sources",
            f"/ask 书:{A_TITLE} 帐幕是什么？",  # the "did you mean" names nothing of A's
            "/ask 书:帐幕 帐幕是什么？",
        ):
            seen = text_of(await say(app, B_MEMBER, line))
            seen = seen.replace(line.partition(":")[2].partition(" ")[0] or "\0", "")  # echoed
            for secret in (A_TITLE, "甲组注解", "甲组独有", "支搭帐幕"):
                assert secret not in seen, (line, secret, seen)
        for chat in (None, "telegram:-1002"):
            found = await search_json(app, "帐幕与召会", chat)
            assert A_TITLE not in found and "甲组" not in found, chat
            paths = json.loads(found)["graph_paths"]
            assert not any("concept:帐幕" in p["nodes"] for p in paths)
        assert "帐幕" not in "".join(app.scholar.source_suggestions("帐", shelf=""))


async def test_delete_then_restore_gives_the_same_ask_reply_without_embedding(
    tmp_path: Path,
) -> None:
    embedder = CountingEmbedder(DIM)
    data = tmp_path / "data"
    async with App(settings(data, operators="telegram:900"), embedder=embedder, llm=None) as app:
        await upload_to_a(app)
        from ingest.pipeline import Pipeline
        from tests.reliability.helpers.stack import DOC

        (tmp_path / "d.md").write_text(DOC, encoding="utf-8")
        await Pipeline(app.indexer).ingest_paths([tmp_path / "d.md"])
        questions = ("帐幕与召会有什么关系？", "神圣的分赐是什么？", "新耶路撒冷是什么？")

        async def replies(actor: Actor) -> list[tuple[str, tuple[bytes, ...]]]:
            out = []
            for q in questions:
                reply = await say(app, actor, f"/ask {q}")
                out.append((render(reply), tuple(a.data for a in reply.attachments)))
            return out

        before_a, before_b = await replies(A_MEMBER), await replies(B_MEMBER)
        deleted = await say(app, A_ADMIN, f"/ingest delete {A_TITLE}")
        assert f"已删除《{A_TITLE}》" in deleted.plain() and "/ingest restore" in deleted.plain()
        gone = await say(app, OPERATOR, "/ingest delete 神圣的分赐")
        assert "已删除《神圣的分赐》" in gone.plain()
        assert A_TITLE not in text_of(await say(app, A_MEMBER, "/ask 帐幕与召会有什么关系？"))
        trash = text_of(await say(app, A_ADMIN, "/ingest trash"))
        assert A_TITLE in trash and "神圣的分赐" not in trash  # the shared trash is the operator's
        assert "神圣的分赐" in text_of(await say(app, OPERATOR, "/ingest trash"))

        embedded = embedder.passages
        restored = await say(app, A_ADMIN, f"/ingest restore {A_TITLE}")
        assert f"已恢复《{A_TITLE}》" in restored.plain()
        assert (
            "已恢复《神圣的分赐》"
            in (await say(app, OPERATOR, "/ingest restore 神圣的分赐")).plain()
        )
        assert embedder.passages == embedded  # nothing embedded again
        assert await app.store.count(Filter(equals={"namespace": TRASH})) == 0
        assert await replies(A_MEMBER) == before_a
        assert await replies(B_MEMBER) == before_b


async def test_the_trash_is_purged_after_trash_days_and_the_purge_is_logged(
    tmp_path: Path,
) -> None:
    async with open_app(tmp_path / "data", trash_days=30, operators="telegram:900") as app:
        await upload_to_a(app)
        await say(app, A_ADMIN, f"/ingest delete {A_TITLE}")
        [record] = await app.indexer.trash()
        graph_docs = await app.graph.snapshot()
        soon = datetime.fromisoformat(record.trashed_at) + timedelta(days=29)
        assert await app.purge_trash(now=soon) == []
        later = datetime.fromisoformat(record.trashed_at) + timedelta(days=30, minutes=1)
        [purged] = await app.purge_trash(now=later)
        assert purged.source == A_TITLE
        assert await app.indexer.trash() == []
        assert await app.store.count(Filter(equals={"doc_id": record.doc_id})) == 0
        assert await app.graph.snapshot() != graph_docs  # its graph rows are gone too
        restore = await say(app, A_ADMIN, f"/ingest restore {A_TITLE}")
        assert restore.is_error and "回收站里没有" in restore.plain()
        [entry] = [e for e in await app.changes.entries() if e.what.startswith("purge")]
        assert A_TITLE in entry.what and entry.chat == "telegram:-1001"


async def test_a_full_shelf_and_the_daily_upload_limit_refuse_clearly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    overrides = {"shelf_max_documents": 1, "shelf_max_chunks": 2, "uploads_per_chat_per_day": 2}
    async with open_app(tmp_path / "data", corpus=False, **overrides) as app:
        big = await say(app, A_ADMIN, "/ingest 大书", Upload.of(TABERNACLE, "big.md"))
        assert big.is_error and "本群书架容量不足" in big.plain() and "上限 2" in big.plain()
        assert await app.indexer.documents() == [] and await app.store.count() == 0
        ok = await say(app, A_ADMIN, "/ingest 小书", Upload.of(NOTE.encode(), "small.md"))
        assert "已导入《小书》" in ok.plain(), ok.plain()
        full = await say(
            app, A_ADMIN, "/ingest 另一本", Upload.of(b"# x\n\n" + NOTE.encode(), "c.md")
        )
        assert full.is_error and "本群书架已满（最多 1 份文档）" in full.plain()
        again = await say(app, A_ADMIN, "/ingest 小书", Upload.of(NOTE.encode(), "small.md"))
        assert "已经导入过" in again.plain()  # the second upload of the day
        third = await say(app, A_ADMIN, "/ingest 小书", Upload.of(NOTE.encode(), "small.md"))
        assert third.is_error and "今天已导入 2 个文件（每天上限 2 个）" in third.plain()
        assert [d.source for d in await app.indexer.documents()] == ["小书"]
        lines = [r for r in caplog.records if r.getMessage().startswith("refused /ingest add")]
        assert len(lines) == 3 and not any(r.exc_info for r in lines)  # one line a refusal


async def test_with_dm_uploads_a_dm_has_a_personal_shelf(tmp_path: Path) -> None:
    stranger = Actor("telegram", "9", "9", "陌生人", kind="dm")
    async with open_app(tmp_path / "data", dm_uploads=True) as app:
        added = await say(
            app, stranger, "/ingest 私人笔记 | | | footnote", Upload.of(NOTE.encode(), "n.md")
        )
        assert "已导入《私人笔记》" in added.plain(), added.plain()
        [record] = [d for d in await app.indexer.documents() if d.source == "私人笔记"]
        assert record.namespace == "shelf:telegram:9"
        assert "私人笔记" in text_of(await say(app, stranger, "/sources"))
        assert "私人笔记" not in text_of(await say(app, B_MEMBER, "/sources"))
        assert "甲组独有" in text_of(await say(app, stranger, "/cite 弗2:22"))
        assert "甲组独有" not in text_of(await say(app, B_MEMBER, "/cite 弗2:22"))
        shared = await say(app, stranger, f"/ingest delete {A_TITLE}")  # not theirs to touch
        assert "找不到文档" in shared.plain() or "共享书库只有" in shared.plain()
        gone = await say(app, stranger, "/ingest delete 私人笔记")
        assert "已删除《私人笔记》" in gone.plain()


async def test_an_admin_of_another_group_can_neither_change_nor_read_a_shelf(
    tmp_path: Path,
) -> None:
    """Group B's admin names A's document in every command that changes or lists the library:
    nothing of A's is found, moved or shown, and A still reads its document as before."""
    b_admin = Actor("telegram", "-1002", "21", "乙管理员", is_admin=True)
    async with open_app(tmp_path / "data", operators="telegram:900") as app:
        await upload_to_a(app)
        trashed = await say(app, A_ADMIN, "/ingest delete 甲组注解")  # A's trash holds one
        assert "已删除《甲组注解》" in trashed.plain(), trashed.plain()
        before = text_of(await say(app, A_MEMBER, "/ask 帐幕与召会有什么关系？"))
        for line in (
            f"/ingest delete {A_TITLE}",
            "/ingest restore 甲组注解",
            "/ingest trash",
            "/sources log",
            "/sources",
        ):
            seen = text_of(await say(app, b_admin, line))
            seen = seen.replace(line.partition(" ")[2].partition(" ")[2], "")  # the echoed title
            for secret in (A_TITLE, "甲组注解", "甲管理员"):
                assert secret not in seen, (line, secret, seen)
        live = {d.source: d.namespace for d in await app.indexer.documents()}
        assert live.get(A_TITLE) == "shelf:telegram:-1001"
        assert [d.source for d in await app.indexer.trash()] == ["甲组注解"]
        assert "甲组注解" in text_of(await say(app, A_ADMIN, "/ingest trash"))
        assert text_of(await say(app, A_MEMBER, "/ask 帐幕与召会有什么关系？")) == before
