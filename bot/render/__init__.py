"""One reply model → each platform's text. Shared here: splitting at platform limits."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;.])\s*")

# How a platform measures a message: code points (`len`, Discord) or UTF-16 code units
# (`bot.render.telegram.units`, Telegram).
Size = Callable[[str], int]


def fitting(text: str, limit: int, size: Size = len) -> int:
    """The length (in code points) of the longest prefix of `text` whose size is ≤ `limit`
    (every measure here counts a code point as one unit or more)."""
    low, high = 0, min(len(text), max(0, limit))
    while low < high:
        middle = (low + high + 1) // 2
        if size(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


# How a plain piece of text is shown: escaped and wrapped in the platform's markup.
Show = Callable[[str], str]


def fit(
    text: str, show: Show, limit: int, size: Size = len, budget: int | None = None
) -> list[str]:
    """Plain `text` → shown pieces (`show`: escaped and wrapped) of at most `limit` each.

    The plain text is split first and each part shown on its own, so every piece carries its
    whole markup (a quote stays a quote, a bold heading stays closed, a 【…】 is never cut);
    a part that escaping grew past the limit is split finer."""
    if not text:
        return []
    whole = show(text)
    if size(whole) <= limit:
        return [whole]
    overhead = size(show(""))
    budget = max(1, budget if budget is not None else limit - overhead)
    out: list[str] = []
    for part in split_message(text, budget, size):
        shown = show(part)
        if size(shown) <= limit:
            out.append(shown)
        elif budget > 1:  # escaping grew it (&amp;, \*, one "> " a line …): split finer
            shrink = (limit - overhead) / size(shown) * 0.95
            smaller = min(budget - 1, int(size(part) * shrink))
            out += fit(part, show, limit, size, max(1, smaller))
        else:
            out.append(shown[: fitting(shown, limit, size)])
    return out


def split_message(text: str, limit: int, size: Size = len) -> list[str]:
    """Split into pieces of at most `limit` (measured by `size`), preferring paragraph, then
    line, then sentence boundaries; never inside a 【…】 citation or a ``` code fence when
    avoidable."""
    if limit <= 0:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
    rest = text.strip("\n")
    while size(rest) > limit:
        cut = _best_cut(rest, max(1, fitting(rest, limit, size)))
        head, rest = rest[:cut].rstrip(), rest[cut:].lstrip("\n ")
        if head.count("```") % 2 == 1:  # close an open fence here, reopen in the next piece
            if size(head) + 4 > limit:
                head = head[: fitting(head, limit - 4, size)].rstrip()
            head += "\n```"
            rest = "```\n" + rest
        pieces.append(head)
    if rest:
        pieces.append(rest)
    return pieces or [""]


def _best_cut(text: str, limit: int) -> int:
    window = text[:limit]
    floor = limit // 3  # don't make tiny pieces just to hit a boundary
    for sep in ("\n\n", "\n"):
        at = window.rfind(sep)
        if at >= floor and _safe(text, at):
            return at + len(sep)
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() >= floor]
    for end in reversed(ends):
        if _safe(text, end):
            return end
    for at in range(limit, floor, -1):  # a space or any position outside a citation
        if text[at - 1] == " " and _safe(text, at):
            return at
    for at in range(limit, floor, -1):
        if _safe(text, at):
            return at
    return limit


def _safe(text: str, at: int) -> bool:
    """True when cutting at `at` does not split a 【…】 citation."""
    before = text[:at]
    return before.rfind("【") <= before.rfind("】")


def join_pieces(parts: Iterable[str], limit: int, size: Size = len) -> list[str]:
    """Join parts that each fit `limit` with blank lines into as few messages as possible."""
    pieces: list[str] = []
    current = ""
    for part in parts:
        if not current:
            current = part
        elif size(current) + 2 + size(part) <= limit:
            current += "\n\n" + part
        else:
            pieces.append(current)
            current = part
    if current:
        pieces.append(current)
    return pieces


def short_label(text: str, limit: int) -> str:
    """One line of at most `limit` characters for a button."""
    text = re.sub(r"\s+", " ", text).strip() or "…"
    return text if len(text) <= limit else text[: limit - 1] + "…"
