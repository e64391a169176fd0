"""A filtered update that matches nothing never reaches Qdrant Edge (on a real shard).

Qdrant acknowledges a write-ahead-log entry once a segment holds its version; an update that
changed nothing stays in the log and its filter is evaluated again at every load. A start-up
reconcile's no-op delete added 1.5 s to every later load of a million-chunk shard
(bench/results/million.md), so `ShardOps` probes for one matching point first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qdrant_edge as qe

from retrieval.store.edge import EdgeStore
from retrieval.types import Filter
from tests.contract.test_vector_store import DIM, corpus


class RecordingShard:
    """The open shard, with the updates sent to it recorded."""

    def __init__(self, shard: qe.EdgeShard) -> None:
        self.shard = shard
        self.updates: list[qe.UpdateOperation] = []

    def update(self, operation: qe.UpdateOperation) -> None:
        self.updates.append(operation)
        self.shard.update(operation)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)


async def test_an_update_matching_nothing_is_not_sent_one_matching_is(tmp_path: Path) -> None:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    ops = store._ops  # the seam: the shard its operations run on
    shard = ops._shard
    recording = RecordingShard(shard)
    try:
        await store.upsert(corpus())
        ops._shard = recording  # type: ignore[assignment]
        nowhere = Filter(equals={"doc_id": "no-such-document"})
        await store.delete(nowhere)
        await store.set_extra(nowhere, {"current": True})
        assert recording.updates == []
        assert await store.count() == 12

        doc0 = Filter(equals={"doc_id": "doc0"})
        await store.set_extra(doc0, {"current": True})
        await store.delete(Filter(equals={"doc_id": "doc1"}))
        assert len(recording.updates) == 2
        assert await store.count(Filter(equals={"doc_id": "doc1"})) == 0
        assert await store.count() == 8
        assert {c.extra.get("current") for c in await store.scroll(doc0, limit=10)} == {True}
        await store.delete_all()
        assert await store.count() == 0 and len(recording.updates) == 3
        await store.delete_all()  # nothing left to delete: not sent
        assert len(recording.updates) == 3
    finally:
        ops._shard = shard
        await store.close()
