"""Footnote marks inside text while a loader builds it, and the sentence a mark follows.

A loader that meets a note's mark in running text (a PDF's superscript, an EPUB's `noteref`)
puts a placeholder there (`placeholder(key)`); the placeholder survives the loader's own
cleanup (joining lines, collapsing spaces), and `take_placeholders` then gives the clean text
and where each mark stood, so a `Note` quotes the sentence its mark follows (`cited_sentence`).
"""

from __future__ import annotations

import re

from ingest.clean import squash

_OPEN, _CLOSE = "\ue002", "\ue003"  # private-use characters: never in a document's text
_SPAN = re.compile(f"{_OPEN}([^{_CLOSE}]*){_CLOSE}")
_SENTENCE_END = re.compile(r"[。！？!?；;]")
_SPACES = " \t\n\u00a0"  # as `squash` trims (an ideographic space is text)


def placeholder(key: str) -> str:
    return f"{_OPEN}{key}{_CLOSE}"


def has_placeholders(text: str) -> bool:
    return _OPEN in text


def take_placeholders(text: str) -> tuple[str, list[tuple[int, str]]]:
    """`text` without its placeholders, and (offset in that text, key) for each, in order;
    spaces around a placeholder at either end of the text go with it."""
    out = ""
    found: list[tuple[int, str]] = []
    pos = 0
    for m in _SPAN.finditer(text):
        out += text[pos : m.start()]
        found.append((len(out), m.group(1)))
        pos = m.end()
    out += text[pos:]
    stripped = out.lstrip(_SPACES)
    shift = len(out) - len(stripped)
    out = stripped.rstrip(_SPACES)
    return out, [(max(0, min(len(out), at - shift)), key) for at, key in found]


def cited_sentence(text: str, offset: int) -> str:
    """The sentence a footnote mark at `offset` belongs to (the one it follows)."""
    head = text[:offset].rstrip()
    ends = [m.end() for m in _SENTENCE_END.finditer(head[:-1])] if head else []
    start = ends[-1] if ends else 0
    return squash(head[start:]) or squash(text)
