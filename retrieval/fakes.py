"""In-process fakes of the retrieval seams, for unit tests of the code above them.

They pass the same contract suites as the real implementations (`tests/contract/`), so a
unit test that runs on a fake exercises the semantics production relies on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import struct
from collections.abc import Sequence
from typing import Any

from retrieval.ports import VectorStore
from retrieval.store import StoreUnavailable, schema
from retrieval.types import Chunk, Filter, IndexedChunk, ScoredChunk, SparseVector


class MemoryStore(VectorStore):
    """A VectorStore in a dict: exact cosine for dense vectors; for sparse vectors the dot
    product with Qdrant's IDF modifier (idf = ln((N - n + 0.5) / (n + 0.5) + 1), over the
    whole store), so BM25 rankings match Qdrant Edge's. Filters use `Filter.matches`."""

    def __init__(self, dim: int) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = dim
        self._points: dict[str, tuple[dict[str, Any], list[float], dict[int, float]]] = {}
        self._closed = False

    @property
    def dim(self) -> int:
        return self._dim

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("the vector store is closed")

    def _select(self, flt: Filter | None) -> list[tuple[str, dict[str, Any]]]:
        plan = schema.plan(flt)  # same validation as the real stores
        if flt is not None and flt.ids is not None:  # ids compared in their canonical form
            flt = dataclasses.replace(flt, ids=frozenset(plan.ids or ()))
        return [
            (pid, payload)
            for pid, (payload, _, _) in sorted(self._points.items())
            if flt is None or flt.matches(payload, pid)
        ]

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        self._check_open()
        for point in schema.prepare(items, self._dim):
            norm = math.sqrt(sum(v * v for v in point.dense))
            dense = [v / norm for v in point.dense]
            sparse = dict(zip(point.sparse_indices, point.sparse_values, strict=True))
            self._points[point.id] = (_copy(point.payload), dense, sparse)

    async def delete(self, flt: Filter) -> None:
        self._check_open()
        if schema.plan(flt).empty:
            raise ValueError("refusing to delete with an empty filter; use delete_all()")
        for pid, _ in self._select(flt):
            del self._points[pid]

    async def delete_all(self) -> None:
        self._check_open()
        self._points.clear()

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        self._check_open()
        extra = schema.extra_payload(values)
        for _, payload in self._select(flt):
            payload.update(_copy(extra))

    async def move(self, flt: Filter, namespace: str) -> None:
        self._check_open()
        payload = schema.move_payload(schema.plan(flt), namespace)
        for _, stored in self._select(flt):
            stored.update(payload)

    async def search_dense(
        self, vector: Sequence[float], *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        self._check_open()
        query = schema.dense_query(vector, self._dim, limit)
        norm = math.sqrt(sum(v * v for v in query))
        scored = []
        for pid, payload in self._select(flt):
            dense = self._points[pid][1]
            score = sum(a * b for a, b in zip(query, dense, strict=True)) / norm
            scored.append((score, pid, payload))
        return _top(scored, limit)

    async def search_sparse(
        self, vector: SparseVector, *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        self._check_open()
        indices, values = schema.sparse_query(vector, limit)
        total = len(self._points)
        idf: dict[int, float] = {}
        for index in indices:
            n = sum(1 for _, _, sparse in self._points.values() if index in sparse)
            idf[index] = math.log((total - n + 0.5) / (n + 0.5) + 1.0)
        scored = []
        for pid, payload in self._select(flt):
            sparse = self._points[pid][2]
            shared = [(i, v) for i, v in zip(indices, values, strict=True) if i in sparse]
            if shared:
                score = sum(v * sparse[i] * idf[i] for i, v in shared)
                scored.append((score, pid, payload))
        return _top(scored, limit)

    async def optimize(self) -> bool:
        self._check_open()
        return False  # nothing to index: every search reads every point

    async def scroll(
        self, flt: Filter | None = None, *, limit: int = 1000, fields: Sequence[str] | None = None
    ) -> list[Chunk]:
        self._check_open()
        schema.check_limit(limit)
        return [Chunk.from_payload(pid, _copy(p, fields)) for pid, p in self._select(flt)[:limit]]

    async def count(self, flt: Filter | None = None) -> int:
        self._check_open()
        return len(self._select(flt))

    async def close(self) -> None:
        self._closed = True


def _copy(payload: dict[str, Any], fields: Sequence[str] | None = None) -> dict[str, Any]:
    keep = payload.keys() if fields is None else set(fields).intersection(payload)
    return {
        k: list(v) if isinstance(v, list | tuple) else v for k, v in payload.items() if k in keep
    }


def _top(scored: list[tuple[float, str, dict[str, Any]]], limit: int) -> list[ScoredChunk]:
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [ScoredChunk(Chunk.from_payload(pid, _copy(p)), s) for s, pid, p in scored[:limit]]


class HashEmbedder:
    """Deterministic bag-of-character-bigrams embedder: texts sharing bigrams are near.

    Each bigram (unigram for one-character texts) is hashed to a bucket and a sign;
    the vector is L2-normalised and rounded to float32 like real embedders' output.
    Queries and passages share one space (no prefixes).
    """

    def __init__(self, dim: int = 64) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = dim
        self.calls = 0  # number of embed calls, for tests of caching layers

    @property
    def model_id(self) -> str:
        return f"hash-bigram-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _embed(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise ValueError(f"texts must be strings, got {type(text).__name__}")
        compact = "".join(text.lower().split())
        grams = [compact[i : i + 2] for i in range(len(compact) - 1)] or [compact or "\0"]
        vec = [0.0] * self._dim
        for gram in grams:
            digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._dim
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec))
        if norm == 0.0:  # every bigram cancelled out: fall back to a fixed direction
            vec[0], norm = 1.0, 1.0
        packed = struct.pack(f"<{self._dim}f", *(v / norm for v in vec))
        return list(struct.unpack(f"<{self._dim}f", packed))

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise ValueError("embed_passages takes a list of texts, not one string")
        self.calls += 1
        return [self._embed(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._embed(text)

    async def aclose(self) -> None:
        return None
