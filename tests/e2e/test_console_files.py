"""The console and the CLI can revise and upload (issue 42, item 7), over the whole product
(`App`: SQLite, Qdrant Edge, plot memory, the ingest pipeline; the hash embedder, no model):
`/chapter submit @file`, `/chapter revise N @file` and `/chapter revise N 正文：…`,
`/novel blueprint set @file`, `/ingest @file 书名 | …`, each as a chat would with an
attachment; the malformed files get their clear messages and change nothing; `baibao chat`
reads the same lines from stdin. The console holds one story: `/novel new` says so."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from bot.transports.console import ConsoleTransport
from novel.blueprint import Blueprint, Character
from tests.reliability.helpers.stack import open_app

CHAPTER = "夜色沉沉，林远提着灯走到青岚渡口。江风很冷，苏晴在船头举着灯笼。"
REVISED = "天亮了，林远把船系在青岚渡口。苏晴已经走了。"
DOC = "# 渡口之书\n\n## 第一章 渡口\n\n渡口的人在天亮前出发，江风很冷。\n"


def _files(tmp_path: Path) -> Path:
    files = tmp_path / "稿件"
    files.mkdir()
    (files / "第1章.txt").write_text(CHAPTER, encoding="utf-8")
    (files / "第1章 修订.txt").write_text(REVISED, encoding="gb18030")
    world = Blueprint(title="星海", characters=[Character(name="沈星")])
    (files / "世界.json").write_text(world.to_json(), encoding="utf-8")
    (files / "坏世界.json").write_text("{不是 JSON", encoding="utf-8")
    (files / "渡口之书.md").write_text(DOC, encoding="utf-8")
    (files / "图.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return files


async def test_the_console_submits_revises_sets_the_blueprint_and_ingests_files(
    tmp_path: Path,
) -> None:
    files = _files(tmp_path)
    async with open_app(tmp_path / "data", corpus=False) as app:
        console = ConsoleTransport(app.router, stdin=io.StringIO(), stdout=io.StringIO(), cwd=files)

        async def said(line: str) -> str:
            return await console.handle_line(line)

        assert "提议征集开始" in await said("/chapter next")
        assert "《夜渡》" in await said("/chapter propose 夜渡 | 林远夜里渡江")
        ballot = await said("/chapter close")
        assert "投票开始" in ballot and "[1] 夜渡" in ballot and "/press 编号" in ballot, ballot
        assert "已投给 1.《夜渡》" in await said("/press 1")  # the ballot's numbered button
        assert "胜出：《夜渡》" in await said("/chapter close")
        # A file that is not a chapter's text: refused, the round still waits for its text.
        assert "不支持这种文件；支持 TXT / MD / MARKDOWN" in await said("/chapter submit @图.png")
        assert "找不到文件：第9章.txt" in await said("/chapter submit @第9章.txt")
        submitted = await said("/chapter submit @第1章.txt")
        assert "已收到第 1 章正文" in submitted and "林远提着灯" in submitted, submitted
        book = app.novels.service.repo.book
        [(_, v1)] = await book.current_versions("console")
        assert v1.text == CHAPTER

        revised = await said('/chapter revise 1 @"第1章 修订.txt"')  # GB18030, quoted path
        assert "已保存为第 2 版" in revised, revised
        inline = await said("/chapter revise 1 正文：天亮了，江面上只剩一条船。")
        assert "已保存为第 3 版" in inline, inline
        no_model = await said("/chapter revise 1 让结尾更有悬念")
        assert "重写需要语言模型" in no_model and "正文：" in no_model
        history = await said("/chapter history 1")
        assert "v1" in history and "v2" in history and "v3" in history
        [(_, v3)] = await book.current_versions("console")
        assert v3.text == "天亮了，江面上只剩一条船。"
        hits = await app.novels.service.memory.search("console", "江面上只剩一条船")
        assert hits and all(h.version == 3 for h in hits)  # memory follows the revision

        bad = await said("/novel blueprint set @坏世界.json")
        assert "JSON" in bad and "星海" not in await said("/novel blueprint show")
        saved = await said("/novel blueprint set @世界.json")
        assert "星海" in saved, saved
        world = json.loads(await app.novels.service.repo.world.blueprint_json("console") or "{}")
        assert world["title"] == "星海" and world["characters"][0]["name"] == "沈星"

        assert "不支持这种文件" in await said("/ingest @图.png 图")
        ingested = await said("/ingest @渡口之书.md 渡口之书 | 某某 | 1984 | book")
        assert "已导入《渡口之书》" in ingested, ingested
        [doc] = [d for d in await app.indexer.documents() if d.source == "渡口之书"]
        assert (doc.author, doc.year, doc.type) == ("某某", 1984, "book")
        assert "渡口之书" in await said("/sources")

        one = await said("/novel new 星海")
        assert "这里只能写一个故事" in one and "控制台" in one
        listed = await said("/novel list")
        assert "1. 《星海》 — 默认故事 · 1 章 ← 这里用的故事" in listed, listed
        helped = await said("/help")
        assert "@路径" in helped and "/chapter submit @第3章.txt" in helped
        usage = await said("/help chapter")
        assert "正文：" in usage and "@第12章.txt" in usage
        novel_help = await said("/help novel")
        assert "new — 让本频道、子区或话题有自己的故事（管理员）" in novel_help
        assert "list — 本服务器/群的各个故事" in novel_help and "/novel new 星海" in novel_help
        english = ConsoleTransport(
            app.router, stdin=io.StringIO(), stdout=io.StringIO(), lang="en", cwd=files
        )
        set_en = await english.handle_line("/settings language en")  # the console reads English
        assert "English" in set_en, set_en
        en = await english.handle_line("/help novel")
        assert "new — Give this channel, thread or topic a story of its own (admins)" in en
        assert "/novel new Star Sea" in en and "list — This server's or group's stories" in en
        assert "No such file: 无.txt" in await english.handle_line("/chapter submit @无.txt")


def test_baibao_chat_reads_files_and_inline_text_from_stdin(tmp_path: Path) -> None:
    """The CLI as a user pipes a script into it: the same lines, the same replies."""
    files = _files(tmp_path)
    script = "\n".join(
        (
            "/chapter next",
            "/chapter propose 夜渡",
            "/chapter close",
            "/chapter close",
            f"/chapter submit @{files / '第1章.txt'}",
            f"/chapter revise 1 @{files / '缺了.txt'}",
            "/chapter revise 1 正文：天亮了。",
            "/chapter show 1",
            "/quit",
        )
    )
    env = {
        **os.environ,
        "SAMPLE_CORPUS": "false",
        "DATA_DIR": str(tmp_path / "data"),
        "LLM_PROVIDER": "none",
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "chat"],
        input=script + "\n",
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard
        env=env,
        cwd=Path.cwd(),
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "已收到第 1 章正文" in out, out
    assert f"找不到文件：{files / '缺了.txt'}" in out
    assert "已保存为第 2 版" in out and "天亮了。" in out
