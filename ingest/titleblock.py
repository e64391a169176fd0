"""A title block: the title, subtitle, author and date lines at the top of a document.

They name the document; they are not its text. Loaders find the lines (Word styles, EPUB
classes, the centred lines above a PDF's first text) and `read_title_block` says which is
which when the file does not: a line that reads as a date is the date; of the others, the
first is the subtitle and the last the author, and a single one is the author when it reads as
a name (`示例作者`, `倪柝声 著`, `John Smith`), else the subtitle.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.clean import squash

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE = re.compile(
    r"^(?:公元|主后)?\s*(?:1[5-9]|20)\d\d\s*年(?:\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*日)?)?$"
    r"|^(?:1[5-9]|20)\d\d(?:[-/.]\d{1,2}(?:[-/.]\d{1,2})?)?$"
    r"|^\d{1,2}[-/.]\d{1,2}[-/.](?:1[5-9]|20)\d\d$"
    rf"|^(?:\d{{1,2}}\s+)?(?:{_MONTHS})\.?(?:\s+\d{{1,2}},?)?\s+(?:1[5-9]|20)\d\d$"
    r"|^[〇零○一二三四五六七八九]{4}年(?:[一二三四五六七八九十]{1,3}月)?$",
    re.IGNORECASE,
)
# What a byline adds to a name: 作者：… / 讲者 … / … 著 / by …
_BYLINE = re.compile(
    r"^(?:by\s+|(?:作者|著者|讲者|講者|讲员|講員|编者|編者|译者|譯者)[:：]?\s*)"
    r"|\s*(?:著|编著|編著|编|編|讲|講|述|译|譯|口述)$",
    re.IGNORECASE,
)
# A Chinese name: two to four characters, or a transliterated one with a dot (约翰·史密斯).
_CJK_NAME = re.compile(
    r"^(?:[\u3400-\u9fff]{2,4}|[\u3400-\u9fff]{1,6}(?:[·・][\u3400-\u9fff]{1,6})+)$"
)
_LATIN_NAME = re.compile(
    r"^(?:[A-Z][\w.'’-]*\.?)(?:\s+(?:[A-Z][\w.'’-]*\.?|de|van|von|la|le)){0,4}$"
)
_SEPARATORS = re.compile(r"\s*(?:、|，|,|&|\band\b|/)\s*")


@dataclass(frozen=True, slots=True)
class TitleBlock:
    title: str = ""
    subtitle: str = ""
    author: str = ""
    date: str = ""


def is_date(text: str) -> bool:
    return bool(_DATE.match(" ".join(text.split())))


def author_name(text: str) -> str:
    """The name(s) a byline gives (`作者：示例作者` → `示例作者`); "" when it does not read as
    one: names of 2–4 CJK characters (longer with a middle dot) or of capitalised Latin
    words, several joined by 、 or `and`."""
    line = " ".join(text.split())
    name = _BYLINE.sub("", line).strip()
    parts = [p for p in _SEPARATORS.split(name) if p]
    if not parts or len(parts) > 4:
        return ""
    ok = all(_CJK_NAME.match(p.replace(" ", "")) or _LATIN_NAME.match(p) for p in parts)
    return name if ok else ""


def read_title_block(title: str, lines: Sequence[str]) -> TitleBlock:
    """The lines under a title (in order) as subtitle, author and date (module docstring)."""
    rest = [squash(line) for line in lines if line.strip()]
    date = next((line for line in rest if is_date(line)), "")
    rest = [line for line in rest if line != date]
    subtitle = author = ""
    if len(rest) == 1:
        name = author_name(rest[0])
        author, subtitle = (name, "") if name else ("", rest[0])
    elif rest:
        subtitle = " ".join(rest[:-1])
        author = author_name(rest[-1]) or rest[-1]
    return TitleBlock(squash(title), subtitle, author, date)
