"""The general causes behind the slips the blind test3 half showed the rules missing (issue 42
item 4): wounds, healing and time told in more words, pronouns after groups and possessors,
deaths told as lost breath, two places with the time said before the name, names that head a
clause with 在, and rules whose category is named by a hyponym. Every text here was written
for these tests (none is a sentence of the bench's serials)."""

from __future__ import annotations

import pytest

from novel import lexicon, timeline
from novel.blueprint import Blueprint, Character
from novel.consistency import check_rules
from novel.narrative import NameIndex, person_names
from novel.story_state import StoryState, gender, replay

BP = Blueprint(
    title="石渡",
    setting="清末，江边的石渡镇。从石渡镇坐船到府城，要走大半天。",
    places=["石渡镇", "茶馆", "码头", "关帝庙", "府城", "盐栈"],
    rules=[
        "这个世界没有钟表，报时靠打更。",
        "这时候还没有烟草，没有人抽烟。",
        "村里没有电。",
        "这个世界没有火药，也没有枪炮。",
        "伤筋动骨一百天。",
    ],
    characters=[
        Character(name="顾二", aliases=["二哥儿"], description="撑船的后生"),
        Character(name="周老板", description="茶馆的老板，留着山羊胡子"),
        Character(name="柳娘", description="码头上卖豆腐的寡妇"),
        Character(name="钱掌柜", description="盐栈的掌柜，面白无须"),
    ],
)
BROKEN = "顾二从船上摔下来，左腿从膝下折断了。郎中给他接了骨，上了夹板。"


def kinds(text: str, state: StoryState) -> list[str]:
    return [f.kind for f in check_rules(text, state)]


# ---- wounds and healing told in more words --------------------------------------------------------


def test_a_bone_broken_as_折断_is_a_broken_leg_set_by_a_healer_named_by_a_pronoun() -> None:
    hurt = replay(BP, [BROKEN])
    [wound] = hurt.wounds
    assert (wound.who, wound.body, wound.severity) == ("顾二", "leg", "bone")


@pytest.mark.parametrize(
    "healed",
    [
        "第二天，顾二腿上的骨头已经长结实了。",
        "过了五天，顾二的腿已经好了个七七八八，能下河撑船了。",
        "第三天傍晚，那条断腿竟已痊愈了。",  # no name: the one broken leg healing
    ],
)
def test_healing_told_as_bones_knitting_or_mostly_healed(healed: str) -> None:
    assert kinds(healed, replay(BP, [BROKEN])) == ["healed_too_soon"]


def test_better_but_not_healed_is_no_finding() -> None:
    assert kinds("过了十天，顾二的腿已经消了肿，只是还不能着地。", replay(BP, [BROKEN])) == []


@pytest.mark.parametrize(
    "slip",
    [
        "第二天，顾二一骨碌翻下床，抓起竹篙就走。",
        "第二天，顾二说罢翻下床，往码头去了。",
    ],
)
def test_what_a_broken_leg_forbids_with_the_subject_left_out(slip: str) -> None:
    assert kinds(slip, replay(BP, [BROKEN])) == ["wound_ignored"]


def test_archery_is_what_an_arm_wound_forbids() -> None:
    cut = replay(BP, ["钱掌柜的右臂挨了一刀，划开一道口子。"])
    assert kinds("第二天，钱掌柜弯弓搭箭，一箭射中了靶心。", cut) == ["wound_ignored"]


def test_time_flying_and_a_season_passing_move_the_clock() -> None:
    start = timeline.When(1, timeline.DAWN)
    assert timeline.move(start, "转眼过了一百多日，已是腊月。").day == 101
    assert timeline.move(start, "冬天终于过去了。").day == 91
    assert timeline.move(start, "和从前一样，他天不亮就起来了。") == start


# ---- pronouns, deaths -----------------------------------------------------------------------------------


def test_genders_read_from_older_words_and_patronymics() -> None:
    assert [gender(c) for c in BP.characters] == ["m", "m", "f", "m"]
    assert gender(Character(name="彼得·伊万诺维奇", description="磨坊主")) == "m"


def test_he_after_a_group_carrying_the_dead_is_the_dead_man() -> None:
    died = "钱掌柜早已没有了鼻息，身子都硬了。"
    assert set(replay(BP, [died]).dead()) >= {"钱掌柜"}
    slip = died + "伙计们把他抬进了后屋。他却忽然咳了两声，坐了起来。"
    assert kinds(slip, StoryState(BP)) == ["dead_acts"]


def test_a_verdict_on_when_someone_died_is_a_death() -> None:
    text = "柳娘倒在门槛上，一动不动。郎中看过以后，说她是三更前后死的。"
    assert "柳娘" in replay(BP, [text]).dead()


def test_the_dead_told_with_a_group_of_households_is_not_acting() -> None:
    dead = replay(BP, ["钱掌柜早已没有了鼻息，身子都硬了。"])
    assert kinds("钱掌柜无儿无女，街上的几户人家凑了些钱，替他买了一口棺材。", dead) == []


# ---- two places ----------------------------------------------------------------------------------------


def test_the_time_said_before_the_name_with_no_comma() -> None:
    scene = "这天夜里，周老板悄悄伏在盐栈的后门外。"
    assert kinds(scene + "这一夜周老板却在关帝庙里和人下棋。", StoryState(BP)) == ["two_places"]
    assert kinds(scene + "第二天一早，周老板回到关帝庙里下棋。", StoryState(BP)) == []


def test_there_is_the_place_the_sentence_before_named() -> None:
    lay = "钱掌柜想去盐栈取账本。周老板早就埋伏在那里了。"
    assert kinds(lay + "这时候，周老板却在茶馆里喝茶。", StoryState(BP)) == ["two_places"]
    assert kinds(lay + "第二天，周老板在茶馆里喝茶。", StoryState(BP)) == []


def test_a_far_town_named_in_the_setting_holds_no_other_place() -> None:
    scene = "盐栈的门虚掩着，钱掌柜正在里面点货。"
    assert kinds(scene + "其时钱掌柜却在府城里一家戏园中听戏。", StoryState(BP)) == ["two_places"]
    assert StoryState(BP).far_places() == ("府城",)


def test_a_stay_of_days_in_a_far_town_right_after_setting_out() -> None:
    went = "次日一早，钱掌柜上了船。他要在府城住上五六天，把账算清楚。"
    assert kinds(went + "当天傍晚，钱掌柜在关帝庙里烧香。", StoryState(BP)) == ["two_places"]
    assert kinds(went + "七天后，钱掌柜在关帝庙里烧香。", StoryState(BP)) == []
    plan = "钱掌柜说，他过些日子要在府城住上五六天。"  # no setting out: only a plan
    assert kinds(plan + "当天傍晚，钱掌柜在关帝庙里烧香。", StoryState(BP)) == []


def test_a_market_in_a_town_is_no_town() -> None:
    scene = "那天一早，顾二到了关帝庙。"
    assert kinds(scene + "可那天顾二一整天都在府城的集市上。", StoryState(BP)) == ["two_places"]


def test_a_question_about_a_place_puts_nobody_there() -> None:
    scene = "钱掌柜站在盐栈门口。"
    asked = "郎中问他，在府城里有没有亲戚。"
    assert kinds(scene + asked, StoryState(BP)) == []


# ---- names --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("slip", ["蒋平在船尾摇橹，一声不吭。", "瓦列里坐在门槛上抽泣。"])
def test_a_name_heading_a_clause_with_在_or_a_transliteration(slip: str) -> None:
    assert kinds(slip, StoryState(BP)) == ["unknown_name"]


def test_a_long_introduced_foreign_name_and_its_surname() -> None:
    text = "“您好，我叫彼得·阿列克谢耶维奇·索科洛夫。”\n\n索科洛夫放下行李，坐了下来。"
    assert kinds(text, StoryState(BP)) == []


def test_a_surname_given_with_自称_is_no_name_of_its_own() -> None:
    text = "渡口来了一个陌生的中年人，自称姓韩，名叫韩守义，是从县城来的货郎。"
    found = person_names(text, NameIndex({}))
    assert [(u.name, u.introduced) for u in found] == [("韩守义", True)]


def test_an_ordinary_noun_before_a_verb_is_no_name() -> None:
    assert kinds("等雨停了，就进林子去看看。", StoryState(BP)) == []


# ---- rules as concepts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slip",
    [
        "他掏出怀表看了看。",  # 钟表
        "他装了一袋旱烟，慢慢地吸着。",  # 烟草
        "他从腰里摸出烟斗。",  # 烟草
        "街口竖着一根电线杆。",  # 电, through 电灯/电话 and its own members
        "他拿起电话，叫人备马。",  # 电 takes in 电话
        "远处传来两声枪响。",  # 火器, a gunshot
        "他朝天放了一枪。",  # 火器, a gun fired
    ],
)
def test_a_rule_forbids_hyponyms_of_its_category(slip: str) -> None:
    assert kinds(slip, StoryState(BP)) == ["rule_broken"]


@pytest.mark.parametrize(
    "fine",
    [
        "更夫敲着梆子走过，已是三更。",
        "庙里的钟声传得很远。",
        "灶间冒出一缕炊烟。",
        "一道闪电划破了夜空。",
        "他提着一杆长枪守在门口。",
        "复活节那天，街上很热闹。",
    ],
)
def test_things_near_a_forbidden_category_are_fine(fine: str) -> None:
    rules = [*BP.rules, "人死不能复活。"]
    assert kinds(fine, StoryState(BP.model_copy(update={"rules": rules}))) == []


def test_categories_take_in_others_and_keep_what_they_never_hold() -> None:
    power = lexicon.members("电")
    assert {"电灯", "电话", "电报", "电线杆"} <= power
    assert "闪电" not in power
    clocks = lexicon.members("钟表")
    assert {"怀表", "闹钟", "挂钟"} <= clocks
    assert not {"滴漏", "日晷", "钟声"} & clocks
