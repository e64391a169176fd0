"""Where a sentence puts someone stops before what they do there: 「钱七在岛边守着船」 puts
钱七 at 岛边, not at a place called 岛边守着船 (issue 23)."""

from __future__ import annotations

import pytest

from novel import narrative
from novel.reading import read, whereabouts

KNOWN = ["江心岛", "青岚渡", "听潮阁"]


@pytest.mark.parametrize(
    ("sentence", "place"),
    [
        ("钱七在岛边守着船", "岛边"),
        ("苏晴在岸边等着渡船", "岸边"),
        ("林远在河边看着船", "河边"),
        ("霍三在江边坐着喝酒", "江边"),
        ("柳娘在山下等着船家", "山下"),
        ("周冲在城外守了三天城", "城外"),
        ("白鹭在渡口看着江水", "渡口"),  # already right: the shortest place phrase
        ("韩七在小镇上等着信", "小镇"),
        ("钱七在江心岛边守着船", "江心岛"),  # a known place keeps its name
    ],
)
def test_the_place_stops_before_the_verb(sentence: str, place: str) -> None:
    where = narrative.presence(sentence, 2, KNOWN)
    assert where is not None and where.place == place, (sentence, where)


@pytest.mark.parametrize(
    "sentence",
    ["林远在沙滩看着船", "苏晴在亭子里等着船家", "钱七在石滩上守过船", "霍三在沙洲睡了一觉"],
)
def test_a_verb_and_its_object_are_never_part_of_a_place(sentence: str) -> None:
    where = narrative.presence(sentence, 2, KNOWN)
    place = where.place if where is not None else None
    assert place is None or not any(v in place for v in "着了过"), (sentence, place)
    assert all(not any(v in p for v in "着了过") for p in narrative.places_in(sentence, KNOWN))


@pytest.mark.parametrize(
    ("sentence", "places"),
    [
        ("周冲回到了雁回城，天已经黑了。", ["雁回城"]),
        ("他们赶到了铁马关，城门已经关了。", ["铁马关"]),
        ("她走进了关城大牢。", ["关城大牢"]),
        ("林远来到了江心岛的渡口。", ["江心岛"]),
        ("他在了解县城的情况，没有出门。", []),  # 了解 is a verb, not 了 + a place
    ],
)
def test_an_aspect_le_after_a_movement_verb_is_not_part_of_the_place(
    sentence: str, places: list[str]
) -> None:
    assert narrative.places_in(sentence, KNOWN) == places


def test_whereabouts_of_a_character_guarding_a_boat() -> None:
    names = narrative.NameIndex({"钱七": "钱七", "林远": "林远"}, KNOWN)
    text = "钱七在岛边守着船。林远在河边看着江水。"
    steps = whereabouts(read(text, names, {}), KNOWN)
    assert [(s.canon, s.place) for s in steps] == [("钱七", "岛边"), ("林远", "河边")]
    assert narrative.places_in(text, KNOWN) == []  # a side of a place is not a new place


def test_the_side_of_the_place_one_is_at_is_not_a_second_place() -> None:
    from novel.blueprint import default_blueprint
    from novel.consistency import StoryState, check_rules

    state = StoryState(default_blueprint())
    for fine in (
        "林远站在江心岛上。林远在岛边守着船。",
        "苏晴站在青岚江上的船头。苏晴在江边看着水。",
    ):
        assert [f.kind for f in check_rules(fine, state)] == [], fine
    found = check_rules("林远站在江心岛上。林远在河边看着船。", state)
    assert [f.kind for f in found] == ["two_places"]
