"""`/graph 神圣分赐`: a concept's neighbourhood as a picture plus a short text list, and the
picture of the paths behind an answer (`/ask`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.reply import Attachment, Block, Reply
from retrieval.graph.core import KnowledgeGraph
from retrieval.graph.draw import DrawEdge, DrawNode, draw_png, source_note
from retrieval.graph.linking import fold, term_key
from retrieval.graph.model import RELATION_INFO
from retrieval.graph.storage import GraphEdge
from retrieval.i18n import Lang
from retrieval.types import GraphPath

NEIGHBOURS = 16  # nodes around the centre in a picture
LISTED = 12  # relations in the text list
# A name that is both a person and a scripture reference (撒母耳, 约翰) means the person.
KIND_RANK = {"concept": 0, "topic": 1, "person": 2, "scripture": 3, "book": 4}

_TEXT = {
    "heading": ("「{label}」在知识图谱中的关系", "Relations of “{label}” in the knowledge graph"),
    "more": (
        "…… 另有 {n} 条关系（图中显示前 {shown} 个相邻节点）",
        "… {n} more relations (the picture shows {shown} neighbours)",
    ),
    "alone": (
        "「{label}」在图谱中还没有任何关系。",
        "“{label}” has no relations in the graph yet.",
    ),
    "unknown": ("知识图谱中没有「{text}」。", "The knowledge graph has no “{text}”."),
    "did_you_mean": ("您是否要找：{names}", "Did you mean: {names}"),
    "hint": ("试试：/graph 神圣分赐", "Try: /graph 神圣分赐"),
    "paths": ("知识图谱路径", "Knowledge-graph paths"),
}


def _t(key: str, lang: Lang, **fields: object) -> str:
    zh, en = _TEXT[key]
    return (en if lang == "en" else zh).format(**fields)


class GraphViewer:
    """Draws from the live graph; drawing runs in a worker thread."""

    def __init__(self, graph: KnowledgeGraph, *, neighbours: int = NEIGHBOURS) -> None:
        self._graph = graph
        self._neighbours = neighbours

    def find(self, text: str) -> str | None:
        """The node a user means: what the text links to, concepts first."""
        linked = self._graph.link(text)
        if not linked:
            return None
        return min(linked, key=lambda n: KIND_RANK.get(self._graph.node_kind(n) or "", 9))

    def similar(self, text: str, limit: int = 5) -> list[str]:
        """Names that contain what was typed (for "did you mean")."""
        key = term_key(text)
        if not key:
            return []
        found = sorted(
            {t for t in self._graph.terms() if key in fold(t) and not t.isascii()},
            key=lambda t: (len(t), t),
        )
        return found[:limit]

    async def show(self, text: str, lang: Lang) -> Reply:
        node = self.find(text)
        if node is None:
            blocks = [Block(_t("unknown", lang, text=text))]
            names = self.similar(text)
            blocks.append(
                Block(
                    _t("did_you_mean", lang, names="、".join(names)) if names else _t("hint", lang),
                    "note",
                )
            )
            return Reply(lang=lang, blocks=tuple(blocks), is_error=True)
        label = self._graph.label(node, lang)
        ranked = self._ranked_edges(node)
        if not ranked:
            return Reply.text(_t("alone", lang, label=label), lang=lang)
        nodes, edges = self._neighbourhood(node, ranked, lang)
        lines = [self._line(e, lang) for e in ranked[:LISTED]]
        blocks = [Block(_t("heading", lang, label=label), "heading")]
        blocks += [Block(line, "item") for line in lines]
        if len(ranked) > LISTED:
            blocks.append(
                Block(_t("more", lang, n=len(ranked) - LISTED, shown=len(nodes) - 1), "note")
            )
        png = await asyncio.to_thread(draw_png, nodes, edges, title=label, lang=lang)
        return Reply(
            lang=lang,
            blocks=tuple(blocks),
            attachments=(Attachment("graph.png", png, "image/png"),),
        )

    async def picture(self, paths: Sequence[GraphPath], lang: Lang) -> Attachment | None:
        """The picture of an answer's graph paths (None when there are none)."""
        paths = [p for p in paths if len(p.nodes) >= 2]
        if not paths:
            return None
        labels = {
            n: (p.labels_en if lang == "en" else p.labels)[i]
            for p in paths
            for i, n in enumerate(p.nodes)
        }
        kinds = {n: self._graph.node_kind(n) or "concept" for n in labels}
        nodes = [DrawNode(n, labels[n], kinds[n]) for n in labels]
        edges: dict[tuple[str, str, str], DrawEdge] = {}
        for p in paths:
            for i, step in enumerate(p.steps):
                a, b = p.nodes[i], p.nodes[i + 1]
                src, dst = (a, b) if step.forward else (b, a)
                name = step.relation_en if lang == "en" else step.relation
                edges[(src, dst, step.relation)] = DrawEdge(src, dst, name, step.sources)
        png = await asyncio.to_thread(
            draw_png, nodes, list(edges.values()), title=_t("paths", lang), lang=lang
        )
        return Attachment("graph-path.png", png, "image/png")

    # ---- helpers ------------------------------------------------------------------------------

    def _ranked_edges(self, node: str) -> list[tuple[str, str, str]]:
        """The node's edges, strongest relation first, then the closer kinds of neighbour."""
        found = self._graph.relations(node)

        def strength(edge: GraphEdge) -> tuple[float, int, str, str]:
            info = RELATION_INFO[edge.relation]
            other = edge.dst if edge.src == node else edge.src
            w = (info.forward if edge.src == node else info.backward) * edge.weight
            kind = KIND_RANK.get(self._graph.node_kind(other) or "", 9)
            return (-w, kind, other, edge.relation)

        return [(e.src, e.dst, e.relation) for e in sorted(found, key=strength)]

    def _neighbourhood(
        self, node: str, ranked: list[tuple[str, str, str]], lang: Lang
    ) -> tuple[list[DrawNode], list[DrawEdge]]:
        chosen: dict[str, None] = {node: None}
        for src, dst, _ in ranked:
            for end in (src, dst):
                if len(chosen) <= self._neighbours:
                    chosen.setdefault(end, None)
        nodes = [
            DrawNode(n, self._graph.label(n, lang), self._graph.node_kind(n) or "", n == node)
            for n in chosen
        ]
        edges = [
            DrawEdge(src, dst, self._relation(rel, lang), self._graph.edge_sources(src, dst, rel))
            for src, dst, rel in ranked
            if src in chosen and dst in chosen
        ]
        return nodes, edges

    def _relation(self, relation: str, lang: Lang) -> str:
        return RELATION_INFO[relation].en if lang == "en" else relation

    def _line(self, edge: tuple[str, str, str], lang: Lang) -> str:
        src, dst, rel = edge
        info = RELATION_INFO[rel]
        arrow = (
            f"—{self._relation(rel, lang)}—" if info.symmetric else f"—{self._relation(rel, lang)}→"
        )
        note = source_note(self._graph.edge_sources(src, dst, rel), lang)
        text = f"{self._graph.label(src, lang)} {arrow} {self._graph.label(dst, lang)}"
        return f"{text}〔{note}〕" if note else text
