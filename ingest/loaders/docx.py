"""Word documents: .docx (python-docx) → Document; an old .doc gets a message saying how to
convert it.

- Heading styles (`Heading 1`…, `标题 1`…, or a paragraph's outline level) become heading
  blocks with their level; a `Title` paragraph is the document's title (not a block).
- Numbered paragraphs (Word numbering, as LibreOffice and pandoc write it) become `point`
  blocks with their list level and the number as Word shows it (壹　/ 一、/ （一）/ 1. / a.),
  so an outline keeps its 主题 > 大点 > 小点 tree (`ingest.structure.outline_from_blocks`).
- Footnotes become `Note`s anchored at the paragraph that cites them.

Before python-docx reads the file, its bytes are checked (`ingest.loaders.safety`): a zip bomb,
an encrypted document (an OLE container holding an `EncryptedPackage`), an old binary .doc and
a file that is something else (a PDF named .docx) are refused with a clear message.

Why python-docx (measured on the LibreOffice and pandoc fixtures, bench/results/pdf-layout.md):
it exposes styles, list levels and the package's parts, so levels and footnotes are read
exactly; mammoth keeps the nesting but drops the numbers, and docx2python renders numbers but
not the Chinese formats (壹, 一) and flattens the styles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ingest.clean import is_cjk, squash
from ingest.loaders.base import Block, Document, LoadError, Note, check_size, guess_language
from ingest.loaders.safety import MAX_ENTRY_BYTES, MAX_TOTAL_BYTES, check_zip, sniff
from ingest.notes import cited_sentence
from ingest.titleblock import TitleBlock, read_title_block

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"^(?:heading|标题|標題)\s*(\d)$", re.IGNORECASE)
_ENCRYPTED = "EncryptedPackage".encode("utf-16-le")

DOC_MESSAGE = LoadError(
    "旧版 Word 文档（.doc）无法直接导入。请用 Word 或 WPS “另存为 .docx”，或运行 "
    "`soffice --headless --convert-to docx 文件.doc`，再导入 .docx",
    "old Word format (.doc) is not supported. Save it as .docx in Word, or run "
    "`soffice --headless --convert-to docx file.doc`, then ingest the .docx",
)


def load_doc(path: Path, max_bytes: int) -> Document:
    """An old binary .doc: refused with the way to convert it."""
    check_size(path, max_bytes)
    raise DOC_MESSAGE


def _check_bytes(path: Path) -> None:
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    kind = sniff(head)
    if kind == "ole":
        with path.open("rb") as fh:
            data = fh.read(1 << 24)
        if _ENCRYPTED in data:
            raise LoadError(
                "Word 文档已加密（需要密码）", "encrypted Word document (password required)"
            )
        raise DOC_MESSAGE
    if kind == "pdf":
        raise LoadError(
            "这个文件其实是 PDF，请把扩展名改为 .pdf 再导入",
            "this file is a PDF: rename it to .pdf and ingest it again",
        )


# ---- numbering ------------------------------------------------------------------------------

_ZH = "零一二三四五六七八九"
_ZH_LEGAL = "零壹贰叁肆伍陆柒捌玖"
_ZH_LEGAL_TRAD = "零壹貳參肆伍陸柒捌玖"
_STEMS = "甲乙丙丁戊己庚辛壬癸"
_ROMAN = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l")]
_ROMAN += [(40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]


def _zh_number(n: int, digits: str, ten: str) -> str:
    if n <= 0 or n >= 100:
        return str(n)
    tens, ones = divmod(n, 10)
    out = ("" if tens == 1 else digits[tens]) + ten if tens else ""
    return out + (digits[ones] if ones else "")


def _roman(n: int) -> str:
    out = ""
    for value, letters in _ROMAN:
        while n >= value:
            out += letters
            n -= value
    return out


def _letters(n: int) -> str:
    return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1) if n > 0 else str(n)


def format_number(n: int, fmt: str) -> str:
    """`n` in a Word number format (w:numFmt)."""
    formats = {
        "lowerLetter": lambda: _letters(n),
        "upperLetter": lambda: _letters(n).upper(),
        "lowerRoman": lambda: _roman(n),
        "upperRoman": lambda: _roman(n).upper(),
        "chineseCounting": lambda: _zh_number(n, _ZH, "十"),
        "chineseCountingThousand": lambda: _zh_number(n, _ZH, "十"),
        "taiwaneseCounting": lambda: _zh_number(n, _ZH, "十"),
        "taiwaneseCountingThousand": lambda: _zh_number(n, _ZH, "十"),
        "ideographDigital": lambda: "".join(_ZH[int(d)] for d in str(n)),
        "chineseLegalSimplified": lambda: _zh_number(n, _ZH_LEGAL, "拾"),
        "ideographLegalTraditional": lambda: _zh_number(n, _ZH_LEGAL_TRAD, "拾"),
        "ideographTraditional": lambda: _STEMS[(n - 1) % 10],
        "decimalEnclosedParen": lambda: f"({n})",
        "decimalEnclosedFullstop": lambda: f"{n}.",
        "decimalEnclosedCircle": lambda: chr(0x2460 + n - 1) if 0 < n <= 20 else str(n),
        "decimalZero": lambda: f"{n:02d}",
    }
    make = formats.get(fmt)
    return make() if make is not None else str(n)


@dataclass(frozen=True, slots=True)
class _Level:
    fmt: str
    text: str  # w:lvlText, e.g. "%1." or "（%3）"
    start: int
    suffix: str  # after the number: "\t" (a tab), " " or ""


class Numbering:
    """Word's list definitions and the running counters of each list."""

    def __init__(self, root: Any | None) -> None:
        self._levels: dict[str, dict[int, _Level]] = {}
        self._counters: dict[str, list[int]] = {}
        if root is None:
            return
        abstract: dict[str, dict[int, _Level]] = {}
        for node in root.iter(f"{W}abstractNum"):
            abstract[node.get(f"{W}abstractNumId")] = {
                int(lvl.get(f"{W}ilvl", "0")): _level(lvl) for lvl in node.iter(f"{W}lvl")
            }
        for num in root.iter(f"{W}num"):
            ref = num.find(f"{W}abstractNumId")
            if ref is None:
                continue
            levels = dict(abstract.get(ref.get(f"{W}val", ""), {}))
            for override in num.iter(f"{W}lvlOverride"):
                lvl = override.find(f"{W}lvl")
                if lvl is not None:
                    levels[int(override.get(f"{W}ilvl", "0"))] = _level(lvl)
            self._levels[num.get(f"{W}numId", "")] = levels

    def marker(self, num_id: str, ilvl: int) -> str | None:
        """The number shown for the next item of list `num_id` at level `ilvl` ("" for a
        bullet); None when the list is not defined (or numbering is switched off: id 0)."""
        levels = self._levels.get(num_id)
        if not levels or ilvl not in levels:
            return None
        counters = self._counters.setdefault(num_id, [lv.start - 1 for lv in _nine(levels)])
        counters[ilvl] += 1
        for deeper in range(ilvl + 1, 9):
            counters[deeper] = _nine(levels)[deeper].start - 1
        level = levels[ilvl]
        if level.fmt in ("bullet", "none"):
            return ""

        def number(m: re.Match[str]) -> str:
            k = int(m.group(1)) - 1
            fmt = levels[k].fmt if k in levels else "decimal"
            return format_number(max(counters[k], 1), fmt)

        marker = re.sub(r"%([1-9])", number, level.text)
        if level.suffix == "\t":  # a tab: an ideographic space after a CJK number
            return marker + ("\u3000" if marker and is_cjk(marker[-1]) else " ")
        return marker + level.suffix


def _nine(levels: dict[int, _Level]) -> list[_Level]:
    plain = _Level("decimal", "", 1, "")
    return [levels.get(i, plain) for i in range(9)]


def _level(lvl: Any) -> _Level:
    def val(tag: str, default: str) -> str:
        node = lvl.find(f"{W}{tag}")
        return node.get(f"{W}val", default) if node is not None else default

    suffix = {"tab": "\t", "space": " ", "nothing": ""}.get(val("suff", "tab"), "\t")
    return _Level(val("numFmt", "decimal"), val("lvlText", ""), int(val("start", "1")), suffix)


# ---- paragraphs -----------------------------------------------------------------------------


def _style_chain(style: Any) -> list[Any]:
    chain: list[Any] = []
    while style is not None and len(chain) < 10:
        chain.append(style)
        style = style.base_style
    return chain


# Paragraph styles of a title block (pandoc's reference.docx; Word's Subtitle), lower case.
_BYLINE_STYLES = {
    "subtitle": "subtitle",
    "副标题": "subtitle",
    "副標題": "subtitle",
    "author": "author",
    "作者": "author",
    "date": "date",
    "日期": "date",
}


def _heading_level(paragraph: Any) -> int:
    """1… for a heading (style name or outline level), 0 for body text (a subtitle, author or
    date too, though pandoc bases its Subtitle on Title), -1 for Title."""
    chain = _style_chain(paragraph.style)
    for style in chain:
        name = style.name or ""
        if name.strip().lower() in _BYLINE_STYLES:
            return 0
        if name.lower() in ("title", "标题", "標題"):
            return -1
        m = _HEADING_STYLE.match(name)
        if m:
            return int(m.group(1))
    for element in (paragraph._p, *(s.element for s in chain)):
        ppr = element.find(f"{W}pPr")
        outline = ppr.find(f"{W}outlineLvl") if ppr is not None else None
        if outline is not None:
            level = int(outline.get(f"{W}val", "9"))
            return level + 1 if level < 9 else 0
    return 0


def _num_pr(paragraph: Any) -> tuple[str, int] | None:
    for element in (paragraph._p, *(s.element for s in _style_chain(paragraph.style))):
        ppr = element.find(f"{W}pPr")
        num = ppr.find(f"{W}numPr") if ppr is not None else None
        if num is None:
            continue
        num_id = num.find(f"{W}numId")
        ilvl = num.find(f"{W}ilvl")
        if num_id is None:
            continue
        return num_id.get(f"{W}val", "0"), int(ilvl.get(f"{W}val", "0")) if ilvl is not None else 0
    return None


def _note_refs(p: Any) -> list[tuple[str, int]]:
    """(footnote id, offset in the paragraph's text where its mark stands)."""
    out = []
    offset = 0
    for node in p.iter(f"{W}t", f"{W}tab", f"{W}br", f"{W}footnoteReference"):
        if node.tag == f"{W}footnoteReference":
            out.append((node.get(f"{W}id", ""), offset))
        elif node.tag == f"{W}t":
            offset += len(node.text or "")
        else:
            offset += 1
    return out


def _footnote_texts(document: Any) -> dict[str, str]:
    from lxml import etree

    for rel in document.part.rels.values():
        if not rel.reltype.endswith("/footnotes") or rel.is_external:
            continue
        parser = etree.XMLParser(resolve_entities=False, no_network=True)
        root = etree.fromstring(rel.target_part.blob, parser)
        notes = {}
        for note in root.iter(f"{W}footnote"):
            if note.get(f"{W}type") in ("separator", "continuationSeparator"):
                continue
            paragraphs = [
                "".join(t.text or "" for t in p.iter(f"{W}t")) for p in note.iter(f"{W}p")
            ]
            text = squash(" ".join(p.strip() for p in paragraphs if p.strip()))
            if text:
                notes[note.get(f"{W}id", "")] = text
        return notes
    return {}


def _numbering_root(document: Any) -> Any | None:
    try:
        return document.part.numbering_part.element
    except (KeyError, NotImplementedError, AttributeError):
        return None


def _byline_style(paragraph: Any) -> str:
    """`subtitle`, `author` or `date` for a paragraph styled as one, else ""."""
    for style in _style_chain(paragraph.style):
        kind = _BYLINE_STYLES.get((style.name or "").strip().lower())
        if kind:
            return kind
    return ""


def _centred(paragraph: Any) -> bool:
    from docx.enum.text import WD_ALIGN_PARAGRAPH

    align = paragraph.alignment
    for style in _style_chain(paragraph.style):
        if align is not None:
            break
        align = style.paragraph_format.alignment
    return bool(align == WD_ALIGN_PARAGRAPH.CENTER)


@dataclass(slots=True)
class _TitleBlockReader:
    """The paragraphs above a document's text: under its Title, a subtitle, author and date
    styled as such (pandoc's title block) or set centred (as one does in LibreOffice or
    Word). They are metadata, not blocks."""

    title: str = ""
    styled: dict[str, str] = field(default_factory=dict)
    centred: list[str] = field(default_factory=list)
    open: bool = True

    def take(self, paragraph: Any, text: str, plain: bool) -> bool:
        """True when `paragraph` (body text when `plain`) belongs to the title block."""
        if not self.open:
            return False
        kind = _byline_style(paragraph)
        if kind:
            self.styled.setdefault(kind, text)
            return True
        short = len(text) <= 60 and not text.endswith(("。", "！", "？", "；", "."))
        if self.title and plain and short and len(self.centred) < 4 and _centred(paragraph):
            self.centred.append(text)
            return True
        self.open = False
        return False

    def read(self) -> TitleBlock:
        found = read_title_block(self.title, self.centred)
        return replace(
            found,
            subtitle=self.styled.get("subtitle", found.subtitle),
            author=self.styled.get("author", found.author),
            date=self.styled.get("date", found.date),
        )


def _blocks(document: Any) -> tuple[list[Block], list[Note], TitleBlock]:
    numbering = Numbering(_numbering_root(document))
    footnotes = _footnote_texts(document)
    blocks: list[Block] = []
    notes: list[Note] = []
    head = _TitleBlockReader()
    for paragraph in document.paragraphs:
        text = squash(paragraph.text.replace("\t", " ").replace("\n", " "))
        refs = _note_refs(paragraph._p)
        level = _heading_level(paragraph)
        num = _num_pr(paragraph)
        marker = numbering.marker(*num) if num is not None and text else None
        if not text:
            continue
        if level == -1:
            head.title = head.title or text
            continue
        if head.take(paragraph, text, level == 0 and marker is None):
            continue
        if level > 0:
            blocks.append(Block((marker or "") + text, "heading", level))
        elif marker is not None:
            blocks.append(Block(marker + text, "point", num[1] + 1 if num else 1))
        else:
            blocks.append(Block(text))
        for ref, offset in refs:
            if ref in footnotes:
                quote = cited_sentence(paragraph.text, offset)
                notes.append(Note(len(notes) + 1, footnotes[ref], len(blocks) - 1, quote))
    return blocks, notes, head.read()


def load_docx(path: Path, max_bytes: int) -> Document:
    check_size(path, max_bytes)
    _check_bytes(path)
    check_zip(path, "DOCX", MAX_ENTRY_BYTES, MAX_TOTAL_BYTES)
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
        blocks, notes, head = _blocks(document)
        core = document.core_properties
        meta_title, author = (core.title or "").strip(), (core.author or "").strip()
    except PackageNotFoundError:
        raise LoadError(
            "不是有效的 Word 文档（缺少 word/document.xml）", "not a Word document"
        ) from None
    except Exception as err:
        raise LoadError(
            "Word 文档已损坏，无法解析", f"damaged Word document: {type(err).__name__}: {err}"
        ) from None
    if not blocks:
        raise LoadError("Word 文档中没有文字内容", "no text in the Word document")
    text = "\n".join(b.text for b in blocks)
    # As for Markdown: the first level-1 heading names the document when nothing else does
    # (`choose_title` never takes a chapter heading for a title).
    first_h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    hints = {
        key: value for key, value in (("subtitle", head.subtitle), ("date", head.date)) if value
    }
    return Document(
        path=path,
        format="docx",
        blocks=blocks,
        title=head.title or meta_title or first_h1,
        author=head.author or author,
        language=guess_language(text),
        hints=hints,
        notes=notes,
    )
