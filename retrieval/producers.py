"""Names a tool writes where a file's author belongs: never an author.

A `.docx` made by python-docx says its author is `python-docx`; LibreOffice, Word, pandoc,
WeasyPrint, Typst and the TeX engines leave their own names (or a placeholder such as
`Microsoft Office User`) in the author or creator field when the writer set none. Such a name
is not a person: it is not listed as an author (`/sources`), and it is no node of the graph
(a path through it would "explain" how two concepts relate by the program that saved them).
"""

from __future__ import annotations

import re

# Programs that make documents, as they sign them (a version may follow: "LibreOffice 7.4",
# "pdfTeX-1.40.25", "Microsoft® Word 2016", "calibre (6.0)").
_PROGRAMS = (
    r"python[- ]docx|docx4j|pandoc|libre\s?office(?:\s?writer)?|open\s?office(?:\.org)?(?:\s?writer)?"
    r"|microsoft(?:®)?(?:\s?office)?(?:\s?word)?(?:\s?for\s?(?:mac|windows|microsoft 365))?"
    r"|ms\s?word|word|writer|wps(?:\s?office)?|pages|google\s?docs"
    r"|weasyprint|typst|(?:pdf|xe|lua)?(?:la)?tex|context|ghostscript|prince(?:xml)?"
    r"|wkhtmltopdf|chromium|skia(?:/pdf)?|quartz\s?pdfcontext|acrobat(?:\s?pdfmaker)?"
    r"|adobe\s?(?:acrobat|indesign|pdf\s?library)(?:\s?\w+)?|calibre|sigil|reportlab"
    r"|pdfium|mupdf|itext(?:sharp)?|fpdf|tcpdf|dompdf"
)
# Placeholders some of them write instead of a person.
_PLACEHOLDERS = (
    r"microsoft\s?office\s?user|windows\s?user|office\s?user|user|administrator|admin|owner"
    r"|author|unknown|anonymous|none|n/?a|作者|用户|未知"
)
_VERSION = r"(?:[\s/_-]*(?:v(?:ersion)?\s?)?[\d(][\w.() ]*)?(?:\s+with\s+[\w .-]+)?"
_PRODUCER = re.compile(rf"^(?:{_PROGRAMS}|{_PLACEHOLDERS}){_VERSION}$", re.IGNORECASE)


def is_producer(name: str) -> bool:
    """Whether `name` is a program's signature or a placeholder rather than a person."""
    text = " ".join(name.split()).strip(" ;,")
    return not text or bool(_PRODUCER.fullmatch(text))


def usable_author(name: str | None) -> str:
    """`name` when it can be a document's author; "" when it names a program or a
    placeholder (`python-docx`, `LibreOffice 7.4`, `Microsoft Office User`)."""
    text = " ".join((name or "").split())
    return "" if is_producer(text) else text
