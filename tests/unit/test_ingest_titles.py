"""Which title a document gets: manifest, then --title, then the file's own metadata when it
is a real title (never a chapter heading), then the file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.headings import choose_title, is_chapter_heading, usable_title
from ingest.manifest import DocMeta, Manifest
from ingest.pipeline import prepare_document


@pytest.mark.parametrize(
    "heading",
    [
        "第一章 生命的经历与生命的长大",
        "第三章 神的经纶与人的灵",
        "第一篇　神圣的分赐与召会",
        "第十二讲 召会的建造",
        "壹　新约职事的性质与内容",
        "肆 今日对新约职事的有分",
        "一、神圣分赐的意义",
        "Chapter 3 Abiding",
        "Chapter Three",
        "Chapter One",
        "CHAPTER ONE",
        "CHAPTER TWELVE THE BODY",
        "Chapter Twenty-One The Bride",
        "Message 12 The Vine",
        "MESSAGE FORTY",
        "CHAPTER IV",
    ],
)
def test_chapter_headings_are_never_titles(heading: str) -> None:
    assert is_chapter_heading(heading)
    assert usable_title(heading) == ""
    assert choose_title(None, heading, Path("/books/生命的经历.txt")) == "生命的经历"


@pytest.mark.parametrize(
    "title",
    [
        "神的经纶",
        "生命的经历",
        "The Experience of Life",
        "新约职事",
        "三一神、那灵与内住的基督",
        "Part Time Shepherds",
        "Chapter Onerous Duties",
    ],
)
def test_real_titles_are_kept(title: str) -> None:
    assert not is_chapter_heading(title)
    assert choose_title(None, title, Path("x.md")) == title


@pytest.mark.parametrize("junk", ["Microsoft Word - draft3.docx", "untitled", "book.pdf", ""])
def test_placeholder_metadata_falls_back_to_the_file_name(junk: str) -> None:
    assert choose_title(None, junk, Path("/b/神的经纶.pdf")) == "神的经纶"


def test_given_title_wins_and_manifest_wins_over_cli_title(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    manifest = Manifest({path.resolve(): DocMeta(title="清单标题", author="甲")})
    cli = Manifest({}, DocMeta(title="命令行标题", author="乙"))
    meta = manifest.merged(cli).for_path(path)
    assert (meta.title, meta.author) == ("清单标题", "乙")
    other = manifest.merged(cli).for_path(tmp_path / "b.md")
    assert other.title == "命令行标题"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("生命的经历.txt", "第一章 生命的经历与生命的长大\n\n生命不是规条。", "生命的经历"),
        ("a.md", "# 第一篇　神圣的分赐\n\n神把祂自己分赐给人。", "a"),
        ("b.md", "# 神的经纶\n\n## 第三章 神的经纶与人的灵\n\n神要完成祂的经纶。", "神的经纶"),
    ],
)
def test_prepare_document_titles(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    prepared = prepare_document(path, DocMeta(), max_bytes=10**6)
    assert prepared.meta.title == expected


def test_spelled_out_english_chapter_lines_open_chapters(tmp_path: Path) -> None:
    """`CHAPTER ONE` / `Chapter Two` lines in a text file open chapters, as `Chapter 1` does,
    and `## Chapter One` headings under an H1 make a Markdown file a book."""
    from ingest.headings import is_chapter_line, names_chapter
    from ingest.loaders import load_document
    from ingest.structure import infer_type, prose_sections

    for line in ("CHAPTER ONE", "Chapter One", "CHAPTER TWENTY-ONE THE BRIDE", "Chapter Ten: Rest"):
        assert is_chapter_line(line) and names_chapter(line), line
    for line in ("Chapter Ones", "chapter one of the book says so", "Part Time Shepherds"):
        assert not is_chapter_line(line), line
    txt = tmp_path / "walking-by-the-spirit.txt"
    txt.write_text(
        "CHAPTER ONE\n\nThe Spirit is the reality of the Lord.\n\n"
        "Chapter Two\n\nWe walk by turning to Him within.\n",
        encoding="utf-8",
    )
    doc = load_document(txt)
    assert infer_type(doc) == "book"
    assert [s.chapter for s in prose_sections(doc)] == ["CHAPTER ONE", "Chapter Two"]
    assert prepare_document(txt, DocMeta(), max_bytes=10**6).meta.title == "walking-by-the-spirit"
    md = tmp_path / "book.md"
    md.write_text(
        "# Walking by the Spirit\n\n## Chapter One The Spirit\n\nThe Spirit is real.\n\n"
        "## Chapter Two The Walk\n\nWe walk by Him.\n",
        encoding="utf-8",
    )
    assert infer_type(load_document(md)) == "book"
