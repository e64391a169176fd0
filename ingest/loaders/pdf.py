"""PDF → Document from the page layout: headings by size and weight, paragraphs joined across
line and page breaks, running headers and footers dropped, columns read in order
(`ingest.layout`), characters read by PDFium (`ingest.loaders.pdf_pdfium`).

A page with no text layer (a scan) is never skipped quietly: without OCR the file is refused
with a message naming those pages; with `LoadOptions.ocr` they are read by tesseract
(`ingest.loaders.ocr`) and go through the same layout analysis.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from ingest.layout import Page, blocks_from_pages
from ingest.loaders import ocr
from ingest.loaders.base import Document, LoadError, LoadOptions, guess_language, read_bytes
from ingest.loaders.pdf_pdfium import Encrypted, PdfFile, Unreadable
from ingest.loaders.safety import check_pdf_streams
from ingest.titleblock import TitleBlock

_REPLACEMENT = re.compile(r"[\ufffd]|\(cid:\d+\)")
# A page is a scan when it draws (almost) no characters and images cover much of it.
_SCAN_MAX_CHARS = 10
_SCAN_MIN_COVER = 0.3


def page_ranges(numbers: Sequence[int]) -> str:
    """[1, 2, 3, 5] → "1–3, 5"."""
    out: list[str] = []
    run: list[int] = []
    for n in sorted(numbers):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [n]
    if run:
        out.append(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


_SHELL_SPECIAL = re.compile(r"[\s'\"$`\\!*?&;|<>(){}\[\]#~]")


def ocr_command(name: str) -> str:
    """The command that reads the file `name` with OCR, as a shell takes it."""
    return f"baibao ingest --ocr {shlex.quote(name) if _SHELL_SPECIAL.search(name) else name}"


def scanned_error(scanned: Sequence[int], total: int, name: str) -> LoadError:
    pages = page_ranges(scanned)
    command = ocr_command(name)
    if len(scanned) == total:
        return LoadError(
            f"PDF 是扫描件：第 {pages} 页没有文字层，无法提取文字。可用 `{command}` 识别"
            "（需要安装 tesseract），或先用 OCR 软件转成带文字层的 PDF",
            f"scanned PDF: page {pages} has no text layer. Read it with `{command}` "
            "(needs tesseract), or make a searchable PDF with an OCR tool first",
        )
    return LoadError(
        f"PDF 共 {total} 页，其中第 {pages} 页是扫描图像，没有文字层；为免只导入一部分，整个文件未导入。"
        f"可用 `{command}` 识别这些页（需要安装 tesseract）",
        f"page {pages} of {total} is a scanned image with no text layer; the file was not "
        f"ingested rather than ingested in part. Read those pages with `{command}` "
        "(needs tesseract)",
    )


def _pages(data: bytes, options: LoadOptions, name: str) -> tuple[list[Page], str]:
    try:
        pdf = PdfFile(data)
    except Encrypted:
        raise LoadError("PDF 已加密（需要密码）", "encrypted PDF (password required)") from None
    except Unreadable as err:
        raise LoadError(
            "PDF 已损坏或被截断，无法解析", f"damaged or truncated PDF: {err}"
        ) from None
    with pdf:
        try:
            texts = list(pdf.pages())
        except Unreadable as err:
            raise LoadError("PDF 已损坏，无法解析", f"damaged PDF: {err}") from None
        scanned = [
            t.page.number
            for t in texts
            if t.chars <= _SCAN_MAX_CHARS and t.image_cover >= _SCAN_MIN_COVER
        ]
        pages = [t.page for t in texts]
        if scanned:
            if options.ocr is None:
                raise scanned_error(scanned, len(texts), name)
            pages = _with_ocr(pdf, pages, scanned, options.ocr)
        return pages, pdf.title


def _with_ocr(
    pdf: PdfFile, pages: list[Page], scanned: Sequence[int], languages: str
) -> list[Page]:
    binary = ocr.check_tesseract(languages)
    settings = ocr.OcrSettings(languages)
    out = list(pages)
    for number in scanned:
        image = pdf.render_grey(number - 1, settings.dpi)
        out[number - 1] = ocr.ocr_page(image, number, settings, binary)
    return out


def load_pdf(path: Path, max_bytes: int, options: LoadOptions | None = None) -> Document:
    data = read_bytes(path, max_bytes)
    if b"%PDF-" not in data[:1024]:
        raise LoadError("不是 PDF 文件（文件头不符）", "not a PDF (no %PDF- header)")
    check_pdf_streams(data)
    pages, title = _pages(data, options or LoadOptions(), path.name)
    if not any(p.lines for p in pages):
        raise LoadError(
            "PDF 没有可提取的文字（可能是扫描件或空文件）",
            "no text layer (scanned or empty PDF)",
        )
    layout = blocks_from_pages(pages)
    text = "\n".join(b.text for b in layout.blocks)
    if not text.strip():
        raise LoadError("PDF 没有可提取的文字", "no text after cleanup")
    bad = len(_REPLACEMENT.findall(text))
    if bad > max(20, len(text) // 20):
        raise LoadError("PDF 文字层无法解码（字体缺少映射）", "text layer not decodable")
    byline = layout.byline
    hints = {"columns": str(layout.columns)}
    hints.update((key, value) for key, value in _byline_hints(byline) if value)
    return Document(
        path=path,
        format="pdf",
        blocks=layout.blocks,
        title=title or layout.title,
        author=byline.author,
        language=guess_language(text),
        hints=hints,
        notes=layout.notes,
    )


def _byline_hints(byline: TitleBlock) -> list[tuple[str, str]]:
    return [("subtitle", byline.subtitle), ("date", byline.date)]
