"""The merged graph itself: nodes and typed, directed, weighted edges.

At most one edge per (source, target, relation). Everything keeps the order it was added in
(a node or edge changed in place keeps its place), and the walk reads neighbours in that
order: of two routes that score the same, the first found is the one a path shows. These are
the semantics the walk had on a networkx `MultiDiGraph` (edge key = relation), kept exactly;
plain dicts load from a snapshot in a fraction of the time (`storage.snapshot`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from retrieval.graph.model import Edge, Node

# other end → relation → weight; the same dict object is shared by both ends of an edge
Neighbours = Mapping[str, Mapping[str, float]]
_EMPTY: dict[str, dict[str, float]] = {}


class Adjacency:
    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._succ: dict[str, dict[str, dict[str, float]]] = {}
        self._pred: dict[str, dict[str, dict[str, float]]] = {}
        self._edges = 0
        self.version = 0  # changes whenever a node appears, changes or goes

    # ---- snapshots ---------------------------------------------------------------------------

    def export(self) -> dict[str, object]:
        """The graph as plain lists that keep every order: the nodes, each node's targets
        (with their relations and weights) and each node's sources."""
        index = {node_id: i for i, node_id in enumerate(self._nodes)}
        return {
            "nodes": [[n, d.kind, d.label, list(d.aliases)] for n, d in self._nodes.items()],
            "succ": [
                [[index[dst], list(rel.items())] for dst, rel in self._succ[n].items()]
                for n in self._nodes
            ],
            "pred": [[index[src] for src in self._pred[n]] for n in self._nodes],
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> Adjacency:
        """The graph `export` gave, in the same orders."""
        g = cls()
        ids = [str(row[0]) for row in data["nodes"]]
        for node_id, kind, label, aliases in data["nodes"]:
            g._nodes[node_id] = Node(node_id, kind, label, tuple(aliases))
        for node_id, targets in zip(ids, data["succ"], strict=True):
            g._succ[node_id] = {
                ids[dst]: {str(r): float(w) for r, w in rels} for dst, rels in targets
            }
            g._edges += sum(len(rels) for _, rels in targets)
        for node_id, sources in zip(ids, data["pred"], strict=True):
            g._pred[node_id] = {ids[src]: g._succ[ids[src]][node_id] for src in sources}
        return g

    # ---- writes -------------------------------------------------------------------------------

    def put_node(self, node: Node) -> None:
        """Add the node, or change it where it stands."""
        node_id = node.id
        self.version += 1
        if node_id not in self._nodes:
            self._succ[node_id] = {}
            self._pred[node_id] = {}
        self._nodes[node_id] = node

    def remove_node(self, node_id: str) -> None:
        """The node and every edge that touches it."""
        if node_id not in self._nodes:
            return
        self.version += 1
        for other, by_relation in self._succ[node_id].items():
            self._edges -= len(by_relation)
            if other != node_id:
                del self._pred[other][node_id]
        for other, by_relation in self._pred[node_id].items():
            if other != node_id:
                self._edges -= len(by_relation)
                del self._succ[other][node_id]
        del self._succ[node_id], self._pred[node_id], self._nodes[node_id]

    def put_edge(self, src: str, dst: str, relation: str, weight: float) -> None:
        """Add the edge, or change its weight where it stands; both ends must be nodes."""
        by_relation = self._succ[src].get(dst)
        if by_relation is None:
            by_relation = self._succ[src][dst] = {}
            self._pred[dst][src] = by_relation
        if relation not in by_relation:
            self._edges += 1
        by_relation[relation] = weight

    def remove_edge(self, src: str, dst: str, relation: str) -> None:
        by_relation = self._succ.get(src, _EMPTY).get(dst)
        if by_relation is None or relation not in by_relation:
            return
        del by_relation[relation]
        self._edges -= 1
        if not by_relation:
            del self._succ[src][dst], self._pred[dst][src]

    # ---- reads --------------------------------------------------------------------------------

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def node(self, node_id: str) -> Node | None:
        return self._nodes.get(node_id)

    def nodes(self) -> Iterator[tuple[str, Node]]:
        return iter(self._nodes.items())

    def successors(self, node_id: str) -> Neighbours:
        """Where the node's edges lead: target → relation → weight."""
        return self._succ.get(node_id, _EMPTY)

    def predecessors(self, node_id: str) -> Neighbours:
        """Where the edges into the node come from: source → relation → weight."""
        return self._pred.get(node_id, _EMPTY)

    def degree(self, node_id: str) -> int:
        """Edges in and out (a loop counts twice)."""
        out = sum(len(r) for r in self._succ.get(node_id, _EMPTY).values())
        return out + sum(len(r) for r in self._pred.get(node_id, _EMPTY).values())

    def has_edge(self, src: str, dst: str, relation: str) -> bool:
        return relation in self._succ.get(src, _EMPTY).get(dst, _EMPTY)

    def edges(self) -> Iterator[Edge]:
        """Every edge, by source (in node order), then target, then relation."""
        for src, targets in self._succ.items():
            for dst, by_relation in targets.items():
                for relation, weight in by_relation.items():
                    yield Edge(src, dst, relation, weight)

    @property
    def node_count(self) -> int:
        return len(self._nodes)

    @property
    def edge_count(self) -> int:
        return self._edges
