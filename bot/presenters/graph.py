"""`/graph` and the path pictures of `/ask` worded for the chat: `retrieval.graph.view`'s
typed results → `Reply`s and attachments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, assert_never

from bot.i18n import catalog
from bot.reply import Attachment, Block, Reply
from kernel.i18n import Lang
from retrieval.graph.draw import source_note
from retrieval.graph.view import GraphLookup, NodeView, NotInGraph, PhraseView, RelationView
from retrieval.types import GraphPath

T = catalog("graph")


def graph_reply(found: GraphLookup, lang: Lang) -> Reply:
    """The reply to `/graph`: the relations listed with the picture, or what it might mean."""
    if isinstance(found, NotInGraph):
        return _not_in_graph(found, lang)
    if isinstance(found, NodeView):
        return _node_reply(found, lang)
    if isinstance(found, PhraseView):
        return _phrase_reply(found, lang)
    assert_never(found)


def _phrase_reply(view: PhraseView, lang: Lang) -> Reply:
    """A phrase the corpus says but the graph has no node for: where it is said, and the
    concepts around it there."""
    sep = "、" if lang == "zh" else ", "
    documents = sep.join(f"《{d}》" if lang == "zh" else d for d in view.documents[:4])
    more = "…" if len(view.documents) > 4 else ""
    blocks = [
        Block(T(lang, "phrase_heading", text=view.text), "heading"),
        Block(
            T(
                lang,
                "phrase_said",
                text=view.text,
                n=len(view.documents),
                passages=view.passages,
                documents=documents + more,
            )
        ),
    ]
    blocks += [Block(_line(r, lang), "item") for r in view.relations]
    if view.more:
        blocks.append(Block(T(lang, "phrase_more", n=view.more), "note"))
    attachments = (Attachment("graph.png", view.png, "image/png"),) if view.png else ()
    return Reply(lang=lang, blocks=tuple(blocks), attachments=attachments)


def _not_in_graph(found: NotInGraph, lang: Lang) -> Reply:
    names = "、".join(found.similar)
    hint = T(lang, "did_you_mean", names=names) if names else T(lang, "hint")
    blocks = (Block(T(lang, "unknown", text=found.text)), Block(hint, "note"))
    return Reply(lang=lang, blocks=blocks, is_error=True)


def _node_reply(view: NodeView, lang: Lang) -> Reply:
    if view.png is None:
        return Reply.text(T(lang, "alone", label=view.label), lang=lang)
    blocks = [Block(T(lang, "heading", label=view.label), "heading")]
    blocks += [Block(_line(r, lang), "item") for r in view.relations]
    if view.more:
        blocks.append(Block(T(lang, "more", n=view.more, shown=view.drawn), "note"))
    return Reply(
        lang=lang,
        blocks=tuple(blocks),
        attachments=(Attachment("graph.png", view.png, "image/png"),),
    )


def _line(r: RelationView, lang: Lang) -> str:
    arrow = f"—{r.name}—" if r.symmetric else f"—{r.name}→"
    note = source_note(r.sources, lang)
    text = f"{r.src_label} {arrow} {r.dst_label}"
    return f"{text}〔{note}〕" if note else text


class PathDrawer(Protocol):
    """Draws graph paths (`retrieval.graph.view.GraphViewer`)."""

    async def path_png(
        self, paths: Sequence[GraphPath], lang: Lang, title: str
    ) -> bytes | None: ...


class PathPictures:
    """The picture of the graph paths behind an answer, as an attachment (the scholar's
    `PathPictures`)."""

    def __init__(self, drawer: PathDrawer) -> None:
        self._drawer = drawer

    async def picture(self, paths: Sequence[GraphPath], lang: Lang) -> Attachment | None:
        png = await self._drawer.path_png(paths, lang, T(lang, "paths"))
        return Attachment("graph-path.png", png, "image/png") if png is not None else None
