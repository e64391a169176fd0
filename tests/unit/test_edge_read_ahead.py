"""`edge_shard.read_ahead`: before a load, the files Qdrant Edge copies into RAM (the quantized
vectors) are read through once, so its copy finds them in the page cache (a 1M shard loaded in
~1 s instead of ~5 s: bench/results/million.md). `edge_shard.warm_page_cache`: after it, the
files searches read from a mapped shard, on a thread of the store's process. What is read, and
that a shard still opens and serves."""

from __future__ import annotations

import threading
from pathlib import Path

from retrieval.store.edge import ON_DISK, EdgeStore
from retrieval.store.edge_process import EdgeProcessStore
from retrieval.store.edge_shard import read_ahead, warm_page_cache
from tests.contract.test_vector_store import DIM, corpus


def test_the_quantized_vectors_of_every_segment_are_read_and_nothing_else(tmp_path: Path) -> None:
    sizes = {"a": 3 << 20, "b": 5}
    for segment, size in sizes.items():
        dense = tmp_path / "segments" / segment / "vector_storage-dense"
        dense.mkdir(parents=True)
        (dense / "quantized.data").write_bytes(b"q" * size)
        (dense / "matrix.dat").write_bytes(b"m" * 4096)  # mapped, read on demand: left alone
    (tmp_path / "segments" / "a" / "payload_storage").mkdir()
    (tmp_path / "segments" / "a" / "payload_storage" / "page_0.dat").write_bytes(b"p" * 99)
    assert read_ahead(tmp_path) == sum(sizes.values())
    assert read_ahead(tmp_path / "nothing here") == 0


async def test_a_shard_without_quantized_vectors_loads_as_before(tmp_path: Path) -> None:
    async with await EdgeStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus())
    assert read_ahead(tmp_path / "q") == 0  # too small to be indexed: nothing to read
    async with await EdgeStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        assert await s.count() == len(corpus())


def _shard_files(root: Path) -> dict[str, int]:
    files = {
        "a/vector_index-bm25/postings.dat": 5,
        "a/payload_index/type/map.dat": 7,
        "a/vector_storage-dense/matrix.dat": 11,
        "a/vector_storage-dense/quantized.data": 1000,  # read before the load: not again
        "b/vector_storage-bm25/store/page_0.dat": 13,
        "b/payload_storage/page_0.dat": 17,
        "b/segment.json": 19,  # not read by a search
    }
    for name, size in files.items():
        (root / "segments" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "segments" / name).write_bytes(b"x" * size)
    return files


def test_the_files_a_search_reads_are_read_through_once_within_the_budget(tmp_path: Path) -> None:
    _shard_files(tmp_path)
    go = threading.Event()
    assert warm_page_cache(tmp_path, go, budget=10**6) == 5 + 7 + 11 + 13 + 17
    # the most-read first: the indexes fit a budget of 12 bytes, the vectors do not
    assert warm_page_cache(tmp_path, go, budget=12) == 5 + 7
    assert warm_page_cache(tmp_path / "nothing here", go, budget=10**6) == 0
    stopped = threading.Event()
    stopped.set()
    assert warm_page_cache(tmp_path, stopped, budget=10**6) == 0


async def test_a_mapped_shard_in_its_own_process_serves_while_it_is_read_through(
    tmp_path: Path,
) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus())
        assert await s.count() == len(corpus())
    # and again, now that it has segments to read through
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        assert await s.count() == len(corpus())
