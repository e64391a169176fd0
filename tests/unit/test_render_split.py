from hypothesis import given
from hypothesis import strategies as st

from bot.render import split_message


def test_short_text_is_one_piece() -> None:
    assert split_message("你好", 2000) == ["你好"]


def test_splits_on_paragraphs_in_order() -> None:
    text = "\n\n".join(f"第{i}段。" + "字" * 300 for i in range(20))
    pieces = split_message(text, 2000)
    assert all(len(p) <= 2000 for p in pieces)
    assert "".join(pieces).replace("\n", "") == text.replace("\n", "")
    assert all(p.startswith("第") for p in pieces)


def test_never_breaks_a_citation() -> None:
    text = "神圣的分赐是三一神的工作。【神的经纶，第三章】" * 200
    for piece in split_message(text, 500):
        assert piece.count("【") == piece.count("】")


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=20, max_value=600))
def test_pieces_fit_and_keep_every_character(text: str, limit: int) -> None:
    pieces = split_message(text, limit)
    assert all(len(p) <= limit for p in pieces)
    if "```" not in text:
        squash = lambda s: "".join(s.split())  # noqa: E731
        assert squash("".join(pieces)) == squash(text)
