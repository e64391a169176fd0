"""The scripture reference parser: books, grammar, validation, prose, round trips."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.presenters.scripture import scripture_error_text
from retrieval import scripture as sc
from retrieval.scripture import RefRange, ScriptureError, VerseRef

OSIS_IDS = (
    "Gen Exod Lev Num Deut Josh Judg Ruth 1Sam 2Sam 1Kgs 2Kgs 1Chr 2Chr Ezra Neh Esth Job Ps "
    "Prov Eccl Song Isa Jer Lam Ezek Dan Hos Joel Amos Obad Jonah Mic Nah Hab Zeph Hag Zech Mal "
    "Matt Mark Luke John Acts Rom 1Cor 2Cor Gal Eph Phil Col 1Thess 2Thess 1Tim 2Tim Titus Phlm "
    "Heb Jas 1Pet 2Pet 1John 2John 3John Jude Rev"
).split()


def osis(text: str) -> list[str]:
    return [r.osis() for r in sc.parse_reference(text)]


def found(text: str) -> list[str]:
    return [r.osis() for r in sc.find_references(text)]


# ---- the book table ---------------------------------------------------------------------


def test_all_66_books_in_cuv_order() -> None:
    assert [b.osis for b in sc.books()] == OSIS_IDS
    assert [o for o, _ in sc.book_choices()] == OSIS_IDS
    assert dict(sc.book_choices())["Eph"] == "弗"


def test_versification_from_the_cuv_table() -> None:
    assert sc.chapter_count("Eph") == 6
    assert [sc.verse_count("Eph", c) for c in range(1, 7)] == [23, 22, 21, 32, 33, 24]
    assert sc.chapter_count("Ps") == 150
    assert sc.verse_count("Ps", 119) == 176
    assert sc.chapter_count("Jude") == 1
    assert sum(sum(b.verses) for b in sc.books()) == 31103
    with pytest.raises(ScriptureError):
        sc.verse_count("Eph", 7)
    with pytest.raises(ScriptureError):
        sc.chapter_count("Nope")


def test_book_names() -> None:
    assert sc.book_name_zh("Eph") == "以弗所书"
    assert sc.book_name_zh("1John") == "约翰一书"
    assert sc.book_name_en("1Cor") == "1 Corinthians"
    assert sc.book("以弗所書").osis == "Eph"
    assert sc.book("eph").osis == "Eph"
    assert sc.book("1 Cor.").osis == "1Cor"


def test_search_books_for_autocomplete() -> None:
    assert sc.search_books("以弗")[0][0] == "Eph"
    assert sc.search_books("弗")[0][0] == "Eph"
    assert sc.search_books("eph")[0][0] == "Eph"
    assert sc.search_books("Ephesians")[0][0] == "Eph"
    assert sc.search_books("約翰")[0][0] in {"John", "1John", "2John", "3John"}
    assert {o for o, _ in sc.search_books("約翰")} >= {"John", "1John", "2John", "3John"}
    assert sc.search_books("1 cor")[0][0] == "1Cor"
    assert sc.search_books("林前")[0][0] == "1Cor"
    assert sc.search_books("弗1:")[0][0] == "Eph"
    assert len(sc.search_books("")) == 25
    assert len(sc.search_books("", limit=100)) == 66
    assert sc.search_books("zzzz") == []
    label = dict(sc.search_books("弗"))["Eph"]
    assert "以弗所书" in label and "Ephesians" in label


# ---- strict parsing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("弗1:10", ["Eph.1.10"]),
        ("弗1：10", ["Eph.1.10"]),
        ("以弗所书1:10", ["Eph.1.10"]),
        ("以弗所書 1:10", ["Eph.1.10"]),
        ("弗 １：１０", ["Eph.1.10"]),
        ("约翰福音3:16", ["John.3.16"]),
        ("約翰福音3:16", ["John.3.16"]),
        ("约3:16", ["John.3.16"]),
        ("约翰一书1:9", ["1John.1.9"]),
        ("约壹1:9", ["1John.1.9"]),
        ("約壹1:9", ["1John.1.9"]),
        ("约一1:9", ["1John.1.9"]),
        ("约一10", ["John.1.10"]),  # 1 John has no chapter 10: John 1:10
        ("林前15:45", ["1Cor.15.45"]),
        ("林後3:18", ["2Cor.3.18"]),
        ("帖前4:16", ["1Thess.4.16"]),
        ("启21:2", ["Rev.21.2"]),
        ("啟21:2", ["Rev.21.2"]),
        ("Eph. 1:10", ["Eph.1.10"]),
        ("Ephesians 1:10", ["Eph.1.10"]),
        ("eph 1:10", ["Eph.1.10"]),
        ("1 Cor. 15:45", ["1Cor.15.45"]),
        ("1Co 15:45", ["1Cor.15.45"]),
        ("1Cor 15:45", ["1Cor.15.45"]),
        ("I Corinthians 15:45", ["1Cor.15.45"]),
        ("II Cor 3:18", ["2Cor.3.18"]),
        ("First John 1:9", ["1John.1.9"]),
        ("3 John 2", ["3John.1.2"]),
        ("Song of Songs 1:2", ["Song.1.2"]),
        ("Isaiah 9:6", ["Isa.9.6"]),
        ("Eph.1.10", ["Eph.1.10"]),
        ("Eph.1.10-Eph.1.12", ["Eph.1.10-Eph.1.12"]),
        ("Ps.23", ["Ps.23"]),
    ],
)
def test_books_and_forms(text: str, expected: list[str]) -> None:
    assert osis(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("弗1:10-12", ["Eph.1.10-Eph.1.12"]),
        ("弗1:10～12", ["Eph.1.10-Eph.1.12"]),
        ("弗1:10—12", ["Eph.1.10-Eph.1.12"]),
        ("弗1:10至12", ["Eph.1.10-Eph.1.12"]),
        ("弗1:10-12；约14:20, 23", ["Eph.1.10-Eph.1.12", "John.14.20", "John.14.23"]),
        ("约14:20，23", ["John.14.20", "John.14.23"]),
        ("约14:20、23", ["John.14.20", "John.14.23"]),
        ("约14:20, 23; 15:1", ["John.14.20", "John.14.23", "John.15.1"]),
        ("约14:20, 23-26", ["John.14.20", "John.14.23-John.14.26"]),
        ("太5:3-7:29", ["Matt.5.3-Matt.7.29"]),
        ("太5:3-7:29, 8:1", ["Matt.5.3-Matt.7.29", "Matt.8.1"]),
        ("诗23", ["Ps.23"]),
        ("Ps 23", ["Ps.23"]),
        ("Psalm 23", ["Ps.23"]),
        ("诗23, 24", ["Ps.23", "Ps.24"]),
        ("诗23-25", ["Ps.23-Ps.25"]),
        ("太5-7章", ["Matt.5-Matt.7"]),
        ("弗1-2:3", ["Eph.1.1-Eph.2.3"]),
        ("弗1:10-2章", ["Eph.1.10-Eph.2.22"]),
        ("弗一10", ["Eph.1.10"]),
        ("弗一10-12", ["Eph.1.10-Eph.1.12"]),
        ("以弗所书一章十节", ["Eph.1.10"]),
        ("以弗所书第一章第十节", ["Eph.1.10"]),
        ("以弗所书一章十至十二节", ["Eph.1.10-Eph.1.12"]),
        ("以弗所书一章", ["Eph.1"]),
        ("诗二十三篇", ["Ps.23"]),
        ("诗篇第二十三篇", ["Ps.23"]),
        ("诗一百一十九篇一百七十六节", ["Ps.119.176"]),
        ("诗119:176", ["Ps.119.176"]),
        ("罗8:2上", ["Rom.8.2"]),
        ("Rom 8:28a", ["Rom.8.28"]),
        ("犹3", ["Jude.1.3"]),
        ("Jude 3", ["Jude.1.3"]),
        ("犹1:3", ["Jude.1.3"]),
        ("犹20-21", ["Jude.1.20-Jude.1.21"]),
        ("门1章", ["Phlm.1"]),
        ("Matt 5:3–7:29", ["Matt.5.3-Matt.7.29"]),
        ("弗1:10 和 约14:20", ["Eph.1.10", "John.14.20"]),
        ("Eph 1:10; John 14:20, 23", ["Eph.1.10", "John.14.20", "John.14.23"]),
        # A number that starts a numbered book ends the list: not verse 2 of Rom 8, nor 1:1.
        ("Rom 8:29; 2 Cor 4:4", ["Rom.8.29", "2Cor.4.4"]),
        ("Rom. 8:29; 2 Cor. 3:18", ["Rom.8.29", "2Cor.3.18"]),
        ("Eph. 1:10, 1 Tim. 1:4", ["Eph.1.10", "1Tim.1.4"]),
        ("弗1:10；弗1:10", ["Eph.1.10"]),
    ],
)
def test_ranges_lists_and_numerals(text: str, expected: list[str]) -> None:
    assert osis(text) == expected


@pytest.mark.parametrize(
    ("text", "zh", "en"),
    [
        ("弗7:1", "以弗所书只有 6 章", "Ephesians has 6 chapters"),
        ("弗1:99", "以弗所书第 1 章只有 23 节", "Ephesians 1 has 23 verses"),
        ("俄2:1", "俄巴底亚书只有 1 章", "Obadiah has 1 chapter"),
        ("弗0:1", "从 1 开始", "start at 1"),
        ("弗1:12-10", "颠倒", "backwards"),
        ("约3:16-罗3:23", "跨卷", "across books"),
        ("弗", "缺少章号", "needs a chapter"),
        ("hello", "hello", "hello"),
        ("弗1:10 然后", "然后", "然后"),
        ("弗1:10abc", "abc", "abc"),
        ("", "请输入经文出处", "Give a scripture reference"),
        ("   ", "请输入经文出处", "Give a scripture reference"),
        ("十字架", "十字架", "十字架"),
    ],
)
def test_strict_rejects_with_reasons(text: str, zh: str, en: str) -> None:
    with pytest.raises(ScriptureError) as info:
        sc.parse_reference(text)
    assert zh in scripture_error_text(info.value, "zh")
    assert en in scripture_error_text(info.value, "en")


@pytest.mark.parametrize(
    ("text", "reason", "zh", "en"),
    [
        ("弗1:99", "verses", "以弗所书第 1 章只有 23 节", "Ephesians 1 has 23 verses"),
        ("俄2:1", "chapters", "俄巴底亚书只有 1 章", "Obadiah has 1 chapter"),
        (
            "弗1:12-10",
            "backwards",
            "范围前后颠倒：弗1:12-10",
            "The range runs backwards: Eph 1:12-10",
        ),
        ("弗0:1", "zero", "章和节从 1 开始：弗0", "Chapters and verses start at 1: 弗0"),
        ("", "empty", "请输入经文出处，例如 弗1:10", "Give a scripture reference, e.g. Eph 1:10"),
    ],
)
def test_the_error_is_a_typed_reason_the_chat_layer_words(
    text: str, reason: str, zh: str, en: str
) -> None:
    """The parser names the rule broken; `bot.presenters.scripture` words it (book names and
    ranges in the reader's language)."""
    with pytest.raises(ScriptureError) as info:
        sc.parse_reference(text)
    assert info.value.reason == reason
    assert scripture_error_text(info.value, "zh") == zh
    assert scripture_error_text(info.value, "en") == en


# ---- prose --------------------------------------------------------------------------------

COMMON_WORDS = (
    "东西 加上 来到 出来 利益 申请 但是 路上 约定 可以 西门 彼此 后来 多少 得到 书本 诗歌 "
    "太阳 路加 何必 尼龙 拿走 番茄 亚洲 玛丽 门口 来了 但以 伯父 以赛 雅致 启发 该当"
).split()


@pytest.mark.parametrize("word", COMMON_WORDS)
def test_common_words_are_not_books(word: str) -> None:
    assert sc.find_references(f"我们{word}了。{word}很好，{word}，{word}3个") == []


@pytest.mark.parametrize(
    "text",
    [
        "他来2次，唱歌3首，加3分",
        "出一份力，但二人同行，来一下",
        "大约3:15开会",
        "比赛3:1获胜",
        "这本书一章一章地读",
        "約定3點見",
        "it is 5:30 now; I said it 23 times; mark 4 items; Acts 2 happened",
        "",
        "2024年10月1日",
    ],
)
def test_prose_false_positives(text: str) -> None:
    assert sc.find_references(text) == []


def test_prose_finds_references() -> None:
    text = (
        "神在基督里的经纶（弗1:10；参约14:20，23）。诗篇二十三篇与以弗所书一章十节，"
        "又见太5:3-7:29、林前十五45、約翰福音3:16、来2:14。"
        "Read Ephesians 1:10-12 and 1 Cor 15:45, Ps 23, John 3:16, Mark 4:3."
    )
    assert found(text) == [
        "Eph.1.10",
        "John.14.20",
        "John.14.23",
        "Ps.23",
        "Matt.5.3-Matt.7.29",
        "1Cor.15.45",
        "John.3.16",
        "Heb.2.14",
        "Eph.1.10-Eph.1.12",
        "Mark.4.3",
    ]


def test_prose_lists_end_at_a_numbered_book() -> None:
    # English ministry text lists references this way; the 2 of "2 Cor." is no verse of Rom 8.
    text = "we are conformed (Rom. 8:29; 2 Cor. 3:18); see Eph. 1:10, 1 Tim. 1:4 and 1 John 1:9."
    assert found(text) == ["Rom.8.29", "2Cor.3.18", "Eph.1.10", "1Tim.1.4", "1John.1.9"]


def test_prose_single_character_books_need_a_chapter() -> None:
    assert found("来2:14说") == ["Heb.2.14"]
    assert found("诗23篇") == ["Ps.23"]
    assert found("读诗23。") == ["Ps.23"]
    assert found("出一章") == ["Exod.1"]
    assert found("西3:16") == ["Col.3.16"]
    assert found("东西 3:16，来 2次") == []
    assert found("以弗所书 1:10") == ["Eph.1.10"]
    assert found("参加1:4；参赛1:1") == ["Gal.1.4", "Isa.1.1"]


def test_prose_skips_what_does_not_exist() -> None:
    assert found("看弗7:1和弗1:99，再看弗1:3") == ["Eph.1.3"]
    assert found("约14:20, 99") == ["John.14.20"]
    assert found("约3:16, 17个人") == ["John.3.16"]


def test_normalise_refs() -> None:
    assert sc.normalise_refs("弗1:10-12；诗23；约14:20, 23") == (
        "Ps.23",
        "John.14.20",
        "John.14.23",
        "Eph.1.10",
        "Eph.1.11",
        "Eph.1.12",
    )
    assert sc.normalise_refs("诗23-24") == ("Ps.23", "Ps.24")
    assert sc.normalise_refs("没有经文") == ()
    assert sc.normalise_refs("弗1:10；弗一10") == ("Eph.1.10",)


def test_expand() -> None:
    eph = VerseRef("Eph", 1, 10)
    assert sc.expand(RefRange(eph, VerseRef("Eph", 1, 12))) == ["Eph.1.10", "Eph.1.11", "Eph.1.12"]
    assert len(sc.expand(sc.parse_reference("诗23")[0])) == 6
    cross = sc.expand(sc.parse_reference("弗1:22-2:2")[0])
    assert cross == ["Eph.1.22", "Eph.1.23", "Eph.2.1", "Eph.2.2"]
    assert len(sc.expand(sc.parse_reference("太5-7")[0])) == 48 + 34 + 29


def test_render() -> None:
    assert [sc.render_zh(r) for r in sc.parse_reference("Eph 1:10-12; Matt 5:3-7:29; Ps 23")] == [
        "弗1:10-12",
        "太5:3-7:29",
        "诗23",
    ]
    assert sc.render_en(sc.parse_reference("林前15:45")[0]) == "1 Cor 15:45"
    assert sc.render_en(sc.parse_reference("诗23-25")[0]) == "Ps 23-25"


def test_sort_key() -> None:
    ids = ["Rev.1.1", "Ps.23.1", "Ps.23", "Gen.1.2", "Ps.3.1", "Gen.1.10"]
    assert sorted(ids, key=sc.sort_key) == [
        "Gen.1.2",
        "Gen.1.10",
        "Ps.3.1",
        "Ps.23",
        "Ps.23.1",
        "Rev.1.1",
    ]


def test_long_prose_finds_each_reference_once() -> None:
    # Speed is a benchmark's business (bench/), not a timed unit test's.
    text = "神的经纶是要将祂自己分赐到人里面，参弗1:10；约14:20，23。我们来到这里，加上东西。" * 200
    refs = sc.find_references(text)
    assert [sc.render_zh(r) for r in refs] == ["弗1:10", "约14:20", "约14:23"]


# ---- properties -------------------------------------------------------------------------

BOOKS = sc.books()


@st.composite
def verses(draw: st.DrawFn) -> VerseRef:
    b = draw(st.sampled_from(BOOKS))
    chapter = draw(st.integers(1, b.chapters))
    verse = draw(st.integers(1, b.verses[chapter - 1]))
    return VerseRef(b.osis, chapter, verse)


@settings(max_examples=300, deadline=None)
@given(verses())
def test_render_zh_round_trips(v: VerseRef) -> None:
    r = RefRange(v, v)
    assert sc.parse_reference(sc.render_zh(r)) == [r]
    assert sc.find_references(f"（参{sc.render_zh(r)}）") == [r]


@settings(max_examples=300, deadline=None)
@given(verses())
def test_render_en_round_trips(v: VerseRef) -> None:
    r = RefRange(v, v)
    assert sc.parse_reference(sc.render_en(r)) == [r]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_ranges_round_trip(data: st.DataObject) -> None:
    b = data.draw(st.sampled_from(BOOKS))
    c1 = data.draw(st.integers(1, b.chapters))
    c2 = data.draw(st.integers(c1, b.chapters))
    v1 = data.draw(st.integers(1, b.verses[c1 - 1]))
    low = v1 if c2 == c1 else 1
    v2 = data.draw(st.integers(low, b.verses[c2 - 1]))
    r = RefRange(VerseRef(b.osis, c1, v1), VerseRef(b.osis, c2, v2))
    assert sc.parse_reference(sc.render_zh(r)) == [r]
    assert sc.parse_reference(sc.render_en(r)) == [r]
    assert sc.parse_reference(r.osis()) == [r]
    expanded = sc.expand(r)
    assert expanded[0] == r.start.osis() and expanded[-1] == r.end.osis()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(BOOKS), st.data())
def test_chapters_round_trip(b: sc.Book, data: st.DataObject) -> None:
    c = data.draw(st.integers(1, b.chapters))
    r = RefRange(VerseRef(b.osis, c), VerseRef(b.osis, c))
    assert sc.parse_reference(sc.render_zh(r)) == [r]


REF_ALPHABET = st.sampled_from(
    list("弗约一十二三章节篇第:：-～,，;；、 .0123456789abIJohnEph书来上壹")
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=60), st.text(REF_ALPHABET, max_size=30)))
def test_arbitrary_text_never_breaks(text: str) -> None:
    refs = sc.find_references(text)
    for r in refs:
        sc.expand(r)  # every found range exists
        sc.render_zh(r)
    try:
        parsed = sc.parse_reference(text)
    except ScriptureError as err:
        assert scripture_error_text(err, "zh") and scripture_error_text(err, "en")
    else:
        assert parsed
