"""The relevance gate's term matching (retrieval/relevance.py), pure functions on text."""

from __future__ import annotations

import pytest

from retrieval.relevance import coverage, unglued
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
