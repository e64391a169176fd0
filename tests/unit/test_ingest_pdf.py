"""PDF loader on PDFs built here: a Type0 font with Identity-H encoding and a ToUnicode CMap
(how real Chinese PDFs carry text), so no CJK font file is needed to make or read them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pypdf
import pytest

from ingest.loaders import LoadError, load_document
from ingest.loaders.pdf import load_pdf

Line = tuple[float, float, str]  # x, y (points from the bottom), text


def build_pdf(pages: Sequence[Sequence[Line]], path: Path) -> Path:
    """A minimal valid PDF: one CID font (no embedded glyphs) + ToUnicode, one stream a page."""
    chars = sorted({ch for page in pages for _, _, t in page for ch in t})
    cid = {ch: i + 1 for i, ch in enumerate(chars)}
    objs: list[bytes] = []

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    def stream(data: bytes) -> bytes:
        return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"

    bf = "".join(f"<{cid[ch]:04X}> <{ord(ch):04X}>\n" for ch in chars)
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap "
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def "
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def "
        "1 begincodespacerange <0000> <FFFF> endcodespacerange "
        f"{len(chars)} beginbfchar\n{bf}endbfchar endcmap "
        "CMapName currentdict /CMap defineresource pop end end"
    ).encode()
    to_unicode = add(stream(cmap))
    descriptor = add(
        b"<< /Type /FontDescriptor /FontName /TestSong /Flags 4 /FontBBox [0 -200 1000 900] "
        b"/ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>"
    )
    cid_font = add(
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /TestSong /CIDSystemInfo "
        b"<< /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R "
        b"/DW 1000 /CIDToGIDMap /Identity >>" % descriptor
    )
    font = add(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /TestSong /Encoding /Identity-H "
        b"/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>" % (cid_font, to_unicode)
    )
    contents = []
    for page in pages:
        contents.append(add(stream("\n".join(_show_ops(page, cid)).encode())))
    pages_id = len(objs) + len(pages) + 1
    page_ids = [
        add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (pages_id, font, c)
        )
        for c in contents
    ]
    kids = " ".join(f"{p} 0 R" for p in page_ids).encode()
    add(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(page_ids))
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1,
        catalog,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def _show_ops(page: Sequence[Line], cid: dict[str, int]) -> list[str]:
    """One text object per run of pieces on one baseline, placed by TJ offsets: how
    typesetters justify glyph by glyph. (The test font has no glyph program, so a one-glyph
    text object would have no extent, and PDFium skips text objects without one.)"""
    ops: list[str] = []
    run: list[tuple[float, float, str]] = []

    def flush() -> None:
        if not run:
            return
        x0, y, _ = run[0]
        parts, pen = [], x0
        for x, _, t in run:
            gap = x - pen
            if gap:
                parts.append(f"{-gap * 100:g}")  # 10 pt font: 1 pt = 100 thousandths
            parts.append(f"<{''.join(f'{cid[c]:04X}' for c in t)}>")
            pen = x + 10 * len(t)
        ops.append(f"BT /F1 10 Tf {x0} {y} Td [{' '.join(parts)}] TJ ET")
        run.clear()

    for x, y, t in page:
        if run and (y != run[-1][1] or x < run[-1][0] + 10 * len(run[-1][2])):
            flush()
        run.append((x, y, t))
    flush()
    return ops


SENTENCES = [
    ("神永远的经纶是要将祂自己分赐", "到祂所拣选的人里面，使他们成为祂的彰显。"),
    ("父是源头，子是彰显，灵是进入，", "三者乃是一位三一神的分赐。"),
    ("召会是基督的身体，是那充满万有者", "所充满的，乃是生机的实体。"),
    ("人的灵是接受神圣分赐的器官，", "我们运用灵就摸着神。"),
]
ENGLISH = [
    ("The divine dispensing is the", "Triune God imparting Himself", "into His chosen people."),
    ("The church is not an", "organization but an", "organism of life."),
    ("We exercise our spirit", "to receive the", "divine supply."),
    ("Transformation is a", "metabolic change in", "our inner being."),
]


def book_pages(n: int = 4) -> list[list[Line]]:
    """In reading order: a running header, two broken paragraphs, a running footer with the
    page number (and a bare page number on the last page); one sentence continues across a
    page break."""
    pages: list[list[Line]] = []
    for i in range(n):
        zh, en = SENTENCES[i % 4], ENGLISH[i % 4]
        lines: list[Line] = [(72, 800, "神的经纶 · 职事丛书")]
        if i == 2:
            lines.append((72, 720, "在下一页结束。"))
        lines += [(72, 700, zh[0]), (72, 686, zh[1])]
        lines += [(72, 660, en[0]), (72, 646, en[1]), (72, 632, en[2])]
        if i == 1:
            lines.append((72, 600, "这一句跨页继续，"))
        lines.append((72, 60, f"第 {i + 1} 页"))
        if i == n - 1:
            lines.append((290, 40, str(i + 1)))
        pages.append(lines)
    return pages


def test_headers_footers_page_numbers_dropped_and_lines_joined(tmp_path: Path) -> None:
    doc = load_pdf(build_pdf(book_pages(), tmp_path / "book.pdf"), 10**8)
    text = doc.plain_text()
    assert "职事丛书" not in text and "第 2 页" not in text and "\n4" not in text
    assert [b.text for b in doc.blocks] == [
        "神永远的经纶是要将祂自己分赐到祂所拣选的人里面，使他们成为祂的彰显。",
        "The divine dispensing is the Triune God imparting Himself into His chosen people.",
        "父是源头，子是彰显，灵是进入，三者乃是一位三一神的分赐。",
        "The church is not an organization but an organism of life.",
        "这一句跨页继续，在下一页结束。",
        "召会是基督的身体，是那充满万有者所充满的，乃是生机的实体。",
        "We exercise our spirit to receive the divine supply.",
        "人的灵是接受神圣分赐的器官，我们运用灵就摸着神。",
        "Transformation is a metabolic change in our inner being.",
    ]
    assert doc.language == "zh" and doc.format == "pdf"


def test_traditional_text_and_per_glyph_placement(tmp_path: Path) -> None:
    # Justified text drawn glyph by glyph comes out spaced or one glyph per line.
    s = "神永遠的經綸是要將祂自己分賜"
    page = [(72 + 14 * i, 700, ch) for i, ch in enumerate(s)] + [(72, 680, "給人。")]
    doc = load_pdf(build_pdf([page], tmp_path / "zh.pdf"), 10**8)
    assert doc.blocks[0].text == s + "給人。"


def test_encrypted_pdf_is_skipped_but_owner_only_opens(tmp_path: Path) -> None:
    plain = build_pdf([[(72, 700, "Hello world 你好。")]], tmp_path / "plain.pdf")
    locked = pypdf.PdfWriter(clone_from=plain)
    locked.encrypt("secret", algorithm="RC4-128")
    locked.write(tmp_path / "locked.pdf")
    with pytest.raises(LoadError, match="encrypted"):
        load_document(tmp_path / "locked.pdf")
    owner_only = pypdf.PdfWriter(clone_from=plain)
    owner_only.encrypt(user_password="", owner_password="own", algorithm="RC4-128")
    owner_only.write(tmp_path / "owner.pdf")
    assert "你好" in load_document(tmp_path / "owner.pdf").plain_text()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "not a PDF"),
        (b"%PDF-1.7\n" + bytes(range(256)) * 8, "damaged"),
    ],
)
def test_garbage_is_skipped(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.pdf"
    path.write_bytes(content)
    with pytest.raises(LoadError, match=reason):
        load_document(path)


def test_truncated_and_empty_pdfs_are_skipped(tmp_path: Path) -> None:
    full = build_pdf(book_pages(2), tmp_path / "full.pdf").read_bytes()
    truncated = tmp_path / "cut.pdf"
    truncated.write_bytes(full[: len(full) // 3])
    with pytest.raises(LoadError) as err:
        load_document(truncated)
    assert err.value.zh and err.value.en
    blank = build_pdf([[]], tmp_path / "blank.pdf")
    with pytest.raises(LoadError, match="no text"):
        load_document(blank)
    (tmp_path / "zero.pdf").write_bytes(b"")
    with pytest.raises(LoadError, match="empty"):
        load_document(tmp_path / "zero.pdf")


def test_pdf_title_metadata_names_the_document_unless_it_is_a_chapter(tmp_path: Path) -> None:
    from ingest.headings import choose_title

    plain = build_pdf([[(72, 700, "生命的经历。")]], tmp_path / "plain.pdf")
    for title, expected in (("生命的经历", "生命的经历"), ("第一章 生命的长大", "book-17")):
        writer = pypdf.PdfWriter(clone_from=plain)
        writer.add_metadata({"/Title": title})
        path = tmp_path / "book-17.pdf"
        writer.write(path)
        doc = load_pdf(path, 10**8)
        assert doc.title == title
        assert choose_title(None, doc.title, path) == expected
