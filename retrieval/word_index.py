"""jieba's main dictionary on disk, read a word at a time.

jieba keeps its dictionary (every word and every prefix of one, with its count, and the total)
in memory: half a million entries, 0.4 s to load from its cache on an idle machine. A bot loads
it once; a one-shot command (`baibao cite 弗1:10`) tokenizes a line or two and would spend most
of its start-up on that load. `WordIndex` keeps the same entries in an SQLite file beside
jieba's cache, and `DiskFrequencies` is the mapping jieba's tokenizer reads (`FREQ`) over it:
the same counts, so the same cuts.

The index is built from jieba's cache the first time it is needed and rebuilt whenever that
cache changes (its size and modification time are recorded) or the file does not read as an
index; it is written to a temporary file first, so a reader never sees half of one.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import overload

INDEX_NAME = "jieba.sqlite3"

MainDictionary = tuple[Mapping[str, int], int]  # word (or prefix, 0) → count, and the total


class WordIndex:
    """The main dictionary's counts, looked up in SQLite (`count`), and its `total`.

    Lookups are kept in memory: a sentence asks for each of its prefixes more than once."""

    def __init__(self, db: sqlite3.Connection, total: int) -> None:
        self._db = db
        self._lock = threading.Lock()  # one connection, read from any thread
        self._known: dict[str, int | None] = {}
        self.total = total

    @classmethod
    def open(cls, cache: Path, load: Callable[[], MainDictionary]) -> WordIndex:
        """The index of jieba's cache file `cache`, built with `load` (which reads — or first
        writes — that cache) when it is missing, stale or unreadable."""
        path = cache.with_name(INDEX_NAME)
        index = cls._read(path, _stamp(cache))
        if index is not None:
            return index
        words, total = load()
        _write(path, words, total, _stamp(cache))
        index = cls._read(path, _stamp(cache))
        if index is None:
            raise OSError(f"the word index {path} did not read back after it was written")
        return index

    @classmethod
    def _read(cls, path: Path, stamp: str) -> WordIndex | None:
        if not path.is_file():
            return None
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            db.execute("SELECT n FROM words WHERE w = ''").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            return None
        if meta.get("source") != stamp or not isinstance(meta.get("total"), int):
            db.close()
            return None
        return cls(db, meta["total"])

    def count(self, word: str) -> int | None:
        """The count jieba's dictionary has for `word` (0 for a prefix of a word), or None."""
        try:
            return self._known[word]
        except KeyError:
            pass
        with self._lock:
            row = self._db.execute("SELECT n FROM words WHERE w = ?", (word,)).fetchone()
        n: int | None = row[0] if row is not None else None
        self._known[word] = n
        return n

    def close(self) -> None:
        self._db.close()


class DiskFrequencies:
    """jieba's `FREQ` for a tokenizer that reads the main dictionary from a `WordIndex`: the
    words the tokenizer adds (the domain dictionary) are kept here, over the index.

    Only what jieba's `Tokenizer` uses of its dict: `in`, `[]`, `get` and assignment."""

    def __init__(self, index: WordIndex) -> None:
        self._index = index
        self._added: dict[str, int] = {}

    def _count(self, word: str) -> int | None:
        added = self._added.get(word)
        return added if added is not None else self._index.count(word)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._count(word) is not None

    def __getitem__(self, word: str) -> int:
        n = self._count(word)
        if n is None:
            raise KeyError(word)
        return n

    @overload
    def get(self, word: str) -> int | None: ...
    @overload
    def get(self, word: str, default: int) -> int: ...
    def get(self, word: str, default: int | None = None) -> int | None:
        n = self._count(word)
        return default if n is None else n

    def __setitem__(self, word: str, n: int) -> None:
        self._added[word] = n


def _stamp(cache: Path) -> str:
    """What identifies one version of jieba's cache file."""
    st = cache.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def _write(path: Path, words: Mapping[str, int], total: int, stamp: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".jieba-", suffix=".sqlite3", dir=path.parent)
    os.close(fd)
    try:
        db = sqlite3.connect(tmp)
        try:
            db.executescript(
                "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                "CREATE TABLE words (w TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;"
                "CREATE TABLE meta (key TEXT PRIMARY KEY, value);"
            )
            db.executemany("INSERT INTO words VALUES (?, ?)", sorted(words.items()))
            db.executemany("INSERT INTO meta VALUES (?, ?)", [("total", total), ("source", stamp)])
            db.commit()
        finally:
            db.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
