"""One reply model → each platform's text. Shared here: splitting at platform limits."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;.])\s*")


def split_message(text: str, limit: int) -> list[str]:
    """Split into pieces of at most `limit` characters, preferring paragraph, then line, then
    sentence boundaries; never inside a 【…】 citation or a ``` code fence when avoidable."""
    if limit <= 0:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
    rest = text.strip("\n")
    while len(rest) > limit:
        cut = _best_cut(rest, limit)
        head, rest = rest[:cut].rstrip(), rest[cut:].lstrip("\n ")
        if head.count("```") % 2 == 1:  # close an open fence here, reopen in the next piece
            head = head[: limit - 4].rstrip() + "\n```" if len(head) + 4 > limit else head + "\n```"
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
