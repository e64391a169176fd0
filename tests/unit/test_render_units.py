"""Telegram's 4,096 counted as Telegram counts it: UTF-16 code units, so a character outside
the Basic Multilingual Plane (CJK Extension B, most emoji) counts two. Every message the
renderer makes fits in units and in code points, keeps its tags balanced, and loses nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render import fitting, split_message
from bot.render import telegram as tr
from bot.reply import Block, Citation, Reply
from tests.stubs.telegram_rules import parse_html
from tests.unit.test_render import balanced

EXT_B = "".join(chr(0x20000 + i) for i in range(5000))


def test_units_count_astral_characters_twice() -> None:
    assert tr.units("道") == 1 and tr.units("𠀀") == 2 and tr.units("🙂a") == 3


def test_fitting_finds_the_longest_prefix_within_the_limit() -> None:
    assert fitting("道" * 10, 4) == 4
    assert fitting("𠀀" * 10, 4, tr.units) == 2 and fitting("𠀀" * 10, 5, tr.units) == 2
    assert fitting("a𠀀b", 2, tr.units) == 1 and fitting("a𠀀b", 3, tr.units) == 2
    assert fitting("", 5, tr.units) == 0


def test_split_by_units_keeps_every_character() -> None:
    pieces = split_message(EXT_B[:3000], 4096, tr.units)
    assert [len(p) for p in pieces] == [2048, 952]
    assert "".join(pieces) == EXT_B[:3000]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="𠀀𠀁🙂道&<>【】 \n。ab", min_size=1, max_size=5000),
            st.sampled_from(["text", "quote", "code", "heading", "item", "note"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_telegram_pieces_fit_in_units_and_stay_balanced(blocks: list[tuple[str, str]]) -> None:
    reply = Reply(lang="zh", blocks=[Block(t, k) for t, k in blocks])  # type: ignore[arg-type]
    for message in tr.render(reply).messages:
        assert tr.units(message.html) <= tr.LIMIT and len(message.html) <= tr.LIMIT
        assert balanced(message.html), message.html[:200]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 5000), st.sampled_from(["𠀀", "🙂", "道", "&"]))
def test_plain_preview_fits_in_units(length: int, char: str) -> None:
    preview = tr.plain_preview(char * length)
    assert tr.units(preview) <= tr.LIMIT
    assert (char * length).startswith(parse_html(preview).removesuffix("…"))


def test_extension_b_answer_and_citation_near_the_limit() -> None:
    for length in (2047, 2048, 2049, 4096):
        messages = tr.render(Reply(lang="zh", blocks=[Block(EXT_B[:length])])).messages
        assert all(tr.units(m.html) <= tr.LIMIT for m in messages)
        assert "".join(m.html for m in messages) == EXT_B[:length]
        assert len(messages) == -(-length // 2048)
    cited = Reply(
        lang="zh",
        blocks=[Block("答")],
        citations=[Citation("𠀀书，第一章", "𠀀书", "第一章", EXT_B[:3000])],
    )
    messages = tr.render(cited).messages
    assert all(tr.units(m.html) <= tr.LIMIT and balanced(m.html) for m in messages)
    shown = "".join(parse_html(m.html) for m in messages).replace("\n", "")
    assert shown.endswith(EXT_B[:3000])
