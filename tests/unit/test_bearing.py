"""The sentences that may bear an answer (issue 43, item 7): each sentence with the one that
points back at it and the outline point above it; which of them state the fact asked, said of
something the question is about; and which of those are close in meaning to the question (a
plain function stands in for the embedder). All text here is original."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from retrieval.answer.asks import Answerability, FactReader, asked_for
from retrieval.answer.bearing import (
    AnswerBearing,
    Said,
    cosine_scorer,
    outline_level,
    said_in,
)
from retrieval.text import Tokenizer

TOKENIZER = Tokenizer()
CHECK = Answerability(FactReader(TOKENIZER.tag, persons=lambda t: [p for p in ("彼得",) if p in t]))


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("壹　晨更的操练", 0),
        ("二、读经的安排", 1),
        ("（三）各人都要祷告", 2),
        ("4. 彼此代祷", 3),
        ("晨更是一天的开始。", None),
        ("", None),
    ],
)
def test_how_deep_an_outline_point_is(line: str, level: int | None) -> None:
    assert outline_level(line) == level


def test_each_sentence_with_what_points_back_at_it_and_its_outline_point() -> None:
    prose = "门徒在楼上等候。那一天就是五旬节。众人都很惊奇。"
    outline = "一、晨更的操练\n（一）彼得带领\n1. 先读经\n（二）各人祷告\n二、读经的安排"
    said = said_in([prose, outline])
    assert said[0] == Said("门徒在楼上等候。", after="那一天就是五旬节。")
    assert said[1].after == ""  # 众人 does not point back
    by_line = {s.sentence.strip(): s for s in said[3:]}
    assert by_line["（一）彼得带领"].parent.strip() == "一、晨更的操练"
    assert by_line["1. 先读经"].parent.strip() == "（一）彼得带领"
    assert by_line["（二）各人祷告"].parent.strip() == "一、晨更的操练"  # 1. is closed
    assert by_line["二、读经的安排"].parent == ""
    assert said_in(["", "\n\n"]) == []


async def test_the_sentences_close_in_meaning_are_those_at_or_above_the_floor() -> None:
    scored: list[str] = []

    async def score(question: str, sentences: Sequence[str]) -> list[float]:
        scored.extend(sentences)
        return [0.95 if "五旬节" in s else 0.9 if "楼上" in s else 0.2 for s in sentences]

    said = said_in(["众人都很惊奇。门徒在楼上等候。那一天就是五旬节。"])
    close = await AnswerBearing(score, floor=0.85).close("哪一天？", said)
    assert [s.sentence for s in close] == ["门徒在楼上等候。", "那一天就是五旬节。"]
    higher = await AnswerBearing(score, floor=0.92).close("哪一天？", said)
    assert [s.sentence for s in higher] == ["那一天就是五旬节。"]
    scored.clear()
    assert await AnswerBearing(score, floor=0.85).close("哪一天？", []) == []
    assert scored == []  # nothing to score, nothing embedded


def test_only_an_embedder_whose_scale_is_known_has_a_floor() -> None:
    async def score(question: str, sentences: Sequence[str]) -> list[float]:
        return [0.0] * len(sentences)

    assert AnswerBearing.for_embedder("hash-256", score) is None
    known = AnswerBearing.for_embedder("multilingual-e5-small-q4", score)
    assert known is not None and 0.0 < known.floor < 1.0


async def test_the_cosine_scorer_reads_any_scale() -> None:
    async def query(text: str) -> list[float]:
        return [2.0, 0.0]

    async def passages(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0], [0.0, 3.0], [0.0, 0.0]][: len(texts)]

    score = cosine_scorer(query, passages)
    assert await score("q", ["a", "b", "c"]) == pytest.approx([1.0, 0.0, 0.0])
    assert await score("q", []) == []


DAY = asked_for("门徒是在哪一天被圣灵充满的？")
DAY_TERMS = {"门徒": 0.7, "圣灵": 0.8, "充满": 0.6}


def test_a_close_sentence_bears_the_fact_itself_or_through_what_points_back() -> None:
    passages = ["门徒在楼上等候圣灵。", "讲到建造的一段。"]
    itself = Said("门徒在五旬节被圣灵充满。")
    assert CHECK.stating(DAY, [itself], DAY_TERMS, passages)
    pointed = Said("门徒在楼上等候圣灵。", after="那日就是五旬节。")
    assert CHECK.stating(DAY, [pointed], DAY_TERMS, passages)
    assert not CHECK.stating(DAY, [Said("门徒在楼上等候圣灵。")], DAY_TERMS, passages)
    assert not CHECK.stating(DAY, [], DAY_TERMS, passages)
    # only through a pointer: the sentence's own words are the lexical check's to bind
    assert CHECK.stating(DAY, [pointed], DAY_TERMS, passages, pointed_only=True)
    assert not CHECK.stating(DAY, [itself], DAY_TERMS, passages, pointed_only=True)


def test_a_close_sentence_bears_a_person_through_its_outline_point() -> None:
    asked = asked_for("是哪一个门徒带领晨更？")
    terms = {"带领": 0.6, "晨更": 1.0}
    sub_point = Said("（一）每天带领晨更", parent="一、彼得的职事")
    assert CHECK.stating(asked, [sub_point], terms, ["一、彼得的职事\n（一）每天带领晨更", "别的"])


def test_a_close_sentence_must_name_what_the_question_is_about() -> None:
    """Near in meaning, stating a day, but naming only what every passage names (召会): it says
    nothing of the disciples being filled."""
    terms = {"门徒": 0.7, "召会": 1.0, "充满": 0.6}
    passages = ["召会在主日聚会。", "召会与门徒被充满。"]
    general = Said("召会在主日聚会。")
    assert not CHECK.stating(DAY, [general], terms, passages)
    assert CHECK.stating(DAY, [Said("门徒在主日被充满。")], terms, passages)


def test_a_close_sentence_bears_a_definition_only_when_it_defines_the_term() -> None:
    asked = asked_for("无酵饼预表什么？")
    assert asked.head == "无酵饼"
    passages = ["无酵饼预表没有罪的生活。", "逾越节要吃无酵饼。", "别的"]
    assert CHECK.stating(asked, [Said("无酵饼预表没有罪的生活。")], {"无酵饼": 1.0}, passages)
    assert not CHECK.stating(asked, [Said("逾越节要吃无酵饼。")], {"无酵饼": 1.0}, passages)


def test_a_question_that_asks_for_no_fact_has_no_sentence_stating_it() -> None:
    said = [Said("晨更在五旬节开始。")]
    assert CHECK.stating(asked_for("晨更对我们有帮助吗？"), said, {"晨更": 1.0}, ["晨更"]) == []
