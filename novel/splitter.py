"""Chapter text → overlapping chunks for plot memory.

Contract (both backends, checked by the tests on the same text):
- no chunk is empty or whitespace-only; every chunk is at most `max_size` (600) characters;
- every chunk but the last has at least `min_size` (300) characters (a text shorter than that is
  one chunk);
- consecutive chunks overlap by 80–130 characters: chunk i+1 starts with the last m characters
  of chunk i, 80 ≤ m ≤ 130, and the chunks joined minus the overlaps give back the text.

Boundaries come from LangChain's `RecursiveCharacterTextSplitter` (Chinese separators
"\\n\\n", "\\n", "。", "！", "？", "；", "，", "") when `langchain_text_splitters` is importable, else
from a built-in paragraph + punctuation splitter. Either way the boundaries are cut into small
units (≤ `unit_size`) first and packed into windows here, because the splitter's own
chunk_size/overlap packing does not guarantee the overlap on prose with long paragraphs (its
overlap is "whole trailing pieces that fit", often zero).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", "，", ""]

UnitSplitter = Callable[[str, int], list[str]]


@dataclass(frozen=True, slots=True)
class SplitConfig:
    chunk_size: int = 500  # target window
    min_size: int = 300
    max_size: int = 600
    overlap_min: int = 80
    overlap_max: int = 130
    unit_size: int = 50  # max unit: keeps every overlap inside [overlap_min, overlap_max)


def langchain_units(text: str, unit_size: int) -> list[str]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=unit_size,
        chunk_overlap=0,
        separators=SEPARATORS,
        keep_separator="end",
        strip_whitespace=False,
        length_function=len,
    )
    units = splitter.split_text(text)
    if "".join(units) != text:  # never lose a character: fall back rather than guess
        return builtin_units(text, unit_size)
    return units


_SENTENCE = re.compile(
    r"[^。！？；!?;\n]+(?:[。！？；!?;]+[”」』’\"）)]*)?\n*|[。！？；!?;]+[”」』’\"）)]*\n*|\n+"
)


def builtin_units(text: str, unit_size: int) -> list[str]:
    """Paragraphs → sentences → clauses (，) → hard cuts; each unit ≤ unit_size, nothing lost."""
    units: list[str] = []
    for sentence in (m.group(0) for m in _SENTENCE.finditer(text)):
        if len(sentence) <= unit_size:
            units.append(sentence)
            continue
        buf = ""
        for clause in (c for c in re.split(r"(?<=[，,、：:])", sentence) if c):
            while len(clause) > unit_size:
                if buf:
                    units.append(buf)
                    buf = ""
                units.append(clause[:unit_size])
                clause = clause[unit_size:]
            if len(buf) + len(clause) > unit_size:
                units.append(buf)
                buf = ""
            buf += clause
        if buf:
            units.append(buf)
    return [u for u in units if u]


def _pack(units: list[str], cfg: SplitConfig) -> list[str]:
    text = "".join(units)
    if len(text) <= cfg.max_size:
        return [text] if text.strip() else []
    # unit boundaries as offsets
    bounds = [0]
    for u in units:
        bounds.append(bounds[-1] + len(u))
    chunks: list[str] = []
    start_idx = 0  # index into bounds
    n = len(units)
    while True:
        start = bounds[start_idx]
        if len(text) - start <= cfg.max_size:
            chunks.append(text[start:])
            break
        end_idx = start_idx + 1
        while end_idx < n and bounds[end_idx + 1] - start <= cfg.chunk_size:
            end_idx += 1
        end = bounds[end_idx]
        # The last unit boundary whose suffix is at least overlap_min long starts the next chunk.
        nxt = end_idx - 1
        while nxt > start_idx and end - bounds[nxt] < cfg.overlap_min:
            nxt -= 1
        nxt = max(nxt, start_idx + 1)
        chunks.append(text[start:end])
        start_idx = nxt
    return [c for c in chunks if c.strip()]


def split_text(
    text: str, cfg: SplitConfig | None = None, units: UnitSplitter | None = None
) -> list[str]:
    """Split a chapter into chunks meeting the contract above."""
    cfg = cfg or SplitConfig()
    text = text.strip()
    if not text:
        return []
    splitter = units or default_units()
    return _pack(splitter(text, cfg.unit_size), cfg)


def default_units() -> UnitSplitter:
    try:
        import langchain_text_splitters  # noqa: F401
    except ImportError:
        return builtin_units
    return langchain_units
