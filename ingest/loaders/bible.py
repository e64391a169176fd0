"""Bible table: TSV or TSV.gz with columns book, chapter, verse, text (OSIS book ids).

A header row is optional. Rows with empty text (verses the translation merged into the one
before) are skipped; malformed rows are counted, and a table with no valid row is refused.
"""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass
from pathlib import Path

from ingest.loaders.base import LoadError, check_size


@dataclass(frozen=True, slots=True)
class Verse:
    book: str
    chapter: int
    verse: int
    text: str

    @property
    def osis(self) -> str:
        return f"{self.book}.{self.chapter}.{self.verse}"


@dataclass(frozen=True, slots=True)
class BibleTable:
    path: Path
    verses: tuple[Verse, ...]
    empty: int  # merged verses with no text of their own
    malformed: int

    def books(self) -> list[str]:
        return list(dict.fromkeys(v.book for v in self.verses))


def is_bible_table(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".tsv", ".tsv.gz"))


def load_bible(path: Path, max_bytes: int) -> BibleTable:
    check_size(path, max_bytes)
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as gz:
                raw = gz.read(max_bytes * 10 + 1)  # bounded: refuse gzip bombs
            if len(raw) > max_bytes * 10:
                raise LoadError("经文表解压后过大", "Bible table too large when decompressed")
        else:
            raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise LoadError(
            "经文表无法读取（gzip 损坏？）", f"cannot read Bible table: {err}"
        ) from None
    except UnicodeDecodeError:
        raise LoadError("经文表不是 UTF-8 编码", "Bible table is not UTF-8") from None
    verses: list[Verse] = []
    empty = malformed = 0
    for lineno, line in enumerate(io.StringIO(text), 1):
        parts = line.rstrip("\n").rstrip("\r").split("\t")
        if lineno == 1 and parts and parts[0].strip().lower() == "book":
            continue
        if not line.strip():
            continue
        if len(parts) < 3:
            malformed += 1
            continue
        book, chapter, verse = (p.strip() for p in parts[:3])
        body = "\t".join(parts[3:]).strip()
        if not (book and chapter.isdigit() and verse.isdigit()):
            malformed += 1
            continue
        if not body:
            empty += 1
            continue
        verses.append(Verse(book, int(chapter), int(verse), body))
    if not verses:
        raise LoadError(
            "经文表没有有效的行（需要 book、chapter、verse、text 四列）",
            "no valid rows (need book, chapter, verse, text columns)",
        )
    return BibleTable(path, tuple(verses), empty, malformed)
