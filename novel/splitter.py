"""Chapter text → overlapping, sentence-whole chunks for plot memory.

Contract (both backends, checked by property tests on generated text):

- **Sentences.** A sentence is what `retrieval.sentences.split_sentences` returns (the one
  sentence splitter: it ends at 。！？!?… with their closing quotation marks, never inside
  quotation marks or brackets, and at every line break). Every chunk starts at the start of a
  sentence and ends at the end of one.
- **An over-long sentence** — longer than `sentence_max` (260) characters — is cut into pieces
  of at most `unit_size` (50) characters: at the last clause mark (，、：；,;:) within the
  limit, else hard at the limit. Only inside such a sentence may a chunk start or end
  mid-sentence, and there the pieces keep the overlap exact.
- **Sizes.** No chunk is empty or whitespace-only; every chunk is at most `max_size` (600)
  characters; every chunk but the last has at least `min_size` (300). A text of at most 600
  characters is one chunk.
- **Overlap.** Chunk i+1 starts with the last m characters of chunk i: the shortest run of
  whole sentences (or pieces) at its end with m ≥ `overlap_min` (80). So m is within 80–130
  whenever the sentences at that boundary allow it (some run of them has 80–130 characters);
  when they do not (long sentences), m is larger, at most 79 + 260. The chunks joined minus
  the overlaps give back the text.

Over-long sentences are cut by LangChain's `RecursiveCharacterTextSplitter` (clause separators)
when `langchain_text_splitters` is importable, else by the built-in cutter; both keep every
character and the limit. Packing is done here, because the splitter's own chunk_size/overlap
packing guarantees neither whole sentences nor the overlap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from retrieval.sentences import split_sentences

CLAUSE_SEPARATORS = ["；", "，", "、", "：", ";", ",", ":", ""]

# Cuts one over-long sentence into pieces of at most `size` characters, losing nothing.
UnitSplitter = Callable[[str, int], list[str]]


@dataclass(frozen=True, slots=True)
class SplitConfig:
    chunk_size: int = 500  # target window
    min_size: int = 300
    max_size: int = 600
    overlap_min: int = 80
    overlap_max: int = 130
    sentence_max: int = 260  # longer: cut into pieces (keeps overlap + a sentence ≤ max_size)
    unit_size: int = 50  # a piece of an over-long sentence: keeps the overlap inside 80–130


def langchain_units(text: str, unit_size: int) -> list[str]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=unit_size,
        chunk_overlap=0,
        separators=CLAUSE_SEPARATORS,
        keep_separator="end",
        strip_whitespace=False,
        length_function=len,
    )
    units = splitter.split_text(text)
    if "".join(units) != text or any(len(u) > unit_size for u in units):
        return builtin_units(text, unit_size)  # never lose a character: fall back, not guess
    return units


def builtin_units(text: str, unit_size: int) -> list[str]:
    """Clauses (，、：；) packed up to `unit_size`; a longer clause cut hard. Nothing lost."""
    units: list[str] = []
    buf = ""
    for clause in (c for c in re.split(r"(?<=[，,、：:；;])", text) if c):
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


def sentence_units(text: str, cfg: SplitConfig, cut: UnitSplitter) -> list[str]:
    """Whole sentences, with over-long ones cut into pieces; `"".join(...) == text`."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if len(sentence) > cfg.sentence_max:
            out.extend(cut(sentence, cfg.unit_size))
        elif sentence:
            out.append(sentence)
    return out


def _overlap_start(bounds: Sequence[int], first: int, end: int, cfg: SplitConfig) -> int:
    """The unit the next chunk starts at: the shortest run of whole units ending at `end`
    with at least `overlap_min` characters (never the chunk's first unit: progress)."""
    j = end - 1
    while j > first + 1 and bounds[end] - bounds[j] < cfg.overlap_min:
        j -= 1
    return max(j, first + 1)


def split_spans(
    text: str, cfg: SplitConfig | None = None, units: UnitSplitter | None = None
) -> list[tuple[int, int]]:
    """(start, end) of every chunk in `text.strip()` (the contract above)."""
    cfg = cfg or SplitConfig()
    body = text.strip()
    if not body:
        return []
    if len(body) <= cfg.max_size:
        return [(0, len(body))]
    pieces = sentence_units(body, cfg, units or default_units())
    bounds = [0]
    for piece in pieces:
        bounds.append(bounds[-1] + len(piece))
    spans: list[tuple[int, int]] = []
    first, done = 0, 0  # the chunk's first unit; units before `done` are in earlier chunks
    while len(body) - bounds[first] > cfg.max_size:
        start = bounds[first]
        end = max(first + 1, done + 1)  # at least one new unit
        while end < len(pieces) and bounds[end + 1] - start <= cfg.chunk_size:
            end += 1
        while (
            end < len(pieces)
            and bounds[end + 1] - start <= cfg.max_size
            and (
                bounds[end] - start < cfg.min_size  # too short yet
                or bounds[end] - bounds[first + 1] < cfg.overlap_min  # no overlap to leave
            )
        ):
            end += 1
        spans.append((start, bounds[end]))
        first, done = _overlap_start(bounds, first, end, cfg), end
    spans.append((bounds[first], len(body)))
    return spans


def split_text(
    text: str, cfg: SplitConfig | None = None, units: UnitSplitter | None = None
) -> list[str]:
    """Split a chapter into chunks meeting the contract above."""
    body = text.strip()
    return [body[a:b] for a, b in split_spans(text, cfg, units)]


def default_units() -> UnitSplitter:
    try:
        import langchain_text_splitters  # noqa: F401
    except ImportError:
        return builtin_units
    return langchain_units
