"""L2 plot memory: chapter versions ↔ chunks in the shared VectorStore, kept in step with SQLite.

Invariant: no search returns a chunk of a version that is not current, and a crash between any
two steps leaves the previously current version fully current (or, after the SQLite flip, the new
one current once `reconcile()` has run). The order of every change:

1. index the new version's chunks with `x_current=false` (invisible to searches);
2. one SQLite transaction flips the chapter's `current_version` (the truth);
3. `set_extra(x_current=true)` on the new version's chunks;
4. delete the chunks of every other version of that chapter.

Searches filter on `x_current=true` *and* drop any hit whose (chapter, version) SQLite does not
call current. `reconcile()` re-applies the SQLite truth to the store after a crash.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from novel.blueprint import Blueprint, default_blueprint, validate
from novel.repo import NovelRepo
from novel.splitter import SplitConfig, UnitSplitter, split_text
from retrieval.ports import Embedder, VectorStore
from retrieval.types import (
    Chunk,
    Filter,
    IndexedChunk,
    ScoredChunk,
    SparseVector,
    chunk_id,
    content_hash,
)

EncodeSparse = Callable[[str], SparseVector]


def namespace(chat_id: str) -> str:
    return f"novel:{chat_id}"


@dataclass(frozen=True, slots=True)
class PlotHit:
    chapter_no: int
    chapter_id: str
    version: int
    title: str
    text: str
    tags: tuple[str, ...]
    score: float


@dataclass(slots=True)
class ReconcileReport:
    removed: int = 0  # chunks of versions SQLite does not call current (or of deleted chapters)
    reindexed: int = 0  # current versions whose chunks were missing or incomplete
    activated: int = 0  # current versions whose chunks were still marked not current
    renumbered: int = 0
    chapters: list[str] = field(default_factory=list)


def chunk_tags(text: str, names: Mapping[str, str], summary: Mapping[str, Any]) -> list[str]:
    """Characters the chunk mentions (aliases → canonical names), then the summary's scenes and
    events that the chunk mentions."""
    tags: list[str] = []
    for alias in sorted(names, key=len, reverse=True):
        canon = names[alias]
        if alias and alias in text and canon not in tags:
            tags.append(canon)
    for key in ("scenes", "events"):
        for item in summary.get(key) or ():
            if isinstance(item, str) and item and item in text and item not in tags:
                tags.append(item)
    return tags


class PlotMemory:
    def __init__(
        self,
        repo: NovelRepo,
        store: VectorStore,
        embedder: Embedder,
        encode_sparse: EncodeSparse,
        *,
        encode_query_sparse: EncodeSparse | None = None,
        split: SplitConfig | None = None,
        units: UnitSplitter | None = None,
    ) -> None:
        self._repo = repo
        self._store = store
        self._embedder = embedder
        self._encode_sparse = encode_sparse
        self._encode_query_sparse = encode_query_sparse
        self._split = split or SplitConfig()
        self._units = units

    # ---- building blocks ---------------------------------------------------------------------

    def _flt(self, chat_id: str, **equals: Any) -> Filter:
        return Filter(equals={"namespace": namespace(chat_id), **equals})

    async def _names(self, chat_id: str) -> tuple[Blueprint, dict[str, str]]:
        raw = await self._repo.blueprint_json(chat_id)
        bp = validate(json.loads(raw)) if raw else default_blueprint()
        return bp, bp.name_index()

    def chunks_for(
        self,
        *,
        chat_id: str,
        chapter_id: str,
        chapter_no: int,
        version: int,
        title: str,
        text: str,
        summary: Mapping[str, Any],
        names: Mapping[str, str],
    ) -> list[Chunk]:
        ns = namespace(chat_id)
        now = datetime.now(UTC).isoformat()
        out: list[Chunk] = []
        for position, piece in enumerate(split_text(text, self._split, self._units)):
            digest = content_hash(piece)
            out.append(
                Chunk(
                    id=chunk_id(ns, f"{chapter_id}:v{version}", position, digest),
                    text=piece,
                    search_text=piece,
                    doc_id=chapter_id,
                    source=title,
                    type="novel",
                    chapter=title,  # the number lives in x_chapter_no (renumbering)
                    position=position,
                    namespace=ns,
                    content_hash=digest,
                    ingested_at=now,
                    extra={
                        "novel": chat_id,
                        "chapter_id": chapter_id,
                        "chapter_no": chapter_no,
                        "title": title,
                        "chunk_id": f"{chapter_id}:v{version}:{position}",
                        "tags": chunk_tags(piece, names, summary),
                        "version": version,
                        "current": False,
                    },
                )
            )
        return out

    async def index_version(
        self,
        *,
        chat_id: str,
        chapter_id: str,
        chapter_no: int,
        version: int,
        title: str,
        text: str,
        summary: Mapping[str, Any],
        names: Mapping[str, str] | None = None,
    ) -> int:
        """Step 1: embed and upsert a version's chunks, invisible (`x_current=false`)."""
        if names is None:
            _, names = await self._names(chat_id)
        chunks = self.chunks_for(
            chat_id=chat_id,
            chapter_id=chapter_id,
            chapter_no=chapter_no,
            version=version,
            title=title,
            text=text,
            summary=summary,
            names=names,
        )
        if not chunks:
            return 0
        dense = await self._embedder.embed_passages([c.search_text for c in chunks])
        sparse = await asyncio.to_thread(
            lambda: [self._encode_sparse(c.search_text) for c in chunks]
        )
        await self._store.upsert(
            [IndexedChunk(c, d, s) for c, d, s in zip(chunks, dense, sparse, strict=True)]
        )
        return len(chunks)

    async def activate(self, chat_id: str, chapter_id: str, version: int) -> None:
        """Steps 3 and 4, after SQLite made `version` current."""
        await self._store.set_extra(
            self._flt(chat_id, doc_id=chapter_id, x_version=version), {"current": True}
        )
        await self._store.delete(
            Filter(
                equals={"namespace": namespace(chat_id), "doc_id": chapter_id},
                not_equals={"x_version": version},
            )
        )

    # ---- versioned operations ----------------------------------------------------------------

    async def add_chapter(
        self,
        *,
        chat_id: str,
        chapter_id: str,
        title: str,
        text: str,
        summary: dict[str, Any],
        author: str,
        reason: str,
        now: datetime,
        round_id: str | None = None,
    ) -> tuple[int, int]:
        """A new last chapter (version 1); returns (chapter number, chunk count)."""
        expected = len(await self._repo.chapters(chat_id)) + 1
        count = await self.index_version(
            chat_id=chat_id,
            chapter_id=chapter_id,
            chapter_no=expected,
            version=1,
            title=title,
            text=text,
            summary=summary,
        )
        number = await self._repo.add_chapter(
            chat_id=chat_id,
            chapter_id=chapter_id,
            title=title,
            text=text,
            summary=summary,
            author=author,
            reason=reason,
            now=now,
            round_id=round_id,
        )
        if number != expected:
            await self._store.set_extra(
                self._flt(chat_id, doc_id=chapter_id), {"chapter_no": number}
            )
        await self.activate(chat_id, chapter_id, 1)
        return number, count

    async def add_version(
        self,
        *,
        chat_id: str,
        chapter_id: str,
        chapter_no: int,
        title: str,
        text: str,
        summary: dict[str, Any],
        author: str,
        reason: str,
        now: datetime,
    ) -> tuple[int, int]:
        """A new current version of an existing chapter; returns (version, chunk count)."""
        version = await self._repo.next_version(chapter_id)
        count = await self.index_version(
            chat_id=chat_id,
            chapter_id=chapter_id,
            chapter_no=chapter_no,
            version=version,
            title=title,
            text=text,
            summary=summary,
        )
        await self._repo.add_version(
            chapter_id=chapter_id,
            version=version,
            title=title,
            text=text,
            summary=summary,
            author=author,
            reason=reason,
            now=now,
        )
        await self.activate(chat_id, chapter_id, version)
        return version, count

    async def rollback(self, chat_id: str, chapter_id: str, chapter_no: int, version: int) -> int:
        row = await self._repo.version(chapter_id, version)
        if row is None:
            raise LookupError(version)
        count = await self.index_version(
            chat_id=chat_id,
            chapter_id=chapter_id,
            chapter_no=chapter_no,
            version=version,
            title=row.title,
            text=row.text,
            summary=row.summary,
        )
        await self._repo.set_current(chapter_id, version)
        await self.activate(chat_id, chapter_id, version)
        return count

    async def delete_chapter(self, chat_id: str, chapter_id: str) -> list[tuple[str, int]]:
        """SQLite first (the truth: searches stop returning it at once), then the store."""
        renumbered = await self._repo.delete_chapter(chat_id, chapter_id)
        await self._store.delete(self._flt(chat_id, doc_id=chapter_id))
        for other, number in renumbered:
            await self._store.set_extra(self._flt(chat_id, doc_id=other), {"chapter_no": number})
        return renumbered

    # ---- reading -----------------------------------------------------------------------------

    async def search(self, chat_id: str, query: str, limit: int = 6) -> list[PlotHit]:
        flt = self._flt(chat_id, x_current=True)
        fetch = max(limit * 3, 10)
        dense = await self._store.search_dense(
            await self._embedder.embed_query(query), flt=flt, limit=fetch
        )
        rankings: list[list[ScoredChunk]] = [dense]
        if self._encode_query_sparse is not None:
            sparse_q = self._encode_query_sparse(query)
            if sparse_q.indices:
                rankings.append(await self._store.search_sparse(sparse_q, flt=flt, limit=fetch))
        fused: dict[str, float] = {}
        chunks: dict[str, Chunk] = {}
        for ranking in rankings:
            for rank, sc in enumerate(ranking, start=1):
                fused[sc.chunk.id] = fused.get(sc.chunk.id, 0.0) + 1.0 / (60 + rank)
                chunks[sc.chunk.id] = sc.chunk
        truth = await self._repo.current_map(chat_id)
        hits: list[PlotHit] = []
        for cid in sorted(fused, key=lambda k: fused[k], reverse=True):
            c = chunks[cid]
            chapter_id = str(c.extra.get("chapter_id", c.doc_id))
            current = truth.get(chapter_id)
            # Double check against SQLite: a hit of a non-current version is never returned.
            if current is None or int(c.extra.get("version", -1)) != current[1]:
                continue
            if c.namespace != namespace(chat_id):
                continue
            hits.append(
                PlotHit(
                    chapter_no=current[0],
                    chapter_id=chapter_id,
                    version=current[1],
                    title=str(c.extra.get("title", "")),
                    text=c.text,
                    tags=tuple(c.extra.get("tags") or ()),
                    score=fused[cid],
                )
            )
            if len(hits) >= limit:
                break
        return hits

    # ---- recovery ----------------------------------------------------------------------------

    async def reconcile(self, chat_id: str) -> ReconcileReport:
        """Make the store agree with SQLite for one novel."""
        report = ReconcileReport()
        ns_flt = self._flt(chat_id)
        total = await self._store.count(ns_flt)
        stored = await self._store.scroll(ns_flt, limit=max(total, 1)) if total else []
        groups: dict[tuple[str, int], list[Chunk]] = {}
        for c in stored:
            key = (str(c.extra.get("chapter_id", c.doc_id)), int(c.extra.get("version", -1)))
            groups.setdefault(key, []).append(c)
        truth = await self._repo.current_map(chat_id)
        for (chapter_id, version), chunks in groups.items():
            current = truth.get(chapter_id)
            if current is None or current[1] != version:
                await self._store.delete(self._flt(chat_id, doc_id=chapter_id, x_version=version))
                report.removed += len(chunks)
        _, names = await self._names(chat_id)
        for chapter_id, (number, version) in truth.items():
            chunks = groups.get((chapter_id, version), [])
            row = await self._repo.version(chapter_id, version)
            if row is None:
                continue
            expected = len(split_text(row.text, self._split, self._units))
            if len(chunks) != expected:
                await self._store.delete(self._flt(chat_id, doc_id=chapter_id, x_version=version))
                await self.index_version(
                    chat_id=chat_id,
                    chapter_id=chapter_id,
                    chapter_no=number,
                    version=version,
                    title=row.title,
                    text=row.text,
                    summary=row.summary,
                    names=names,
                )
                await self.activate(chat_id, chapter_id, version)
                report.reindexed += 1
                report.chapters.append(chapter_id)
                continue
            if any(not c.extra.get("current") for c in chunks):
                await self.activate(chat_id, chapter_id, version)
                report.activated += 1
            if any(int(c.extra.get("chapter_no", -1)) != number for c in chunks):
                await self._store.set_extra(
                    self._flt(chat_id, doc_id=chapter_id), {"chapter_no": number}
                )
                report.renumbered += 1
        return report

    async def chunks_of(self, chat_id: str, chapter_id: str) -> Sequence[Chunk]:
        flt = self._flt(chat_id, doc_id=chapter_id)
        n = await self._store.count(flt)
        return await self._store.scroll(flt, limit=max(n, 1))
