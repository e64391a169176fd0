"""TXT / Markdown / EPUB / Bible loaders and the size limit, on files generated here."""

from __future__ import annotations

import gzip
import os
import zipfile
from pathlib import Path

import pytest
from ebooklib import epub

from ingest.loaders import LoadError, load_bible, load_document
from ingest.loaders.epub import load_epub
from ingest.loaders.txt import decode_text

ZH = (
    "神永远的经纶是要将祂自己分赐到祂所拣选的人里面，使他们成为祂的彰显。这是一条贯穿全本圣经的线。"
)
ZH_TW = (
    "神永遠的經綸是要將祂自己分賜到祂所揀選的人裡面，使他們成為祂的彰顯。這是一條貫穿全本聖經的線。"
)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (ZH.encode("gb18030"), ZH),
        (ZH.encode("gbk"), ZH),
        (ZH_TW.encode("big5"), ZH_TW),
        (b"\xef\xbb\xbf" + ZH.encode("utf-8"), ZH),
        (ZH_TW.encode("utf-8"), ZH_TW),
        (ZH.encode("utf-16"), ZH),
        (b"Plain English text, nothing more.", "Plain English text, nothing more."),
    ],
)
def test_encodings_are_detected(payload: bytes, expected: str) -> None:
    text, _ = decode_text(payload)
    assert text.lstrip("\ufeff") == expected


def test_txt_file_in_big5_loads_without_a_title(tmp_path: Path) -> None:
    path = tmp_path / "msg.txt"
    path.write_bytes(("經綸的意義\n\n" + ZH_TW + "\n" + ZH_TW).encode("big5"))
    doc = load_document(path)
    # A text file has no title metadata: its first line is kept as text, the file names it.
    assert doc.title == "" and doc.language == "zh"
    assert doc.blocks[0].text == "經綸的意義"
    assert doc.hints["encoding"] in ("big5", "cp950", "big5hkscs")
    assert ZH_TW in doc.plain_text()


@pytest.mark.parametrize(
    ("text", "title", "first"),
    [
        # the book's name right above its first heading: the title, not text of lesson one
        ("以弗所書讀經筆記\n\n第一課　在基督裡的福分\n\n" + ZH_TW, "以弗所書讀經筆記", "第一課"),
        ("路得记札记\n\nChapter 1\n\n" + ZH, "路得记札记", "Chapter 1"),
        # an outline's theme line right above its first point heads its paths: text
        ("新约职事\n壹　新约职事的性质与内容\n一、" + ZH, "", "新约职事"),
        ("新约职事\n\n壹　新约职事的性质与内容\n\n一、" + ZH, "", "新约职事"),
        # a chapter heading first, a sentence first, or a line above prose: no title
        ("第一章　神的经纶\n\n第二章　人的灵\n\n" + ZH, "", "第一章"),
        ("读经：弗一3\n\n第一课　福分\n\n" + ZH, "", "读经"),
        ("经纶的意义\n\n" + ZH, "", "经纶的意义"),
    ],
)
def test_a_txt_title_is_the_line_alone_above_its_first_chapter(
    tmp_path: Path, text: str, title: str, first: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    doc = load_document(path)
    assert doc.title == title
    assert doc.blocks[0].text.startswith(first)
    assert not title or all(b.text.split("\n")[0] != title for b in doc.blocks)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (bytes(range(256)) * 64, "binary"),
        (b"\x81\xff\xfe\x80" * 200, "undecodable"),
        (b"   \n\n  \n", "no text"),
    ],
)
def test_bad_text_files_are_skipped(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(LoadError, match=reason) as err:
        load_document(path)
    assert err.value.zh  # a Chinese reason for the user, too


def test_oversize_file_is_refused_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as fh:  # sparse: no 100 MB written
        fh.truncate(101 * 1024 * 1024)
    assert os.stat(path).st_blocks * 512 < 1024 * 1024
    with pytest.raises(LoadError, match="too large") as err:
        load_document(path)
    assert "文件过大" in err.value.zh
    small = tmp_path / "small.md"
    small.write_text("# 标题\n\n" + ZH * 40, encoding="utf-8")
    with pytest.raises(LoadError, match="too large"):
        load_document(small, max_bytes=1000)


def test_markdown_headings_quotes_and_inline_markup(tmp_path: Path) -> None:
    path = tmp_path / "m.md"
    path.write_text(
        "# 第一篇　神圣的分赐\n\n读经：弗一3\n\n## 一　意义\n\n**神**把祂自己\n分赐给人。\n\n"
        "> 引用的经文\n\n[链接](http://x)文字\n",
        encoding="utf-8",
    )
    doc = load_document(path)
    kinds = [(b.kind, b.level, b.text) for b in doc.blocks]
    assert kinds == [
        ("heading", 1, "第一篇　神圣的分赐"),
        ("para", 0, "读经：弗一3"),
        ("heading", 2, "一　意义"),
        ("para", 0, "神把祂自己\n分赐给人。"),
        ("quote", 0, "引用的经文"),
        ("para", 0, "链接文字"),
    ]
    assert doc.title == "第一篇　神圣的分赐"


def _epub(path: Path) -> Path:
    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title("生命的认识")
    book.set_language("zh")
    book.add_author("示例作者")
    c1 = epub.EpubHtml(title="第一章　生命的意义", file_name="c1.xhtml", lang="zh")
    c1.content = (
        "<html><body><p>生命就是神自己。</p><p>神的生命<b>进到</b>人里面。</p></body></html>"
    )
    c2 = epub.EpubHtml(title="第二章　生命的长大", file_name="c2.xhtml", lang="zh")
    c2.content = (
        "<html><body><h1>第二章　生命的长大</h1><script>var x=1;</script>"
        "<p>生命需要长大。<br/>长大需要喂养。</p><ul><li>第一点</li><li>第二点</li></ul>"
        "</body></html>"
    )
    book.add_item(c1)
    book.add_item(c2)
    book.toc = [
        epub.Link("c1.xhtml", "第一章　生命的意义", "c1"),
        epub.Link("c2.xhtml", "第二章　生命的长大", "c2"),
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", c1, c2]
    epub.write_epub(str(path), book)
    return path


def test_epub_chapters_from_spine_and_toc(tmp_path: Path) -> None:
    doc = load_document(_epub(tmp_path / "b.epub"))
    assert doc.title == "生命的认识" and doc.author == "示例作者"
    blocks = [(b.kind, b.text) for b in doc.blocks]
    assert blocks[0] == ("heading", "第一章　生命的意义")  # from the TOC
    assert ("para", "神的生命进到人里面。") in blocks
    assert ("heading", "第二章　生命的长大") in blocks
    assert all("var x" not in t for _, t in blocks)
    assert ("para", "第一点") in blocks


def test_not_a_zip_epub_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "fake.epub"
    path.write_text("this is not a zip", encoding="utf-8")
    with pytest.raises(LoadError, match="not a zip"):
        load_document(path)


def test_zip_bomb_epub_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "bomb.epub"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mimetype", "application/epub+zip")
        with zf.open("OEBPS/big.xhtml", "w") as fh:
            chunk = b"\0" * (1024 * 1024)
            for _ in range(51):
                fh.write(chunk)
    assert path.stat().st_size < 200_000
    with pytest.raises(LoadError, match="too large when decompressed") as err:
        load_document(path)
    assert "zip 炸弹" in err.value.zh
    with pytest.raises(LoadError, match="too large when decompressed"):
        load_epub(_epub(tmp_path / "ok.epub"), 10**8, max_entry_bytes=100)


def test_bible_table_skips_merged_verses(tmp_path: Path) -> None:
    path = tmp_path / "bible.tsv.gz"
    rows = "book\tchapter\tverse\ttext\nEph\t1\t1\t奉神旨意。\nEph\t1\t2\t\nbad row\nEph\t1\t3\t願頌讚。\n"
    path.write_bytes(gzip.compress(rows.encode("utf-8")))
    table = load_bible(path, 10**8)
    assert [v.osis for v in table.verses] == ["Eph.1.1", "Eph.1.3"]
    assert table.empty == 1 and table.malformed == 1
    (tmp_path / "empty.tsv").write_text("book\tchapter\tverse\ttext\n", encoding="utf-8")
    with pytest.raises(LoadError, match="no valid rows"):
        load_bible(tmp_path / "empty.tsv", 10**8)
