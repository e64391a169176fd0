"""The main job as a new user runs it: the real offline embedder, a fresh data directory, the
bundled sample corpus prepared on first run, then answers. (The Bible books embedded are cut to
one short book to keep the suite quick; `DEMO_BIBLE_BOOKS` is the only difference from the demo.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _baibao(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEMO_BIBLE_BOOKS": "Phlm"}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=Path.cwd(),
    )


def test_first_run_prepares_the_samples_then_answers_offline() -> None:
    first = _baibao("ask", "神圣分赐与召会有什么关系？")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "首次运行" in first.stderr  # the progress bar of the one-time preparation
    assert "未使用语言模型" in first.stdout and "【" in first.stdout

    again = _baibao("cite", "腓利门书1:1")  # second run: no preparation, the verse table is full
    assert again.returncode == 0, again.stderr[-2000:]
    assert "首次运行" not in again.stderr
    assert "基督耶穌" in again.stdout or "基督耶稣" in again.stdout

    chat = _baibao("chat", stdin="/cite 弗1:10\n/ask What is God's economy?\n/quit\n")
    assert chat.returncode == 0, chat.stderr[-2000:]
    assert "注1" in chat.stdout and "No language model used" in chat.stdout

    found = _baibao("search", "调和", "--json", "--filter", "type=message")
    assert found.returncode == 0, found.stderr[-2000:]
    result = json.loads(found.stdout)
    assert result["hits"] and all(h["type"] == "message" for h in result["hits"])
    assert all(set(h["tracks"]) <= {"dense", "keyword", "graph"} for h in result["hits"])
    assert any(h["tracks"] for h in result["hits"])

    bad = _baibao("search", "调和", "--filter", "colour=blue")
    assert bad.returncode == 2 and "invalid filter" in bad.stderr

    asked = _baibao("ask", "--json", "书:神圣的分赐与召会", "召会是什么的结果？")
    assert asked.returncode == 0, asked.stderr[-2000:]
    answer = json.loads(asked.stdout)
    assert set(answer) >= {"question", "mode", "addressed", "answer", "citations", "graph_paths"}
    assert answer["mode"] == "extractive" and answer["addressed"] is True
    assert answer["citations"] and all(
        c["source"] == "神圣的分赐与召会" and c["verified"] and c["chunk_id"]
        for c in answer["citations"]
    )
    assert answer["citations"][0]["label"].startswith("神圣的分赐与召会，段落 ")
    weather = json.loads(_baibao("ask", "--json", "今天天气怎么样？").stdout)
    assert weather["addressed"] is False and weather["citations"] == []
    assert "没有直接论及" in weather["answer"]
    unknown = _baibao("ask", "--json", "书:不存在的书", "问题")
    assert unknown.returncode == 2 and "语料中没有「不存在的书」这本书" in unknown.stderr
