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


# ---- folding clause by clause (issue 40: growth's CPU, the same folds) -----------------------

# Traditional characters OpenCC converts as phrases (頭髮, 乾隆), its separators, full width,
# whitespace, and Greek capitals (Σ lowercases by what follows it).
FOLD_ALPHABET = "乾隆頭髮著於後裏麵面發干幹臺台系係繫神聖靈約翰，。、；：！？,.!?-… \n\t\u3000ΣΑaBİ（）「」ＡＢ１"


def whole_fold(text: str) -> str:
    """`fold` as it was: the whole text converted at once."""
    translated = text.translate(linking._FULLWIDTH)
    return linking._SPACES.sub(" ", linking.to_simplified(translated).lower())


@settings(max_examples=1500)
@given(st.text(FOLD_ALPHABET, max_size=80))
def test_folding_clause_by_clause_is_folding_the_whole(text: str) -> None:
    assert linking.fold(text) == whole_fold(text)


def test_folding_a_long_text_clause_by_clause_is_folding_the_whole() -> None:
    """Past OpenCC's short-text cache (64 characters), and clauses seen before."""
    text = "神的經綸，乃是要將祂自己分賜到人裏面。頭髮乾了！  他們的心裏麵\n\n" * 3 + "Σ " * 40
    assert linking.fold(text) == whole_fold(text)
    assert linking.fold(text[:-80]) == whole_fold(text[:-80])


def test_a_book_name_is_found_where_one_starts() -> None:
    """`_book_name_at` (checks only where a book's name may start): the longest full name
    longer than the name found, as trying every length gives."""
    names = linking._book_names()
    longest = max(map(len, names))

    def every_length(folded: str, start: int, shorter: int) -> int:
        for length in range(longest, shorter, -1):
            if folded[start : start + length] in names:
                return length
        return 0

    for folded in ("约翰福音三章", "约翰一书", "路得记", "以弗所书", "约翰说", "出埃及记", "创世"):
        for start in range(len(folded)):
            for shorter in range(3):
                got = linking._book_name_at(folded, start, shorter)
                assert got == every_length(folded, start, shorter), (folded, start, shorter)
