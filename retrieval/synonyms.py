"""The bilingual synonym table: data users edit (`retrieval/data/synonyms.tsv`), not code.

Format: one group per line; terms separated by a tab or `" | "`; `#` starts a comment line
(and a trailing `# …` after whitespace is a comment too). Terms are compared in search form
(normalised, Simplified) and lowercased, so `經綸`, `Economy` and `经纶` all match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.normal_form import DATA_DIR, search_form

BUNDLED = DATA_DIR / "synonyms.tsv"
_SEPARATOR = re.compile(r"\t+|\s+\|\s+")
_TRAILING_COMMENT = re.compile(r"\s+#.*$")


class SynonymTableError(ValueError):
    def __init__(self, path: Path | str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = str(path)
        self.line = line
        self.reason = reason


def _key(term: str) -> str:
    return " ".join(search_form(term).lower().split())


def _is_phrase(term: str) -> bool:
    """English-like terms are matched as whole words in the text; CJK terms as tokens."""
    return any(c.isascii() and c.isalpha() for c in term)


@dataclass(frozen=True, slots=True)
class SynonymTable:
    groups: tuple[tuple[str, ...], ...]
    weight: float = 0.5
    # Every term once, sorted, each with whether it is matched as an English phrase: `find`
    # runs on every query, and rebuilding this there cost ~1 ms a search.
    _sorted: tuple[tuple[str, bool], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        terms = sorted({t for g in self.groups for t in g})
        object.__setattr__(self, "_sorted", tuple((t, _is_phrase(t)) for t in terms))

    @classmethod
    def load(cls, path: Path | str | None = None, *, weight: float = 0.5) -> SynonymTable:
        p = Path(path) if path is not None else BUNDLED
        return cls.parse(p.read_text(encoding="utf-8"), source=str(p), weight=weight)

    @classmethod
    def parse(cls, text: str, *, source: str = "<synonyms>", weight: float = 0.5) -> SynonymTable:
        groups: list[tuple[str, ...]] = []
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            line = _TRAILING_COMMENT.sub("", line)
            if "|" in line and not _SEPARATOR.search(line):
                raise SynonymTableError(
                    source, lineno, "separate terms with a tab or ' | ' (spaces around the bar)"
                )
            terms = [t.strip() for t in _SEPARATOR.split(line)]
            if any(not t for t in terms):
                raise SynonymTableError(source, lineno, "empty term")
            if any("|" in t for t in terms):
                raise SynonymTableError(source, lineno, "stray '|' inside a term")
            keys: list[str] = []
            for t in terms:
                k = _key(t)
                if k not in keys:
                    keys.append(k)
            if len(keys) < 2:
                raise SynonymTableError(source, lineno, "a group needs at least two terms")
            groups.append(tuple(keys))
        return cls(tuple(groups), weight)

    def terms(self) -> set[str]:
        return {t for g in self.groups for t in g}

    def find(self, text: str, tokens: Iterable[str] = ()) -> list[str]:
        """Table terms present in a query: CJK terms that are tokens, English phrases as words."""
        token_set = {t.lower() for t in tokens}
        lowered = " ".join(search_form(text).lower().split())
        found: list[str] = []
        for term, phrase in self._sorted:
            if term in token_set:
                found.append(term)
            elif (
                phrase
                and term in lowered  # the cheap test first: most phrases are not in the text
                and re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", lowered)
            ):
                found.append(term)
        return found

    def expand(self, terms: Iterable[str], weight: float | None = None) -> dict[str, float]:
        """The other terms of every group containing one of `terms`, each at `weight`."""
        w = self.weight if weight is None else weight
        given = {_key(t) for t in terms}
        out: dict[str, float] = {}
        for group in self.groups:
            if given.intersection(group):
                for t in group:
                    if t not in given:
                        out[t] = w
        return out
