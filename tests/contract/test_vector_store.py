"""Contract suite for VectorStore: every implementation passes the same tests.

MemoryStore (the fake), EdgeStore (Qdrant Edge on tmp_path, for real; both layouts),
EdgeProcessStore (the same shard owned by a child process) and ServerStore (qdrant-client's
AsyncQdrantClient in its in-memory mode).
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from retrieval.fakes import MemoryStore
from retrieval.ports import DenseAndSparseQuery, VectorStore
from retrieval.store import DimensionMismatch, StoreUnavailable
from retrieval.store.edge import ON_DISK, EdgeStore
from retrieval.store.edge_process import EdgeProcessStore
from retrieval.types import CORPUS_NAMESPACE, Chunk, Filter, IndexedChunk, SparseVector

DIM = 8


@dataclass
class Backend:
    name: str
    # Open the store at the backend's one location (same data on every call).
    open: Callable[[int], Awaitable[Any]]
    persistent: bool


def _memory_backend(tmp_path: Path) -> Backend:
    async def open_(dim: int) -> MemoryStore:
        return MemoryStore(dim)

    return Backend("memory", open_, persistent=False)


def _edge_backend(tmp_path: Path) -> Backend:
    async def open_(dim: int) -> EdgeStore:
        return await EdgeStore.open(tmp_path / "qdrant", dim)

    return Backend("edge", open_, persistent=True)


def _server_backend(tmp_path: Path) -> Backend:
    from qdrant_client import AsyncQdrantClient

    from retrieval.store.server import ServerStore

    client = AsyncQdrantClient(location=":memory:")

    async def open_(dim: int) -> ServerStore:
        return await ServerStore.from_client(client, "contract", dim, owns_client=False)

    return Backend("server", open_, persistent=True)


def _edge_on_disk_backend(tmp_path: Path) -> Backend:
    """Edge with the large-library layout: vectors and payload on disk, int8 quantization
    with rescoring, memory-mapped sparse index."""

    async def open_(dim: int) -> EdgeStore:
        return await EdgeStore.open(tmp_path / "qdrant", dim, ON_DISK)

    return Backend("edge-on-disk", open_, persistent=True)


def _edge_process_backend(tmp_path: Path) -> Backend:
    """The on-disk layout in a child process (`retrieval.store.edge_process`)."""

    async def open_(dim: int) -> EdgeProcessStore:
        return await EdgeProcessStore.open(tmp_path / "qdrant", dim, ON_DISK)

    return Backend("edge-process", open_, persistent=True)


BACKENDS = {
    "memory": _memory_backend,
    "edge": _edge_backend,
    "edge-on-disk": _edge_on_disk_backend,
    "edge-process": _edge_process_backend,
    "server": _server_backend,
}


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Any]:
    s = await backend.open(DIM)
    assert isinstance(s, VectorStore)
    yield s
    await s.close()


# ---- data ----------------------------------------------------------------------------------


def uid(n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"chunk-{n}"))


def angle_vec(theta: float) -> list[float]:
    """Unit vector at `theta` radians from e0 in the e0/e1 plane (plus a tiny e2 part)."""
    v = [0.0] * DIM
    v[0], v[1] = math.cos(theta), math.sin(theta)
    return v


def chunk(n: int, **kw: Any) -> Chunk:
    fields: dict[str, Any] = {
        "id": uid(n),
        "text": f"第{n}段 原文",
        "search_text": f"第{n}段 原文",
        "doc_id": f"doc{n % 3}",
        "source": f"书{n % 3}",
        "type": "book",
        "position": n,
    }
    fields.update(kw)
    return Chunk(**fields)


def item(c: Chunk, theta: float = 0.3, sparse: dict[int, float] | None = None) -> IndexedChunk:
    sp = sparse if sparse is not None else {n % 5 + 1: 1.0 for n in (c.position,)}
    return IndexedChunk(
        c, angle_vec(theta), SparseVector(tuple(sp), tuple(float(v) for v in sp.values()))
    )


def corpus() -> list[IndexedChunk]:
    """Twelve chunks covering every filter form."""
    refs = [("Eph.1.10",), ("Eph.1.10", "John.14.20"), ("Rom.8.2",), ()]
    out = []
    for n in range(12):
        c = chunk(
            n,
            type=("book", "outline", "footnote")[n % 3],
            era=("nee", "lee")[n % 2],
            language=("zh", "en")[n % 4 == 3],
            scripture_refs=refs[n % 4],
            topic_tags=("经纶",) if n % 5 == 0 else (),
            namespace="corpus" if n < 9 else "novel:42",
            extra={"version": n % 4, "chapter_no": n, "current": n % 2 == 0, "tags": ["a", f"t{n}"]}
            if n >= 9
            else {"version": n % 4},
        )
        out.append(item(c, theta=0.1 * n, sparse={1: 1.0, 10 + n: float(1 + n % 3)}))
    return out


FILTERS = {
    "equals": Filter(equals={"type": "outline"}),
    "equals_any_list_field": Filter(equals={"scripture_refs": ["John.14.20", "Rom.8.2"]}),
    "equals_scalar_list_field": Filter(equals={"scripture_refs": "Eph.1.10"}),
    "equals_any_scalar_field": Filter(equals={"doc_id": ["doc0", "doc2"]}),
    "not_equals": Filter(not_equals={"era": "lee"}),
    "not_equals_any_list_field": Filter(not_equals={"scripture_refs": ["Eph.1.10"]}),
    "range_closed": Filter(ranges={"x_version": (1, 2)}),
    "range_open_low": Filter(ranges={"x_version": (None, 1)}),
    "range_open_high": Filter(ranges={"x_chapter_no": (10, None)}),
    "bool": Filter(equals={"x_current": True}),
    "combined": Filter(
        equals={"namespace": "corpus", "type": ["book", "footnote"]},
        not_equals={"language": "en"},
        ranges={"x_version": (0, 2)},
    ),
    "extras_keyword": Filter(equals={"x_tags": "t10"}),
    "ids": Filter(ids=frozenset({uid(1), uid(4), uid(10)})),
    "ids_and_fields": Filter(
        equals={"namespace": "corpus"}, not_equals={"era": "lee"}, ids=frozenset(map(uid, range(6)))
    ),
    "ids_and_ids": Filter(ids=frozenset({uid(1), uid(2)})).and_(Filter(ids=frozenset({uid(2)}))),
    "nothing": Filter(equals={"source": "no such book"}),
    "no_ids": Filter(ids=frozenset()),
    "ids_not_stored": Filter(ids=frozenset({uid(99)})),
}


def expected_ids(items: list[IndexedChunk], flt: Filter | None) -> set[str]:
    return {i.chunk.id for i in items if flt is None or flt.matches(i.chunk.payload(), i.chunk.id)}


# ---- tests ---------------------------------------------------------------------------------


async def test_dense_search_orders_by_cosine(store: Any) -> None:
    items = [item(chunk(n), theta=0.2 * n) for n in (3, 0, 4, 1, 2)]
    await store.upsert(items)
    hits = await store.search_dense(angle_vec(0.0), limit=3)
    assert [h.chunk.id for h in hits] == [uid(0), uid(1), uid(2)]
    for h, n in zip(hits, (0, 1, 2), strict=True):
        assert h.score == pytest.approx(math.cos(0.2 * n), abs=1e-4)
    # Non-normalised query: cosine does not care about length.
    hits = await store.search_dense([5.0 * x for x in angle_vec(0.8)], limit=1)
    assert hits[0].chunk.id == uid(4)
    assert hits[0].chunk.text == "第4段 原文"


async def test_sparse_search_scores_like_bm25_with_idf(store: Any) -> None:
    # term 1 is in every document, term 7 in two, term 9 in one.
    docs = {
        0: {1: 2.0, 7: 1.0},
        1: {1: 1.0, 7: 1.5},
        2: {1: 1.0, 9: 1.0},
        3: {1: 0.5},
        4: {2: 1.0},
    }
    await store.upsert([item(chunk(n), sparse=sp) for n, sp in docs.items()])
    n_docs = len(docs)

    def idf(n: int) -> float:
        return math.log((n_docs - n + 0.5) / (n + 0.5) + 1.0)

    hits = await store.search_sparse(SparseVector((1, 7, 9), (1.0, 1.0, 1.0)), limit=10)
    expected = {
        0: 2.0 * idf(4) + 1.0 * idf(2),
        1: 1.0 * idf(4) + 1.5 * idf(2),
        2: 1.0 * idf(4) + 1.0 * idf(1),
        3: 0.5 * idf(4),
    }
    ranked = sorted(expected, key=lambda n: -expected[n])
    assert [h.chunk.id for h in hits] == [uid(n) for n in ranked]  # doc 4 shares no term
    for h, n in zip(hits, ranked, strict=True):
        assert h.score == pytest.approx(expected[n], rel=1e-3)
    assert await store.search_sparse(SparseVector((), ()), limit=5) == []
    assert await store.search_sparse(SparseVector((99,), (1.0,)), limit=5) == []


@pytest.mark.parametrize("name", ["none", "equals", "combined", "ids_and_fields", "nothing"])
async def test_dense_and_sparse_at_once_are_the_two_searches(store: Any, name: str) -> None:
    data = corpus()
    await store.upsert(data)
    flt = FILTERS.get(name)
    query, terms = angle_vec(0.35), SparseVector((1, 12, 14), (1.0, 2.0, 0.5))
    dense, sparse = await store.search_dense_and_sparse(
        DenseAndSparseQuery(query, terms, flt=flt, dense_limit=5, sparse_limit=4)
    )

    def ranked(hits: list[Any]) -> list[tuple[str, float, Chunk]]:
        return [(h.chunk.id, round(h.score, 4), h.chunk) for h in hits]

    assert ranked(dense) == ranked(await store.search_dense(query, flt=flt, limit=5))
    assert ranked(sparse) == ranked(await store.search_sparse(terms, flt=flt, limit=4))
    assert {h.chunk.id for h in dense} <= expected_ids(data, flt)
    # no keyword terms: the dense ranking alone
    dense_only, none = await store.search_dense_and_sparse(
        DenseAndSparseQuery(query, SparseVector((), ()), flt=flt, dense_limit=3)
    )
    assert ranked(dense_only) == ranked(dense[:3]) and none == []


async def test_dense_and_sparse_at_once_rejects_bad_input(store: Any) -> None:
    with pytest.raises(ValueError):
        await store.search_dense_and_sparse(DenseAndSparseQuery([1.0], SparseVector((1,), (1.0,))))
    with pytest.raises(ValueError):
        await store.search_dense_and_sparse(
            DenseAndSparseQuery(angle_vec(0.1), SparseVector((1,), (1.0,)), dense_limit=0)
        )
    with pytest.raises(ValueError):
        await store.search_dense_and_sparse(
            DenseAndSparseQuery(angle_vec(0.1), SparseVector((1, 2), (1.0,)))
        )


@pytest.mark.parametrize("name", list(FILTERS))
async def test_every_filter_form(store: Any, name: str) -> None:
    items = corpus()
    await store.upsert(items)
    flt = FILTERS[name]
    want = expected_ids(items, flt)
    if name not in ("nothing", "no_ids", "ids_not_stored"):
        assert want, "the test corpus must exercise the filter"
    dense = await store.search_dense(angle_vec(0.0), flt=flt, limit=50)
    assert {h.chunk.id for h in dense} == want
    sparse = await store.search_sparse(SparseVector((1,), (1.0,)), flt=flt, limit=50)
    assert {h.chunk.id for h in sparse} == want
    assert {c.id for c in await store.scroll(flt)} == want
    assert await store.count(flt) == len(want)


async def test_payload_round_trips(store: Any) -> None:
    items = corpus()
    await store.upsert(items)
    by_id = {c.id: c for c in await store.scroll()}
    for it in items:
        assert by_id[it.chunk.id] == it.chunk


async def test_delete_by_filter_never_returns_deleted(store: Any) -> None:
    items = corpus()
    await store.upsert(items)
    gone = Filter(equals={"doc_id": "doc1"})
    await store.delete(gone)
    left = expected_ids(items, None) - expected_ids(items, gone)
    assert await store.count() == len(left)
    assert await store.count(gone) == 0
    assert {c.id for c in await store.scroll()} == left
    assert {h.chunk.id for h in await store.search_dense(angle_vec(0.0), limit=50)} == left
    sparse = await store.search_sparse(SparseVector((1,), (1.0,)), limit=50)
    assert {h.chunk.id for h in sparse} == left
    with pytest.raises(ValueError, match="empty filter"):
        await store.delete(Filter())
    await store.delete_all()
    assert await store.count() == 0


async def test_set_extra_then_filter(store: Any) -> None:
    items = corpus()
    await store.upsert(items)
    await store.set_extra(
        Filter(equals={"doc_id": "doc2"}), {"current": False, "version": 7, "tags": ["old"]}
    )
    marked = expected_ids(items, Filter(equals={"doc_id": "doc2"}))
    assert {c.id for c in await store.scroll(Filter(equals={"x_current": False}))} >= marked
    assert {c.id for c in await store.scroll(Filter(ranges={"x_version": (7, 7)}))} == marked
    assert await store.count(Filter(equals={"x_tags": "old"})) == len(marked)
    hits = await store.search_dense(
        angle_vec(0.0), flt=Filter(not_equals={"x_version": 7}), limit=50
    )
    assert {h.chunk.id for h in hits} == expected_ids(items, None) - marked
    for c in await store.scroll(Filter(equals={"doc_id": "doc2"})):
        assert c.extra["version"] == 7 and c.extra["current"] is False
        assert c.text.endswith("原文")  # the rest of the payload is untouched
    with pytest.raises(ValueError, match="x_"):
        await store.set_extra(Filter(equals={"doc_id": "doc2"}), {"x_version": 1})


async def test_move_to_another_namespace_and_back_keeps_every_vector(store: Any) -> None:
    """A trash: the moved points leave every search of their namespace and come back whole,
    scored exactly as before (nothing is embedded again)."""
    items = corpus()
    await store.upsert(items)
    home = Filter(equals={"namespace": CORPUS_NAMESPACE})
    query = angle_vec(0.3)
    before = [(h.chunk.id, h.score) for h in await store.search_dense(query, flt=home, limit=50)]
    doc1 = Filter(equals={"doc_id": "doc1", "namespace": CORPUS_NAMESPACE})
    moved = expected_ids(items, doc1)
    await store.move(doc1, "trash")
    kept = {h.chunk.id for h in await store.search_dense(query, flt=home, limit=50)}
    assert kept == expected_ids(items, home) - moved
    trashed = await store.scroll(Filter(equals={"namespace": "trash"}))
    assert {c.id for c in trashed} == moved and all(c.namespace == "trash" for c in trashed)
    assert all(c.text.endswith("原文") for c in trashed)  # the rest of the payload is kept
    await store.move(Filter(equals={"namespace": "trash", "doc_id": "doc1"}), CORPUS_NAMESPACE)
    after = [(h.chunk.id, h.score) for h in await store.search_dense(query, flt=home, limit=50)]
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-6)
    assert await store.count(Filter(equals={"namespace": "trash"})) == 0
    with pytest.raises(ValueError, match="empty filter"):
        await store.move(Filter(), "trash")


def _library_beside_shelves() -> list[IndexedChunk]:
    """The shared library (11 chunks, far from the angle 0) and one reader's shelf (1) beside
    another shelf and the trash (12 each, nearest the angle 0): the reader's namespaces hold
    about a third of the points, and a question near the others' chunks finds none of the
    reader's among its nearest."""
    placed = [
        *((CORPUS_NAMESPACE, 1.0 + 0.03 * n) for n in range(11)),
        ("shelf:a", 0.5),
        *(("shelf:b", 0.002 + 0.01 * n) for n in range(12)),
        *(("trash", 0.007 + 0.01 * n) for n in range(12)),
    ]
    return [
        item(chunk(n, namespace=namespace), theta=theta)
        for n, (namespace, theta) in enumerate(placed)
    ]


@pytest.mark.parametrize("theta", [0.0, 1.2])
@pytest.mark.parametrize("namespaces", [[CORPUS_NAMESPACE], [CORPUS_NAMESPACE, "shelf:a"]])
async def test_a_reading_of_most_of_the_store_gets_its_namespaces_nearest(
    store: Any, namespaces: list[str], theta: float
) -> None:
    """A search of the namespaces holding most points (the shared library and a shelf) finds
    the nearest of their points, best first, and no point of any other namespace: asked
    beside the others' nearest chunks (theta 0) or among its own (1.2), for a few or all."""
    items = _library_beside_shelves()
    await store.upsert(items)
    flt = Filter(equals={"namespace": namespaces})
    query = angle_vec(theta)
    inside = [i for i in items if i.chunk.namespace in namespaces]
    by_distance = sorted(inside, key=lambda i: abs(math.atan2(i.dense[1], i.dense[0]) - theta))
    nearest = [i.chunk.id for i in by_distance]
    terms = SparseVector((1, 2), (1.0, 1.0))
    for limit in (3, 50):
        want = nearest[:limit]
        assert [h.chunk.id for h in await store.search_dense(query, flt=flt, limit=limit)] == want
        dense, sparse = await store.search_dense_and_sparse(
            DenseAndSparseQuery(query, terms, flt=flt, dense_limit=limit, sparse_limit=limit)
        )
        assert [h.chunk.id for h in dense] == want
        assert {h.chunk.namespace for h in sparse} <= set(namespaces)


async def test_scroll_pages_beyond_one_page(store: Any) -> None:
    items = [item(chunk(n), theta=0.001 * n) for n in range(600)]
    await store.upsert(items)
    assert await store.count() == 600
    everything = await store.scroll(limit=1000)
    assert len(everything) == 600
    assert {c.id for c in everything} == {i.chunk.id for i in items}
    assert len({c.id for c in await store.scroll(limit=300)}) == 300
    some = await store.scroll(Filter(equals={"doc_id": "doc1"}), limit=1000)
    assert len(some) == 200


async def test_scroll_reads_only_the_fields_asked_for(store: Any) -> None:
    await store.upsert(corpus())
    flt = Filter(equals={"scripture_refs": "Eph.1.10"})
    whole = {c.id: c for c in await store.scroll(flt)}
    slim = await store.scroll(flt, fields=("doc_id", "position", "scripture_refs", "x_version"))
    assert whole and {c.id for c in slim} == set(whole)
    for c in slim:
        w = whole[c.id]
        assert (c.doc_id, c.position, c.scripture_refs) == (w.doc_id, w.position, w.scripture_refs)
        assert c.extra == {"version": w.extra["version"]}
        assert w.text and c.text == ""


async def test_a_search_repeated_across_writes_reads_what_was_written(store: Any) -> None:
    """The same fused search and read by id, again and again, with writes between: each time
    the chunks as they are now (a store that keeps payloads it was sent must let them go)."""
    data = corpus()
    await store.upsert(data)
    query = DenseAndSparseQuery(angle_vec(0.35), SparseVector((1,), (1.0,)), dense_limit=12)
    by_id = Filter(ids=frozenset(uid(n) for n in range(9)))

    async def read() -> tuple[dict[str, Chunk], dict[str, Chunk], dict[str, Chunk]]:
        dense, sparse = await store.search_dense_and_sparse(query)
        listed = await store.scroll(by_id)
        return (
            {h.chunk.id: h.chunk for h in dense},
            {h.chunk.id: h.chunk for h in sparse},
            {c.id: c for c in listed},
        )

    first = await read()
    assert await read() == first and len(first[0]) == 12 and len(first[2]) == 9
    await store.upsert([item(chunk(4, text="第4段 改过"), theta=0.4, sparse={1: 1.0})])
    await store.set_extra(Filter(equals={"doc_id": "doc1"}), {"version": 9})
    await store.delete(Filter(equals={"doc_id": "doc2"}))
    for _ in range(2):
        for found in await read():
            assert found and not any(c.doc_id == "doc2" for c in found.values())
            assert all(c.extra["version"] == 9 for c in found.values() if c.doc_id == "doc1")
            assert found[uid(4)].text == "第4段 改过"
    # a chunk the first reads saw, unchanged by the writes, is read as it was
    assert (await read())[0][uid(0)] == first[0][uid(0)]


async def test_upsert_replaces_same_id(store: Any) -> None:
    await store.upsert([item(chunk(1, text="旧"))])
    await store.upsert([item(chunk(1, text="新"))])
    assert await store.count() == 1
    assert [c.text for c in await store.scroll()] == ["新"]


async def test_bad_input_is_a_clear_error(store: Any) -> None:
    with pytest.raises(ValueError, match="UUID"):
        await store.upsert([item(chunk(1, id="chunk-1"))])
    with pytest.raises(ValueError, match="dimensions"):
        await store.upsert([IndexedChunk(chunk(1), [1.0, 0.0], SparseVector((), ()))])
    with pytest.raises(ValueError, match="finite"):
        await store.upsert([IndexedChunk(chunk(1), [math.nan] * DIM, SparseVector((), ()))])
    with pytest.raises(ValueError, match="indices"):
        await store.upsert([IndexedChunk(chunk(1), angle_vec(0), SparseVector((1, 2), (1.0,)))])
    with pytest.raises(ValueError, match="empty list"):
        await store.count(Filter(equals={"doc_id": []}))
    with pytest.raises(ValueError, match="bound"):
        await store.count(Filter(ranges={"x_version": (None, None)}))
    with pytest.raises(ValueError, match="dimensions"):
        await store.search_dense([1.0, 0.0])
    with pytest.raises(ValueError, match=r"Filter\.ids: .*UUID"):
        await store.scroll(Filter(ids=frozenset({"chunk-1"})))
    with pytest.raises(ValueError, match=r"Filter\.ids must be a set"):
        await store.count(Filter(ids=[uid(1)]))  # type: ignore[arg-type]
    assert await store.count() == 0  # nothing half-written


async def test_ids_are_read_in_their_canonical_form_and_delete_by_id(store: Any) -> None:
    items = corpus()
    await store.upsert(items)
    shouting = Filter(ids=frozenset({uid(3).upper(), uid(5)}))
    assert {c.id for c in await store.scroll(shouting)} == {uid(3), uid(5)}
    await store.delete(Filter(ids=frozenset({uid(3)})))
    await store.delete(Filter(ids=frozenset()))  # matches nothing: deletes nothing
    assert {c.id for c in await store.scroll()} == {i.chunk.id for i in items} - {uid(3)}


async def test_concurrent_upserts_do_not_corrupt(store: Any) -> None:
    async def writer(w: int) -> None:
        for b in range(5):
            base = 1000 + w * 100 + b * 10
            await store.upsert(
                [
                    item(chunk(n, text=f"text-{n}"), theta=0.01 * (n % 50))
                    for n in range(base, base + 10)
                ]
            )
            await store.search_dense(angle_vec(0.1), limit=5)

    await asyncio.gather(*(writer(w) for w in range(8)))
    assert await store.count() == 400
    chunks = await store.scroll(limit=1000)
    assert len(chunks) == 400
    for c in chunks:
        assert c.id == uid(c.position) and c.text == f"text-{c.position}"


async def test_closed_store_raises_unavailable(backend: Backend) -> None:
    s = await backend.open(DIM)
    await s.close()
    with pytest.raises(StoreUnavailable):
        await s.count()
    await s.close()  # idempotent


async def test_reopen_keeps_data(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip("the in-memory fake does not persist")
    items = corpus()
    s = await backend.open(DIM)
    await s.upsert(items)
    await s.set_extra(Filter(equals={"doc_id": "doc0"}), {"reviewed": True})
    await s.close()
    s = await backend.open(DIM)
    try:
        assert await s.count() == len(items)
        assert await s.count(Filter(equals={"x_reviewed": True})) == len(
            expected_ids(items, Filter(equals={"doc_id": "doc0"}))
        )
        hits = await s.search_dense(angle_vec(0.0), limit=1)
        assert hits[0].chunk.id == items[0].chunk.id
    finally:
        await s.close()


async def test_dim_mismatch_names_both_dims(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip("the in-memory fake does not persist")
    s = await backend.open(DIM)
    await s.upsert(corpus()[:2])
    await s.close()
    with pytest.raises(DimensionMismatch, match=r"8-d.*16-d.*re-index"):
        await backend.open(16)
    s = await backend.open(DIM)  # the store is still usable with the right dim
    assert await s.count() == 2
    await s.close()


# ---- implementation-specific --------------------------------------------------------------


async def test_server_unreachable_is_store_unavailable() -> None:
    import socket

    from retrieval.store.server import ServerStore

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreUnavailable, match="unreachable"):
        await ServerStore.open(f"http://127.0.0.1:{port}", "corpus", DIM, timeout_s=2)


async def test_server_open_by_location() -> None:
    from retrieval.store.server import ServerStore

    s = await ServerStore.open(":memory:", "corpus", DIM)
    await s.upsert(corpus()[:3])
    assert await s.count() == 3
    await s.close()


async def test_edge_hybrid_fuses_dense_and_sparse(tmp_path: Path) -> None:
    s = await EdgeStore.open(tmp_path / "q", DIM)
    try:
        # Dense ranks 0, 2, 5; sparse ranks 2, 5, 0: fused, doc 2 wins.
        await s.upsert(
            [
                item(chunk(0), theta=0.0, sparse={1: 0.2}),
                item(chunk(2), theta=0.1, sparse={1: 1.0, 2: 2.5}),
                item(chunk(5), theta=1.4, sparse={1: 1.0, 2: 2.0}),
                item(chunk(7), theta=1.5, sparse={3: 1.0}),
            ]
        )
        query_sparse = SparseVector((1, 2), (1.0, 1.0))
        hits = await s.search_hybrid(angle_vec(0.0), query_sparse, limit=3)
        assert hits[0].chunk.id == uid(2)
        # Edge's weighted RRF is 1 / ((rank + 1) / weight + k - 1): weights stretch ranks,
        # so they only steer the order when k is small.
        dense_heavy = await s.search_hybrid(
            angle_vec(0.0), query_sparse, limit=1, weights=(10.0, 0.1), k=2
        )
        assert dense_heavy[0].chunk.id == uid(0)
        filtered = await s.search_hybrid(
            angle_vec(0.0), query_sparse, flt=Filter(not_equals={"position": [2, 0]}), limit=5
        )
        assert [h.chunk.id for h in filtered][:1] == [uid(5)]
        assert uid(2) not in {h.chunk.id for h in filtered}
        await s.optimize()
        exact = await s.search_dense(angle_vec(0.0), limit=2, exact=True)
        assert [h.chunk.id for h in exact] == [uid(0), uid(2)]
    finally:
        await s.close()


async def test_edge_writes_meta_and_refuses_foreign_meta(tmp_path: Path) -> None:
    s = await EdgeStore.open(tmp_path / "q", DIM)
    await s.close()
    meta = tmp_path / "q" / "baibao-store.json"
    assert '"dim": 8' in meta.read_text()
    meta.write_text("{not json")
    from retrieval.store import StoreError

    with pytest.raises(StoreError, match=r"baibao-store\.json"):
        await EdgeStore.open(tmp_path / "q", DIM)


def _mapped_indexes(s: EdgeStore) -> dict[str, bool]:
    import qdrant_edge as qe

    info = s.ops.shard.info().payload_schema
    return {k: getattr(v.params, "memory", None) == qe.Memory.Cold for k, v in info.items()}


async def test_edge_layout_moves_payload_indexes_and_keeps_the_namespace_one_in_ram(
    tmp_path: Path,
) -> None:
    from retrieval.store.edge import IN_MEMORY

    s = await EdgeStore.open(tmp_path / "q", DIM, ON_DISK)
    await s.upsert(corpus())
    mapped = _mapped_indexes(s)
    # every search filters on the namespace: its index stays resident, the others are mapped
    assert mapped.pop("namespace") is False
    assert mapped and all(mapped.values())
    await s.close()

    s = await EdgeStore.open(tmp_path / "q", DIM, IN_MEMORY)
    assert not any(_mapped_indexes(s).values())
    await s.close()

    s = await EdgeStore.open(tmp_path / "q", DIM, ON_DISK)
    try:
        assert _mapped_indexes(s)["type"] is True
        # the indexes were rebuilt over the same points: filters still answer exactly
        flt = Filter(equals={"namespace": "corpus", "type": "outline"})
        found = {c.id for c in await s.scroll(flt)}
        assert found == expected_ids(corpus(), flt) and found
        assert await s.count() == len(corpus())
    finally:
        await s.close()


def test_the_on_disk_layout_searches_a_shards_segments_on_one_thread() -> None:
    """Eight searches in flight on two cores: a search's segments on one thread each, not
    spread over Qdrant Edge's pool (bench/results/million.md). The contract suite runs both
    layouts' searches."""
    from retrieval.store.edge import IN_MEMORY

    assert ON_DISK.search_threads == 1
    assert ON_DISK.config(DIM).max_search_threads == 1
    assert IN_MEMORY.config(DIM).max_search_threads is None


async def test_edge_bounded_segments_index_as_they_fill_and_reads_go_on(tmp_path: Path) -> None:
    """`Layout.segment_points`: every `segment_points` points written are indexed (optimize)
    and the shard is reopened, which is what gives the build's memory back, while reads from
    other threads keep answering; nothing is lost. (How many segments Qdrant keeps shows only
    at scale: bench/bench_million.py.)"""
    import dataclasses

    layout = dataclasses.replace(ON_DISK, segment_points=40)
    s = await EdgeStore.open(tmp_path / "q", DIM, layout)
    stop = asyncio.Event()

    async def read_meanwhile() -> int:
        reads = 0
        while not stop.is_set():
            await s.search_dense(angle_vec(0.0), limit=3)
            reads += 1
            await asyncio.sleep(0)
        return reads

    reader = asyncio.create_task(read_meanwhile())
    items = [item(chunk(n), theta=0.01 * n) for n in range(130)]
    try:
        for start in range(0, len(items), 10):
            await s.upsert(items[start : start + 10])
        stop.set()
        assert await reader > 0
        assert s.ops.reopens == 3  # after every 40 points
        assert await s.count() == len(items)
        nearest = await s.search_dense(angle_vec(0.0), limit=2)
        assert [h.chunk.id for h in nearest] == [uid(0), uid(1)]
    finally:
        stop.set()
        await s.close()
    s = await EdgeStore.open(tmp_path / "q", DIM, layout)
    try:
        assert {c.id for c in await s.scroll(limit=200)} == {i.chunk.id for i in items}
    finally:
        await s.close()


async def test_optimize_keeps_every_point_searchable(store: Any) -> None:
    data = corpus()
    await store.upsert(data)
    assert isinstance(await store.optimize(), bool)
    assert await store.count() == len(data)
    flt = FILTERS["combined"]
    assert {c.id for c in await store.scroll(flt)} == expected_ids(data, flt)
    nearest = await store.search_dense(angle_vec(0.0), limit=1)
    assert nearest[0].chunk.id == uid(0)


async def test_scroll_by_id_keeps_id_order_and_the_limit(store: Any) -> None:
    data = corpus()
    await store.upsert(data)
    wanted = frozenset(uid(n) for n in (8, 1, 5, 3, 10, 99))
    flt = Filter(equals={"namespace": "corpus"}, not_equals={"era": "lee"}, ids=wanted)
    everything = await store.scroll(flt)
    assert [c.id for c in everything] == sorted(expected_ids(data, flt))
    assert [c.id for c in await store.scroll(flt, limit=2)] == sorted(expected_ids(data, flt))[:2]
    assert [c.id for c in await store.scroll(Filter(ids=frozenset({uid(4).upper()})))] == [uid(4)]
    assert all(c == i.chunk for c in everything for i in data if i.chunk.id == c.id)
