"""The slips a reader catches (issue 42 item 4), each with the tricky non-slips that must never
be findings, and the pieces they stand on: the lexicon of categories, who did what to whom,
and healing times read from rules. Every text here was written for these tests."""

from __future__ import annotations

import pytest

from novel import lexicon
from novel.blueprint import Blueprint, Character
from novel.consistency import check_rules
from novel.roles import acts
from novel.story_state import StoryState, healing_rules, read_chapter, replay

MEN = "男人"
BP = Blueprint(
    title="渡口",
    places=["青岚渡", "听潮阁", "漕帮总舵", "府城"],
    rules=["这个世界没有火器。", "重伤要养三个月才能下地干活。", "死者不能复生。"],
    characters=[
        Character(name="马六", description="脚夫，" + MEN),
        Character(name="林远", description="船家之子，" + MEN),
        Character(name="苏晴", description="郎中之女，姑娘"),
        Character(name="霍三", description="漕帮二当家，" + MEN),
    ],
)
LEG = "马六的右腿被霍三砍了一刀，伤到了骨头。郎中说，没有三个月好不了。"
ARM = "林远的左臂中了一刀，血流不止。"


def kinds(text: str, state: StoryState) -> list[str]:
    return [f.kind for f in check_rules(text, state)]


# ---- the wounded doing what the wound forbids; healed too soon ----------------------------------


def test_a_leg_wound_forbids_running_until_it_heals() -> None:
    hurt = replay(BP, [LEG])
    assert kinds("第二天一早，马六拔腿就跑，一口气跑到了青岚渡。", hurt) == ["wound_ignored"]
    assert kinds("几天后，马六攀着墙头翻了过去。", hurt) == ["wound_ignored"]
    for fine in (
        "第二天一早，马六想跑，可是腿不听使唤。",  # an attempt
        "第二天一早，马六没有跑，一步一步挪回了家。",  # negation
        "要是腿没伤，马六早就跑过去了。",  # a hypothetical
        "郎中对马六说：“千万别跑，也别跳。”",  # someone's speech
        "马六梦见自己在山路上飞跑。",  # a dream
        "马六拄着拐杖，一瘸一拐地走到门口。",  # what the wound allows
        "三个月后，马六又能在山路上跑了。",  # after its time
    ):
        assert kinds(fine, hurt) == [], fine


def test_an_arm_wound_forbids_swinging_that_arm() -> None:
    hurt = replay(BP, [ARM])
    assert kinds("第二天，林远抡起斧头劈柴。", hurt) == ["wound_ignored"]
    assert kinds("第二天，林远用右手提着一桶水进了门。", hurt) == []  # the other arm


def test_a_wound_healed_before_its_time() -> None:
    hurt = replay(BP, [LEG])
    found = check_rules("第二天，马六的腿伤已经好利索了。", hurt)
    assert [(f.kind, f.fields["name"], f.fields["days"]) for f in found] == [
        ("healed_too_soon", "马六", "90")
    ]
    assert kinds("半年过去了，马六的腿伤已经好利索了。", hurt) == []
    # told in a common phrasing, an arm cut is still a wound: healed the next morning is too soon
    cut = replay(BP, ["林远的胳膊被划了一道口子，血顺着袖子往下淌。"])
    assert kinds("第二天一早，林远胳膊上的伤口已经全好了。", cut) == ["healed_too_soon"]


def test_healing_times_are_read_from_the_rules() -> None:
    assert healing_rules(("伤筋动骨一百天，重伤要养三个月才能下地干活。",)) == {
        "bone": 100,
        "serious": 90,
    }
    assert healing_rules(("骨折至少要六个星期才能长好。",)) == {"bone": 42}
    assert healing_rules(("受伤至少半个月才能好。",)) == {"wound": 15, "serious": 15, "bone": 15}
    assert healing_rules(("受伤会留下后果。", "没有法术。")) == {}
    # the rule's time when the text says none
    state = replay(BP.model_copy(update={"rules": ["受了伤要养好几个月才能好。"]}), [ARM])
    [wound] = state.wounds
    assert state.heal_days(wound) == 90


# ---- two places in one stretch of time ---------------------------------------------------------------


def test_a_watch_until_dawn_and_asleep_elsewhere_at_dawn() -> None:
    watch = "当夜，林远守在青岚渡，一直守到天亮。"
    assert kinds(watch + "\n\n天亮时，林远正在听潮阁里呼呼大睡。", StoryState(BP)) == ["two_places"]
    assert kinds(watch + "\n\n天亮时，林远回到听潮阁，倒头就睡。", StoryState(BP)) == []


def test_back_at_the_start_the_same_day_with_no_return_told() -> None:
    went = "第二天一早，苏晴离开青岚渡，往府城赶去。"
    assert kinds(went + "\n\n当天夜里，苏晴坐在青岚渡的茶棚里喝茶。", StoryState(BP)) == [
        "two_places"
    ]
    for fine in (
        "当天夜里，苏晴回到青岚渡，坐在茶棚里喝茶。",  # the return is told
        "三天后，苏晴坐在青岚渡的茶棚里喝茶。",  # days later
        "当天夜里，苏晴想起青岚渡的茶棚。",  # a memory
    ):
        assert kinds(went + "\n\n" + fine, StoryState(BP)) == [], fine
    # told in an earlier chapter: the stored anchor carries over
    assert kinds("当天夜里，苏晴坐在青岚渡的茶棚里喝茶。", replay(BP, [went])) == ["two_places"]
    # on the river (江) after leaving the riverside (江边): no place of the two
    rowed = "林远跑到江边，跳上渡船，撑船出了渡口。"
    drifting = "林远在江上漂了两天，才到了下游的石埠镇。"
    assert kinds(drifting, replay(BP, [rowed])) == []
    seen = replay(BP, [rowed, drifting]).last_places()
    assert seen["林远"] == "石埠镇"  # named by its name, not 下游的石埠镇


# ---- the dead, names, rules -----------------------------------------------------------------------------


def test_the_dead_acting_by_name_or_bound_pronoun_and_what_never_fires() -> None:
    dead = replay(BP, ["霍三在渡口拔刀，一刀刺死了林远。"])
    assert set(dead.dead()) == {"林远"}
    assert kinds("林远推开门，走了进来。", dead) == ["dead_acts"]
    assert kinds("苏晴看了一眼林远的空椅子。他正坐在那里喝茶。", dead) == ["dead_acts"]
    for fine in (
        "苏晴想起林远。那时林远常常站在渡口唱歌。",  # a memory
        "苏晴梦见林远在船头朝她招手。",  # a dream
        "林远生前写给苏晴的信上说：“我明天就回来。”",  # a letter
        "有人说，林远根本没死，他跑到府城去了。",  # a rumour
        "如果林远还活着，他一定会来。",  # a hypothetical
        "林远到底是被谁害死的？",  # a question
    ):
        assert kinds(fine, dead) == [], fine


def test_an_unintroduced_name_acting_and_names_that_are_fine() -> None:
    assert kinds("孙德旺放下茶碗，走到门口张望。", StoryState(BP)) == ["unknown_name"]
    for fine in (
        "一个叫孙德旺的伙计放下茶碗，走到门口张望。",  # introduced
        "山风吹得窗纸哗哗作响。",  # a name-like noun
        "春雨下了三天，石桥下的水涨了。",
        "民警姓孙，二十出头。孙警官把笔录推到她面前。",  # a surname given
        # the sky and its clause's adverb, which LAC reads as a given name (天刚)
        "天刚擦黑，林远撑着渡船往江心岛去。",
        "天刚蒙蒙亮，苏晴就起身了。",
    ):
        assert kinds(fine, StoryState(BP)) == [], fine


def test_a_rule_forbids_every_member_of_the_category_it_names() -> None:
    state = StoryState(BP)
    for slip in ("他掏出一把左轮，对准了霍三。", "墙上挂着一杆猎枪。", "她腰间插着一支火铳。"):
        assert kinds(slip, state) == ["rule_broken"], slip
    for fine in (
        "苏晴笑着说：“这世上哪有什么火枪。”",  # speech
        "林远没有手枪，只有一把柴刀。",  # negated
        "如果有一杆猎枪就好了。",  # hypothetical
        "林远提着一杆长枪走上船头。",  # a pike is no firearm
    ):
        assert kinds(fine, state) == [], fine
    # the rule names a word whose dictionary sense is the category (枪支 "a gun")
    guns = StoryState(BP.model_copy(update={"rules": ["岛上禁止私藏枪支。"]}))
    assert kinds("行军床底下塞着一支步枪。", guns) == ["rule_broken"]


def test_the_lexicon_reads_categories_from_cc_cedict() -> None:
    guns = lexicon.members("火器")
    assert {"手枪", "猎枪", "步枪", "鸟铳", "大炮", "左轮手枪"} <= guns
    assert not {"水枪", "长枪", "标枪", "射钉枪"} & guns
    assert lexicon.categories_named("枪支") == ("火器",)
    assert lexicon.categories_named("电灯") == ("电灯",)
    match = lexicon.member_in("墙上装着一只灯泡", ("电灯",))
    assert match is not None and match.word == "灯泡"
    assert {w for w in ("江风", "山风", "春雨", "石桥") if lexicon.ordinary_noun(w)} == {
        "江风",
        "山风",
        "春雨",
        "石桥",
    }
    assert not lexicon.ordinary_noun("林远") and not lexicon.ordinary_noun("冷千山")
    for c in lexicon.categories().values():  # every shipped category is whole
        assert c.names and c.senses, c.name


@pytest.mark.parametrize(
    ("text", "verb", "agents", "patients", "happened"),
    [
        ("霍三一刀刺死了林远。", "kill", ("霍三",), ("林远",), True),
        ("林远被霍三刺死在渡口。", "kill", ("霍三",), ("林远",), True),
        ("霍三把林远杀了。", "kill", ("霍三",), ("林远",), True),
        ("林远被人打伤了。", "hurt", (), ("林远",), True),
        ("苏晴把林远从水里救了上来。", "save", ("苏晴",), ("林远",), True),
        ("霍三险些杀了林远。", "kill", ("霍三",), ("林远",), False),
        ("如果霍三杀了林远，漕帮就完了。", "kill", ("霍三",), ("林远",), False),
    ],
)
def test_who_did_what_to_whom(
    text: str, verb: str, agents: tuple[str, ...], patients: tuple[str, ...], happened: bool
) -> None:
    state = StoryState(BP)
    chapter = read_chapter(state, text)
    [act] = [a for r in chapter.readings for a in acts(r, chapter.names, state.genders())]
    assert (act.verb, act.agents, act.patients, act.happened) == (
        verb,
        agents,
        patients,
        happened,
    )


def test_readings_the_test_half_showed_were_wrong() -> None:
    """Each a general misreading the issue-42 test half showed (that half is seen since)."""
    state = StoryState(BP)
    hurt = replay(BP, [LEG])
    # 二话不说 is no one's reported speech: what follows is narration
    assert kinds("第二天，马六二话不说，拔腿就跑。", hurt) == ["wound_ignored"]
    # X听说… is narration of hearing; 听说，… is a rumour
    assert kinds("第二天，马六听说林远来了，撒腿就往渡口跑。", hurt) == ["wound_ignored"]
    assert kinds("听说，马六第二天就跑到府城去了。", hurt) == []
    # 从前厅 is "from the front hall", not 从前 "long ago"
    dead = replay(BP, ["霍三在渡口拔刀，一刀刺死了林远。"])
    assert kinds("林远从前厅走进来，坐在了桌边。", dead) == ["dead_acts"]
    # a thing, not the one carried from the clause before, falls on 他
    state_hurt = replay(BP, ["霍三推倒了木垛，林远躲闪不及，一根圆木正砸在他的左腿上。"])
    assert {w.who for w in state_hurt.wounds} == {"林远"}
    # a role before a name: the name is the subject (卫生员沈秀兰 …)
    chapter = read_chapter(state, "船夫林远正在解缆绳。")
    assert [a.canon for a in chapter.readings[0].clauses[0].actors] == ["林远"]
    # the ground somewhere is no second place; a watch with no place keeps the one before
    assert kinds("林远到了府城。林远趴在雪地里哭了。", state) == []
    watch = "当夜，林远来到听潮阁。他守了整整一夜，直到天亮。\n\n天亮时，林远正在漕帮总舵里睡觉。"
    assert kinds(watch, state) == ["two_places"]
    # a name the analyser cut badly: 高桂 / 芬系 / 着 is 高桂芬
    cut = "晚上，林远在渡口摆了两桌。高桂芬系着围裙，端上来一大盆猪肉炖粉条。"
    assert kinds(cut, state) == ["unknown_name"]


def test_readings_test2_showed_were_wrong() -> None:
    """Each a general misreading the test2 half showed after its one held-out run."""
    state = StoryState(BP.model_copy(update={"characters": [*BP.characters]}))
    home = BP.model_copy(
        update={
            "characters": [
                *BP.characters[:2],
                Character(name="苏晴", location="听潮阁", description="郎中之女，姑娘"),
                BP.characters[3],
            ]
        }
    )
    # travelled far that morning (no place left named): home the same night is a slip
    went = "第二天一早，苏晴坐上马车，往府城去了。\n\n当天晚上，苏晴坐在听潮阁的书房里看书。"
    assert kinds(went, StoryState(home)) == ["two_places"]
    # a watch told as 守到了天亮
    watch = "当夜，林远守在听潮阁，一直守到了天亮。\n\n天亮的时候，林远正躺在漕帮总舵的床上。"
    assert kinds(watch, state) == ["two_places"]
    # a foreign name introduced as 我叫…, then its part acting, is known
    intro = "“我叫理查德·格兰特，从伦敦来。”他说。格兰特在桌边坐下。"
    assert kinds(intro, state) == []
    # a name with its title (史密斯太太) heading a clause is a name
    assert kinds("史密斯太太拉着苏晴的手，说了半天的话。", state) == ["unknown_name"]
    # the dead acting in the clauses after the one that names them
    dead = replay(BP, ["霍三在渡口拔刀，一刀刺死了林远。"])
    assert kinds("林远在一旁听着，咧开嘴笑了。", dead) == ["dead_acts"]
    # a detonator is an explosive (CC-CEDICT "detonator")
    mines = StoryState(BP.model_copy(update={"rules": ["这个世界没有炸药。"]}))
    assert kinds("墙角扔着半箱雷管。", mines) == ["rule_broken"]
