"""The 「下一页」 / 「上一页」 buttons of a long `/cite` (诗119 is six pages): their action strings
and the decoder that turns one back into the `CiteRequest` of that page.

    cite:<page>:<s|t>:<range>,<range>…      e.g. cite:2:s:Ps.119.1-Ps.119.176

The ranges are OSIS ids, so a button reads the same in any chat language; the script keeps the
page in the script the first one was shown in. A transport whose callback data is shorter
(Telegram's 64 bytes) maps a long action to a short id itself (`bot.render.stream.ActionTable`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrieval import scripture
from retrieval.requests import CiteRequest, Script

PREFIX = "cite"
MAX_RANGES = 20
_SCRIPTS: dict[str, Script] = {"s": "simplified", "t": "traditional"}
_OSIS = re.compile(r"^[1-3]?[A-Za-z]{2,6}\.\d{1,3}(?:\.\d{1,3})?$")


def encode_page(ranges: Sequence[scripture.RefRange], page: int, script: Script) -> str:
    spans = ",".join(f"{r.start.osis()}-{r.end.osis()}" for r in ranges)
    return f"{PREFIX}:{page}:{script[0]}:{spans}"


def decode_page(payload: str) -> CiteRequest | None:
    """The request behind a page button (`payload`: the action after `cite:`); None for a
    stale or garbled one (the router says the button has expired)."""
    page, _, rest = payload.partition(":")
    script, _, spans = rest.partition(":")
    if not page.isdigit() or not 1 <= int(page) <= 999 or script not in _SCRIPTS:
        return None
    refs: list[tuple[str, str]] = []
    for span in spans.split(",")[: MAX_RANGES + 1]:
        start, sep, end = span.partition("-")
        if not sep or not _OSIS.match(start) or not _OSIS.match(end):
            return None
        refs.append((start, end))
    if not refs or len(refs) > MAX_RANGES:
        return None
    try:
        text = reference_text([_range(a, b) for a, b in refs], "zh")
    except (KeyError, ValueError, scripture.ScriptureError):  # no such book
        return None
    return CiteRequest(text, tuple(refs), _SCRIPTS[script], int(page))


def reference_text(ranges: Sequence[scripture.RefRange], lang: str) -> str:
    """The ranges as a reader types them, in a form the parser reads back (诗119；诗120)."""
    if lang == "en":
        return "; ".join(scripture.render_en(r) for r in ranges)
    return "；".join(scripture.render_zh(r) for r in ranges)


def _range(start: str, end: str) -> scripture.RefRange:
    return scripture.RefRange(_ref(start), _ref(end))


def _ref(osis: str) -> scripture.VerseRef:
    book, chapter, *verse = osis.split(".")
    return scripture.VerseRef(book, int(chapter), int(verse[0]) if verse else None)
