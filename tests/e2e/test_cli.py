"""The process as a user starts it: `baibao chat` on stdin/stdout, start-up errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _baibao(
    args: list[str], stdin: str = "", env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    # The console checks here don't need the sample corpus (tested in test_demo.py).
    full_env = {**os.environ, "SAMPLE_CORPUS": "false", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=Path.cwd(),
    )


def test_console_repl_help_unknown_and_bad_argument() -> None:
    result = _baibao(["chat"], stdin="/help\n/frobnicate\n/chapter vote abc\n/quit\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "百宝箱 · 可用命令" in out and "/cite" in out
    assert "未知命令：/frobnicate" in out
    assert "「选项编号」应为正整数" in out and "用法：/chapter vote 2" in out
    assert "再见" in out


def test_console_ends_cleanly_on_eof() -> None:
    result = _baibao(["chat"], stdin="/help\n")
    assert result.returncode == 0, result.stderr


def test_invalid_setting_prints_one_line_naming_it() -> None:
    result = _baibao(["chat"], env={"FUSION_WEIGHTS": "a,b"})
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "FUSION_WEIGHTS" in lines[0] and "Traceback" not in result.stderr


def test_missing_key_for_chosen_provider_names_the_setting() -> None:
    result = _baibao(["ask", "什么是经纶"], env={"LLM_PROVIDER": "anthropic"})
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "Traceback" not in result.stderr


def test_run_without_tokens_says_how_to_try_locally() -> None:
    result = _baibao(["run"])
    assert result.returncode == 2
    assert "baibao chat" in result.stderr


def test_secret_is_never_echoed_in_a_settings_error() -> None:
    result = _baibao(["chat"], env={"DISCORD_TOKEN": "sekrit-token-123", "QDRANT_URL": "ftp://x"})
    assert result.returncode == 2
    assert "QDRANT_URL" in result.stderr
    assert "sekrit-token-123" not in result.stderr + result.stdout


def _console_at_its_prompt(env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`baibao chat` started and read up to its first prompt (by then it holds the data
    directory's lock and has opened every store)."""
    console = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "chat"],
        env={**os.environ, "SAMPLE_CORPUS": "false", **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path.cwd(),
    )
    assert console.stdout is not None
    seen = ""
    while "百宝箱>" not in seen:
        char = console.stdout.read(1)
        if not char:
            console.kill()
            raise AssertionError(f"the console ended early: {console.communicate()[1]}")
        seen += char
    return console


def test_second_process_on_the_same_data_dir_gets_a_clear_message() -> None:
    first = _console_at_its_prompt()
    try:
        second = _baibao(["ask", "经纶"])
        assert second.returncode == 3
        assert "另一个百宝箱进程" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.communicate("/quit\n", timeout=60)


def test_a_store_built_for_another_embedder_is_named_not_a_traceback(tmp_path: Path) -> None:
    import asyncio

    from retrieval.store.edge import EdgeStore

    async def build() -> None:  # a shard of 8-d vectors where the bot's embedder makes 384-d
        await (await EdgeStore.open(tmp_path / "data" / "qdrant", 8)).close()

    asyncio.run(build())
    result = _baibao(["ask", "经纶"], env={"DATA_DIR": str(tmp_path / "data")})
    assert result.returncode == 4
    assert "向量库按 8 维向量建成" in result.stderr and "EMBEDDING_PROVIDER" in result.stderr
    assert "holds 8-d vectors" in result.stderr and "Traceback" not in result.stderr


def test_a_data_dir_removed_under_the_console_ends_with_a_message_not_a_traceback(
    tmp_path: Path,
) -> None:
    import shutil

    console = _console_at_its_prompt({"DATA_DIR": str(tmp_path / "data")})
    try:
        shutil.rmtree(tmp_path / "data")
    finally:
        out, err = console.communicate("/quit\n", timeout=60)
    assert "再见" in out
    assert console.returncode == 4, err
    assert "向量库出错" in err and "flush" in err and "Traceback" not in err
