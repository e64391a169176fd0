"""`/novel characters`, `/novel recap` and `/novel map` worded (and drawn) for the chat.

The map is drawn by the same renderer as `/graph` (`retrieval.graph.draw.draw_png`):
characters are nodes coloured by their standing, edges are the blueprint's relationships and
the chapters two characters share (the more chapters, the thicker the line).
"""

from __future__ import annotations

import asyncio

from bot.i18n import catalog
from bot.reply import Attachment, Block, Reply
from kernel.i18n import Lang
from novel.cast import CastMap, CastMember, CastView, MapEdge, Recap, Standing
from retrieval.graph.draw import DrawEdge, DrawNode, draw_png

QUOTE_CHARS = 60
MAP_LISTED = 12  # relations listed under the picture

COLOURS: dict[Standing, str] = {
    "alive": "#9dd866",
    "hurt": "#f6c85f",
    "missing": "#8dd3f5",
    "dead": "#b4b4b4",
}

T = catalog("cast")


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _standing(lang: Lang, standing: Standing) -> str:
    return T(lang, f"standing_{standing}")


def _status_line(m: CastMember, lang: Lang) -> str:
    if m.status is not None and not m.status.sentence:  # a model summary's report
        return T(
            lang, "status_summary", standing=_standing(lang, m.status.status), n=m.status.chapter
        )
    if m.status is not None:
        return T(
            lang,
            "status_marked",
            standing=_standing(lang, m.status.status),
            n=m.status.chapter,
            quote=_quote(m.status.sentence),
        )
    standing = _standing(lang, m.standing)
    if m.blueprint_status:
        return T(lang, "status_blueprint", standing=standing, status=m.blueprint_status)
    return T(lang, "status_unmarked", standing=standing)


def _place_line(m: CastMember, lang: Lang) -> str:
    if m.seen is not None:
        return T(lang, "seen", place=m.seen.place, n=m.seen.chapter, quote=_quote(m.seen.sentence))
    if m.home:
        return T(lang, "home", place=m.home)
    return T(lang, "not_placed")


def member_text(m: CastMember, lang: Lang) -> str:
    head = m.name
    if m.aliases:
        head += T(lang, "aliases", names="、".join(m.aliases))
    if m.role:
        head += f" — {m.role}"
    lines = [head, _status_line(m, lang), _place_line(m, lang)]
    if m.introduced is not None:
        lines.append(T(lang, "introduced", n=m.introduced))
    if m.appearances:
        lines.append(T(lang, "appearances", n=m.appearances))
    return "\n".join(lines)


def cast_reply(view: CastView, lang: Lang) -> Reply:
    if not view.members:
        return Reply.text(T(lang, "cast_empty"), lang=lang)
    heading = (
        T(lang, "cast_heading", title=view.title, n=view.chapters)
        if view.chapters
        else T(lang, "cast_heading_none", title=view.title)
    )
    blocks = [Block(heading, "heading")]
    blocks += [Block(member_text(m, lang), "item") for m in view.members]
    return Reply(blocks=tuple(blocks), lang=lang)


def recap_reply(recap: Recap, lang: Lang) -> Reply:
    if not recap.chapters:
        return Reply.text(T(lang, "recap_none"), lang=lang)
    first, last = recap.chapters[0].number, recap.chapters[-1].number
    heading = (
        T(lang, "recap_heading", a=first, b=last)
        if first != last
        else T(lang, "recap_heading_one", a=first)
    )
    blocks = [Block(heading, "heading")]
    for c in recap.chapters:
        body = "\n".join(f"· {line}" for line in c.lines)
        blocks.append(
            Block(T(lang, "recap_chapter", n=c.number, title=c.title) + "\n" + body, "item")
        )
    notes = [T(lang, f"recap_{recap.source}")]
    if recap.asked > recap.total:
        notes.append(T(lang, "recap_fewer", total=recap.total))
    notes += [
        T(lang, "recap_unknown", n=c.number, names="、".join(c.unknown))
        for c in recap.chapters
        if c.unknown
    ]
    blocks += [Block(n, "note") for n in notes]
    return Reply(blocks=tuple(blocks), lang=lang)


def _edge_label(e: MapEdge, lang: Lang) -> str:
    parts = [e.relation] if e.relation else []
    if e.shared:
        parts.append(T(lang, "map_shared", n=e.shared))
    return " · ".join(parts)


def _edge_line(e: MapEdge, lang: Lang) -> str:
    return T(lang, "map_edge", a=e.a, b=e.b, label=_edge_label(e, lang))


def map_drawing(cast: CastMap, lang: Lang) -> tuple[list[DrawNode], list[DrawEdge]]:
    """Nodes coloured by standing; lines thicker with each shared chapter (up to six)."""
    nodes = [DrawNode(m.name, m.name, "person", colour=COLOURS[m.standing]) for m in cast.members]
    edges = [
        DrawEdge(e.a, e.b, _edge_label(e, lang), width=1.0 + 0.6 * min(e.shared, 6))
        for e in cast.edges
    ]
    return nodes, edges


def map_picture(cast: CastMap, lang: Lang) -> bytes:
    """The PNG (CPU-bound: run it in a worker thread)."""
    nodes, edges = map_drawing(cast, lang)
    legend = [(_standing(lang, s), colour) for s, colour in COLOURS.items()]
    title = T(lang, "map_title", title=cast.title)
    return draw_png(nodes, edges, title=title, lang=lang, arrows=False, legend=legend)


async def map_reply(cast: CastMap, lang: Lang) -> Reply:
    if not cast.members:
        return Reply.text(T(lang, "map_empty"), lang=lang)
    heading = T(lang, "map_heading", title=cast.title, n=cast.chapters, count=len(cast.members))
    blocks = [Block(heading, "heading")]
    members = [
        T(lang, "map_member", name=m.name, standing=_standing(lang, m.standing))
        for m in cast.members
    ]
    blocks.append(Block(T(lang, "list_sep").join(members)))
    blocks += [Block(_edge_line(e, lang), "item") for e in cast.edges[:MAP_LISTED]]
    if len(cast.edges) > MAP_LISTED:
        blocks.append(Block(T(lang, "map_more_edges", n=len(cast.edges) - MAP_LISTED), "note"))
    if cast.left_out:
        blocks.append(
            Block(T(lang, "map_left_out", shown=len(cast.members), n=cast.left_out), "note")
        )
    blocks.append(Block(T(lang, "map_legend"), "note"))
    png = await asyncio.to_thread(map_picture, cast, lang)
    return Reply(
        blocks=tuple(blocks),
        attachments=(Attachment("cast-map.png", png, "image/png"),),
        lang=lang,
    )
