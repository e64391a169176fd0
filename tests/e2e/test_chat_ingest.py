"""Corpus management in chat, on the real stack (Qdrant Edge + SQLite + the ingest pipeline)
behind the Telegram and Discord transports (Discord in SimCord): upload with /ingest, progress, summary, /sources,
/ingest delete; and every refusal leaves nothing behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.app import App
from bot.registry import Upload
from bot.router import Invocation, Line
from bot.settings import load_settings
from bot.transports.telegram import TelegramTransport
from ingest.uploads import safe_filename
from retrieval.fakes import HashEmbedder
from retrieval.types import Filter
from tests.discord_sim import answer_text, discord_app
from tests.reliability.helpers.stack import DIM, DOC, open_app, settings
from tests.stubs.fixtures import telegram_transport
from tests.stubs.telegram_server import Call, TelegramServer

GROUP, ADMIN, MEMBER = -100, 7, 8
MARKERS = ("<b>百宝箱 · 可用命令", "<b>Baibao · commands")


@dataclass
class Env:
    app: App
    transport: TelegramTransport
    server: TelegramServer

    async def settle(self, chat_id: int = 42, user_id: int = 42) -> None:
        """Every update pushed so far has been handled: the transport handles updates one at
        a time, so once the answer to a /help pushed after them is in, theirs are too."""

        def marker(call: Call) -> bool:
            return str(call.params["text"]).startswith(MARKERS)

        before = len([c for c in self.server.named("sendMessage") if marker(c)])
        self.server.push_message("/help@baibao_bot", chat_id=chat_id, user_id=user_id)
        await self.server.wait_for("sendMessage", before + 1, where=marker)

    def texts(self) -> list[str]:
        """What the bot sent or edited into a chat, in order (the /help markers left out)."""
        texts = (
            str(c.params.get("text", ""))
            for c in self.server.calls
            if c.status == 200 and c.method in ("sendMessage", "editMessageText")
        )
        return [t for t in texts if not t.startswith(MARKERS)]

    def messages(self) -> list[str]:
        return [
            str(c.params["text"])
            for c in self.server.named("sendMessage")
            if not str(c.params["text"]).startswith(MARKERS)
        ]

    async def nothing_written(self) -> bool:
        uploads = self.app.settings.data_dir / "uploads"
        leftovers = list(uploads.rglob("*")) if uploads.exists() else []
        documents = await self.app.indexer.documents()
        return not documents and await self.app.store.count() == 0 and not leftovers


@pytest.fixture
async def env(tmp_path: Path, telegram_wire: TelegramServer) -> AsyncIterator[Env]:
    # The private chat the commands come from is the operator's (OPERATORS): a stranger's DM
    # may not change the shared library (tests/e2e/test_library_trust.py).
    async with open_app(
        tmp_path / "data", corpus=False, chat_upload_max_mb=0.05, operators="telegram:42"
    ) as app:
        telegram_wire.member_status[(GROUP, ADMIN)] = "administrator"
        transport = telegram_transport(app.router, telegram_wire)
        async with transport:
            yield Env(app, transport, telegram_wire)


async def test_an_admin_uploads_lists_and_deletes_a_book(env: Env) -> None:
    caption = "/ingest 测试之书 | 某某 | 1984 | message"
    env.server.push_document(caption, DOC.encode(), file_name="分赐.md", mime_type="text/markdown")
    await env.settle()
    texts = env.texts()
    assert texts[0].startswith(("正在读取 分赐.md", "正在导入 分赐.md"))  # progress first …
    assert "已导入《测试之书》" in texts[-1] and "/ask" in texts[-1]  # … edited into a summary
    assert len(env.messages()) == 1  # one message, edited in place
    [record] = await env.app.indexer.documents()
    assert (record.source, record.author, record.year, record.type) == (
        "测试之书",
        "某某",
        1984,
        "message",
    )
    env.server.push_message("/sources", chat_id=GROUP, user_id=MEMBER)
    await env.settle(GROUP, MEMBER)
    listed = env.texts()[-1]  # title, author, year, type, era (1984 → the 1980s), chunks
    assert "测试之书 · 某某 · 1984 · message · 1980s · " in listed
    # The book is in the shared library (the operator's DM has no shelf): a group's admin
    # may not delete it, and is told who may.
    env.server.push_message("/ingest delete 测试之书", chat_id=GROUP, user_id=ADMIN)
    await env.settle(GROUP, ADMIN)
    assert "共享书库只有机器人的运营者" in env.texts()[-1]
    env.server.push_message("/ingest delete 测试之书")  # the operator may
    await env.settle()
    assert "已删除《测试之书》" in env.texts()[-1]
    assert await env.app.indexer.documents() == []
    assert [r.source for r in await env.app.indexer.trash()] == ["测试之书"]
    env.server.push_message("/ingest delete 测试之书")
    await env.settle()
    assert "找不到文档「测试之书」" in env.texts()[-1]


async def test_a_member_is_refused_before_anything_is_downloaded(env: Env) -> None:
    env.server.push_document(
        "/ingest", DOC.encode(), chat_id=GROUP, user_id=MEMBER, file_name="a.md"
    )
    env.server.push_message("/ingest delete 测试之书", chat_id=GROUP, user_id=MEMBER)
    await env.settle(GROUP, MEMBER)
    assert env.texts() == ["只有管理员可以这样做。"] * 2
    assert env.server.named("getFile") == [] and await env.nothing_written()


@pytest.mark.parametrize(
    ("file_name", "size", "data", "needle"),
    [
        ("big.md", 60 * 1024, b"x", "文件太大了（60 KB），上限 51 KB。"),
        (
            "tool.exe",
            10,
            b"MZ",
            "不支持这种文件；支持 PDF / DOCX / EPUB / TXT / MD / MARKDOWN。",
        ),
        ("broken.pdf", 20, b"%PDF-1.4 not really", "无法导入 broken.pdf"),
        ("empty.md", 1, b"\n", "无法导入 empty.md"),
    ],
)
async def test_bad_files_are_refused_and_nothing_is_half_written(
    env: Env, file_name: str, size: int, data: bytes, needle: str
) -> None:
    env.server.push_document("/ingest", data, file_name=file_name, declared_size=size)
    await env.settle()
    assert needle in env.texts()[-1]
    assert "没有写入任何内容" in env.texts()[-1] or env.server.named("getFile") == []
    assert await env.nothing_written()


LAYOUT = Path(__file__).resolve().parents[1] / "fixtures" / "layout"


async def test_a_word_outline_uploaded_in_chat_keeps_its_levels(env: Env) -> None:
    data = (LAYOUT / "outline-libreoffice.docx").read_bytes()  # made by LibreOffice
    env.server.push_document("/ingest", data, file_name="纲目.docx")
    await env.settle()
    assert "已导入《新约职事》" in env.texts()[-1]
    [record] = await env.app.indexer.documents()
    assert record.type == "outline"
    chunks = await env.app.store.scroll(Filter(equals={"doc_id": record.doc_id}))
    paths = {str(c.extra["path"]) for c in chunks}
    assert "新约职事 > 叁\u3000彼得与约翰的职事" in paths
    text = "\n".join(c.text for c in chunks)
    assert "（二）彼得说到信徒与神的性情有分——彼后一4" in text  # 小点 under their 大点


async def test_an_old_doc_in_chat_says_how_to_convert_it(env: Env) -> None:
    data = (LAYOUT / "old-outline.doc").read_bytes()  # made by LibreOffice
    env.server.push_document("/ingest", data, file_name="纲目.doc")
    await env.settle()
    reply = env.texts()[-1]
    assert (
        "无法导入 纲目.doc：旧版 Word 文档（.doc）无法直接导入" in reply and "另存为 .docx" in reply
    )
    assert "没有写入任何内容" in reply and await env.nothing_written()


async def test_a_scanned_pdf_in_chat_names_its_pages_and_writes_nothing(tmp_path: Path) -> None:
    async with open_app(tmp_path / "data", corpus=False, chat_upload_max_mb=2) as app:
        admin = Actor("telegram", "42", "42", is_admin=True)
        upload = Upload.of((LAYOUT / "mixed-scan.pdf").read_bytes(), "扫描.pdf")
        reply = await app.router.answer(Invocation(admin, Line("/ingest"), upload=upload))
        assert reply is not None
        text = reply.plain()
        assert "无法导入 扫描.pdf：PDF 共 2 页，其中第 2 页是扫描图像" in text
        assert "没有写入任何内容" in text
        assert await app.indexer.documents() == [] and await app.store.count() == 0


async def test_ingest_without_a_file_says_how(env: Env) -> None:
    env.server.push_message("/ingest 测试之书")
    await env.settle()
    assert "请把命令写在文件的说明（caption）里" in env.texts()[-1]
    assert await env.nothing_written()


async def test_an_english_chat_gets_an_english_summary(env: Env) -> None:
    env.server.push_message("/settings language en")
    env.server.push_document("/ingest Test Book", DOC.encode(), file_name="d.md")
    await env.settle()
    texts = env.texts()
    assert texts[1].startswith(("Reading d.md", "Ingesting d.md"))
    assert texts[-1].startswith("Ingested “Test Book”:") and "块" not in texts[-1]


async def test_discord_attachment_ingests_through_the_same_command(tmp_path: Path) -> None:
    """Through SimCord (`DiscordTransport`'s own client), over the real App."""
    app_settings = settings(tmp_path / "data", discord_token="simcord")
    async with discord_app(app_settings) as (app, server):
        mod = server.member("mod", server.mods)
        added = await mod.slash(
            server.channel, "ingest add", file=("d.md", DOC.encode()), title="测试之书"
        )
        await server.env.advance_time(1)  # the streamed progress's throttled final edit
        edits = [r.json for r in server.requests("PATCH", "/messages/@original")]
        assert len(edits) >= 2 and edits[0]["content"].startswith(("正在读取", "正在导入"))
        assert "已导入《测试之书》" in edits[-1]["content"] == answer_text(added)
        [ack] = server.requests("POST", "/callback")
        assert ack.json["type"] == 5  # deferred first
        assert [d.source for d in await app.indexer.documents()] == ["测试之书"]
        assert not added.followups


@pytest.mark.parametrize(
    ("caption", "needle"),
    [
        ("/ingest 书 | 某某 | 一九八四年", "「年份」应为正整数"),
        (
            "/ingest 书 | 某某 | 1984 | novel",
            "「类型」应为以下之一：book / message / outline / footnote",
        ),
        ("/ingest " + "长" * 201, "「书名」太长了"),
    ],
)
async def test_malformed_ingest_arguments_get_usage(env: Env, caption: str, needle: str) -> None:
    env.server.push_document(caption[:1024], DOC.encode(), file_name="d.md")
    await env.settle()
    assert needle in env.texts()[-1] and "用法：/ingest" in env.texts()[-1]
    assert env.server.named("getFile") == [] and await env.nothing_written()


async def test_malformed_delete_and_settings(env: Env) -> None:
    for line in ("/ingest delete", "/settings language fr", "/settings colour red"):
        env.server.push_message(line)
    await env.settle()
    texts = env.texts()
    assert "缺少参数「书名或文档 ID」" in texts[0]
    assert "「语言」应为以下之一：zh / en" in texts[1]
    assert "/settings 没有子命令「colour」" in texts[2]
    env.server.push_message("/settings language")
    await env.settle()
    assert env.texts()[-1].startswith("本聊天的语言：中文")


def test_the_default_upload_limit_is_telegrams_20_mb() -> None:
    assert load_settings(_env_file=None).chat_upload_max_mb == 20


class HeldEmbedder(HashEmbedder):
    """A real embedder held at its first batch until released (an ingest in progress)."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.entered.set()
        await self.release.wait()
        return await super().embed_passages(texts)


async def test_one_upload_at_a_time(tmp_path: Path) -> None:
    embedder = HeldEmbedder(DIM)
    async with App(settings(tmp_path / "data"), embedder=embedder, llm=None) as app:
        admin = Actor("telegram", "42", "42", is_admin=True)
        first = asyncio.create_task(
            app.router.answer(
                Invocation(admin, Line("/ingest 甲"), upload=Upload.of(DOC.encode(), "a.md"))
            )
        )
        await embedder.entered.wait()
        second = await app.router.answer(
            Invocation(admin, Line("/ingest 乙"), upload=Upload.of(DOC.encode() + b"\n\n", "b.md"))
        )
        assert second is not None and second.plain() == "另一个文件正在导入，请等它完成后再试。"
        embedder.release.set()
        done = await first
        assert done is not None and "已导入《甲》" in done.plain()
        assert [d.source for d in await app.indexer.documents()] == ["甲"]


def test_upload_names_are_made_safe() -> None:
    assert safe_filename("../../etc/passwd.MD") == "passwd.md"
    assert safe_filename("C:\\\\docs\\\\书.PDF") == "书.pdf"
    assert safe_filename(".hidden.txt") == "hidden.txt"
    assert safe_filename("\x00\n.md") == "upload.md"
