"""/ask filters (text form and Discord options) and /cite's script option — parsed by
the router's registry; the scholar is the recording fake (the real one: tests/e2e/test_answers)."""

from __future__ import annotations

import pytest

from bot.actor import Actor
from bot.router import Invocation, Line, Slash
from retrieval.requests import AskRequest, CiteRequest
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router

ZH = Actor("console", "console", "u1")


@pytest.fixture
def scholar() -> RecordingScholar:
    return RecordingScholar()


async def _ask(scholar: RecordingScholar, line: str) -> tuple[AskRequest | None, str]:
    router = fake_router(scholar, RecordingNovels())
    reply = await router.answer(Invocation(ZH, Line(line)))
    assert reply is not None
    request = scholar.requests[-1] if scholar.requests else None
    return (request if isinstance(request, AskRequest) else None), reply.plain()


async def test_text_form_filters(scholar: RecordingScholar) -> None:
    request, _ = await _ask(scholar, "/ask 书:神的经纶 类型:纲目 神的经纶与人的灵有什么关系？")
    assert request == AskRequest(
        "神的经纶与人的灵有什么关系？", {"source": "神的经纶", "type": "outline"}
    )
    request, _ = await _ask(scholar, "/ask source:新约职事 era：sample-1980s what is it?")
    assert request is not None and request.filters == {
        "source": "新约职事",
        "era": "sample-1980s",
    }
    assert request.question == "what is it?"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/ask 书: 问题", "后面要写值"),
        ("/ask 类型:poem 问题", "类型「poem」不存在"),
        ("/ask 书:神的经纶", "请在筛选条件后面写下问题"),
        ("/ask 书:甲 书:乙 问题", "只能写一次"),
        ("/ask " + "长" * 1001, "1000"),
    ],
)
async def test_bad_filters_get_a_clear_message(
    scholar: RecordingScholar, line: str, says: str
) -> None:
    request, text = await _ask(scholar, line)
    assert request is None and says in text, text


async def test_discord_options_and_source_autocomplete(scholar: RecordingScholar) -> None:
    router = fake_router(scholar, RecordingNovels())
    reply = await router.answer(
        Invocation(
            ZH,
            Slash(("ask",), {"question": "什么是经纶？", "source": "神的经纶", "type": "outline"}),
        )
    )
    assert not reply.is_error
    assert scholar.requests[-1] == AskRequest(
        "什么是经纶？", {"source": "神的经纶", "type": "outline"}
    )
    ask = router.registry.get("ask")
    source = next(p for p in ask.params if p.name == "source")  # type: ignore[union-attr]
    assert source.suggest is not None and source.suggest("经纶", ZH) == [("神的经纶", "神的经纶")]


async def test_cite_script_option_and_help(scholar: RecordingScholar) -> None:
    router = fake_router(scholar, RecordingNovels())
    await router.answer(Invocation(ZH, Slash(("cite",), {"reference": "弗1:10", "script": "繁体"})))
    request = scholar.requests[-1]
    assert isinstance(request, CiteRequest) and request.script == "traditional"
    help_text = (await router.answer(Invocation(ZH, Line("/help ask")))).plain()  # type: ignore[union-attr]
    assert "书:神的经纶 类型:outline" in help_text
