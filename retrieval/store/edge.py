"""VectorStore on Qdrant Edge: the Qdrant engine in-process, one shard on local disk.

Edge calls are synchronous Rust calls. Writes (and open/flush/close/optimize) run on one
dedicated thread, so they are serialised in submission order; reads run on a small pool of
their own and may overlap writes (the engine allows it; measured in the contract suite).

Layout under `path`: the shard's own files plus `baibao-store.json`, which records the
dense vector size so that a store built for one embedder is never read with another.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import qdrant_edge as qe

from retrieval.store import DimensionMismatch, StoreError, StoreUnavailable, schema
from retrieval.types import Chunk, Filter, IndexedChunk, ScoredChunk, SparseVector

META_FILE = "baibao-store.json"
META_FORMAT = 1
UPSERT_BATCH = 256
SCROLL_PAGE = 256

T = TypeVar("T")

_INDEX_TYPES = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "bool": qe.PayloadSchemaType.Bool,
}


_SPARSE_MEMORY = qe.Memory.Cold


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the shard keeps what, in Qdrant's own terms.

    `IN_MEMORY` (the default) keeps vectors, sparse index and payload resident. `ON_DISK` is for
    a library of hundreds of thousands to a million chunks on one machine: the original
    vectors and the payload stay in files (memory-mapped, read on demand), the dense search
    runs on int8 scalar-quantized copies kept in RAM and rescores its `oversampling` × limit
    best with the originals, and the sparse (BM25) index and the payload indexes are
    memory-mapped too (read on demand, not loaded at start-up). Both layouts search HNSW with
    `hnsw_ef` candidates and filtered searches with ACORN. Measured in
    `bench/bench_million.py` (bench/results/million.md)."""

    vectors_on_disk: bool = False
    quantized: bool = False
    payload_on_disk: bool = False
    sparse_on_disk: bool = False
    indexes_on_disk: bool = False
    oversampling: float = 2.0
    # Filters keeping at most this share of the points search with ACORN (a hop also looks
    # at the neighbours of neighbours that fail the filter). Measured at 100k: a filter keeping
    # 46% lost a tenth of the true top 10 in plain filtered HNSW (recall@10 0.887), none with
    # ACORN (0.985, +2 ms); one keeping 77% lost nothing without it.
    acorn_max_selectivity: float = 0.6
    # Candidates an HNSW search keeps (Qdrant's default is ef_construct, 100). At 1M clustered
    # points recall@10 against exact search was 0.843 with the default, 0.978 with 256, for
    # +0.1 ms (bench/results/million.md).
    hnsw_ef: int = 256
    # Payload indexes kept in RAM even when the others are memory-mapped: the ones every
    # search filters on. Every dense and BM25 candidate is checked against the namespace
    # condition; through a mapped index that check cost ~2 ms of a 12 ms fused search at 1M
    # chunks, for an index of a few dozen MB (bench/results/million.md).
    resident_indexes: tuple[str, ...] = ("namespace",)

    def config(self, dim: int) -> qe.EdgeConfig:
        quantization = (
            qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned)
            if self.quantized
            else None
        )
        dense = qe.EdgeVectorParams(
            size=dim,
            distance=qe.Distance.Cosine,
            memory=qe.Memory.Cold if self.vectors_on_disk else None,
            quantization_config=quantization,
        )
        sparse = qe.EdgeSparseVectorParams(
            modifier=qe.Modifier.Idf, memory=_SPARSE_MEMORY if self.sparse_on_disk else None
        )
        return qe.EdgeConfig(
            vectors={schema.DENSE: dense},
            sparse_vectors={schema.SPARSE: sparse},
            payload_memory=qe.Memory.Cold if self.payload_on_disk else None,
        )

    def index_on_disk(self, key: str) -> bool:
        return self.indexes_on_disk and key not in self.resident_indexes

    def index_schema(self, key: str, kind: str) -> qe.PayloadSchemaType | qe.PayloadSchemaParams:
        """How the payload index on `key` is created: in RAM, or memory-mapped."""
        if not self.index_on_disk(key):
            return _INDEX_TYPES[kind]
        cold = qe.Memory.Cold
        if kind == "keyword":
            return qe.KeywordIndexParams(memory=cold)
        if kind == "integer":
            return qe.IntegerIndexParams(lookup=True, range=True, memory=cold)
        return qe.BoolIndexParams(memory=cold)

    def search_params(self, *, exact: bool, hnsw_ef: int | None) -> qe.SearchParams:
        quantization = None
        if self.quantized:
            # exact means exact: the original vectors, not the int8 copies
            quantization = (
                qe.QuantizationSearchParams(ignore=True)
                if exact
                else qe.QuantizationSearchParams(rescore=True, oversampling=self.oversampling)
            )
        acorn = qe.AcornSearchParams(enable=True, max_selectivity=self.acorn_max_selectivity)
        return qe.SearchParams(
            hnsw_ef=hnsw_ef or self.hnsw_ef, exact=exact, quantization=quantization, acorn=acorn
        )


IN_MEMORY = Layout()
ON_DISK = Layout(
    vectors_on_disk=True,
    quantized=True,
    payload_on_disk=True,
    sparse_on_disk=True,
    indexes_on_disk=True,
)


def _config(dim: int, layout: Layout = IN_MEMORY) -> qe.EdgeConfig:
    return layout.config(dim)


def edge_filter(flt: Filter | None) -> qe.Filter | None:
    """retrieval Filter → qdrant_edge Filter (None when there is no condition)."""
    plan = schema.plan(flt)
    if plan.empty:
        return None
    must: list[qe.FieldCondition] = []
    for cond in plan.must:
        if isinstance(cond, schema.Range):
            must.append(
                qe.FieldCondition(cond.key, range=qe.RangeFloat(gte=cond.low, lte=cond.high))
            )
        else:
            must.append(_edge_match(cond))
    must_not = [_edge_match(cond) for cond in plan.must_not]
    return qe.Filter(must=must or None, must_not=must_not or None)  # type: ignore[arg-type]


def _edge_match(cond: schema.Match) -> qe.FieldCondition:
    if len(cond.values) == 1:
        value = cond.values[0]
        if isinstance(value, bool):
            # qdrant-edge-py 0.9.0 turns a Python bool into the integer 1/0, which never
            # matches a boolean payload; numpy.bool_ reaches the engine as a boolean.
            value = np.bool_(value)  # type: ignore[assignment]
        return qe.FieldCondition(cond.key, match=qe.MatchValue(value))
    return qe.FieldCondition(cond.key, match=qe.MatchAny(list(cond.values)))  # type: ignore[arg-type]


def _read_meta(path: Path) -> dict[str, Any] | None:
    meta = path / META_FILE
    if not meta.exists():
        return None
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read {meta}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("dim"), int):
        raise StoreError(f"{meta} is not a valid store description (no integer 'dim')")
    return data


def _write_meta(path: Path, dim: int) -> None:
    tmp = path / (META_FILE + ".tmp")
    data = {"format": META_FORMAT, "dim": dim, "dense": schema.DENSE, "sparse": schema.SPARSE}
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path / META_FILE)


def _open_shard(path: Path, dim: int, layout: Layout = IN_MEMORY) -> qe.EdgeShard:
    path.mkdir(parents=True, exist_ok=True)
    meta = _read_meta(path)
    if meta is not None and meta["dim"] != dim:
        raise DimensionMismatch(meta["dim"], dim, str(path))
    has_segments = (path / "segments").exists()
    try:
        if has_segments:
            shard = qe.EdgeShard.load(str(path), _config(dim, layout))
        else:
            shard = qe.EdgeShard.create(str(path), _config(dim, layout))
    except Exception as exc:
        if has_segments and "dim" in str(exc).lower():
            raise StoreError(
                f"the Qdrant Edge shard at {path} does not hold {dim}-d vectors ({exc}); "
                f"switching embedders requires re-indexing"
            ) from exc
        raise StoreError(f"cannot open the Qdrant Edge shard at {path}: {exc}") from exc
    try:
        existing = shard.info().payload_schema
        for key, kind in schema.PAYLOAD_INDEXES:
            index = existing.get(key)
            if index is not None and _mapped(index) == layout.index_on_disk(key):
                continue
            if index is not None:  # the layout changed: move the index in or out of RAM
                shard.update(qe.UpdateOperation.delete_field_index(key))
            schema_params = layout.index_schema(key, kind)
            shard.update(qe.UpdateOperation.create_field_index(key, schema_params))
        if meta is None:
            _write_meta(path, dim)
    except BaseException:
        shard.close()
        raise
    return shard


def _mapped(index: qe.PayloadIndexInfo) -> bool:
    """Whether an existing payload index is memory-mapped (created with `Memory.Cold`)."""
    return getattr(index.params, "memory", None) == qe.Memory.Cold


def _to_point(p: schema.PreparedPoint) -> qe.Point:
    vector: dict[str, Any] = {
        schema.DENSE: p.dense,
        schema.SPARSE: qe.SparseVector(p.sparse_indices, p.sparse_values),
    }
    return qe.Point(p.id, vector, p.payload)


def _scored(points: Sequence[qe.ScoredPoint]) -> list[ScoredChunk]:
    return [
        ScoredChunk(Chunk.from_payload(str(p.id), p.payload or {}), float(p.score)) for p in points
    ]


class EdgeStore:
    """VectorStore on one Qdrant Edge shard. Open with `await EdgeStore.open(path, dim)`."""

    def __init__(
        self,
        shard: qe.EdgeShard,
        path: Path,
        dim: int,
        writer: ThreadPoolExecutor,
        layout: Layout = IN_MEMORY,
    ) -> None:
        self._shard = shard
        self._layout = layout
        self._path = path
        self._dim = dim
        self._writer = writer
        self._readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="edge-read")
        self._closed = False

    @classmethod
    async def open(cls, path: Path, dim: int, layout: Layout = IN_MEMORY) -> EdgeStore:
        """Create the shard under `path`, or load it when it exists (dims must agree);
        `layout` says what stays on disk (it can change between runs)."""
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        path = Path(path)
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge-write")
        try:
            shard = await asyncio.get_running_loop().run_in_executor(
                writer, _open_shard, path, dim, layout
            )
        except BaseException:
            writer.shutdown(wait=False)
            raise
        return cls(shard, path, dim, writer, layout)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def path(self) -> Path:
        return self._path

    # ---- plumbing ------------------------------------------------------------------------

    async def _run(self, pool: ThreadPoolExecutor, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StoreUnavailable(f"the vector store at {self._path} is closed")

        def call() -> T:
            try:
                return fn()
            except (StoreError, ValueError):
                raise
            except Exception as exc:
                raise StoreError(f"Qdrant Edge ({self._path}): {exc}") from exc

        return await asyncio.get_running_loop().run_in_executor(pool, call)

    async def _write(self, fn: Callable[[], T]) -> T:
        return await self._run(self._writer, fn)

    async def _read(self, fn: Callable[[], T]) -> T:
        return await self._run(self._readers, fn)

    # ---- VectorStore -----------------------------------------------------------------------

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        points = [_to_point(p) for p in schema.prepare(items, self._dim)]
        for start in range(0, len(points), UPSERT_BATCH):
            batch = points[start : start + UPSERT_BATCH]
            operation = qe.UpdateOperation.upsert_points(batch)
            await self._write(partial(self._shard.update, operation))

    async def delete(self, flt: Filter) -> None:
        condition = edge_filter(flt)
        if condition is None:
            raise ValueError("refusing to delete with an empty filter; use delete_all()")
        await self._write(
            lambda: self._shard.update(qe.UpdateOperation.delete_points_by_filter(condition))
        )

    async def delete_all(self) -> None:
        """Delete every point (the shard, its config and indexes stay)."""
        await self._write(
            lambda: self._shard.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter()))
        )

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        payload = schema.extra_payload(values)
        condition = edge_filter(flt) or qe.Filter()
        await self._write(
            lambda: self._shard.update(qe.UpdateOperation.set_payload_by_filter(condition, payload))
        )

    async def search_dense(
        self,
        vector: Sequence[float],
        *,
        flt: Filter | None = None,
        limit: int = 10,
        exact: bool = False,
        hnsw_ef: int | None = None,
    ) -> list[ScoredChunk]:
        schema.check_limit(limit)
        query = schema.dense_matrix([vector], self._dim)[0].tolist()
        params = self._layout.search_params(exact=exact, hnsw_ef=hnsw_ef)
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query, using=schema.DENSE),
            filter=edge_filter(flt),
            params=params,
            with_payload=True,
            with_vector=False,
        )
        return _scored(await self._read(lambda: self._shard.query(request)))

    async def search_sparse(
        self, vector: SparseVector, *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        schema.check_limit(limit)
        indices, values = schema.check_sparse(vector)
        if not indices:
            return []
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(qe.SparseVector(indices, values), using=schema.SPARSE),
            filter=edge_filter(flt),
            with_payload=True,
            with_vector=False,
        )
        return _scored(await self._read(lambda: self._shard.query(request)))

    async def search_hybrid(
        self,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        flt: Filter | None = None,
        limit: int = 10,
        weights: tuple[float, float] = (0.5, 0.5),
        k: int = 60,
        prefetch: int | None = None,
    ) -> list[ScoredChunk]:
        """Dense + sparse fused by Edge's reciprocal-rank fusion, in one call.

        `weights` are (dense, sparse). Qdrant's weighted RRF scores a point at 0-based
        position p of a list as 1 / ((p + 1) / weight + k - 1): a weight stretches the rank
        scale rather than multiplying the contribution (unlike `retrieval.fuse`), so with the
        usual k = 60 weights barely change the order; use a small k to steer it."""
        schema.check_limit(limit)
        query = schema.dense_matrix([dense], self._dim)[0].tolist()
        indices, values = schema.check_sparse(sparse)
        condition = edge_filter(flt)
        depth = prefetch or max(50, 5 * limit)
        stages = [
            qe.Prefetch(
                limit=depth,
                query=qe.Query.Nearest(query, using=schema.DENSE),
                params=self._layout.search_params(exact=False, hnsw_ef=None),
                filter=condition,
            )
        ]
        fusion_weights = [float(weights[0])]
        if indices:
            sparse_query = qe.SparseVector(indices, values)
            stages.append(
                qe.Prefetch(
                    limit=depth,
                    query=qe.Query.Nearest(sparse_query, using=schema.SPARSE),
                    filter=condition,
                )
            )
            fusion_weights.append(float(weights[1]))
        request = qe.QueryRequest(
            limit=limit,
            prefetches=stages,
            query=qe.Fusion.Rrf(k=k, weights=fusion_weights),  # type: ignore[arg-type]
            filter=condition,
            with_payload=True,
            with_vector=False,
        )
        return _scored(await self._read(lambda: self._shard.query(request)))

    async def scroll(
        self, flt: Filter | None = None, *, limit: int = 1000, fields: Sequence[str] | None = None
    ) -> list[Chunk]:
        schema.check_limit(limit)
        condition = edge_filter(flt)
        out: list[Chunk] = []
        offset: Any = None
        while len(out) < limit:
            request = qe.ScrollRequest(
                offset=offset,
                limit=min(SCROLL_PAGE, limit - len(out)),
                filter=condition,
                with_payload=True if fields is None else list(fields),
                with_vector=False,
            )
            records, offset = await self._read(partial(self._shard.scroll, request))
            out.extend(Chunk.from_payload(str(r.id), r.payload or {}) for r in records)
            if offset is None or not records:
                break
        return out

    async def count(self, flt: Filter | None = None) -> int:
        request = qe.CountRequest(exact=True, filter=edge_filter(flt))
        return int(await self._read(lambda: self._shard.count(request)))

    async def optimize(self) -> bool:
        """Build HNSW and merge segments (slow: seconds per 10k points); run after bulk loads."""
        return bool(await self._write(self._shard.optimize))

    async def flush(self) -> None:
        await self._write(self._shard.flush)

    async def close(self) -> None:
        """Flush and close; later calls raise StoreUnavailable. Idempotent."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        await self._write(self._shard.flush)
        self._closed = True
        # Let in-flight reads finish, then close the shard on the writer thread.
        await asyncio.to_thread(self._readers.shutdown, wait=True)
        await loop.run_in_executor(self._writer, self._shard.close)
        self._writer.shutdown(wait=False)
