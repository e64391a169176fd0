"""VectorStore on a Qdrant server or cluster through qdrant-client's AsyncQdrantClient.

Same collection layout as the Edge shard: named dense vector "dense" (cosine), sparse "bm25"
with the IDF modifier, the same payload indexes and the same filter translation. The
location ":memory:" runs qdrant-client's in-process imitation (brute force; tests only).
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import httpx
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from retrieval.ports import VectorStore
from retrieval.store import DimensionMismatch, StoreError, StoreUnavailable, schema
from retrieval.types import Chunk, Filter, IndexedChunk, ScoredChunk, SparseVector

UPSERT_BATCH = 256
SCROLL_PAGE = 256

T = TypeVar("T")

_INDEX_TYPES = {
    "keyword": models.PayloadSchemaType.KEYWORD,
    "integer": models.PayloadSchemaType.INTEGER,
    "bool": models.PayloadSchemaType.BOOL,
}


def server_filter(flt: Filter | None) -> models.Filter | None:
    """retrieval Filter → qdrant_client Filter (None when there is no condition)."""
    plan = schema.plan(flt)
    if plan.empty:
        return None
    must: list[models.Condition] = []
    if plan.ids is not None:
        must.append(models.HasIdCondition(has_id=list(plan.ids)))
    for cond in plan.must:
        if isinstance(cond, schema.Range):
            must.append(
                models.FieldCondition(key=cond.key, range=models.Range(gte=cond.low, lte=cond.high))
            )
        else:
            must.append(_match(cond))
    must_not: list[models.Condition] = [_match(cond) for cond in plan.must_not]
    return models.Filter(must=must or None, must_not=must_not or None)


def _match(cond: schema.Match) -> models.FieldCondition:
    if len(cond.values) == 1:
        return models.FieldCondition(key=cond.key, match=models.MatchValue(value=cond.values[0]))
    return models.FieldCondition(
        key=cond.key,
        match=models.MatchAny(any=list(cond.values)),  # type: ignore[arg-type]
    )


def _scored(points: Sequence[models.ScoredPoint]) -> list[ScoredChunk]:
    return [
        ScoredChunk(Chunk.from_payload(str(p.id), p.payload or {}), float(p.score)) for p in points
    ]


class ServerStore(VectorStore):
    """VectorStore on one collection of a Qdrant server. Open with `await ServerStore.open(...)`."""

    def __init__(
        self, client: AsyncQdrantClient, collection: str, dim: int, owns_client: bool
    ) -> None:
        self._client: AsyncQdrantClient | None = client  # None once closed
        self._collection = collection
        self._dim = dim
        self._owns_client = owns_client

    @classmethod
    async def open(
        cls,
        url_or_location: str,
        collection: str,
        dim: int,
        api_key: str | None = None,
        *,
        timeout_s: int = 10,
    ) -> ServerStore:
        """Connect (":memory:" or an http(s) URL), create the collection when missing."""
        if url_or_location == ":memory:":
            client = AsyncQdrantClient(location=":memory:")
        else:
            client = AsyncQdrantClient(
                url=url_or_location, api_key=api_key, timeout=timeout_s, check_compatibility=False
            )
        try:
            return await cls.from_client(client, collection, dim, owns_client=True)
        except BaseException:
            await client.close()
            raise

    @classmethod
    async def from_client(
        cls, client: AsyncQdrantClient, collection: str, dim: int, *, owns_client: bool = False
    ) -> ServerStore:
        """Use an existing client (several stores may share one); `close()` closes the client
        only when `owns_client`."""
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if not collection:
            raise ValueError("collection name must not be empty")
        store = cls(client, collection, dim, owns_client)
        await store._ensure_collection()
        return store

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def _where(self) -> str:
        """The store, as messages name it."""
        return f"Qdrant collection {self._collection!r}"

    async def _call(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        except (ResponseHandlingException, httpx.TransportError, OSError) as exc:
            raise StoreUnavailable(f"the Qdrant server is unreachable: {exc}") from exc
        except UnexpectedResponse as exc:
            if exc.status_code is not None and exc.status_code >= 500:
                raise StoreUnavailable(
                    f"the Qdrant server failed (HTTP {exc.status_code})"
                ) from exc
            raise StoreError(f"Qdrant rejected the request: {exc}") from exc

    def _check_open(self) -> None:
        self._live()

    def _live(self) -> AsyncQdrantClient:
        """The client; StoreUnavailable once the store is closed."""
        if self._client is None:
            raise StoreUnavailable(f"the vector store ({self._where}) is closed")
        return self._client

    async def _ensure_collection(self) -> None:
        name = self._collection
        if not await self._call(self._live().collection_exists(name)):
            await self._call(
                self._live().create_collection(
                    name,
                    vectors_config={
                        schema.DENSE: models.VectorParams(
                            size=self._dim, distance=models.Distance.COSINE
                        )
                    },
                    sparse_vectors_config={
                        schema.SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)
                    },
                )
            )
        info = await self._call(self._live().get_collection(name))
        vectors = info.config.params.vectors
        sparse = info.config.params.sparse_vectors or {}
        if (
            not isinstance(vectors, dict)
            or schema.DENSE not in vectors
            or schema.SPARSE not in sparse
        ):
            raise StoreError(
                f"{self._where} lacks the named vectors {schema.DENSE!r} and "
                f"{schema.SPARSE!r}; it was not created by this program"
            )
        size = vectors[schema.DENSE].size
        if size != self._dim:
            raise DimensionMismatch(size, self._dim, self._where)
        existing = set(info.payload_schema or {})
        for key, kind in schema.PAYLOAD_INDEXES:
            if key not in existing:
                with warnings.catch_warnings():
                    # The in-memory mode warns that it ignores payload indexes; servers don't.
                    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                    await self._call(
                        self._live().create_payload_index(
                            name, field_name=key, field_schema=_INDEX_TYPES[kind], wait=True
                        )
                    )

    # ---- VectorStore -----------------------------------------------------------------------

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        self._check_open()
        points = [
            models.PointStruct(
                id=p.id,
                vector={
                    schema.DENSE: p.dense,
                    schema.SPARSE: models.SparseVector(
                        indices=p.sparse_indices, values=p.sparse_values
                    ),
                },
                payload=p.payload,
            )
            for p in schema.prepare(items, self._dim)
        ]
        for start in range(0, len(points), UPSERT_BATCH):
            batch = points[start : start + UPSERT_BATCH]
            await self._call(self._live().upsert(self._collection, points=batch, wait=True))

    async def delete(self, flt: Filter) -> None:
        self._check_open()
        condition = server_filter(flt)
        if condition is None:
            raise ValueError("refusing to delete with an empty filter; use delete_all()")
        await self._delete(condition)

    async def delete_all(self) -> None:
        """Delete every point (the collection, its config and indexes stay)."""
        self._check_open()
        await self._delete(models.Filter())

    async def _delete(self, condition: models.Filter) -> None:
        await self._call(
            self._live().delete(
                self._collection,
                points_selector=models.FilterSelector(filter=condition),
                wait=True,
            )
        )

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        self._check_open()
        payload = schema.extra_payload(values)
        condition = server_filter(flt) or models.Filter()
        await self._call(
            self._live().set_payload(
                self._collection,
                payload=payload,
                points=models.FilterSelector(filter=condition),
                wait=True,
            )
        )

    async def move(self, flt: Filter, namespace: str) -> None:
        self._check_open()
        payload = schema.move_payload(schema.plan(flt), namespace)
        await self._call(
            self._live().set_payload(
                self._collection,
                payload=payload,
                points=models.FilterSelector(filter=server_filter(flt) or models.Filter()),
                wait=True,
            )
        )

    async def search_dense(
        self, vector: Sequence[float], *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        self._check_open()
        query = schema.dense_query(vector, self._dim, limit)
        return await self._query(query, schema.DENSE, flt, limit)

    async def search_sparse(
        self, vector: SparseVector, *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]:
        self._check_open()
        indices, values = schema.sparse_query(vector, limit)
        if not indices:
            return []
        sparse = models.SparseVector(indices=indices, values=values)
        return await self._query(sparse, schema.SPARSE, flt, limit)

    async def _query(
        self,
        query: list[float] | models.SparseVector,
        using: str,
        flt: Filter | None,
        limit: int,
    ) -> list[ScoredChunk]:
        """The best `limit` chunks for one named vector, payloads without vectors."""
        response = await self._call(
            self._live().query_points(
                self._collection,
                query=query,
                using=using,
                query_filter=server_filter(flt),
                limit=limit,
                with_payload=True,
                with_vectors=False,
            )
        )
        return _scored(response.points)

    async def optimize(self) -> bool:
        self._check_open()
        return False  # a Qdrant server runs its optimizers by itself

    async def scroll(
        self, flt: Filter | None = None, *, limit: int = 1000, fields: Sequence[str] | None = None
    ) -> list[Chunk]:
        self._check_open()
        schema.check_limit(limit)
        condition = server_filter(flt)
        out: list[Chunk] = []
        offset: Any = None
        while len(out) < limit:
            records, offset = await self._call(
                self._live().scroll(
                    self._collection,
                    scroll_filter=condition,
                    limit=min(SCROLL_PAGE, limit - len(out)),
                    offset=offset,
                    with_payload=True if fields is None else list(fields),
                    with_vectors=False,
                )
            )
            out.extend(Chunk.from_payload(str(r.id), r.payload or {}) for r in records)
            if offset is None or not records:
                break
        return out

    async def count(self, flt: Filter | None = None) -> int:
        self._check_open()
        result = await self._call(
            self._live().count(self._collection, count_filter=server_filter(flt), exact=True)
        )
        return int(result.count)

    async def close(self) -> None:
        """Later calls raise StoreUnavailable; closes the client when this store owns it."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()
