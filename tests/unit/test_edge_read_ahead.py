"""`edge_shard.read_ahead`: before a load, the files Qdrant Edge copies into RAM (the quantized
vectors) are read through once, so its copy finds them in the page cache (a 1M shard loaded in
~1 s instead of ~5 s: bench/results/million.md). What is read, and that a shard still opens."""

from __future__ import annotations

from pathlib import Path

from retrieval.store.edge import ON_DISK, EdgeStore
from retrieval.store.edge_shard import read_ahead
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
