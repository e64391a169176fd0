"""The composition root starts what a command needs: the bot everything, a one-shot command
its store in this process and only the models it uses. Observed on the real parts (the e5
embedder, the tokenizer, the store), never by the clock."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.actor import Actor
from bot.app import FULL, LOOKUP, QUERY, RECORDS, App, Startup
from bot.cli import _parser, startup_for
from retrieval.embed.offline import E5Embedder
from retrieval.store.edge import EdgeStore
from retrieval.store.edge_process import EdgeProcessStore
from retrieval.text import Tokenizer
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


async def test_a_lookup_starts_no_model_no_store_process_no_writers_room(tmp_path: Path) -> None:
    started, words, store, writers_room = await _open(tmp_path, LOOKUP)
    assert not started and not writers_room
    assert words  # /cite tokenizes the verse for its keyword search
    assert store is EdgeStore


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
        reply = await app.router.handle_text(ACTOR, "/cite 弗1:10")
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
