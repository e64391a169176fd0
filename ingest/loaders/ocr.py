"""OCR of page images with the `tesseract` command (apt: tesseract-ocr, tesseract-ocr-chi-sim,
tesseract-ocr-chi-tra), its TSV output read back as positioned lines for `ingest.layout`.

The command runs once per page with a time limit; its absence, missing language data or a
failure is a `LoadError` that says what to install.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.clean import is_cjk
from ingest.layout import Line, Page
from ingest.loaders.base import LoadError

# Measured on a 300-dpi page of Simplified text (bench/results/pdf-layout.md): chi_sim alone
# reads 94 % of the characters in 12 s; adding eng or chi_tra makes it 2–4× slower and no better.
DEFAULT_LANGUAGES = "chi_sim"
OCR_DPI = 300
PAGE_TIMEOUT_S = 300

_INSTALL = "apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra"


@dataclass(frozen=True, slots=True)
class OcrSettings:
    languages: str = DEFAULT_LANGUAGES
    dpi: int = OCR_DPI


def tesseract_path() -> str | None:
    return shutil.which("tesseract")


def available_languages(binary: str) -> set[str]:
    try:
        done = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {ln.strip() for ln in done.stdout.splitlines()[1:] if ln.strip()}


def check_tesseract(languages: str) -> str:
    """The tesseract binary, when it and every language asked for are installed."""
    binary = tesseract_path()
    if binary is None:
        raise LoadError(
            f"未安装 OCR 程序 tesseract（{_INSTALL}）",
            f"OCR needs tesseract: {_INSTALL}",
        )
    missing = sorted(set(languages.split("+")) - available_languages(binary))
    if missing:
        names = ", ".join(missing)
        raise LoadError(
            f"tesseract 缺少语言数据：{names}（{_INSTALL}）",
            f"tesseract lacks language data: {names} ({_INSTALL})",
        )
    return binary


def ocr_page(image: Any, number: int, settings: OcrSettings, binary: str) -> Page:
    """A PIL image of page `number` → its lines (points, top-left origin)."""
    scale = 72 / settings.dpi
    with tempfile.TemporaryDirectory(prefix="baibao-ocr-") as tmp:
        png = Path(tmp) / "page.png"
        image.save(png)
        try:
            done = subprocess.run(
                [binary, str(png), "stdout", "-l", settings.languages, "--psm", "3", "tsv"],
                capture_output=True,
                text=True,
                timeout=PAGE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise LoadError(f"第 {number} 页 OCR 超时", f"OCR of page {number} timed out") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["?"])[-1][:200]
        raise LoadError(
            f"第 {number} 页 OCR 失败：{reason}", f"OCR of page {number} failed: {reason}"
        )
    width, height = image.size
    return Page(number, width * scale, height * scale, lines_from_tsv(done.stdout, number, scale))


def lines_from_tsv(tsv: str, page: int, scale: float) -> list[Line]:
    """Tesseract's TSV (one row per word, grouped by block/paragraph/line) → lines; a line
    is cut where two words stand further apart than 2.5 line heights (a header's two ends)."""
    words: dict[tuple[str, str, str], list[_Word]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        box = (int(row["left"]), int(row["top"]), int(row["width"]), int(row["height"]))
        words.setdefault(key, []).append(_Word(text, *box))
    lines = []
    for group in words.values():
        height = sorted(w.height for w in group)[len(group) // 2]
        segment: list[_Word] = []
        for word in group:
            if segment and word.left - segment[-1].right > 2.5 * height:
                lines.append(_line(segment, page, scale))
                segment = []
            segment.append(word)
        lines.append(_line(segment, page, scale))
    return lines


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    left: int
    top: int
    width: int
    height: int

    @property
    def right(self) -> int:
        return self.left + self.width


def _line(words: list[_Word], page: int, scale: float) -> Line:
    text = ""
    for w in words:
        if text and not (is_cjk(text[-1]) and is_cjk(w.text[0])):
            text += " "
        text += w.text
    heights = sorted(w.height for w in words)
    return Line(
        text=text,
        x0=min(w.left for w in words) * scale,
        top=min(w.top for w in words) * scale,
        x1=max(w.right for w in words) * scale,
        bottom=max(w.top + w.height for w in words) * scale,
        size=heights[len(heights) // 2] * scale / 0.9,  # CJK ink is ~0.9 of the type size
        bold=False,
        page=page,
    )
