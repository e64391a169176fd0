"""`/graph 神圣分赐`: a concept's neighbourhood (its ranked relations and a picture), and the
picture of the paths behind an answer (`/ask`), as typed results; `bot.presenters.graph`
words them for the chat.

A text that names no node but that passages of the corpus say (神的居所: once in each of six
documents, never a term of one) is not "not in the graph": `show` answers with a
`PhraseView` — the documents that say it and the concepts those passages name, drawn around
it — when the viewer is given a way to find those passages (`PassageFinder`)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from kernel.i18n import Lang
from retrieval.graph.draw import DrawEdge, DrawNode, draw_png
from retrieval.graph.linking import fold, term_key
from retrieval.graph.model import RELATION_INFO, Edge
from retrieval.graph.queries import GraphQueries
from retrieval.library import SHARED_ONLY, Reading
from retrieval.types import Chunk, GraphPath

NEIGHBOURS = 16  # nodes around the centre in a picture
PHRASE_PASSAGES = 40  # passages read for a phrase that names no node
LISTED = 12  # relations in the text list
# A name that is both a person and a scripture reference (撒母耳, 约翰) means the person.
KIND_RANK = {"concept": 0, "topic": 1, "person": 2, "scripture": 3, "book": 4}

EdgeKey = tuple[str, str, str]  # (source, target, relation)


@dataclass(frozen=True, slots=True)
class RelationView:
    """One relation of the node, in the reply's language."""

    src: str
    dst: str
    relation: str  # the graph's name (a key of `RELATION_INFO`)
    src_label: str
    dst_label: str
    name: str  # the relation's name in the reply's language
    symmetric: bool
    sources: tuple[str, ...]  # "seed" or the titles of the documents behind the edge


@dataclass(frozen=True, slots=True)
class NodeView:
    """The node a text named: its strongest relations (at most `LISTED`), how many more it
    has, and its neighbourhood drawn (None when it has no relations)."""

    node: str
    label: str
    relations: tuple[RelationView, ...]
    more: int  # relations beyond those listed
    drawn: int  # neighbours in the picture
    png: bytes | None


@dataclass(frozen=True, slots=True)
class NotInGraph:
    """The text names no node; `similar`: names that contain it (for "did you mean")."""

    text: str
    similar: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PhraseView:
    """The text names no node, but passages say it: the documents that do (titles), how many
    passages, the concepts those passages name as relations of the phrase (most passages
    first, at most `LISTED`; `more` beyond), and the picture of them around it."""

    text: str
    documents: tuple[str, ...]
    passages: int
    relations: tuple[RelationView, ...]
    more: int
    png: bytes | None


GraphLookup = NodeView | PhraseView | NotInGraph
# Passages whose text says a phrase (any script, any width), best first, in what a reader reads.
PassageFinder = Callable[[str, int, Reading], Awaitable[Sequence[Chunk]]]


# The graph as a reader sees it who must not see these documents (`KnowledgeGraph.seen_without`).
GraphViews = Callable[[frozenset[str]], Awaitable[GraphQueries]]


class GraphViewer:
    """Reads the live graph (`KnowledgeGraph.query`); drawing runs in a worker thread.
    `passages`: the passages that say a phrase no node names; `views`: the graph as each
    reader sees it, for a `show` that hides documents."""

    def __init__(
        self,
        graph: GraphQueries,
        *,
        neighbours: int = NEIGHBOURS,
        passages: PassageFinder | None = None,
        views: GraphViews | None = None,
    ) -> None:
        self._graph = graph
        self._neighbours = neighbours
        self._passages = passages
        self._views = views

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

    async def show(self, text: str, lang: Lang, *, reading: Reading = SHARED_ONLY) -> GraphLookup:
        """The node `text` names with its relations and picture, or what it might have meant,
        as `reading`'s reader sees the library: the graph without the documents it must not
        see, phrases found in the namespaces it reads."""
        if reading.hidden and self._views is not None:
            seen = GraphViewer(
                await self._views(reading.hidden),
                neighbours=self._neighbours,
                passages=self._passages,
            )
            return await seen.show(text, lang, reading=replace(reading, hidden=frozenset()))
        node = self.find(text)
        if node is None:
            phrase = await self._phrase(text, lang, reading)
            return phrase or NotInGraph(text, tuple(self.similar(text)))
        label = self._graph.label(node, lang)
        ranked = self._ranked_edges(node)
        if not ranked:
            # A name the graph holds with no relation yet (波阿斯, named in two chapters of
            # three): where the corpus says it, as for a phrase the graph has no node for.
            for name in dict.fromkeys((text, self._graph.label(node, "zh"), label)):
                said = await self._phrase(name, lang, reading)
                if said is not None:
                    return said
            return NodeView(node, label, (), 0, 0, None)
        nodes, edges = self._neighbourhood(node, ranked, lang)
        png = await asyncio.to_thread(draw_png, nodes, edges, title=label, lang=lang)
        return NodeView(
            node,
            label,
            tuple(self._relation_view(e, lang) for e in ranked[:LISTED]),
            max(0, len(ranked) - LISTED),
            len(nodes) - 1,
            png,
        )

    async def path_png(self, paths: Sequence[GraphPath], lang: Lang, title: str) -> bytes | None:
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
        edges: dict[EdgeKey, DrawEdge] = {}
        for p in paths:
            for i, step in enumerate(p.steps):
                a, b = p.nodes[i], p.nodes[i + 1]
                src, dst = (a, b) if step.forward else (b, a)
                name = step.relation_en if lang == "en" else step.relation
                edges[(src, dst, step.relation)] = DrawEdge(src, dst, name, step.sources)
        return await asyncio.to_thread(
            draw_png, nodes, list(edges.values()), title=title, lang=lang
        )

    async def _phrase(self, text: str, lang: Lang, reading: Reading) -> PhraseView | None:
        """The passages `reading`'s reader sees that say `text`, and the concepts they name
        (None: no passage says it)."""
        key = term_key(text)
        if self._passages is None or len(key) < 2:
            return None
        found = await self._passages(text, PHRASE_PASSAGES, reading)
        said = [c for c in found if key in fold(c.text)]
        if not said:
            return None
        named: Counter[str] = Counter()
        sources: dict[str, list[str]] = {}
        for chunk in said:
            for node in dict.fromkeys(self._graph.link(chunk.text)):
                if self._graph.node_kind(node) in ("concept", "topic"):
                    named[node] += 1
                    sources.setdefault(node, []).append(chunk.source)
        ranked = sorted(named, key=lambda n: (-named[n], n))
        centre = f"phrase:{key}"
        relation = _relation("相关", lang)
        views = [
            RelationView(
                centre,
                n,
                "相关",
                text,
                self._graph.label(n, lang),
                relation,
                True,
                tuple(dict.fromkeys(sources[n])),
            )
            for n in ranked
        ]
        png = None
        if views:
            drawn = views[: self._neighbours]
            nodes = [DrawNode(centre, text, "concept", True)]
            nodes += [
                DrawNode(v.dst, v.dst_label, self._graph.node_kind(v.dst) or "") for v in drawn
            ]
            edges = [DrawEdge(centre, v.dst, relation, v.sources) for v in drawn]
            png = await asyncio.to_thread(draw_png, nodes, edges, title=text, lang=lang)
        return PhraseView(
            text,
            tuple(dict.fromkeys(c.source for c in said)),
            len(said),
            tuple(views[:LISTED]),
            max(0, len(views) - LISTED),
            png,
        )

    # ---- helpers ------------------------------------------------------------------------------

    def _ranked_edges(self, node: str) -> list[EdgeKey]:
        """The node's edges, strongest relation first, then the closer kinds of neighbour."""
        found = self._graph.relations(node)

        def strength(edge: Edge) -> tuple[float, int, str, str]:
            info = RELATION_INFO[edge.relation]
            other = edge.dst if edge.src == node else edge.src
            w = (info.forward if edge.src == node else info.backward) * edge.weight
            kind = KIND_RANK.get(self._graph.node_kind(other) or "", 9)
            return (-w, kind, other, edge.relation)

        return [(e.src, e.dst, e.relation) for e in sorted(found, key=strength)]

    def _neighbourhood(
        self, node: str, ranked: list[EdgeKey], lang: Lang
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
            DrawEdge(src, dst, _relation(rel, lang), self._graph.edge_sources(src, dst, rel))
            for src, dst, rel in ranked
            if src in chosen and dst in chosen
        ]
        return nodes, edges

    def _relation_view(self, edge: EdgeKey, lang: Lang) -> RelationView:
        src, dst, rel = edge
        return RelationView(
            src,
            dst,
            rel,
            self._graph.label(src, lang),
            self._graph.label(dst, lang),
            _relation(rel, lang),
            RELATION_INFO[rel].symmetric,
            self._graph.edge_sources(src, dst, rel),
        )


def _relation(relation: str, lang: Lang) -> str:
    return RELATION_INFO[relation].en if lang == "en" else relation
