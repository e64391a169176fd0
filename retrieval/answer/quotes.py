"""Sentences and quotations.

- `split_sentences`: a splitter that knows brackets and scripture references, so a quotation
  is a whole sentence — `…的结果（约十四20；一13–14）。` stays one sentence, `Eph. 1:10` is not a
  sentence end, and `；` never ends one.
- `verify_form` / `quote_found`: the form quotations are compared in (width, script, case,
  spaces and punctuation folded) and the check that a quotation is in a passage.
- `quote_at` / `excerpt`: the sentence of a passage shown under 出处, and the excerpt shown in
  an extractive answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from retrieval.scripture import ScriptureError, parse_reference
from retrieval.sentences import split_sentences
from retrieval.text import to_simplified

__all__ = ["excerpt", "quote_at", "quote_found", "short_quote", "split_sentences", "verify_form"]

QUOTE_CHARS = 120
EXCERPT_CHARS = 300
MIN_SUBSTANCE = 6  # folded characters a sentence needs to be worth quoting

_CLAUSE = re.compile(r"(?<=[，、：；,;:])")
_SPACES = re.compile(r"[ \t\r\n]+")  # the ideographic space of 肆　… stays


# ---- verification form ----------------------------------------------------------------------


def verify_form(text: str) -> str:
    """What quotations are compared in: NFKC width, Simplified, lowercase, no spaces/punctuation."""
    text = to_simplified(unicodedata.normalize("NFKC", text)).lower()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZSC")


def quote_found(quote: str, source: str) -> bool:
    """Is `quote` in `source` after normalisation? An ellipsis may skip text between parts."""
    parts = [verify_form(p) for p in re.split(r"…+|\.{3,}|⋯+", quote)]
    parts = [p for p in parts if p]
    if not parts:
        return True
    haystack = verify_form(source)
    position = 0
    for part in parts:
        found = haystack.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return True


# ---- quotes and excerpts ----------------------------------------------------------------------


def _bigrams(text: str) -> set[str]:
    form = verify_form(text)
    return {form[i : i + 2] for i in range(len(form) - 1)} or ({form} if form else set())


# What opens a cross-reference: 参, 参看, 见, cf., see, compare.
_SEE = re.compile(r"^\s*(?:参(?:看|阅|考)?|见|另见|又见|cf\.?|see(?:\s+also)?|compare)\s*", re.I)
_SEE_TAIL = re.compile(r"[\s。．.;；,，)）(（]+$")


def _only_references(sentence: str) -> bool:
    """A cross-reference and nothing else: `参弗三9，提前一4。`, `See Rom. 8:29; 2 Cor. 4:4.`"""
    text = to_simplified(unicodedata.normalize("NFKC", sentence))
    rest = _SEE_TAIL.sub("", _SEE.sub("", text, count=1)).strip("（(")
    if not rest:
        return False
    try:
        return bool(parse_reference(rest))
    except ScriptureError:
        return False


def _substantial(sentence: str) -> bool:
    """More than a reference or a heading number: `1:13-14).`, `John 14:20;` and a
    cross-reference (`参弗三9，提前一4。`, Chinese numerals and all) are not."""
    form = verify_form(sentence)
    enough = sum(1 for ch in form if not ch.isdigit()) >= MIN_SUBSTANCE
    return enough and not _only_references(sentence)


def short_quote(sentence: str, limit: int = QUOTE_CHARS) -> str:
    """A sentence as it stands; one longer than `limit` is cut after a clause mark, with "…"."""
    sentence = _SPACES.sub(" ", sentence).strip()
    if len(sentence) <= limit:
        return sentence
    cut = ""
    for clause in _CLAUSE.split(sentence):
        if cut and len(cut) + len(clause) > limit - 1:
            break
        cut += clause
    if len(cut) > limit - 1:
        cut = cut[: limit - 1]
    return cut.rstrip("，、：；,;: ") + "…"


def _best(sentences: list[str], wanted: str, among: Sequence[int] | None = None) -> int:
    """The index of the sentence sharing most bigrams with `wanted` (the first on a tie),
    among the indices `among` (default: all)."""
    grams = _bigrams(wanted)
    shared = [len(grams & _bigrams(s)) for s in sentences]
    return max(range(len(sentences)) if among is None else among, key=lambda i: (shared[i], -i))


def quote_at(
    chunk_text: str, spot: str, limit: int = QUOTE_CHARS, *, headings: Sequence[str] = ()
) -> str:
    """The whole sentence of the passage that best matches `spot` (a claim, a quotation the
    model made, or the question); sentences that are only a reference, or only one of the
    passage's `headings` (an outline unit's point line, which its label already names), are
    chosen only when nothing else is there; when a cross-reference (`参弗三9，提前一4。`) matches
    best, the sentence it follows is chosen."""
    sentences = [s.strip() for s in split_sentences(chunk_text) if s.strip()]
    named = {verify_form(h) for h in headings}
    quotable = [_substantial(s) and verify_form(s) not in named for s in sentences]
    if not sentences:
        return ""
    best = _best(sentences, spot)
    if not quotable[best] and _only_references(sentences[best]):
        # A cross-reference (参弗三9) matches a reference best; what it refers from is the
        # sentence before it, the one a reader needs.
        before = [i for i in range(best) if quotable[i]]
        if before:
            return short_quote(sentences[before[-1]], limit)
    if quotable[best]:
        return short_quote(sentences[best], limit)
    candidates = [i for i, ok in enumerate(quotable) if ok]
    return short_quote(sentences[_best(sentences, spot, candidates or None)], limit)


def excerpt(chunk_text: str, question: str, limit: int = EXCERPT_CHARS) -> str:
    """Whole sentences of the passage, starting at the one nearest the question."""
    sentences = split_sentences(chunk_text)
    if not sentences:
        return ""
    start = _best(sentences, question)
    if start <= 1:  # near the beginning: start there
        start = 0
    out = ""
    end = start
    for sentence in sentences[start:]:
        if out and len(out) + len(sentence) > limit:
            break
        out += sentence
        end += 1
    out = out.strip()
    lead = "…" if start > 0 else ""
    if len(out) > limit:
        return lead + short_quote(out, limit)
    more = any(s.strip() for s in sentences[end:])
    return lead + out + ("…" if more else "")
