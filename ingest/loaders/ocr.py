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

DEFAULT_LANGUAGES = "chi_sim+chi_tra+eng"
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
    """Tesseract's TSV (one row per word, grouped by block/paragraph/line) → lines."""
    words: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        words.setdefault(key, []).append(row)
    lines = []
    for group in words.values():
        text = ""
        for w in group:
            token = w["text"].strip()
            if text and not (is_cjk(text[-1]) and is_cjk(token[0])):
                text += " "
            text += token
        boxes = [(int(w["left"]), int(w["top"]), int(w["width"]), int(w["height"])) for w in group]
        heights = sorted(h for *_, h in boxes)
        lines.append(
            Line(
                text=text,
                x0=min(x for x, *_ in boxes) * scale,
                top=min(y for _, y, *_ in boxes) * scale,
                x1=max(x + w for x, _, w, _ in boxes) * scale,
                bottom=max(y + h for _, y, _, h in boxes) * scale,
                # A CJK glyph's ink is ~0.9 of the type size.
                size=heights[len(heights) // 2] * scale / 0.9,
                bold=False,
                page=page,
            )
        )
    return lines
