"""The scholar's commands: `/ask` and `/cite`."""

from __future__ import annotations

import re
from typing import Any, Protocol

from bot.registry import Call, Command, Help, Param, UsageError, Values
from retrieval import scripture
from retrieval.reply import Progress, Reply
from retrieval.requests import Actor, AskRequest, CiteRequest

MAX_QUESTION = 1000


class Scholar(Protocol):
    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply: ...

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply: ...


def book_suggestions(current: str, limit: int = 25) -> list[tuple[str, str]]:
    """(label, value) autocomplete suggestions for a scripture reference being typed."""
    current = current.strip()
    if re.search(r"\d|[一二三四五六七八九十]", current):
        return [(current[:100], current[:100])] if current else []
    short = dict(scripture.book_choices())
    return [
        (label[:100], short.get(osis, osis))
        for osis, label in scripture.search_books(current, limit)
    ]


def _cite_request(values: Values) -> CiteRequest:
    text = values.text("reference")
    try:
        ranges = scripture.parse_reference(text)
    except scripture.ScriptureError as err:
        raise UsageError.say(err.zh, err.en) from None
    return CiteRequest(text, tuple((r.start.osis(), r.end.osis()) for r in ranges))


def scholar_commands(scholar: Scholar) -> tuple[Command[Any], ...]:
    async def ask(call: Call, request: AskRequest) -> Reply:
        return await scholar.ask(call.actor, request, call.progress)

    async def cite(call: Call, request: CiteRequest) -> Reply:
        return await scholar.cite(call.actor, request)

    return (
        Command(
            help=Help(
                "ask",
                "向职事语料提问，回答附出处",
                "Ask the ministry corpus; answers cite their sources",
                "/ask 神圣分赐与召会有什么关系？",
                "/ask How is the divine dispensing related to the church?",
            ),
            params=(Param("question", "问题", "question", rest=True, max_len=MAX_QUESTION),),
            parse=lambda v: AskRequest(v.text("question")),
            run=ask,
        ),
        Command(
            help=Help(
                "cite",
                "查经文：经文、注解及阐述它的职事段落",
                "Look up a verse: text, footnotes and passages that expound it",
                "/cite 弗1:10",
                "/cite Eph. 1:10",
            ),
            params=(
                Param(
                    "reference",
                    "经文出处",
                    "reference",
                    rest=True,
                    max_len=200,
                    suggest=book_suggestions,
                ),
            ),
            parse=_cite_request,
            run=cite,
        ),
    )
