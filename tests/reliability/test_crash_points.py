"""A crash at each step boundary of a corpus replace / delete / trash / restore / purge,
deterministically.

The random SIGKILL campaign (test_sigkill.py) rarely lands between two particular steps that
are microseconds apart; here the store is wrapped so that the process "dies" right after a
chosen store call has been carried out (a `BaseException` nothing in the indexer catches; the
indexer object is then abandoned, as a killed process would abandon it). A fresh `Indexer` on
the same SQLite file and Qdrant Edge shard reconciles, and the document must be either fully
the old version or fully the new one: never zero chunks while the registry records some. A
document a crash caught in the trash's steps ends in exactly one place: live with its points in
its namespace, in the trash with its points there, or gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrieval.fakes import HashEmbedder
from retrieval.index import DocumentRecord, Indexer
from retrieval.store.edge import EdgeStore
from retrieval.types import Chunk, Filter, IndexedChunk, chunk_id
from tests.reliability.helpers.sigkill_child import DIM, CharEncoder


class Killed(BaseException):
    """The process died here (nothing after this point runs)."""


class DyingStore:
    """The real Edge store; after the `n`-th call of `method` has been carried out (or just
    before it, `before`), dies."""

    def __init__(self, inner: EdgeStore, method: str, n: int, *, before: bool = False) -> None:
        self.inner = inner
        self.method, self.n, self.before = method, n, before
        self.calls: dict[str, int] = {}

    def _after(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if name == self.method and self.calls[name] == self.n:
            raise Killed(f"{name} #{self.n}")

    def _before(self, name: str) -> None:
        if self.before and name == self.method and self.calls.get(name, 0) + 1 == self.n:
            raise Killed(f"before {name} #{self.n}")

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        self._before("upsert")
        await self.inner.upsert(items)
        self._after("upsert")

    async def delete(self, flt: Filter) -> None:
        self._before("delete")
        await self.inner.delete(flt)
        self._after("delete")

    async def move(self, flt: Filter, namespace: str) -> None:
        self._before("move")
        await self.inner.move(flt, namespace)
        self._after("move")

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@dataclass
class Env:
    tmp: Path
    store: EdgeStore

    @property
    def db(self) -> Path:
        return self.tmp / "baibao.sqlite3"

    def indexer(self, store: object | None = None) -> Indexer:
        return Indexer(self.db, store or self.store, HashEmbedder(DIM), CharEncoder(), None)  # type: ignore[arg-type]


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    store = await EdgeStore.open(tmp_path / "qdrant", DIM)
    yield Env(tmp_path, store)
    await store.close()


def version(k: int, n: int) -> tuple[DocumentRecord, list[Chunk]]:
    doc = DocumentRecord(
        doc_id="doc-a",
        source="文档甲",
        author="",
        year=None,
        era="",
        type="message",
        language="zh",
        path=f"a.v{k}.md",
        content_hash=f"hash-{k}",
        chunk_count=n,
        ingested_at="",
    )
    chunks = []
    for i in range(n):
        text = f"〔v{k}〕第{i}段：神圣的分赐使召会成为基督的身体。"
        chunks.append(
            Chunk(
                id=chunk_id("corpus", "doc-a", i, text),
                text=text,
                doc_id="doc-a",
                source="文档甲",
                type="message",
                language="zh",
                position=i,
                search_text=text,
            )
        )
    return doc, chunks


async def _state(env: Env) -> tuple[DocumentRecord | None, list[Chunk]]:
    async with env.indexer() as fresh:
        await fresh.reconcile()  # start-up
        record = await fresh.document("doc-a")
        points = await env.store.scroll(Filter(equals={"namespace": "corpus"}), limit=1000)
        return record, points


def _consistent(record: DocumentRecord | None, points: list[Chunk]) -> None:
    if record is None:
        assert points == [], "orphan points of an unregistered document"
        return
    marks = {p.text.partition("〕")[0] for p in points}
    assert len(points) == record.chunk_count, (
        f"registry says {record.chunk_count} chunks of {record.path}, store has {len(points)}"
    )
    assert marks == {"〔" + record.path.split(".")[1]}, (marks, record.path)


REPLACE_POINTS = [
    ("upsert", 1),  # new generation's points in, nothing else
    ("delete", 1),  # registry names the new generation, the old one not yet deleted
]


@pytest.mark.parametrize(("method", "n"), REPLACE_POINTS)
async def test_crash_inside_replace_document(env: Env, method: str, n: int) -> None:
    async with env.indexer() as ix:
        await ix.replace_document(*version(1, 5))
    dying = DyingStore(env.store, method, n)
    ix = env.indexer(dying)
    await ix.open()
    with pytest.raises(Killed):
        await ix.replace_document(*version(2, 3))
    await ix.close()
    _consistent(*await _state(env))


async def test_crash_inside_delete_document(env: Env) -> None:
    async with env.indexer() as ix:
        await ix.replace_document(*version(1, 4))
    ix = env.indexer(DyingStore(env.store, "delete", 1))
    await ix.open()
    with pytest.raises(Killed):
        await ix.delete_document("doc-a")
    await ix.close()
    _consistent(*await _state(env))


async def test_reconcile_removes_a_half_written_generation(env: Env) -> None:
    """A crash in the middle of the upserts (some batches in) leaves the old version whole."""
    async with env.indexer() as ix:
        await ix.replace_document(*version(1, 4))
    ix = env.indexer(DyingStore(env.store, "upsert", 1))
    await ix.open()
    with pytest.raises(Killed):
        await ix.replace_document(*version(2, 70))  # more than one embedding batch
    await ix.close()
    record, points = await _state(env)
    assert record is not None and record.path == "a.v1.md"
    _consistent(record, points)


# ---- the trash --------------------------------------------------------------------------------


async def _placed(env: Env) -> tuple[str, DocumentRecord | None]:
    """After a restart: where the document is ("live", "trash" or "gone"), checked whole."""
    async with env.indexer() as fresh:
        await fresh.reconcile()  # start-up
        record = await fresh.document("doc-a")
        live = await env.store.scroll(Filter(equals={"namespace": "corpus"}), limit=1000)
        trashed = await env.store.scroll(Filter(equals={"namespace": "trash"}), limit=1000)
        rows = await fresh._rows("WHERE pending != ''")
    assert rows == [], "a step left pending"
    if record is None:
        assert live == [] and trashed == [], "points of a purged document"
        return "gone", None
    here, there = (trashed, live) if record.trashed else (live, trashed)
    assert there == [], "points in two places"
    _consistent(record, here)
    return ("trash" if record.trashed else "live"), record


TRASH_POINTS = [
    ("trash", "move", True, "trash"),  # the registry says trash; the points not moved yet
    ("trash", "move", False, "trash"),  # moved; the row still pending
    ("restore", "move", True, "live"),
    ("restore", "move", False, "live"),
    ("purge", "delete", True, "gone"),  # the row says purge; nothing deleted yet
    ("purge", "delete", False, "gone"),  # points deleted; the row not yet
]


@pytest.mark.parametrize(("step", "method", "before", "ends"), TRASH_POINTS)
async def test_crash_inside_trash_restore_purge(
    env: Env, step: str, method: str, before: bool, ends: str
) -> None:
    async with env.indexer() as ix:
        await ix.replace_document(*version(1, 4))
        if step != "trash":
            await ix.trash_documents(await ix.find_documents("doc-a"))
    ix = env.indexer(DyingStore(env.store, method, 1, before=before))
    await ix.open()
    with pytest.raises(Killed):
        if step == "trash":
            await ix.trash_documents(await ix.find_documents("doc-a"))
        elif step == "restore":
            await ix.restore_document((await ix.trash())[0])
        else:
            await ix.purge_documents(await ix.trash())
    await ix.close()
    place, record = await _placed(env)
    assert place == ends, (place, record)
