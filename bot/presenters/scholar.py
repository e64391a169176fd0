"""The scholar as the chat sees it: `/ask` and `/cite` run `retrieval.scholar.Scholar`, whose
typed results (`Answer`, `CiteResult`, `Refusal`) are worded here as `Reply`s.

`ScholarPresenter` is what the commands call (`bot.commands.scholar.Scholar`); given `pictures`,
an answer that showed a knowledge-graph path also carries a picture of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from bot.actor import Actor
from bot.i18n import catalog
from bot.presenters.answer import answer_reply
from bot.reply import Attachment, Block, BlockKind, Progress, Reply
from retrieval import scripture
from retrieval.answer import Answer
from retrieval.i18n import Lang
from retrieval.requests import AskRequest, CiteRequest
from retrieval.scholar import (
    MAX_VERSES,
    CitedText,
    CiteResult,
    Refusal,
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


def refusal_reply(refusal: Refusal) -> Reply:
    lang = refusal.lang
    if refusal.reason in ("unknown_source", "unknown_era"):
        key = refusal.reason.removeprefix("unknown_")
        text = unknown_filter_message(key, refusal.value, refusal.known, lang)
    else:
        text = T(lang, refusal.reason, ref=refusal.value)
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
    if result.requested > MAX_VERSES:
        blocks.append(
            Block(T(lang, "verses_truncated", n=result.requested, shown=MAX_VERSES), "note")
        )
    return blocks


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
    blocks += _section("footnotes", result.footnotes, "item", lang)
    blocks += _section("related_notes", result.related_notes, "item", lang)
    blocks += _section("passages", result.passages, "quote", lang)
    if not (result.passages or result.footnotes or result.related_notes):
        blocks.append(Block(T(lang, "no_passages"), "note"))
    if result.concepts:
        blocks.append(Block(T(lang, "concepts", concepts=" · ".join(result.concepts)), "note"))
    return Reply(blocks=tuple(blocks), lang=lang)


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
        answer = await self.scholar.ask(actor.lang, request, progress)
        if isinstance(answer, Refusal):
            return refusal_reply(answer)
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
        result = await self.scholar.cite(actor.lang, request)
        return refusal_reply(result) if isinstance(result, Refusal) else cite_reply(result)

    def source_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        return self.scholar.source_suggestions(typed, limit, shelf=shelf)

    def era_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        return self.scholar.era_suggestions(typed, limit, shelf=shelf)
