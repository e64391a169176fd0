"""The story-state replay gives the same state it gave before it was made fast (issue 23).

`tests/data/story-replay-golden.json` holds the states the original replay (commit 853c6c7,
before the overlap sweep and the per-chapter caches) computed on the team's own original prose:
the issue-23 planted set's nine worlds chapter by chapter, every planted slip read against the
story before it, all the worlds' chapters as one story under the default blueprint (many names
the state does not know), and the test seed. Regenerate only when behaviour is meant to change:

    .venv/bin/python -m tests.unit.test_story_replay_golden
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from novel.blueprint import Blueprint, default_blueprint
from novel.narrative import NameIndex
from novel.story_state import REPLAYS, StoryState, advance, replay
from tests.story_seed import CHAPTERS

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "story-replay-golden.json"
WORLDS = ROOT / "bench" / "data" / "consistency"


def _state(state: StoryState) -> dict[str, object]:
    """The state in a stable, comparable shape (the frozenset sorted)."""
    return {
        "chapters": state.chapters,
        "characters": [
            [
                c.name,
                None
                if c.status is None
                else [c.status.status, c.status.chapter, c.status.sentence],
                None if c.seen is None else [c.seen.place, c.seen.chapter, c.seen.sentence],
                c.fresh_wound,
            ]
            for c in state.characters
        ],
        "introduced": [[i.name, i.chapter, i.sentence, i.formal] for i in state.introduced],
        "places": list(state.places),
        "surnames": sorted(state.surnames),
    }


def _planted(text: str, after: str, slip: str) -> str:
    at = text.index(after) + len(after)
    return text[:at] + slip + text[at:]


def stories() -> Iterator[tuple[str, dict[str, object]]]:
    everything: list[str] = []
    for path in sorted(WORLDS.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        bp = Blueprint.model_validate(data["blueprint"])
        chapters = [str(c["text"]).strip() for c in data["chapter"]]
        everything += chapters
        before = [StoryState(bp)]
        for text in chapters:
            before.append(advance(before[-1], text))
        for k, state in enumerate(before[1:], 1):
            yield f"{path.stem} after {k}", _state(state)
        for n, p in enumerate(data.get("plant", [])):
            k = int(p["chapter"])
            text = _planted(chapters[k - 1], str(p["after"]), str(p["text"]))
            yield f"{path.stem} plant {n}", _state(advance(before[k - 1], text))
    state = StoryState(default_blueprint())
    for text in everything:
        state = advance(state, text)
    yield "all worlds", _state(state)
    state = StoryState(default_blueprint())
    for k, (_, text) in enumerate(CHAPTERS, 1):
        state = advance(state, text)
        yield f"seed after {k}", _state(state)


def test_replay_matches_the_original_algorithm() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = dict(stories())
    assert sorted(now) == sorted(golden)
    for name, state in now.items():
        assert state == golden[name], name


def test_kept_replays_give_the_state_of_a_full_replay() -> None:
    """Replaying again after a chapter is added, revised or deleted reads only what changed,
    and gives the state the original algorithm gave for those chapters."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    data = tomllib.loads((WORLDS / "w1-yanhui.toml").read_text(encoding="utf-8"))
    bp = Blueprint.model_validate(data["blueprint"])
    chapters = [str(c["text"]).strip() for c in data["chapter"]]
    REPLAYS.clear()
    for k in range(1, len(chapters) + 1):  # one chapter more each time: a save
        assert _state(replay(bp, chapters[:k])) == golden[f"w1-yanhui after {k}"]
    plant = data["plant"][0]
    k = int(plant["chapter"])
    revised = _planted(chapters[k - 1], str(plant["after"]), str(plant["text"]))
    assert _state(replay(bp, [*chapters[: k - 1], revised])) == golden["w1-yanhui plant 0"]
    assert _state(replay(bp, chapters[:2])) == golden["w1-yanhui after 2"]  # deleted after 2
    state = replay(bp.model_copy(update={"title": "别的书"}), chapters[:1])  # another blueprint
    assert state.blueprint.title == "别的书"
    assert replay(bp, chapters[:1], known=["外人"]).known == ("外人",)


def _occurrences_quadratic(index: NameIndex, text: str) -> list[tuple[int, int, str]]:
    """`NameIndex.occurrences` as first written: every hit checked against every kept one."""
    hits = []
    for start in range(len(text)):
        longest = next((a for a in index._ordered if text.startswith(a, start)), None)
        if longest is not None:
            hits.append((start, start + len(longest), longest))
    hits.sort(key=lambda h: (-(h[1] - h[0]), h[0]))
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str]] = []
    for start, end, alias in hits:
        if any(a < end and start < b for a, b in taken):
            continue
        taken.append((start, end))
        found.append((start, end, index.names[alias]))
    return sorted(found)


_LETTERS = "林远苏晴林沈师父远山晴儿王掌柜，。他说"


@settings(max_examples=300, deadline=None)
@given(
    aliases=st.lists(st.text(alphabet=_LETTERS, min_size=1, max_size=4), max_size=8),
    text=st.text(alphabet=_LETTERS, max_size=80),
)
def test_occurrences_match_the_quadratic_check(aliases: list[str], text: str) -> None:
    index = NameIndex({a: a[:1] + "·" + a for a in aliases})
    assert index.occurrences(text) == _occurrences_quadratic(index, text)


if __name__ == "__main__":
    GOLDEN.write_text(
        json.dumps(dict(stories()), ensure_ascii=False, indent=0) + "\n", encoding="utf-8"
    )
    print(f"wrote {GOLDEN}")
