"""PDF structure from layout: on PDFs typeset by real producers (tests/fixtures/layout, made by
its make_fixtures.py with WeasyPrint, LibreOffice and xelatex from the public-domain CUV and
KJV), and on positioned lines built here for the rules one at a time."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pypdf
import pytest

from ingest.layout import Glyph, Line, Page, blocks_from_pages, lines_from_glyphs
from ingest.loaders import LoadError, LoadOptions, load_document
from ingest.loaders.pdf import page_ranges
from ingest.loaders.safety import check_pdf_streams
from ingest.page import Mark
from ingest.page_notes import split_notes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
TRUTH = json.loads((FIXTURES / "truth.json").read_text(encoding="utf-8"))
BOOKS = [name for name, t in TRUTH.items() if name.endswith(".pdf") and "chapters" in t]


def norm(text: str) -> str:
    """Without spaces, and without the two CUV characters xelatex's Fandol fonts lack (─, 餽:
    the producer drops them)."""
    return re.sub(r"[\s\u3000─餽\ufffd]+", "", text)


def headings(truth: dict) -> list[tuple[int, str]]:
    out = []
    for ch in truth["chapters"]:
        out.append((1, ch["heading"]))
        out += [(2, s["heading"]) for s in ch.get("sections", [])]
    return out


def paragraphs(truth: dict) -> list[str]:
    out = []
    for ch in truth["chapters"]:
        out += ch["paragraphs"]
        for s in ch.get("sections", []):
            out += s["paragraphs"]
    return out


@pytest.mark.parametrize("name", BOOKS)
def test_every_heading_is_found_whole_at_its_level(name: str) -> None:
    doc = load_document(FIXTURES / name)
    found = [(b.level, norm(b.text)) for b in doc.blocks if b.kind == "heading"]
    assert found == [(level, norm(text)) for level, text in headings(TRUTH[name])]


@pytest.mark.parametrize("name", BOOKS)
def test_paragraphs_come_out_whole_in_reading_order_without_running_lines(name: str) -> None:
    truth = TRUTH[name]
    doc = load_document(FIXTURES / name)
    paras = [norm(b.text) for b in doc.blocks if b.kind == "para"]
    want = [norm(p) for p in paragraphs(truth)]
    assert paras == want
    text = "\n".join(b.text for b in doc.blocks if b.kind == "para")
    for running in truth["running"]:
        assert running not in text
    assert not re.search(r"\d", text)  # page numbers: the source text has no digits


def test_english_words_hyphenated_at_line_ends_are_rejoined() -> None:
    truth = TRUTH["proverbs-weasyprint-en.pdf"]
    doc = load_document(FIXTURES / "proverbs-weasyprint-en.pdf")
    vocabulary = set(re.findall(r"[A-Za-z']+", " ".join(paragraphs(truth))))
    words = re.findall(r"[A-Za-z']+", " ".join(b.text for b in doc.blocks if b.kind == "para"))
    assert words and not [w for w in words if w not in vocabulary]


def test_two_column_pages_are_read_column_by_column() -> None:
    doc = load_document(FIXTURES / "jonah-twocolumn-xelatex.pdf")
    assert doc.hints["columns"] == "2"
    text = norm(doc.plain_text())
    starts = [text.find(norm(p)[:16]) for p in paragraphs(TRUTH["jonah-twocolumn-xelatex.pdf"])]
    assert -1 not in starts and starts == sorted(starts)


# ---- the rules on lines built here ----------------------------------------------------------


def line(text: str, x0: float, top: float, *, size: float = 10, bold: bool = False) -> Line:
    width = size * len(text) if not text.isascii() else size * 0.5 * len(text)
    return Line(text, x0, top, x0 + width, top + size, size, bold)


def page(number: int, *lines: Line, height: float = 800) -> Page:
    for ln in lines:
        ln.page = number
    return Page(number, 600, height, list(lines))


def test_running_header_by_repetition_and_page_numbers_go() -> None:
    pages = []
    for n in range(1, 4):
        body = [
            line("这是正文的一行文字这是正文的一行文字这是正文的", 50, 100 + 14 * i)
            for i in range(5)
        ]
        pages.append(
            page(n, line("书名 · 丛书", 50, 40, size=8), *body, line(f"- {n} -", 280, 760, size=8))
        )
    layout = blocks_from_pages(pages)
    text = "".join(b.text for b in layout.blocks)
    assert "丛书" not in text and "-" not in text and text.count("一行文字") == 30


def test_a_large_line_is_a_heading_a_wrapped_heading_joins_and_a_bare_chapter_takes_its_title() -> (
    None
):
    full = "甲乙丙丁戊己庚辛壬癸甲乙丙丁戊己庚辛壬癸甲乙丙丁戊己庚辛壬癸"
    lines = [
        line("第三章", 50, 60, size=14, bold=True),
        line("神的经纶", 50, 84, size=20, bold=True),
        line(full, 70, 130),
        line(full[:20] + "。", 50, 144),
        line("一个很长的小标题，长得要", 50, 180, size=12, bold=True),
        line("换到第二行", 50, 196, size=12, bold=True),
        line(full, 70, 230),
        line(full, 50, 244),
    ]
    blocks = blocks_from_pages([page(1, *lines)]).blocks
    assert [(b.kind, b.level, b.text) for b in blocks] == [
        ("heading", 1, "第三章\u3000神的经纶"),
        ("para", 0, full + full[:20] + "。"),
        ("heading", 2, "一个很长的小标题，长得要换到第二行"),
        ("para", 0, full + full),
    ]


def test_a_bold_line_of_body_size_with_space_around_it_is_a_heading() -> None:
    full = "天地万物都是藉着祂造的凡被造的没有一样不是藉着祂造的在祂里面"
    lines = [
        line(full, 70, 100),
        line(full[:12] + "。", 50, 114),
        line("生命的光", 50, 150, bold=True),  # body size, bold, a blank line above
        line(full, 70, 170),
        line("加粗的词", 50, 184, bold=True),  # bold but run into the paragraph: body text
        line(full[:12] + "。", 50, 198),
    ]
    blocks = blocks_from_pages([page(1, *lines)]).blocks
    assert [(b.kind, b.text) for b in blocks] == [
        ("para", full + full[:12] + "。"),
        ("heading", "生命的光"),
        ("para", full + "加粗的词" + full[:12] + "。"),
    ]


def test_paragraphs_join_across_page_breaks_and_split_at_indents() -> None:
    full = "天地万物都是藉着祂造的凡被造的没有一样不是藉着祂造的在祂里面"
    p1 = page(1, line(full, 50, 100), line(full, 50, 114))
    p2 = page(2, line(full[:10] + "。", 50, 100), line(full, 70, 114), line("完。", 50, 128))
    blocks = blocks_from_pages([p1, p2]).blocks
    assert [b.text for b in blocks] == [full * 2 + full[:10] + "。", full + "完。"]


def test_glyphs_make_lines_cjk_without_spaces_latin_with_them() -> None:
    def glyph(ch: str, x: float, y: float = 100) -> Glyph:
        return Glyph(ch, x, y - 9, x + 10, y + 1, y, 10)

    glyphs = [glyph(c, 50 + 10 * i) for i, c in enumerate("神的经纶")]
    glyphs += [Glyph(" ", 0, 0, 0, 0, 0, 0)] + [glyph(c, 100 + 6 * i) for i, c in enumerate("is")]
    glyphs += [glyph(c, 400 + 10 * i) for i, c in enumerate("页眉")]  # far away: its own line
    glyphs += [glyph(c, 50 + 10 * i, 120) for i, c in enumerate("下一行")]
    assert [ln.text for ln in lines_from_glyphs(glyphs)] == ["神的经纶 is", "页眉", "下一行"]


def test_glyphs_drawn_out_of_order_on_a_line_join_it_in_reading_order() -> None:
    """LibreOffice draws a line's Latin-font glyphs (“ ” ——) before or after its CJK ones:
    they join the line where they stand. A column beside it, a gap away, stays apart."""

    def glyph(ch: str, x: float, y: float = 100) -> Glyph:
        return Glyph(ch, x, y - 9, x + 10, y + 1, y, 10)

    dashes = [glyph("—", 50), glyph("—", 60), glyph("—", 110), glyph("—", 120)]
    cjk = [glyph(c, 70 + 10 * i) for i, c in enumerate("祂的所是")]
    cjk += [glyph(c, 130 + 10 * i) for i, c in enumerate("一点")]
    quote = [glyph("稣", 50), glyph("的", 70), glyph("时", 80), glyph("”", 60), glyph("候", 90)]
    column = [glyph(c, 50 + 10 * i) for i, c in enumerate("左栏")]
    column += [glyph(c, 50 + 10 * i, 114) for i, c in enumerate("次行")]
    column += [glyph(c, 80 + 10 * i) for i, c in enumerate("右栏")]  # a size from 左栏
    got = [[ln.text for ln in lines_from_glyphs(g)] for g in (dashes + cjk, quote, column)]
    assert got == [["——祂的所是——一点"], ["稣”的时候"], ["左栏", "次行", "右栏"]]


@pytest.mark.parametrize("name", ["ruth-digits-libreoffice.pdf", "ruth-digits-xelatex.pdf"])
def test_a_gap_between_scripts_is_not_a_space(name: str) -> None:
    """LibreOffice's autospace and xeCJK's glue draw a gap around `1` in `第1章` and after `God`
    in `God与`; pdfium reports a (generated) space there that the text does not hold."""
    doc = load_document(FIXTURES / name)
    assert [b.text for b in doc.blocks if b.kind == "heading"] == [f"第{n}章" for n in range(1, 5)]
    first = next(b.text for b in doc.blocks if b.kind == "para")
    assert first.startswith("本书的英文名词：God与中文的神")


def test_a_space_the_pdf_holds_between_scripts_is_kept() -> None:
    """LibreOffice writes the source's spaces around `Christ` into the PDF (xelatex turns them
    into the same glue as no space, so there they cannot be told apart)."""
    doc = load_document(FIXTURES / "ruth-digits-libreoffice.pdf")
    first = next(b.text for b in doc.blocks if b.kind == "para")
    assert first == TRUTH["ruth-digits-libreoffice.pdf"]["chapters"][0]["paragraphs"][0]
    assert "英文 Christ 就是" in first


def test_between_scripts_only_a_held_space_or_a_gap_over_half_a_size_is_a_space() -> None:
    def glyph(ch: str, x: float, width: float = 10) -> Glyph:
        return Glyph(ch, x, 91, x + width, 101, 100, 10)

    def guessed() -> Glyph:
        return Glyph(" ", 0, 0, 0, 0, 0, 0, generated=True)

    autospace = [glyph("第", 50), guessed(), glyph("1", 62, 6), guessed(), glyph("章", 70)]
    glue = [glyph("第", 50), guessed(), glyph("1", 63.7, 6)]  # xeCJK: 0.37 size
    wide = [glyph("第", 50), guessed(), glyph("1", 66, 6)]  # 0.6 size: a space drawn as a gap
    latin = [glyph("a", 50, 6), guessed(), glyph("b", 58, 6)]  # English set without spaces
    held = [glyph("是", 50), Glyph(" ", 0, 0, 0, 0, 0, 0), glyph("C", 61, 6)]
    lines = [lines_from_glyphs(g)[0].text for g in (autospace, glue, wide, latin, held)]
    assert lines == ["第1章", "第1", "第 1", "a b", "是 C"]


def test_page_ranges_are_compact() -> None:
    assert page_ranges([5, 1, 2, 3, 9]) == "1–3, 5, 9"


# ---- scans ----------------------------------------------------------------------------------


def test_a_scanned_pdf_is_refused_naming_its_pages() -> None:
    with pytest.raises(LoadError) as err:
        load_document(FIXTURES / "scan-ruth.pdf")
    assert "第 1 页没有文字层" in err.value.zh and "--ocr" in err.value.zh
    assert "page 1 has no text layer" in err.value.en


def test_a_pdf_with_one_scanned_page_is_not_ingested_in_part() -> None:
    with pytest.raises(LoadError) as err:
        load_document(FIXTURES / "mixed-scan.pdf")
    assert "共 2 页，其中第 2 页是扫描图像" in err.value.zh and "整个文件未导入" in err.value.zh
    assert "page 2 of 2" in err.value.en


def test_ocr_without_tesseract_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(LoadError) as err:
        load_document(FIXTURES / "scan-ruth.pdf", options=LoadOptions(ocr="chi_sim"))
    assert "tesseract-ocr-chi-sim" in err.value.zh and "tesseract" in err.value.en


# ---- malformed PDFs -------------------------------------------------------------------------


def test_truncated_pdf_from_a_producer_is_refused(tmp_path: Path) -> None:
    data = (FIXTURES / "ruth-weasyprint.pdf").read_bytes()
    for cut in (len(data) // 2, len(data) - 200):
        path = tmp_path / "cut.pdf"
        path.write_bytes(data[:cut])
        try:
            doc = load_document(path)
        except LoadError as err:
            assert err.zh and err.en
        else:  # PDFium recovers what the cut left: only whole pages, never a broken word
            assert doc.blocks and all(b.text for b in doc.blocks)


def test_encrypted_producer_pdf_is_refused(tmp_path: Path) -> None:
    writer = pypdf.PdfWriter(clone_from=FIXTURES / "jonah-libreoffice.pdf")
    writer.encrypt("secret", algorithm="AES-256")
    path = tmp_path / "locked.pdf"
    writer.write(path)
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "加密" in err.value.zh and "encrypted" in err.value.en


def _flate_bomb(inflated: int) -> bytes:
    packer = zlib.compressobj(9)
    spaces = b" " * (1 << 20)
    body = b"".join(packer.compress(spaces) for _ in range(inflated >> 20)) + packer.flush()
    head = (
        b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
        b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n"
        b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>\n"
        b"endobj\n4 0 obj\n"
    )
    stream = b"<< /Length " + str(len(body)).encode() + b" /Filter /FlateDecode >>\nstream\n"
    return head + stream + body + b"\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"


def test_a_flate_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pdf"
    path.write_bytes(_flate_bomb(300 << 20))  # 300 MB of spaces in ~300 KB
    assert path.stat().st_size < 1 << 20
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "压缩炸弹" in err.value.zh and "bomb" in err.value.en
    check_pdf_streams(_flate_bomb(2 << 20))  # below the limit: fine


def test_a_flate_stream_with_nested_parameters_is_checked_too() -> None:
    body = zlib.compress(b" " * (3 << 20))
    data = (
        b"%PDF-1.7\n4 0 obj\n<< /Length " + str(len(body)).encode() + b" /Filter /FlateDecode"
        b" /DecodeParms << /Predictor 12 /Columns 4 >> >>\nstream\n" + body + b"\nendstream\n"
    )
    with pytest.raises(LoadError, match="compression bomb"):
        check_pdf_streams(data, max_stream=1 << 20)
    check_pdf_streams(data, max_stream=4 << 20)


def test_a_pdf_with_the_wrong_extension_is_named(tmp_path: Path) -> None:
    path = tmp_path / "book.docx"
    path.write_bytes((FIXTURES / "ruth-weasyprint.pdf").read_bytes())
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "文件内容是 PDF，与扩展名 .docx 不符" in err.value.zh
    assert "rename it to .pdf" in err.value.en
    path = tmp_path / "outline.pdf"
    path.write_bytes((FIXTURES / "outline-libreoffice.docx").read_bytes())
    with pytest.raises(LoadError) as err:
        load_document(path)
    assert "文件内容是 Word 文档（.docx），与扩展名 .pdf 不符" in err.value.zh
    assert "rename it to .docx" in err.value.en


# ---- headings that start a page, running lines that name the chapter ------------------------

BODY = "天地万物都是藉着祂造的凡被造的没有一样不是藉着祂造的在祂里面"


def _chapter_page(n: int, heading: str, *, header: str | None = None) -> Page:
    """A page that opens with a chapter heading at the same height as every other page's,
    set larger, with space under it and body text below."""
    lines = [line(heading, 50, 60, size=16, bold=True)]
    lines += [line(BODY, 70 if i == 0 else 50, 110 + 14 * i) for i in range(6)]
    lines[-1] = line(BODY[:10] + "。", 50, 110 + 14 * 5)
    if header is not None:
        lines.insert(0, line(header, 50, 30, size=8))
    return page(n, *lines)


def test_a_heading_that_starts_every_page_is_a_heading_not_a_running_header() -> None:
    titles = ["第一章\u3000约瑟被卖", "第二章\u3000约瑟在埃及", "第三章\u3000约瑟为法老解梦"]
    layout = blocks_from_pages([_chapter_page(n, t) for n, t in enumerate(titles, 1)])
    assert [b.text for b in layout.blocks if b.kind == "heading"] == titles
    assert sum(1 for b in layout.blocks if b.kind == "para") == 3


def test_a_running_header_naming_the_current_chapter_goes_and_its_heading_stays() -> None:
    """Typst's and LibreOffice's headers repeat the current chapter (smaller) above it."""
    pages = [
        _chapter_page(1, "第一章\u3000约拿逃往他施", header="约拿书\u3000第一章\u3000约拿逃往他施"),
        page(2, line("约拿书\u3000第一章\u3000约拿逃往他施", 50, 30, size=8), line(BODY, 50, 60)),
        _chapter_page(3, "第二章\u3000约拿祷告", header="约拿书\u3000第二章\u3000约拿祷告"),
    ]
    blocks = blocks_from_pages(pages).blocks
    assert [b.text for b in blocks if b.kind == "heading"] == [
        "第一章\u3000约拿逃往他施",
        "第二章\u3000约拿祷告",
    ]
    assert "约拿书" not in "".join(b.text for b in blocks)


def test_a_bold_running_header_of_body_size_goes_though_it_looks_like_a_heading() -> None:
    pages = [
        page(
            n, line("神的经纶", 50, 30, bold=True), *[line(BODY, 50, 70 + 14 * i) for i in range(4)]
        )
        for n in range(1, 4)
    ]
    blocks = blocks_from_pages(pages).blocks
    assert [b.kind for b in blocks] == ["para"] and "神的经纶" not in blocks[0].text


def test_larger_type_run_into_the_text_is_not_a_heading() -> None:
    """A scan's misread box: a body line set large, without space around it."""
    lines = [line(BODY, 70, 100), line(BODY[:20], 50, 114, size=13), line(BODY[:9] + "。", 50, 130)]
    blocks = blocks_from_pages([page(1, *lines)]).blocks
    assert [b.kind for b in blocks] == ["para"] and BODY[:20] in blocks[0].text


def test_a_line_read_unsure_is_never_a_heading() -> None:
    def pages(confidence: float) -> list[Page]:
        heading = line("第一章\u3000约瑟被卖", 50, 60, size=16)
        heading.confidence = confidence
        return [page(1, heading, *[line(BODY, 50, 110 + 14 * i) for i in range(3)])]

    assert [b.kind for b in blocks_from_pages(pages(90)).blocks][:1] == ["heading"]
    assert [b.kind for b in blocks_from_pages(pages(40)).blocks] == ["para", "para"]


# ---- footnotes -------------------------------------------------------------------------------


def _glyphs(text: str, x: float, baseline: float, size: float = 10) -> list[Glyph]:
    return [
        Glyph(
            ch,
            x + size * i,
            baseline - size,
            x + size * (i + 1),
            baseline + 0.1 * size,
            baseline,
            size,
        )
        for i, ch in enumerate(text)
    ]


def test_a_superscript_mark_stays_in_its_line_and_is_not_text() -> None:
    glyphs = _glyphs("起初神创造天地。", 50, 100)
    glyphs += _glyphs("2", 130, 96, size=6)  # raised, smaller: Typst's footnote mark
    glyphs += _glyphs("地是空虚混沌", 134, 100)
    glyphs += _glyphs("2", 50, 196, size=5.4) + _glyphs("参赛四五7。", 54, 200, size=9)
    lines = lines_from_glyphs(glyphs)
    assert [ln.text for ln in lines] == ["起初神创造天地。地是空虚混沌", "参赛四五7。"]
    assert [[(m.offset, m.label) for m in ln.marks] for ln in lines] == [[(8, "2")], [(0, "2")]]


def _noted_pages() -> list[Page]:
    """A mark on page 1 whose note WeasyPrint set at the foot of page 2 (`1. …`), and a
    superscript `3` no note answers (a verse number)."""
    first = line(BODY, 50, 100)
    first.marks = (Mark(10, "1"),)
    verse = line(BODY[:12] + "。", 50, 114)
    verse.marks = (Mark(0, "3"),)
    p1 = page(1, first, verse, line("1", 295, 760, size=8))
    p2 = page(
        2,
        line(BODY + "。", 50, 100),
        line("1. 这是页下的注，", 50, 700, size=8),
        line("接着一行。", 50, 712, size=8),
        line("内部资料", 280, 730, size=8),  # a line of this page's foot that is no note
        line("2", 295, 760, size=8),
    )
    return [p1, p2]


def test_a_note_answers_its_mark_a_page_later_and_its_sentence_is_quoted() -> None:
    layout = blocks_from_pages(_noted_pages())
    text = "".join(b.text for b in layout.blocks)
    assert "这是页下的注" not in text
    assert [(n.number, n.text, n.anchor, n.quote) for n in layout.notes] == [
        (1, "这是页下的注，接着一行。", 0, BODY[:10])
    ]


def test_a_mark_no_note_answers_goes_back_into_the_text() -> None:
    blocks = blocks_from_pages(_noted_pages()).blocks
    assert BODY + "3" + BODY[:12] + "。" in blocks[0].text


# ---- title blocks ----------------------------------------------------------------------------


def _centred(text: str, top: float, size: float, *, bold: bool = False) -> Line:
    width = size * len(text)
    return Line(text, 300 - width / 2, top, 300 + width / 2, top + size, size, bold)


def test_a_title_block_is_metadata_not_text() -> None:
    body = [line(BODY, 150, 200 + 14 * i) for i in range(8)]
    lines = [
        _centred("神圣的分赐与召会", 60, 20, bold=True),
        _centred("信息样本\u3000第一篇", 90, 13),
        _centred("示例作者", 110, 10),
        _centred("1975年3月", 126, 10),
        line("一\u3000神圣分赐的意义", 150, 160, size=13, bold=True),
        *body,
    ]
    layout = blocks_from_pages([page(1, *lines)])
    assert (layout.title, layout.byline.subtitle, layout.byline.author, layout.byline.date) == (
        "神圣的分赐与召会",
        "信息样本\u3000第一篇",
        "示例作者",
        "1975年3月",
    )
    assert [b.text for b in layout.blocks][:1] == ["一\u3000神圣分赐的意义"]


def test_centred_section_headings_are_not_a_subtitle() -> None:
    """Under a title, a centred heading whose style recurs below is a section, not a byline."""
    lines = [
        _centred("神圣的分赐", 60, 20, bold=True),
        _centred("分赐的意义", 100, 13, bold=True),
        *[line(BODY, 150, 130 + 14 * i) for i in range(4)],
        line(BODY[:9] + "。", 150, 186),
        _centred("分赐的路", 220, 13, bold=True),
        *[line(BODY, 150, 250 + 14 * i) for i in range(4)],
    ]
    layout = blocks_from_pages([page(1, *lines)])
    assert layout.title == "神圣的分赐" and layout.byline.subtitle == ""
    assert [b.text for b in layout.blocks if b.kind == "heading"] == ["分赐的意义", "分赐的路"]


def test_heading_sizes_a_scan_measures_a_little_apart_are_one_level() -> None:
    pages = [_chapter_page(n, t) for n, t in enumerate(["第一章\u3000甲", "第二章\u3000乙"], 1)]
    pages[0].lines[0].size, pages[1].lines[0].size = 16.8, 16.3  # as OCR reads the boxes
    assert [b.level for b in blocks_from_pages(pages).blocks if b.kind == "heading"] == [1, 1]


def test_notes_set_as_large_as_the_text_are_read_below_a_gap() -> None:
    """A Word document's notes printed to PDF are set in the body's size: the lines from the
    first one after a gap that starts with a mark of a line above it are the notes. Lines in
    the text's spacing that start with a raised number (a verse number) are text."""

    def ln(text: str, top: float, marks: tuple[Mark, ...] = ()) -> Line:
        return Line(text, 72, top, 500, top + 12, 12, False, 1, marks=marks)

    body = [
        ln("神的经纶乃是神的家务安排。", 100, (Mark(13, "1"),)),
        ln("祂要把自己分赐到人里面。", 114),
    ]
    body += [ln("这是神的心意。", 128, (Mark(7, "2"),)), ln("神成为人。", 142)]
    notes = [ln("原文与经纶同字。", 200, (Mark(0, "1"),)), ln("参弗三9。", 214, (Mark(0, "2"),))]
    kept, found = split_notes([Page(1, 600, 800, body + notes)], 12)
    assert [n.text for n in found.notes] == ["原文与经纶同字。", "参弗三9。"]
    assert [x.text for x in kept[0].lines] == [x.text for x in body]

    verses = [ln("起初神创造天地。", 100, (Mark(0, "1"), Mark(8, "2")))]
    verses += [ln("地是空虚混沌。", 114, (Mark(0, "2"),)), ln("神说要有光。", 128, (Mark(0, "3"),))]
    kept, found = split_notes([Page(1, 600, 800, verses)], 12)
    assert found.notes == [] and len(kept[0].lines) == 3
