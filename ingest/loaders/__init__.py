"""Loaders: PDF · Word (.docx) · EPUB · TXT · Markdown → `Document`; Bible TSV → `BibleTable`.

`load_document` dispatches on the suffix after a look at the first bytes: a file whose bytes
say it is another known format (a PDF named .docx, a Word file named .pdf) is refused with a
message naming what it is, before any parser reads it."""

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
    ".docx": "docx",
    ".doc": "doc",
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


# What the bytes are → (name in messages, the suffix to use).
_CONTENT = {
    "pdf": ("PDF", ".pdf"),
    "docx": ("Word 文档（.docx）", ".docx"),
    "epub": ("EPUB", ".epub"),
    "ole": ("旧版 Office 文档（如 .doc）", ".doc"),
}
_ACCEPTS = {"pdf": {"pdf"}, "docx": {"docx", "ole"}, "doc": {"ole", "docx"}, "epub": {"epub"}}


def content_kind(path: Path) -> str | None:
    """ "pdf", "docx", "epub" or "ole" when the first bytes say so; None otherwise."""
    import zipfile

    from ingest.loaders.safety import sniff

    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    kind = sniff(head)
    if kind != "zip":
        return kind
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if "word/document.xml" in names:
        return "docx"
    if "META-INF/container.xml" in names:
        return "epub"
    return None


def _check_content(path: Path, kind: str | None) -> None:
    actual = content_kind(path)
    if actual is None or kind is None or actual in _ACCEPTS.get(kind, set()):
        return
    name, suffix = _CONTENT[actual]
    en_name = {"docx": "Word document", "ole": "old Office document (.doc)"}.get(actual, name)
    raise LoadError(
        f"文件内容是 {name}，与扩展名 {path.suffix} 不符；请把扩展名改为 {suffix} 再导入",
        f"the file is a {en_name}, not {path.suffix}: rename it to {suffix} and ingest it again",
    )


def load_document(
    path: Path, max_bytes: int = DEFAULT_MAX_BYTES, options: LoadOptions | None = None
) -> Document:
    """Dispatch on the suffix. Synchronous and CPU-bound: call via `asyncio.to_thread`."""
    kind = SUFFIXES.get(path.suffix.lower())
    check_size(path, max_bytes)
    _check_content(path, kind)
    if kind == "pdf":
        from ingest.loaders.pdf import load_pdf

        return load_pdf(path, max_bytes, options)
    if kind == "docx":
        from ingest.loaders.docx import load_docx

        return load_docx(path, max_bytes)
    if kind == "doc":
        from ingest.loaders.docx import load_doc

        return load_doc(path, max_bytes)
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
