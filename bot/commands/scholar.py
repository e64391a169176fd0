"""The scholar's commands: `/ask` (with source / type / era filters) and `/cite`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, Protocol

from bot.actor import Actor
from bot.presenters.cite_pages import PREFIX as PAGE_PREFIX
from bot.presenters.cite_pages import decode_page
from bot.presenters.scripture import scripture_error_text
from bot.registry import Action, Call, Command, Help, Param, Suggest, UsageError, Values
from bot.reply import Progress, Reply
from bot.shelves import Shelves
from retrieval import scripture
from retrieval.requests import SCRIPT_NAMES, AskRequest, CiteRequest, Script
from retrieval.text import is_traditional

MAX_QUESTION = 1000


class ScholarReplies(Protocol):
    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply: ...

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply: ...

    def source_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]: ...

    def era_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]: ...


# Text form of the filters: `/ask 书:神的经纶 类型:outline 问题` (keys in either language).
FILTER_NAMES = {
    "书": "source",
    "書": "source",
    "来源": "source",
    "來源": "source",
    "source": "source",
    "类型": "type",
    "類型": "type",
    "type": "type",
    "时代": "era",
    "時代": "era",
    "年代": "era",
    "era": "era",
}
TYPES = {
    "book": "book",
    "书籍": "book",
    "書籍": "book",
    "message": "message",
    "信息": "message",
    "outline": "outline",
    "纲目": "outline",
    "綱目": "outline",
    "footnote": "footnote",
    "注解": "footnote",
    "註解": "footnote",
    "bible": "bible",
    "经文": "bible",
    "經文": "bible",
    "圣经": "bible",
}
TYPE_CHOICES = ("book", "message", "outline", "footnote", "bible")
_FILTER = re.compile(
    r"^(" + "|".join(sorted(map(re.escape, FILTER_NAMES), key=len, reverse=True)) + r")[:：]",
    re.IGNORECASE,
)


def split_filters(text: str) -> tuple[dict[str, str], str]:
    """Leading `key:value` words of a question → (filters, the question)."""
    filters: dict[str, str] = {}
    rest = text.strip()
    while m := _FILTER.match(rest):
        name = m.group(1)
        value, _, after = rest[m.end() :].partition(" ")
        value = value.strip()
        if not value:
            raise UsageError.say(
                f"筛选条件「{name}:」后面要写值，例如 书:神的经纶",
                f"the filter “{name}:” needs a value, e.g. source:神的经纶",
            )
        key = FILTER_NAMES[name.lower()]
        if key in filters:
            raise UsageError.say(f"「{name}」只能写一次", f"“{name}” may be given once")
        filters[key] = value
        rest = after.strip()
    return filters, rest


def _ask_request(values: Values) -> AskRequest:
    filters, question = split_filters(values.text("question"))
    for key in ("source", "type", "era"):
        option = values.text(key).strip()
        if option:
            filters[key] = option
    if "type" in filters:
        kind = TYPES.get(filters["type"].lower())
        if kind is None:
            raise UsageError.say(
                f"类型「{filters['type'][:20]}」不存在；可用：{' / '.join(TYPE_CHOICES)}",
                f"no type “{filters['type'][:20]}”; use one of {' / '.join(TYPE_CHOICES)}",
            )
        filters["type"] = kind
    if not question.strip():
        raise UsageError.say("请在筛选条件后面写下问题。", "Write the question after the filters.")
    return AskRequest(question, filters)


def book_suggestions(current: str, actor: Actor | None = None) -> list[tuple[str, str]]:
    """(label, value) autocomplete suggestions for a scripture reference being typed (the
    same in every chat)."""
    limit = 25
    current = current.strip()
    if re.search(r"\d|[一二三四五六七八九十]", current):
        return [(current[:100], current[:100])] if current else []
    short = dict(scripture.book_choices())
    return [
        (label[:100], short.get(osis, osis))
        for osis, label in scripture.search_books(current, limit)
    ]


# `/cite 诗119 2`, `/cite 诗119 第2页`, `/cite Ps 119 page 2`: the page of a long passage.
_PAGE = re.compile(
    r"\s+(?:第\s*)?(\d{1,3})\s*[页頁]?$|\s+(?:page|p\.?)\s*(\d{1,3})$", re.IGNORECASE
)


def _cite_request(values: Values) -> CiteRequest:
    text = values.text("reference")
    page = values.maybe_number("page")
    try:
        ranges = scripture.parse_reference(text)
    except scripture.ScriptureError as err:
        # not a reference as it stands: perhaps one and the page wanted (诗119 2)
        found = _PAGE.search(text)
        head = text[: found.start()] if found is not None else ""
        try:
            ranges = scripture.parse_reference(head) if head.strip() else []
        except scripture.ScriptureError:
            ranges = []
        if found is None or not ranges:
            raise UsageError.say(
                scripture_error_text(err, "zh"), scripture_error_text(err, "en")
            ) from None
        text, page = head.strip(), page or int(found.group(1) or found.group(2))
    refs = tuple((r.start.osis(), r.end.osis()) for r in ranges)
    return CiteRequest(text, refs, SCRIPT_NAMES.get(values.text("script")), page or 1)


def _suggest(names: Callable[[str, str], list[str]], shelves: Shelves) -> Suggest:
    """Suggestions from what the asker's chat reads (`names(typed, shelf)`)."""
    return lambda typed, actor: [(n[:100], n[:100]) for n in names(typed, shelves.of(actor))]


class ChatScripts(Protocol):
    """Where a chat's script setting comes from (`bot.chats.ChatSettings`)."""

    async def script(self, platform: str, chat_id: str) -> Script | None: ...


def scholar_commands(
    scholar: ScholarReplies, scripts: ChatScripts | None = None, shelves: Shelves | None = None
) -> tuple[Command[Any], ...]:
    """`/ask` and `/cite`, each reading the shared library and the asker's chat's shelf."""
    shelves = shelves or Shelves()

    async def chat_script(call: Call, typed: str) -> Script | None:
        """The chat's script, unless the user's own words are Traditional (which win, as they
        pick the reply language)."""
        if scripts is None or is_traditional(typed):
            return None
        return await scripts.script(call.actor.platform, call.actor.chat_id)

    async def ask(call: Call, request: AskRequest) -> Reply:
        chosen = await chat_script(call, request.question)
        if chosen is not None:
            request = dataclasses.replace(request, script=chosen)
        request = dataclasses.replace(request, shelf=shelves.of(call.actor))
        return await scholar.ask(call.actor, request, call.progress)

    async def cite(call: Call, request: CiteRequest) -> Reply:
        # The script option wins, then a reference written in Traditional, then the chat's
        # setting, then Simplified.
        if request.script is None:
            chosen = await chat_script(call, request.text)
            if chosen is not None:
                request = dataclasses.replace(request, script=chosen)
        request = dataclasses.replace(request, shelf=shelves.of(call.actor))
        return await scholar.cite(call.actor, request)

    return (
        Command(
            help=Help(
                "ask",
                # The menu line stays short; the usage line (in /help) shows the filters.
                "向职事语料提问，回答附出处",
                "Ask the ministry corpus; answers cite their sources",
                "/ask 神圣分赐与召会有什么关系？ · /ask 书:神的经纶 类型:outline 问题 · "
                "/ask 时代:1980s 问题",
                "/ask How is the divine dispensing related to the church? · "
                "/ask source:Dispensing type:message How does the church grow?",
            ),
            params=(
                Param("question", "问题", "question", rest=True, max_len=MAX_QUESTION),
                Param(
                    "source",
                    "书名",
                    "source",
                    required=False,
                    max_len=200,
                    suggest=_suggest(
                        lambda typed, shelf: scholar.source_suggestions(typed, shelf=shelf),
                        shelves,
                    ),
                ),
                Param("type", "类型", "type", "choice", required=False, choices=TYPE_CHOICES),
                Param(
                    "era",
                    "时代",
                    "era",
                    required=False,
                    max_len=100,
                    suggest=_suggest(
                        lambda typed, shelf: scholar.era_suggestions(typed, shelf=shelf), shelves
                    ),
                ),
            ),
            parse=_ask_request,
            run=ask,
        ),
        Command(
            help=Help(
                "cite",
                "查经文：经文、注解及阐述它的职事段落",
                "Look up a verse: text, footnotes and passages that expound it",
                "/cite 弗1:10 · /cite 诗119 2（第 2 页）",
                "/cite Eph. 1:10 · /cite Ps 119 2 (page 2)",
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
                Param(
                    "script",
                    "字体（简体/繁体）",
                    "script (simplified/traditional)",
                    "choice",
                    required=False,
                    choices=tuple(SCRIPT_NAMES),
                ),
                Param(
                    "page",
                    "页（长的经文分页显示）",
                    "page (of a long passage)",
                    "int",
                    required=False,
                ),
            ),
            parse=_cite_request,
            run=cite,
        ),
    )


def scholar_actions(scholar: ScholarReplies) -> tuple[Action[Any], ...]:
    """The 「下一页」 / 「上一页」 buttons of a long `/cite` (`bot.presenters.cite_pages`): the
    page in the script and references the button carries, in the presser's language."""

    async def page(call: Call, request: CiteRequest) -> Reply:
        return await scholar.cite(call.actor, request)

    return (Action(prefix=PAGE_PREFIX, decode=decode_page, run=page),)
