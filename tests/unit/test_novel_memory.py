"""Plot memory versions on the real Qdrant Edge store + SQLite: no stale chunk is ever returned,
and a crash between any two steps is repaired by reconcile()."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from novel.blueprint import default_blueprint
from novel.memory import PlotMemory, namespace
from novel.repo import Draft, NovelRepo
from novel.summary import ChapterSummary
from retrieval.fakes import HashEmbedder
from retrieval.store.edge import EdgeStore
from retrieval.types import Filter, IndexedChunk, SparseVector

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def sparse(text: str) -> SparseVector:
    ids = sorted({ord(ch) for ch in text})[:64]
    return SparseVector(tuple(ids), tuple(1.0 for _ in ids))


def chapter_text(marker: str, n: int = 6) -> str:
    para = f"{marker}在青岚渡口等了一夜，江风很冷，林远握着师父留下的木牌。苏晴提着灯笼走来，说起{marker}的旧事。"
    return "\n\n".join(para * 3 for _ in range(n))


class Crash(RuntimeError):
    pass


class FailingStore:
    """Wraps the real store; raises on the k-th call of `method` (a crash between steps)."""

    def __init__(self, inner: EdgeStore) -> None:
        self.inner = inner
        self.fail: dict[str, int] = {}
        self.calls: dict[str, int] = {}

    def _tick(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.fail.get(name) == self.calls[name]:
            raise Crash(name)

    async def upsert(self, items: Sequence[IndexedChunk]) -> None:
        self._tick("upsert")
        await self.inner.upsert(items)

    async def delete(self, flt: Filter) -> None:
        self._tick("delete")
        await self.inner.delete(flt)

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        self._tick("set_extra")
        await self.inner.set_extra(flt, values)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[NovelRepo, FailingStore, PlotMemory]]:
    repo = await NovelRepo.open(tmp_path / "novel.sqlite3")
    edge = await EdgeStore.open(tmp_path / "qdrant", 64)
    store = FailingStore(edge)
    for chat in ("g1", "g2"):
        await repo.world.ensure_novel(chat, default_blueprint().to_json(), NOW)
    memory = PlotMemory(repo, store, HashEmbedder(64), sparse)  # type: ignore[arg-type]
    yield repo, store, memory
    await edge.close()
    await repo.close()


async def add(memory: PlotMemory, chat: str, cid: str, marker: str) -> int:
    number, _ = await memory.add_chapter(
        chat_id=chat,
        chapter_id=cid,
        draft=Draft(
            title=marker,
            text=chapter_text(marker),
            summary=ChapterSummary(summary=marker, scenes=["青岚渡口"]),
            author="t",
            reason="test",
            now=NOW,
        ),
    )
    return number


async def visible(memory: PlotMemory, chat: str, query: str) -> set[tuple[int, int, str]]:
    hits = await memory.search(chat, query, limit=50)
    return {(h.chapter_no, h.version, h.title) for h in hits}


async def stored_versions(store: FailingStore, chat: str, cid: str) -> dict[int, set[bool]]:
    out: dict[int, set[bool]] = {}
    for c in await store.inner.scroll(Filter(equals={"namespace": namespace(chat), "doc_id": cid})):
        out.setdefault(int(c.extra["version"]), set()).add(bool(c.extra["current"]))
    return out


async def test_add_tags_and_extras(env: tuple[NovelRepo, FailingStore, PlotMemory]) -> None:
    _repo, _store, memory = env
    assert await add(memory, "g1", "c1", "甲") == 1
    chunks = await memory.chunks_of("g1", "c1")
    assert len(chunks) >= 2
    for c in chunks:
        assert c.type == "novel" and c.namespace == "novel:g1"
        assert c.extra["novel"] == "g1" and c.extra["chapter_no"] == 1 and c.extra["version"] == 1
        assert c.extra["current"] is True and c.extra["title"] == "甲"
        assert c.extra["chunk_id"].startswith("c1:v1:")
        assert (
            "林远" in c.extra["tags"]
            and "苏晴" in c.extra["tags"]
            and "青岚渡口" in c.extra["tags"]
        )
    assert await visible(memory, "g1", "甲 青岚渡口") == {(1, 1, "甲")}


async def test_revise_rollback_delete_never_stale(
    env: tuple[NovelRepo, FailingStore, PlotMemory],
) -> None:
    _repo, store, memory = env
    await add(memory, "g1", "c1", "甲")
    await add(memory, "g1", "c2", "乙")
    await add(memory, "g1", "c3", "丙")
    v, _ = await memory.add_version(
        chat_id="g1",
        chapter_id="c2",
        chapter_no=2,
        draft=Draft(
            title="乙二",
            text=chapter_text("乙二"),
            summary=ChapterSummary(summary="x"),
            author="t",
            reason="r",
            now=NOW,
        ),
    )
    assert v == 2
    assert await stored_versions(store, "g1", "c2") == {2: {True}}
    assert (2, 1, "乙") not in await visible(memory, "g1", "乙 青岚渡口")
    assert (2, 2, "乙二") in await visible(memory, "g1", "乙二")

    await memory.rollback("g1", "c2", 2, 1)
    assert await stored_versions(store, "g1", "c2") == {1: {True}}
    seen = await visible(memory, "g1", "乙 乙二 青岚渡口")
    assert (2, 1, "乙") in seen and all(t != "乙二" for _, _, t in seen)

    # Delete an earlier chapter: the later one is renumbered in SQLite and in the store.
    await memory.delete_chapter("g1", "c1")
    assert await stored_versions(store, "g1", "c1") == {}
    seen = await visible(memory, "g1", "甲 乙 丙 青岚渡口")
    assert {t for _, _, t in seen} == {"乙", "丙"}
    assert (1, 1, "乙") in seen and (2, 1, "丙") in seen
    assert {c.extra["chapter_no"] for c in await memory.chunks_of("g1", "c3")} == {2}


async def test_isolation_between_chats(env: tuple[NovelRepo, FailingStore, PlotMemory]) -> None:
    _repo, _store, memory = env
    await add(memory, "g1", "c1", "甲")
    await add(memory, "g2", "d1", "甲")
    hits1 = await memory.search("g1", "甲 青岚渡口", limit=50)
    hits2 = await memory.search("g2", "甲 青岚渡口", limit=50)
    assert hits1 and {h.chapter_id for h in hits1} == {"c1"}
    assert hits2 and {h.chapter_id for h in hits2} == {"d1"}


@pytest.mark.parametrize(
    ("method", "k", "current_after"),
    [
        ("upsert", 1, 1),  # crash while indexing the new version → v1 stays current
        ("set_extra", 1, 2),  # after the SQLite flip, before marking → v2 after reconcile
        ("delete", 1, 2),  # before the old chunks are removed → v2 after reconcile
    ],
)
async def test_crash_between_steps_then_reconcile(
    env: tuple[NovelRepo, FailingStore, PlotMemory], method: str, k: int, current_after: int
) -> None:
    repo, store, memory = env
    await add(memory, "g1", "c1", "甲")
    store.fail = {method: (store.calls.get(method, 0) + k)}
    with pytest.raises(Crash):
        await memory.add_version(
            chat_id="g1",
            chapter_id="c1",
            chapter_no=1,
            draft=Draft(
                title="甲二",
                text=chapter_text("甲二"),
                summary=ChapterSummary(summary="x"),
                author="t",
                reason="r",
                now=NOW,
            ),
        )
    store.fail = {}
    truth = await repo.book.current_map("g1")
    assert truth["c1"] == (1, current_after)
    # Even before reconcile no search returns a non-current version.
    for _, version, _ in await visible(memory, "g1", "甲 甲二 青岚渡口"):
        assert version == current_after
    report = await memory.reconcile("g1")
    assert await stored_versions(store, "g1", "c1") == {current_after: {True}}
    title = "甲" if current_after == 1 else "甲二"
    assert await visible(memory, "g1", "甲 甲二 青岚渡口") == {(1, current_after, title)}
    assert report.removed + report.activated + report.reindexed >= (0 if method == "upsert" else 1)


async def test_crash_during_delete_and_reindex_missing(
    env: tuple[NovelRepo, FailingStore, PlotMemory],
) -> None:
    _repo, store, memory = env
    await add(memory, "g1", "c1", "甲")
    await add(memory, "g1", "c2", "乙")
    store.fail = {"delete": store.calls.get("delete", 0) + 1}
    with pytest.raises(Crash):
        await memory.delete_chapter("g1", "c1")
    store.fail = {}
    # SQLite already says: c1 gone, c2 is chapter 1 — the double check hides c1 at once.
    assert {t for _, _, t in await visible(memory, "g1", "甲 乙 青岚渡口")} == {"乙"}
    # Lose c2's chunks entirely (e.g. a store restored from an old backup).
    await store.inner.delete(Filter(equals={"namespace": "novel:g1", "doc_id": "c2"}))
    report = await memory.reconcile("g1")
    assert report.reindexed == 1 and report.removed > 0
    assert await stored_versions(store, "g1", "c1") == {}
    assert await visible(memory, "g1", "甲 乙 青岚渡口") == {(1, 1, "乙")}
    assert {c.extra["chapter_no"] for c in await memory.chunks_of("g1", "c2")} == {1}


async def _chapter(memory: PlotMemory, cid: str, text: str, summary: dict[str, object]) -> None:
    await memory.add_chapter(
        chat_id="g1",
        chapter_id=cid,
        draft=Draft(
            title=cid,
            text=text,
            summary=ChapterSummary.model_validate(summary),
            author="t",
            reason="test",
            now=NOW,
        ),
    )


async def test_selective_tag_track_boosts_a_goal_characters_chunks(
    env: tuple[NovelRepo, FailingStore, PlotMemory],
) -> None:
    """L2's third ranking: the chunks tagged with a character the goal names are boosted when
    the tag is selective (few chunks carry it); a tag most chunks carry boosts nothing."""
    _repo, _store, memory = env
    for n in range(1, 16):
        text = (
            f"第{n}回。林远在渡口等船，江风很冷，灯火摇晃，船夫们收网，江风又起，渡口灯火第{n}夜。"
        )
        await _chapter(memory, f"c{n}", text, {"summary": f"第{n}回"})
    await _chapter(memory, "c16", "林远想起沈默在听潮阁里抚琴，琴声穿过竹林。", {"summary": "抚琴"})
    [tagged] = await memory.chunks_of("g1", "c16")
    assert "沈默" in tagged.extra["tags"] and "林远" in tagged.extra["tags"]
    query = "江风 渡口 灯火 船夫"
    plain = await memory.search("g1", query, limit=6)
    assert len(plain) == 6 and "c16" not in [h.chapter_id for h in plain]  # similarity alone
    boosted = await memory.search("g1", query, limit=6, tags=["沈默"])
    assert boosted[0].chapter_id == "c16" and "沈默" in boosted[0].tags
    assert [h.chapter_id for h in boosted[1:]] == [h.chapter_id for h in plain[:5]]
    # 林远 is in every chunk (above SELECTIVE): no third ranking, the same hits in the same order
    common = await memory.search("g1", query, limit=6, tags=["林远"])
    assert [(h.chapter_id, h.score) for h in common] == [(h.chapter_id, h.score) for h in plain]


def test_scene_and_event_tags_match_a_paraphrase_by_bigrams() -> None:
    """The summariser paraphrases: a scene or event tags the chunk sharing most of its
    character bigrams (≥ 60%, else the single best chunk at ≥ 30%), never by verbatim match."""
    from novel.memory import chunk_tags

    pieces = [
        "夜里，林远把小船系在青岚江边的老渡口，江水拍着石阶。",
        "苏晴提着灯笼在船头等他，风把火苗吹得很低。",
    ]
    summary = ChapterSummary(
        summary="系船",
        scenes=["老渡口的江边"],  # reordered: not a substring of either chunk
        events=["苏晴提灯笼等他", "船头的苏晴举灯", "霍三封锁江面"],
    )
    for phrase in ("老渡口的江边", "苏晴提灯笼等他", "船头的苏晴举灯"):
        assert all(phrase not in p for p in pieces)
    tags = chunk_tags(pieces, {"林远": "林远", "苏晴": "苏晴", "阿远": "林远"}, summary)
    assert tags[0] == ["林远", "老渡口的江边"]
    assert tags[1] == ["苏晴", "苏晴提灯笼等他", "船头的苏晴举灯"]  # ≥ 60%, then best at 33%
    assert all("霍三封锁江面" not in t for t in tags)  # shares no bigram: tags nothing


async def test_a_paraphrased_scene_tag_is_stored_and_filters_in_the_store(
    env: tuple[NovelRepo, FailingStore, PlotMemory],
) -> None:
    _repo, store, memory = env
    text = "夜里，林远把小船系在青岚江边的老渡口，江水拍着石阶。"
    await _chapter(memory, "c1", text, {"summary": "系船", "scenes": ["老渡口的江边"]})
    flt = Filter(equals={"namespace": namespace("g1"), "x_tags": ["老渡口的江边"]})
    kinds = sorted(str(c.extra["kind"]) for c in await store.inner.scroll(flt))
    assert kinds == ["plot", "summary"]  # the chunk by bigrams, the summary point by its scenes
