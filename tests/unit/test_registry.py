"""The command registry and the layering it exists for: transports carry no domain rules,
the router no platform code, and seams are declared rather than probed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.commands import standard_registry
from bot.registry import Command, Group, Help, Registry
from bot.reply import Reply
from retrieval.embed.cache import CachedEmbedder
from retrieval.fakes import HashEmbedder
from retrieval.llm import build_llm
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLM, Embedder
from tests.reliability.helpers.stack import open_app
from tests.service_fakes import RecordingBallots, RecordingNovels, RecordingScholar

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = standard_registry(RecordingScholar(), RecordingNovels(), RecordingBallots())


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_names_and_descriptions_fit_both_platforms() -> None:
    for entry in REGISTRY:
        assert re.fullmatch(r"[a-z0-9_]{1,32}", entry.name)  # Telegram BotCommand
    for path, command in REGISTRY.commands():
        assert all(re.fullmatch(r"[a-z0-9_-]{1,32}", p) for p in path)  # Discord names
        assert 1 <= len(command.help.zh) <= 100 and 1 <= len(command.help.en) <= 100
        for param in command.params:
            assert re.fullmatch(r"[a-z0-9_-]{1,32}", param.name)


def test_a_name_is_registered_once() -> None:
    async def run(call: object, request: object) -> Reply:
        raise AssertionError

    twice = Command(help=Help("ask", "问", "ask", "/ask"), parse=lambda v: v, run=run)
    with pytest.raises(ValueError, match="twice"):
        Registry().add(twice, twice)
    assert isinstance(REGISTRY.get("chapter"), Group)


def test_transports_hold_no_domain_rules() -> None:
    """Only the shared reply/request model (and the injected clock) comes from `retrieval/`;
    no service, no parser, no copied admin policy."""
    allowed = {"retrieval.requests", "kernel.i18n", "retrieval.clock"}
    for path in (ROOT / "bot" / "transports").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        used = {m for m in _imports(path) if m.startswith(("retrieval", "novel", "ingest"))}
        assert used <= allowed, (path.name, used - allowed)
        assert "manage_guild or" not in text and "novel_admin_role" not in text, path.name


def test_the_router_and_commands_hold_no_platform_code() -> None:
    files = [ROOT / "bot" / n for n in ("router.py", "registry.py", "parsing.py", "admin.py")]
    files += sorted((ROOT / "bot" / "commands").glob("*.py"))
    for path in files:
        sdks = {m for m in _imports(path) if m.split(".")[0] in ("discord", "telegram")}
        assert not sdks, (path.name, sdks)


def test_seams_are_declared_not_probed() -> None:
    probing = []
    for package in ("bot", "retrieval", "novel", "ingest", "kernel"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "getattr(" in text or "hasattr(" in text:
                probing.append(path.relative_to(ROOT).as_posix())
    assert probing == []


async def test_every_llm_and_embedder_declares_aclose(tmp_path: Path) -> None:
    llms: list[object] = [
        ScriptedLLM(),
        build_llm("anthropic", api_key="k", base_url="http://127.0.0.1:9"),
        build_llm("openai", api_key="k", base_url="http://127.0.0.1:9"),
    ]
    for llm in llms:
        assert isinstance(llm, LLM)
        await llm.aclose()
    inner = HashEmbedder()
    async with CachedEmbedder(inner, tmp_path / "cache.sqlite3") as cached:
        for embedder in (inner, cached):
            assert isinstance(embedder, Embedder)
        await cached.aclose()


async def test_english_help_and_usage_have_no_chinese(tmp_path: Path) -> None:
    """An English reply shows usage lines: they must be English too (every room the app
    assembles, /settings and /ingest included)."""
    async with open_app(tmp_path / "data", corpus=False) as app:
        full = app.router.registry
    assert full.get("ingest") is not None and full.get("settings") is not None
    entries: list[Command[object] | Group] = list(full)
    entries += [c for _, c in full.commands()]
    cjk = re.compile(r"[\u3400-\u9fff\uff01-\uff5e]")
    for entry in entries:
        assert not cjk.search(entry.help.en + entry.help.usage_in("en")), entry.name
        if isinstance(entry, Command):
            assert all(not cjk.search(p.en) for p in entry.params), entry.name
