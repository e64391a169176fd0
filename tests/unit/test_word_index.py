"""jieba's main dictionary read from disk a word at a time (`retrieval.word_index`), as the
one-shot `cite` reads it: the same cuts, frequencies and rarities as the loaded dictionary, and
a missing, stale or foreign index file rebuilt rather than believed."""

from __future__ import annotations

import gzip
import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval import text
from retrieval.word_index import INDEX_NAME, DiskFrequencies, WordIndex

SAMPLES = Path(text.__file__).parents[1] / "ingest" / "samples"
SEED = 20261203


def _sentences(n: int) -> list[str]:
    """`n` verses of the bundled CUV (a seeded sample, printed on failure) and every paragraph
    of the bundled Chinese and English sample messages, in search form."""
    with gzip.open(SAMPLES / "cuv-1919-traditional.tsv.gz", "rt", encoding="utf-8") as f:
        verses = [line.rstrip("\n").split("\t")[3] for line in f][1:]
    picked = random.Random(SEED).sample(verses, n)
    paragraphs = [
        p
        for md in sorted(SAMPLES.glob("message-*.md"))
        for p in md.read_text("utf-8").split("\n\n")
    ]
    return [text.search_form(s) for s in picked + paragraphs if s.strip()]


def _main() -> tuple[dict[str, int], int]:
    """The default cache's dictionary, loaded (the one the reference tokenizers use)."""
    return text._loaded_dictionary(text._default_cache_dir())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of jieba's dictionary cache and its index, built once for the module."""
    text.Tokenizer().warm()
    folder = tmp_path_factory.mktemp("jieba")
    shutil.copy2(text._default_cache_dir() / "jieba.cache", folder / "jieba.cache")
    WordIndex.open(folder / "jieba.cache", _main).close()
    return folder


@pytest.fixture
def own_cache(built: Path, tmp_path: Path) -> Iterator[Path]:
    """A cache directory of its own: the module's cache file and index, copied as they are."""
    for name in ("jieba.cache", INDEX_NAME):
        shutil.copy2(built / name, tmp_path / name)
    yield tmp_path
    text._INDEX.pop(tmp_path, None)
    text._BASE.pop(tmp_path, None)


def test_cuts_frequencies_and_rarity_match_the_loaded_dictionary(own_cache: Path) -> None:
    loaded = text.Tokenizer()
    on_disk = text.Tokenizer(cache_dir=own_cache, on_disk=True, terms=["经纶的实际"])
    loaded.add_terms(["经纶的实际"])
    sentences = _sentences(400)
    assert len(sentences) > 450, f"seed {SEED}"
    for s in sentences:
        assert on_disk.tokenize(s) == loaded.tokenize(s), f"seed {SEED}: {s}"
    words = {w for s in sentences[:50] for w in loaded.tokenize(s)} | {"的", "不在词典里的词"}
    for w in sorted(words):
        assert on_disk.general_frequency(w) == loaded.general_frequency(w), w
    assert on_disk.jieba.total == loaded.jieba.total  # the domain words counted alike


def test_rarity_reads_the_index_when_no_dictionary_is_loaded(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text.Tokenizer().warm()
    expected = {w: text.rarity(w) for w in ("的", "经纶", "分赐", "不在词典里的词")}
    text.Tokenizer(cache_dir=own_cache, on_disk=True).warm()
    monkeypatch.setattr(text, "_BASE", {})  # as in `cite`: nothing loaded in memory
    monkeypatch.setattr(text, "_INDEX", {own_cache: text._INDEX[own_cache]})
    assert {w: text.rarity(w) for w in expected} == expected
    assert expected["不在词典里的词"] == 1.0 and expected["的"] < expected["经纶"]


def test_the_index_is_built_once_and_kept(tmp_path: Path) -> None:
    own_cache = tmp_path
    shutil.copy2(text._default_cache_dir() / "jieba.cache", own_cache / "jieba.cache")
    loads: list[int] = []

    def load() -> tuple[dict[str, int], int]:
        loads.append(1)
        return _main()

    first = WordIndex.open(own_cache / "jieba.cache", load)
    again = WordIndex.open(own_cache / "jieba.cache", load)
    assert loads == [1]
    freq, total = _main()
    assert first.total == again.total == total
    for w in ("神", "神圣", "神圣的", "经纶", "不在词典里"):
        assert again.count(w) == freq.get(w), w
    first.close()
    again.close()


@pytest.mark.parametrize(
    "spoil",
    ["garbage", "empty", "no meta", "stale", "total not a number"],
)
def test_a_foreign_or_stale_index_is_rebuilt(own_cache: Path, spoil: str) -> None:
    """Whatever sits at the index's path and does not read as this cache's index is replaced:
    the cuts stay those of the loaded dictionary."""
    index_path = own_cache / INDEX_NAME
    if spoil == "garbage":
        index_path.write_bytes(b"this is not an SQLite file" * 100)
    elif spoil == "empty":
        index_path.write_bytes(b"")
    else:
        db = sqlite3.connect(index_path)
        if spoil == "no meta":
            db.execute("DROP TABLE meta")
        elif spoil == "stale":
            db.execute("UPDATE meta SET value = '1:2' WHERE key = 'source'")
            db.execute("UPDATE words SET n = 1 WHERE w = '神'")  # what a stale index could say
        else:
            db.execute("UPDATE meta SET value = 'many' WHERE key = 'total'")
        db.commit()
        db.close()
    sentence = text.search_form("神圣的分赐与召会生活中经纶的实际；神爱世人")
    on_disk = text.Tokenizer(cache_dir=own_cache, on_disk=True)
    assert on_disk.tokenize(sentence) == text.Tokenizer().tokenize(sentence)
    rebuilt = WordIndex.open(own_cache / "jieba.cache", lambda: pytest.fail("built again"))
    assert rebuilt.count("神") == _main()[0]["神"]
    rebuilt.close()


def test_an_index_that_cannot_be_written_falls_back_to_loading(own_cache: Path) -> None:
    (own_cache / INDEX_NAME).unlink()
    (own_cache / INDEX_NAME).mkdir()  # a directory where the file should go: not replaceable
    sentence = text.search_form("神圣的分赐与召会生活")
    on_disk = text.Tokenizer(cache_dir=own_cache, on_disk=True)
    assert on_disk.tokenize(sentence) == text.Tokenizer().tokenize(sentence)
    assert own_cache not in text._INDEX


def test_disk_frequencies_behave_as_jieba_uses_its_dict(own_cache: Path) -> None:
    index = WordIndex.open(own_cache / "jieba.cache", _main)
    freq = DiskFrequencies(index)
    assert "神" in freq and "不在词典里的词" not in freq and 3 not in freq
    assert freq.get("不在词典里的词") is None and freq.get("不在词典里的词", 1) == 1
    with pytest.raises(KeyError):
        freq["不在词典里的词"]
    freq["不在词典里的词"] = 7  # what add_word writes stays over the index
    assert freq["不在词典里的词"] == 7 and freq.get("不在词典里的词", 1) == 7
    assert index.count("不在词典里的词") is None
    index.close()
