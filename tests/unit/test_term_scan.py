"""The graph's term scan (`TermIndex.spans`) tries at each position only the lengths of the
names that start with its character (issue 40: graph growth scanned ~16,000 slices a chunk).
The spans are the ones trying every length from the longest name down gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.graph import linking
from retrieval.graph.linking import Span, TermIndex

ALPHABET = "神圣分赐召会生命的与灵魂心ab 约翰福音"
terms = st.dictionaries(
    st.text(ALPHABET, min_size=1, max_size=5),
    st.sets(st.sampled_from(["concept:a", "concept:b", "person:c"]), min_size=1, max_size=2),
    max_size=12,
)


def every_length(index: TermIndex, folded: str) -> list[Span]:
    """The scan as it was: every length from the longest name down, at every position."""
    found: list[Span] = []
    i, n = 0, len(folded)
    while i < n:
        for length in range(min(index.longest, n - i), 0, -1):
            ids = index.terms.get(folded[i : i + length])
            if ids and linking._stands_alone(folded, i, i + length):
                book = linking._book_name_at(folded, i, length)
                if book:
                    i += book
                    break
                found.append(Span(i, i + length, tuple(sorted(ids))))
                i += length
                break
        else:
            i += 1
    return found


@settings(max_examples=300)
@given(terms, st.text(ALPHABET, max_size=60))
def test_the_scan_finds_what_trying_every_length_finds(
    names: dict[str, set[str]], text: str
) -> None:
    index = TermIndex(names)
    folded = linking.fold(text)
    assert index.spans(folded) == every_length(index, folded)


def test_a_longer_name_wins_and_a_book_name_is_skipped() -> None:
    index = TermIndex({"分赐": {"concept:a"}, "神圣分赐": {"concept:b"}, "约翰": {"person:c"}})
    folded = linking.fold("神圣分赐与约翰福音")
    assert index.spans(folded) == [Span(0, 4, ("concept:b",))]  # 约翰福音 is a book, not 约翰
