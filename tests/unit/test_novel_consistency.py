"""The offline consistency rules, the model's verified findings, the extractive summary and
the blueprint proposals it feeds — each rule with the cases that must NOT fire."""

from __future__ import annotations

import json

from novel.blueprint import default_blueprint, edit
from novel.consistency import StoryState, check, check_rules, parse_judgement
from novel.evolve import BlueprintChange, propose
from novel.story_state import replay
from novel.summary import extractive_summary, parse_summary
from retrieval.llm.scripted import ScriptedLLM

BP = edit(default_blueprint(), "characters.沈默.status", "已死亡")
STATE = StoryState(BP)


def kinds(text: str, state: StoryState = STATE) -> list[str]:
    return [f.kind for f in check_rules(text, state)]


def test_dead_character_acting_or_speaking() -> None:
    assert kinds("沈默站在船头，冷冷地说：“你来晚了。”") == ["dead_acts"]
    assert kinds("“走吧。”沈师父低声道。") == ["dead_acts"]  # an alias
    # memories, graves, other people's speech, the death itself: not a violation
    for fine in (
        "林远想起沈默当年教他撑船的样子。",
        "苏晴说：“沈默说过，江底有钟。”",
        "林远跪在沈默的墓前。",
        "沈默死了三个月了。",
        "沈默的旧船还系在渡口。",
    ):
        assert kinds(fine) == [], fine


def test_unknown_name_used_as_if_known() -> None:
    found = check_rules("林远回头，赵六点了点头。", STATE)
    assert [(f.kind, f.fields["name"]) for f in found] == [("unknown_name", "赵六")]
    assert kinds("王掌柜在门口喊道：“打烊了！”") == ["unknown_name"]
    # introduced names, known names and aliases, and common words are fine
    for fine in (
        "一个名叫钱七的老船夫摇着橹过来，钱七说：“上船吧。”",
        "阿远笑了笑，晴儿也笑了。",
        "老人说：“风大。”众人点头。",
        "林公子，”船夫说，“上船吧。”",
    ):
        assert kinds(fine) == [], fine
    known = StoryState(BP).knowing(["钱七"])
    assert kinds("钱七说：“走。”", known) == []  # known from an earlier chapter


def test_one_character_in_two_places_in_one_scene() -> None:
    found = check_rules("林远站在江心岛的码头上。林远在青岚渡的茶棚里喝茶。", STATE)
    assert [f.kind for f in found] == ["two_places"]
    assert found[0].fields == {"name": "林远", "place": "江心岛", "other": "青岚渡"}
    for fine in (
        "林远站在江心岛上。他撑船回到青岚渡。林远在青岚渡的茶棚里喝茶。",  # he moved
        "林远站在江心岛上。\n\n第二天，林远在青岚渡喝茶。",  # another scene
        "林远站在江心岛上。\n\n* * *\n\n林远在青岚渡喝茶。",  # a scene break
        "林远在渡口等着。林远在青岚渡口来回踱步。",  # the same place, named twice
    ):
        assert kinds(fine) == [], fine


def test_explicit_blueprint_rules() -> None:
    assert kinds("苏晴念动咒语，施展法术，江水倒流。") == ["rule_broken"]
    # a wound healed too soon is its own slip since issue 42 (it was a rule_broken finding)
    assert kinds("霍三中了一刀，倒在地上。第二天，霍三毫发无伤地站了起来。") == ["healed_too_soon"]
    hurt_before = replay(BP, ["霍三中了一刀，倒在地上。"])  # hurt in the chapter before
    assert kinds("霍三健步如飞地冲上船头。", hurt_before) == ["healed_too_soon"]
    for fine in (
        "苏晴笑道：“这世上哪有什么法术。”",  # someone's speech
        "苏晴不会法术，只会熬药。",  # negated
        "霍三健步如飞地冲上船头。",  # never hurt
    ):
        assert kinds(fine) == [], fine
    no_rules = StoryState(default_blueprint().model_copy(update={"rules": []}))
    assert kinds("苏晴施展法术。", no_rules) == []


def test_model_findings_are_kept_only_with_a_verified_quote() -> None:
    text = "夜里下雨。\n\n第三天清晨，林远才出发。"
    answer = (
        "好的\n```json\n"
        + json.dumps(
            {
                "findings": [
                    {"class": "timeline", "quote": "第三天清晨林远才出发", "rule": "r", "fix": "f"},
                    {"class": "facts", "quote": "不在正文里的句子", "rule": "r"},
                    {"class": "gossip", "quote": "夜里下雨。", "rule": "r"},
                    "garbage",
                ]
            },
            ensure_ascii=False,
        )
        + "\n```"
    )
    [f] = parse_judgement(answer, text)
    assert f.kind == "timeline" and f.quote == "第三天清晨，林远才出发。" and f.source == "model"
    assert parse_judgement("不是 JSON", text) == []
    assert parse_judgement('{"findings": "none"}', text) == []


async def test_check_merges_rules_and_model_without_duplicates() -> None:
    text = "沈默站在船头说：“走。”\n\n第三天清晨，林远才出发。"
    answer = json.dumps(
        {
            "findings": [
                {"class": "characters", "quote": "沈默站在船头说：“走。”", "rule": "已死"},
                {"class": "timeline", "quote": "第三天清晨，林远才出发。", "rule": "时间"},
            ]
        },
        ensure_ascii=False,
    )
    found = await check(text, STATE, llm=ScriptedLLM([answer]), number=2)
    assert [(f.kind, f.source) for f in found] == [("dead_acts", "rules"), ("timeline", "model")]
    broken = await check(text, STATE, llm=ScriptedLLM([]), number=2)  # a failing model
    assert [f.kind for f in broken] == ["dead_acts"]


def test_extractive_summary_and_the_blueprint_proposals_it_feeds() -> None:
    text = (
        "夜色沉沉，林远提着灯走到青岚渡口。苏晴在船头等他。\n\n"
        "霍三死了。一个名叫钱七的老船夫说：“漕帮要封江。”林远拜沈默为师已经十年。"
    )
    summary = extractive_summary(text, "夜渡", default_blueprint())
    assert summary.extractive and summary.title == "夜渡"
    assert all(part in text for part in summary.summary.split("。") if part)
    assert len(summary.summary) <= 150
    assert {"林远", "苏晴", "霍三", "钱七"} <= set(summary.characters)
    assert "青岚渡" in summary.scenes
    assert [(c.name, c.status) for c in summary.status_changes] == [("霍三", "已死亡")]
    changes = propose(default_blueprint(), summary)
    keys = {(c.kind, c.name, c.value) for c in changes}
    assert ("status", "霍三", "已死亡") in keys
    assert ("character", "钱七", next(c.value for c in changes if c.name == "钱七")) in keys
    # 林远拜沈默为师 — the blueprint already says 沈默 is 林远's 师父: no proposal
    assert not any(c.kind == "relationship" and c.other == "沈默" for c in changes)
    applied = BlueprintChange("status", "霍三", "已死亡").apply(default_blueprint())
    assert applied.character("霍三").status == "已死亡"  # type: ignore[union-attr]
    # a pending identical proposal is not made twice
    assert not any(c.name == "霍三" for c in propose(default_blueprint(), summary, changes))


def test_model_summary_with_world_changes_is_parsed_leniently() -> None:
    parsed = parse_summary(
        '{"summary": "s", "status_changes": [{"name": "霍三", "status": "已死亡"}, {"x": 1}],'
        ' "new_characters": "钱七", "relationships": [{"a": "林远", "b": "苏晴", "relation": "恋人"}],}'
    )
    assert parsed is not None
    assert [(c.name, c.status) for c in parsed.status_changes] == [("霍三", "已死亡")]
    assert parsed.new_characters == []
    changes = propose(default_blueprint(), parsed)
    assert ("relationship", "林远", "恋人", "苏晴") in {
        (c.kind, c.name, c.value, c.other) for c in changes
    }


def test_issue_23_names_roles_and_parts_of_a_place() -> None:
    # an unintroduced full name at a sentence head is a name; a title or a role is not
    found = check_rules("林远收起缆绳。郁长庚推门进来，在火盆边坐下。", STATE)
    assert [(f.kind, f.fields["name"]) for f in found] == [("unknown_name", "郁长庚")]
    for fine in (
        "掌柜把算盘一推，笑了。",
        "船夫摇着橹，一声不吭。",
        "司狱打开了牢门，朝里面喊了一声。",
        "马车夫回过头来，说要下雨了。",
        "老船夫孟三站在船头。孟三说：“上船吧。”",  # introduced by role
    ):
        assert kinds(fine) == [], fine
    # parts of the current place (门口, 窗边, 楼上) are not a second place
    for fine in (
        "林远站在青岚渡的茶棚门口。林远靠在窗边，看着江面。林远在楼上坐下。",
        "苏晴坐在听潮阁的书房里。苏晴走到窗边。苏晴站在门外听了一会儿。",
    ):
        assert kinds(fine) == [], fine
    found = check_rules("林远站在青岚渡的茶棚门口。林远此刻正在江心岛上。", STATE)
    assert [f.kind for f in found] == ["two_places"]
    assert found[0].fields["place"] == "青岚渡" and found[0].fields["other"] == "江心岛"
    # 没有夸张的法术 also rules out a spell by another word
    assert kinds("苏晴低声念起咒语，江面上起了一层雾。") == ["rule_broken"]
