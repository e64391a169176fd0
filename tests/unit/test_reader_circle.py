"""What a demanding writing circle saw wrong in `/novel characters` and the check (issue 42:
"statuses that follow the story"), each reduced to its general cause. Every text here was
written for these tests (none is a sentence of the bench's serials)."""

from __future__ import annotations

from novel.blueprint import Blueprint, Character
from novel.cast import extractive_lines
from novel.consistency import check_rules
from novel.evolve import BlueprintChange, propose
from novel.story_state import StoryState, replay
from novel.summary import ChapterSummary, NewCharacter, StatusChange

BP = Blueprint(
    title="盐岭",
    setting="架空的西南山地，盐井散落在山谷里。",
    places=["白崖镇", "卤井坪", "黑松坡", "渡鸦关", "青石驿"],
    rules=["这个世界没有火器。"],
    characters=[
        Character(name="程砚", description="盐工头"),
        Character(name="陶若溪", description="账房先生的女儿"),
        Character(name="葛老七", aliases=["七爷"], description="老井匠"),
    ],
)


def status(state: StoryState, name: str) -> str:
    c = state.character(name)
    return c.status.status if c is not None and c.status is not None else ""


# ---- a death belongs to the one right before it --------------------------------------------------


def test_a_death_with_its_own_subject_is_not_the_carried_subjects() -> None:
    # the clause after 名叫… has its own subject (爹娘): 七爷 is alive
    state = replay(BP, ["七爷说这孩子是他的外甥，名叫阿榆，爹娘都死在那年的山洪里。"])
    assert status(state, "葛老七") == ""


def test_knowing_someone_died_is_not_dying() -> None:
    state = replay(BP, ["陶若溪心里清楚葛老七早就死了，嘴上却什么也没说。"])
    assert status(state, "陶若溪") == ""
    assert status(state, "葛老七") == "dead"


def test_watching_her_die_is_not_dying() -> None:
    state = replay(BP, ["程砚守在床边，眼睁睁看着她断了气。"])
    assert status(state, "程砚") == ""


def test_a_death_after_a_place_or_a_time_is_still_the_subjects() -> None:
    assert status(replay(BP, ["程砚在回镇的山路上死了。"]), "程砚") == "dead"
    assert status(replay(BP, ["程砚在黑松坡死了。"]), "程砚") == "dead"
    assert status(replay(BP, ["程砚当天夜里就死了。"]), "程砚") == "dead"
    # a place of several words after 在 (镇东头/老/药铺) is still where, not who
    assert status(replay(BP, ["天快亮时，程砚在镇东头老药铺去世了。"]), "程砚") == "dead"
    assert status(replay(BP, ["程砚在市中心医院死了。"]), "程砚") == "dead"


def test_the_living_that_a_kin_death_was_told_of_act_without_a_finding() -> None:
    before = replay(BP, ["七爷说这孩子是他的外甥，名叫阿榆，爹娘都死在那年的山洪里。"])
    assert check_rules("第二天，七爷带着阿榆去了黑松坡。", before) == []


# ---- a thing that opens a clause with a negation is no name ----------------------------------------


def test_a_noun_and_a_negation_opening_a_clause_name_nobody() -> None:
    # 路 is a surname too, but 路/不好/走 is the road being bad going
    state = replay(BP, [])
    assert check_rules("山路不好走，程砚直到天黑才到卤井坪。", state) == []
    assert check_rules("路不好走，程砚直到天黑才到卤井坪。", state) == []
    assert [i.name for i in replay(BP, ["路不好走，程砚直到天黑才到卤井坪。"]).introduced] == []


def test_a_name_whose_surname_is_a_noun_still_acts() -> None:
    [finding] = check_rules("门大勇推开了窗，朝外面看了一眼。", replay(BP, []))
    assert finding.kind == "unknown_name"


# ---- wanting to go is not going -----------------------------------------------------------------


def place(state: StoryState, name: str) -> str:
    c = state.character(name)
    return c.seen.place if c is not None and c.seen is not None else ""


def test_wanting_to_go_back_with_words_between_is_not_being_there() -> None:
    wish = "程砚望着远处的山口，心里很想早一点回到白崖镇。"
    assert place(replay(BP, ["程砚押着车进了青石驿。", wish]), "程砚") == "青石驿"


def test_going_back_is_still_going() -> None:
    back = "程砚连夜赶路，第二天一早回到了白崖镇。"
    assert place(replay(BP, ["程砚押着车进了青石驿。", back]), "程砚") == "白崖镇"


# ---- a newcomer who names himself with a humble first person ------------------------------------


def test_a_newcomer_naming_himself_with_在下_is_introduced() -> None:
    text = (
        "茶铺里坐着一个穿灰衫的中年人。“客官面生得很，”那人拱了拱手，“在下韦砚秋，"
        "在关上贩些茶叶。”韦砚秋说完，又低头剥起了花生。"
    )
    assert check_rules(text, replay(BP, [])) == []


def test_a_name_used_without_being_introduced_is_still_a_finding() -> None:
    text = "茶铺里坐着一个穿灰衫的中年人。韦砚秋说完，又低头剥起了花生。"
    assert [f.kind for f in check_rules(text, replay(BP, []))] == ["unknown_name"]


# ---- the recap's lines keep their quotation marks --------------------------------------------------


def test_a_recap_line_never_opens_with_the_quote_mark_that_closes_the_line_before() -> None:
    summary = "七爷想了很久，只说：“这笔账迟早要算。”他是七爷托人请来的郎中。“走吧。”程砚说。"
    lines = extractive_lines(summary)
    assert lines == (
        "七爷想了很久，只说：“这笔账迟早要算。”",
        "他是七爷托人请来的郎中。",
        "“走吧。”",
    )
    assert all(line.count("“") == line.count("”") for line in lines)


# ---- a blade passing over someone's arm, leaving a wound ----------------------------------------


def test_a_blade_grazing_an_arm_and_leaving_a_cut_is_a_wound() -> None:
    text = "对方反手一挥，刀锋擦过陶若溪的左臂，划开一道口子，血顺着袖口往下滴。"
    [wound] = replay(BP, ["陶若溪在渡鸦关。", text]).wounds
    assert (wound.who, wound.body, wound.side) == ("陶若溪", "arm", "左")


def test_a_glance_or_a_sleeve_grazed_is_no_wound() -> None:
    assert replay(BP, ["程砚的目光扫过陶若溪的脸，她的眼角还有血丝。"]).wounds == ()
    assert replay(BP, ["刀锋擦过程砚的衣角，什么也没伤着。"]).wounds == ()


# ---- someone named by role, then given a surname ----------------------------------------------------


def test_a_role_given_a_surname_names_one_person_by_surname_and_role() -> None:
    text = (
        "两人进了驿站。驿丞是个瘦子，姓蒋，一见生人就皱眉。“找谁？”蒋驿丞把账本一合，"
        "“这几天没人来过。”"
    )
    assert check_rules(text, replay(BP, [])) == []
    after = replay(BP, [text])
    assert [i.name for i in after.introduced] == ["蒋驿丞"]  # one person, not 驿丞 and 蒋驿丞
    assert check_rules("第二天，蒋驿丞找来一根绳子。", after) == []


def test_a_surname_and_role_never_given_is_still_unknown() -> None:
    text = "两人进了驿站。“找谁？”蒋驿丞把账本一合，“这几天没人来过。”"
    assert [f.kind for f in check_rules(text, replay(BP, []))] == ["unknown_name"]


def test_a_blade_is_its_clauses_subject_so_him_is_the_one_it_cut() -> None:
    text = "陶若溪扑上来夺刀，程砚侧身一让，刀刃划过他的左臂，留下一道浅浅的口子。"
    [wound] = replay(BP, ["程砚在卤井坪。", text]).wounds
    assert wound.who == "程砚"  # the one who stepped aside, not the one grabbing at the knife


# ---- a newcomer is proposed to the blueprint once ----------------------------------------------


def test_a_newcomer_already_proposed_is_not_proposed_again_with_a_later_quote() -> None:
    earlier = BlueprintChange("character", "韦砚秋", "“在下韦砚秋，在关上贩些茶叶。”")
    later = ChapterSummary(
        summary="韦砚秋的货栈起了火。",
        new_characters=[NewCharacter(name="韦砚秋", description="原来是韦砚秋的货栈起了火。")],
    )
    assert propose(BP, later, [earlier]) == []
    assert [c.name for c in propose(BP, later, [])] == ["韦砚秋"]


def test_a_new_status_for_someone_with_a_pending_status_is_still_proposed() -> None:
    hurt = BlueprintChange("status", "程砚", "受伤", before="存活")
    dead = ChapterSummary(
        summary="程砚死了。", status_changes=[StatusChange(name="程砚", status="已死亡")]
    )
    assert [(c.kind, c.value) for c in propose(BP, dead, [hurt])] == [("status", "已死亡")]


# ---- a healed leg is not a healed arm -----------------------------------------------------------------


def test_saying_a_healed_leg_is_healed_is_no_finding_about_a_fresh_arm_wound() -> None:
    story = [
        "程砚的右腿被砍了一刀，血流不止。",
        "三个月过去了，程砚的腿终于好了。",
        "这天夜里，一支箭射中了程砚的左臂，留下一个血窟窿。",
    ]
    state = replay(BP, story)
    assert check_rules("第二天，程砚的腿早就不疼了，他的腿早就好了。", state) == []
    [finding] = check_rules("第二天，程砚的胳膊就全好了。", state)
    assert finding.kind == "healed_too_soon"


# ---- a healing rule about legs is about legs ---------------------------------------------------------

LEG_RULE = BP.model_copy(update={"rules": ["腿上的刀伤至少要两个月才能痊愈。"]})


def test_a_healing_rule_naming_the_leg_holds_for_leg_wounds_only() -> None:
    arm = replay(LEG_RULE, ["程砚的左臂被划了一刀，留下一道口子。"])
    leg = replay(LEG_RULE, ["程砚的左腿被砍了一刀，留下一道口子。"])
    assert arm.heal_days(arm.wounds[0]) < 60
    assert leg.heal_days(leg.wounds[0]) == 60
    assert check_rules("二十天过去了，程砚的胳膊已经好了。", arm) == []
    [finding] = check_rules("二十天过去了，程砚的腿已经好了。", leg)
    assert finding.kind == "healed_too_soon"
