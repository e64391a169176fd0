"""The knowledge graph: concepts, people, scripture, books and topics, with provenance.

In memory it is a networkx `MultiDiGraph` (edge key = relation); on disk three SQLite tables,
every row tagged with the `doc_id` that contributed it (the curated seed is `doc_id` "seed"):

    graph_nodes    (doc_id, id, kind, label, aliases)   one row per document per node
    graph_edges    (doc_id, src, dst, relation)
    graph_mentions (doc_id, chunk_id, node_id)           a chunk mentions a node

A node or edge exists while at least one document contributes it, so `delete_document`
removes exactly one document's share: a node two documents added stays until both are gone,
and seed rows are never deleted. An edge whose endpoint disappeared is hidden until the node
returns. Every `add` / `delete_*` is one transaction; memory is updated after it commits.

Retrieval uses three things:
- `link(text)`: entity linking over labels and aliases (Traditional/Simplified-insensitive,
  case-insensitive, leftmost-longest), plus scripture references through the parser;
- `walk(entry)`: scores chunks attached to nodes near the entry nodes (closer is higher; nodes
  near two entries score higher still) and reports the label paths that connect them;
- `concepts_for_scripture(osis)`: concepts grounded in a verse or its chapter (for `/cite`).
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import json
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol

import aiosqlite
import networkx as nx

from retrieval import scripture

DEFAULT_SEED = Path(__file__).parent / "data" / "seed_graph.json"
SEED_DOC = "seed"

KINDS = frozenset({"concept", "person", "scripture", "book", "topic"})
# 著作 (person wrote book) is what the indexer adds for authors.
RELATIONS = frozenset({"发展自", "根基于", "阐明", "发展", "对应", "包含", "著作"})

__all__ = [
    "DEFAULT_SEED",
    "KINDS",
    "RELATIONS",
    "SEED_DOC",
    "Edge",
    "GraphSeedError",
    "GraphWalk",
    "KnowledgeGraph",
    "Node",
    "load_seed",
    "scripture_node_id",
]


class GraphSeedError(ValueError):
    """The seed file cannot be used; the message says which file and what is wrong."""


@dataclass(frozen=True, slots=True)
class Node:
    id: str  # "concept:神圣分赐", "scripture:Eph.1.10", "book:神的经纶", "person:李常受", "topic:救恩"
    kind: str
    label: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    relation: str


class NodeLike(Protocol):
    """Anything with a node's fields (the indexer has its own small dataclass)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def label(self) -> str: ...


class EdgeLike(Protocol):
    @property
    def src(self) -> str: ...
    @property
    def dst(self) -> str: ...
    @property
    def relation(self) -> str: ...


@dataclass(slots=True)
class GraphWalk:
    """What a walk found: chunk scores for fusion, node scores, and label paths to explain it."""

    chunk_scores: dict[str, float] = field(default_factory=dict)
    paths: list[list[str]] = field(default_factory=list)
    nodes: dict[str, float] = field(default_factory=dict)  # node id → score, best first


def scripture_node_id(osis: str) -> str:
    return f"scripture:{osis}"


# ---- text forms for linking -----------------------------------------------------------------


@functools.cache
def _t2s() -> Callable[[str], str]:
    import opencc

    convert: Callable[[str], str] = opencc.OpenCC("t2s").convert
    return convert


_SPACES = re.compile(r"\s+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9]")
# Characters next to which a one-character term (灵, 父, 子) still stands on its own.
_PARTICLES = frozenset("的与和及是在里中同、之乃即或并就也都又而为")
_STRIP = "《》〈〉「」『』\"'“”‘’ "


def _fold(text: str) -> str:
    """The matching form: Simplified, lowercase, one space between words, full width → ASCII."""
    text = text.translate(_FULLWIDTH)
    return _SPACES.sub(" ", _t2s()(text).lower())


_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


# ---- the seed -------------------------------------------------------------------------------


def load_seed(path: Path) -> tuple[list[Node], list[Edge]]:
    """Read a curated seed file; GraphSeedError says what is wrong and where.

    Format: {"nodes": [{"kind", "label", "aliases"?, "id"?}], "edges": [[src, relation, dst]]}.
    Edge ends are node labels or ids, or scripture references ("弗1:10", "林后13:14", "弗3:16-17"),
    which become scripture nodes (one per verse; a chapter reference is one chapter node)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise GraphSeedError(f"seed graph {path}: cannot read it ({err.strerror})") from None
    except json.JSONDecodeError as err:
        raise GraphSeedError(
            f"seed graph {path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"
        ) from None
    except UnicodeDecodeError:
        raise GraphSeedError(f"seed graph {path}: not UTF-8 text") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
        raise GraphSeedError(f'seed graph {path}: expected an object with a "nodes" list')
    if not isinstance(raw.get("edges", []), list):
        raise GraphSeedError(f'seed graph {path}: "edges" must be a list')

    def fail(where: str, what: str) -> GraphSeedError:
        return GraphSeedError(f"seed graph {path}: {where}: {what}")

    nodes: dict[str, Node] = {}
    by_name: dict[str, str] = {}
    for i, item in enumerate(raw["nodes"]):
        where = f"nodes[{i}]"
        if not isinstance(item, dict):
            raise fail(where, "expected an object")
        kind, label = item.get("kind"), item.get("label")
        if kind not in KINDS or kind == "scripture":
            raise fail(where, f"kind must be one of concept, person, book, topic (got {kind!r})")
        if not isinstance(label, str) or not label.strip():
            raise fail(where, "label must be a non-empty string")
        aliases = item.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise fail(where, "aliases must be a list of strings")
        node_id = item.get("id") or f"{kind}:{label.strip()}"
        if not isinstance(node_id, str) or ":" not in node_id:
            raise fail(where, f"id must look like kind:name (got {node_id!r})")
        if node_id in nodes:
            raise fail(where, f"duplicate node {node_id}")
        nodes[node_id] = Node(node_id, kind, label.strip(), tuple(a.strip() for a in aliases))
        for name in (node_id, label.strip()):
            if by_name.setdefault(name, node_id) != node_id:
                raise fail(where, f"label {name!r} is used by two nodes")

    edges: list[Edge] = []
    for i, item in enumerate(raw.get("edges", [])):
        where = f"edges[{i}]"
        if not (
            isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)
        ):
            raise fail(where, "expected [source, relation, target]")
        src, relation, dst = item
        if relation not in RELATIONS:
            raise fail(
                where, f"unknown relation {relation!r} (use one of {', '.join(sorted(RELATIONS))})"
            )
        ends = [
            _seed_end(name, by_name, nodes, functools.partial(fail, where)) for name in (src, dst)
        ]
        edges.extend(Edge(a, b, relation) for a in ends[0] for b in ends[1])
    return list(nodes.values()), edges


def _seed_end(
    name: str,
    by_name: dict[str, str],
    nodes: dict[str, Node],
    fail: Callable[[str], GraphSeedError],
) -> list[str]:
    if name in by_name:
        return [by_name[name]]
    try:
        ranges = scripture.parse_reference(name)
    except scripture.ScriptureError as err:
        raise fail(
            f"{name!r} is neither a node in this file nor a scripture reference ({err.en})"
        ) from None
    ids: list[str] = []
    for r in ranges:
        if r.start.verse is None:
            osis_ids = [f"{r.start.book}.{c}" for c in range(r.start.chapter, r.end.chapter + 1)]
        else:
            osis_ids = scripture.expand(r)
        for osis in osis_ids:
            node_id = scripture_node_id(osis)
            if node_id not in nodes:
                nodes[node_id] = Node(node_id, "scripture", _scripture_label(osis))
            ids.append(node_id)
    return ids


def _scripture_label(osis: str) -> str:
    parts = osis.split(".")
    try:
        b = scripture.book(parts[0])
    except scripture.ScriptureError:
        return osis
    return b.zh_short + ":".join(parts[1:])


# ---- the graph ------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_nodes (
    doc_id TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL,
    aliases TEXT NOT NULL DEFAULT '[]', PRIMARY KEY (doc_id, id));
CREATE INDEX IF NOT EXISTS graph_nodes_id ON graph_nodes (id);
CREATE TABLE IF NOT EXISTS graph_edges (
    doc_id TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, relation TEXT NOT NULL,
    PRIMARY KEY (doc_id, src, dst, relation));
CREATE TABLE IF NOT EXISTS graph_mentions (
    doc_id TEXT NOT NULL, chunk_id TEXT NOT NULL, node_id TEXT NOT NULL,
    PRIMARY KEY (doc_id, chunk_id, node_id));
CREATE INDEX IF NOT EXISTS graph_mentions_chunk ON graph_mentions (chunk_id);
"""

_EdgeKey = tuple[str, str, str]  # (src, dst, relation)
_NodeRow = tuple[str, str, tuple[str, ...]]  # (kind, label, aliases)

# walk() tuning
DECAY = 0.5  # score factor per hop
HUB_DEGREE = 60  # do not walk through nodes with more neighbours than this (unless entered)
KIND_WEIGHT = {"concept": 1.0, "topic": 0.8, "scripture": 1.0, "book": 0.5, "person": 0.3}


class KnowledgeGraph:
    """See the module docstring. Open with `await KnowledgeGraph.open(db_path, seed)`;
    `db_path=None` keeps everything in memory (the in-process fake for tests)."""

    def __init__(self, db: aiosqlite.Connection | None) -> None:
        self._db = db
        self._lock = asyncio.Lock()
        self._g: nx.MultiDiGraph = nx.MultiDiGraph()
        # A live undirected view (it follows every change to _g): walks ignore edge direction,
        # and building the view per walk cost ~5 ms on a 100k-chunk graph.
        self._und = self._g.to_undirected(as_view=True)
        self._node_rows: dict[str, dict[str, _NodeRow]] = {}  # node → doc → row
        self._edge_docs: dict[_EdgeKey, set[str]] = {}
        self._edges_at: dict[str, set[_EdgeKey]] = {}  # node → edges touching it
        self._mentions: dict[str, dict[str, set[str]]] = {}  # node → chunk → docs
        self._chunk_nodes: dict[str, set[str]] = {}  # chunk → nodes
        self._terms: dict[str, set[str]] | None = None  # folded term → node ids (lazy)
        self._term_max = 0

    # ---- life cycle ---------------------------------------------------------------------

    @classmethod
    async def open(cls, db_path: Path | None, seed: Path | None = DEFAULT_SEED) -> KnowledgeGraph:
        """Load the graph from SQLite (created if missing) and bring the seed rows in line with
        `seed` (None leaves stored seed rows alone). GraphSeedError for a malformed seed."""
        seed_data = load_seed(seed) if seed is not None else None
        db: aiosqlite.Connection | None = None
        if db_path is not None:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            db = await aiosqlite.connect(db_path, isolation_level=None)
            try:
                await db.execute("PRAGMA journal_mode=WAL")
                await db.execute("PRAGMA busy_timeout=5000")
                await db.executescript(_SCHEMA)
            except BaseException:
                await db.close()
                raise
        kg = cls(db)
        try:
            await kg._load()
            if seed_data is not None:
                await kg._replace_seed(*seed_data)
        except BaseException:
            await kg.close()
            raise
        return kg

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def __aenter__(self) -> KnowledgeGraph:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _load(self) -> None:
        if self._db is None:
            return
        async with self._db.execute(
            "SELECT doc_id, id, kind, label, aliases FROM graph_nodes ORDER BY rowid"
        ) as cur:
            async for doc, node_id, kind, label, aliases in cur:
                self._put_node(doc, node_id, (kind, label, tuple(json.loads(aliases))))
        async with self._db.execute(
            "SELECT doc_id, src, dst, relation FROM graph_edges ORDER BY rowid"
        ) as cur:
            async for doc, src, dst, relation in cur:
                self._put_edge(doc, (src, dst, relation))
        async with self._db.execute(
            "SELECT doc_id, chunk_id, node_id FROM graph_mentions ORDER BY rowid"
        ) as cur:
            async for doc, chunk, node in cur:
                self._put_mention(doc, chunk, node)

    async def _replace_seed(self, nodes: list[Node], edges: list[Edge]) -> None:
        stored = self._contribution(SEED_DOC)
        wanted = (
            {n.id: (n.kind, n.label, n.aliases) for n in nodes},
            {(e.src, e.dst, e.relation) for e in edges},
        )
        if stored == wanted:
            return
        async with self._lock:
            await self._write(SEED_DOC, nodes, edges, [], replace=True)

    def _contribution(self, doc: str) -> tuple[dict[str, _NodeRow], set[_EdgeKey]]:
        nodes = {n: rows[doc] for n, rows in self._node_rows.items() if doc in rows}
        edges = {k for k, docs in self._edge_docs.items() if doc in docs}
        return nodes, edges

    # ---- writes -------------------------------------------------------------------------

    async def add(
        self,
        doc_id: str,
        nodes: Iterable[NodeLike],
        edges: Iterable[EdgeLike],
        mentions: Iterable[tuple[str, str]],
    ) -> None:
        """Add one document's nodes, edges and chunk→node mentions (one transaction).

        Edge ends must be nodes of this call or already in the graph; ValueError otherwise,
        and for unknown kinds or relations. Adding the same rows again changes nothing."""
        if not doc_id or doc_id == SEED_DOC:
            raise ValueError(f"doc_id must be a non-empty id other than {SEED_DOC!r}")
        node_list = [
            Node(n.id, n.kind, n.label, tuple(getattr(n, "aliases", ()) or ())) for n in nodes
        ]
        edge_list = [Edge(e.src, e.dst, e.relation) for e in edges]
        mention_list = list(dict.fromkeys((str(c), str(n)) for c, n in mentions))
        async with self._lock:
            await self._write(doc_id, node_list, edge_list, mention_list, replace=False)

    async def _write(
        self,
        doc: str,
        nodes: list[Node],
        edges: list[Edge],
        mentions: list[tuple[str, str]],
        *,
        replace: bool,
    ) -> None:
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
                if end not in known and end not in self._g:
                    raise ValueError(f"edge {e.src} → {e.dst}: no node {end!r}")
        if self._db is not None:
            db = self._db
            await db.execute("BEGIN IMMEDIATE")
            try:
                if replace:
                    for table in ("graph_nodes", "graph_edges", "graph_mentions"):
                        await db.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc,))
                await db.executemany(
                    "INSERT OR REPLACE INTO graph_nodes (doc_id, id, kind, label, aliases) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(doc, n.id, n.kind, n.label, _aliases_json(n.aliases)) for n in nodes],
                )
                await db.executemany(
                    "INSERT OR IGNORE INTO graph_edges (doc_id, src, dst, relation) "
                    "VALUES (?, ?, ?, ?)",
                    [(doc, e.src, e.dst, e.relation) for e in edges],
                )
                await db.executemany(
                    "INSERT OR IGNORE INTO graph_mentions (doc_id, chunk_id, node_id) "
                    "VALUES (?, ?, ?)",
                    [(doc, c, n) for c, n in mentions],
                )
                await db.execute("COMMIT")
            except BaseException:
                await db.execute("ROLLBACK")
                raise
        if replace:
            self._drop_doc(doc)
        for n in nodes:
            self._put_node(doc, n.id, (n.kind, n.label, n.aliases))
        for e in edges:
            self._put_edge(doc, (e.src, e.dst, e.relation))
        for chunk, node_id in mentions:
            self._put_mention(doc, chunk, node_id)

    async def delete_document(self, doc_id: str) -> None:
        """Remove exactly what `doc_id` contributed (one transaction). The seed stays."""
        if doc_id == SEED_DOC:
            raise ValueError("the seed graph cannot be deleted as a document")
        async with self._lock:
            if self._db is not None:
                db = self._db
                await db.execute("BEGIN IMMEDIATE")
                try:
                    for table in ("graph_nodes", "graph_edges", "graph_mentions"):
                        await db.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc_id,))
                    await db.execute("COMMIT")
                except BaseException:
                    await db.execute("ROLLBACK")
                    raise
            self._drop_doc(doc_id)

    async def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Forget which nodes these chunks mention (whatever document added the mention)."""
        ids = [c for c in dict.fromkeys(chunk_ids) if c in self._chunk_nodes]
        if not ids:
            return
        async with self._lock:
            if self._db is not None:
                db = self._db
                await db.execute("BEGIN IMMEDIATE")
                try:
                    await db.executemany(
                        "DELETE FROM graph_mentions WHERE chunk_id = ?", [(c,) for c in ids]
                    )
                    await db.execute("COMMIT")
                except BaseException:
                    await db.execute("ROLLBACK")
                    raise
            for chunk in ids:
                for node in self._chunk_nodes.pop(chunk, set()):
                    by_chunk = self._mentions.get(node)
                    if by_chunk is not None:
                        by_chunk.pop(chunk, None)
                        if not by_chunk:
                            del self._mentions[node]

    # ---- memory bookkeeping -------------------------------------------------------------

    def _put_node(self, doc: str, node_id: str, row: _NodeRow) -> None:
        rows = self._node_rows.setdefault(node_id, {})
        rows.pop(doc, None)  # a rewritten row goes last, as INSERT OR REPLACE gives it a new rowid
        rows[doc] = row
        self._sync_node(node_id)

    def _put_edge(self, doc: str, key: _EdgeKey) -> None:
        self._edge_docs.setdefault(key, set()).add(doc)
        self._edges_at.setdefault(key[0], set()).add(key)
        self._edges_at.setdefault(key[1], set()).add(key)
        self._sync_edge(key)

    def _put_mention(self, doc: str, chunk: str, node: str) -> None:
        self._mentions.setdefault(node, {}).setdefault(chunk, set()).add(doc)
        self._chunk_nodes.setdefault(chunk, set()).add(node)

    def _drop_doc(self, doc: str) -> None:
        for node_id in [n for n, rows in self._node_rows.items() if doc in rows]:
            del self._node_rows[node_id][doc]
            self._sync_node(node_id)
        for key in [k for k, docs in self._edge_docs.items() if doc in docs]:
            self._edge_docs[key].discard(doc)
            self._sync_edge(key)
        for node, by_chunk in list(self._mentions.items()):
            for chunk, docs in list(by_chunk.items()):
                docs.discard(doc)
                if not docs:
                    del by_chunk[chunk]
                    nodes = self._chunk_nodes.get(chunk)
                    if nodes is not None:
                        nodes.discard(node)
                        if not nodes:
                            del self._chunk_nodes[chunk]
            if not by_chunk:
                del self._mentions[node]

    def _sync_node(self, node_id: str) -> None:
        """Make the networkx node match its rows: seed row first, else the earliest document;
        aliases are the union of all rows."""
        self._terms = None
        rows = self._node_rows.get(node_id)
        if not rows:
            self._node_rows.pop(node_id, None)
            if node_id in self._g:
                self._g.remove_node(node_id)
            return
        first = rows.get(SEED_DOC) or next(iter(rows.values()))
        aliases = tuple(dict.fromkeys(a for r in rows.values() for a in r[2]))
        was_there = node_id in self._g
        self._g.add_node(node_id, kind=first[0], label=first[1], aliases=aliases)
        if not was_there:
            for key in self._edges_at.get(node_id, ()):
                self._sync_edge(key)

    def _sync_edge(self, key: _EdgeKey) -> None:
        src, dst, relation = key
        present = bool(self._edge_docs.get(key)) and src in self._g and dst in self._g
        if present:
            if not self._g.has_edge(src, dst, key=relation):
                self._g.add_edge(src, dst, key=relation, relation=relation)
        else:
            if self._g.has_edge(src, dst, key=relation):
                self._g.remove_edge(src, dst, key=relation)
            if not self._edge_docs.get(key):
                self._edge_docs.pop(key, None)
                for end in (src, dst):
                    at = self._edges_at.get(end)
                    if at is not None:
                        at.discard(key)
                        if not at:
                            del self._edges_at[end]

    # ---- reads --------------------------------------------------------------------------

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The live networkx graph (read it; change it only through add/delete)."""
        return self._g

    def node_label(self, node_id: str) -> str:
        """The node's label; for an unknown id, the part after "kind:"."""
        if node_id in self._g:
            return str(self._g.nodes[node_id]["label"])
        if node_id.startswith("scripture:"):
            return _scripture_label(node_id.partition(":")[2])
        return node_id.partition(":")[2] or node_id

    def node_kind(self, node_id: str) -> str | None:
        return str(self._g.nodes[node_id]["kind"]) if node_id in self._g else None

    def chunks_for(self, node_id: str) -> set[str]:
        """Chunk ids that mention the node."""
        return set(self._mentions.get(node_id, {}))

    def terms(self) -> set[str]:
        """All labels and aliases of concept, person, book and topic nodes (for jieba)."""
        out: set[str] = set()
        for _, data in self._g.nodes(data=True):
            if data["kind"] != "scripture":
                out.add(data["label"])
                out.update(data["aliases"])
        return out

    def stats(self) -> dict[str, int]:
        kinds: dict[str, int] = dict.fromkeys(sorted(KINDS), 0)
        for _, kind in self._g.nodes(data="kind"):
            kinds[kind] = kinds.get(kind, 0) + 1
        docs = {d for rows in self._node_rows.values() for d in rows}
        docs |= {d for ds in self._edge_docs.values() for d in ds}
        docs |= {d for by in self._mentions.values() for ds in by.values() for d in ds}
        return {
            "nodes": self._g.number_of_nodes(),
            "edges": self._g.number_of_edges(),
            "mentions": sum(len(by) for by in self._mentions.values()),
            "chunks": len(self._chunk_nodes),
            "documents": len(docs - {SEED_DOC}),
            **{f"nodes_{k}": v for k, v in kinds.items()},
        }

    def snapshot(self) -> tuple[object, ...]:
        """A comparable picture of the whole graph (for tests and consistency checks)."""
        return (
            sorted(
                (n, d["kind"], d["label"], tuple(sorted(d["aliases"])))
                for n, d in self._g.nodes(data=True)
            ),
            sorted(self._g.edges(keys=True)),
            sorted(
                (n, c, tuple(sorted(ds)))
                for n, by in self._mentions.items()
                for c, ds in by.items()
            ),
            sorted((n, d, r) for n, rows in self._node_rows.items() for d, r in rows.items()),
            sorted((k, tuple(sorted(ds))) for k, ds in self._edge_docs.items()),
        )

    # ---- entity linking -----------------------------------------------------------------

    def _term_index(self) -> dict[str, set[str]]:
        if self._terms is None:
            terms: dict[str, set[str]] = {}
            for node_id, data in self._g.nodes(data=True):
                if data["kind"] == "scripture":
                    continue
                for name in (data["label"], *data["aliases"]):
                    key = _fold(name).strip(_STRIP)
                    if key:
                        terms.setdefault(key, set()).add(node_id)
            self._terms = terms
            self._term_max = max((len(t) for t in terms), default=0)
        return self._terms

    def link(self, text: str) -> list[str]:
        """Node ids named in `text`, in order of appearance: labels and aliases (Traditional or
        Simplified, any case; the longest name wins where names overlap) and scripture nodes
        for the references in it (a verse node, and its chapter node when the graph has them)."""
        if not text:
            return []
        terms = self._term_index()
        folded = _fold(text)
        found: dict[str, None] = {}
        i, n = 0, len(folded)
        while i < n:
            hit = None
            for length in range(min(self._term_max, n - i), 0, -1):
                ids = terms.get(folded[i : i + length])
                if ids and _stands_alone(folded, i, i + length):
                    hit = (length, ids)
                    break
            if hit is None:
                i += 1
                continue
            for node_id in sorted(hit[1], key=_kind_order(self._g)):
                found[node_id] = None
            i += hit[0]
        for r in scripture.find_references(text):
            for node_id in self._scripture_nodes(r):
                found[node_id] = None
        return list(found)

    def _scripture_nodes(self, r: scripture.RefRange) -> list[str]:
        out: list[str] = []
        chapters = [f"{r.start.book}.{c}" for c in range(r.start.chapter, r.end.chapter + 1)]
        verses = scripture.expand(r) if r.start.verse is not None else []
        for osis in verses[:200] + chapters:
            node_id = scripture_node_id(osis)
            if node_id in self._g:
                out.append(node_id)
        return out

    # ---- walking ------------------------------------------------------------------------

    def walk(self, entry: Sequence[str], depth: int = 2, *, limit: int = 200) -> GraphWalk:
        """Score nodes within `depth` hops of the entry nodes (any edge direction): DECAY per
        hop, summed over entries, so a node near two entries outranks one near a single entry,
        and nodes on a path between two entries get a bonus. A chunk scores its mentioned nodes'
        scores (weighted by kind, damped for nodes many chunks mention) with diminishing
        returns, boosted by the share of entry nodes it names (see `_chunk_scores`); the best
        `limit` chunks are returned. Walks do not pass through hubs (HUB_DEGREE)."""
        entries = [e for e in dict.fromkeys(entry) if e in self._g]
        result = GraphWalk()
        if not entries:
            return result
        und = self._und
        dist: dict[str, dict[str, int]] = {e: self._bfs(und, e, depth) for e in entries}
        scores: dict[str, float] = {}
        for d in dist.values():
            for node, hops in d.items():
                scores[node] = scores.get(node, 0.0) + DECAY**hops
        between = self._paths_between(und, entries, dist)
        for path in between:  # nodes that connect two entries
            for node in path[1:-1]:
                scores[node] = scores.get(node, 0.0) + 0.5
        paths = between or self._paths_around(und, entries[0], dist[entries[0]], depth)
        result.nodes = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))

        chunk_scores = self._chunk_scores(scores, entries)
        # Top `limit` by a heap: a common word can attach tens of thousands of chunks, and a
        # full sort of those dominated the slowest walks.
        best = heapq.nsmallest(limit, chunk_scores.items(), key=lambda kv: (-kv[1], kv[0]))
        result.chunk_scores = dict(best)
        result.paths = [[self.node_label(n) for n in path] for path in paths]
        return result

    def _chunk_scores(self, scores: dict[str, float], entries: list[str]) -> dict[str, float]:
        """Each walked node passes its score (× kind weight × hub damping) to the chunks that
        mention it. A chunk does not add up everything it mentions — that let long outlines,
        summaries and reading lists, which mention many nearby nodes once each, outrank the
        passage about the entity itself. Instead its gains count best first with diminishing
        returns (the k-th best is multiplied by DECAY**k, as a hop is), so a chunk scores at
        most twice its best link; and it is multiplied by (1 + the share of entry nodes it
        mentions itself), so the chunk naming what the question names comes first."""
        gains: dict[str, list[float]] = {}
        for node, score in scores.items():
            chunks = self._mentions.get(node)
            if not chunks:
                continue
            weight = KIND_WEIGHT.get(str(self._g.nodes[node]["kind"]), 0.5)
            damp = 1.0 / (1.0 + math.log1p(len(chunks)) / 4)  # hubs: many chunks mention it
            gain = score * weight * damp
            for chunk in chunks:
                gains.setdefault(chunk, []).append(gain)
        wanted = set(entries)
        out: dict[str, float] = {}
        for chunk, values in gains.items():
            values.sort(reverse=True)
            total = sum(v * DECAY**i for i, v in enumerate(values))
            named = len(wanted.intersection(self._chunk_nodes.get(chunk, ())))
            out[chunk] = total * (1.0 + named / len(wanted))
        return out

    def _bfs(self, und: nx.Graph, start: str, depth: int) -> dict[str, int]:
        seen = {start: 0}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            hops = seen[node]
            if hops >= depth or (hops > 0 and und.degree(node) > HUB_DEGREE):
                continue
            for nxt in und.neighbors(node):
                if nxt not in seen:
                    seen[nxt] = hops + 1
                    queue.append(nxt)
        return seen

    def _paths_between(
        self, und: nx.Graph, entries: list[str], dist: dict[str, dict[str, int]]
    ) -> list[list[str]]:
        """A shortest path for each pair of entries that meet within the walked depth."""
        paths: list[list[str]] = []
        for i, a in enumerate(entries):
            for b in entries[i + 1 :]:
                meet = [n for n in dist[a] if n in dist[b]]
                if not meet:
                    continue
                mid = min(meet, key=lambda n: (dist[a][n] + dist[b][n], n))
                left = self._trace(und, a, mid, dist[a])
                right = self._trace(und, b, mid, dist[b])
                paths.append(left + right[::-1][1:])
        paths.sort(key=len)
        return paths[:5]

    def _paths_around(
        self, und: nx.Graph, entry: str, dist: dict[str, int], depth: int
    ) -> list[list[str]]:
        """With nothing to connect: paths from the entry to its best-attested far neighbours."""
        reach = min(depth, max(dist.values()))
        if reach == 0:
            return []
        far = [n for n, h in dist.items() if h == reach and self._g.nodes[n]["kind"] != "scripture"]
        far.sort(key=lambda n: (-len(self._mentions.get(n, {})), -und.degree(n), n))
        return [self._trace(und, entry, n, dist) for n in far[:3]]

    @staticmethod
    def _trace(und: nx.Graph, start: str, goal: str, dist: dict[str, int]) -> list[str]:
        """A shortest path start → goal inside a BFS distance map (deterministic)."""
        path = [goal]
        node = goal
        while node != start:
            hops = dist[node]
            node = min(n for n in und.neighbors(node) if dist.get(n) == hops - 1)
            path.append(node)
        return path[::-1]

    # ---- scripture ----------------------------------------------------------------------

    def concepts_for_scripture(self, osis: str) -> list[str]:
        """Labels of the concepts (and topics) grounded in a verse ("Eph.1.10") or its chapter;
        a range ("Eph.1.10-Eph.1.12") counts each of its verses."""
        ids: list[str] = []
        for part in _osis_ids(osis):
            ids.append(scripture_node_id(part))
            pieces = part.split(".")
            if len(pieces) == 3:
                ids.append(scripture_node_id(".".join(pieces[:2])))
        labels: dict[str, None] = {}
        for node_id in dict.fromkeys(ids):
            if node_id not in self._g:
                continue
            for other in sorted(nx.all_neighbors(self._g, node_id)):
                if self._g.nodes[other]["kind"] in ("concept", "topic"):
                    labels[str(self._g.nodes[other]["label"])] = None
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


def _aliases_json(aliases: Iterable[str]) -> str:
    return json.dumps(list(aliases), ensure_ascii=False)


def _stands_alone(folded: str, start: int, end: int) -> bool:
    """English names match whole words; one-character Chinese names only next to particles,
    punctuation or the text's edges (灵 in "灵与生命", not in 心灵 or 灵魂)."""
    term = folded[start:end]
    before = folded[start - 1] if start > 0 else ""
    after = folded[end] if end < len(folded) else ""
    if _WORD.match(term[0]) and before and _WORD.match(before):
        return False
    if _WORD.match(term[-1]) and after and _WORD.match(after):
        return False
    if end - start == 1 and _CJK.match(term):
        for ch in (before, after):
            if ch and _CJK.match(ch) and ch not in _PARTICLES:
                return False
    return True


def _kind_order(g: nx.MultiDiGraph) -> Callable[[str], tuple[int, str]]:
    order = {"concept": 0, "topic": 1, "book": 2, "person": 3, "scripture": 4}

    def key(node_id: str) -> tuple[int, str]:
        return (order.get(str(g.nodes[node_id]["kind"]), 9), node_id)

    return key
