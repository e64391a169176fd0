"""How many chunks hold each BM25 term, so the keyword track can leave out the terms most hold.

Why: Qdrant's sparse search reads every posting of every query term. At a million chunks a
term held by a third of them costs ~3.6 ms on its own and tells little (its IDF is about 1),
and two such terms in one query defeat the index's max-score pruning (6-10 ms). Qdrant keeps
these counts for its IDF modifier but does not expose them, so the indexer keeps its own, in
the registry's database:

- `corpus_doc_terms`: per document, each term and the number of its chunks holding it (one
  packed blob per document);
- `corpus_term_df`: per term, the sum over documents (its document frequency in chunks).

Both change in the SQLite transaction that writes or deletes the document's registry row, so
they follow the registry exactly: a crash leaves both as they were.

Below `COMMON_DF` chunks nothing is ever left out, so a library smaller than that ranks exactly
as plain BM25 does; only a term held by at least that many chunks is dropped, and only while a
rarer term of the query remains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import aiosqlite

from retrieval.types import SparseVector

# Postings above which a query term is left out while a rarer one remains (see the module
# docstring). Measured at 1M chunks in bench/results/million.md.
COMMON_DF = 20_000
# When every term of a query is common, the rarest this many still search.
KEEP_WHEN_ALL_COMMON = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS corpus_doc_terms (
    doc_id TEXT PRIMARY KEY,
    terms BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS corpus_term_df (
    term INTEGER PRIMARY KEY,
    df INTEGER NOT NULL
);
"""


def count_terms(vectors: Iterable[SparseVector]) -> Counter[int]:
    """Term → number of the vectors (chunks) holding it."""
    counts: Counter[int] = Counter()
    for v in vectors:
        counts.update(v.indices)
    return counts


def pack(counts: Mapping[int, int]) -> bytes:
    import numpy as np  # on first write: a one-shot command that only reads starts sooner

    pairs = np.array(sorted(counts.items()), dtype="<i8").reshape(-1, 2)
    return pairs.tobytes()


def unpack(blob: bytes) -> dict[int, int]:
    import numpy as np

    pairs = np.frombuffer(blob, dtype="<i8").reshape(-1, 2)
    return {int(t): int(n) for t, n in pairs}


async def add(db: aiosqlite.Connection, counts: Mapping[int, int], sign: int = 1) -> None:
    """Add (sign 1) or take away (sign -1) `counts` from `corpus_term_df`, without committing:
    the caller's transaction holds the registry change these belong to."""
    await db.executemany(
        "INSERT INTO corpus_term_df (term, df) VALUES (?, ?) "
        "ON CONFLICT(term) DO UPDATE SET df = df + excluded.df",
        [(t, sign * n) for t, n in counts.items()],
    )
    if sign < 0:
        await db.execute("DELETE FROM corpus_term_df WHERE df <= 0")


async def replace_document(
    db: aiosqlite.Connection, doc_id: str, counts: Mapping[int, int] | None
) -> None:
    """The document's terms become `counts` (None: it has none any more). No commit."""
    cursor = await db.execute("SELECT terms FROM corpus_doc_terms WHERE doc_id = ?", (doc_id,))
    row = await cursor.fetchone()
    await cursor.close()
    if row is not None:
        await add(db, unpack(row[0]), -1)
        await db.execute("DELETE FROM corpus_doc_terms WHERE doc_id = ?", (doc_id,))
    if counts:
        await add(db, counts)
        await db.execute(
            "INSERT INTO corpus_doc_terms (doc_id, terms) VALUES (?, ?)", (doc_id, pack(counts))
        )


async def common_terms(db: aiosqlite.Connection, min_df: int = COMMON_DF) -> dict[int, int]:
    """The terms held by at least `min_df` chunks, with their counts: few, kept in memory."""
    cursor = await db.execute("SELECT term, df FROM corpus_term_df WHERE df >= ?", (min_df,))
    rows = await cursor.fetchall()
    await cursor.close()
    return {int(t): int(df) for t, df in rows}


def drop_common(vector: SparseVector, common: Mapping[int, int]) -> SparseVector:
    """`vector` without its common terms while a rarer term remains; when all are common, the
    `KEEP_WHEN_ALL_COMMON` rarest of them. `common` maps each common term to its count."""
    if not common or not any(i in common for i in vector.indices):
        return vector
    keep = {i for i in vector.indices if i not in common}
    if not keep:
        by_rarity = sorted(vector.indices, key=lambda i: (common[i], i))
        keep = set(by_rarity[:KEEP_WHEN_ALL_COMMON])
    pairs = [(i, w) for i, w in zip(vector.indices, vector.values, strict=True) if i in keep]
    return SparseVector(tuple(i for i, _ in pairs), tuple(w for _, w in pairs))
