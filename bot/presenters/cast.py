"""`/novel characters`, `/novel recap` and `/novel map` worded (and drawn) for the chat.

The map is drawn by the same renderer as `/graph` (`retrieval.graph.draw.draw_png`):
characters are nodes coloured by their standing, edges are the blueprint's relationships and
the chapters two characters share (the more chapters, the thicker the line).
"""

from __future__ import annotations

import asyncio

from bot.reply import Attachment, Block, Reply
from novel.cast import CastMap, CastMember, CastView, MapEdge, Recap, Standing
from retrieval.graph.draw import DrawEdge, DrawNode, draw_png
from retrieval.i18n import Catalog, Lang

QUOTE_CHARS = 60
MAP_LISTED = 12  # relations listed under the picture

COLOURS: dict[Standing, str] = {
    "alive": "#9dd866",
    "hurt": "#f6c85f",
    "missing": "#8dd3f5",
    "dead": "#b4b4b4",
}

T = Catalog(
    {
        "cast_heading": (
            "《{title}》人物（截至第 {n} 章）",
            "Characters of “{title}” (after chapter {n})",
        ),
        "cast_heading_none": (
            "《{title}》人物（还没有章节，只有世界设定）",
            "Characters of “{title}” (no chapters yet: the blueprint only)",
        ),
        "cast_empty": (
            "还没有任何人物：用 /novel blueprint 设定人物，或写出第一章。",
            "No characters yet: set some with /novel blueprint, or write the first chapter.",
        ),
        "aliases": ("（又名：{names}）", " (also: {names})"),
        "standing_alive": ("在世", "alive"),
        "standing_dead": ("已死亡", "dead"),
        "standing_hurt": ("受伤", "hurt"),
        "standing_missing": ("失踪", "missing"),
        "status_marked": (
            "状态：{standing}（第 {n} 章）「{quote}」",
            "Status: {standing} (chapter {n}) “{quote}”",
        ),
        "status_blueprint": (
            "状态：{standing}（设定：{status}）",
            "Status: {standing} (blueprint: {status})",
        ),
        "status_unmarked": ("状态：{standing}", "Status: {standing}"),
        "seen": (
            "最后出现：{place}（第 {n} 章）「{quote}」",
            "Last seen: {place} (chapter {n}) “{quote}”",
        ),
        "home": ("所在（设定）：{place}", "Whereabouts (blueprint): {place}"),
        "not_placed": ("还没有章节写到其所在", "No chapter has placed them yet"),
        "introduced": (
            "第 {n} 章出场，不在世界设定中",
            "First named in chapter {n}; not in the blueprint",
        ),
        "appearances": ("出现于 {n} 章", "Named in {n} chapter(s)"),
        "recap_none": (
            "还没有任何章节，没有可回顾的内容。",
            "There are no chapters yet: nothing to recap.",
        ),
        "recap_heading": (
            "前情提要：第 {a}–{b} 章",
            "Previously: chapters {a}–{b}",
        ),
        "recap_heading_one": ("前情提要：第 {a} 章", "Previously: chapter {a}"),
        "recap_fewer": (
            "本书目前只有 {total} 章，全部列出。",
            "The novel has only {total} chapter(s); all are shown.",
        ),
        "recap_chapter": ("第 {n} 章《{title}》", "Chapter {n}: {title}"),
        "recap_extractive": (
            "摘自各章摘要，没有使用模型。",
            "Taken from the chapter summaries (no model).",
        ),
        "recap_model": (
            "由模型根据各章摘要撰写，其中的人名都已与故事状态核对。",
            "Written by the model from the chapter summaries; every name in it was checked "
            "against the story so far.",
        ),
        "recap_model_failed": (
            "模型这次没有给出可用的提要，改为摘自各章摘要。",
            "The model gave no usable recap this time; taken from the chapter summaries instead.",
        ),
        "recap_unknown": (
            "第 {n} 章：模型写到了故事中没有的人物（{names}），这一章改用摘要原文。",
            "Chapter {n}: the model named someone the story does not know ({names}); "
            "that chapter's summary is shown instead.",
        ),
        "map_title": ("《{title}》人物关系图", "Cast of “{title}”"),
        "map_heading": (
            "《{title}》人物关系图（截至第 {n} 章，{count} 人）",
            "Cast map of “{title}” (after chapter {n}, {count} characters)",
        ),
        "map_legend": (
            "颜色：绿＝在世，黄＝受伤，蓝＝失踪，灰＝已死亡；线越粗，同场的章节越多。",
            "Colours: green = alive, amber = hurt, blue = missing, grey = dead; "
            "the thicker a line, the more chapters they share.",
        ),
        "map_member": ("{name}：{standing}", "{name}: {standing}"),
        "list_sep": ("、", "; "),
        "map_edge": ("{a} — {b}：{label}", "{a} — {b}: {label}"),
        "map_shared": ("同场 {n} 章", "{n} shared ch."),
        "map_more_edges": ("……另有 {n} 条关系见图", "… {n} more in the picture"),
        "map_left_out": (
            "图中只画出最常出现的 {shown} 人，另有 {n} 人未画出。",
            "The picture shows the {shown} most present characters; {n} more are left out.",
        ),
        "map_empty": (
            "还没有任何人物可画：用 /novel blueprint 设定人物，或写出第一章。",
            "No characters to draw yet: set some with /novel blueprint, or write the first "
            "chapter.",
        ),
    }
)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _standing(lang: Lang, standing: Standing) -> str:
    return T(lang, f"standing_{standing}")


def _status_line(m: CastMember, lang: Lang) -> str:
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
