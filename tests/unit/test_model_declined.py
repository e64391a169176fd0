"""A model that says the passages do not address the question is recognised however it puts
it — the fixed marker, rule 4's sentence, or its own words in Chinese or English — and an
answer that merely mentions what the ministry does not address, but answers, is not."""

from __future__ import annotations

import pytest

from retrieval.answer import DECLINE_MARKER, NOT_ADDRESSED, SYSTEM_PROMPT_ZH, model_declined


def test_the_system_prompt_asks_for_the_marker_in_either_language() -> None:
    assert DECLINE_MARKER == "[NOT_ADDRESSED]"
    rule = next(line for line in SYSTEM_PROMPT_ZH.split("\n") if line.startswith("4."))
    assert DECLINE_MARKER in rule and "中英文问题都用这个标记" in rule
    assert NOT_ADDRESSED["zh"] in rule and NOT_ADDRESSED["en"] in rule


@pytest.mark.parametrize(
    "reply",
    [
        # the marker, as asked and as models vary it
        f"{DECLINE_MARKER} {NOT_ADDRESSED['zh']}",
        f"{DECLINE_MARKER}\n{NOT_ADDRESSED['en']}",
        "[NOT ADDRESSED] The passages say nothing on this.",
        "**[not_addressed]** 资料里没有。",
        "【NOT_ADDRESSED】",
        # rule 4's sentences, alone or with the model's punctuation / quotes
        NOT_ADDRESSED["zh"],
        NOT_ADDRESSED["en"],
        f"「{NOT_ADDRESSED['zh']}」",
        # English in the model's own words
        "The ministry does not address this question.",
        "The ministry does not directly address the weather.",
        "The provided passages don't discuss cooking at all.",
        "The ministry passages do not speak to this topic. You may wish to consult other sources.",
        "This question is not addressed in the ministry excerpts provided.",
        "I cannot answer this from the ministry passages supplied.",
        # Chinese declines, reworded
        "职事资料中没有论及这个问题。",
        "所提供的资料并未提到天气。",
        "资料中没有直接谈到婴儿受洗的问题。",
        "这些职事摘录没有涉及烹饪。",
        "很抱歉，资料里并没有相关的教导。",
        "無法根據所提供的資料回答這個問題。",  # Traditional
        "职事语料中没有直接论及这个问题。\n\n相关的段落请另行参考。",
    ],
)
def test_declines_are_recognised(reply: str) -> None:
    assert model_declined(reply), reply


@pytest.mark.parametrize(
    "reply",
    [
        "职事明确教导\n神的经纶是神在基督里将万有归一的计划。【经纶的异象，一　神的计划】\n\n推论\n无",
        # an answer that notes a limit but answers from the passages, with citations
        "The ministry does not address infant baptism directly, but it teaches that the church "
        "is the Body of Christ. 【召会的奥秘，一　身体】",
        "资料没有直接论及婴儿洗礼，但说到召会是基督的身体。【召会的奥秘，一　身体】",
        # a decline-like phrase later in an answer is not the opening
        "What the ministry explicitly teaches\nGod's economy is His plan. Nothing here is "
        "not addressed.",
        "神的经纶是神的计划。资料没有提到别的。",
        "",
    ],
)
def test_answers_are_not_taken_for_declines(reply: str) -> None:
    assert not model_declined(reply), reply
