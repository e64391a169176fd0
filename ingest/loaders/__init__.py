"""Loaders: PDF · EPUB · TXT · Markdown → `Document`; Bible TSV → `BibleTable`."""

from __future__ import annotations

from pathlib import Path

from ingest.loaders.base import (
    DEFAULT_MAX_BYTES,
    Block,
    Document,
    LoadError,
    LoadOptions,
    check_size,
)
from ingest.loaders.bible import BibleTable, Verse, is_bible_table, load_bible

SUFFIXES = {
    ".pdf": "pdf",
    ".epub": "epub",
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
}

__all__ = [
    "DEFAULT_MAX_BYTES",
    "SUFFIXES",
    "BibleTable",
    "Block",
    "Document",
    "LoadError",
    "LoadOptions",
    "Verse",
    "check_size",
    "is_bible_table",
    "is_supported",
    "load_bible",
    "load_document",
]


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in SUFFIXES or is_bible_table(path)


def load_document(
    path: Path, max_bytes: int = DEFAULT_MAX_BYTES, options: LoadOptions | None = None
) -> Document:
    """Dispatch on the suffix. Synchronous and CPU-bound: call via `asyncio.to_thread`."""
    kind = SUFFIXES.get(path.suffix.lower())
    check_size(path, max_bytes)
    if kind == "pdf":
        from ingest.loaders.pdf import load_pdf

        return load_pdf(path, max_bytes, options)
    if kind == "epub":
        from ingest.loaders.epub import load_epub

        return load_epub(path, max_bytes)
    if kind == "md":
        from ingest.loaders.md import load_md

        return load_md(path, max_bytes)
    if kind == "txt":
        from ingest.loaders.txt import load_txt

        return load_txt(path, max_bytes)
    raise LoadError(
        f"不支持的文件类型：{path.suffix or '无扩展名'}", f"unsupported file type {path.suffix!r}"
    )
