"""What a question asks for and whether a passage states it (issue 43, item 7): the classifier
on its own wording, the fact reader on sentences (real jieba tagger with the domain
dictionary), the answerability check on passages."""

from __future__ import annotations

import pytest

from retrieval.answer.asks import Answerability, Asked, FactReader, asked_for, subject_terms
from retrieval.text import Tokenizer

TOKENIZER = Tokenizer()


def persons(text: str) -> list[str]:
    """The seed's persons a text names (the app asks the knowledge graph)."""
    return [p for p in ("保罗", "约翰", "彼得", "摩西", "Paul") if p in text]


READER = FactReader(TOKENIZER.tag, persons=persons)


@pytest.mark.parametrize(
    ("question", "kind", "detail"),
    [
        ("保罗是在哪一年写以弗所书的？", "date", "year"),
        ("In what year was Ephesians written?", "date", "year"),
        ("彼得是在哪一天开启福音之门的？", "date", "day"),
        ("得胜者在哪个时代作王？", "date", "era"),
        ("新耶路撒冷的城墙有多高？", "number", "measure"),
        ("How tall is the wall?", "number", "measure"),
        ("锡安山上有多少人？", "number", "count"),
        ("How many letters are there?", "number", "count"),
        ("大灾难要持续多久？", "number", "duration"),
        ("保罗写信时被囚在哪座城？", "place", ""),
        ("Where did the ark stand?", "place", ""),
        ("是谁开启了福音的门？", "person", ""),
        ("Who wrote Ephesians?", "person", ""),
        ("士每拿召会的使者是谁？", "person", ""),
        ("什么是神圣的分赐？", "definition", ""),
        ("谁是得胜者？", "definition", ""),  # who they are: a definition
        # a name asked about: who that person is (the verses tell it: 兄弟推基古)
        ("谁是推基古？", "definition", "person"),
        ("推基古到底是谁？", "definition", "person"),
        ("Who was Tychicus?", "definition", "person"),
        ("神是谁？", "definition", "person"),
        ("他是谁？", "person", ""),  # a pronoun: the person it stands for is asked
        ("谁是以弗所召会的第一位长老？", "person", ""),  # a description asks for the person
        ("那位使者是谁？", "person", ""),  # a role asks for the person
        ("Who was the messenger?", "person", ""),
        ("Who are the overcomers?", "definition", ""),
        ("神的经纶和神的作为有什么关系？", "relation", ""),
        ("How is God's economy related to the divine dispensing?", "relation", ""),
        # wordings that look like a fact question but ask something else
        ("变化和模成的区别在哪里？", "relation", ""),
        ("三神论和形态论错在哪里？", "open", ""),
        ("保罗职事的启示是从哪里来的？", "open", ""),
        ("Where does the oneness of the Body come from?", "open", ""),
        ("有机救恩包括哪几个阶段？", "open", ""),
        ("What does Eph. 1:23 mean by the One who fills all in all?", "definition", ""),
        # 什么时候 asks a time (it was read as open until the third blind half: 从什么时候,
        # 到底什么时候 went unchecked)
        ("得荣是在什么时候完成的？", "date", "time"),
        # how members phrase it (the blind half's wordings)
        ("At what point are the 144,000 caught up?", "date", "time"),
        ("When are the overcomers raptured?", "date", "time"),
        ("孝敬父母那条诫命，在带应许的诫命里排第几？", "number", "ordinal"),
        ("Where do we experience the divine dispensing most richly?", "place", "sphere"),
        ("我们在哪里经历神圣的分赐？", "place", "sphere"),
        ("约柜到底是个什么东西？", "definition", ""),
        # an asking word before a noun: the noun says what kind of answer
        ("无酵饼是从什么时候开始吃的？", "date", "time"),
        ("何时吹角？", "date", "time"),
        ("这篇诗是几世纪写成的？", "date", "year"),
        ("亚伯拉罕献以撒的那座山叫什么名字？", "place", ""),
        ("是哪一个先知膏了大卫？", "person", ""),
        ("哪些人跟随了那位老师？", "person", ""),
        ("哪一卷书最短？", "open", ""),  # a book is no person
        # a verb of meaning asked with 什么
        ("无酵饼预表什么？", "definition", ""),
        ("What does the unleavened bread stand for?", "definition", ""),
        # English question words open any sentence of the question, or end it
        ("The letter reached the church. Who carried it there?", "person", ""),
        ("They will be fed in the wilderness. Where?", "place", ""),
        ("A feast was held. When was it held?", "date", "time"),
        ("In which town did the brothers meet?", "place", ""),
        ("Which prophet anointed David?", "person", ""),
        ("保罗在哪一座城被囚？", "place", ""),
        ("", "open", ""),
        ("🙂🙂🙂", "open", ""),
        ("谁" * 2000, "person", ""),
    ],
)
def test_what_a_question_asks_for(question: str, kind: str, detail: str) -> None:
    asked = asked_for(question)
    assert (asked.kind, asked.detail) == (kind, detail)


@pytest.mark.parametrize(
    ("asked", "sentence"),
    [
        (Asked("date", "year"), "保罗约在主后六十年写了这封信。"),
        (Asked("date", "year"), "这篇信息是1984年释放的。"),
        (Asked("date", "year"), "一九八四年的夏季训练"),
        (Asked("date", "day"), "彼得在五旬节开启福音的门"),
        (Asked("date", "day"), "每周在主日聚会中，圣徒们申言"),
        (Asked("date", "era"), "得胜者在千年国要与基督同坐宝座"),
        (Asked("number", "count"), "启示录二、三章记载主向七个召会说话"),
        (Asked("number", "count"), "同他又有十四万四千人"),
        (Asked("number", "count"), "得胜者胜过仇敌的凭借有三：羔羊的血"),
        (Asked("number", "count"), "In the seven letters of Revelation 2 and 3"),
        (Asked("number", "measure"), "又量了城墙，共有一百四十四肘"),
        (Asked("number", "duration"), "你们必受患难十日"),
        (Asked("place", ""), "写信给在以弗所的圣徒"),
        (Asked("place", ""), "羔羊站在锡安山"),
        (Asked("place", ""), "In the Old Testament, Jerusalem was the city of God's people."),
        (Asked("person", ""), "保罗为圣徒祷告"),
        (Asked("person", ""), "十四万四千人是一班得胜者"),
        (Asked("person", ""), "Then Paul asked the Father to strengthen the saints."),
        (Asked("date", "time"), "十四万四千人是在大灾难以前被提的一班得胜者"),
        (Asked("date", "day"), "那日就是复活的日子"),
        (Asked("number", "ordinal"), "这是第一条带应许的诫命"),
        (Asked("place", "sphere"), "The dispensing is experienced in the church life."),
        (Asked("place", "sphere"), "我们在召会生活中经历分赐"),
        # a clause of time (when the Lord comes back, …)
        (Asked("date", "time"), "主回来时，这盼望就要实现"),
        # a person by role and the time they lived in
        (Asked("person", ""), "当时的使徒都在那里"),
        (Asked("person", ""), "这句话是早期的教父留下的"),
        # a name no dictionary has, right after its role (brother X)
        (Asked("person", ""), "忠心的兄弟亚基布要把这信带去"),
    ],
)
def test_a_sentence_states_the_fact(asked: Asked, sentence: str) -> None:
    assert READER.states(asked, sentence)


@pytest.mark.parametrize(
    ("asked", "sentence"),
    [
        (Asked("date", "year"), "城墙是碧玉，根基是各样宝石（启二十一18–21）。"),
        (Asked("date", "year"), "彼得在五旬节开启福音的门"),  # a day, not a year
        (Asked("date", "day"), "神圣分赐的三个阶段"),
        (Asked("number", "count"), "召会是一个身体，新耶路撒冷的每一项特征"),  # 一个 is "a"
        (Asked("number", "count"), "第三阶段：得荣"),
        (Asked("number", "count"), "三一神为着分赐而经过过程"),
        (Asked("number", "measure"), "新耶路撒冷有十二个门"),  # a count, not a size
        (Asked("place", ""), "变化形状的条件是敞着脸"),
        (Asked("place", ""), "The secret of the overcomers is not strength of will."),
        (Asked("person", ""), "召会是基督的身体"),
        (Asked("person", ""), "荣耀的盼望，弗三8"),  # jieba tags these as names; they are not
        (Asked("date", "year"), ""),
        (Asked("person", ""), "🙂" * 50),
        (Asked("number", "count"), "启3:12　得胜的，我要叫他作柱子"),  # a verse, not a count
        (Asked("number", "ordinal"), "神圣分赐的三个阶段"),
        (Asked("date", "time"), "锡安是耶路撒冷城中的高峰"),
        (Asked("place", "sphere"), "神圣的分赐是三一神把自己分赐到人"),
        (Asked("date", "time"), "时候满足，神就差遣祂的儿子"),  # 时候 starts no clause of time
        (Asked("person", ""), "神的人要完全"),  # 的人 names no one
        (Asked("person", ""), "写信给哥林多的圣徒"),  # the saints written to, not who wrote
        (Asked("person", ""), "兄弟们都来了"),  # a role and no name
    ],
)
def test_a_sentence_does_not_state_the_fact(asked: Asked, sentence: str) -> None:
    assert not READER.states(asked, sentence)


def test_the_question_s_own_names_are_not_the_answer() -> None:
    asked = Asked("person")
    assert READER.states(asked, "保罗写信给以弗所的圣徒")
    assert not READER.states(asked, "保罗写信给以弗所的圣徒", named=["保罗"])
    assert not READER.states(Asked("place"), "写信给在以弗所的圣徒", named=["以弗所"])


def test_the_words_that_ask_are_not_the_subject() -> None:
    terms = {"城墙": 0.9, "多高": 0.5, "新耶路撒冷": 1.0}
    assert subject_terms(terms, asked_for("新耶路撒冷的城墙有多高？")) == {
        "城墙": 0.9,
        "新耶路撒冷": 1.0,
    }
    counted = {"得胜者": 1.0, "凭借": 0.6, "几样": 0.7, "一共": 0.6}
    assert subject_terms(counted, asked_for("得胜者一共有几样凭借？")) == {
        "得胜者": 1.0,
        "凭借": 0.6,
    }


CHECK = Answerability(READER)
WALL = {"新耶路撒冷": 1.0, "城墙": 0.9}
ABOUT_THE_WALL = "新耶路撒冷的城墙是碧玉，城是精金（启二十一18）。"


def test_answerable_only_when_a_passage_about_the_subject_states_it() -> None:
    asked = asked_for("新耶路撒冷的城墙有多高？")
    assert not CHECK.answerable(asked, WALL, [ABOUT_THE_WALL])
    assert CHECK.answerable(asked, WALL, [ABOUT_THE_WALL, "新耶路撒冷的城墙高一百四十四肘。"])
    # a measure about something else is no answer
    assert not CHECK.answerable(asked, WALL, [ABOUT_THE_WALL, "挪亚的方舟长三百肘。"])
    assert not CHECK.answerable(asked, WALL, [])


def test_the_fact_must_be_said_of_the_subject_not_beside_it() -> None:
    """约翰 is named in the sentence, but in a clause about something else (the clause with 士每拿
    names no person)."""
    text = (
        "启示录一章十一节，主吩咐约翰把所看见的写在书上，寄给亚细亚的七个召会，"
        "这七个召会各在一个城里：以弗所、士每拿、别迦摩等。"
    )
    asked = asked_for("士每拿召会的使者是谁？")
    assert not CHECK.answerable(asked, {"士每拿": 1.0, "召会": 1.0, "使者": 0.6}, [text])
    told = asked_for("主吩咐谁把所看见的写在书上？")
    assert CHECK.answerable(told, {"吩咐": 0.6, "看见": 0.5, "写": 0.5, "书上": 0.7}, [text])


def test_a_question_that_asks_for_no_fact_is_answerable() -> None:
    asked = asked_for("什么是神圣的分赐？")
    assert CHECK.answerable(asked, {"神圣的分赐": 1.0}, [])


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("常听人说锡安有约柜，约柜到底是个什么东西？", "约柜"),
        ("七个召会之一的别迦摩，这个城名是什么意思？", "别迦摩"),  # what 这个 points back at
        ("什么是变化形状？", "变化形状"),
        ("神圣的分赐是什么意思？", "神圣的分赐"),
        ("弗1:10在日期满足的时候同归于一是什么意思？", ""),  # a quoted verse: not one term
        ("What is the secret of the overcomers?", ""),
        ("推基古是谁？", "推基古"),
        ("Who is Tychicus?", "Tychicus"),
    ],
)
def test_the_term_a_definition_question_asks_about(question: str, head: str) -> None:
    assert asked_for(question).head == head


def test_a_term_the_passages_only_mention_is_not_defined_by_them() -> None:
    asked = asked_for("约柜到底是个什么东西？")
    mentioned = "锡安是城中的高处，神的殿与约柜都在那里。"
    assert not CHECK.answerable(asked, {"约柜": 1.0}, [mentioned])
    assert CHECK.answerable(asked, {"约柜": 1.0}, [mentioned, "约柜乃是神与人相会之处。"])
    # named by no passage at all: the passages do not say it (it was "not judged" until the
    # third blind half: 乳香 beside passages on 细面 and 油 was answered)
    assert not CHECK.answerable(asked, {"约柜": 1.0}, ["讲到救恩的一段。"])
    # a term the graph's concepts make up is one the corpus discusses
    told = asked_for("神人调和是什么意思？")
    assert CHECK.answerable(told, {"神人": 1.0}, ["这是神人调和的生活。"], ["神人", "调和"])
    assert not CHECK.answerable(told, {"神人": 1.0}, ["这是神人调和的生活。"], ["神人"])


def test_who_a_person_is_is_told_by_the_role_before_the_name() -> None:
    asked = asked_for("谁是推基古？")
    told = "今有所亲爱、忠心事奉主的兄弟推基古，他要把我的事情全告诉你们。"
    assert CHECK.answerable(asked, {"推基古": 1.0}, [told])
    assert CHECK.answerable(asked, {"保罗": 1.0}, ["奉神旨意作使徒保罗的书信。"]) is False
    assert not CHECK.answerable(asked, {"推基古": 1.0}, ["推基古要把我的事情全告诉你们。"])


def test_a_count_of_something_else_is_no_answer() -> None:
    asked = asked_for("新耶路撒冷一共有几个城门？")
    terms = {"新耶路撒冷": 1.0, "城门": 0.6}
    assert not CHECK.answerable(asked, terms, ["主向七个召会说话，新耶路撒冷是城门的终极。"])
    assert CHECK.answerable(asked, terms, ["新耶路撒冷有十二个城门。"])


def test_the_names_listed_beside_a_place_are_not_where_it_is() -> None:
    text = "这七个召会各在一个城里：以弗所、士每拿、别迦摩等。"
    asked = asked_for("士每拿在今天的哪个国家？")
    assert not READER.states(asked, text, named=["士每拿"])
    assert READER.states(asked, "士每拿在今日的土耳其，靠近以弗所。", named=["士每拿"])


def test_a_place_in_a_book_s_title_is_not_named_by_the_question() -> None:
    asked = asked_for("保罗的以弗所书是写给住在哪里的圣徒？")
    terms = {"保罗": 0.7, "以弗所": 0.9, "写给": 0.7, "圣徒": 0.8}
    assert asked.titles == ("以弗所书",)
    assert CHECK.answerable(asked, terms, ["保罗写给在以弗所的圣徒。"])
    named = Asked("place", cue="在哪里")  # the question names 以弗所 itself
    assert not CHECK.answerable(named, terms, ["保罗写给在以弗所的圣徒。"])


def test_a_sentence_pointing_back_is_about_the_one_before() -> None:
    asked = asked_for("门徒知道主在父里面，那是指哪一天？")
    terms = {"门徒": 0.7, "知道": 0.4, "父": 0.5, "里面": 0.5}
    told = "门徒就知道我在父里面，你们在我里面。那日就是复活的日子。"
    assert CHECK.answerable(asked, terms, [told])
    assert not CHECK.answerable(asked, terms, ["门徒就知道我在父里面。复活的日子是主日。"])


def test_a_verb_with_its_aspect_particle_is_held_by_the_verb() -> None:
    asked = asked_for("旧约里脸上蒙着帕子的是哪一位？")
    terms = {"脸上": 0.5, "蒙着": 1.0, "帕子": 0.8}
    text = "摩西的脸上有帕子遮盖；以色列人的心也常被帕子蒙住。"
    assert CHECK.answerable(asked, terms, [text])


def test_the_role_a_person_question_asks_for_is_not_its_subject() -> None:
    """哪一个先知 asks for a prophet: 先知 is what the answer is, not what it is said of."""
    terms = {"膏": 0.6, "大卫": 0.9, "先知": 0.8}
    assert subject_terms(terms, asked_for("是哪一个先知膏了大卫？")) == {"膏": 0.6, "大卫": 0.9}


def test_an_outline_sub_point_is_about_the_point_above_it() -> None:
    asked = asked_for("晨祷的操练由哪位弟兄带领？")
    terms = {"晨祷": 1.0, "操练": 0.6, "带领": 0.5}
    outline = "二、晨祷的操练\n（一）彼得带领，约翰配搭\n（二）各人都要祷告"
    assert CHECK.answerable(asked, terms, [outline])
    # the same line under a point about something else says nothing of the morning prayer
    other = "二、晨祷的操练\n三、读经的安排\n（一）彼得带领，约翰配搭"
    assert not CHECK.answerable(asked, terms, [other])


def test_a_sentence_saying_the_question_back_with_a_name_states_it() -> None:
    """羅得 is no person the knowledge graph knows, yet 摩押人是羅得的後代 answers 摩押人是谁的
    后代: the question's words come back with a name where it asked. A pronoun there, or the
    words apart, name no one."""
    asked = asked_for("摩押人是誰的後代？")
    moab = {"摩押人": 1.0, "后代": 0.8}
    note = "注1　摩押人是羅得的後代，申命記二十三章三節說摩押人的子孫永不可入耶和華的會。"
    assert CHECK.answerable(asked, moab, [note])
    assert not CHECK.answerable(asked, moab, ["摩押人是他的後代，不可入耶和華的會。"])
    assert not CHECK.answerable(asked, moab, ["摩押人住在约但河东，他们的后代很多。"])
    written = asked_for("以弗所书是谁写的？")
    assert written.frame == ("以弗所书是", "写的")
    assert READER.states(written, "以弗所书是使徒在监狱中写的。")


def test_a_place_asked_with_its_kind_is_named_by_its_name_alone() -> None:
    """锡安山在哪里: the note says “锡安”是耶路撒冷城中的高峰 — 锡安 is the place asked about (not
    the answer), 耶路撒冷城 is where it is."""
    asked = asked_for("锡安山在哪里？")
    zion = {"锡安山": 1.0}
    note = "注1　“锡安”是耶路撒冷城中的高峰，神的居所与约柜都在那里。"
    assert CHECK.answerable(asked, zion, [note])
    assert not CHECK.answerable(asked, zion, ["羔羊站在锡安山，同祂有十四万四千人。"])
    assert not CHECK.answerable(asked, zion, ["锡安是神所拣选、所爱的。"])
