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
        "Message 12 The Vine",
        "CHAPTER IV",
    ],
)
def test_chapter_headings_are_never_titles(heading: str) -> None:
    assert is_chapter_heading(heading)
    assert usable_title(heading) == ""
    assert choose_title(None, heading, Path("/books/生命的经历.txt")) == "生命的经历"


@pytest.mark.parametrize(
    "title",
    ["神的经纶", "生命的经历", "The Experience of Life", "新约职事", "三一神、那灵与内住的基督"],
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
