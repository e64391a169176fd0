"""One sentence splitter for every place that cuts text at sentence ends (prompt budgets,
quotations, verification): it knows brackets and scripture references.

- 。！？!?… end a sentence; an English full stop does before whitespace — but not before a
  number (`Eph. 1:10`, `1 Thes. 5:17`) nor after an abbreviation (`cf.`, `v.`);
- never inside brackets or quotation marks: `…的结果（约十四20；一13–14）。` is one sentence;
  a quotation that itself ends a sentence (`他说：「神是灵。」`) ends the sentence around it;
- `；` and `;` never end one; a newline always does (and closes whatever is open).

`"".join(split_sentences(text)) == text`.
"""

from __future__ import annotations

import re

_PAIRS = {
    "（": "）",
    "(": ")",
    "「": "」",
    "『": "』",
    "“": "”",
    "‘": "’",
    "【": "】",
    "《": "》",
    "[": "]",
    "〔": "〕",
}
_CLOSERS = frozenset(_PAIRS.values()) | {'"', "'"}
_TERMINALS = frozenset("。！？!?…")
# A word before "." that makes it an abbreviation, not a sentence end ("cf. v. 3", "e.g. the").
_ABBREVIATION = re.compile(r"(?:^|[\s(（])(?:cf|e\.g|i\.e|vs?|vv|etc|ch|chs|p|pp|no|mr|mrs|dr|st)$")
_DIGIT_AFTER = re.compile(r"\s+\d")


def _full_stop_ends(text: str, i: int) -> bool:
    """An English "." at `i` ends a sentence: before whitespace or the end, but not before a
    number (`Eph. 1:10`, `1 Thes. 5:17`) and not after an abbreviation."""
    nxt = i + 1
    if nxt < len(text) and not text[nxt].isspace():
        return False
    if _DIGIT_AFTER.match(text, nxt):
        return False
    return not _ABBREVIATION.search(text[max(0, i - 6) : i].lower())


def split_sentences(text: str) -> list[str]:
    """Sentences with their closing punctuation and quotation marks; `"".join(result) == text`.

    Ends at 。！？!?… and at an English full stop (see `_full_stop_ends`), only outside
    brackets and quotation marks; a newline always ends a sentence and closes what is open.
    """
    out: list[str] = []
    start = 0
    stack: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            out.append(text[start : i + 1])
            start = i + 1
            stack.clear()
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack and i > 0 and text[i - 1] in _TERMINALS:  # 「神是灵。」 ends it too
                j = i + 1
                while j < n and text[j] in _CLOSERS:
                    j += 1
                out.append(text[start:j])
                start = i = j
                continue
        elif ch in _PAIRS or ch == '"':
            stack.append(_PAIRS.get(ch, '"'))
        elif not stack and (ch in _TERMINALS or (ch == "." and _full_stop_ends(text, i))):
            j = i + 1
            while j < n and (text[j] in _TERMINALS or text[j] in _CLOSERS):
                j += 1
            out.append(text[start:j])
            start = i = j
            continue
        i += 1
    if start < n:
        out.append(text[start:])
    return out
