"""The relevance gate's term matching (retrieval/relevance.py), pure functions on text."""

from __future__ import annotations

import pytest

from retrieval.relevance import coverage, made_up_weight, query_terms, unglued
from retrieval.text import made_up
from retrieval.types import Chunk

PASSAGE = Chunk(
    id="n2",
    text="十四万四千人是在大灾难以前被提的一班得胜者。",
    search_text="十四万四千人是在大灾难以前被提的一班得胜者。",
    doc_id="rev",
    source="启示录注解",
    type="footnote",
)


def test_a_word_jieba_glued_to_a_function_character_is_read_as_written() -> None:
    question = "信徒被提是在大灾难之前还是之后？"
    assert unglued("提是", question) == ("被提",)  # 被 was dropped as a stop word, 是 glued on
    assert unglued("在桌", "放在桌上") == ("桌上",)
    assert unglued("七印", "启示录的七印分别代表什么？") == ()  # a word of its own
    assert unglued("是在", question) == ()  # function characters only
    assert unglued("提是", "提是") == ()  # nothing before it to join
    assert unglued("tithe", "tithe") == ()
    terms = {"信徒": 0.67, "提是": 1.0, "大灾难": 0.94}
    plain, _, _ = coverage(terms, {}, [PASSAGE])
    read, _, _ = coverage(terms, {"提是": unglued("提是", question)}, [PASSAGE])
    assert plain == pytest.approx(0.94 / 2.61)
    assert read == pytest.approx(1.94 / 2.61)


def test_the_words_that_ask_are_not_subject_terms() -> None:
    """哪一位, 第几, 那条, how many: the question's wording, not what a passage must hold."""
    tokens = ["旧约", "帕子", "哪一位", "第几", "那条", "诫命", "祂", "东西", "many", "books"]
    terms = query_terms(tokens, lambda t: 0.8)
    assert set(terms) == {"旧约", "帕子", "诫命", "books"}


def test_a_light_character_glued_into_a_made_up_word_weighs_what_its_characters_do() -> None:
    weights = {"主": 0.46, "说": 0.31, "七": 0.3, "印": 0.5}
    weight = made_up_weight("主说", lambda t: weights.get(t, 1.0))
    assert weight == pytest.approx((0.46 + 0.31) / 2)
    assert made_up_weight("七印", lambda t: weights.get(t, 1.0)) is None  # a word of its own
    assert made_up("主说") and made_up("里排")
    assert not made_up("分赐") and not made_up("召会") and not made_up("经纶")
    assert not made_up("主") and not made_up("ab")
