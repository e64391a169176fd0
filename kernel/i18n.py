"""User-facing strings in Simplified Chinese (default) and English.

Each room keeps its own `Catalog` of strings in a TOML data file next to the code that uses it
(`bot/catalogs/`); this module only holds the mechanism, the file format's check and the
language detection rule. A catalogue file is one table a key, in the order the room reads best:

    # rounds
    [round_open]
    zh = "本小说已有进行中的一轮（{phase}），请先完成它。"
    en = "This novel already has an open round ({phase}); finish it first."
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
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


class CatalogError(ValueError):
    """A catalogue file that is not TOML tables of string `zh` and `en`: a developer's mistake,
    named by file and key."""


_FIELDS = ("zh", "en")


def read_catalog(path: Path) -> dict[str, tuple[str, str]]:
    """A catalogue file → {key: (zh, en)}, in the file's order; `CatalogError` when malformed."""
    import tomllib  # here, not at the top: its import compiles regexes (~5 ms) on every start

    try:
        with path.open("rb") as file:
            tables = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise CatalogError(f"catalogue {path}: {err}") from err
    return {key: _entry(path, key, table) for key, table in tables.items()}


def _entry(path: Path, key: str, table: object) -> tuple[str, str]:
    where = f"catalogue {path}, [{key}]"
    if not isinstance(table, dict):
        raise CatalogError(f"{where}: must be a table with zh and en, not {type(table).__name__}")
    unknown = sorted(set(table) - set(_FIELDS))
    if unknown:
        raise CatalogError(f"{where}: unknown field(s) {', '.join(unknown)}; only zh and en")
    for field in _FIELDS:
        if field not in table:
            raise CatalogError(f"{where}: {field} is missing")
        if not isinstance(table[field], str):
            raise CatalogError(f"{where}: {field} must be a string")
    return table["zh"], table["en"]


class Catalog:
    """`catalog(lang, key, **fields)` → text. Missing English falls back to Chinese."""

    def __init__(self, strings: Mapping[str, tuple[str, str]]) -> None:
        self._source: dict[str, tuple[str, str]] | Path = dict(strings)

    @classmethod
    def from_toml(cls, path: Path) -> Catalog:
        """The catalogue in a file, read and checked on first use: importing the module that
        holds it parses nothing (the CLI's startup stays as fast as with literals)."""
        catalog = cls({})
        catalog._source = path
        return catalog

    @cached_property
    def _strings(self) -> dict[str, tuple[str, str]]:
        source = self._source
        return read_catalog(source) if isinstance(source, Path) else source

    def __call__(self, lang: Lang, key: str, /, **fields: object) -> str:
        zh, en = self._strings[key]
        template = en if lang == "en" and en else zh
        return template.format(**fields) if fields else template

    def keys(self) -> set[str]:
        return set(self._strings)
