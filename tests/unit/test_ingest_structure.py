"""Outline trees, footnote entries, type inference, prose chunk sizes and overlap."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from ingest.chunkers import (
    MAX_TOKENS,
    MIN_TOKENS,
    count_tokens,
    outline_pieces,
    prose_pieces,
    split_sentences,
)
from ingest.loaders import Block, Document, load_document
from ingest.structure import (
    Section,
    infer_type,
    outline_marker,
    parse_footnotes,
    parse_outline,
)

OUTLINE_ZH = """新约职事
壹　新约职事的性质
一、新约职事只有一个——林后三6
（一）旧约的职事是字句的职事
（二）新约职事的内容是基督的丰富
1. 基督的丰富包括神性与人性
   这一行是上一点的续行
2. 这丰富藉着那灵分赐
a. 第一小点
b. 第二小点
3、第三点
二、保罗的职事
（一）启示的来源——加一11–12
贰　彼得的职事
"""

OUTLINE_EN = """The New Testament Ministry
I. The nature of the ministry
A. One ministry
1. Supplying the Triune God
a. As life
b. As the supply
B. Two aspects
H. Eighth point
I. Ninth point under the same Roman numeral
II. Paul's ministry
A. The source of revelation
"""


def test_outline_tree_paths_zh() -> None:
    title, points = parse_outline(OUTLINE_ZH.split("\n"))
    assert title == "新约职事"
    paths = [p.path(title) for p in points]
    assert paths[0] == "新约职事 > 壹　新约职事的性质"
    assert (
        "新约职事 > 壹　新约职事的性质 > 一、新约职事只有一个——林后三6 > （一）旧约的职事是字句的职事"
        in paths
    )
    deep = next(p for p in points if p.text.startswith("a. 第一小点"))
    assert deep.level == 5
    assert deep.path(title).endswith("> 2. 这丰富藉着那灵分赐 > a. 第一小点")
    third = next(p for p in points if p.text.startswith("3、"))
    assert third.level == 4  # closes the a./b. level
    second = next(p for p in points if p.text.startswith("二、保罗"))
    assert second.path(title) == "新约职事 > 壹　新约职事的性质 > 二、保罗的职事"
    source = next(p for p in points if p.text.startswith("（一）启示"))
    assert source.path(title) == (
        "新约职事 > 壹　新约职事的性质 > 二、保罗的职事 > （一）启示的来源——加一11–12"
    )
    assert points[-1].path(title) == "新约职事 > 贰　彼得的职事"
    first = next(p for p in points if p.text.startswith("1. 基督"))
    assert first.text == "1. 基督的丰富包括神性与人性\n这一行是上一点的续行"


def test_outline_tree_paths_en_with_roman_letter_ambiguity() -> None:
    title, points = parse_outline(OUTLINE_EN.split("\n"))
    by_text = {p.text: p for p in points}
    assert by_text["I. The nature of the ministry"].level == 1
    assert by_text["a. As life"].path(title) == (
        "The New Testament Ministry > I. The nature of the ministry > A. One ministry > "
        "1. Supplying the Triune God > a. As life"
    )
    assert by_text["I. Ninth point under the same Roman numeral"].level == 2
    assert by_text["II. Paul's ministry"].level == 1
    assert by_text["A. The source of revelation"].path(title) == (
        "The New Testament Ministry > II. Paul's ministry > A. The source of revelation"
    )


def test_outline_unit_is_a_point_with_its_sub_points() -> None:
    title, points = parse_outline(OUTLINE_ZH.split("\n"))
    pieces = outline_pieces(title, points)
    # 贰 is a bare point: it rides with 壹's unit rather than being a heading-only chunk, and
    # the chunk is labelled with the path the two share (the outline itself), not as 壹's
    assert len(pieces) == 1
    (piece,) = pieces
    assert piece.text.startswith("壹　新约职事的性质\n一、新约职事只有一个")
    assert "b. 第二小点" in piece.text and piece.text.endswith("贰　彼得的职事")
    assert piece.chapter == "" and piece.search_prefix == piece.extra["path"] == "新约职事"


def _assert_labels_are_true(title: str, points: list, pieces: list) -> None:  # type: ignore[type-arg]
    """Every point's head line is in exactly one chunk, whose path leads to that point; no
    chunk is only a heading."""
    for point in points:
        head = point.text.split("\n", 1)[0]
        holding = [p for p in pieces if head in p.text.split("\n")]
        own = point.path(title)
        if not holding:  # a point split into its sub-points' units: its head is in their path
            assert any(
                p.extra["path"] == own or p.extra["path"].startswith(own + " > ") for p in pieces
            ), head
            continue
        assert len(holding) == 1, head
        assert own == holding[0].extra["path"] or own.startswith(holding[0].extra["path"] + " > ")
    for piece in pieces:
        assert "\n" in piece.text, piece.text


def test_a_last_point_with_text_of_its_own_is_its_own_unit_under_its_own_path() -> None:
    title, points = parse_outline([*OUTLINE_ZH.split("\n"), "彼得的职事是牧养群羊，坚固弟兄。"])
    pieces = outline_pieces(title, points)
    assert [p.chapter for p in pieces] == ["壹　新约职事的性质", "贰　彼得的职事"]
    assert pieces[1].text == "贰　彼得的职事\n彼得的职事是牧养群羊，坚固弟兄。"
    assert pieces[1].extra["path"] == "新约职事 > 贰　彼得的职事"
    assert "彼得" not in pieces[0].text
    _assert_labels_are_true(title, points, pieces)
    from retrieval.labels import CitationLabel
    from retrieval.types import Chunk

    labels = [
        CitationLabel.of(
            Chunk("c", p.text, p.text, "d", source=title, type="outline", chapter=p.chapter)
        )
        for p in pieces
    ]
    assert [x.text("zh") for x in labels] == [
        "新约职事，壹　新约职事的性质",
        "新约职事，贰　彼得的职事",
    ]


def test_a_bare_point_after_a_split_unit_is_labelled_with_the_path_they_share() -> None:
    title, points = parse_outline(OUTLINE_ZH.split("\n"))
    pieces = outline_pieces(title, points, max_tokens=60)
    _assert_labels_are_true(title, points, pieces)
    last = pieces[-1]
    # 贰 (only a heading) joins 壹's last unit: labelled with the outline, and 壹's heading,
    # which that label no longer names, is shown above 二、 as in the outline
    assert last.chapter == "" and last.extra["path"] == "新约职事"
    assert (
        last.text
        == "壹　新约职事的性质\n二、保罗的职事\n（一）启示的来源——加一11–12\n贰　彼得的职事"
    )
    # （一） (only a heading) joins the units of its sibling （二）: under 一、, with （二） shown
    first = pieces[0]
    assert first.chapter == "壹　新约职事的性质 > 一、新约职事只有一个——林后三6"
    assert first.text.startswith(
        "（一）旧约的职事是字句的职事\n（二）新约职事的内容是基督的丰富\n1. "
    )


def test_big_outline_points_split_into_sub_point_units_with_their_path() -> None:
    lines = ["纲目", "壹　大点"]
    for i, zh in enumerate("一二三四五六", start=1):
        lines.append(f"{zh}、第{i}个小点，讲到生命的长大")
        lines += [f"（{n}）" + "这是一段很长的说明文字，供应生命，" * 6 for n in "一二三"]
    title, points = parse_outline(lines)
    pieces = outline_pieces(title, points, max_tokens=300)
    assert len(pieces) > 1
    for piece in pieces:
        assert count_tokens(piece.text) <= 300
        assert piece.chapter.startswith("壹　大点 > ")
        assert piece.extra["path"] == f"纲目 > {piece.chapter}"
        heads = [ln for ln in piece.text.split("\n") if re.match(r"^[一二三四五六]、", ln)]
        assert heads and all(h.endswith("讲到生命的长大") for h in heads)
        # every sub-point of a unit is in the same chunk as its point
        assert piece.text.count("（一）") == piece.text.count("（三）") == len(heads)


def test_sample_outlines_have_no_heading_only_chunk() -> None:
    samples = Path(__file__).resolve().parents[2] / "ingest" / "samples"
    for name in ("outline-01-nt-ministry.txt", "outline-02-three-stages.txt"):
        title, points = parse_outline((samples / name).read_text(encoding="utf-8").split("\n"))
        for piece in outline_pieces(title, points):
            assert "\n" in piece.text and count_tokens(piece.text) >= 100, piece.text


def test_outline_marker_styles() -> None:
    assert outline_marker("壹　标题") == "zh_capital"
    assert outline_marker("一、标题") == "zh_num"
    assert outline_marker("（三）标题") == "zh_paren"
    assert outline_marker("12. point") == "arabic"
    assert outline_marker("1、要点") == "arabic"
    assert outline_marker("1:10 is not a point") is None
    assert outline_marker("3.5 percent") is None
    assert outline_marker("一个普通的句子") is None
    assert outline_marker("IV. Fourth") == "roman"


def test_footnote_entries(tmp_path: Path) -> None:
    path = tmp_path / "fn.md"
    path.write_text(
        "# 以弗所书注解\n\n## 弗1:10\n\n> 要照所安排的，使天上地上一切所有的都在基督里面同归于一。\n\n"
        "注1　安排就是经纶。参提前一4。\n\n第二段仍属注1。\n\n注2　同归于一。\n\n"
        "## 弗1:11\n\n> 我们也在他里面得了基业。\n\n1. 基业就是基督。\n",
        encoding="utf-8",
    )
    doc = load_document(path)
    assert infer_type(doc) == "footnote"
    entries = parse_footnotes(doc)
    assert [e.heading for e in entries] == ["弗1:10", "弗1:11"]
    assert entries[0].verse_text.startswith("要照所安排的")
    assert entries[0].notes == [
        "注1　安排就是经纶。参提前一4。\n第二段仍属注1。",
        "注2　同归于一。",
    ]
    assert entries[1].notes == ["1. 基业就是基督。"]


def test_type_inference(tmp_path: Path) -> None:
    outline = tmp_path / "o.txt"
    outline.write_text(OUTLINE_ZH, encoding="utf-8")
    assert infer_type(load_document(outline)) == "outline"
    message = tmp_path / "m.md"
    message.write_text("# 第一篇　经纶\n\n## 一　意义\n\n神有一个经纶。" * 1, encoding="utf-8")
    assert infer_type(load_document(message)) == "message"
    book = Document(
        Path("b.txt"),
        "txt",
        [Block("第一章　生命"), Block("文字。"), Block("第二章　长大"), Block("文字。")],
    )
    assert infer_type(book) == "book"


def _paragraphs(n: int) -> list[str]:
    sentences = [
        f"这是第{i}句话，说到神圣的分赐如何进到人里面，使人在生命里长大，成为神的彰显。"
        for i in range(n)
    ]
    return ["".join(sentences[i : i + 4]) for i in range(0, n, 4)]


def test_prose_chunks_are_400_to_600_tokens_whole_sentences_with_overlap() -> None:
    paragraphs = _paragraphs(120)
    pieces = prose_pieces([Section(("第一章　分赐",), paragraphs)])
    sizes = [count_tokens(p.text) for p in pieces]
    assert len(pieces) > 5
    assert all(MIN_TOKENS <= s <= MAX_TOKENS for s in sizes[:-1]), sizes
    assert sizes[-1] <= MAX_TOKENS
    all_sentences = {s for p in paragraphs for s in split_sentences(p)}
    for a, b in itertools.pairwise(pieces):
        assert a.chapter == "第一章　分赐" and a.search_prefix == "第一章　分赐"
        a_sent = split_sentences(a.text.replace("\n", ""))
        b_sent = split_sentences(b.text.replace("\n", ""))
        assert set(a_sent) <= all_sentences and set(b_sent) <= all_sentences  # never mid-sentence
        shared = [s for s in b_sent if s in a_sent]
        assert shared and b_sent[: len(shared)] == shared == a_sent[-len(shared) :]
        overlap = sum(count_tokens(s) for s in shared) / count_tokens(a.text)
        assert 0.15 <= overlap <= 0.35, overlap


def test_prose_english_sentences_and_long_sentence_cut_at_clauses() -> None:
    text = "The Lord is the Spirit (2 Cor. 3:17). Eph. 1:10 speaks of the economy! Is it so? Yes."
    assert split_sentences(text) == [
        "The Lord is the Spirit (2 Cor. 3:17).",
        "Eph. 1:10 speaks of the economy!",
        "Is it so?",
        "Yes.",
    ]
    long_sentence = "，".join(["神圣分赐的流" * 5] * 40) + "。"
    pieces = prose_pieces([Section(("长句",), [long_sentence])])
    assert all(count_tokens(p.text) <= MAX_TOKENS for p in pieces)
    assert all(re.search(r"[，。]$", p.text) for p in pieces)


def test_sections_never_mix_and_short_lead_in_joins_next() -> None:
    sections = [
        Section(("第一篇",), ["读经：弗一3。"]),
        Section(("第一篇", "一　意义"), ["神圣的分赐。" * 10]),
        Section(("第一篇", "二　过程"), ["经过过程。" * 10]),
    ]
    pieces = prose_pieces(sections)
    assert [p.chapter for p in pieces] == ["第一篇 > 一　意义", "第一篇 > 二　过程"]
    assert pieces[0].text.startswith("读经：弗一3。")
    assert "经过过程" not in pieces[0].text


def test_footnote_chunks_carry_the_verse(tmp_path: Path) -> None:
    from ingest.manifest import DocMeta
    from ingest.pipeline import build_document, synonym_tagger

    path = tmp_path / "fn.md"
    long_note = "注2　" + "神圣的分赐是神经纶的中心。" * 120
    path.write_text(
        "# 以弗所书注解\n\n## 弗1:10\n\n> 要照所安排的，使天上地上一切所有的都在基督里面同归于一。\n\n"
        "注1　安排就是经纶。参提前一4。\n\n"
        + long_note
        + "\n\n## 弗1:11\n\n> 我们也在他里面得了基业。\n\n"
        "注1　基业就是基督自己。\n",
        encoding="utf-8",
    )
    built = build_document(
        path, DocMeta(), max_bytes=10**6, tagger=synonym_tagger([("经纶", "economy")])
    )
    assert built.record.type == "footnote"
    chunks = built.chunks
    assert [c.chapter for c in chunks] == ["弗1:10", "弗1:10", "弗1:11"]  # long notes split
    first, second, third = chunks
    assert first.text.startswith("弗1:10　要照所安排的") and "注1　安排就是经纶" in first.text
    assert second.text.startswith("弗1:10　要照所安排的") and second.text.count("注2") == 1
    assert first.scripture_refs == ("Eph.1.10", "1Tim.1.4")
    assert second.scripture_refs == ("Eph.1.10",) and third.scripture_refs == ("Eph.1.11",)
    assert first.extra == {"verse": "弗1:10", "part": 1} and third.extra == {"verse": "弗1:11"}
    assert first.topic_tags == ("经纶",)
    assert [c.position for c in chunks] == [0, 1, 2]


def test_prose_chunks_know_their_paragraph_numbers() -> None:
    para = "神圣的分赐是一个流。" * 30  # ~300 tokens
    sections = [
        Section(("第一篇　分赐",), ["读经：弗一3"]),
        Section(("第一篇　分赐", "一　意义"), [para, para, para]),
        Section(("第一篇　分赐", "二　路线"), [para, para]),
    ]
    pieces = prose_pieces(sections)
    assert pieces[0].extra["para"] == 1  # the 读经 lead-in is paragraph 1
    spans = [(p.extra["para"], p.extra["para_end"]) for p in pieces]
    assert spans[-1][1] == 6
    assert all(a <= b for a, b in spans)
    assert [p.chapter for p in pieces if p.extra["para"] >= 5][-1].endswith("二　路线")


def test_prose_chunks_never_cut_inside_brackets_or_scripture_references() -> None:
    """The chunker uses the one splitter (retrieval.sentences): a bracketed reference list
    with `；` stays in its sentence, and `cf.` does not end one before `John 15:5`."""
    from retrieval.sentences import split_sentences as shared_splitter

    bracket = "召会是神圣分赐的结果（约十四20；一13–14）。"
    reference = "See cf. John 15:5 for the vine."
    assert split_sentences(bracket + "这是另一句。") == [bracket, "这是另一句。"]
    assert split_sentences(reference + " The branch abides.") == [
        reference,
        "The branch abides.",
    ]
    # Sentences are packed whole: with each sentence just under half a chunk, a boundary
    # falls between sentences only, so every chunk is made of whole sentences of the text.
    zh = [bracket + "神圣的分赐" * 11 + "在召会里显出来（弗一23；三10）。" for _ in range(12)]
    en = [reference + " The branch remains in the vine and bears fruit." * 20 for _ in range(12)]
    for paragraphs in (zh, en):
        sentences = {s.strip() for p in paragraphs for s in shared_splitter(p) if s.strip()}
        pieces = prose_pieces([Section(("第一章",), paragraphs)], min_tokens=100, max_tokens=200)
        assert len(pieces) > 2
        for piece in pieces:
            for line in piece.text.split("\n"):
                assert set(split_sentences(line)) <= sentences, line
            assert "一13–14）。" not in split_sentences(piece.text.replace("\n", ""))
            assert "John 15:5 for the vine." not in split_sentences(piece.text)
