"""The Qdrant Edge engine side of the Edge stores: the shard's layout, opening it, and
`ShardOps`, every operation the stores run on it.

`ShardOps` is synchronous and speaks only in values pickle can carry (filters arrive as
validated `schema.FilterPlan`s, points as `schema.PreparedPoint`s, results leave as `Row`s, or
`ElidedRow`s where the reader holds payloads already: `SentPayloads`),
so the same code runs on a thread of this process (`retrieval.store.edge.EdgeStore`) and in a
process of its own (`retrieval.store.edge_process.EdgeProcessStore`). Validation and turning
rows into chunks happen once, in `retrieval.store.edge.ShardStore`.

Layout under `path`: the shard's own files plus `baibao-store.json`, which records the
dense vector size so that a store built for one embedder is never read with another.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from retrieval.heap import release_free_memory
from retrieval.store import DimensionMismatch, StoreError, schema

META_FILE = "baibao-store.json"
META_FORMAT = 1

# A search or scroll result: point id, score (0.0 for a scroll), payload.
Row = tuple[str, float, dict[str, Any]]
# A row of a read that elides payloads (`SentPayloads`): None where the reader holds it.
ElidedRow = tuple[str, float, dict[str, Any] | None]
# Which writes a payload is valid for: (the process that serves the shard, its writes so far).
Generation = tuple[int, int]
# Payloads a reader holds at most: the ids `SentPayloads` remembers (a few MB), and the chunks
# `retrieval.store.edge.ShardStore` keeps. The 1M bench's 260 distinct queries read ~9,000
# distinct points; RSS while serving did not grow (bench/results/million.md).
HELD_PAYLOADS = 10_000

_INDEX_TYPES = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "bool": qe.PayloadSchemaType.Bool,
}


_SPARSE_MEMORY = qe.Memory.Cold


_NAMESPACE = "namespace"  # the payload key every search filters on

# A dense search whose one condition is on namespaces holding at least this share of the
# points (the shared library beside the shelves) searches without it, `WIDE_DEPTH` times
# deeper than the share alone needs, and keeps the points in those namespaces. With the
# condition, Qdrant searches such a filter with ACORN (`Layout.acorn_max_selectivity`): a
# dense search took 7.2-7.8 ms (p50) at 100k shared chunks beside 100 shelves of 1,000,
# against 2.1 ms unfiltered, and 3.3 ms this way (bench/RESULTS.md, "Shelves and search
# speed"). The kept points are the filtered search's best as far as the unfiltered search
# finds them (recall of the exact filtered top 30 at 20k + 20 x 1,000: 0.992 for questions
# of the shared library, the unfiltered search's own 0.993, ACORN's 0.998; 0.981 near
# shelf chunks, ACORN's 0.991); when fewer than the limit are kept, the search runs again
# with the condition. ACORN off instead: 1.3 ms, but recall@10 0.92 near shelf chunks.
WIDE_SHARE = 0.3
WIDE_DEPTH = 2.0
_SHARES_KEPT = 1024  # sets of namespaces whose share `ShardOps._share` remembers


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
    # Candidates an HNSW search keeps in each segment (Qdrant's default is ef_construct, 100).
    # At 1M clustered points in one segment recall@10 against exact search was 0.843 with the
    # default, 0.958-0.978 with 256 (bench/results/million.md); bounded segments need fewer.
    hnsw_ef: int = 256
    # Payload indexes kept in RAM even when the others are memory-mapped: the ones every
    # search filters on. Every dense and BM25 candidate is checked against the namespace
    # condition; through a mapped index that check cost ~2 ms of a 12 ms fused search at 1M
    # chunks, for an index of a few dozen MB (bench/results/million.md).
    resident_indexes: tuple[str, ...] = (_NAMESPACE,)
    # The most points one segment holds (None: Qdrant's own policy). Qdrant Edge keeps the
    # points written since the last `optimize()` in one appendable segment whose indexes live
    # in RAM, and building a segment's index takes memory in proportion to its points: at a
    # million bench chunks in one segment the build peaked at 20 GB. With a bound, every
    # `segment_points` points written are indexed into a segment of their own (and the shard
    # is reopened, which is what hands the build's memory back), and the merge optimizer never
    # joins two full segments. Measured in bench/results/million.md.
    segment_points: int | None = None
    # Threads Qdrant Edge searches a shard's segments on (None: a pool of its own, eight
    # threads here). With one, a search runs on the thread that calls it. On the bot's two
    # cores with eight searches in flight, the pool's threads mostly waited for a core (each
    # ran ~10 % of the time and waited ~80 %), and handing segments to them cost CPU. On one
    # thread, 8 concurrent searches at 1M had the lower p95 in each of three interleaved
    # `bench_million.py` pairs, with the same results (bench/results/million.md).
    search_threads: int | None = None

    @property
    def mapped(self) -> bool:
        """Whether searches read part of the shard from memory-mapped files."""
        return self.vectors_on_disk or self.payload_on_disk or self.sparse_on_disk

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
        optimizers = None
        if self.segment_points is not None:
            # Qdrant sizes segments in KB of dense vectors; a quarter more than one full segment
            # lets a small remainder join it but never a second full one.
            kb = self.segment_points * dim * 4 * 5 // (4 * 1024)
            optimizers = qe.EdgeOptimizersConfig(max_segment_size=kb)
        return qe.EdgeConfig(
            vectors={schema.DENSE: dense},
            sparse_vectors={schema.SPARSE: sparse},
            payload_memory=qe.Memory.Cold if self.payload_on_disk else None,
            optimizers=optimizers,
            max_search_threads=self.search_threads,
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
    segment_points=350_000,
    # Three segments of 350k at 1M chunks: recall@10 1.000 at 256, 0.985 at 128 (dense
    # search 2.4 -> 1.5 ms), 0.972 at 64 (bench/results/million.md).
    hnsw_ef=128,
    search_threads=1,
)


def edge_condition(plan: schema.FilterPlan) -> qe.Filter | None:
    """A validated filter plan → qdrant_edge Filter (None when there is no condition)."""
    if plan.empty:
        return None
    must: list[qe.FieldCondition | qe.HasIdCondition] = []
    if plan.ids is not None:
        must.append(qe.HasIdCondition(set(plan.ids)))
    for cond in plan.must:
        if isinstance(cond, schema.Range):
            must.append(
                qe.FieldCondition(cond.key, range=qe.RangeFloat(gte=cond.low, lte=cond.high))
            )
        else:
            must.append(_edge_match(cond))
    must_not = [_edge_match(cond) for cond in plan.must_not]
    return qe.Filter(must=must or None, must_not=must_not or None)  # type: ignore[arg-type]


def _holds_for_every_point(cond: schema.Match | schema.Range, sole: str) -> bool:
    """Whether `cond` asks for `sole`, the namespace every point is in."""
    return isinstance(cond, schema.Match) and cond.key == _NAMESPACE and sole in cond.values


def _namespaces_only(plan: schema.FilterPlan) -> tuple[str, ...] | None:
    """The namespaces `plan` asks for when that is its one condition (None otherwise)."""
    if plan.must_not or plan.ids is not None or len(plan.must) != 1:
        return None
    cond = plan.must[0]
    if not isinstance(cond, schema.Match) or cond.key != _NAMESPACE:
        return None
    return tuple(str(v) for v in cond.values)


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


# What a load copies into RAM through a memory map and then drops from the page cache
# (qdrant-edge 0.9.0 calls POSIX_FADV_DONTNEED on it): the quantized vectors. Its copy faults
# the map in at ~80 MB/s here, so a 1M shard took 4.5–5.3 s to load at every start; read
# through once before (0.22–0.26 s for 370 MB), the load took 0.94–1.05 s
# (bench/results/million.md).
_COPIED_AT_LOAD = "vector_storage-*/quantized.data"
_READ_BUFFER = 1 << 20


def _read_through(name: Path, buffer: bytearray, stop: threading.Event | None = None) -> int:
    """Read the file `name` from start to end (or until `stop` is set) into `buffer`, at disk
    speed, which leaves it in the page cache; the bytes read."""
    total = 0
    with name.open("rb", buffering=0) as file:
        while not (stop is not None and stop.is_set()) and (read := file.readinto(buffer)):
            total += read
    return total


def read_ahead(path: Path) -> int:
    """Read the files a load of the shard at `path` copies into RAM (`_COPIED_AT_LOAD`), in
    order and at disk speed, so that its copy finds them in the page cache; the bytes read."""
    buffer = bytearray(_READ_BUFFER)
    return sum(
        _read_through(name, buffer) for name in sorted(path.glob(f"segments/*/{_COPIED_AT_LOAD}"))
    )


# What a search reads from a shard whose files are memory-mapped (`Layout.mapped`), the most
# read first: the sparse index and the payload indexes, the original vectors (rescoring), then
# the sparse vectors and the payloads. After a reboot a 1M shard's first new queries took
# p50 356 ms / p95 3.1 s, page by page from disk; with these files read through first, 13 / 22
# ms (bench/results/million.md).
_READ_FOR_SEARCH = (
    "vector_index-*/**/*",
    "payload_index/**/*",
    "vector_storage-dense/matrix.dat",
    "vector_storage-*/**/*",
    "payload_storage/**/*",
)
# Read through at most this share of the memory available: more would push out what it read.
_WARM_SHARE = 0.5


def _memory_available() -> int:
    """Bytes the kernel says it can give without swapping (0: unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def warm_page_cache(path: Path, stop: threading.Event, budget: int | None = None) -> int:
    """Read the files searches of the shard at `path` read (`_READ_FOR_SEARCH`) once, in order,
    while `stop` is not set and `budget` bytes (default: half the memory available) last, so
    that searches find them in the page cache; the bytes read. Reads release the GIL."""
    budget = int(_memory_available() * _WARM_SHARE) if budget is None else budget
    seen: set[Path] = set()
    buffer = bytearray(_READ_BUFFER)
    total = 0
    for pattern in _READ_FOR_SEARCH:
        for name in sorted(path.glob(f"segments/*/{pattern}")):
            if name in seen or not name.is_file() or name.match(_COPIED_AT_LOAD):
                continue
            seen.add(name)
            try:
                if total + name.stat().st_size > budget:
                    return total
                total += _read_through(name, buffer, stop)
            except OSError:  # an optimization replaced the segment meanwhile
                continue
            if stop.is_set():
                return total
    return total


def _open_shard(path: Path, dim: int, layout: Layout = IN_MEMORY) -> qe.EdgeShard:
    path.mkdir(parents=True, exist_ok=True)
    meta = _read_meta(path)
    if meta is not None and meta["dim"] != dim:
        raise DimensionMismatch(meta["dim"], dim, str(path))
    has_segments = (path / "segments").exists()
    try:
        if has_segments:
            read_ahead(path)
            shard = qe.EdgeShard.load(str(path), layout.config(dim))
        else:
            shard = qe.EdgeShard.create(str(path), layout.config(dim))
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


def _unindexed_points(shard: qe.EdgeShard) -> int:
    """About how many points wait in unindexed segments: every point has a sparse vector, which
    counts as indexed wherever it is, and the dense ones count once their segment is indexed."""
    info = shard.info()
    return max(0, 2 * info.points_count - info.indexed_vectors_count)


def _mapped(index: qe.PayloadIndexInfo) -> bool:
    """Whether an existing payload index is memory-mapped (created with `Memory.Cold`)."""
    return index.params is not None and index.params.memory == qe.Memory.Cold


def _to_point(p: schema.PreparedPoint) -> qe.Point:
    vector: dict[str, Any] = {
        schema.DENSE: p.dense,
        schema.SPARSE: qe.SparseVector(p.sparse_indices, p.sparse_values),
    }
    return qe.Point(p.id, vector, p.payload)


def _scores(points: Sequence[qe.ScoredPoint]) -> dict[str, float]:
    """Point id → score, best first."""
    return {str(p.id): float(p.score) for p in points}


def _rows(points: Sequence[qe.ScoredPoint]) -> list[Row]:
    return [(str(p.id), float(p.score), p.payload or {}) for p in points]


def _point_query(
    limit: int,
    query: qe.Query | qe.Fusion.Rrf,
    condition: qe.Filter | None,
    *,
    params: qe.SearchParams | None = None,
    prefetches: list[qe.Prefetch] | None = None,
    payload: bool = True,
) -> qe.QueryRequest:
    """A query for the `limit` best points (with their payloads unless `payload` is off; never
    their vectors)."""
    return qe.QueryRequest(
        limit=limit,
        # The stubs (0.9.0) type `Fusion.Rrf` outside the `Fusion` it is nested in.
        query=query,  # type: ignore[arg-type]
        prefetches=prefetches,
        filter=condition,
        params=params,
        with_payload=payload,
        with_vector=False,
    )


class SentPayloads:
    """The ids whose payloads a reader in another process was sent since the shard's last
    write, the most recently used `capacity` of them: a read that elides payloads reads and
    sends only the others (reading, converting and sending the 60 payloads of a fused search
    took 3.5 ms of its 7.3 ms call at 1M chunks). Every write empties it and starts a new
    `generation`; the reader uses a payload it holds only when its generation is the reply's,
    and reads any other again (`retrieval.store.edge.HeldChunks`)."""

    def __init__(self, capacity: int = HELD_PAYLOADS) -> None:
        self._capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._writes = 0

    @property
    def generation(self) -> Generation:
        return (os.getpid(), self._writes)

    def held(self, pid: str) -> bool:
        """Whether the reader holds `pid`'s payload (a use: it is kept longest)."""
        if pid not in self._ids:
            return False
        self._ids.move_to_end(pid)
        return True

    def send(self, pids: Iterable[str]) -> None:
        for pid in pids:
            self._ids[pid] = None
            self._ids.move_to_end(pid)
        while len(self._ids) > self._capacity:
            self._ids.popitem(last=False)

    def written(self) -> None:
        self._ids.clear()
        self._writes += 1


class ShardOps:
    """One open Qdrant Edge shard and what the stores do to it, synchronously.

    Arguments are already validated (`ShardStore` does it); an engine failure surfaces as
    the engine's own exception, which the store wraps. Safe to call from several threads
    (`EdgeStore` reads while it writes): the shard is swapped for a reopened one only while no
    call runs (`Layout.segment_points`)."""

    def __init__(
        self, shard: qe.EdgeShard, layout: Layout, path: Path, dim: int, *, serial: bool = False
    ) -> None:
        self._shard = shard
        self.layout = layout
        self._path = path
        self._dim = dim
        # Whether calls come one at a time (the store's own process): no write runs beside
        # a read, so a read may leave out a condition every point meets (`_condition`).
        self.serial = serial
        self._calls = 0  # running calls on the shard
        self._idle = threading.Condition()
        self._unindexed = _unindexed_points(shard) if layout.segment_points else 0
        self.reopens = 0  # times the shard was closed and loaded again
        self.sent = SentPayloads()
        self._sole: tuple[Generation, str | None] | None = None  # see `sole_namespace`
        # (generation, namespaces → their points' share of the shard), see `_share`
        self._shares: tuple[Generation, dict[tuple[str, ...], float]] | None = None

    @classmethod
    def open(
        cls, path: Path, dim: int, layout: Layout = IN_MEMORY, *, serial: bool = False
    ) -> ShardOps:
        return cls(_open_shard(path, dim, layout), layout, path, dim, serial=serial)

    @property
    def shard(self) -> qe.EdgeShard:
        """The open shard (for tests and benchmarks that look inside)."""
        return self._shard

    @contextmanager
    def _using(self) -> Iterator[qe.EdgeShard]:
        with self._idle:
            self._calls += 1
        try:
            yield self._shard
        finally:
            with self._idle:
                self._calls -= 1
                self._idle.notify_all()

    def _condition(self, plan: schema.FilterPlan) -> qe.Filter | None:
        """`edge_condition(plan)` without a condition on the namespace when every point is in
        it: checked against every dense and BM25 candidate, it cost a fused search ~1.1 ms of
        CPU in ~6.5 at 1M chunks, to keep nothing out (bench/results/million.md). Only when
        `serial`: a write running beside the read could add a point of another namespace."""
        sole = self.sole_namespace() if self.serial else None
        if sole is not None:
            must = tuple(c for c in plan.must if not _holds_for_every_point(c, sole))
            plan = schema.FilterPlan(must, plan.must_not, plan.ids)
        return edge_condition(plan)

    def sole_namespace(self) -> str | None:
        """The namespace every point is in (None: points in several, or without one), from
        the namespace index's counts (~0.6 ms at 1M), once per generation (writes add points;
        an estimate that counts deleted points too only makes this None)."""
        generation = self.sent.generation
        if self._sole is None or self._sole[0] != generation:
            with self._using() as shard:
                hits = shard.facet(qe.FacetRequest(_NAMESPACE, limit=2, exact=False)).hits
                points = shard.info().points_count
            sole = str(hits[0].value) if len(hits) == 1 and hits[0].count == points else None
            self._sole = (generation, sole)
        return self._sole[1]

    def _share(self, shard: qe.EdgeShard, namespaces: tuple[str, ...]) -> float:
        """About what share of the points `namespaces` hold, from the namespace index's
        estimate, once per generation and set of namespaces."""
        generation = self.sent.generation
        if self._shares is None or self._shares[0] != generation:
            self._shares = (generation, {})
        shares = self._shares[1]
        if namespaces not in shares:
            if len(shares) >= _SHARES_KEPT:
                shares.clear()
            match = qe.FieldCondition(_NAMESPACE, match=qe.MatchAny(list(namespaces)))
            inside = shard.count(qe.CountRequest(exact=False, filter=qe.Filter(must=[match])))
            points = shard.info().points_count
            shares[namespaces] = inside / points if points else 0.0
        return shares[namespaces]

    def _wide_depth(
        self,
        shard: qe.EdgeShard,
        plan: schema.FilterPlan,
        limit: int,
        params: qe.SearchParams,
    ) -> int | None:
        """How deep an unfiltered dense search for `plan`'s `limit` best goes (None: search
        with `plan`'s condition): only for a condition on namespaces holding at least
        `WIDE_SHARE` of the points, the rest of the shard in other namespaces."""
        namespaces = _namespaces_only(plan)
        if namespaces is None or params.exact:
            return None
        share = self._share(shard, namespaces)
        return math.ceil(limit / share * WIDE_DEPTH) if WIDE_SHARE <= share < 1.0 else None

    def _nearest(
        self,
        shard: qe.EdgeShard,
        vector: list[float],
        plan: schema.FilterPlan,
        condition: qe.Filter | None,
        limit: int,
        params: qe.SearchParams,
    ) -> dict[str, float] | None:
        """Point id → score of the `limit` points nearest `vector` that `plan` (`condition`
        in the engine's terms) matches, best first, from an unfiltered search (`WIDE_SHARE`);
        None where the search is to run with the condition (there is none, it is not for an
        unfiltered search, or that kept too few)."""
        depth = self._wide_depth(shard, plan, limit, params) if condition is not None else None
        if condition is None or depth is None:
            return None
        nearest = qe.Query.Nearest(vector, using=schema.DENSE)
        wide = shard.query(_point_query(depth, nearest, None, params=params, payload=False))
        ids = [p.id for p in wide]  # each read once (every read builds a `uuid.UUID`)
        inside_ids = qe.Filter(must=[qe.HasIdCondition(set(ids)), *(condition.must or [])])
        request = qe.ScrollRequest(
            limit=len(ids), filter=inside_ids, with_payload=False, with_vector=False
        )
        inside = {r.id for r in shard.scroll(request)[0]} if ids else set()
        kept = [(pid, p.score) for p, pid in zip(wide, ids, strict=True) if pid in inside]
        if len(kept) < limit and len(wide) == depth:  # the namespaces may hold more
            return None
        return {str(pid): float(score) for pid, score in kept[:limit]}

    def _ranked(self, request: qe.QueryRequest) -> list[Row]:
        with self._using() as shard:
            return _rows(shard.query(request))

    def _reopen(self) -> None:
        """Close the shard and load it again, once no call is running: the only way Qdrant Edge
        (0.9.0) gives back the memory an optimization used (RSS kept growing by the size of
        every segment built until the shard was closed)."""
        with self._idle:
            self._idle.wait_for(lambda: self._calls == 0)
            self._shard.close()
            self._shard = qe.EdgeShard.load(str(self._path), self.layout.config(self._dim))
            self.reopens += 1
        release_free_memory()

    def upsert(self, points: Sequence[schema.PreparedPoint]) -> None:
        self.sent.written()
        with self._using() as shard:
            shard.update(qe.UpdateOperation.upsert_points([_to_point(p) for p in points]))
        bound = self.layout.segment_points
        if bound is not None:
            self._unindexed += len(points)
            if self._unindexed >= bound:
                self._index()

    def delete(self, plan: schema.FilterPlan) -> None:
        self._update_matching(plan, qe.UpdateOperation.delete_points_by_filter)

    def set_extra(self, plan: schema.FilterPlan, payload: dict[str, Any]) -> None:
        self._update_matching(
            plan, lambda condition: qe.UpdateOperation.set_payload_by_filter(condition, payload)
        )

    def _update_matching(
        self, plan: schema.FilterPlan, operation: Callable[[qe.Filter], qe.UpdateOperation]
    ) -> None:
        """`operation` on the points `plan` matches, sent only when it matches one. Qdrant
        acknowledges a write-ahead-log entry once a segment holds its version, so an update
        that changed nothing stays in the log, its filter evaluated again at every load until
        a later write changes something: a start-up reconcile's no-op delete (doc_id not among
        50k ids) added 1.5 s to every later load of a million-chunk shard (3.3 s, 1.7 s
        without it; bench/results/million.md)."""
        condition = edge_condition(plan) or qe.Filter()
        probe = qe.ScrollRequest(limit=1, filter=condition, with_payload=False, with_vector=False)
        with self._using() as shard:
            if shard.scroll(probe)[0]:
                self.sent.written()
                shard.update(operation(condition))

    def search_dense(
        self,
        vector: list[float],
        plan: schema.FilterPlan,
        limit: int,
        exact: bool,
        hnsw_ef: int | None,
    ) -> list[Row]:
        params = self.layout.search_params(exact=exact, hnsw_ef=hnsw_ef)
        condition = self._condition(plan)
        with self._using() as shard:
            found = self._nearest(shard, vector, plan, condition, limit, params)
            if found is None:
                nearest = qe.Query.Nearest(vector, using=schema.DENSE)
                return _rows(shard.query(_point_query(limit, nearest, condition, params=params)))
            payloads = self._payloads(shard, list(found), elide=False)
        return [
            (pid, score, payloads[pid] or {}) for pid, score in found.items() if pid in payloads
        ]

    def search_sparse(
        self, indices: list[int], values: list[float], plan: schema.FilterPlan, limit: int
    ) -> list[Row]:
        nearest = qe.Query.Nearest(qe.SparseVector(indices, values), using=schema.SPARSE)
        return self._ranked(_point_query(limit, nearest, self._condition(plan)))

    def search_dense_and_sparse(
        self,
        dense: list[float],
        indices: list[int],
        values: list[float],
        plan: schema.FilterPlan,
        dense_limit: int,
        sparse_limit: int,
        elide: bool = False,
    ) -> tuple[Generation, list[ElidedRow], list[ElidedRow]]:
        """Both searches for point ids, then one read of the points they found: a point in
        both is read once, and its payload is one object in both lists. With `elide`, the
        payloads the reader holds are neither read nor sent (`SentPayloads`)."""
        condition = self._condition(plan)
        params = self.layout.search_params(exact=False, hnsw_ef=None)
        nearest = qe.Query.Nearest(dense, using=schema.DENSE)
        requests = [_point_query(dense_limit, nearest, condition, params=params, payload=False)]
        if indices:
            nearest = qe.Query.Nearest(qe.SparseVector(indices, values), using=schema.SPARSE)
            requests.append(_point_query(sparse_limit, nearest, condition, payload=False))
        with self._using() as shard:
            # Two queries: one `query_batch` of both cost ~0.5 ms more (200k chunks). Every
            # read of a point's `id` builds a `uuid.UUID`: each is read once.
            wide = self._nearest(shard, dense, plan, condition, dense_limit, params)
            first = wide if wide is not None else _scores(shard.query(requests[0]))
            found = [first, *(_scores(shard.query(request)) for request in requests[1:])]
            ids = list(dict.fromkeys(pid for points in found for pid in points))
            payloads = self._payloads(shard, ids, elide)
        ranked = [
            [(pid, score, payloads[pid]) for pid, score in points.items() if pid in payloads]
            for points in found
        ]
        return self.sent.generation, ranked[0], ranked[1] if indices else []

    def _payloads(
        self, shard: qe.EdgeShard, ids: Sequence[str], elide: bool
    ) -> dict[str, dict[str, Any] | None]:
        """Point id → payload of the points of `ids` that exist; with `elide`, None for the
        ones the reader holds (`SentPayloads`), which are not read."""
        held = [pid for pid in ids if self.sent.held(pid)] if elide else []
        skip = set(held)
        wanted: list[qe.PointId] = [pid for pid in ids if pid not in skip]
        records = shard.retrieve(wanted, with_payload=True, with_vector=False) if wanted else []
        read: dict[str, dict[str, Any] | None] = {str(r.id): r.payload or {} for r in records}
        if elide:  # in the order asked: the reader's cache keeps the same order
            self.sent.send(pid for pid in ids if pid in read)
        return {**dict.fromkeys(held), **read}

    def search_hybrid(
        self,
        dense: list[float],
        indices: list[int],
        values: list[float],
        plan: schema.FilterPlan,
        limit: int,
        weights: tuple[float, float],
        k: int,
        depth: int,
    ) -> list[Row]:
        condition = self._condition(plan)
        stages = [
            qe.Prefetch(
                limit=depth,
                query=qe.Query.Nearest(dense, using=schema.DENSE),
                params=self.layout.search_params(exact=False, hnsw_ef=None),
                filter=condition,
            )
        ]
        fusion_weights = [float(weights[0])]
        if indices:
            stages.append(
                qe.Prefetch(
                    limit=depth,
                    query=qe.Query.Nearest(qe.SparseVector(indices, values), using=schema.SPARSE),
                    filter=condition,
                )
            )
            fusion_weights.append(float(weights[1]))
        fusion = qe.Fusion.Rrf(k=k, weights=fusion_weights)
        return self._ranked(_point_query(limit, fusion, condition, prefetches=stages))

    def scroll(
        self,
        plan: schema.FilterPlan,
        offset: Any,
        limit: int,
        fields: Sequence[str] | None,
    ) -> tuple[list[Row], Any]:
        """One page of points matching `plan`, and the offset of the next (None: the last)."""
        request = qe.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=self._condition(plan),
            with_payload=True if fields is None else list(fields),
            with_vector=False,
        )
        with self._using() as shard:
            records, next_offset = shard.scroll(request)
        return [(str(r.id), 0.0, r.payload or {}) for r in records], next_offset

    def retrieve(self, ids: Sequence[str]) -> list[Row]:
        """The points with these (canonical) ids that exist, whole, in the order asked."""
        wanted: list[qe.PointId] = list(ids)
        with self._using() as shard:
            records = shard.retrieve(wanted, with_payload=True, with_vector=False) if ids else []
        by_id = {str(r.id): r.payload or {} for r in records}
        return [(pid, 0.0, by_id[pid]) for pid in ids if pid in by_id]

    def retrieve_elided(
        self, ids: Sequence[str], elide: bool = True
    ) -> tuple[Generation, list[ElidedRow]]:
        """`retrieve`, with `elide` the payloads the reader holds left out (`SentPayloads`)."""
        with self._using() as shard:
            payloads = self._payloads(shard, ids, elide)
        return self.sent.generation, [(pid, 0.0, payloads[pid]) for pid in ids if pid in payloads]

    def count(self, plan: schema.FilterPlan) -> int:
        request = qe.CountRequest(exact=True, filter=edge_condition(plan))
        with self._using() as shard:
            return int(shard.count(request))

    def optimize(self) -> bool:
        """Index what was written (and merge segments); True when anything changed."""
        with self._using() as shard:
            changed = bool(shard.optimize())
        self._unindexed = 0
        if changed:
            self._reopen()
        return changed

    def _index(self) -> None:
        """A full segment's worth written: index it, then reopen, whatever Qdrant did."""
        if not self.optimize():
            self._reopen()

    def flush(self) -> None:
        with self._using() as shard:
            shard.flush()

    def close(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: self._calls == 0)
            self._shard.close()
