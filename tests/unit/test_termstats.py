"""Keyword term counts kept with the registry (`retrieval.termstats`), on a real Qdrant Edge
shard and SQLite: they equal a recount of the stored chunks after every add, replace and
delete; documents of an older version are counted at reconcile; the keyword track leaves a
common term out only while a rarer one remains."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval import termstats
from retrieval.fakes import HashEmbedder
from retrieval.index import Indexer
from retrieval.keyword import Bm25Encoder, token_index
from retrieval.search import HybridSearch
from retrieval.store.edge import EdgeStore
from retrieval.types import CORPUS_NAMESPACE, Filter, SparseVector
from tests.unit.test_index import NEW, OLD, make_doc

DIM = 32


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EdgeStore]:
    s = await EdgeStore.open(tmp_path / "qdrant", DIM)
    yield s
    await s.close()


def indexer(tmp_path: Path, store: EdgeStore, common_df: int = 2) -> Indexer:
    return Indexer(
        tmp_path / "db.sqlite3", store, HashEmbedder(DIM), Bm25Encoder(), None, common_df=common_df
    )


async def recount(ix: Indexer, store: EdgeStore) -> dict[int, int]:
    """Ground truth: the terms of every chunk the store holds, counted afresh."""
    chunks = await store.scroll(Filter(equals={"namespace": CORPUS_NAMESPACE}))
    return dict(termstats.count_terms(ix._encode(chunks)))


Indexed = tuple[Indexer, Path, dict[int, int]]


@pytest.fixture
async def indexed(tmp_path: Path, store: EdgeStore) -> AsyncIterator[Indexed]:
    """d1 and d2, which share their first paragraph (its terms are held by 2 chunks): the
    indexer, its database and the recounted truth."""
    async with indexer(tmp_path, store) as ix:
        await ix.replace_document(*make_doc("d1", OLD))
        await ix.replace_document(*make_doc("d2", NEW))
        yield ix, tmp_path / "db.sqlite3", await recount(ix, store)


def kept(db: Path) -> dict[int, int]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT term, df FROM corpus_term_df").fetchall())


async def test_counts_equal_a_recount_after_add_replace_delete(
    indexed: Indexed, store: EdgeStore
) -> None:
    ix, db, truth = indexed
    assert truth and kept(db) == truth
    # The shared paragraph's terms are held by 2 chunks: common at common_df=2.
    shared = token_index("神圣分赐")
    assert truth[shared] == 2 and ix.common_terms(CORPUS_NAMESPACE)[shared] == 2
    assert ix.common_terms("novel") == {}

    await ix.replace_document(*make_doc("d1", ["橄榄山上的晨光照亮新版本。"]))
    assert kept(db) == await recount(ix, store)
    assert shared not in ix.common_terms(CORPUS_NAMESPACE)  # now only in d2

    await ix.delete_document("d2")
    assert kept(db) == await recount(ix, store)
    await ix.delete_document("d1")
    assert kept(db) == {} and ix.common_terms(CORPUS_NAMESPACE) == {}


async def test_documents_of_an_older_version_are_counted_at_reconcile(
    indexed: Indexed, tmp_path: Path, store: EdgeStore
) -> None:
    ix, db, truth = indexed
    await ix.close()
    with sqlite3.connect(db) as conn:  # what a database written before term counts looks like
        conn.execute("DELETE FROM corpus_doc_terms")
        conn.execute("DELETE FROM corpus_term_df")
    async with indexer(tmp_path, store) as ix:
        assert ix.common_terms(CORPUS_NAMESPACE) == {}
        report = await ix.reconcile()
        assert report.terms_counted == 2
        assert kept(db) == truth
        assert token_index("神圣分赐") in ix.common_terms(CORPUS_NAMESPACE)
        assert (await ix.reconcile()).terms_counted == 0  # once


async def test_keyword_track_leaves_out_a_common_term_only_while_a_rarer_one_remains(
    indexed: Indexed, store: EdgeStore
) -> None:
    ix = indexed[0]
    pruned = HybridSearch(store, ix.embedder, ix.encoder, None, None, common_terms=ix.common_terms)
    plain = HybridSearch(store, ix.embedder, ix.encoder, None, None)

    async def keyword(hs: HybridSearch, q: str) -> list[str]:
        found = await hs.candidates(q, tracks=("keyword",))
        return [h.chunk.text for h in found.per_track["keyword"].ranked]

    # 神圣分赐 is in 2 chunks (common at common_df=2), 葡萄园 in one: only 葡萄园 searches.
    assert set(await keyword(plain, "神圣分赐 葡萄园")) == {OLD[0], NEW[0], NEW[1]}
    assert await keyword(pruned, "神圣分赐 葡萄园") == [NEW[1]]
    # Only common terms: they still search (the rarest two), nothing is lost.
    assert set(await keyword(pruned, "神圣分赐")) == {OLD[0], NEW[0]}


def test_drop_common_keeps_rarer_terms_and_weights() -> None:
    v = SparseVector((1, 2, 3), (1.0, 0.5, 1.0))
    assert termstats.drop_common(v, {}) is v
    assert termstats.drop_common(v, {9: 50}) is v
    assert termstats.drop_common(v, {2: 50}) == SparseVector((1, 3), (1.0, 1.0))
    # All common: the two held by the fewest chunks, with their weights.
    assert termstats.drop_common(v, {1: 90, 2: 50, 3: 70}) == SparseVector((2, 3), (0.5, 1.0))


@given(st.dictionaries(st.integers(0, 2**31 - 1), st.integers(1, 10**6), max_size=50))
def test_pack_round_trips(counts: dict[int, int]) -> None:
    assert termstats.unpack(termstats.pack(counts)) == counts
    vectors = [SparseVector((1, 2), (1.0, 1.0)), SparseVector((2,), (1.0,))]
    assert termstats.count_terms(vectors) == Counter({1: 1, 2: 2})
