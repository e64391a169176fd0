"""OCR of page images with the `tesseract` command (apt: tesseract-ocr, tesseract-ocr-chi-sim,
tesseract-ocr-chi-tra), its TSV output read back as positioned lines for `ingest.layout`.

The command runs once per page with a time limit; its absence, missing language data or a
failure is a `LoadError` that says what to install.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ingest.clean import is_cjk
from ingest.loaders.base import LoadError
from ingest.page import SURE, Line, Page

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


def _tesseract(image: Any, number: int, settings: OcrSettings, binary: str, psm: str) -> str:
    """Tesseract's TSV for a PIL image."""
    with tempfile.TemporaryDirectory(prefix="baibao-ocr-") as tmp:
        png = Path(tmp) / "page.png"
        image.save(png)
        try:
            done = subprocess.run(
                [binary, str(png), "stdout", "-l", settings.languages, "--psm", psm, "tsv"],
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
    return done.stdout


def ocr_page(image: Any, number: int, settings: OcrSettings, binary: str) -> Page:
    """A PIL image of page `number` → its lines (points, top-left origin). A line set large
    that tesseract read unsure gets a second look (`_second_look`)."""
    scale = 72 / settings.dpi
    lines = lines_from_tsv(_tesseract(image, number, settings, binary, "3"), number, scale)
    if lines:
        usual = statistics.median(ln.size for ln in lines)
        lines = [
            _second_look(ln, image, usual, settings, binary)
            if ln.size >= 1.25 * usual and ln.confidence < SURE
            else ln
            for ln in lines
        ]
    width, height = image.size
    return Page(number, width * scale, height * scale, lines)


# Tesseract reads CJK best at body-text sizes: at 300 dpi a heading's glyphs are 60–90 px
# tall and it misreads them (`第一童 ” 约倒被卖`, 61 % sure); the same line scaled to the
# body's size, or to half, reads right (`第一章 约瑟被卖`, 74 %).
_RESCALE = (0.5,)


def _second_look(line: Line, image: Any, usual: float, settings: OcrSettings, binary: str) -> Line:
    """`line` read again alone (one text line, `--psm 7`) from its box scaled to the body's
    type size and to half: the surest reading, when it is surer than the first."""
    pixels = settings.dpi / 72
    pad = 0.25 * line.size * pixels
    box = (
        max(0, int(line.x0 * pixels - pad)),
        max(0, int(line.top * pixels - pad)),
        min(image.size[0], int(line.x1 * pixels + pad)),
        min(image.size[1], int(line.bottom * pixels + pad)),
    )
    crop = image.crop(box)
    best = line
    for factor in (usual / line.size, *_RESCALE):
        size = (int(crop.size[0] * factor), int(crop.size[1] * factor))
        if min(size) < 8:
            continue
        try:
            tsv = _tesseract(crop.resize(size), line.page, settings, binary, "7")
        except LoadError:
            continue  # the first reading stands
        again = lines_from_tsv(tsv, line.page, 1.0)
        if len(again) == 1 and again[0].confidence > best.confidence:
            best = replace(line, text=again[0].text, confidence=again[0].confidence)
    return best


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
        words.setdefault(key, []).append(_Word(text, *box, _confidence(row.get("conf"))))
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


def _confidence(value: str | None) -> float:
    try:
        return max(0.0, float(value or 0))
    except ValueError:
        return 0.0


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    left: int
    top: int
    width: int
    height: int
    confidence: float = 100.0  # tesseract's, 0–100

    @property
    def right(self) -> int:
        return self.left + self.width


# A quotation mark tesseract reads into the wide gap a heading leaves between its number and
# its title (`第一章 ” 约瑟被卖`): alone, unsure, between two CJK words.
_GAP_QUOTE = re.compile(r"^[“”‘’\"'「」『』]+$")


def _gap(words: list[_Word], i: int) -> bool:
    w = words[i]
    return (
        0 < i < len(words) - 1
        and w.confidence < 60
        and bool(_GAP_QUOTE.match(w.text))
        and is_cjk(words[i - 1].text[-1])
        and is_cjk(words[i + 1].text[0])
    )


def _line(words: list[_Word], page: int, scale: float) -> Line:
    text = ""
    kept: list[_Word] = []
    for i, w in enumerate(words):
        if _gap(words, i):
            text += "\u3000"
            continue
        if text and not (is_cjk(text[-1]) and is_cjk(w.text[0])):
            text += " "
        text += w.text
        kept.append(w)
    heights = sorted(w.height for w in words)
    chars = sum(len(w.text) for w in kept) or 1
    return Line(
        text=text,
        x0=min(w.left for w in words) * scale,
        top=min(w.top for w in words) * scale,
        x1=max(w.right for w in words) * scale,
        bottom=max(w.top + w.height for w in words) * scale,
        size=heights[len(heights) // 2] * scale / 0.9,  # CJK ink is ~0.9 of the type size
        bold=False,
        page=page,
        confidence=sum(w.confidence * len(w.text) for w in kept) / chars,
    )
