"""The graph as one reader sees it: without what only hidden documents contributed.

A document on another reader's shelf, or in the trash, keeps its rows (a restore brings its
contribution back exactly as it was, in its place), but no reader may see what only such
documents grew: a node whose every contributing document is hidden, an edge whose every
contributing document is hidden, and those documents among an edge's sources. What a visible
document contributes too stays.

`Hidden` names what to leave out (`KnowledgeGraph.hidden` finds it from the rows, for the few
documents hidden); `HidingAdjacency` and `hiding_reads` are the merged graph without it, read
through the same interface the linker and the walker read (`storage.GraphReads`), so search,
/graph and /cite read a reader's graph with the code they always run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from retrieval.graph.linking import Linker, TermIndex
from retrieval.graph.model import Edge, Node
from retrieval.graph.storage import Adjacency, EdgeKey, GraphReads, Neighbours


@dataclass(frozen=True, slots=True)
class Hidden:
    """What a reader must not see: nodes and edges only hidden documents contribute, and the
    hidden documents (never named as an edge's source)."""

    nodes: frozenset[str] = frozenset()
    edges: frozenset[EdgeKey] = frozenset()
    docs: frozenset[str] = frozenset()

    @property
    def touched(self) -> frozenset[str]:
        """The nodes whose neighbours may differ from the merged graph's."""
        ends = {n for src, dst, _ in self.edges for n in (src, dst)}
        return frozenset(ends | self.nodes)


class HidingAdjacency(Adjacency):
    """`base` without the hidden nodes and edges. Reads only: nothing writes to a view (the
    graph's writes go to `base`, and a view is built again for the graph's next state)."""

    def __init__(self, base: Adjacency, hidden: Hidden) -> None:
        super().__init__()
        self._base = base
        self._hidden = hidden
        self._touched = hidden.touched | self._neighbours_of(base, hidden.nodes)
        self.version = base.version

    @staticmethod
    def _neighbours_of(base: Adjacency, nodes: frozenset[str]) -> frozenset[str]:
        out: set[str] = set()
        for node in nodes:
            out.update(base.successors(node))
            out.update(base.predecessors(node))
        return frozenset(out)

    def _visible(self, neighbours: Neighbours, node: str, forward: bool) -> Neighbours:
        hidden = self._hidden
        kept: dict[str, dict[str, float]] = {}
        for other, by_relation in neighbours.items():
            if other in hidden.nodes:
                continue
            rels = {
                rel: w
                for rel, w in by_relation.items()
                if ((node, other, rel) if forward else (other, node, rel)) not in hidden.edges
            }
            if rels:
                kept[other] = rels
        return kept

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._base and node_id not in self._hidden.nodes

    def node(self, node_id: str) -> Node | None:
        return None if node_id in self._hidden.nodes else self._base.node(node_id)

    def nodes(self) -> Iterator[tuple[str, Node]]:
        return ((n, d) for n, d in self._base.nodes() if n not in self._hidden.nodes)

    def successors(self, node_id: str) -> Neighbours:
        if node_id in self._hidden.nodes:
            return {}
        found = self._base.successors(node_id)
        return self._visible(found, node_id, True) if node_id in self._touched else found

    def predecessors(self, node_id: str) -> Neighbours:
        if node_id in self._hidden.nodes:
            return {}
        found = self._base.predecessors(node_id)
        return self._visible(found, node_id, False) if node_id in self._touched else found

    def degree(self, node_id: str) -> int:
        if node_id not in self._touched:
            return self._base.degree(node_id)
        out = sum(len(r) for r in self.successors(node_id).values())
        return out + sum(len(r) for r in self.predecessors(node_id).values())

    def has_edge(self, src: str, dst: str, relation: str) -> bool:
        if src in self._hidden.nodes or dst in self._hidden.nodes:
            return False
        return (src, dst, relation) not in self._hidden.edges and self._base.has_edge(
            src, dst, relation
        )

    def edges(self) -> Iterator[Edge]:
        return (e for e in self._base.edges() if self.has_edge(e.src, e.dst, e.relation))

    @property
    def node_count(self) -> int:
        return sum(1 for _ in self.nodes())

    @property
    def edge_count(self) -> int:
        return sum(1 for _ in self.edges())

    def export(self) -> dict[str, object]:
        raise TypeError("a view of the graph is not saved")

    def put_node(self, node: Node) -> None:
        raise TypeError("a view of the graph is read-only")

    def remove_node(self, node_id: str) -> None:
        raise TypeError("a view of the graph is read-only")

    def put_edge(self, src: str, dst: str, relation: str, weight: float) -> None:
        raise TypeError("a view of the graph is read-only")

    def remove_edge(self, src: str, dst: str, relation: str) -> None:
        raise TypeError("a view of the graph is read-only")


class _VisibleSources(Mapping[EdgeKey, Mapping[str, float]]):
    """An edge's documents without the hidden ones."""

    def __init__(self, base: Mapping[EdgeKey, Mapping[str, float]], hidden: frozenset[str]):
        self._base = base
        self._hidden = hidden

    def __getitem__(self, key: EdgeKey) -> Mapping[str, float]:
        return {d: w for d, w in self._base[key].items() if d not in self._hidden}

    def __iter__(self) -> Iterator[EdgeKey]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


def hiding_reads(reads: GraphReads, hidden: Hidden) -> GraphReads:
    """What a reader reads: `reads` without what `hidden` names."""
    return GraphReads(
        HidingAdjacency(reads.adjacency, hidden),
        reads.mentions,
        _VisibleSources(reads.edge_docs, hidden.docs),
        reads.titles,
    )


class HidingLinker(Linker):
    """Links text to the visible nodes only: the names of hidden nodes are taken out of the
    graph's term index (so a hidden name never swallows a visible one inside it), and the
    index is shared with the whole graph's linker until that one is rebuilt."""

    def __init__(self, base: Linker, graph: HidingAdjacency, hidden: Hidden) -> None:
        super().__init__(graph)
        self._base = base
        self._hidden_nodes = hidden.nodes
        self._from: TermIndex | None = None
        self._visible_index = TermIndex({})

    def term_index(self) -> TermIndex:
        whole = self._base.term_index()
        if self._from is not whole:
            hidden = self._hidden_nodes
            terms = {k: ids - hidden if ids & hidden else ids for k, ids in whole.terms.items()}
            self._visible_index = TermIndex({k: ids for k, ids in terms.items() if ids})
            self._from = whole
        return self._visible_index
