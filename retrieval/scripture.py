"""The one scripture reference parser (placeholder API; the full parser replaces this body)."""

from __future__ import annotations

import re
from dataclasses import dataclass


class ScriptureError(ValueError):
    """A reference that cannot exist or cannot be read; `zh`/`en` say why to a user."""

    def __init__(self, zh: str, en: str) -> None:
        super().__init__(en)
        self.zh = zh
        self.en = en


@dataclass(frozen=True, slots=True)
class VerseRef:
    book: str  # OSIS book id, e.g. "Eph"
    chapter: int
    verse: int | None = None  # None = whole chapter

    def osis(self) -> str:
        base = f"{self.book}.{self.chapter}"
        return base if self.verse is None else f"{base}.{self.verse}"


@dataclass(frozen=True, slots=True)
class RefRange:
    start: VerseRef
    end: VerseRef

    def osis(self) -> str:
        a, b = self.start.osis(), self.end.osis()
        return a if a == b else f"{a}-{b}"


_SIMPLE = re.compile(r"^\s*(弗|以弗所书)\s*(\d+)\s*[:：]\s*(\d+)\s*$")


def parse_reference(text: str) -> list[RefRange]:
    m = _SIMPLE.match(text)
    if not m:
        raise ScriptureError(f"无法识别的经文出处：{text}", f"Unrecognised reference: {text}")
    ref = VerseRef("Eph", int(m.group(2)), int(m.group(3)))
    return [RefRange(ref, ref)]


def find_references(text: str) -> list[RefRange]:
    return []


def book_choices() -> list[tuple[str, str]]:
    """(OSIS id, Chinese short name) for autocomplete."""
    return [("Eph", "弗")]
