"""PDF → Document with pypdf (text layer only; no OCR).

Extractor choice, measured on generated Chinese PDFs (see bench/results/ingest.md): pypdf
decodes the predefined CJK CMaps (UniGB-UCS2-H, UniCNS-UCS2-H) and ToUnicode fonts correctly;
pdfminer.six turned a Traditional (Adobe-CNS1) PDF into wrong characters and is several times
slower. Both split per-glyph-positioned text into single characters or spaced runs; the
layout cleanup (`ingest.clean`) joins those back. pdfminer.six stays as a fallback when pypdf
cannot parse a file at all.
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.clean import join_broken_lines, strip_running_lines
from ingest.loaders.base import Block, Document, LoadError, guess_language, read_bytes

if TYPE_CHECKING:
    import pypdf

_REPLACEMENT = re.compile(r"[\ufffd]|\(cid:\d+\)")
log = logging.getLogger(__name__)


def _pages_pypdf(data: bytes) -> tuple[list[str], str]:
    """The text of every page, and the document's /Title ("" when none)."""
    import pypdf
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            # An owner-password-only PDF opens with the empty user password.
            try:
                ok = bool(reader.decrypt(""))
            except Exception:
                ok = False
            if not ok:
                raise LoadError("PDF 已加密（需要密码）", "encrypted PDF (password required)")
        pages = [page.extract_text() or "" for page in reader.pages]
        return pages, _metadata_title(reader)
    except LoadError:
        raise
    except FileNotDecryptedError:
        raise LoadError("PDF 已加密（需要密码）", "encrypted PDF (password required)") from None
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
        raise _Unreadable(str(err)) from None
    except Exception as err:
        raise _Unreadable(f"{type(err).__name__}: {err}") from None


def _metadata_title(reader: pypdf.PdfReader) -> str:
    try:
        info = reader.metadata
        title = info.title if info is not None else None
    except Exception:  # a broken info dictionary is no reason to skip the text
        return ""
    return str(title).strip() if title else ""


class _Unreadable(Exception):
    pass


def _pages_pdfminer(data: bytes) -> list[str]:
    from pdfminer.high_level import extract_text

    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    try:
        text = extract_text(io.BytesIO(data))
    except Exception as err:
        raise _Unreadable(f"{type(err).__name__}: {err}") from None
    return text.split("\f")


def load_pdf(path: Path, max_bytes: int) -> Document:
    data = read_bytes(path, max_bytes)
    if b"%PDF-" not in data[:1024]:
        raise LoadError("不是 PDF 文件（文件头不符）", "not a PDF (no %PDF- header)")
    title = ""
    try:
        pages, title = _pages_pypdf(data)
    except _Unreadable as err:
        log.debug("pypdf failed on %s: %s; trying pdfminer", path, err)
        try:
            pages = _pages_pdfminer(data)
        except _Unreadable:
            raise LoadError(
                "PDF 已损坏或被截断，无法解析", f"damaged or truncated PDF: {err}"
            ) from None
    if not any(p.strip() for p in pages):
        raise LoadError(
            "PDF 没有可提取的文字（可能是扫描件或空文件）",
            "no text layer (scanned or empty PDF)",
        )
    lines_per_page = [p.splitlines() for p in pages]
    cleaned = strip_running_lines(lines_per_page)
    all_lines: list[str] = []
    for page_lines in cleaned:
        all_lines.extend(page_lines)
    paragraphs = join_broken_lines(all_lines)
    text = "\n".join(paragraphs)
    if not text.strip():
        raise LoadError("PDF 没有可提取的文字", "no text after cleanup")
    bad = len(_REPLACEMENT.findall(text))
    if bad > max(20, len(text) // 20):
        raise LoadError("PDF 文字层无法解码（字体缺少映射）", "text layer not decodable")
    return Document(
        path=path,
        format="pdf",
        blocks=[Block(p) for p in paragraphs],
        title=title,
        language=guess_language(text),
    )
