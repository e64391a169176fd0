"""The in-memory graph and who contributed what: the rows of every document, merged.

A node or edge exists while at least one document contributes it, so dropping a document
removes exactly its share: a node two documents added stays until both are gone. The seed
(`SEED_DOC`) is a contributor like any other, except that it wins conflicts: its row decides
a node's label and kind, and where the seed relates two nodes, edges documents add between
the same two are hidden (kept in the rows, shown again if the seed stops relating them). An
edge whose endpoint disappeared is hidden until the node returns. An edge's weight is the
largest any contributor gives it.

`reads` (`GraphReads`) is what queries see, always matching the rows: the merged graph
(`adjacency`), the mentions, the documents behind each edge and the documents' titles. Also
kept per document: its candidate terms (`term_frequency`, the statistics growing uses across
documents).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from retrieval.graph.model import KINDS, SEED_DOC, Node
from retrieval.graph.storage.adjacency import Adjacency
from retrieval.graph.storage.mentions import Mentions

EdgeKey = tuple[str, str, str]  # (src, dst, relation)
NodeRow = tuple[str, str, tuple[str, ...]]  # (kind, label, aliases)


@dataclass(frozen=True, slots=True)
class GraphReads:
    """What a query reads, whoever keeps it current (`Contributions`, or a snapshot loaded
    read-only, `storage.snapshot`)."""

    adjacency: Adjacency
    mentions: Mentions
    edge_docs: Mapping[EdgeKey, Mapping[str, float]]  # edge → its documents, in order added
    titles: Mapping[str, str]  # document → what to call it

    def edge_sources(self, key: EdgeKey) -> list[str]:
        """The documents that contribute an edge, in the order they added it."""
        return list(self.edge_docs.get(key, ()))


class Contributions:
    def __init__(self) -> None:
        self.adjacency = Adjacency()
        self._node_rows: dict[str, dict[str, NodeRow]] = {}  # node → doc → row
        self._shared_rows: dict[NodeRow, NodeRow] = {}  # one tuple for equal rows (loading)
        self._staged: dict[str, None] = {}  # nodes loaded but not synced yet
        self._edge_docs: dict[EdgeKey, dict[str, float]] = {}  # edge → doc → weight
        # node → edges touching it (ordered: resyncing them adds edges in a fixed order)
        self._edges_at: dict[str, dict[EdgeKey, None]] = {}
        self._seed_pairs: dict[frozenset[str], int] = {}  # node pairs the seed relates
        self.titles: dict[str, str] = {}  # doc → title
        self._doc_terms: dict[str, dict[str, int]] = {}  # doc → candidate term → frequency
        self._term_docs: dict[str, int] = {}  # candidate term → documents using it
        self.mentions = Mentions()  # chunk → node, per document (compact: numpy arrays)
        self.reads = GraphReads(self.adjacency, self.mentions, self._edge_docs, self.titles)

    # ---- writes -----------------------------------------------------------------------------

    def put_node(self, doc: str, node_id: str, row: NodeRow) -> None:
        rows = self._node_rows.setdefault(node_id, {})
        rows.pop(doc, None)  # a rewritten row goes last, as INSERT OR REPLACE gives it a new rowid
        rows[doc] = row
        self._sync_node(node_id)

    def stage_nodes(self, rows: Iterable[tuple[str, str, str, str, tuple[str, ...]]]) -> None:
        """Stored node rows (doc, node, kind, label, aliases) at start-up; `sync_staged()`
        after the last. Each node is then synced once, not once per row (a million-chunk
        library has 1.5M node rows for 36k nodes: a node thousands of documents name was rebuilt
        thousands of times), and equal rows share one tuple."""
        shared = self._shared_rows
        for doc, node_id, kind, label, aliases in rows:
            row = (kind, label, aliases)
            row = shared.setdefault(row, row)
            by_doc = self._node_rows.setdefault(node_id, {})
            by_doc.pop(doc, None)
            by_doc[sys.intern(doc)] = row
            self._staged[node_id] = None

    def sync_staged(self) -> None:
        staged, self._staged = self._staged, {}
        for node_id in staged:
            self._sync_node(node_id)

    def put_edge(self, doc: str, key: EdgeKey, weight: float = 1.0) -> None:
        docs = self._edge_docs.setdefault(key, {})
        new_seed_pair = doc == SEED_DOC and SEED_DOC not in docs
        docs[doc] = weight
        self._edges_at.setdefault(key[0], {})[key] = None
        self._edges_at.setdefault(key[1], {})[key] = None
        if new_seed_pair:
            self._count_seed_pair(key, +1)
        else:
            self._sync_edge(key)

    def put_source(self, doc: str, title: str) -> None:
        self.titles[doc] = title

    def put_terms(self, doc: str, terms: dict[str, int]) -> None:
        self._drop_terms(doc)
        self._doc_terms[doc] = dict(terms)
        for term in terms:
            self._term_docs[term] = self._term_docs.get(term, 0) + 1

    def _drop_terms(self, doc: str) -> None:
        for term in self._doc_terms.pop(doc, {}):
            left = self._term_docs[term] - 1
            if left:
                self._term_docs[term] = left
            else:
                del self._term_docs[term]

    def _count_seed_pair(self, key: EdgeKey, change: int) -> None:
        """The seed starts or stops relating key's two nodes: resync every edge between them."""
        pair = frozenset(key[:2])
        count = self._seed_pairs.get(pair, 0) + change
        if count > 0:
            self._seed_pairs[pair] = count
        else:
            self._seed_pairs.pop(pair, None)
        src, dst = key[0], key[1]
        for other in list(self._edges_at.get(src, ())):
            if {other[0], other[1]} == {src, dst}:
                self._sync_edge(other)

    def put_mentions(self, doc: str, pairs: Iterable[tuple[str, str]]) -> None:
        """`doc` says these chunks mention these nodes: (chunk, node) pairs."""
        self.mentions.add(doc, pairs)

    def drop_doc(self, doc: str) -> None:
        for node_id in [n for n, rows in self._node_rows.items() if doc in rows]:
            del self._node_rows[node_id][doc]
            self._sync_node(node_id)
        for key in [k for k, docs in self._edge_docs.items() if doc in docs]:
            del self._edge_docs[key][doc]
            if doc == SEED_DOC:
                self._count_seed_pair(key, -1)
            else:
                self._sync_edge(key)
        self.titles.pop(doc, None)
        self._drop_terms(doc)
        self.mentions.drop_doc(doc)

    def drop_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Forget which nodes these chunks mention (whatever document added the mention)."""
        self.mentions.drop_chunks(chunk_ids)

    @property
    def version(self) -> int:
        """Changes whenever a node appears, changes or goes (the linker's cache key)."""
        return self.adjacency.version

    def _sync_node(self, node_id: str) -> None:
        """Make the graph's node match its rows: seed row first, else the earliest document;
        aliases are the union of all rows."""
        g = self.adjacency
        rows = self._node_rows.get(node_id)
        if not rows:
            self._node_rows.pop(node_id, None)
            g.remove_node(node_id)
            return
        first = rows.get(SEED_DOC) or next(iter(rows.values()))
        aliases = tuple(dict.fromkeys(a for r in rows.values() for a in r[2]))
        was_there = node_id in g
        g.put_node(Node(node_id, first[0], first[1], aliases))
        if not was_there:
            for key in list(self._edges_at.get(node_id, ())):
                self._sync_edge(key)

    def _sync_edge(self, key: EdgeKey) -> None:
        src, dst, relation = key
        g = self.adjacency
        docs = self._edge_docs.get(key)
        outranked = (
            docs is not None and SEED_DOC not in docs and frozenset((src, dst)) in self._seed_pairs
        )
        if docs and not outranked and src in g and dst in g:
            g.put_edge(src, dst, relation, max(docs.values()))
            return
        g.remove_edge(src, dst, relation)
        if not self._edge_docs.get(key):
            self._edge_docs.pop(key, None)
            for end in (src, dst):
                at = self._edges_at.get(end)
                if at is not None:
                    at.pop(key, None)
                    if not at:
                        del self._edges_at[end]

    # ---- reads ------------------------------------------------------------------------------

    def contribution(self, doc: str) -> tuple[dict[str, NodeRow], set[EdgeKey]]:
        nodes = {n: rows[doc] for n, rows in self._node_rows.items() if doc in rows}
        edges = {k for k, docs in self._edge_docs.items() if doc in docs}
        return nodes, edges

    def only_from(self, docs: set[str]) -> tuple[set[str], set[EdgeKey]]:
        """The nodes and edges that no document but `docs` contributes (one pass)."""
        nodes = {n for n, rows in self._node_rows.items() if rows and rows.keys() <= docs}
        edges = {k for k, by in self._edge_docs.items() if by and by.keys() <= docs}
        return nodes, edges

    def contributes(self, doc: str, node_id: str) -> bool:
        return doc in self._node_rows.get(node_id, {})

    @property
    def term_documents(self) -> int:
        """How many documents have candidate-term statistics."""
        return len(self._doc_terms)

    def term_frequency(self, term: str) -> int:
        """In how many documents `term` is a candidate."""
        return self._term_docs.get(term, 0)

    def documents(self) -> set[str]:
        docs = {d for rows in self._node_rows.values() for d in rows}
        docs |= {d for ds in self._edge_docs.values() for d in ds}
        docs |= self.mentions.documents()
        return docs - {SEED_DOC}

    def snapshot(self) -> tuple[object, ...]:
        """A comparable picture of the whole graph (for tests and consistency checks)."""
        g = self.adjacency
        return (
            sorted((n, d.kind, d.label, tuple(sorted(d.aliases))) for n, d in g.nodes()),
            sorted((e.src, e.dst, e.relation) for e in g.edges()),
            self.mentions.rows(),
            sorted((n, d, r) for n, rows in self._node_rows.items() for d, r in rows.items()),
            sorted((k, tuple(sorted(ds.items()))) for k, ds in self._edge_docs.items()),
            sorted(self.titles.items()),
            sorted((d, tuple(sorted(ts.items()))) for d, ts in self._doc_terms.items()),
        )


def graph_stats(reads: GraphReads, documents: int) -> dict[str, int]:
    """Counts of nodes (by kind), edges, mentions, chunks and contributing `documents`."""
    kinds: dict[str, int] = dict.fromkeys(sorted(KINDS), 0)
    for _, node in reads.adjacency.nodes():
        kinds[node.kind] = kinds.get(node.kind, 0) + 1
    return {
        "nodes": reads.adjacency.node_count,
        "edges": reads.adjacency.edge_count,
        "mentions": reads.mentions.total,
        "chunks": reads.mentions.chunk_total,
        "documents": documents,
        **{f"nodes_{k}": v for k, v in kinds.items()},
    }
