"""Word documents made by real producers (tests/fixtures/layout: LibreOffice from flat ODT,
pandoc from Markdown, msoffcrypto-tool): outline levels from Word numbering, heading styles,
footnotes; the old .doc format; malformed files."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from ingest.chunkers import note_pieces
from ingest.loaders import LoadError, load_document
from ingest.loaders.docx import format_number
from ingest.structure import (
    OutlinePoint,
    heading_path_at,
    infer_type,
    outline_from_blocks,
    parse_outline,
)
from retrieval.scripture import find_references, render_zh

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
SAMPLES = Path(__file__).resolve().parents[2] / "ingest" / "samples"
TRUTH = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))


_MARKER = re.compile(
    r"^(?:[壹贰叁肆]\u3000|[一二三四五六七八九十]+、|（[一二三四五六七八九十]+）|\d+\. |[a-z]\. )"
)


def unmarked(text: str) -> str:
    return _MARKER.sub("", text)


def test_a_libreoffice_outline_keeps_every_point_level_and_path() -> None:
    doc = load_document(FIXTURES / "outline-libreoffice.docx")
    assert doc.format == "docx" and doc.title == "新约职事" and infer_type(doc) == "outline"
    stated = outline_from_blocks(doc)
    assert stated is not None
    title, points = stated
    # The same outline typed as text (the sample the document was made from), parsed by markers.
    text_title, text_points = parse_outline(
        (SAMPLES / "outline-01-nt-ministry.txt").read_text(encoding="utf-8").split("\n")
    )
    assert title == text_title

    def shape(p: OutlinePoint) -> tuple[int, str, tuple[str, ...]]:
        return p.level, unmarked(p.text), tuple(map(unmarked, p.ancestors))

    assert [shape(p) for p in points] == [shape(p) for p in text_points]
    # Word numbers each depth one way: the text's two `a.` points at depth 4 come out `1.`.
    markers = [p.text[: len(p.text) - len(unmarked(p.text))] for p in points]
    typed = [p.text[: len(p.text) - len(unmarked(p.text))] for p in text_points]
    assert typed[38:40] == ["a. ", "b. "]
    assert markers == [*typed[:38], "1. ", "2. ", *typed[40:]]
    assert points[5].path(title) == (
        "新约职事 > 壹\u3000新约职事的性质与内容 > 一、新约职事只有一个，就是把三一神供应给人的职事"
        "——林后三6，四1，五18 > （二）新约职事的内容是基督那测不透的丰富——弗三8 > "
        "2. 这丰富藉着那灵分赐到信徒里面，成为他们的生命与供应——林后三18"
    )


def test_a_pandoc_outline_takes_its_levels_from_the_list_nesting() -> None:
    truth = TRUTH["outline-pandoc.docx"]
    doc = load_document(FIXTURES / "outline-pandoc.docx")
    assert infer_type(doc) == "outline"
    stated = outline_from_blocks(doc)
    assert stated is not None
    title, points = stated
    assert title == truth["title"]
    assert [(p.level, p.text.split(None, 1)[1]) for p in points] == [
        (level, text) for level, text in truth["points"]
    ]


def test_headings_and_footnotes_of_a_pandoc_message() -> None:
    doc = load_document(FIXTURES / "message-notes-pandoc.docx")
    headings = [(b.level, b.text) for b in doc.blocks if b.kind == "heading"]
    assert headings[:2] == [(1, "第一篇\u3000神圣的分赐与召会"), (2, "一\u3000神圣分赐的意义")]
    truth = TRUTH["message-notes-pandoc.docx"]["notes"]
    assert [(n.number, n.text) for n in doc.notes] == [
        (i, t["text"]) for i, t in enumerate(truth, 1)
    ]
    # The quote is the whole sentence the note mark follows.
    assert (
        doc.notes[0].quote == "以弗所书一章说，父神在基督里曾赐给我们天上各样属灵的福气（弗一3）。"
    )
    assert all(n.quote.endswith(t["anchor"]) for n, t in zip(doc.notes, truth, strict=True))
    paths = [heading_path_at(doc.blocks, n.anchor) for n in doc.notes]
    assert paths[0] == ("第一篇\u3000神圣的分赐与召会", "一\u3000神圣分赐的意义")
    pieces = note_pieces(doc.notes, paths, find_references, render_zh)
    assert [(p.kind, p.chapter) for p in pieces] == [
        ("footnote", "弗1:3-14"),
        ("footnote", "林前15:45"),
        ("footnote", "罗8:2"),
    ]
    assert pieces[0].text == f"{doc.notes[0].quote}\n注1\u3000{truth[0]['text']}"


@pytest.mark.parametrize(
    ("n", "fmt", "shown"),
    [
        (3, "chineseLegalSimplified", "叁"),
        (12, "taiwaneseCountingThousand", "十二"),
        (21, "chineseCounting", "二十一"),
        (2, "ideographTraditional", "乙"),
        (14, "upperRoman", "XIV"),
        (28, "lowerLetter", "bb"),
        (7, "decimal", "7"),
    ],
)
def test_word_number_formats(n: int, fmt: str, shown: str) -> None:
    assert format_number(n, fmt) == shown


# ---- malformed ------------------------------------------------------------------------------


def test_an_old_doc_says_how_to_convert_it() -> None:
    with pytest.raises(LoadError) as err:
        load_document(FIXTURES / "old-outline.doc")
    assert "另存为 .docx" in err.value.zh and "--convert-to docx" in err.value.zh
    assert "Save it as .docx" in err.value.en


def test_an_old_doc_named_docx_gets_the_same_message(tmp_path: Path) -> None:
    path = tmp_path / "renamed.docx"
    path.write_bytes((FIXTURES / "old-outline.doc").read_bytes())
    with pytest.raises(LoadError, match="old Word format"):
        load_document(path)


def test_an_encrypted_docx_is_refused() -> None:
    with pytest.raises(LoadError) as err:
        load_document(FIXTURES / "encrypted.docx")
    assert err.value.zh == "Word 文档已加密（需要密码）" and "encrypted" in err.value.en


def test_a_truncated_docx_is_refused(tmp_path: Path) -> None:
    data = (FIXTURES / "message-notes-pandoc.docx").read_bytes()
    for cut in (len(data) // 2, len(data) - 30):
        path = tmp_path / "cut.docx"
        path.write_bytes(data[:cut])
        with pytest.raises(LoadError) as err:
            load_document(path)
        assert err.value.zh and err.value.en


def test_a_zip_bomb_named_docx_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as entry:
            block = b"\0" * (1 << 20)
            for _ in range(60):
                entry.write(block)  # 60 MB, ~60 KB packed
    assert path.stat().st_size < 1 << 20
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "zip 炸弹" in err.value.zh and "too large when decompressed" in err.value.en


def test_a_docx_with_the_wrong_extension_is_named(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes((FIXTURES / "outline-pandoc.docx").read_bytes())
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "文件内容是 Word 文档（.docx），与扩展名 .txt 不符" in err.value.zh


def test_a_docx_that_is_not_a_word_package_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "not word")
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "Word" in err.value.zh and err.value.en
