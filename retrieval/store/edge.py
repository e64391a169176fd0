"""VectorStore on Qdrant Edge: the Qdrant engine on local disk, one shard.

`ShardStore` is the store; where its shard's operations (`edge_shard.ShardOps`) run is the one
thing its subclasses say (`_call`):

- `EdgeStore` runs them on threads of this process. Writes (and flush/close/optimize) run on
  one dedicated thread, so they are serialised in submission order; reads run on a small pool
  of their own and may overlap writes (the engine allows it; measured in the contract suite).
- `retrieval.store.edge_process.EdgeProcessStore` runs them in a child process, because a
  Qdrant Edge call (qdrant-edge-py 0.9.0) holds the GIL for its whole run: in this process the
  search tracks, the graph walk and the bot's event loop would wait for it.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Literal

from retrieval.lifecycle import Closing
from retrieval.ports import DenseAndSparseQuery
from retrieval.store import StoreError, StoreUnavailable, schema
from retrieval.store.edge_shard import (
    HELD_PAYLOADS,
    IN_MEMORY,
    ON_DISK,
    ElidedRow,
    Generation,
    Layout,
    Row,
    ShardOps,
)
from retrieval.types import Chunk, Filter, IndexedChunk, ScoredChunk, SparseVector

__all__ = ["IN_MEMORY", "ON_DISK", "EdgeStore", "Layout", "ShardStore"]

UPSERT_BATCH = 256
SCROLL_PAGE = 256

Lane = Literal["read", "write"]
# A `ShardOps` method, unbound (`ShardOps.search_dense`): the store calls it on its shard, in
# this process or, pickled by name, in the child that holds the shard.
ShardOp = Callable[..., Any]


def check_dim(dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    return dim


def _scored(rows: Sequence[Row]) -> list[ScoredChunk]:
    return [ScoredChunk(Chunk.from_payload(pid, payload), score) for pid, score, payload in rows]


# A point as this process holds it: its chunk and its payload (filters are checked on it).
Held = tuple[Chunk, dict[str, Any]]


class HeldChunks:
    """The chunks of the points a store's reads were sent, the `capacity` most recently used,
    each with the `Generation` of the shard it was read at. The other side of
    `edge_shard.SentPayloads`: a reply that elides a payload says the generation it is valid
    for, and a chunk held for another generation (or not held) is read again. With the same
    capacity and the same order of use on both sides, what the shard's process believes is held
    is held (an LRU of one size holds what one of a smaller or equal size holds)."""

    def __init__(self, capacity: int = HELD_PAYLOADS) -> None:
        self._capacity = capacity
        self._held: OrderedDict[str, tuple[Generation, Held]] = OrderedDict()
        self.hits = 0
        self.misses = 0  # elided by the shard's process, not held here: read again
        self.kept = 0  # sent by the shard's process (and held from then on)

    def get(self, pid: str, generation: Generation) -> Held | None:
        entry = self._held.get(pid)
        if entry is None or entry[0] != generation:
            self.misses += 1
            return None
        self._held.move_to_end(pid)
        self.hits += 1
        return entry[1]

    def get_all(self, pids: Sequence[str], generation: Generation) -> list[Held] | None:
        """Every one of `pids`, held for `generation` (each a use), or None if one is not."""
        entries = [self._held.get(pid) for pid in pids]
        if any(entry is None or entry[0] != generation for entry in entries):
            return None
        for pid in pids:
            self._held.move_to_end(pid)
        self.hits += len(pids)
        return [entry[1] for entry in entries if entry is not None]

    def put(self, pid: str, generation: Generation, payload: dict[str, Any]) -> Held:
        held = (Chunk.from_payload(pid, payload), payload)
        self.kept += 1
        self._held[pid] = (generation, held)
        self._held.move_to_end(pid)
        if len(self._held) > self._capacity:
            self._held.popitem(last=False)
        return held


class ShardStore(Closing):
    """VectorStore on one Qdrant Edge shard. Validates every argument and turns the shard's
    rows into chunks here, once; a subclass runs `ShardOps` methods where it keeps the shard
    (`_call`) and closes it (`close`)."""

    # Whether the fused search's and the by-id reads leave out the payloads this process holds
    # (`HeldChunks`): worth it where a payload crosses a socket.
    elides: ClassVar[bool] = False

    def __init__(self, path: Path, dim: int, layout: Layout) -> None:
        self._path = path
        self._dim = dim
        self._layout = layout
        self._closed = False
        self.held = HeldChunks()
        # The shard's generation while no write has been sent since a read reported it (None:
        # not known): chunks held for it are the shard's as they stand.
        self._current: Generation | None = None
        self._writes_sent = 0

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def path(self) -> Path:
        return self._path

    @property
    def layout(self) -> Layout:
        return self._layout

    @abstractmethod
    async def _call(self, lane: Lane, op: ShardOp, *args: Any) -> Any:
        """`op(shard_ops, *args)`; an engine failure raises StoreError (ValueError and
        StoreError pass as they are), a closed or lost shard StoreUnavailable."""

    @abstractmethod
    async def close(self) -> None:
        """Flush and close; later calls raise StoreUnavailable. Idempotent."""

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable(f"the vector store at {self._path} is closed")

    async def _read(self, op: ShardOp, *args: Any) -> Any:
        self._check_open()
        return await self._call("read", op, *args)

    async def _write(self, op: ShardOp, *args: Any) -> Any:
        self._check_open()
        self._writes_sent += 1
        self._current = None
        return await self._call("write", op, *args)

    async def _read_at(self, op: ShardOp, *args: Any) -> Any:
        """`_read` of an op whose reply starts with the shard's generation, kept as the
        current one when no write was sent while it ran."""
        writes = self._writes_sent
        reply = await self._read(op, *args)
        if writes == self._writes_sent:
            self._current = reply[0]
        return reply

    # ---- VectorStore -----------------------------------------------------------------------

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        points = schema.prepare(items, self._dim)
        for start in range(0, len(points), UPSERT_BATCH):
            await self._write(ShardOps.upsert, points[start : start + UPSERT_BATCH])

    async def delete(self, flt: Filter) -> None:
        plan = schema.plan(flt)
        if plan.empty:
            raise ValueError("refusing to delete with an empty filter; use delete_all()")
        await self._write(ShardOps.delete, plan)

    async def delete_all(self) -> None:
        """Delete every point (the shard, its config and indexes stay)."""
        await self._write(ShardOps.delete, schema.plan(None))

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        payload = schema.extra_payload(values)
        await self._write(ShardOps.set_extra, schema.plan(flt), payload)

    async def move(self, flt: Filter, namespace: str) -> None:
        plan = schema.plan(flt)
        await self._write(ShardOps.set_extra, plan, schema.move_payload(plan, namespace))

    async def search_dense(
        self,
        vector: Sequence[float],
        *,
        flt: Filter | None = None,
        limit: int = 10,
        exact: bool = False,
        hnsw_ef: int | None = None,
    ) -> list[ScoredChunk]:
        query = schema.dense_query(vector, self._dim, limit)
        rows = await self._read(
            ShardOps.search_dense, query, schema.plan(flt), limit, exact, hnsw_ef
        )
        return _scored(rows)

    async def search_sparse(
        self, vector: SparseVector, *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        indices, values = schema.sparse_query(vector, limit)
        plan = schema.plan(flt)
        if not indices:
            return []
        return _scored(await self._read(ShardOps.search_sparse, indices, values, plan, limit))

    async def search_dense_and_sparse(
        self, query: DenseAndSparseQuery
    ) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
        """One call to the shard: both searches find point ids, then the points found are
        read once (at 1M chunks the searches' own payload reads were most of their time)."""
        schema.check_limit(query.dense_limit)
        schema.check_limit(query.sparse_limit)
        dense = schema.dense_matrix([query.dense], self._dim)[0].tolist()
        indices, values = schema.check_sparse(query.sparse)
        plan = schema.plan(query.flt)
        generation, dense_rows, sparse_rows = await self._read_at(
            ShardOps.search_dense_and_sparse,
            dense,
            indices,
            values,
            plan,
            query.dense_limit,
            query.sparse_limit,
            self.elides,
        )
        points = await self._resolve(generation, [*dense_rows, *sparse_rows])

        def scored(rows: Sequence[ElidedRow]) -> list[ScoredChunk]:
            return [ScoredChunk(points[pid][0], score) for pid, score, _ in rows if pid in points]

        return scored(dense_rows), scored(sparse_rows)

    async def _resolve(self, generation: Generation, rows: Sequence[ElidedRow]) -> dict[str, Held]:
        """Point id → chunk and payload of `rows`: a payload the shard's process left out is
        the one held for its generation, or read again. One chunk per point (a point in two
        lists is one object). Held ones are used first, then the read ones kept, in the order
        of `rows`, as the shard's process counted them (`edge_shard.SentPayloads`)."""
        points: dict[str, Held] = {}
        missing: dict[str, None] = {}
        for pid, _, payload in rows:
            if payload is None and pid not in points and pid not in missing:
                held = self.held.get(pid, generation)
                if held is None:
                    missing[pid] = None
                else:
                    points[pid] = held
        for pid, _, payload in rows:
            if payload is not None and pid not in points:
                points[pid] = (
                    self.held.put(pid, generation, payload)
                    if self.elides
                    else (Chunk.from_payload(pid, payload), payload)
                )
        if missing:
            for pid, _, payload in await self._read(ShardOps.retrieve, list(missing)):
                points[pid] = (Chunk.from_payload(pid, payload), payload)
        return points

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
        query = schema.dense_query(dense, self._dim, limit)
        indices, values = schema.check_sparse(sparse)
        plan = schema.plan(flt)
        depth = prefetch or max(50, 5 * limit)
        rows = await self._read(
            ShardOps.search_hybrid, query, indices, values, plan, limit, weights, k, depth
        )
        return _scored(rows)

    async def scroll(
        self, flt: Filter | None = None, *, limit: int = 1000, fields: Sequence[str] | None = None
    ) -> list[Chunk]:
        schema.check_limit(limit)
        plan = schema.plan(flt)
        if flt is not None and plan.ids is not None and fields is None:
            return await self._by_id(flt, plan.ids, limit)
        wanted = None if fields is None else list(fields)
        out: list[Chunk] = []
        offset: Any = None
        while len(out) < limit:
            page = min(SCROLL_PAGE, limit - len(out))
            rows, offset = await self._read(ShardOps.scroll, plan, offset, page, wanted)
            out.extend(Chunk.from_payload(pid, payload) for pid, _, payload in rows)
            if offset is None or not rows:
                break
        return out

    async def _by_id(self, flt: Filter, ids: Sequence[str], limit: int) -> list[Chunk]:
        """`scroll` of a filter naming its points: they are read directly and the rest of
        the filter is applied here, with the reference semantics every store shares
        (`Filter.matches`, the contract suite). At 1M chunks, 30 ids cost 1.3 ms through
        Qdrant's filtered scroll and 0.5 ms read directly. In id order, as a scroll gives."""
        rest = Filter(equals=flt.equals, ranges=flt.ranges, not_equals=flt.not_equals)
        held = None if self._current is None else self.held.get_all(ids, self._current)
        if held is None:
            generation, rows = await self._read_at(ShardOps.retrieve_elided, list(ids), self.elides)
            points = await self._resolve(generation, rows)
            held = [points[pid] for pid in ids if pid in points]
        return [chunk for chunk, payload in held if rest.matches(payload)][:limit]

    async def count(self, flt: Filter | None = None) -> int:
        return int(await self._read(ShardOps.count, schema.plan(flt)))

    async def optimize(self) -> bool:
        """Build HNSW and merge segments (slow: seconds per 10k points); run after bulk loads."""
        return bool(await self._write(ShardOps.optimize))

    async def flush(self) -> None:
        await self._write(ShardOps.flush)


class EdgeStore(ShardStore):
    """The shard in this process, its calls on threads. Open with
    `await EdgeStore.open(path, dim)`."""

    def __init__(
        self,
        ops: ShardOps,
        path: Path,
        dim: int,
        writer: ThreadPoolExecutor,
        layout: Layout = IN_MEMORY,
    ) -> None:
        super().__init__(path, dim, layout)
        self._ops = ops
        self._writer = writer
        self._readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="edge-read")

    @classmethod
    async def open(cls, path: Path, dim: int, layout: Layout = IN_MEMORY) -> EdgeStore:
        """Create the shard under `path`, or load it when it exists (dims must agree);
        `layout` says what stays on disk (it can change between runs)."""
        check_dim(dim)
        path = Path(path)
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge-write")
        try:
            ops = await asyncio.get_running_loop().run_in_executor(
                writer, ShardOps.open, path, dim, layout
            )
        except BaseException:
            writer.shutdown(wait=False)
            raise
        return cls(ops, path, dim, writer, layout)

    @property
    def ops(self) -> ShardOps:
        """The shard's operations (for tests and benchmarks that look inside)."""
        return self._ops

    async def _call(self, lane: Lane, op: ShardOp, *args: Any) -> Any:
        ops = self._ops

        def call() -> Any:
            try:
                return op(ops, *args)
            except (StoreError, ValueError):
                raise
            except Exception as exc:
                raise StoreError(f"Qdrant Edge ({self._path}): {exc}") from exc

        pool = self._writer if lane == "write" else self._readers
        return await asyncio.get_running_loop().run_in_executor(pool, call)

    async def close(self) -> None:
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        await self._write(ShardOps.flush)
        self._closed = True
        # Let in-flight reads finish, then close the shard on the writer thread.
        await asyncio.to_thread(self._readers.shutdown, wait=True)
        await loop.run_in_executor(self._writer, self._ops.close)
        self._writer.shutdown(wait=False)
