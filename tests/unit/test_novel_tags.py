"""Scene and event tags named one way across chapters, and the goal's tags filtering the
plot-memory search first (Qdrant Edge + SQLite), with the unfiltered fallback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from novel.blueprint import default_blueprint
from novel.memory import MIN_FILTERED, SELECTIVE, PlotHit, PlotMemory, chunk_tags, fuse_hits
from novel.repo import Draft, NovelRepo
from novel.summary import ChapterSummary
from novel.tags import EVENT, SCENE, event_tags, known_places, scene_name, scene_tags
from novel.writer import Goal, goal_tags
from retrieval.fakes import HashEmbedder
from retrieval.store.edge import EdgeStore
from tests.novel_room import sparse

NOW = datetime(2026, 11, 1, tzinfo=UTC)
BP = default_blueprint()  # places: 青岚渡 青岚江 江心岛 听潮阁 漕帮总舵

# Four chapters written for this test: the same scene and the same kind of event, told in
# other words each time, with the scenes and events a model summary would list for them.
CHAPTERS = [
    (
        "夜深了，林远独自登上听潮阁的二楼，推开临江的窗。他对着江水立下重誓：不查清师父的下落，"
        "绝不离开青岚渡。",
        {"scenes": ["听潮阁二楼"], "events": ["林远在窗前立誓"]},
    ),
    (
        "三天后，苏晴在听潮阁里找到了他。她说：“你发过的誓，我都听见了。”林远没有回头。",
        {"scenes": ["听潮阁内"], "events": ["苏晴提起林远的誓言"]},
    ),
    (
        "沈默从江心岛回来，船一靠岸就直奔听潮阁。他跪在师父的灵位前起誓，要替师门讨回公道。",
        {"scenes": ["江心岛", "听潮阁灵堂"], "events": ["沈默跪地起誓"]},
    ),
    (
        "漕帮总舵灯火通明。霍三拍着桌子，逼手下人发毒誓，谁走漏了风声就沉江。",
        {"scenes": ["漕帮总舵大厅"], "events": ["霍三逼人发毒誓"]},
    ),
]


def _chapter_tags(text: str, summary: dict[str, list[str]], *, new: bool) -> set[str]:
    if not new:  # issue 12's: the summary's own phrases, matched by bigrams
        return set(chunk_tags([text], {}, ChapterSummary(summary="…", **summary))[0])
    places = known_places(BP.places, summary["scenes"])
    return set(scene_tags(text, places) + event_tags(text))


def test_the_same_scene_and_event_are_one_tag_in_every_chapter() -> None:
    """Measured: the distinct tags that name 听潮阁 (chapters 1–3) and a vow (all four) —
    before, one per chapter (the summary's phrase); now one in all."""
    before = [_chapter_tags(t, s, new=False) for t, s in CHAPTERS]
    after = [_chapter_tags(t, s, new=True) for t, s in CHAPTERS]
    pavilion_before = {t for tags in before[:3] for t in tags if "听潮阁" in t}
    vow_before = {t for tags in before for t in tags if "誓" in t}
    # a name per chapter (chapter 1's vow phrase shares too few bigrams to tag anything)
    assert len(pavilion_before) == 3 and len(vow_before) == 3
    for tags in after[:3]:
        assert SCENE + "听潮阁" in tags
    assert {t for tags in after for t in tags if "听潮阁" in t} == {SCENE + "听潮阁"}
    assert all(EVENT + "发誓" in tags for tags in after)
    assert SCENE + "江心岛" in after[2] and SCENE + "漕帮总舵" in after[3]
    assert {t for tags in after for t in tags if t.startswith(SCENE)} == {
        SCENE + p for p in ("听潮阁", "青岚渡", "江心岛", "漕帮总舵")
    }


def test_a_scene_phrase_is_cut_to_its_place() -> None:
    assert scene_name("听潮阁二楼", BP.places) == "听潮阁"
    assert scene_name("江心岛上", []) == "江心岛"
    assert scene_name("福来客栈门口", []) == "福来客栈"
    assert scene_name("客栈二楼里", []) == "客栈"
    assert scene_name("里", []) == "" and scene_name("  ", []) == ""
    # a longer known place hides the shorter one inside it
    assert scene_tags("他在青岚渡口等船。", ["青岚渡", "渡口"]) == [SCENE + "青岚渡"]


def test_the_goal_is_tagged_by_the_same_rules() -> None:
    goal = Goal("旧誓", "林远回到听潮阁二楼，想起自己发过的誓")
    assert goal_tags(BP, goal) == [SCENE + "听潮阁", EVENT + "发誓"]
    # a scene an earlier chapter's summary named (not in the blueprint) tags the goal too
    assert SCENE + "福来客栈" in goal_tags(
        BP, Goal("客栈夜话", "众人聚在福来客栈"), ["福来客栈门口"]
    )
    assert goal_tags(BP, Goal("", "")) == []


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[PlotMemory]:
    repo = await NovelRepo.open(tmp_path / "novel.sqlite3")
    store = await EdgeStore.open(tmp_path / "qdrant", 64)
    await repo.world.ensure_novel("g1", BP.to_json(), NOW)
    yield PlotMemory(repo, store, HashEmbedder(64), sparse)
    await store.close()
    await repo.close()


async def _novel(memory: PlotMemory, chapters: int, vows: int) -> None:
    """`chapters` one-chunk chapters of ferry filler; the first `vows` also swear an oath."""
    for n in range(1, chapters + 1):
        text = f"第{n}夜，江风吹着渡口的灯火，船夫们收网回家，江面上一片漆黑，渡口灯火第{n}夜。"
        if n <= vows:
            text = f"第{n}夜，苏晴在灯下发誓，要等林远回来，渡口的灯火一夜没灭。"
        await memory.add_chapter(
            chat_id="g1",
            chapter_id=f"c{n}",
            draft=Draft(
                title=f"第{n}回",
                text=text,
                summary=ChapterSummary(summary=f"第{n}回"),
                author="t",
                reason="test",
                now=NOW,
            ),
        )


VOW = EVENT + "发誓"
QUERY = "江风 渡口 灯火 船夫"


async def test_the_goals_tags_filter_first_and_the_rest_is_filled(memory: PlotMemory) -> None:
    """With event tags counting (`events=True`; issue 23's first rule)."""
    vows = MIN_FILTERED + 1
    await _novel(memory, 40, vows)
    assert vows <= SELECTIVE * 40  # a selective tag
    plain = await memory.search("g1", QUERY, limit=6)
    assert sum(VOW in h.tags for h in plain) < 6  # similarity alone mixes them in
    filtered = await memory.search("g1", QUERY, limit=6, tags=[VOW, "林远"], events=True)
    assert len(filtered) == 6 and all(VOW in h.tags for h in filtered)
    # more wanted than the filter matches: the tagged chunks first, the unfiltered rest after
    wide = await memory.search("g1", QUERY, limit=vows + 4, tags=[VOW], events=True)
    assert [VOW in h.tags for h in wide] == [True] * vows + [False] * 4
    assert len({h.chapter_id for h in wide}) == vows + 4
    # a tag nobody carries, or one most chunks carry, filters nothing
    for tags in (["事件:婚约"], [EVENT + "发誓", SCENE + "听潮阁"][1:]):
        assert [h.chapter_id for h in await memory.search("g1", QUERY, limit=6, tags=tags)] == [
            h.chapter_id for h in plain
        ]


async def test_too_few_tagged_chunks_fall_back_to_the_unfiltered_search(
    memory: PlotMemory,
) -> None:
    """Fewer than MIN_FILTERED chunks carry the goal's tags: no filter, the tagged chunks only
    boosted (the same hits as with the filter switched off)."""
    await _novel(memory, 40, MIN_FILTERED - 1)
    hits = await memory.search("g1", QUERY, limit=6, tags=[VOW], events=True)
    unfiltered = await memory.search(
        "g1", QUERY, limit=6, tags=[VOW], events=True, min_filtered=1 << 30
    )
    assert [(h.chapter_id, h.score) for h in hits] == [(h.chapter_id, h.score) for h in unfiltered]
    assert 0 < sum(VOW in h.tags for h in hits) < 6


def _hit(key: str) -> PlotHit:
    return PlotHit(1, key, 1, "", key, (), 0.0)


def test_filtered_and_unfiltered_hits_meet_by_rank_fusion() -> None:
    """RRF over the two lists: a hit in both first, then by reciprocal rank, and on a tie the
    filtered hit before the unfiltered one."""
    fused = fuse_hits([_hit("a"), _hit("b"), _hit("c")], [_hit("d"), _hit("a"), _hit("e")], 4)
    assert [h.text for h in fused] == ["a", "d", "b", "c"]
    assert [h.text for h in fuse_hits([_hit("a"), _hit("b")], [_hit("c"), _hit("d")], 3)] == [
        "a",
        "c",
        "b",
    ]


async def test_the_filter_never_pushes_out_the_unfiltered_best(memory: PlotMemory) -> None:
    """Enough tagged chunks to filter: the hits are the filtered and the unfiltered search's,
    fused — the tagged chunks gain ranks, but the unfiltered search's best hits stay in."""
    vows = MIN_FILTERED + 1
    await _novel(memory, 40, vows)
    tags = [VOW, "林远"]
    filtered = await memory.search("g1", QUERY, limit=6, tags=tags, events=True)
    unfiltered = await memory.search(
        "g1", QUERY, limit=6, tags=tags, events=True, min_filtered=1 << 30
    )
    hits = await memory.search("g1", QUERY, limit=6, tags=tags, events=True, merge="fuse")
    ids = [h.chapter_id for h in hits]
    assert len(ids) == 6 == len(set(ids))
    assert all(VOW in h.tags for h in filtered)
    untagged = [h.chapter_id for h in unfiltered if VOW not in h.tags]
    assert untagged  # similarity mixes filler in; the filter alone would drop it
    assert untagged[0] in ids and filtered[0].chapter_id in ids
    assert set(ids) <= {h.chapter_id for h in filtered + unfiltered}
    assert sum(VOW in h.tags for h in hits) >= sum(VOW in h.tags for h in unfiltered)
    assert ids == [h.chapter_id for h in fuse_hits(filtered, unfiltered, 6)]


async def test_event_tags_neither_filter_nor_boost_the_plot_search(memory: PlotMemory) -> None:
    """The chosen rule (issue 23, measured): the goal's characters and scenes filter L2, its
    event tags do not — with them counting, every hit would be a vow chunk."""
    await _novel(memory, 40, MIN_FILTERED + 1)
    plain = await memory.search("g1", QUERY, limit=6)
    assert [h.chapter_id for h in await memory.search("g1", QUERY, limit=6, tags=[VOW])] == [
        h.chapter_id for h in plain
    ]
    with_events = await memory.search("g1", QUERY, limit=6, tags=[VOW], events=True)
    assert all(VOW in h.tags for h in with_events)
    assert sum(VOW in h.tags for h in plain) < 6
