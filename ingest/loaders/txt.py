"""Plain text: encoding detection (UTF-8 ± BOM, UTF-16 BOM, GB18030/GBK, Big5) → Document.

charset-normalizer proposes an encoding, but it is never trusted alone: every candidate that
decodes strictly is scored by a CJK sanity check (share of the most frequent Chinese
characters among all CJK characters; a wrong legacy codec produces rare characters), and the
best plausible one wins.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from ingest.headings import is_chapter_line, usable_title
from ingest.loaders.base import Block, Document, LoadError, guess_language, read_bytes

# ~300 of the most frequent characters of Chinese prose, Simplified and Traditional forms.
_COMMON = frozenset(
    "的一是不了在人有我他这個这个们們中来來上大为為和国國地到以说說时時要就出会會可也你对對"
    "生能而子那得于於着著下自之年过過发發后後作里裏裡用道行所然家种種事成方多经經么麼去法学學"
    "如都同现現当當没沒动動面起看定天分还還进進好小部其些主样樣理心她本前开開但因只从從想实實"
    "日者意无無力它与與长長把机機十民第公此已工使情明性知全三又关關点點正业業外将將两兩高间間"
    "由问問很最重并並物手应應向头頭文体體新己身果加月话話合回特代内內信表化老给給位次度门門任"
    "常先通教原东東声聲提立及比员員解水名真论論处處走义義各入几幾口认認条條平系气氣题題活更别別"
    "神祂主基督耶稣穌灵靈圣聖父爱愛恩召会们祂永远遠命救赎贖福音罪称稱义義信徒教訓约約"
)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _score(text: str) -> float:
    """Higher is more plausible. Pure ASCII/Latin text scores by absence of control chars."""
    sample = text[:50000]
    if not sample:
        return 0.0
    controls = len(_CONTROL.findall(sample))
    if controls > len(sample) // 100:
        return -1.0
    cjk = _CJK.findall(sample)
    if not cjk:
        return 0.5
    common = sum(1 for c in cjk if c in _COMMON)
    return common / len(cjk)


def decode_text(data: bytes) -> tuple[str, str]:
    """bytes → (text, encoding). Raises LoadError when no encoding gives plausible text."""
    if b"\x00" in data[:8192] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise LoadError("二进制文件，不是文本", "binary file, not text")
    decoded = _decode_marked(data)
    if decoded is not None:
        return decoded
    return _decode_legacy(data)


def _decode_marked(data: bytes) -> tuple[str, str] | None:
    """A byte-order mark, or valid UTF-8, settles the encoding; None when neither does."""
    if data.startswith(codecs.BOM_UTF8):
        try:
            return data[3:].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError:
            raise LoadError("UTF-8 文件含无效字节", "invalid UTF-8 after BOM") from None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise LoadError("UTF-16 文件含无效字节", "invalid UTF-16") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _score(text) >= 0:
        return text, "utf-8"
    raise LoadError("二进制文件，不是文本", "binary file, not text")


def _candidates(data: bytes) -> list[str]:
    """charset-normalizer's guess (if any), then the Chinese legacy codecs, in that order."""
    candidates: list[str] = []
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(data[:200000]).best()
        if best is not None and best.encoding:
            candidates.append(best.encoding)
    except Exception:
        pass
    return [*dict.fromkeys([*candidates, "gb18030", "big5", "cp950", "big5hkscs"])]


def _decode_legacy(data: bytes) -> tuple[str, str]:
    """Every candidate that decodes strictly, scored; the most plausible wins."""
    scored: list[tuple[float, int, str, str]] = []
    for order, enc in enumerate(_candidates(data)):
        try:
            text = data.decode(enc)
        except (UnicodeDecodeError, LookupError):
            continue
        scored.append((_score(text), -order, enc, text))
    if not scored:
        raise LoadError(
            "无法识别文本编码（不是 UTF-8、GB18030 或 Big5）",
            "undecodable text (not UTF-8, GB18030 or Big5)",
        )
    score, _, enc, text = max(scored)
    cjk_present = bool(_CJK.search(text[:50000]))
    if score < 0 or (cjk_present and score < 0.08):
        raise LoadError(
            "无法识别文本编码（解码结果不像中文或英文）", "undecodable text (implausible decoding)"
        )
    return text, enc


def read_text_file(path: Path, max_bytes: int) -> tuple[str, str]:
    text, enc = decode_text(read_bytes(path, max_bytes))
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if not text.strip():
        raise LoadError("文件没有文字内容", "no text in file")
    return text, enc


def load_txt(path: Path, max_bytes: int) -> Document:
    """Paragraphs are separated by blank lines; line structure inside a paragraph is kept
    (outlines need it; prose joins broken lines later). A text file's first line is as often a
    chapter heading (`第一章 …`) as the book's name: it is the title, not text, only when it
    stands alone above the first chapter line (`_title_line`); else the pipeline titles the
    file by its name."""
    text, enc = read_text_file(path, max_bytes)
    title, text = _title_line(text)
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]
    return Document(
        path=path,
        format="txt",
        blocks=[Block(p.rstrip()) for p in paragraphs],
        title=title,
        language=guess_language(text),
        hints={"encoding": enc},
    )


_TITLE_CHARS = 40
_SENTENCE_MARKS = re.compile(r"[。！？；，：!?;,:]|\.\s|\.$")


def _title_line(text: str) -> tuple[str, str]:
    """(the title, the text without it) when the first line is a paragraph of its own, short,
    with no sentence marks and no chapter heading itself, and the next paragraph opens with a
    chapter line (`以弗所書讀經筆記`, a blank line, `第一課　…`); else ("", text). An outline's
    theme line right above its first point (`属灵的呼吸` / `壹　…`) stays the outline's text:
    it heads the points' paths."""
    lines = text.lstrip().split("\n")
    first = lines[0].strip()
    following = next((ln.strip() for ln in lines[1:] if ln.strip()), "")
    if (
        len(lines) < 2
        or lines[1].strip()
        or len(first) > _TITLE_CHARS
        or _SENTENCE_MARKS.search(first)
        or not usable_title(first)
        or not is_chapter_line(following)
    ):
        return "", text
    return first, "\n".join(lines[1:])
