"""Files and text on the console (issue 42, item 7): a word `@path` is the file a chat would
attach — for `/chapter submit`, `/chapter revise N`, `/novel blueprint set` and `/ingest`, the
commands that take one — and `/chapter revise N 正文：…` / `text: …` carries the new text inline
on every platform. Through the real router and registry over recording services: what reached
the writers' room, and the clear message (nothing reaching it) for every malformed input."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from bot.transports.console import ConsoleTransport, LocalFileError, split_local_file
from novel import api as novel_api
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router

CHAPTER = "夜色沉沉，林远提着灯走到青岚渡口。"


def console(
    tmp_path: Path, lang: str = "zh"
) -> tuple[ConsoleTransport, RecordingNovels, RecordingScholar]:
    novels, scholar = RecordingNovels(), RecordingScholar()
    transport = ConsoleTransport(
        fake_router(scholar, novels),
        stdin=io.StringIO(),
        stdout=io.StringIO(),
        lang=lang,  # type: ignore[arg-type]
        cwd=tmp_path,
    )
    return transport, novels, scholar


def test_the_at_word_is_one_file_quoted_or_not_and_double_at_is_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "第3章.txt").write_text(CHAPTER, encoding="utf-8")
    (tmp_path / "我的 书.md").write_text("# 书", encoding="utf-8")
    line, upload = split_local_file("/chapter revise 3 @第3章.txt", tmp_path)
    assert line == "/chapter revise 3" and upload is not None
    assert (upload.filename, upload.size) == ("第3章.txt", len(CHAPTER.encode()))
    line, upload = split_local_file('/ingest @"我的 书.md" 书名 | 作者', tmp_path)
    assert line == "/ingest  书名 | 作者" and upload is not None and upload.filename == "我的 书.md"
    line, upload = split_local_file("/chapter submit 他写下 @@林远 三个字", tmp_path)
    assert line == "/chapter submit 他写下 @林远 三个字" and upload is None
    line, upload = split_local_file("/chapter submit 邮件a@b.c 不是文件", tmp_path)
    assert line == "/chapter submit 邮件a@b.c 不是文件" and upload is None
    home = tmp_path / "home"
    (home / "稿件").mkdir(parents=True)
    (home / "稿件" / "第4章.md").write_text(CHAPTER, encoding="utf-8")
    line, upload = split_local_file("/chapter submit @~/稿件/第4章.md", tmp_path)
    assert line == "/chapter submit" and upload is not None and upload.filename == "第4章.md"
    with pytest.raises(LocalFileError) as two:
        split_local_file("/chapter submit @a.txt @b.txt", tmp_path)
    assert two.value.key == "local_file_two"


async def test_files_and_inline_text_reach_the_writers_room(tmp_path: Path) -> None:
    (tmp_path / "第3章.txt").write_text(CHAPTER, encoding="utf-8")
    (tmp_path / "旧编码.txt").write_bytes(CHAPTER.encode("gb18030"))
    (tmp_path / "世界.json").write_text('{"title": "星海"}', encoding="utf-8")
    transport, novels, _ = console(tmp_path)
    for line in (
        "/chapter submit @第3章.txt",
        f"/chapter submit @{tmp_path / '旧编码.txt'}",  # an absolute path
        "/chapter revise 3 @第3章.txt",
        "/novel blueprint set @世界.json",
        "/chapter revise 3 正文：夜色更深了。",
        "/chapter revise 3 正文: 夜色更深了。",
        "/chapter revise 3 TEXT: The night was deeper.",
        "/chapter revise 3 正文太长了，删去第二段",  # no colon: an instruction to the model
        "/chapter revise 3 让结尾更有悬念",
        "/chapter submit 他写下 @@林远 三个字",
    ):
        said = await transport.handle_line(line)
        assert said.strip() == "ok", (line, said)
    assert novels.requests == [
        novel_api.SubmitChapter(CHAPTER),
        novel_api.SubmitChapter(CHAPTER),
        novel_api.ReviseChapter(3, "", CHAPTER),
        novel_api.BlueprintSet('{"title": "星海"}'.encode()),
        novel_api.ReviseChapter(3, "", "夜色更深了。"),
        novel_api.ReviseChapter(3, "", " 夜色更深了。"),
        novel_api.ReviseChapter(3, "", " The night was deeper."),
        novel_api.ReviseChapter(3, "正文太长了，删去第二段"),
        novel_api.ReviseChapter(3, "让结尾更有悬念"),
        novel_api.SubmitChapter("他写下 @林远 三个字"),
    ]


async def test_a_command_that_takes_no_file_keeps_its_at_words(tmp_path: Path) -> None:
    transport, novels, scholar = console(tmp_path)
    await transport.handle_line("/ask 什么是 @经纶 ？")
    await transport.handle_line("/chapter propose 夜渡 | 写给 @林远 的信")
    [(_, asked)] = scholar.calls
    assert "@经纶" in str(asked)
    assert novels.requests == [novel_api.Propose("夜渡", "写给 @林远 的信")]


def _bad_files(tmp_path: Path) -> None:
    (tmp_path / "文件夹.txt").mkdir()
    (tmp_path / "笔记.txt").write_text("x", encoding="utf-8")
    (tmp_path / "图.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "二进制.txt").write_bytes(b"\x00\x01\x02\xff")
    (tmp_path / "空.txt").write_text("  \n", encoding="utf-8")
    (tmp_path / "大.txt").write_bytes(b"a" * (2 * 1024 * 1024 + 1))
    (tmp_path / "世界.png").write_bytes(b"\x89PNG\r\n\x1a\n")


MALFORMED = [
    ("/chapter submit @没有这个.txt", "找不到文件：没有这个.txt"),
    ("/chapter revise 2 @文件夹.txt", "「文件夹.txt」不是文件（是文件夹或特殊文件）"),
    ("/chapter submit @笔记.txt/第1章.txt", "无法读取文件「笔记.txt/第1章.txt」：Not a directory"),
    ("/chapter submit @图.png", "不支持这种文件；支持 TXT / MD / MARKDOWN"),
    ("/chapter revise 2 @二进制.txt", "这个文件不是文本"),
    ("/chapter submit @空.txt", "缺少参数「正文或文件」"),
    ("/chapter submit @大.txt", "文件太大了（2048 KB），上限 2048 KB"),
    ("/chapter submit @一.txt @二.txt", "一条命令只能附一个文件"),
    ("/chapter revise 2 正文：", "缺少参数「新正文」"),
    ("/chapter revise 2 正文：  ", "缺少参数「新正文」"),
    ("/chapter revise 2 正文：新的 @笔记.txt", "新正文只能给一份"),
    ("/chapter revise 2 " + "改" * 1001, "「修改说明」太长了（1001 字），上限 1000 字"),
    ("/novel blueprint set @没有.json", "找不到文件：没有.json"),
]


@pytest.mark.parametrize(("line", "said"), MALFORMED, ids=[m[0][:40] for m in MALFORMED])
async def test_a_file_the_console_cannot_attach_gets_a_clear_message_and_nothing_runs(
    tmp_path: Path, line: str, said: str
) -> None:
    _bad_files(tmp_path)
    transport, novels, _ = console(tmp_path)
    answer = await transport.handle_line(line)
    assert said in answer, answer
    assert novels.requests == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
async def test_a_file_without_read_permission_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "锁.txt"
    locked.write_text(CHAPTER, encoding="utf-8")
    locked.chmod(0)
    transport, novels, _ = console(tmp_path)
    answer = await transport.handle_line("/chapter submit @锁.txt")
    assert "无法读取文件「锁.txt」" in answer and novels.requests == []


async def test_the_messages_follow_the_consoles_language(tmp_path: Path) -> None:
    _bad_files(tmp_path)
    transport, novels, _ = console(tmp_path, lang="en")
    assert "No such file: nope.txt" in await transport.handle_line("/chapter submit @nope.txt")
    assert "“文件夹.txt” is not a file" in await transport.handle_line(
        "/chapter submit @文件夹.txt"
    )
    not_text = await transport.handle_line("/chapter submit @二进制.txt")
    assert "That file is not text" in not_text
    assert novels.requests == []
