"""The corpus named as the speaker of a question (职事对X怎么说, What does the ministry say about
X) is its frame, not its subject: what is searched is X."""

from __future__ import annotations

import pytest

from retrieval.relevance import without_the_speaker


@pytest.mark.parametrize(
    ("question", "searched"),
    [
        ("职事对神人的调和怎么说？", "对神人的调和怎么说？"),
        ("关于神人的调和，职事怎么说？", "关于神人的调和，怎么说？"),
        ("职事说神人的调和是什么？", "说神人的调和是什么？"),
        ("What does the ministry say about mingling?", "What  say about mingling?"),
        # the ministry as the subject stays
        ("新约职事的内容是什么？", "新约职事的内容是什么？"),
        ("保罗的职事说明了什么？", "保罗的职事说明了什么？"),
        ("职事是什么？", "职事是什么？"),
        ("What is the New Testament ministry?", "What is the New Testament ministry?"),
    ],
)
def test_the_corpus_named_as_the_speaker_is_not_searched_for(question: str, searched: str) -> None:
    assert without_the_speaker(question) == searched
