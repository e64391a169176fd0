"""`GraphQueries`: the graph's read API, typed values only.

Search (`link`, `walk`), /graph (`retrieval.graph.view`), /cite (`concepts_for_scripture`) and
the ingest tagger read the graph through this object (`KnowledgeGraph.query`); none of them
sees the storage structures (`retrieval.graph.storage`). The facade points it at what it reads
from (the snapshot, then the rows once it writes), so a caller can keep the one it was given.
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval import scripture
from retrieval.graph.hiding import Hidden, HidingAdjacency, HidingLinker, hiding_reads
from retrieval.graph.linking import Linker, TermIndex
from retrieval.graph.model import Edge, Node, scripture_label, scripture_node_id
from retrieval.graph.storage import GraphReads
from retrieval.graph.walking import GraphWalk, Walker


class GraphQueries:
    def __init__(self, reads: GraphReads, *, linker: Linker | None = None) -> None:
        self.read_from(reads, linker=linker)

    def read_from(self, reads: GraphReads, *, linker: Linker | None = None) -> None:
        """Answer from `reads` from now on (the facade's switch from snapshot to rows)."""
        self._reads = reads
        self._linker = linker or Linker(reads.adjacency)
        self._walker = Walker(reads)

    def hiding(self, hidden: Hidden) -> GraphQueries:
        """The same reads without what `hidden` names (`retrieval.graph.hiding`): what one
        reader sees. A view of the graph as it is now; build another once it changes."""
        reads = hiding_reads(self._reads, hidden)
        assert isinstance(reads.adjacency, HidingAdjacency)
        linker = HidingLinker(self._linker, reads.adjacency, hidden)
        # Its term index is built with the view, not at the view's first search: a view is
        # kept for its reader (`KnowledgeGraph.seen_without`), and with 100 shelves, building
        # it at each chat's first search added ~2 ms to most of them (bench/RESULTS.md).
        linker.term_index()
        return GraphQueries(reads, linker=linker)

    # ---- nodes --------------------------------------------------------------------------

    def node(self, node_id: str) -> Node | None:
        """The node's kind, label and aliases (None: no such node)."""
        return self._reads.adjacency.node(node_id)

    def node_label(self, node_id: str) -> str:
        """The node's label; for an unknown id, the part after "kind:"."""
        node = self.node(node_id)
        if node is not None:
            return node.label
        if node_id.startswith("scripture:"):
            return scripture_label(node_id.partition(":")[2])
        return node_id.partition(":")[2] or node_id

    def node_kind(self, node_id: str) -> str | None:
        node = self.node(node_id)
        return node.kind if node is not None else None

    def node_ids(self, kind: str) -> list[str]:
        """The ids of every node of one kind, sorted (benchmarks, listings)."""
        return sorted(n for n, data in self._reads.adjacency.nodes() if data.kind == kind)

    def label(self, node_id: str, lang: str = "zh") -> str:
        """The node's label in a reply's language (English: its first English alias)."""
        return self._walker.label(node_id, lang)

    def chunks_for(self, node_id: str) -> set[str]:
        """Chunk ids that mention the node."""
        return self._reads.mentions.chunks(node_id)

    def mentioned(self, chunk_id: str) -> bool:
        """Whether the chunk mentions any node."""
        return self._reads.mentions.has_chunk(chunk_id)

    # ---- edges --------------------------------------------------------------------------

    def relations(self, node_id: str) -> list[Edge]:
        """The node's edges: those leaving it, then those reaching it, in the graph's order."""
        g = self._reads.adjacency
        out = [
            Edge(node_id, other, rel, weight)
            for other, by_relation in g.successors(node_id).items()
            for rel, weight in by_relation.items()
        ]
        out += [
            Edge(other, node_id, rel, weight)
            for other, by_relation in g.predecessors(node_id).items()
            for rel, weight in by_relation.items()
        ]
        return out

    def has_edge(self, src: str, dst: str, relation: str) -> bool:
        return self._reads.adjacency.has_edge(src, dst, relation)

    def edge_sources(self, src: str, dst: str, relation: str) -> tuple[str, ...]:
        """Where an edge comes from: "seed" (curated) or the titles of the documents."""
        return self._walker.sources((src, dst, relation))

    # ---- names --------------------------------------------------------------------------

    def terms(self) -> set[str]:
        """All labels and aliases of concept, person, book and topic nodes (for jieba)."""
        out: set[str] = set()
        for _, node in self._reads.adjacency.nodes():
            if node.kind != "scripture":
                out.add(node.label)
                out.update(node.aliases)
        return out

    def term_index(self) -> TermIndex:
        """Every non-scripture name (folded) → the nodes it names (see `linking`)."""
        return self._linker.term_index()

    def scripture_nodes(self, text: str) -> list[str]:
        """The verse and chapter nodes a text cites (see `linking`)."""
        return self._linker.scripture_nodes(text)

    def link(self, text: str) -> list[str]:
        """Node ids named in `text` (see `retrieval.graph.linking`)."""
        return self._linker.link(text)

    # ---- walks --------------------------------------------------------------------------

    def walk(self, entry: Sequence[str], depth: int = 2, *, limit: int = 200) -> GraphWalk:
        """Chunks and paths near the entry nodes (see `retrieval.graph.walking`)."""
        return self._walker.walk(entry, depth, limit=limit)

    def concepts_for_scripture(self, osis: str) -> list[str]:
        """Labels of the concepts (and topics) grounded in a verse ("Eph.1.10") or its chapter;
        a range ("Eph.1.10-Eph.1.12") counts each of its verses."""
        ids: list[str] = []
        for part in _osis_ids(osis):
            ids.append(scripture_node_id(part))
            pieces = part.split(".")
            if len(pieces) == 3:
                ids.append(scripture_node_id(".".join(pieces[:2])))
        g = self._reads.adjacency
        labels: dict[str, None] = {}
        for node_id in dict.fromkeys(ids):
            if node_id not in g:
                continue
            neighbours = set(g.successors(node_id)) | set(g.predecessors(node_id))
            for other in sorted(neighbours):
                node = g.node(other)
                if node is not None and node.kind in ("concept", "topic"):
                    labels[node.label] = None
        return list(labels)


def _osis_ids(osis: str) -> list[str]:
    start, _, end = osis.partition("-")
    if not end:
        return [start]
    try:
        ranges = scripture.parse_reference(osis)
    except scripture.ScriptureError:
        return [start]
    return [v for r in ranges for v in scripture.expand(r)][:500]
