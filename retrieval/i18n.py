"""User-facing strings in Simplified Chinese (default) and English.

Each room keeps its own `Catalog` of strings next to the code that uses them; this module only
holds the mechanism and the language detection rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

Lang = Literal["zh", "en"]

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def detect_language(text: str, default: Lang = "zh") -> Lang:
    """English only when the text is clearly English: two or more Latin words and no CJK.

    A single word (`maybe`, `pdf`) says nothing about the writer's language.
    """
    if _CJK.search(text):
        return "zh"
    if len(_LATIN_WORD.findall(text)) >= 2:
        return "en"
    return default


class Catalog:
    """`catalog(lang, key, **fields)` → text. Missing English falls back to Chinese."""

    def __init__(self, strings: Mapping[str, tuple[str, str]]) -> None:
        self._strings = dict(strings)

    def __call__(self, lang: Lang, key: str, /, **fields: object) -> str:
        zh, en = self._strings[key]
        template = en if lang == "en" and en else zh
        return template.format(**fields) if fields else template

    def keys(self) -> set[str]:
        return set(self._strings)
