"""The scholar as the chat sees it: `/ask` and `/cite` run `retrieval.scholar.Scholar`, whose
typed results (`Answer`, `CiteResult`) and its refusals (`kernel.refusal.Refused`) are worded
here as `Reply`s.

`ScholarPresenter` is what the commands call (`bot.commands.scholar.ScholarReplies`); given `pictures`,
an answer that showed a knowledge-graph path also carries a picture of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from bot.actor import Actor
from bot.i18n import catalog
from bot.presenters.answer import answer_reply
from bot.presenters.cite_pages import encode_page, reference_text
from bot.reply import Attachment, Block, BlockKind, Button, Progress, Reply
from kernel.i18n import Lang
from kernel.refusal import Refused
from retrieval import scripture
from retrieval.answer import Answer
from retrieval.requests import AskRequest, CiteRequest
from retrieval.scholar import (
    CitedText,
    CiteResult,
    Scholar,
    UnknownFilter,
    VerseLine,
)
from retrieval.types import GraphPath

T = catalog("scholar")

VERSION_NAMES = {"cuv1919": ("和合本（1919）", "Chinese Union Version (1919)")}
KNOWN_SHOWN = 8  # names listed when a filter names nothing the corpus holds


def version_name(version: str, lang: Lang) -> str:
    zh, en = VERSION_NAMES.get(version, (version, version))
    return en if lang == "en" else zh


def unknown_filter_message(key: str, value: str, known: Sequence[str], lang: Lang) -> str:
    """An /ask filter names a source or era the corpus does not hold: say what it holds."""
    shown = ("、" if lang == "zh" else ", ").join(known[:KNOWN_SHOWN])
    more = "…" if len(known) > KNOWN_SHOWN else ""
    return T(lang, f"unknown_{key}", value=value[:60], known=shown + more)


def filter_error(err: UnknownFilter, lang: Lang) -> str:
    return unknown_filter_message(err.key, err.value, err.known, lang)


def refusal_reply(refused: Refused, lang: Lang) -> Reply:
    """The scholar's refusal (`retrieval.scholar.RefusalReason`) in `lang`."""
    value = str(refused.fields.get("value", ""))
    if refused.reason in ("unknown_source", "unknown_era", "unknown_match"):
        known = refused.fields.get("known", ())
        held = [str(k) for k in known] if isinstance(known, tuple | list) else []
        text = unknown_filter_message(refused.reason.removeprefix("unknown_"), value, held, lang)
    elif refused.reason == "no_page":
        known = refused.fields.get("known", ())
        pages = known[0] if isinstance(known, tuple | list) and known else ""
        text = T(lang, "no_page", page=value, pages=pages)
    else:
        text = T(lang, refused.reason, ref=value)
    return Reply.error(text, lang=lang)


def _verse_blocks(result: CiteResult) -> list[Block]:
    """The verse block — its version named — or why there is none."""
    lang = result.lang
    if not result.has_bible:
        return [Block(T(lang, "no_bible"), "note")]
    if not result.verses:
        return [Block(T(lang, "verse_missing"), "note")]
    versions = list(dict.fromkeys(v.version for v in result.verses))
    blocks = [
        Block("\n".join(_verse_line(v, lang, len(versions) > 1) for v in result.verses), "quote")
    ]
    if len(versions) == 1:
        blocks.append(Block(version_name(versions[0], lang), "note"))
    return blocks


def _page_blocks(result: CiteResult) -> tuple[list[Block], tuple[Button, ...]]:
    """Where this page is in a long passage, how to read on (the command, which works on
    every platform, and buttons), or that it is the end."""
    if result.pages == 1:
        return [], ()
    lang = result.lang
    first = result.verses[0] if result.verses else None
    last = result.verses[-1] if result.verses else None
    shown = ""
    if first is not None and last is not None:
        end = f"{last.verse}" if last.chapter == first.chapter else f"{last.chapter}:{last.verse}"
        shown = f"{first.chapter}:{first.verse}–{end}"
    where = T(lang, "page", page=result.page, pages=result.pages, n=result.requested, shown=shown)
    ref = reference_text(result.ranges, lang)
    buttons = []
    if result.page > 1:
        action = encode_page(result.ranges, result.page - 1, result.script)
        buttons.append(Button(T(lang, "previous_page"), action))
    if result.page < result.pages:
        command = f"/cite {ref} {result.page + 1}"
        blocks = [Block(where + T(lang, "page_next", command=command), "note")]
        action = encode_page(result.ranges, result.page + 1, result.script)
        buttons.append(Button(T(lang, "next_page"), action))
    else:
        blocks = [Block(where + T(lang, "page_end", command=f"/cite {ref} 1"), "note")]
    return blocks, tuple(buttons)


def _verse_line(verse: VerseLine, lang: Lang, tagged: bool) -> str:
    tag = f"（{version_name(verse.version, lang)}）" if tagged else ""
    return f"{verse.chapter}:{verse.verse} {verse.text}{tag}"


def _section(key: str, items: Sequence[CitedText], kind: BlockKind, lang: Lang) -> list[Block]:
    if not items:
        return []
    heading = Block(T(lang, key), "heading")
    return [heading, *(Block(f"{c.text}【{c.label.text(lang)}】", kind) for c in items)]


def cite_reply(result: CiteResult) -> Reply:
    """The reference, the verse, its notes, related notes, the passages citing it, concepts."""
    lang = result.lang
    render = scripture.render_en if lang == "en" else scripture.render_zh
    sep = "；" if lang == "zh" else "; "
    blocks = [Block(sep.join(render(r) for r in result.ranges), "heading")]
    blocks += _verse_blocks(result)
    paging, buttons = _page_blocks(result)
    blocks += paging
    blocks += _section("footnotes", result.footnotes, "item", lang)
    blocks += _section("related_notes", result.related_notes, "item", lang)
    blocks += _section("passages", result.passages, "quote", lang)
    if result.page == 1 and not (result.passages or result.footnotes or result.related_notes):
        blocks.append(Block(T(lang, "no_passages"), "note"))
    if result.concepts:
        blocks.append(Block(T(lang, "concepts", concepts=" · ".join(result.concepts)), "note"))
    return Reply(blocks=tuple(blocks), buttons=buttons, lang=lang)


class PathPictures(Protocol):
    """Draws the graph paths an answer used (`retrieval.graph.view.GraphViewer`)."""

    async def picture(self, paths: Sequence[GraphPath], lang: Lang) -> Attachment | None: ...


class ScholarPresenter:
    """`/ask` and `/cite` for the chat: the scholar's results as replies. `pictures`: attach a
    picture of the knowledge-graph path an answer shows."""

    def __init__(self, scholar: Scholar, *, pictures: PathPictures | None = None) -> None:
        self.scholar = scholar
        self._pictures = pictures

    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply:
        try:
            answer = await self.scholar.ask(actor.lang, request, progress)
        except Refused as refused:
            return refusal_reply(refused, actor.lang)
        return await self._with_picture(answer, answer_reply(answer))

    async def _with_picture(self, answer: Answer, reply: Reply) -> Reply:
        if self._pictures is None or not (answer.addressed and answer.graph_helped):
            return reply
        # The answer showed a knowledge-graph path: attach its picture too.
        picture = await self._pictures.picture(answer.graph_paths, answer.lang)
        if picture is None:
            return reply
        return dataclasses.replace(reply, attachments=(*reply.attachments, picture))

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply:
        try:
            return cite_reply(await self.scholar.cite(actor.lang, request))
        except Refused as refused:
            return refusal_reply(refused, actor.lang)

    def source_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        return self.scholar.source_suggestions(typed, limit, shelf=shelf)

    def era_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        return self.scholar.era_suggestions(typed, limit, shelf=shelf)
