"""A SQLite cache in front of any Embedder: re-indexing unchanged text costs nothing.

Table `embed_cache(model_id, content_hash, vector)`: the key is the embedder's `model_id`
and sha256 of the text (queries are keyed under `<model_id>#query`, since models embed
queries differently); vectors are little-endian float32 blobs. Only misses reach the inner
embedder, once per distinct text; the output keeps the input order. Results are float32
values whether they come from the cache or the model, so a hit equals the miss before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import aiosqlite
import numpy as np

from retrieval.embed import DimProbe
from retrieval.ports import Embedder
from retrieval.sqlite import SqliteOwner

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embed_cache (
    model_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, content_hash)
) WITHOUT ROWID
"""
_LOOKUP_CHUNK = 500  # keys per SELECT (SQLite's bound-parameter limit is far above)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder(SqliteOwner):
    """`async with CachedEmbedder(inner, db_path) as embedder:` — an Embedder. Opening it
    also probes an inner embedder that learns its dimension from its model."""

    def __init__(self, inner: Embedder, db_path: Path) -> None:
        super().__init__(db_path, _SCHEMA)
        self._inner = inner
        self.hits = 0
        self.misses = 0

    async def _loaded(self, db: aiosqlite.Connection) -> None:
        if isinstance(self._inner, DimProbe):
            await self._inner.probe()

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    @property
    def inner(self) -> Embedder:
        return self._inner

    async def aclose(self) -> None:
        """The cache owns its inner embedder: closing one closes both (the SQLite connection
        closes with `async with`)."""
        await self._inner.aclose()

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise ValueError("embed_passages takes a list of texts, not one string")
        return await self._cached(list(texts), self._inner.model_id, query=False)

    async def embed_query(self, text: str) -> list[float]:
        return (await self._cached([text], self._inner.model_id + "#query", query=True))[0]

    async def _cached(self, texts: list[str], key: str, *, query: bool) -> list[list[float]]:
        db = self.db
        for t in texts:
            if not isinstance(t, str):
                raise ValueError(f"texts must be strings, got {type(t).__name__}")
        if not texts:
            return []
        hashes = [_hash(t) for t in texts]
        found = await self._lookup(db, key, sorted(set(hashes)))
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h in found:
                self.hits += 1
            else:
                self.misses += 1
                missing.setdefault(h, t)
        if missing:
            miss_texts = list(missing.values())
            if query:
                vectors = [await self._inner.embed_query(miss_texts[0])]
            else:
                vectors = await self._inner.embed_passages(miss_texts)
            if len(vectors) != len(miss_texts):
                raise ValueError(
                    f"{self._inner.model_id} returned {len(vectors)} vectors "
                    f"for {len(miss_texts)} texts"
                )
            rows = []
            for h, vec in zip(missing, vectors, strict=True):
                arr = np.asarray(vec, dtype="<f4")
                if arr.shape != (self.dim,):
                    raise ValueError(
                        f"{self._inner.model_id} returned a {arr.size}-d vector, expected {self.dim}"
                    )
                found[h] = arr
                rows.append((key, h, arr.tobytes()))
            await db.executemany(
                "INSERT OR REPLACE INTO embed_cache (model_id, content_hash, vector) VALUES (?, ?, ?)",
                rows,
            )
            await db.commit()
        return [found[h].tolist() for h in hashes]

    async def _lookup(
        self, db: aiosqlite.Connection, key: str, hashes: list[str]
    ) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        size = self.dim * 4
        for start in range(0, len(hashes), _LOOKUP_CHUNK):
            part = hashes[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(part))
            async with db.execute(
                f"SELECT content_hash, vector FROM embed_cache "
                f"WHERE model_id = ? AND content_hash IN ({marks})",
                (key, *part),
            ) as cursor:
                async for content_hash, blob in cursor:
                    if len(blob) == size:  # a wrong-sized row is treated as a miss
                        found[content_hash] = np.frombuffer(blob, dtype="<f4")
        return found
