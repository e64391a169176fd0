"""SQLite persistence of the graph: every row tagged with the document that contributed it.

    graph_nodes    (doc_id, id, kind, label, aliases)   one row per document per node
    graph_edges    (doc_id, src, dst, relation, weight)
    graph_mentions (doc_id, chunk_id, node_id)           a chunk mentions a node
    graph_sources  (doc_id, title)                       what to call the document
    graph_terms    (doc_id, term, freq)                  its candidate terms (statistics)
    graph_meta     (key, value)                          'generation': bumped by every write

Every write is one transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error), so a
crash leaves a document's contribution either whole or absent; the generation changes in the
same transaction, so it names the rows exactly (a snapshot of them is current while it holds).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from retrieval.graph.model import DocumentRows
from retrieval.sqlite import open_sqlite

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
CREATE TABLE IF NOT EXISTS graph_llm_cache (
    key TEXT PRIMARY KEY, answer TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS graph_sources (doc_id TEXT PRIMARY KEY, title TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS graph_terms (
    doc_id TEXT NOT NULL, term TEXT NOT NULL, freq INTEGER NOT NULL,
    PRIMARY KEY (doc_id, term));
CREATE TABLE IF NOT EXISTS graph_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO graph_meta (key, value) VALUES ('generation', 0);
"""

BATCH = 50_000  # rows per fetch when loading
_PARAMS = 500  # ids per IN (…) of a lookup

EdgeKey = tuple[str, str, str]  # (src, dst, relation)


def _batched(items: Sequence[str]) -> list[tuple[str, ...]]:
    return [tuple(items[i : i + _PARAMS]) for i in range(0, len(items), _PARAMS)]


_TABLES = ("graph_nodes", "graph_edges", "graph_mentions", "graph_sources", "graph_terms")

NodeRow = tuple[str, str, str, str, tuple[str, ...]]  # (doc, id, kind, label, aliases)
EdgeRow = tuple[str, str, str, str, float]  # (doc, src, dst, relation, weight)
MentionRow = tuple[str, str, str]  # (doc, chunk, node)


class GraphDB:
    """The three tables on one aiosqlite connection. Open with `await GraphDB.open(path)`."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self._db = db
        self.path = path

    @classmethod
    async def open(cls, path: Path) -> GraphDB:
        # `weight`: a data dir from before edge weights gains the column
        db = await open_sqlite(
            path,
            _SCHEMA,
            autocommit=True,
            columns=[("graph_edges", "weight", "REAL NOT NULL DEFAULT 1.0")],
        )
        return cls(db, path)

    async def close(self) -> None:
        await self._db.close()

    async def generation(self) -> int:
        """Changes with every write of graph rows (see the module docstring)."""
        async with self._db.execute("SELECT value FROM graph_meta WHERE key = 'generation'") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row is not None else 0

    # ---- reads (in insertion order, so a reload rebuilds the same picture) -------------------
    # In batches: row by row, aiosqlite makes one thread hop per row (a million-chunk library's
    # few million rows took minutes).

    async def _batches(self, sql: str) -> AsyncIterator[list[Any]]:
        async with self._db.execute(sql) as cur:
            while rows := await cur.fetchmany(BATCH):
                yield list(rows)

    async def nodes(self) -> AsyncIterator[list[NodeRow]]:
        aliases: dict[str, tuple[str, ...]] = {}  # most rows repeat a few alias lists
        async for rows in self._batches(
            "SELECT doc_id, id, kind, label, aliases FROM graph_nodes ORDER BY rowid"
        ):
            for row in rows:
                if row[4] not in aliases:
                    aliases[row[4]] = tuple(json.loads(row[4]))
            yield [(doc, node, kind, label, aliases[a]) for doc, node, kind, label, a in rows]

    async def edges(self) -> AsyncIterator[list[EdgeRow]]:
        async for rows in self._batches(
            "SELECT doc_id, src, dst, relation, weight FROM graph_edges ORDER BY rowid"
        ):
            yield [(doc, src, dst, rel, float(w)) for doc, src, dst, rel, w in rows]

    async def mentions(self) -> AsyncIterator[list[MentionRow]]:
        async for rows in self._batches(
            "SELECT doc_id, chunk_id, node_id FROM graph_mentions ORDER BY rowid"
        ):
            yield rows

    async def sources(self) -> AsyncIterator[list[tuple[str, str]]]:
        async for rows in self._batches("SELECT doc_id, title FROM graph_sources"):
            yield rows

    async def terms(self) -> AsyncIterator[list[tuple[str, str, int]]]:
        async for rows in self._batches("SELECT doc_id, term, freq FROM graph_terms"):
            yield [(doc, term, int(freq)) for doc, term, freq in rows]

    # ---- writes ---------------------------------------------------------------------------

    async def write(self, rows: DocumentRows, *, replace: bool) -> None:
        """Add one document's rows; `replace` first deletes everything it had."""
        doc, title, terms = rows.doc, rows.title, rows.terms
        async with self._transaction() as db:
            await _bump(db)
            if replace:
                await self._delete_doc(db, doc)
            await db.executemany(
                "INSERT OR REPLACE INTO graph_nodes (doc_id, id, kind, label, aliases) "
                "VALUES (?, ?, ?, ?, ?)",
                [(doc, n.id, n.kind, n.label, _aliases_json(n.aliases)) for n in rows.nodes],
            )
            await db.executemany(
                "INSERT OR REPLACE INTO graph_edges (doc_id, src, dst, relation, weight) "
                "VALUES (?, ?, ?, ?, ?)",
                [(doc, e.src, e.dst, e.relation, e.weight) for e in rows.edges],
            )
            await db.executemany(
                "INSERT OR IGNORE INTO graph_mentions (doc_id, chunk_id, node_id) VALUES (?, ?, ?)",
                [(doc, c, n) for c, n in rows.mentions],
            )
            if title:
                await db.execute(
                    "INSERT OR REPLACE INTO graph_sources (doc_id, title) VALUES (?, ?)",
                    (doc, title),
                )
            if terms:
                await db.executemany(
                    "INSERT OR REPLACE INTO graph_terms (doc_id, term, freq) VALUES (?, ?, ?)",
                    [(doc, t, f) for t, f in terms.items()],
                )

    async def contributed(self, docs: Sequence[str]) -> tuple[set[str], set[EdgeKey], set[str]]:
        """What `docs` contribute: their nodes and edges, and of those nodes the ones some
        other document contributes too."""
        nodes: set[str] = set()
        edges: set[EdgeKey] = set()
        for part in _batched(docs):
            marks = ", ".join("?" * len(part))
            rows = await self._db.execute_fetchall(
                f"SELECT DISTINCT id FROM graph_nodes WHERE doc_id IN ({marks})", part
            )
            nodes.update(str(r[0]) for r in rows)
            rows = await self._db.execute_fetchall(
                f"SELECT src, dst, relation FROM graph_edges WHERE doc_id IN ({marks})", part
            )
            edges.update((str(a), str(b), str(c)) for a, b, c in rows)
        shared: set[str] = set()
        hidden = tuple(docs)
        for part in _batched(sorted(nodes)):
            rows = await self._db.execute_fetchall(
                f"SELECT DISTINCT id FROM graph_nodes WHERE id IN ({', '.join('?' * len(part))})"
                f" AND doc_id NOT IN ({', '.join('?' * len(hidden))})",
                (*part, *hidden),
            )
            shared.update(str(r[0]) for r in rows)
        return nodes, edges, shared

    async def delete_doc(self, doc: str) -> None:
        async with self._transaction() as db:
            await _bump(db)
            await self._delete_doc(db, doc)

    async def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        async with self._transaction() as db:
            await _bump(db)
            await db.executemany(
                "DELETE FROM graph_mentions WHERE chunk_id = ?", [(c,) for c in chunk_ids]
            )

    @staticmethod
    async def _delete_doc(db: aiosqlite.Connection, doc: str) -> None:
        for table in _TABLES:
            await db.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc,))

    # ---- the LLM extraction's answers (a cache: not part of any document's share) -------------

    async def get(self, keys: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ", ".join("?" * len(part))
            sql = f"SELECT key, answer FROM graph_llm_cache WHERE key IN ({marks})"
            async with self._db.execute(sql, part) as cur:
                async for key, answer in cur:
                    out[key] = answer
        return out

    async def put(self, key: str, answer: str, input_tokens: int, output_tokens: int) -> None:
        async with self._transaction() as db:
            await db.execute(
                "INSERT OR REPLACE INTO graph_llm_cache VALUES (?, ?, ?, ?)",
                (key, answer, input_tokens, output_tokens),
            )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    """`async with`: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK when the body raises."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db

    async def __aenter__(self) -> aiosqlite.Connection:
        await self._db.execute("BEGIN IMMEDIATE")
        return self._db

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        await self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


async def _bump(db: aiosqlite.Connection) -> None:
    await db.execute("UPDATE graph_meta SET value = value + 1 WHERE key = 'generation'")


def _aliases_json(aliases: Iterable[str]) -> str:
    return json.dumps(list(aliases), ensure_ascii=False)
