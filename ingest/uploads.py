"""Corpus management from a chat: one uploaded file through the same pipeline as
`baibao ingest`, inside the bot process (the one process that owns the data directory), to
the shared library or to a shelf (`retrieval.library`); deletes to the trash, restores from
it, and the trash purged once its documents are older than the retention period.

The file is written to a private folder under `work_dir` for the loaders (they dispatch on the
suffix and read from disk) and removed afterwards, whatever happens. The pipeline's own
guarantees hold: an unreadable file is skipped before anything is indexed, and an indexing
failure midway is reconciled away, so a refused upload leaves nothing behind. A shelf holds at
most `ShelfQuota`'s documents and chunks: a file that would pass either is refused before
anything of it is embedded.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ingest.loaders.base import DEFAULT_MAX_BYTES, LoadError
from ingest.manifest import DocMeta, Manifest
from ingest.pipeline import IngestSummary, OnProgress, Pipeline
from retrieval.index import DocumentRecord, Indexer
from retrieval.library import SHARED, is_shelf


class IngestBusy(Exception):
    """Another upload is being ingested (one at a time: embedding takes the CPU)."""


class ShelfFull(LoadError):
    """A document that would take its shelf past the quota: refused before it is embedded."""


@dataclass(frozen=True, slots=True)
class ShelfQuota:
    """The most a shelf holds (0 = no limit): documents, and chunks in all."""

    documents: int = 0
    chunks: int = 0


@dataclass(frozen=True, slots=True)
class UploadResult:
    summary: IngestSummary
    record: DocumentRecord | None  # as registered; None when the file was refused


def safe_filename(name: str) -> str:
    """The user's file name without folders, control characters or a leading dot; the
    suffix (which picks the loader) kept and lower-cased."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    stem, dot, ext = name.rpartition(".")
    if not dot or not ext.isalnum():
        stem, ext = name, ""
    stem = re.sub(r"\s+", " ", stem).strip(" .")[:100] or "upload"
    return stem + ("." + ext.lower() if ext else "")


class CorpusUploads:
    def __init__(
        self,
        indexer: Indexer,
        work_dir: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        quota: ShelfQuota | None = None,
    ) -> None:
        self.indexer = indexer
        self.work_dir = Path(work_dir)
        self.max_bytes = max_bytes
        self.quota = quota or ShelfQuota()
        self._lock = asyncio.Lock()
        # Left over by a process that was killed mid-upload: never part of the corpus.
        shutil.rmtree(self.work_dir, ignore_errors=True)

    async def add(
        self,
        filename: str,
        data: bytes,
        meta: DocMeta | None = None,
        on_progress: OnProgress | None = None,
        *,
        namespace: str = SHARED,
    ) -> UploadResult:
        """The file into `namespace` (the shared library, or a shelf within its quota)."""
        if self._lock.locked():
            raise IngestBusy
        async with self._lock:
            folder = self.work_dir / uuid.uuid4().hex
            path = folder / safe_filename(filename)
            admit = self._within_quota if is_shelf(namespace) else None
            try:
                folder.mkdir(parents=True)
                await asyncio.to_thread(path.write_bytes, data)
                pipeline = Pipeline(
                    self.indexer, max_bytes=self.max_bytes, namespace=namespace, admit=admit
                )
                summary = await pipeline.ingest_paths(
                    [path], manifest=Manifest({}, meta or DocMeta()), on_progress=on_progress
                )
            finally:
                await asyncio.to_thread(shutil.rmtree, folder, True)
        record = None
        if summary.results:
            record = await self.indexer.document(summary.results[0][1])
        return UploadResult(summary, record)

    async def _within_quota(self, record: DocumentRecord, chunks: int) -> None:
        """Refuse a document that would take its shelf past the quota (a new version of a
        document replaces the old one's share)."""
        quota = self.quota
        others = [
            d for d in await self.indexer.documents([record.namespace]) if d.doc_id != record.doc_id
        ]
        if quota.documents and len(others) + 1 > quota.documents:
            raise ShelfFull(
                f"本群书架已满（最多 {quota.documents} 份文档）；请先删除一些",
                f"this chat's shelf is full (at most {quota.documents} documents); "
                "delete some first",
            )
        held = sum(d.chunk_count for d in others)
        if quota.chunks and held + chunks > quota.chunks:
            raise ShelfFull(
                f"本群书架容量不足：这份文档有 {chunks} 块，书架还能放 "
                f"{max(0, quota.chunks - held)} 块（上限 {quota.chunks}）",
                f"not enough room on this chat's shelf: the document has {chunks} chunks, "
                f"the shelf takes {max(0, quota.chunks - held)} more (limit {quota.chunks})",
            )

    async def find(
        self, key: str, namespaces: Sequence[str], *, trashed: bool = False
    ) -> DocumentRecord | None:
        """The document `key` names (title, id, file name) in the first of `namespaces` that
        holds one, live (or in the trash, `trashed`)."""
        for namespace in namespaces:
            found = await self.indexer.find_documents(key, [namespace], trashed=trashed)
            if found:
                return found[0]
        return None

    async def delete(self, record: DocumentRecord, *, by: str = "") -> DocumentRecord | None:
        """To the trash (restorable until it is purged); None when it is no longer live."""
        moved = await self.indexer.trash_documents([record], by=by)
        return moved[0] if moved else None

    async def restore(self, record: DocumentRecord) -> DocumentRecord | None:
        """Back from the trash, as it was (nothing embedded again)."""
        return await self.indexer.restore_document(record)

    async def documents(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]:
        return await self.indexer.documents(namespaces)

    async def trash(self, namespaces: Sequence[str] | None = None) -> list[DocumentRecord]:
        return await self.indexer.trash(namespaces)

    async def purge_expired(self, before: str) -> list[DocumentRecord]:
        """Purge every document trashed before `before` (ISO time): the one irreversible
        step; returns what went."""
        return await self.indexer.purge_documents(await self.indexer.expired(before))
