"""The forms text takes before search: normalised width and whitespace, Simplified or
Traditional script (`retrieval.text` re-exports these; it and `retrieval.synonyms` both build
on them, so neither imports the other's module for them)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval.requests import Script

DATA_DIR = Path(str(resources.files("retrieval") / "data"))

# ---- normalisation ------------------------------------------------------------------------

# Full-width punctuation that stays full-width: it is how Chinese prose is written.
_KEEP = "，：；！？（）～"
_KEEP_SPLIT = re.compile(f"([{_KEEP}]+)")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_HSPACE = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r" ?\n[\s]*")


def normalise(s: str) -> str:
    """Width and whitespace cleanup; never changes the characters' meaning."""
    s = s.translate(_ZERO_WIDTH).replace("\r\n", "\n").replace("\r", "\n")
    parts = _KEEP_SPLIT.split(s)
    s = "".join(p if i % 2 else unicodedata.normalize("NFKC", p) for i, p in enumerate(parts))
    s = _HSPACE.sub(" ", s)

    def newline(m: re.Match[str]) -> str:
        return "\n\n" if m.group(0).count("\n") > 1 else "\n"

    return _NEWLINES.sub(newline, s).strip()


@functools.cache
def _t2s() -> Callable[[str], str]:
    import opencc

    convert: Callable[[str], str] = opencc.OpenCC("t2s").convert
    return convert


def to_simplified(s: str) -> str:
    """Traditional → Simplified Chinese; other text passes through unchanged."""
    if not s:
        return s
    return _short_t2s(s) if len(s) <= _SHORT else _t2s()(s)


# Names and terms (the seed graph's, the dictionary's, a query's tokens) are converted again
# and again as a process starts: half of `baibao cite`'s 1,000 conversions (0.3 ms each)
# repeated one before. Only short texts are kept: passages are converted once.
_SHORT = 64


@functools.lru_cache(maxsize=1 << 14)
def _short_t2s(s: str) -> str:
    return _t2s()(s)


@functools.cache
def _s2t() -> Callable[[str], str]:
    import opencc

    convert: Callable[[str], str] = opencc.OpenCC("s2t").convert
    return convert


def to_traditional(s: str) -> str:
    """Simplified → Traditional Chinese (for readers who asked for Traditional)."""
    return _s2t()(s) if s else s


def is_traditional(s: str) -> bool:
    """Written in Traditional characters: some character changes under Traditional → Simplified."""
    return to_simplified(s) != s


def reader_script(chosen: Script | None, typed: str) -> Script:
    """The script Bible text is shown in: the one chosen (the request's option or the chat's
    setting), else Traditional when the reader wrote in Traditional, else Simplified."""
    return chosen or ("traditional" if is_traditional(typed) else "simplified")


def in_script(text: str, script: Script) -> str:
    """`text` in `script`."""
    return to_traditional(text) if script == "traditional" else to_simplified(text)


# The 1919 CUV writes the aspect particle 着 as 著 (照著…得著, 弗1:11–12), and OpenCC keeps
# 著, which is also the Simplified character of 著作. In the CUV every 著 is the particle
# except in 著名 "famous" (按著名 is 按着名 "by name").
_CUV_PARTICLE = re.compile(r"著(?!名)|(?<=按)著(?=名)")


def bible_in_script(text: str, script: Script) -> str:
    """Bible text (stored as the CUV writes it) in `script`: Simplified is read as a reader
    of Simplified Chinese writes it (照着, not 照著)."""
    if script == "traditional":
        return to_traditional(text)
    return _CUV_PARTICLE.sub("着", to_simplified(text))


def search_form(s: str) -> str:
    """The form embeddings and BM25 see: normalised, Simplified."""
    return to_simplified(normalise(s))
