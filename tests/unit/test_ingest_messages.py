"""One message, every producer: its title block is metadata and its footnotes are notes.

The fixtures (tests/fixtures/layout, made by make_fixtures.py there) hold the same sample
message — a title block (title, subtitle, author, date), six section headings, a quoted verse
and four footnotes, one of them in the quotation — as Typst, WeasyPrint, LibreOffice and
xelatex set it in a PDF, and as LibreOffice and pandoc write it to .docx and EPUB. Then the
rules on files and lines built here.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import docx
import pytest
from docx.enum.text import WD_ALIGN_PARAGRAPH

from ingest.loaders import load_document
from ingest.titleblock import author_name, is_date, read_title_block

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
TRUTH = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
MESSAGES = [name for name, t in TRUTH.items() if "blocks" in t]


def norm(text: str) -> str:
    return re.sub(r"[\s\u3000]+", "", text)


def test_the_message_comes_from_four_pdf_producers_and_two_word_and_epub_writers() -> None:
    producers = {TRUTH[name]["producer"].split(" ")[0] for name in MESSAGES}
    assert {"Typst", "WeasyPrint", "LibreOffice", "xelatex", "pandoc"} <= producers
    assert {Path(name).suffix for name in MESSAGES} == {".pdf", ".docx", ".epub"}


@pytest.mark.parametrize("name", MESSAGES)
def test_the_title_block_is_metadata_not_text(name: str) -> None:
    truth = TRUTH[name]
    doc = load_document(FIXTURES / name)
    assert (doc.title, doc.author, doc.hints.get("subtitle"), doc.hints.get("date")) == (
        truth["title"],
        truth["author"],
        truth["subtitle"],
        truth["date"],
    )
    text = norm("".join(b.text for b in doc.blocks))
    for key in ("subtitle", "author", "date"):
        assert norm(truth[key]) not in text


@pytest.mark.parametrize("name", MESSAGES)
def test_headings_and_text_come_out_whole_without_marks(name: str) -> None:
    """No mark is a line or a block of its own (`> 2`), none is glued to the text, and no
    note's text is in the body."""
    truth = TRUTH[name]
    doc = load_document(FIXTURES / name)
    got = [(b.kind == "heading", norm(b.text)) for b in doc.blocks]
    assert got == [(b["kind"] == "heading", norm(b["text"])) for b in truth["blocks"]]


@pytest.mark.parametrize("name", MESSAGES)
def test_every_footnote_is_a_note_of_the_sentence_its_mark_follows(name: str) -> None:
    truth = TRUTH[name]
    doc = load_document(FIXTURES / name)
    assert [(n.number, norm(n.text)) for n in doc.notes] == [
        (i, norm(t["text"])) for i, t in enumerate(truth["notes"], 1)
    ]
    for note, want in zip(doc.notes, truth["notes"], strict=True):
        assert norm(note.quote).endswith(norm(want["anchor"]))
        assert norm(want["anchor"]) in norm(doc.blocks[note.anchor].text)
    # The last note's mark stands inside the quoted verse.
    assert norm(doc.blocks[doc.notes[-1].anchor].text) == norm(truth["blocks"][-1]["text"])


# ---- the rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("1975年3月", True),
        ("1975年3月12日", True),
        ("一九七五年", True),
        ("2024-05-01", True),
        ("March 1975", True),
        ("12 March 1975", True),
        ("第一篇", False),
        ("弗一3", False),
        ("示例作者", False),
    ],
)
def test_what_reads_as_a_date(text: str, date: bool) -> None:
    assert is_date(text) is date


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("示例作者", "示例作者"),
        ("作者：示例作者", "示例作者"),
        ("某某 著", "某某"),
        ("甲某、乙某", "甲某、乙某"),
        ("John Smith", "John Smith"),
        ("by John Smith and Jane Doe", "John Smith and Jane Doe"),
        ("信息样本　第一篇", ""),
        ("读经：弗一3", ""),
        ("神圣的分赐与召会的关系", ""),
    ],
)
def test_what_reads_as_an_author(text: str, name: str) -> None:
    assert author_name(text) == name


def test_lines_under_a_title_are_read_as_subtitle_author_and_date() -> None:
    block = read_title_block("神的经纶", ["信息样本　第一篇", "示例作者", "1975年3月"])
    assert (block.subtitle, block.author, block.date) == (
        "信息样本\u3000第一篇",
        "示例作者",
        "1975年3月",
    )
    assert read_title_block("神的经纶", ["作者：示例作者"]).author == "示例作者"
    only = read_title_block("神的经纶", ["——论神圣的分赐"])
    assert (only.subtitle, only.author) == ("——论神圣的分赐", "")


def test_a_word_title_with_a_centred_byline_and_no_styles(tmp_path: Path) -> None:
    """As one types it in Word: a Title, then centred lines, then the text."""
    document = docx.Document()
    document.add_paragraph("神的经纶", style="Title")
    for text in ("示例作者 著", "1984年"):
        document.add_paragraph(text).alignment = WD_ALIGN_PARAGRAPH.CENTER
    document.add_paragraph("神的经纶是神的计划。").alignment = WD_ALIGN_PARAGRAPH.CENTER
    document.add_paragraph("这是正文的第一段。")
    path = tmp_path / "centred.docx"
    document.save(str(path))
    doc = load_document(path)
    assert (doc.title, doc.author, doc.hints.get("date")) == ("神的经纶", "示例作者", "1984年")
    assert [b.text for b in doc.blocks] == ["神的经纶是神的计划。", "这是正文的第一段。"]


def _epub(path: Path, files: dict[str, str], title: str = "书") -> Path:
    """A minimal EPUB 3 with `files` (name → body XHTML) in spine order."""
    items = "".join(
        f'<item id="f{i}" href="{name}" media-type="application/xhtml+xml"/>'
        for i, name in enumerate(files)
    )
    spine = "".join(f'<itemref idref="f{i}"/>' for i in range(len(files)))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
        'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:identifier id="id">x</dc:identifier><dc:title>{title}</dc:title>'
        "<dc:language>zh</dc:language></metadata>"
        f"<manifest>{items}</manifest><spine>{spine}</spine></package>"
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip")
        zf.writestr("META-INF/container.xml", container)
        zf.writestr("OEBPS/content.opf", opf)
        for name, body in files.items():
            zf.writestr(
                f"OEBPS/{name}",
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml" '
                'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>x</title></head>'
                f"<body>{body}</body></html>",
            )
    return path


def test_epub_notes_are_found_by_file_and_a_mark_without_one_stays_text(tmp_path: Path) -> None:
    """Two files each with a note `fn1` (ids are per file); one mark points at a note in a
    notes file; one at nothing, and its label stays in the text."""
    ref = '<a epub:type="noteref" href="{href}"><sup>{n}</sup></a>'
    files = {
        "a.xhtml": f"<h1>甲</h1><p>第一句。{ref.format(href='#fn1', n=1)}第二句。</p>"
        '<aside epub:type="footnote" id="fn1"><p><a href="#r1">1</a>甲的注。</p></aside>',
        "b.xhtml": f"<h1>乙</h1><p>第三句。{ref.format(href='#fn1', n=1)}</p>"
        f"<p>第四句。{ref.format(href='notes.xhtml#n9', n=2)}第五句{ref.format(href='#none', n=3)}。</p>"
        '<section epub:type="footnotes"><hr/><ol><li id="fn1" epub:type="footnote">'
        '<p>乙的注。<a href="#r" role="doc-backlink">↩︎</a></p></li></ol></section>',
        "notes.xhtml": '<aside epub:type="endnote" id="n9"><p>书末的注，'
        '见<a href="https://example.org/">网页</a>。</p></aside>',
    }
    doc = load_document(_epub(tmp_path / "notes.epub", files))
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "甲"),
        ("para", "第一句。第二句。"),
        ("heading", "乙"),
        ("para", "第三句。"),
        ("para", "第四句。第五句3。"),
    ]
    assert [(n.text, n.anchor, n.quote) for n in doc.notes] == [
        ("甲的注。", 1, "第一句。"),
        ("乙的注。", 3, "第三句。"),
        ("书末的注，见网页。", 4, "第四句。"),
    ]
