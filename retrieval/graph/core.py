"""`KnowledgeGraph`: the facade search, the indexer, /cite and /graph use.

It keeps the SQLite rows (`storage.GraphDB`) and what is built from them in memory
(`storage.Contributions`) in step — every `add` / `index_document` / `delete_*` is one
transaction, and memory changes only after it commits — grows the graph from ingested
documents (`grow`), and answers reads through the linker (`linking`) and the walker
(`walking`), which see the graph as `storage.GraphReads`.

Opening is lazy for a large graph: when the snapshot next to the database is current
(`storage.snapshot`), the reads come from it in a moment and each document's rows — what
writes need — are loaded from SQLite before the first write. A graph that wrote rewrites the
snapshot when it closes, from the rows as a fresh load reads them, so the next open is quick
and reads exactly what a load from the rows would (pinned by tests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from logging import getLogger
from pathlib import Path

from retrieval.graph.extract_llm import AnswerCache, Extraction, MemoryAnswers, llm_doc
from retrieval.graph.grow import Lexicon, default_lexicon, grow
from retrieval.graph.hiding import Hidden
from retrieval.graph.linking import TermIndex
from retrieval.graph.model import (
    KINDS,
    RELATIONS,
    SEED_DOC,
    DocumentRows,
    Edge,
    EdgeLike,
    Node,
    NodeLike,
    as_edge,
    as_node,
)
from retrieval.graph.queries import GraphQueries
from retrieval.graph.seed import DEFAULT_SEED, load_seed
from retrieval.graph.storage import (
    Contributions,
    EdgeKey,
    GraphDB,
    GraphReads,
    NodeRow,
    graph_stats,
    snapshot,
)
from retrieval.heap import release_free_memory
from retrieval.lifecycle import Closing
from retrieval.types import Chunk

log = getLogger(__name__)


class KnowledgeGraph(Closing):
    """Open with `await KnowledgeGraph.open(db_path, seed)`; `db_path=None` keeps everything
    in memory (the in-process fake for tests)."""

    def __init__(
        self,
        db: GraphDB | None,
        lexicon: Lexicon | None = None,
        *,
        growth: bool = True,
    ) -> None:
        self._db = db
        self._lexicon = lexicon
        self._growth = growth
        self._answers: MemoryAnswers | None = None
        self._lock = asyncio.Lock()
        # The write side: None while the graph reads from its snapshot (`_writable` loads it).
        self._ledger: Contributions | None = Contributions()
        self._loaded: snapshot.Snapshot | None = None
        self._wrote = False  # rows written since open: the snapshot is rewritten at close
        self._reads = self._ledger.reads
        self._query = GraphQueries(self._reads)
        self._changes = 0  # writes since open: a view of the graph is for one state
        self._views: dict[frozenset[str], tuple[int, GraphQueries]] = {}

    def _use(self, reads: GraphReads) -> None:
        self._reads = reads
        self._query.read_from(reads)
        self._changed()

    def _changed(self) -> None:
        self._changes += 1
        self._views.clear()

    # ---- life cycle ---------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        db_path: Path | None,
        seed: Path | None = DEFAULT_SEED,
        *,
        lexicon: Lexicon | None = None,
        growth: bool = True,
        from_snapshot: bool = True,
    ) -> KnowledgeGraph:
        """Load the graph from SQLite (created if missing) and bring the seed rows in line with
        `seed` (None leaves stored seed rows alone). GraphSeedError for a malformed seed.
        `lexicon`: the language tools growing uses (default: jieba with the domain dictionary
        and the graph's terms, the bundled stop words and synonym table, OpenCC).
        `growth=False`: documents add only books, authors, verses and mentions of existing
        nodes (the curated-only graph), no new concepts or relations.
        `from_snapshot=False`: load from the rows even when the snapshot is current."""
        seed_data = load_seed(seed) if seed is not None else None
        db = await GraphDB.open(db_path) if db_path is not None else None
        kg = cls(db, lexicon, growth=growth)
        try:
            await kg._load(from_snapshot)
            if seed_data is not None:
                await kg._replace_seed(*seed_data)
        except BaseException:
            await kg.close()
            raise
        return kg

    async def close(self) -> None:
        """Rewrite the snapshot if this graph wrote, then close the database."""
        if self._db is None:
            return
        try:
            if self._wrote:
                async with self._lock:
                    await self._save_snapshot(await self._read_rows())
        finally:
            await self._db.close()
            self._db = None

    async def _load(self, from_snapshot: bool) -> None:
        if self._db is None:
            return
        if from_snapshot:
            generation = await self._db.generation()
            path = snapshot.path_for(self._db.path)
            found = await asyncio.to_thread(snapshot.load, path, generation)
            if found is not None:
                self._ledger, self._loaded = None, found
                self._use(found.reads)
                return
        ledger = await self._read_rows()
        self._ledger = ledger
        self._use(ledger.reads)
        await self._save_snapshot(ledger)

    async def _read_rows(self) -> Contributions:
        """Everything built from the stored rows, in a fresh `Contributions`."""
        assert self._db is not None
        c = Contributions()
        async for node_rows in self._db.nodes():
            c.stage_nodes(node_rows)
        c.sync_staged()
        async for edge_rows in self._db.edges():
            for doc, src, dst, relation, weight in edge_rows:
                c.put_edge(doc, (src, dst, relation), weight)
        c.mentions.load([c.mentions.pack(rows) async for rows in self._db.mentions()])
        async for source_rows in self._db.sources():
            for doc, title in source_rows:
                c.put_source(doc, title)
        terms: dict[str, dict[str, int]] = {}
        async for term_rows in self._db.terms():
            for doc, term, freq in term_rows:
                terms.setdefault(doc, {})[term] = freq
        for doc, by_term in terms.items():
            c.put_terms(doc, by_term)
        release_free_memory()
        return c

    async def _save_snapshot(self, ledger: Contributions) -> None:
        """The snapshot of `ledger`, a fresh load of the rows at the current generation."""
        assert self._db is not None
        generation = await self._db.generation()
        state = snapshot.Snapshot(
            ledger.reads, ledger.contribution(SEED_DOC), len(ledger.documents())
        )
        path = snapshot.path_for(self._db.path)
        try:
            await asyncio.to_thread(snapshot.save, path, state, generation)
        except OSError as exc:
            # The snapshot only spares the next start a read of the rows, which hold it all:
            # without it nothing is lost (a data directory removed or full under the bot).
            log.warning(
                "the graph's snapshot was not written (%s); the next start reads its rows", exc
            )

    async def _writable(self) -> Contributions:
        """The write side; a graph opened from its snapshot loads it from the rows first
        (call with the lock held)."""
        if self._ledger is None:
            ledger = await self._read_rows()
            self._ledger, self._loaded = ledger, None
            self._use(ledger.reads)
        return self._ledger

    @property
    def loaded_rows(self) -> bool:
        """Whether every document's rows are in memory (False: reading from the snapshot)."""
        return self._ledger is not None

    def _seed_rows(self) -> tuple[dict[str, NodeRow], set[EdgeKey]]:
        if self._ledger is not None:
            return self._ledger.contribution(SEED_DOC)
        assert self._loaded is not None
        return self._loaded.seed

    async def _replace_seed(self, nodes: list[Node], edges: list[Edge]) -> None:
        wanted = (
            {n.id: (n.kind, n.label, n.aliases) for n in nodes},
            {(e.src, e.dst, e.relation) for e in edges},
        )
        if self._seed_rows() == wanted:
            return
        async with self._lock:
            await self._write(DocumentRows(SEED_DOC, nodes, edges), replace=True)

    # ---- writes -------------------------------------------------------------------------

    async def add(
        self,
        doc_id: str,
        nodes: Iterable[NodeLike],
        edges: Iterable[EdgeLike],
        mentions: Iterable[tuple[str, str]],
        *,
        title: str = "",
    ) -> None:
        """Add one document's nodes, edges and chunk→node mentions (one transaction); `title`
        names the document where paths and pictures show an edge's sources.

        Edge ends must be nodes of this call or already in the graph; ValueError otherwise,
        and for unknown kinds or relations. Adding the same rows again changes nothing."""
        _check_doc(doc_id)
        node_list = [as_node(n) for n in nodes]
        edge_list = [as_edge(e) for e in edges]
        mention_list = list(dict.fromkeys((str(c), str(n)) for c, n in mentions))
        async with self._lock:
            rows = DocumentRows(doc_id, node_list, edge_list, mention_list, title=title)
            await self._write(rows, replace=False)

    async def index_document(self, doc_id: str, chunks: Sequence[Chunk]) -> int:
        """Replace what `doc_id` contributes with what its chunks grow (`retrieval.graph.grow`):
        its book, author and verses, the concepts it names — new ones found by term statistics
        among them — and the relations its structure gives. Returns its concept mentions."""
        _check_doc(doc_id)
        if not chunks:
            async with self._lock:
                await self._write(DocumentRows(doc_id), replace=True)
            return 0
        async with self._lock:
            ledger = await self._writable()
            # The chunks changed (new ids): an LLM extraction of the old text no longer fits.
            if self._db is not None:
                await self._db.delete_doc(llm_doc(doc_id))
                self._wrote = True
            ledger.drop_doc(llm_doc(doc_id))
            lexicon = await self._ensure_lexicon()
            vocabulary = _Vocabulary(ledger, self._query)
            growth = await asyncio.to_thread(
                grow, chunks, vocabulary, lexicon, ledger, concepts=self._growth
            )
            rows = DocumentRows(
                doc_id,
                list(growth.nodes.values()),
                [Edge(s, d, r, w) for (s, d, r), w in growth.edges.items()],
                list(dict.fromkeys(growth.mentions)),
                title=chunks[0].source,
                terms=growth.terms,
            )
            await self._write(rows, replace=True)
        self._new_terms([n.label for n in growth.nodes.values() if n.kind == "concept"])
        return growth.concepts

    def answer_cache(self) -> AnswerCache:
        """Where the LLM extraction keeps the model's answers (the graph's SQLite file)."""
        if self._db is None:
            if self._answers is None:
                self._answers = MemoryAnswers()
            return self._answers
        return self._db

    async def add_extraction(self, doc_id: str, title: str, extraction: Extraction) -> None:
        """Replace the LLM extraction of `doc_id` (stored as `llm:<doc_id>`)."""
        _check_doc(doc_id)
        async with self._lock:
            rows = DocumentRows(
                llm_doc(doc_id),
                list(extraction.nodes.values()),
                sorted(extraction.edges, key=lambda e: (e.src, e.dst, e.relation)),
                sorted(extraction.mentions),
                title=f"{title} (LLM)",
            )
            await self._write(rows, replace=True)

    async def _ensure_lexicon(self) -> Lexicon:
        if self._lexicon is None:
            self._lexicon = await asyncio.to_thread(default_lexicon, self._query.terms())
        return self._lexicon

    def _new_terms(self, labels: Iterable[str]) -> None:
        """Later documents segment the concepts this one grew as whole words."""
        if self._lexicon is not None:
            self._lexicon.add_terms(labels)

    async def _write(self, rows: DocumentRows, *, replace: bool) -> None:
        ledger = await self._writable()
        self._changed()
        _check_rows(rows.nodes, rows.edges, ledger)
        if self._db is not None:
            await self._db.write(rows, replace=replace)
            self._wrote = True
        doc = rows.doc
        if replace:
            ledger.drop_doc(doc)
        for n in rows.nodes:
            ledger.put_node(doc, n.id, (n.kind, n.label, n.aliases))
        for e in rows.edges:
            ledger.put_edge(doc, (e.src, e.dst, e.relation), e.weight)
        ledger.put_mentions(doc, rows.mentions)
        if rows.title:
            ledger.put_source(doc, rows.title)
        if rows.terms:
            ledger.put_terms(doc, dict(rows.terms))

    async def delete_document(self, doc_id: str) -> None:
        """Remove exactly what `doc_id` contributed, its LLM extraction included. The seed
        stays."""
        if doc_id == SEED_DOC:
            raise ValueError("the seed graph cannot be deleted as a document")
        async with self._lock:
            ledger = await self._writable()
            self._changed()
            for doc in (doc_id, llm_doc(doc_id)):
                if self._db is not None:
                    await self._db.delete_doc(doc)
                    self._wrote = True
                ledger.drop_doc(doc)

    async def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Forget which nodes these chunks mention (whatever document added the mention)."""
        ids = [c for c in dict.fromkeys(chunk_ids) if self._query.mentioned(c)]
        if not ids:
            return
        async with self._lock:
            ledger = await self._writable()
            self._changed()
            if self._db is not None:
                await self._db.delete_chunks(ids)
                self._wrote = True
            ledger.drop_chunks(ids)

    # ---- reads --------------------------------------------------------------------------

    @property
    def query(self) -> GraphQueries:
        """The read API (nodes, relations, names, walks); it follows the graph as it changes."""
        return self._query

    async def seen_without(self, docs: frozenset[str]) -> GraphQueries:
        """The graph as a reader sees it who must not see `docs` (other readers' shelves, the
        trash): `query` without what only they contribute (`retrieval.graph.hiding`). Kept
        until the graph changes. Built without the write lock: a search never waits for a
        document growing the graph (seconds, for a large upload); a view that a write
        overtook while it was built serves its one search and is not kept."""
        if not docs:
            return self._query
        kept = self._views.get(docs)
        if kept is not None and kept[0] == self._changes:
            return kept[1]
        changes = self._changes
        view = self._query.hiding(await self._hidden(docs))
        if changes == self._changes:
            self._views[docs] = (changes, view)
        return view

    async def _hidden(self, docs: frozenset[str]) -> Hidden:
        """What only `docs` (and their LLM extractions) contribute. The rows in memory change
        only on this thread, between awaits: read in one go, they are one state."""
        every = sorted(docs | {llm_doc(d) for d in docs})
        if self._ledger is not None:  # every document's rows are in memory
            only_nodes, only_edges = self._ledger.only_from(set(every))
            return Hidden(frozenset(only_nodes), frozenset(only_edges), frozenset(every))
        assert self._db is not None  # reading from the snapshot: ask the rows
        nodes, edges, shared = await self._db.contributed(every)
        edge_docs = self._reads.edge_docs
        only = {e for e in edges if not set(edge_docs.get(e, {})) - set(every)}
        return Hidden(frozenset(nodes - shared), frozenset(only), frozenset(every))

    def seed_terms(self) -> set[str]:
        """The labels and aliases the curated seed gives its nodes (not the aliases documents
        add): dictionary words that do not change as documents are ingested, for the keyword
        index (see `bot.app`)."""
        out: set[str] = set()
        seed_rows, _ = self._seed_rows()
        for kind, label, aliases in seed_rows.values():
            if kind != "scripture":
                out.add(label)
                out.update(aliases)
        return out

    def stats(self) -> dict[str, int]:
        if self._ledger is not None:
            documents = len(self._ledger.documents())
        else:
            assert self._loaded is not None
            documents = self._loaded.documents
        return graph_stats(self._reads, documents)

    async def snapshot(self) -> tuple[object, ...]:
        """A comparable picture of the whole graph, every document's rows included (for tests
        and consistency checks)."""
        async with self._lock:
            return (await self._writable()).snapshot()


def _check_doc(doc_id: str) -> None:
    if not doc_id or doc_id == SEED_DOC:
        raise ValueError(f"doc_id must be a non-empty id other than {SEED_DOC!r}")


def _check_rows(nodes: Sequence[Node], edges: Sequence[Edge], ledger: Contributions) -> None:
    """ValueError for a node of no known kind or without id or label, and for an edge of no
    known relation or whose ends are neither among `nodes` nor in the graph."""
    known = {n.id for n in nodes}
    for n in nodes:
        if n.kind not in KINDS:
            raise ValueError(f"node {n.id!r}: unknown kind {n.kind!r}")
        if not n.id or not n.label:
            raise ValueError(f"node {n.id!r}: id and label must not be empty")
    for e in edges:
        if e.relation not in RELATIONS:
            raise ValueError(f"edge {e.src} → {e.dst}: unknown relation {e.relation!r}")
        for end in (e.src, e.dst):
            if end not in known and end not in ledger.adjacency:
                raise ValueError(f"edge {e.src} → {e.dst}: no node {end!r}")


class _Vocabulary:
    """The graph as growing sees it (`grow.Vocabulary`)."""

    def __init__(self, contributions: Contributions, query: GraphQueries) -> None:
        self._c = contributions
        self._query = query

    def term_index(self) -> TermIndex:
        return self._query.term_index()

    def scripture_nodes(self, text: str) -> list[str]:
        return self._query.scripture_nodes(text)

    def kind(self, node_id: str) -> str | None:
        node = self._c.adjacency.node(node_id)
        return node.kind if node is not None else None

    def node(self, node_id: str) -> Node | None:
        node = self._c.adjacency.node(node_id)
        return Node(node_id, node.kind, node.label) if node is not None else None

    def seeded(self, node_id: str) -> bool:
        return self._c.contributes(SEED_DOC, node_id)

    def connected(self, a: str, b: str) -> bool:
        g = self._c.adjacency
        return any(g.has_edge(a, b, r) or g.has_edge(b, a, r) for r in RELATIONS)
