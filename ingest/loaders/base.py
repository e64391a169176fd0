"""What every loader returns: a `Document` of text blocks with structure hints.

Loaders are synchronous and CPU-bound (the pipeline runs them in `asyncio.to_thread`); a file
that cannot be read raises `LoadError` with a short bilingual reason for the skip report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ingest.errors import BilingualError
from kernel.i18n import Lang, detect_language

BlockKind = Literal["heading", "para", "quote", "point"]

DEFAULT_MAX_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class LoadOptions:
    """How files are read. `ocr`: tesseract languages (e.g. "chi_sim+chi_tra+eng") to read
    pages that have no text layer; None refuses such pages with a message naming them."""

    ocr: str | None = None


class LoadError(BilingualError):
    """A file is skipped: `zh` / `en` say why (one line, no traceback)."""

    def __init__(self, zh: str, en: str) -> None:
        super().__init__(zh, en)


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of text: a heading (with `level`, 1 = chapter), a paragraph, a quotation, or
    an outline point whose level the file states (`level`, 1 = top; Word list numbering),
    its text starting with its number as shown.

    Paragraph text keeps its internal newlines when line structure matters (outlines).
    """

    text: str
    kind: BlockKind = "para"
    level: int = 0


@dataclass(frozen=True, slots=True)
class Note:
    """A footnote: its number in the document, its text, the block that cites it and the
    sentence its mark follows."""

    number: int
    text: str
    anchor: int  # index into Document.blocks
    quote: str = ""


@dataclass(slots=True)
class Document:
    path: Path
    format: str  # pdf | docx | epub | txt | md
    blocks: list[Block]
    title: str = ""  # from the file itself (first heading, EPUB metadata); "" = unknown
    author: str = ""
    language: Lang = "zh"
    hints: dict[str, str] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    def plain_text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks)


def guess_language(text: str) -> Lang:
    """zh when CJK makes up a real share of the letters, else en (first 20k characters)."""
    sample = text[:20000]
    cjk = sum(1 for c in sample if "\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff")
    latin = sum(1 for c in sample if c.isascii() and c.isalpha())
    if cjk == 0:
        return detect_language(sample, default="en") if latin else "zh"
    # A Latin word is ~5 letters; a CJK character is about one word.
    return "zh" if cjk * 5 >= latin * 0.5 else "en"


def check_size(path: Path, max_bytes: int) -> int:
    """Stat only: an oversize file is refused without being read."""
    try:
        size = path.stat().st_size
    except OSError as err:
        raise LoadError("无法读取文件", f"cannot stat file: {err.strerror or err}") from None
    if size > max_bytes:
        raise LoadError(
            f"文件过大（{size / 1048576:.1f} MB，上限 {max_bytes / 1048576:.0f} MB）",
            f"file too large: {size} bytes > limit {max_bytes}",
        )
    if size == 0:
        raise LoadError("空文件", "empty file")
    return size


def read_bytes(path: Path, max_bytes: int) -> bytes:
    check_size(path, max_bytes)
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as err:
        raise LoadError("无法读取文件", f"cannot read file: {err.strerror or err}") from None
    if len(data) > max_bytes:  # grew while we looked
        raise LoadError("文件过大", "file too large")
    return data
