"""Corpus management from a chat: one uploaded file through the same pipeline as
`baibao ingest`, inside the bot process (the one process that owns the data directory).

The file is written to a private folder under `work_dir` for the loaders (they dispatch on the
suffix and read from disk) and removed afterwards, whatever happens. The pipeline's own
guarantees hold: an unreadable file is skipped before anything is indexed, and an indexing
failure midway is reconciled away, so a refused upload leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path

from ingest.loaders.base import DEFAULT_MAX_BYTES
from ingest.manifest import DocMeta, Manifest
from ingest.pipeline import IngestSummary, OnProgress, Pipeline
from retrieval.index import DocumentRecord, Indexer


class IngestBusy(Exception):
    """Another upload is being ingested (one at a time: embedding takes the CPU)."""


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
        self, indexer: Indexer, work_dir: Path, *, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.indexer = indexer
        self.work_dir = Path(work_dir)
        self.max_bytes = max_bytes
        self._lock = asyncio.Lock()
        # Left over by a process that was killed mid-upload: never part of the corpus.
        shutil.rmtree(self.work_dir, ignore_errors=True)

    async def add(
        self,
        filename: str,
        data: bytes,
        meta: DocMeta | None = None,
        on_progress: OnProgress | None = None,
    ) -> UploadResult:
        if self._lock.locked():
            raise IngestBusy
        async with self._lock:
            folder = self.work_dir / uuid.uuid4().hex
            path = folder / safe_filename(filename)
            try:
                folder.mkdir(parents=True)
                await asyncio.to_thread(path.write_bytes, data)
                pipeline = Pipeline(self.indexer, max_bytes=self.max_bytes)
                summary = await pipeline.ingest_paths(
                    [path], manifest=Manifest({}, meta or DocMeta()), on_progress=on_progress
                )
            finally:
                await asyncio.to_thread(shutil.rmtree, folder, True)
        record = None
        if summary.results:
            record = await self.indexer.document(summary.results[0][1])
        return UploadResult(summary, record)

    async def delete(self, source: str) -> DocumentRecord | None:
        """By title or document id: everything the document contributed goes."""
        return await self.indexer.delete_document(source)

    async def documents(self) -> list[DocumentRecord]:
        return await self.indexer.documents()
