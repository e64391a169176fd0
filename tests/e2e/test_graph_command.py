"""`/graph` end to end: the real router, registry, GraphViewer and knowledge graph (the curated
seed), out through the console (a file path), Discord (`DiscordTransport`'s own client in
SimCord: a file on the reply) and Telegram (PTB's HTTPXRequest
against the loopback Bot API, the command arriving by getUpdates: sendPhoto)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.commands import standard_registry
from bot.presenters.graph import PathPictures
from bot.presenters.scholar import ScholarPresenter
from bot.ratelimit import RateLimiter
from bot.router import Invocation, Line, Router
from bot.transports.console import ConsoleTransport
from bot.transports.discord import DiscordTransport
from bot.transports.telegram import TelegramTransport
from retrieval.graph import KnowledgeGraph
from retrieval.graph.view import GraphViewer
from tests.discord_sim import VirtualTime, app_settings, simulated
from tests.service_fakes import RecordingBallots, RecordingNovels, RecordingScholar
from tests.stubs.fixtures import telegram_settings
from tests.stubs.telegram_server import TelegramServer

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def router() -> AsyncIterator[Router]:
    graph = await KnowledgeGraph.open(None)
    registry = standard_registry(
        RecordingScholar(), RecordingNovels(), RecordingBallots(), graph=GraphViewer(graph.query)
    )
    yield Router(registry, limiter=RateLimiter(0, 0))
    await graph.close()


async def test_console_shows_the_list_and_the_picture_as_a_file(
    router: Router, tmp_path: Path
) -> None:
    out = io.StringIO()
    console = ConsoleTransport(router, stdin=io.StringIO(), stdout=out, files=tmp_path)
    text = await console.handle_line("/graph 神圣分赐")
    assert "「神圣分赐」在知识图谱中的关系" in text
    assert "神圣分赐 —发展→ 有机救恩〔精选〕" in text
    [picture] = list(tmp_path.glob("graph-*.png"))  # noqa: ASYNC240
    assert str(picture) in text and picture.read_bytes().startswith(PNG)


async def test_english_and_unknown_and_empty(router: Router, tmp_path: Path) -> None:
    console = ConsoleTransport(
        router, stdin=io.StringIO(), stdout=io.StringIO(), lang="en", files=tmp_path
    )
    text = await console.handle_line("/graph divine dispensing")
    assert "divine dispensing —develops→ organic salvation〔curated〕" in text
    unknown = await router.answer(
        Invocation(Actor("console", "c", "u", lang="zh"), Line("/graph 不存在的词"))
    )
    assert unknown is not None and unknown.is_error
    assert "知识图谱中没有「不存在的词」" in unknown.plain()
    similar = await router.answer(
        Invocation(Actor("console", "c", "u", lang="zh"), Line("/graph 分赐"))
    )
    assert similar is not None and "您是否要找" in similar.plain()
    empty = await router.answer(Invocation(Actor("console", "c", "u", lang="zh"), Line("/graph")))
    assert empty is not None and empty.is_error and "/graph 神圣分赐" in empty.plain()
    long = await router.answer(
        Invocation(Actor("console", "c", "u", lang="zh"), Line("/graph " + "灵" * 300))
    )
    assert long is not None and long.is_error


async def test_discord_sends_the_picture_as_a_file(router: Router, tmp_path: Path) -> None:
    """Through SimCord (`DiscordTransport`'s own client)."""
    time = VirtualTime()
    transport = DiscordTransport(router, app_settings(tmp_path), clock=time.clock())
    async with simulated(transport, time) as server:
        asked = await server.member("alice").slash(server.channel, "graph", concept="神圣分赐")
        messages = [m for m in [asked.response, *asked.followups] if m is not None]
        files = {a.filename: await a.read() for m in messages for a in m.attachments}
    assert files["graph.png"].startswith(PNG)
    assert any("有机救恩" in m.content for m in messages)


async def test_telegram_sends_the_picture_as_a_photo(
    router: Router, telegram_wire: TelegramServer
) -> None:
    transport = TelegramTransport(
        router, telegram_settings(telegram_wire), edit_interval_s=0.0, clock=telegram_wire.clock
    )
    async with transport:
        telegram_wire.push_command("/graph 神圣分赐")
        [photo] = await telegram_wire.wait_for("sendPhoto")
        await telegram_wire.wait_until(lambda: "有机救恩" in telegram_wire.texts())
    assert photo.files["photo"].startswith(PNG)


async def test_ask_attaches_the_picture_of_the_path_it_used(tmp_path: Path) -> None:
    from ingest.manifest import DocMeta, Manifest
    from ingest.pipeline import Pipeline
    from retrieval.fakes import HashEmbedder
    from retrieval.index import Indexer
    from retrieval.keyword import Bm25Encoder
    from retrieval.requests import AskRequest
    from retrieval.scholar import Scholar
    from retrieval.search import HybridSearch
    from retrieval.store.edge import EdgeStore
    from retrieval.synonyms import SynonymTable

    text = Path(__file__).parent.parent / "data" / "message-tabernacle.md"
    store = await EdgeStore.open(tmp_path / "qdrant", 64)
    graph = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    embedder, encoder = HashEmbedder(64), Bm25Encoder()
    try:
        async with Indexer(tmp_path / "db.sqlite3", store, embedder, encoder, graph) as ix:
            manifest = Manifest({}, DocMeta(title="帐幕与召会（测试）", type="message"))
            await Pipeline(ix).ingest_paths([text], manifest)
            search = HybridSearch(store, embedder, encoder, graph.query, SynonymTable.load())
            viewer = GraphViewer(graph.query)
            scholar = ScholarPresenter(
                Scholar(search, ix, graph.query, None), pictures=PathPictures(viewer)
            )
            actor = Actor("console", "c", "u", lang="zh")
            reply = await scholar.ask(actor, AskRequest("帐幕和召会是什么关系？"))
            assert "知识图谱路径" in reply.plain() and "帐幕" in reply.plain()
            [picture] = [a for a in reply.attachments if a.mime == "image/png"]
            assert picture.filename == "graph-path.png" and picture.data.startswith(PNG)
            plain = ScholarPresenter(Scholar(search, ix, graph.query, None))  # no pictures: none
            assert not (await plain.ask(actor, AskRequest("帐幕和召会是什么关系？"))).attachments
    finally:
        await store.close()
        await graph.close()


WARFARE = Path(__file__).parent.parent / "data" / "message-warfare.md"


@pytest.fixture
async def grown_router() -> AsyncIterator[Router]:
    """The seed plus an original sample message that names 保罗 and 撒母耳 (issue 24)."""
    from ingest.manifest import DocMeta
    from ingest.pipeline import build_document

    graph = await KnowledgeGraph.open(None)
    built = build_document(
        WARFARE,
        DocMeta(title="属灵的争战（测试）", type="message"),
        max_bytes=10**7,
        tagger=lambda _: (),
    )
    await graph.index_document(built.record.doc_id, built.chunks)
    registry = standard_registry(
        RecordingScholar(), RecordingNovels(), RecordingBallots(), graph=GraphViewer(graph.query)
    )
    yield Router(registry, limiter=RateLimiter(0, 0))
    await graph.close()


async def test_graph_of_a_person_draws_the_concepts_his_passages_discuss(
    grown_router: Router, tmp_path: Path
) -> None:
    console = ConsoleTransport(
        grown_router, stdin=io.StringIO(), stdout=io.StringIO(), files=tmp_path
    )
    text = await console.handle_line("/graph 保罗")
    assert "「保罗」在知识图谱中的关系" in text
    assert "保罗 —阐明→ 争战的兵器〔属灵的争战（测试）〕" in text  # grown from his passages
    assert "保罗 —阐明→ 经纶〔精选〕" in text  # the seed's
    [picture] = list(tmp_path.glob("graph-*.png"))  # noqa: ASYNC240
    assert picture.read_bytes().startswith(PNG)
    # English and Traditional aliases name the same person
    en = ConsoleTransport(
        grown_router, stdin=io.StringIO(), stdout=io.StringIO(), lang="en", files=tmp_path
    )
    assert "Paul —expounds→ 争战的兵器" in await en.handle_line("/graph Paul")
    assert "保罗 —阐明→ 争战的兵器" in await console.handle_line("/graph 保羅")
    # a name the dictionary lacks, found by statistics, is a person, not a scripture book
    samuel = await console.handle_line("/graph 撒母耳")
    assert "撒母耳 —阐明→ 争战的兵器〔属灵的争战（测试）〕" in samuel


async def test_telegram_graph_of_a_person(
    grown_router: Router, telegram_wire: TelegramServer
) -> None:
    transport = TelegramTransport(
        grown_router,
        telegram_settings(telegram_wire),
        edit_interval_s=0.0,
        clock=telegram_wire.clock,
    )
    async with transport:
        telegram_wire.push_command("/graph 保罗")
        [photo] = await telegram_wire.wait_for("sendPhoto")
        await telegram_wire.wait_until(lambda: "争战的兵器" in telegram_wire.texts())
    assert photo.files["photo"].startswith(PNG)
    assert "保罗 —阐明→ 争战的兵器" in telegram_wire.texts()
