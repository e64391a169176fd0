"""PDFium (pypdfium2) adapter: the one module that imports it.

It opens a PDF, reads every character with its box, baseline, size and weight (as
`ingest.layout.Glyph`s), tells how much of a page is covered by images (a scan), and renders a
page to a greyscale image for OCR.

Why PDFium (measured in bench/results/pdf-layout.md): on the producers' PDFs here it reads the
same characters as pdfminer.six, 2.5–10× faster; on Traditional text with a predefined CMap
(MSung-Light, UniCNS-UCS2-H) pdfminer.six returns wrong characters and PDFium the right ones;
and it renders pages, so OCR needs no other tool than tesseract.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as raw

from ingest.layout import Glyph, Page, lines_from_glyphs

# Font names that mean a heavier face (Chinese books set headings in 黑体 / Hei).
_HEAVY = re.compile(r"bold|black|heavy|semibold|demi|hei|[-_,]w[6-9]\b", re.IGNORECASE)
_FORCE_BOLD = 1 << 18
_FILL_STROKE = 2  # text render mode: synthetic bold


class Encrypted(Exception):
    """A password is needed to open the file."""


class Unreadable(Exception):
    """PDFium cannot parse the file."""


@dataclass(frozen=True, slots=True)
class PageText:
    page: Page
    chars: int  # characters drawn (spaces and generated line breaks aside)
    image_cover: float  # share of the page area under images (0–1)


class PdfFile:
    """An open PDF (close it, or use it as a context manager)."""

    def __init__(self, data: bytes) -> None:
        try:
            self._pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as err:
            if "password" in str(err).lower():
                raise Encrypted from None
            raise Unreadable(str(err)) from None

    def __enter__(self) -> PdfFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pdf.close()

    def __len__(self) -> int:
        return len(self._pdf)

    @property
    def title(self) -> str:
        try:
            return str(self._pdf.get_metadata_dict().get("Title", "")).strip()
        except Exception:  # a broken info dictionary is no reason to skip the text
            return ""

    def pages(self) -> Iterator[PageText]:
        for index in range(len(self._pdf)):
            yield self.page_text(index)

    def page_text(self, index: int) -> PageText:
        try:
            page = self._pdf[index]
        except pdfium.PdfiumError as err:
            raise Unreadable(f"page {index + 1}: {err}") from None
        try:
            width, height = page.get_size()
            textpage = page.get_textpage()
            glyphs = list(_glyphs(textpage, height))
            lines = lines_from_glyphs(glyphs, index + 1)
            cover = _image_cover(page, width * height)
        finally:
            page.close()
        return PageText(Page(index + 1, width, height, lines), len(glyphs), cover)

    def render_grey(self, index: int, dpi: int) -> Any:
        """The page as a greyscale PIL image at `dpi`."""
        page = self._pdf[index]
        try:
            return page.render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
        finally:
            page.close()


def _glyphs(textpage: Any, height: float) -> Iterator[Glyph]:
    info = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    matrix = raw.FS_MATRIX()
    ox, oy = ctypes.c_double(), ctypes.c_double()
    fonts: dict[tuple[bytes, int, int], bool] = {}
    for i in range(textpage.count_chars()):
        code = raw.FPDFText_GetUnicode(textpage, i)
        ch = chr(code) if 0 < code < 0x110000 else ""
        generated = bool(raw.FPDFText_IsGenerated(textpage, i))
        if ch.isspace() or not ch:
            if ch in " \u3000":
                yield Glyph(ch, 0, 0, 0, 0, 0, 0, generated=generated)
            continue
        if generated:
            continue
        left, bottom, right, top = textpage.get_charbox(i, loose=True)
        raw.FPDFText_GetMatrix(textpage, i, matrix)
        scale = math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c)) or 1.0
        size = raw.FPDFText_GetFontSize(textpage, i) * scale
        raw.FPDFText_GetCharOrigin(textpage, i, ox, oy)
        raw.FPDFText_GetFontInfo(textpage, i, info, len(info), ctypes.byref(flags))
        weight = raw.FPDFText_GetFontWeight(textpage, i)
        key = (info.value, flags.value, weight)
        bold = fonts.get(key)
        if bold is None:
            name = info.value.decode("latin-1", "replace")
            bold = bool(_HEAVY.search(name)) or bool(flags.value & _FORCE_BOLD) or weight >= 600
            fonts[key] = bold
        if not bold:
            obj = raw.FPDFText_GetTextObject(textpage, i)
            bold = bool(obj) and raw.FPDFTextObj_GetTextRenderMode(obj) == _FILL_STROKE
        yield Glyph(
            ch,
            left,
            height - top,
            right,
            height - bottom,
            height - oy.value,
            size,
            bold,
            bool(raw.FPDFText_IsHyphen(textpage, i)),
        )


def _image_cover(page: Any, area: float) -> float:
    if area <= 0:
        return 0.0
    covered = 0.0
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE]):
        left, bottom, right, top = obj.get_bounds()
        covered += max(0.0, right - left) * max(0.0, top - bottom)
    return min(1.0, covered / area)
