"""The corpus indexer: document registry (SQLite) + points (VectorStore) + graph, kept in step.

Tables (aiosqlite, WAL): `corpus_documents` (one row per indexed document version),
`corpus_verses` (Bible text for `/cite`) and the keyword terms' chunk counts
(`retrieval.termstats`), which change in the transaction that writes the registry row.

Generations. Every indexed version of a document gets a generation number `gen` (the
registry's previous gen + 1). Its points carry payload `x_gen` and ids derived from the
ingest chunk id + gen (so two versions never share a point). `replace_document` works in
this order:

1. upsert the new generation's points (old and new are both searchable for a moment;
   readers never see half a version);
2. delete the document's points whose `x_gen` is not the new gen;
3. write the registry row (`gen` = new, `graph_gen` = the graph's generation so far);
4. replace the document's graph contribution (one transaction: what it grows, see
   `retrieval.graph.grow`);
5. set `graph_gen` = gen.

A crash before 3 leaves the old version fully retrievable plus orphan new points that
`reconcile()` deletes (they belong to a generation the registry does not record); a crash
between 3 and 5 leaves the new version retrievable and a stale graph contribution that
`reconcile()` rebuilds from the stored chunks (`graph_gen != gen`). Run `reconcile()` at
start-up (the `Indexer` context manager does not do it implicitly: it may take a while on a
large store, and tests want to control it).

Parts of the library (`retrieval.library`). A document lives in one namespace: the shared
library's or a shelf's (`DocumentRecord.namespace`, fixed when it is first indexed). Deleting
it (`trash_documents`) moves it to the trash: the registry row is marked (`trashed_at`), its
keyword-term counts and verses are set aside, and its points move to the trash namespace,
vectors and all; its graph contribution stays, hidden from every reader (`reading`).
`restore_document` undoes each step, so the library reads exactly as it did. `purge_documents`
is the only irreversible step. Each of the three first writes its intent in the registry row
(`pending`: trash | restore | purge) in the transaction that changes the row, then moves or
deletes the points (and for a purge the graph rows), then clears it: after a crash,
`reconcile()` finishes what a row still says is pending, so a document is in exactly one
place.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import aiosqlite

from retrieval import termstats
from retrieval.keyword import Bm25Encoder, KeywordSpec
from retrieval.library import SHARED, TRASH, Reading, is_shelf
from retrieval.ports import Embedder, VectorStore
from retrieval.sqlite import SqliteOwner
from retrieval.text import search_form
from retrieval.types import (
    CORPUS_NAMESPACE,
    Chunk,
    Filter,
    FilterValue,
    IndexedChunk,
    SparseVector,
)

_POINT_NS = uuid.UUID("0b7f3c55-2d7e-4c1a-9a53-3f0e8c1d6a42")
EMBED_BATCH = 32
SCROLL_LIMIT = 100_000

IndexProgress = Callable[[int, int], Awaitable[None] | None]


class GraphNames(Protocol):
    """The names a text gives the graph's nodes (`retrieval.graph.GraphQueries`)."""

    def link(self, text: str) -> list[str]: ...

    def node_label(self, node_id: str) -> str: ...


class GraphIndex(Protocol):
    """What the indexer needs from the knowledge graph (`retrieval.graph.KnowledgeGraph`)."""

    async def index_document(self, doc_id: str, chunks: Sequence[Chunk]) -> int:
        """Replace the document's contribution with what its chunks give; returns its
        concept-mention count."""
        ...

    async def delete_document(self, doc_id: str) -> None: ...

    @property
    def query(self) -> GraphNames:
        """What the ingest tagger reads (`retrieval.graph.GraphQueries`)."""
        ...


@dataclass(slots=True)
class DocumentRecord:
    doc_id: str
    source: str
    content_hash: str
    author: str = ""
    year: int | None = None
    era: str = ""
    type: str = "book"
    language: str = "zh"
    path: str = ""
    chunk_count: int = 0
    ingested_at: str = ""
    namespace: str = SHARED  # the shared library, or a shelf (`retrieval.library`)
    trashed_at: str = ""  # when it was deleted ("" while it is live)
    trashed_by: str = ""  # who deleted it (as the caller names them)

    @property
    def trashed(self) -> bool:
        return bool(self.trashed_at)


@dataclass(frozen=True, slots=True)
class VerseRow:
    version: str
    osis: str
    book: str
    chapter: int
    verse: int
    text: str


@dataclass(frozen=True, slots=True)
class SourceNames:
    """The corpus's titles (Bible books aside) and eras, sorted."""

    titles: tuple[str, ...]
    eras: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IndexReport:
    status: Literal["unchanged", "added", "replaced"]
    chunks: int = 0
    refs: int = 0
    concepts: int = 0


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    points_deleted: int = 0
    graphs_rebuilt: int = 0
    terms_counted: int = 0


_RECORD_FIELDS = tuple(f.name for f in fields(DocumentRecord))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS corpus_documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    year INTEGER,
    era TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL DEFAULT 'book',
    language TEXT NOT NULL DEFAULT 'zh',
    path TEXT NOT NULL DEFAULT '',
    chunk_count INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT NOT NULL DEFAULT '',
    gen INTEGER NOT NULL,
    graph_gen INTEGER NOT NULL DEFAULT 0,
    has_points INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS corpus_documents_source ON corpus_documents(source);
CREATE TABLE IF NOT EXISTS corpus_verses (
    version TEXT NOT NULL,
    osis TEXT NOT NULL,
    book TEXT NOT NULL,
    chapter INTEGER NOT NULL,
    verse INTEGER NOT NULL,
    text TEXT NOT NULL,
    doc_id TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (version, osis)
);
CREATE INDEX IF NOT EXISTS corpus_verses_osis ON corpus_verses(osis);
CREATE INDEX IF NOT EXISTS corpus_verses_chapter ON corpus_verses(book, chapter);
CREATE INDEX IF NOT EXISTS corpus_verses_doc ON corpus_verses(doc_id);
CREATE TABLE IF NOT EXISTS corpus_verses_trash (
    version TEXT NOT NULL,
    osis TEXT NOT NULL,
    book TEXT NOT NULL,
    chapter INTEGER NOT NULL,
    verse INTEGER NOT NULL,
    text TEXT NOT NULL,
    doc_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS corpus_verses_trash_doc ON corpus_verses_trash(doc_id);
"""
# Added to a registry from before shelves and the trash (`retrieval.sqlite.Column`).
_COLUMNS = (
    ("corpus_documents", "namespace", f"TEXT NOT NULL DEFAULT '{SHARED}'"),
    ("corpus_documents", "trashed_at", "TEXT NOT NULL DEFAULT ''"),
    ("corpus_documents", "trashed_by", "TEXT NOT NULL DEFAULT ''"),
    ("corpus_documents", "trash_terms", "BLOB"),  # its term counts while in the trash
    ("corpus_documents", "pending", "TEXT NOT NULL DEFAULT ''"),  # see the module docstring
)
_VERSE_COLUMNS = "version, osis, book, chapter, verse, text, doc_id"


def embed_text(chunk: Chunk) -> str:
    """What the dense track embeds. A Bible verse: its own text in search form, without the
    `以弗所书 1:10` prefix its keyword form carries — measured on the English → Chinese dev set
    (e5, exact search, recall@5): prefixed 0.637, Simplified text alone 0.708, Traditional
    0.675 (bench/results/fusion.md). Everything else: its search text (path prefix included)."""
    if chunk.type == "bible":
        return search_form(chunk.text)
    return chunk.search_text or chunk.text


def _resolved(path: str) -> str:
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError, ValueError):
        return path


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (".tsv.gz", ".txt.gz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def _homes(record: DocumentRecord) -> list[str]:
    """Where a document's points may be: its namespace, and the trash."""
    return [record.namespace, TRASH]


def point_id(chunk_id: str, gen: int) -> str:
    """The store id of a chunk in generation `gen` (deterministic)."""
    return str(uuid.uuid5(_POINT_NS, f"{chunk_id}|{gen}"))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


async def _report(progress: IndexProgress | None, done: int, total: int) -> None:
    if progress is None:
        return
    result = progress(done, total)
    if inspect.isawaitable(result):
        await result


class Indexer(SqliteOwner):
    def __init__(
        self,
        db_path: Path | str,
        store: VectorStore,
        embedder: Embedder,
        encoder: Bm25Encoder,
        graph: GraphIndex | None,
        *,
        namespace: str = CORPUS_NAMESPACE,
        common_df: int = termstats.COMMON_DF,
    ) -> None:
        super().__init__(db_path, _SCHEMA + termstats.SCHEMA, columns=_COLUMNS)
        self._lock = asyncio.Lock()
        # Documents outside the live shared library: on a shelf, or in the trash (namespace
        # "trash"), by id. Few (shelves are small); what `reading` reads.
        self._placed: dict[str, str] = {}
        self._readings: dict[str, Reading] = {}
        self.store = store
        self.embedder = embedder
        self.encoder = encoder
        self.graph = graph
        self.namespace = namespace
        self.common_df = common_df
        self._common: dict[int, int] = {}

    # ---- lifecycle ------------------------------------------------------------------------

    async def _loaded(self, db: aiosqlite.Connection) -> None:
        self._common = await termstats.common_terms(db, self.common_df)
        rows = await db.execute_fetchall(
            "SELECT doc_id, namespace, trashed_at FROM corpus_documents"
            " WHERE namespace != ? OR trashed_at != ''",
            (self.namespace,),
        )
        self._placed = {str(d): TRASH if t else str(ns) for d, ns, t in rows}
        self._readings.clear()

    def _place(self, doc_id: str, namespace: str | None) -> None:
        """Where a document is now, for `reading` (None: gone, or live in the shared library)."""
        if namespace is None or namespace == self.namespace:
            self._placed.pop(doc_id, None)
        else:
            self._placed[doc_id] = namespace
        self._readings.clear()

    # ---- what a reader sees -------------------------------------------------------------------

    def reading(self, shelf: str = "") -> Reading:
        """What a reader whose shelf is `shelf` ("" for none) sees: the shared library, its
        shelf while that holds a live document, and every other shelf's and the trash's
        documents hidden from the graph."""
        found = self._readings.get(shelf)
        if found is None:
            on_shelf = bool(shelf) and shelf in self._placed.values()
            namespaces = (self.namespace, shelf) if on_shelf else (self.namespace,)
            hidden = frozenset(d for d, ns in self._placed.items() if ns != shelf or not shelf)
            found = self._readings[shelf] = Reading(namespaces, hidden, shelf)
        return found

    # ---- registry -------------------------------------------------------------------------

    async def _rows(
        self, where: str = "", args: Sequence[Any] = (), columns: str = "*"
    ) -> list[dict[str, Any]]:
        sql = f"SELECT {columns} FROM corpus_documents {where}"
        cursor = await self.db.execute(sql, tuple(args))
        names = [d[0] for d in cursor.description]
        rows = await cursor.fetchall()
        await cursor.close()
        return [dict(zip(names, row, strict=True)) for row in rows]

    @staticmethod
    def _record(row: dict[str, Any]) -> DocumentRecord:
        return DocumentRecord(**{k: row[k] for k in _RECORD_FIELDS})

    @staticmethod
    def _in(namespaces: Sequence[str] | None) -> tuple[str, tuple[str, ...]]:
        """A WHERE condition on the row's namespace ("" and () for every namespace)."""
        if namespaces is None:
            return "", ()
        return f" AND namespace IN ({', '.join('?' * len(namespaces))})", tuple(namespaces)

    async def documents(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]:
        """The live documents (of `namespaces` only, when given), by title."""
        return await self._records("trashed_at = ''", namespaces, "source, doc_id")

    async def trash(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]:
        """The documents in the trash (that were in `namespaces`, when given), latest first."""
        return await self._records("trashed_at != ''", namespaces, "trashed_at DESC, source")

    async def _records(
        self, state: str, namespaces: Sequence[str] | None, order: str
    ) -> list[DocumentRecord]:
        where, args = self._in(namespaces)
        rows = await self._rows(f"WHERE {state}{where} ORDER BY {order}", args)
        return [self._record(r) for r in rows]

    async def source_names(self, namespaces: Sequence[str] | None = None) -> SourceNames:
        """The live documents' titles (Bible books aside) and eras, sorted (of `namespaces`
        only, when given): what `documents` would give, read in one query each (50k
        documents: 0.8 s as records)."""
        where, args = self._in(namespaces)
        titles = await self.db.execute_fetchall(
            "SELECT DISTINCT source FROM corpus_documents WHERE type != 'bible'"
            f" AND trashed_at = ''{where} ORDER BY source",
            args,
        )
        eras = await self.db.execute_fetchall(
            f"SELECT DISTINCT era FROM corpus_documents WHERE era != '' AND trashed_at = ''{where}"
            " ORDER BY era",
            args,
        )
        return SourceNames(tuple(str(r[0]) for r in titles), tuple(str(r[0]) for r in eras))

    async def document(self, doc_id: str) -> DocumentRecord | None:
        rows = await self._rows("WHERE doc_id = ?", (doc_id,))
        return self._record(rows[0]) if rows else None

    async def _write_row(
        self, doc: DocumentRecord, gen: int, graph_gen: int, has_points: bool
    ) -> None:
        values = astuple(doc)  # in the order of _RECORD_FIELDS
        cols = ", ".join((*_RECORD_FIELDS, "gen", "graph_gen", "has_points"))
        marks = ", ".join("?" * (len(_RECORD_FIELDS) + 3))
        await self.db.execute(
            f"INSERT OR REPLACE INTO corpus_documents ({cols}) VALUES ({marks})",
            (*values, gen, graph_gen, int(has_points)),
        )
        await self.db.commit()
        self._place(doc.doc_id, doc.namespace)

    async def _set_graph_gen(self, doc_id: str, gen: int) -> None:
        await self.db.execute(
            "UPDATE corpus_documents SET graph_gen = ? WHERE doc_id = ?", (gen, doc_id)
        )
        await self.db.commit()

    def common_terms(self, namespace: str) -> Mapping[int, int]:
        """The keyword terms held by at least `common_df` of this namespace's chunks,
        with their counts (the keyword track leaves them out while a rarer term remains)."""
        return self._common if namespace == self.namespace else {}

    async def _set_terms(self, doc_id: str, counts: Mapping[int, int] | None) -> None:
        """Stage the document's term counts in the open transaction (the registry write that
        follows commits them) — see `retrieval.termstats`."""
        await termstats.replace_document(self.db, doc_id, counts)

    async def _refresh_common(self) -> None:
        self._common = await termstats.common_terms(self.db, self.common_df)

    def _doc(self, doc_id: str, namespace: str | None = None) -> dict[str, FilterValue]:
        return {"namespace": namespace or self.namespace, "doc_id": doc_id}

    def _counted(self, namespace: str) -> bool:
        """Whether a namespace's documents count in the keyword terms' statistics: the shared
        library's only (a shelf is small, and no reader's search depends on another's)."""
        return namespace == self.namespace

    # ---- writing --------------------------------------------------------------------------

    def _stamp(self, chunks: Sequence[Chunk], doc: DocumentRecord, gen: int) -> list[Chunk]:
        out = []
        for c in chunks:
            if c.doc_id != doc.doc_id:
                raise ValueError(f"chunk {c.id} belongs to {c.doc_id!r}, not {doc.doc_id!r}")
            pid = point_id(c.id, gen)
            out.append(
                replace(
                    c,
                    id=pid,
                    namespace=doc.namespace,
                    ingested_at=c.ingested_at or doc.ingested_at,
                    extra={**c.extra, "gen": gen},
                )
            )
        return out

    def _encode(self, chunks: Sequence[Chunk]) -> list[SparseVector]:
        # The verse ids a chunk cites are keyword tokens too: a query naming the verse matches.
        return [
            self.encoder.encode_document(c.search_text or c.text, c.scripture_refs) for c in chunks
        ]

    def keyword_spec(self) -> KeywordSpec | None:
        """How another process makes this indexer's keyword encoder (`Bm25Encoder.spec`), to
        cut keyword vectors ahead; None when it cannot (another kind of encoder)."""
        return self.encoder.spec() if isinstance(self.encoder, Bm25Encoder) else None

    async def _upsert(
        self,
        chunks: Sequence[Chunk],
        progress: IndexProgress | None,
        vectors: Sequence[list[float]] | None = None,
        keywords: Sequence[SparseVector] | None = None,
    ) -> Counter[int]:
        """Embed (unless `vectors` are given, in the chunks' order), cut the keyword tokens
        (unless `keywords` are given, the same way) and store `chunks`; returns how many of
        them hold each keyword term."""
        for given, what in ((vectors, "vectors"), (keywords, "keyword vectors")):
            if given is not None and len(given) != len(chunks):
                raise ValueError(f"{len(given)} {what} for {len(chunks)} chunks")
        terms: Counter[int] = Counter()
        total = len(chunks)
        await _report(progress, 0, total)
        for start in range(0, total, EMBED_BATCH):
            batch = chunks[start : start + EMBED_BATCH]
            dense, sparse = await asyncio.gather(
                self._dense(batch, vectors, start), self._sparse(batch, keywords, start)
            )
            await self.store.upsert(
                [IndexedChunk(c, d, s) for c, d, s in zip(batch, dense, sparse, strict=True)]
            )
            terms.update(termstats.count_terms(sparse))
            await _report(progress, start + len(batch), total)
        return terms

    async def _dense(
        self, batch: Sequence[Chunk], vectors: Sequence[list[float]] | None, start: int
    ) -> list[list[float]]:
        if vectors is not None:
            return list(vectors[start : start + len(batch)])
        return await self.embedder.embed_passages([embed_text(c) for c in batch])

    async def _sparse(
        self, batch: Sequence[Chunk], keywords: Sequence[SparseVector] | None, start: int
    ) -> list[SparseVector]:
        if keywords is not None:
            return list(keywords[start : start + len(batch)])
        return await asyncio.to_thread(self._encode, batch)

    async def replace_document(
        self,
        doc: DocumentRecord,
        chunks: Sequence[Chunk],
        *,
        embed: bool = True,
        progress: IndexProgress | None = None,
        vectors: Sequence[list[float]] | None = None,
        keywords: Sequence[SparseVector] | None = None,
    ) -> IndexReport:
        """Index a document version; a no-op when its content hash is already registered.

        `embed=False` registers the document without points (Bible books outside the demo set:
        their text lives in `corpus_verses` only). `vectors`: the chunks' dense vectors (of
        `embed_text(chunk)`, in order) when the caller embedded them ahead (the ingest pipeline
        does, while the document before is indexed); else they are embedded here. `keywords`:
        the chunks' keyword vectors, in order, when the caller cut them ahead with this
        indexer's encoder (`Bm25Encoder.spec`: the pipeline's reading process does); else
        they are cut here."""
        async with self._lock:
            rows = await self._rows("WHERE doc_id = ?", (doc.doc_id,))
            old = rows[0] if rows else None
            if old is not None and old["trashed_at"]:
                await self._purge(self._record(old))  # indexed again: the trashed one goes
                old = None
            if old is not None and old["content_hash"] == doc.content_hash:
                return IndexReport("unchanged", old["chunk_count"])
            gen = int(old["gen"]) + 1 if old is not None else 1
            if old is not None:  # a document stays where it was first indexed
                doc = replace(doc, namespace=str(old["namespace"]))
            doc = replace(doc, chunk_count=len(chunks), ingested_at=doc.ingested_at or _now())
            stamped = self._stamp(chunks, doc, gen) if embed else []

            # Order matters for crash safety: new points in, then the registry names the new
            # generation, only then the old generation goes. A crash before the row write leaves
            # the old version (reconcile drops the unregistered new points); after it, the new one
            # (reconcile drops the old generation's leftovers).
            terms = await self._upsert(stamped, progress, vectors, keywords) if stamped else None
            old_graph_gen = int(old["graph_gen"]) if old is not None else 0
            await self._set_terms(doc.doc_id, terms if self._counted(doc.namespace) else None)
            await self._write_row(doc, gen, old_graph_gen, has_points=embed)
            await self._refresh_common()
            if old is not None or stamped:
                await self.store.delete(
                    Filter(equals=self._doc(doc.doc_id, doc.namespace), not_equals={"x_gen": gen})
                )
            concepts = await self._update_graph(doc.doc_id, stamped)
            await self._set_graph_gen(doc.doc_id, gen)

            refs = len({r for c in chunks for r in c.scripture_refs})
            status: Literal["added", "replaced"] = "replaced" if old is not None else "added"
            return IndexReport(status, len(chunks), refs, concepts)

    async def _update_graph(self, doc_id: str, chunks: Sequence[Chunk]) -> int:
        if self.graph is None:
            return 0
        if not chunks:
            await self.graph.delete_document(doc_id)
            return 0
        return await self.graph.index_document(doc_id, chunks)

    async def find_documents(
        self, key: str, namespaces: Sequence[str] | None = None, *, trashed: bool = False
    ) -> list[DocumentRecord]:
        """The live documents (of `namespaces`, when given; `trashed`: those in the trash)
        `key` names, by the first rule that matches any: the id; the title (also in the other
        script: 神的經綸 finds 神的经纶); the path the file was ingested from; that file's
        name; the name without its extension (`gbk_test` → gbk_test.txt). One Bible table
        file registers one document per book, so a path can name several."""
        key = key.strip()
        if not key:
            return []
        records = await (self.trash if trashed else self.documents)(namespaces)
        folded = search_form(key).casefold()
        as_path = _resolved(key)
        rules: tuple[Callable[[DocumentRecord], bool], ...] = (
            lambda r: r.doc_id == key,
            lambda r: r.source == key,
            lambda r: search_form(r.source).casefold() == folded,
            lambda r: bool(r.path) and _resolved(r.path) == as_path,
            lambda r: bool(r.path) and Path(r.path).name == key,
            lambda r: bool(r.path) and _stem(r.path) == key,
        )
        for rule in rules:
            found = [r for r in records if rule(r)]
            if found:
                return found
        return []

    async def delete_document(self, key: str) -> DocumentRecord | None:
        """Remove the documents `key` names (see `find_documents`): points, graph, verses,
        registry. Returns the first one removed, None when `key` names nothing."""
        removed = await self.delete_documents(await self.find_documents(key))
        return removed[0] if removed else None

    async def delete_documents(self, records: Sequence[DocumentRecord]) -> list[DocumentRecord]:
        """Remove the documents at once, live or in the trash, without passing the trash (a
        file indexed again under another title; `purge_documents` for the trash's own)."""
        async with self._lock:
            removed = []
            for record in records:
                rows = await self._rows("WHERE doc_id = ?", (record.doc_id,))
                if not rows:
                    continue  # already gone
                await self._purge(self._record(rows[0]))
                removed.append(record)
            if removed:
                await self._refresh_common()
            return removed

    async def _purge(self, record: DocumentRecord) -> None:
        """Every trace of the document, in an order a crash can resume from: the registry row
        says `pending = purge` first, then the graph rows, the points and the verses go, and
        the row last (`reconcile` finishes a row still pending)."""
        doc_id = record.doc_id
        await self.db.execute(
            "UPDATE corpus_documents SET pending = 'purge' WHERE doc_id = ?", (doc_id,)
        )
        await self._set_terms(doc_id, None)
        await self.db.commit()
        if self.graph is not None:
            await self.graph.delete_document(doc_id)
        await self.store.delete(Filter(equals={"doc_id": doc_id, "namespace": _homes(record)}))
        await self.db.execute("DELETE FROM corpus_verses WHERE doc_id = ?", (doc_id,))
        await self.db.execute("DELETE FROM corpus_verses_trash WHERE doc_id = ?", (doc_id,))
        await self.db.execute("DELETE FROM corpus_documents WHERE doc_id = ?", (doc_id,))
        await self.db.commit()
        self._place(doc_id, None)

    # ---- the trash ----------------------------------------------------------------------------

    async def trash_documents(
        self, records: Sequence[DocumentRecord], *, by: str = "", now: str = ""
    ) -> list[DocumentRecord]:
        """Move the live documents to the trash (`by`: who, `now`: when, ISO): searches and
        the graph stop seeing them at once; nothing is embedded again to bring them back.
        Returns them as they are now (trashed)."""
        moved: list[DocumentRecord] = []
        async with self._lock:
            for record in records:
                rows = await self._rows("WHERE doc_id = ? AND trashed_at = ''", (record.doc_id,))
                if not rows:
                    continue
                current = self._record(rows[0])
                stamp = now or _now()
                terms = await self.db.execute_fetchall(
                    "SELECT terms FROM corpus_doc_terms WHERE doc_id = ?", (current.doc_id,)
                )
                await self.db.execute(
                    "UPDATE corpus_documents SET trashed_at = ?, trashed_by = ?, pending = 'trash',"
                    " trash_terms = ? WHERE doc_id = ?",
                    (stamp, by, next((t[0] for t in terms), None), current.doc_id),
                )
                await self._set_terms(current.doc_id, None)
                await self._move_verses(current.doc_id, "corpus_verses", "corpus_verses_trash")
                await self.db.commit()
                self._place(current.doc_id, TRASH)
                await self._settle(replace(current, trashed_at=stamp, trashed_by=by))
                moved.append(replace(current, trashed_at=stamp, trashed_by=by))
            if moved:
                await self._refresh_common()
        return moved

    async def restore_document(self, record: DocumentRecord) -> DocumentRecord | None:
        """Bring a document back from the trash, as it was: the same points (moved back, not
        embedded again), verses, term counts and graph contribution. None: not in the trash."""
        async with self._lock:
            rows = await self._rows("WHERE doc_id = ? AND trashed_at != ''", (record.doc_id,))
            if not rows:
                return None
            row = rows[0]
            current = replace(self._record(row), trashed_at="", trashed_by="")
            await self.db.execute(
                "UPDATE corpus_documents SET trashed_at = '', trashed_by = '', pending = 'restore',"
                " trash_terms = NULL WHERE doc_id = ?",
                (current.doc_id,),
            )
            blob = row["trash_terms"]
            if blob is not None and self._counted(current.namespace):
                await self._set_terms(current.doc_id, termstats.unpack(blob))
            await self._move_verses(current.doc_id, "corpus_verses_trash", "corpus_verses")
            await self.db.commit()
            self._place(current.doc_id, current.namespace)
            await self._settle(current)
            await self._refresh_common()
            return current

    async def purge_documents(self, records: Sequence[DocumentRecord]) -> list[DocumentRecord]:
        """Empty the trash of these documents for good (the one irreversible step)."""
        purged = []
        async with self._lock:
            for record in records:
                rows = await self._rows("WHERE doc_id = ? AND trashed_at != ''", (record.doc_id,))
                if rows:
                    await self._purge(self._record(rows[0]))
                    purged.append(record)
        return purged

    async def expired(self, before: str) -> list[DocumentRecord]:
        """The documents trashed before `before` (ISO time), oldest first."""
        rows = await self._rows(
            "WHERE trashed_at != '' AND trashed_at < ? ORDER BY trashed_at", (before,)
        )
        return [self._record(r) for r in rows]

    async def _move_verses(self, doc_id: str, source: str, target: str) -> None:
        """A Bible book's verses between `corpus_verses` and its trash (no commit)."""
        await self.db.execute(
            f"INSERT OR REPLACE INTO {target} ({_VERSE_COLUMNS})"
            f" SELECT {_VERSE_COLUMNS} FROM {source} WHERE doc_id = ?",
            (doc_id,),
        )
        await self.db.execute(f"DELETE FROM {source} WHERE doc_id = ?", (doc_id,))

    async def _settle(self, record: DocumentRecord) -> None:
        """Put the document's points where its row says (the trash, or its home), then clear
        the row's `pending`: the second step of a trash or a restore, and what `reconcile`
        redoes for a row a crash left pending."""
        home = record.namespace
        there, here = (home, TRASH) if record.trashed else (TRASH, home)
        await self.store.move(Filter(equals=self._doc(record.doc_id, there)), here)
        await self.db.execute(
            "UPDATE corpus_documents SET pending = '' WHERE doc_id = ?", (record.doc_id,)
        )
        await self.db.commit()

    # ---- recovery -------------------------------------------------------------------------

    async def reconcile(self) -> ReconcileReport:
        """Bring points and graph in line with the registry after a crash (run at start-up).

        Finishes what a row still says is pending (a trash, a restore or a purge cut short),
        deletes the library's points whose (doc_id, x_gen) the registry does not record in
        their namespace, and rebuilds graph contributions that lag behind their document's
        generation."""
        async with self._lock:
            for row in await self._rows("WHERE pending != ''"):
                record = self._record(row)
                await (self._purge if row["pending"] == "purge" else self._settle)(record)
            namespaces = await self._namespaces()
            everywhere = {"namespace": namespaces}
            # Two aggregates at once (the store counts in its process while SQLite sums): a
            # million-chunk library's start-up read every document's row here (0.2 s).
            before, registered = await asyncio.gather(
                self.store.count(Filter(equals=everywhere)), self._registered_points()
            )
            # A registered version's points are all written before its row, so only orphans
            # make the count differ: when it matches, the filters below (1 s at a million
            # chunks, on every start-up) have nothing to delete.
            after = before
            if before != registered:
                await self._delete_all_orphans(namespaces)
                after = await self.store.count(Filter(equals=everywhere))
            rebuilt = 0
            for row in await self._rows("WHERE graph_gen != gen"):
                record = self._record(row)
                chunks: list[Chunk] = []
                if row["has_points"]:
                    where = TRASH if record.trashed else record.namespace
                    chunks = await self.store.scroll(
                        Filter(equals=self._doc(record.doc_id, where)), limit=SCROLL_LIMIT
                    )
                    chunks.sort(key=lambda c: c.position)
                await self._update_graph(record.doc_id, chunks)
                await self._set_graph_gen(record.doc_id, int(row["gen"]))
                rebuilt += 1
            counted = await self._count_missing_terms()
            return ReconcileReport(before - after, rebuilt, counted)

    async def _namespaces(self) -> list[str]:
        """The library's namespaces: the shared library, the trash, every shelf in use."""
        rows = await self.db.execute_fetchall("SELECT DISTINCT namespace FROM corpus_documents")
        found = {str(r[0]) for r in rows if is_shelf(str(r[0]))}
        return [self.namespace, TRASH, *sorted(found)]

    async def _delete_all_orphans(self, namespaces: Sequence[str]) -> None:
        """In each namespace, the points no registry row places there."""
        by_place: dict[str, dict[int, list[str]]] = {ns: {} for ns in namespaces}
        for row in await self._rows(
            "WHERE has_points", columns="doc_id, gen, namespace, trashed_at"
        ):
            place = TRASH if row["trashed_at"] else str(row["namespace"])
            by_place.setdefault(place, {}).setdefault(int(row["gen"]), []).append(row["doc_id"])
        for place, by_gen in by_place.items():
            ns = {"namespace": place}
            present = await self.store.count(Filter(equals=ns))
            await self._delete_orphans(ns, by_gen, present)

    async def _registered_points(self) -> int:
        """How many points the registry's documents have in the store."""
        rows = await self.db.execute_fetchall(
            "SELECT COALESCE(SUM(chunk_count), 0) FROM corpus_documents WHERE has_points"
        )
        return int(next(iter(rows))[0])

    async def _delete_orphans(
        self, ns: Mapping[str, FilterValue], by_gen: dict[int, list[str]], present: int
    ) -> None:
        """Points whose (doc_id, x_gen) the registry does not record."""
        if not by_gen:
            if present:
                await self.store.delete(Filter(equals=ns))
            return
        await self.store.delete(Filter(equals=ns, not_equals={"x_gen": sorted(by_gen)}))
        for gen, doc_ids in sorted(by_gen.items()):
            await self.store.delete(
                Filter(equals={**ns, "x_gen": gen}, not_equals={"doc_id": doc_ids})
            )

    async def _count_missing_terms(self) -> int:
        """Count the keyword terms of documents indexed before term counts were kept (by an
        older version), from their stored chunks: once per document."""
        missing = await self.db.execute_fetchall(
            "SELECT doc_id FROM corpus_documents WHERE has_points AND chunk_count > 0"
            " AND namespace = ? AND trashed_at = ''"
            " AND doc_id NOT IN (SELECT doc_id FROM corpus_doc_terms)",
            (self.namespace,),
        )
        counted = 0
        for (doc_id,) in missing:
            chunks = await self.store.scroll(Filter(equals=self._doc(doc_id)), limit=SCROLL_LIMIT)
            if not chunks:
                continue
            vectors = await asyncio.to_thread(self._encode, chunks)
            await self._set_terms(doc_id, termstats.count_terms(vectors))
            await self.db.commit()
            counted += 1
        if counted:
            await self._refresh_common()
        return counted

    # ---- Bible verses ---------------------------------------------------------------------

    async def put_verses(self, rows: Iterable[VerseRow], *, doc_id: str = "") -> None:
        """Store verse text (replacing the same version + verse); `doc_id` ties the rows to a
        registered document so `delete_document` removes them."""
        await self.db.executemany(
            "INSERT OR REPLACE INTO corpus_verses "
            "(version, osis, book, chapter, verse, text, doc_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(r.version, r.osis, r.book, r.chapter, r.verse, r.text, doc_id) for r in rows],
        )
        await self.db.commit()

    async def verses(self, osis_ids: Sequence[str]) -> list[VerseRow]:
        """Verses by OSIS id (`Eph.1.10`) or whole chapters (`Ps.23`), in the order asked."""
        out: list[VerseRow] = []
        seen: set[tuple[str, str]] = set()
        for osis in osis_ids:
            parts = osis.split(".")
            if len(parts) == 2 and parts[1].isdigit():
                cursor = await self.db.execute(
                    "SELECT version, osis, book, chapter, verse, text FROM corpus_verses "
                    "WHERE book = ? AND chapter = ? ORDER BY verse, version",
                    (parts[0], int(parts[1])),
                )
            else:
                cursor = await self.db.execute(
                    "SELECT version, osis, book, chapter, verse, text FROM corpus_verses "
                    "WHERE osis = ? ORDER BY version",
                    (osis,),
                )
            for row in await cursor.fetchall():
                v = VerseRow(row[0], row[1], row[2], int(row[3]), int(row[4]), row[5])
                if (v.version, v.osis) not in seen:
                    seen.add((v.version, v.osis))
                    out.append(v)
            await cursor.close()
        return out

    async def has_bible(self) -> bool:
        cursor = await self.db.execute("SELECT 1 FROM corpus_verses LIMIT 1")
        row = await cursor.fetchone()
        await cursor.close()
        return row is not None
