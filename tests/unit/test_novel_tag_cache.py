"""The persistent cache of jieba's cut (`novel.tag_cache`): a replay that reads its cuts from
SQLite gives the same story state as one that cuts, a new process (a cleared in-memory cache)
reads them without jieba, and a garbage row is ignored and replaced."""

from __future__ import annotations

import sqlite3
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from novel import narrative
from novel.blueprint import Blueprint
from novel.story_state import REPLAYS, replay
from novel.tag_cache import TagCache, Tags, _key, decode, use_tag_cache
from tests.unit.test_story_replay_golden import WORLDS, _state


class CountingCache:
    """The SQLite cache, counting what it had (a `narrative.TagMemo` itself)."""

    def __init__(self, cache: TagCache) -> None:
        self.cache = cache
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> Tags | None:
        kept = self.cache.get(text)
        self.hits += kept is not None
        self.misses += kept is None
        return kept

    def put(self, text: str, tags: Tags) -> None:
        self.cache.put(text, tags)


@pytest.fixture(autouse=True)
def fresh_process() -> Iterator[None]:
    """As in a new process: no cut and no replayed state kept in memory, no cache installed."""
    narrative.tagged.cache_clear()
    REPLAYS.clear()
    yield
    narrative.remember_tags_in(None)
    narrative.tagged.cache_clear()
    REPLAYS.clear()


def world() -> tuple[Blueprint, list[str]]:
    data = tomllib.loads((WORLDS / "w4-hanjiang.toml").read_text(encoding="utf-8"))
    bp = Blueprint.model_validate(data["blueprint"])
    return bp, [str(c["text"]).strip() for c in data["chapter"]]


def test_a_replay_from_cached_cuts_is_the_same_state(tmp_path: Path) -> None:
    bp, chapters = world()
    plain = _state(replay(bp, chapters))
    for run in ("first process", "second process"):
        narrative.tagged.cache_clear()
        REPLAYS.clear()
        with use_tag_cache(tmp_path / "db.sqlite3") as cache:
            counting = CountingCache(cache)
            narrative.remember_tags_in(counting)
            assert _state(replay(bp, chapters)) == plain, run
        if run == "first process":
            assert (counting.hits, counting.misses) == (0, len(chapters))
        else:  # every cut read back from SQLite: jieba not asked
            assert (counting.hits, counting.misses) == (len(chapters), 0)


GARBAGE: list[object] = [
    "not json {",
    "{}",
    '[["林远", "nr"]]',  # a cut, but not of this text
    '[["林远"]]',
    "[[1, 2]]",
    "null",
    b"\x00\xff binary",
    "",
]


@pytest.mark.parametrize("raw", GARBAGE, ids=range(len(GARBAGE)))
def test_a_garbage_row_is_ignored_and_recomputed(tmp_path: Path, raw: object) -> None:
    text = "钱七在岛边守着船，林远走了过来。"
    truth = narrative.tagged(text)
    narrative.tagged.cache_clear()
    db = tmp_path / "db.sqlite3"
    TagCache.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO novel_tag_cache (key, tags) VALUES (?, ?)", (_key(text), raw))
    conn.commit()
    conn.close()
    assert decode(text, raw) is None
    with use_tag_cache(db) as cache:
        assert narrative.tagged(text) == truth
        assert cache.get(text) == truth  # the row was replaced by the true cut


def test_a_closed_or_missing_table_only_means_cutting_again(tmp_path: Path) -> None:
    text = "苏晴在渡口看着江水。"
    truth = narrative.tagged(text)
    narrative.tagged.cache_clear()
    cache = TagCache.open(tmp_path / "db.sqlite3")
    cache.close()
    narrative.remember_tags_in(cache)
    assert narrative.tagged(text) == truth
    assert cache.get(text) is None
