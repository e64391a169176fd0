"""The one scripture reference parser: Chinese and English references → OSIS.

Normal form is OSIS (`Eph.1.10`, ranges `Eph.1.10-Eph.1.12`, chapters `Ps.23`). Book names
come from `data/books.json` (66 books, CUV Chinese in Simplified and Traditional script, English
names and abbreviations); chapters and verses per chapter from `data/versification.json`, made
once from the bundled CUV table with `build_versification()` (see its docstring).

Two entry points:
- `parse_reference(text)`: strict, for commands. The whole input must be references; anything
  else raises `ScriptureError` naming the reason (typed: the chat layer words it).
- `find_references(text)`: lenient, for prose. Finds what is clearly a reference, silently skips
  what is not or cannot exist, never raises. Single-character Chinese abbreviations (来, 加, 出 …)
  only count when a chapter number follows them, so ordinary words are not mistaken for books.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DATA_DIR = Path(__file__).parent / "data"
BOOKS_FILE = DATA_DIR / "books.json"
VERSIFICATION_FILE = DATA_DIR / "versification.json"

__all__ = [
    "Book",
    "RefRange",
    "ScriptureError",
    "ScriptureReason",
    "VerseRef",
    "book",
    "book_choices",
    "book_name_en",
    "book_name_zh",
    "books",
    "build_versification",
    "chapter_count",
    "expand",
    "find_references",
    "normalise_refs",
    "parse_reference",
    "render_en",
    "render_zh",
    "search_books",
    "sort_key",
    "verse_count",
]


# Why a reference cannot be read, with the fields of `ScriptureError` each one sets.
ScriptureReason = Literal[
    "empty",  # nothing was given
    "unknown",  # `text`: a fragment that reads as no reference
    "unknown_book",  # `text`: a name no book has
    "no_chapter",  # `text`: a book's name with no chapter after it
    "zero",  # `text`: the reference (book abbreviation and numbers) with a 0 in it
    "chapters",  # `book` has only `count` chapters
    "verses",  # `book`'s chapter `chapter` has only `count` verses
    "backwards",  # `refs`: a range that ends before it starts
    "cross_book",  # `text`: a range from one book into another
]


class ScriptureError(ValueError):
    """A reference that cannot exist or cannot be read: `reason` names the rule it breaks,
    the other fields hold what a message about it needs (see `ScriptureReason`). The chat layer
    words it for a user (`bot.presenters.scripture`); `str(err)` is a developer's summary."""

    def __init__(
        self,
        reason: ScriptureReason,
        *,
        text: str = "",
        book: Book | None = None,
        chapter: int = 0,
        count: int = 0,
        refs: RefRange | None = None,
    ) -> None:
        self.reason: ScriptureReason = reason
        self.text = text
        self.book = book
        self.chapter = chapter
        self.count = count
        self.refs = refs
        super().__init__(self._summary())

    def _summary(self) -> str:
        if self.book is not None:
            where = f"{self.book.en} {self.chapter}" if self.reason == "verses" else self.book.en
            unit = self.reason if self.count != 1 else self.reason.removesuffix("s")
            return f"{where} has {self.count} {unit}"
        if self.refs is not None:
            return f"{self.reason}: {render_en(self.refs)}"
        return f"{self.reason}: {self.text}" if self.text else self.reason


# ---- references ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerseRef:
    book: str  # OSIS book id, e.g. "Eph"
    chapter: int
    verse: int | None = None  # None = whole chapter

    def osis(self) -> str:
        base = f"{self.book}.{self.chapter}"
        return base if self.verse is None else f"{base}.{self.verse}"


@dataclass(frozen=True, slots=True)
class RefRange:
    start: VerseRef
    end: VerseRef

    def osis(self) -> str:
        a, b = self.start.osis(), self.end.osis()
        return a if a == b else f"{a}-{b}"


# ---- the book table -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Book:
    osis: str
    index: int  # 0 = Genesis … 65 = Revelation
    zh: str  # full Simplified name, 以弗所书
    zh_short: str  # CUV abbreviation, 弗
    zh_tw: str  # full Traditional name, 以弗所書
    en: str  # Ephesians
    en_short: str  # Eph
    verses: tuple[int, ...]  # verses per chapter

    @property
    def chapters(self) -> int:
        return len(self.verses)


def build_versification(cuv_tsv_gz: Path) -> dict[str, list[int]]:
    """Verses per chapter for each OSIS book, from a CUV table (columns book, chapter, verse, text).

    `data/versification.json` was made with:
        json.dump(build_versification(Path("ingest/samples/cuv-1919-traditional.tsv.gz")), f)
    """
    counts: dict[str, dict[int, int]] = {}
    with gzip.open(cuv_tsv_gz, "rt", encoding="utf-8") as fh:
        next(fh)  # header
        for line in fh:
            osis, chapter, verse, _ = line.rstrip("\n").split("\t", 3)
            chapters = counts.setdefault(osis, {})
            chapters[int(chapter)] = max(chapters.get(int(chapter), 0), int(verse))
    return {b: [ch[c] for c in sorted(ch)] for b, ch in counts.items()}


def _load_books() -> tuple[tuple[Book, ...], dict[str, str], dict[tuple[int, str], str]]:
    names = json.loads(BOOKS_FILE.read_text(encoding="utf-8"))["books"]
    verses = json.loads(VERSIFICATION_FILE.read_text(encoding="utf-8"))
    table: list[Book] = []
    zh_names: dict[str, str] = {}
    en_names: dict[tuple[int, str], str] = {}
    for i, row in enumerate(names):
        osis = str(row["osis"])
        table.append(
            Book(
                osis=osis,
                index=i,
                zh=row["zh"],
                zh_short=row["zh_short"],
                zh_tw=row["zh_tw"],
                en=row["en"],
                en_short=row["en_short"],
                verses=tuple(int(n) for n in verses[osis]),
            )
        )
        for name in row["zh_names"]:
            if zh_names.setdefault(name, osis) != osis:
                raise ValueError(f"books.json: {name!r} names two books")
        number = int(row["en_number"])
        bare = osis.lstrip("123")
        for name in [*row["en_names"], bare]:
            key = (number, _en_key(name))
            if en_names.setdefault(key, osis) != osis:
                raise ValueError(f"books.json: {name!r} names two books")
    if len(table) != 66 or set(verses) != {b.osis for b in table}:
        raise ValueError("books.json and versification.json must list the same 66 books")
    return tuple(table), zh_names, en_names


def _en_key(name: str) -> str:
    return re.sub(r"[\s.]+", "", name).lower()


_BOOKS, _ZH_NAMES, _EN_NAMES = _load_books()
_BY_OSIS: dict[str, Book] = {b.osis: b for b in _BOOKS}
_BY_OSIS_LOWER: dict[str, Book] = {b.osis.lower(): b for b in _BOOKS}
_ZH_MAX = max(len(n) for n in _ZH_NAMES)


def books() -> tuple[Book, ...]:
    """All 66 books in canonical order."""
    return _BOOKS


def book(name: str) -> Book:
    """A book by OSIS id (any case), Chinese name or English name; ScriptureError if unknown."""
    key = name.strip()
    found = _BY_OSIS.get(key) or _BY_OSIS_LOWER.get(key.lower())
    if found is None and key in _ZH_NAMES:
        found = _BY_OSIS[_ZH_NAMES[key]]
    if found is None:
        m = _EN_NAME_RE.fullmatch(_translate(key))
        osis = _en_lookup(m) if m else None
        found = _BY_OSIS.get(osis) if osis else None
    if found is None:
        raise ScriptureError("unknown_book", text=name[:40])
    return found


def book_name_zh(osis_book: str) -> str:
    """ "Eph" → "以弗所书"."""
    return book(osis_book).zh


def book_name_en(osis_book: str) -> str:
    return book(osis_book).en


def chapter_count(book_id: str) -> int:
    return book(book_id).chapters


def verse_count(book_id: str, chapter: int) -> int:
    b = book(book_id)
    _check_chapter(b, chapter)
    return b.verses[chapter - 1]


def book_choices() -> list[tuple[str, str]]:
    """(OSIS id, Chinese short name) for every book, in canonical order."""
    return [(b.osis, b.zh_short) for b in _BOOKS]


def search_books(prefix: str, limit: int = 25) -> list[tuple[str, str]]:
    """Autocomplete: books whose Chinese or English names or abbreviations start with (or, after
    those, contain) `prefix`. Returns (OSIS id, label) with label like "以弗所书 弗 · Ephesians".
    A trailing chapter/verse in `prefix` ("弗1:") is ignored; an empty prefix lists the books."""
    text = _translate(prefix).strip()
    text = re.split(r"[\s.]*[0-9〇零一二两三四五六七八九十百:：]*$", text, maxsplit=1)[0]
    key = _en_key(text)
    ranked: dict[str, int] = {}
    if not key:
        ranked = {b.osis: b.index for b in _BOOKS}
    else:
        for b in _BOOKS:
            rank = _match_rank(b, key)
            if rank is not None:
                ranked[b.osis] = rank * 100 + b.index
    ordered = sorted(ranked, key=lambda o: ranked[o])[:limit]
    return [(o, _label(_BY_OSIS[o])) for o in ordered]


def _label(b: Book) -> str:
    return f"{b.zh} {b.zh_short} · {b.en}"


def _match_rank(b: Book, key: str) -> int | None:
    zh = [n for n, o in _ZH_NAMES.items() if o == b.osis]
    number = _EN_NUMBER.get(b.osis, 0)
    en = [_en_key(n) for (num, n), o in _EN_NAMES.items() if o == b.osis and num == number]
    en += [f"{number}{n}" for n in list(en) if number] + [b.osis.lower()]
    candidates = [*zh, *en]
    if key in candidates:
        return 0
    if any(c.startswith(key) for c in candidates):
        return 1
    if any(key in c for c in candidates) or key in _en_key(b.en):
        return 2
    return None


_EN_NUMBER: dict[str, int] = {o: n for (n, _), o in _EN_NAMES.items() if n}


# ---- text preparation -----------------------------------------------------------------------

_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}  # full-width ASCII → ASCII
_WIDTH.update(dict.fromkeys(map(ord, "‐‑‒–—―−﹣"), ord("-")))
_WIDTH.update({0x3000: 0x20, 0x00A0: 0x20, ord("〜"): ord("~"), ord("﹕"): ord(":")})


def _translate(text: str) -> str:
    """Full-width forms and dashes to ASCII, one character for one, so positions are kept."""
    return text.translate(_WIDTH)


_CN_DIGIT = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5}
_CN_DIGIT |= {"六": 6, "七": 7, "八": 8, "九": 9}
_CN_CHARS = "".join(_CN_DIGIT) + "十百"
_CN_STRUCT = re.compile(
    r"(?:(?P<h>[一二两兩三四五六七八九])百)?(?P<z>[〇零])?"
    r"(?:(?P<t>[一二两兩三四五六七八九])?(?P<ten>十))?(?P<u>[一二两兩三四五六七八九])?"
)


def _cn_int(text: str) -> int | None:
    """二十三 → 23, 一百一十九 → 119, 十 → 10, 一〇五 → 105; None when it is not a number."""
    if all(ch in _CN_DIGIT for ch in text):
        return int("".join(str(_CN_DIGIT[ch]) for ch in text))
    m = _CN_STRUCT.fullmatch(text)
    if m is None or not text:
        return None
    value = 0
    if m["h"]:
        value += _CN_DIGIT[m["h"]] * 100
    if m["ten"]:
        value += (_CN_DIGIT[m["t"]] if m["t"] else 1) * 10
    if m["u"]:
        value += _CN_DIGIT[m["u"]]
    if m["z"] and not (m["h"] and m["u"] and not m["ten"]):
        return None  # 零 only in 一百零五
    return value


# ---- regular expressions (compiled once) -------------------------------------------------


class _TrieNode:
    __slots__ = ("children", "end")

    def __init__(self) -> None:
        self.children: dict[str, _TrieNode] = {}
        self.end = False


def _trie_pattern(words: Iterable[str]) -> str:
    """An alternation that prefers the longest word and backtracks to shorter ones."""
    root = _TrieNode()
    for word in words:
        node = root
        for ch in word:
            node = node.children.setdefault(ch, _TrieNode())
        node.end = True

    def emit(node: _TrieNode) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.children.items())]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if node.end else body

    return emit(root)


_SP = r"[ \t]*"
_EN_PREFIX = r"(?:(?P<pre>[123](?:st|nd|rd)?)[ \t]*|(?P<rpre>iii|ii|i|first|second|third)[ \t]+)"
_EN_NAME = rf"(?<![A-Za-z0-9]){_EN_PREFIX}?(?P<en>[A-Za-z]+(?:[ \t]+of[ \t]+(?:songs|solomon))?)\.?"
_EN_NAME_RE = re.compile(_EN_NAME, re.IGNORECASE)
_ZH_PATTERN = _trie_pattern(_ZH_NAMES)
# Prose: a book name only where a chapter number follows it.
_PROSE_RE = re.compile(
    rf"(?P<zh>{_ZH_PATTERN})(?={_SP}(?:第|[0-9]|[{_CN_CHARS}]))|{_EN_NAME}(?={_SP}[0-9])",
    re.IGNORECASE,
)
_NUM_RE = re.compile(rf"[0-9]+|[{_CN_CHARS}]+")
_SPACES = " \t"


def _skip(s: str, p: int) -> int:
    """Past spaces and tabs (full-width spaces are already ASCII after `_translate`)."""
    while p < len(s) and s[p] in _SPACES:
        p += 1
    return p


_RANGE_RE = re.compile(rf"{_SP}(?:-+|~|至|到){_SP}")
_LIST_RE = re.compile(rf"{_SP}[,;、]{_SP}")
_SEP_RE = re.compile(r"(?:[\s,;、/|]|和|及|与|與|and\b|&)*", re.IGNORECASE)
_SUFFIX_RE = re.compile(r"(?:[abc](?![A-Za-z])|[上下](?:半)?)?")
_VERSE_MARK = "节節"
_CHAPTER_MARK = "章篇"
_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")

_EN_PREFIX_NUMBER = {"1": 1, "1st": 1, "i": 1, "first": 1, "2": 2, "2nd": 2, "ii": 2}
_EN_PREFIX_NUMBER |= {"second": 2, "3": 3, "3rd": 3, "iii": 3, "third": 3}

# English names that are also ordinary words or given names: in prose they need a capital letter
# and a chapter:verse (`Mark 4:3`, not "mark 4 times").
_EN_COMMON = frozenset(
    "is am ex es de la na mi re ro ga ho da le ac ob ne pe co ch sa ki th ti pr jo jn jb "
    "job acts act mark mar song jude jud ruth numbers num judges james john joh jon can "
    "col gen hag mal tit phil dan pro lam ecc mic nah hab hos sos cant rev jer je est ezra "
    "pet tim sam kin kings peter cor sm tm pt pp".split()
)

# Words in which a one-character abbreviation is just part of the word (大约3:15 is a time).
_ZH_WORDS = frozenset(
    "大约 节约 预约 合约 条约 签约 契约 相约 公约 婚约 违约 制约 "
    "后来 本来 原来 将来 未来 过来 回来 起来 进来 出来 下来 上来 看来 从来 向来 一来 到来 带来 以来 "
    "本书 此书 该书 全书 读书 看书 图书 新书 原书 这书 那书 证书 文书 丛书 "
    "比赛 决赛 联赛 球赛 预赛 复赛 初赛 竞赛 大赛 "
    "胜利 顺利 权利 "
    "演出 支出 提出 推出 指出 付出 做出 作出 日出 输出 退出 超出 发出 外出 突出 得出 "
    "增加 附加 追加 更加 再加 外加 施加 "
    "获得 取得 觉得 记得 懂得 值得 使得 赢得 难得 "
    "东西 山西 江西 广西 陕西 中西 "
    "唐诗 古诗 写诗 作诗 新诗 "
    "不可 许可 认可 "
    "一路 道路 马路 公路 "
    "很多 许多 更多 好多 最多 差不多 太多 "
    "比分 "
    "時來 後來 本來 原來 將來 大約 節約 預約 比賽 決賽 勝利".split()
)


# ---- parsing --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Point:
    number: int | None  # chapter, or verse of a one-chapter book
    verse: int | None
    chapter_marked: bool  # 章 / 篇 followed the number
    verse_marked: bool  # 节 followed a lone number
    chinese: bool  # the first number was written in Chinese numerals
    end: int
    bare_end: int  # where the number itself ended (before any marker)


def _number(s: str, pos: int) -> tuple[int | None, bool, int] | None:
    m = _NUM_RE.match(s, pos)
    if m is None:
        return None
    text = m.group()
    if text[0].isdigit():
        return int(text), False, m.end()
    return _cn_int(text), True, m.end()


def _point(s: str, pos: int) -> _Point | None:
    p = _skip(s, pos)
    if s.startswith("第", p):
        p += 1
    first = _number(s, p)
    if first is None:
        return None
    number, chinese, p = first
    bare_end = p
    verse: int | None = None
    chapter_marked = verse_marked = False
    q = _skip(s, p)
    after = s[q : q + 1]
    if after and after in _CHAPTER_MARK:
        chapter_marked, p = True, q + 1
        r = _skip(s, p)
        if s.startswith("第", r):
            r += 1
        second = _number(s, r)
        if second is not None:
            verse, _, p = second
            p = _verse_tail(s, p)
    elif after == ":" or (
        s[p : p + 1] == "." and s[p + 1 : p + 2].isascii() and s[p + 1 : p + 2].isdigit()
    ):
        second = _number(s, _skip(s, q + 1))
        if second is not None:
            verse, _, p = second
            p = _verse_tail(s, p)
    elif chinese and s[p : p + 1].isascii() and s[p : p + 1].isdigit():
        second = _number(s, p)
        if second is not None:
            verse, _, p = second
            p = _verse_tail(s, p)
    elif after and after in _VERSE_MARK:
        verse_marked, p = True, q + 1
    return _Point(number, verse, chapter_marked, verse_marked, chinese, p, bare_end)


def _verse_tail(s: str, p: int) -> int:
    p = _end_of(_SUFFIX_RE, s, p)
    q = _skip(s, p)
    return q + 1 if s[q : q + 1] and s[q] in _VERSE_MARK else p


@dataclass(slots=True)
class _Raw:
    """Numbers as written, before they are checked against the versification."""

    chapter: int | None
    verse: int | None
    end_chapter: int | None
    end_verse: int | None
    whole_chapter: bool  # no verse given: chapter (or chapter range)


def _cjk_follows(s: str, p: int) -> bool:
    q = _skip(s, p)
    ch = s[q : q + 1]
    return bool(ch) and ch not in "章篇节節" and _CJK_RE.match(ch) is not None


class _Spec:
    """Chapter/verse text after one book name: items, ranges and lists."""

    def __init__(self, s: str, origin: int, b: Book, strict: bool, short_name: bool) -> None:
        self.s = s
        self.origin = origin  # where the book name starts
        self.b = b
        self.strict = strict
        self.short_name = short_name  # one-character abbreviation (prose is stricter)

    def parse(self, pos: int) -> tuple[list[_Raw], int]:
        s = self.s
        if self.short_name and not self.strict and s[pos : pos + 1] in _SPACES:
            return [], pos  # in prose 弗 must be directly followed by its chapter
        first = _point(s, pos)
        if first is None or not self._first_ok(first):
            return [], pos
        item = self._item(first)
        if item is None:
            return [], pos
        raw, end = item
        raws = [raw]
        while True:
            point = self._listed(end, raws[-1])
            item = self._item(point) if point is not None else None
            if item is None:
                break
            raw, end = item
            raws.append(raw)
        return raws, end

    def _listed(self, end: int, prev: _Raw) -> _Point | None:
        """The next item of a list (`, 23` / `；4:1`) after `end`, read in the light of the
        previous one; None where the list ends."""
        s, b = self.s, self.b
        m = _LIST_RE.match(s, end)
        if m is None or self._book_at(m.end()):
            return None
        point = _point(s, m.end())
        if point is None:
            return None
        if point.verse is None and not point.chapter_marked and not self.strict:
            if _cjk_follows(s, point.bare_end) or (point.chinese and not point.verse_marked):
                return None
        if point.verse is None and not point.chapter_marked and not prev.whole_chapter:
            # 约14:20, 23 → another verse of the same chapter
            chapter = prev.end_chapter if prev.end_chapter is not None else prev.chapter
            point = _Point(chapter, point.number, False, False, False, point.end, point.bare_end)
            if b.chapters == 1:
                point = _Point(1, point.verse, False, False, False, point.end, point.bare_end)
        return point

    def _first_ok(self, p: _Point) -> bool:
        if self.strict:
            return True
        if p.chinese and p.verse is None and not (p.chapter_marked or p.verse_marked):
            return False  # 出一份, 但二人: Chinese numerals need 章/篇/节 or a verse in prose
        if p.verse is None and not p.chapter_marked and self.short_name:
            return not _cjk_follows(self.s, p.bare_end)  # 来2次, 歌3首
        return True

    def _book_at(self, pos: int) -> bool:
        """A book name starts at `pos`: Chinese, or English with its number (`; 2 Cor. 3:18`,
        `, 1 Tim. 1:4`: the 2 and 1 are a book's, not verses of the list)."""
        return bool(_candidates(self.s, pos, None))

    def _item(self, p: _Point) -> tuple[_Raw, int] | None:
        b = self.b
        chapter, verse = p.number, p.verse
        whole = verse is None
        if verse is None and not p.chapter_marked and (b.chapters == 1 or p.verse_marked):
            if b.chapters == 1:  # 犹3, Jude 3: the verse of a one-chapter book
                chapter, verse, whole = 1, p.number, False
        raw = _Raw(chapter, verse, None, None, whole)
        end = p.end
        m = _RANGE_RE.match(self.s, end)
        if m is not None:
            q = m.end()
            again = _candidates(self.s, q, None)
            if again:
                if again[0][1] != b.osis:
                    if self.strict:
                        ref = _fragment(self.s, self.origin).split("-")[0]
                        raise ScriptureError("cross_book", text=f"{ref}-{_fragment(self.s, q)}")
                    return raw, end
                q = _skip(self.s, q + again[0][0])
            tail = _point(self.s, q)
            if tail is not None and self._range_end(raw, tail):
                end = tail.end
        return raw, end

    def _range_end(self, raw: _Raw, t: _Point) -> bool:
        """Fill the end of `raw` from `t`; False when `t` does not read as a range end."""
        if t.verse is not None:  # 太5:3-7:29
            raw.end_chapter, raw.end_verse = t.number, t.verse
            return True
        if not self.strict and (_cjk_follows(self.s, t.bare_end) and not t.chapter_marked):
            if not t.verse_marked:
                return False
        if t.chinese and not self.strict and not (t.chapter_marked or t.verse_marked):
            if raw.whole_chapter:
                return False
        if raw.whole_chapter and not t.verse_marked:  # 诗23-25, 弗1-2章
            raw.end_chapter, raw.end_verse = t.number, None
            return True
        if t.chapter_marked:  # 弗1:10-2章: to the end of chapter 2
            raw.end_chapter, raw.end_verse = t.number, None
            return True
        raw.end_chapter, raw.end_verse = raw.chapter, t.number  # 弗1:10-12
        return True


def _names_at(s: str, pos: int) -> list[tuple[int, str]]:
    """Chinese book names starting at `pos`, longest first: (length, OSIS)."""
    found: list[tuple[int, str]] = []
    for n in range(min(_ZH_MAX, len(s) - pos), 0, -1):
        osis = _ZH_NAMES.get(s[pos : pos + n])
        if osis is not None:
            found.append((n, osis))
    return found


def _en_lookup(m: re.Match[str]) -> str | None:
    pre = (m["pre"] or m["rpre"] or "").lower()
    number = _EN_PREFIX_NUMBER.get(pre, 0)
    return _EN_NAMES.get((number, _en_key(m["en"])))


def _check_chapter(b: Book, chapter: int) -> None:
    if chapter < 1:
        raise ScriptureError("zero", text=f"{b.zh_short}{chapter}")
    if chapter > b.chapters:
        raise ScriptureError("chapters", book=b, count=b.chapters)


def _check(b: Book, chapter: int, verse: int | None) -> None:
    _check_chapter(b, chapter)
    if verse is not None:
        if verse < 1:
            raise ScriptureError("zero", text=f"{b.zh_short}{chapter}:{verse}")
        n = b.verses[chapter - 1]
        if verse > n:
            raise ScriptureError("verses", book=b, chapter=chapter, count=n)


def _validate(b: Book, raw: _Raw) -> RefRange:
    """Numbers → a RefRange that exists, or ScriptureError saying why not."""
    if raw.chapter is None:
        raise ScriptureError("unknown", text=b.zh_short)
    _check(b, raw.chapter, raw.verse)
    start = VerseRef(b.osis, raw.chapter, raw.verse)
    end_chapter = raw.end_chapter if raw.end_chapter is not None else raw.chapter
    end_verse = (
        raw.end_verse if raw.end_chapter is not None or raw.end_verse is not None else raw.verse
    )
    if raw.end_chapter is None and raw.end_verse is None:
        return RefRange(start, start)
    if end_chapter is None:
        raise ScriptureError("unknown", text=b.zh_short)
    _check(b, end_chapter, end_verse)
    if start.verse is None and end_verse is not None:
        start = VerseRef(b.osis, start.chapter, 1)
    if start.verse is not None and end_verse is None:
        end_verse = b.verses[end_chapter - 1]
    end = VerseRef(b.osis, end_chapter, end_verse)
    if (end.chapter, end.verse or 0) < (start.chapter, start.verse or 0):
        raise ScriptureError("backwards", refs=RefRange(start, end))
    return RefRange(start, end)


def _parse_at(
    s: str, pos: int, candidates: list[tuple[int, str]], strict: bool
) -> tuple[list[RefRange], int]:
    """Try each book name found at `pos` (longest first); the first that reads wins.

    A shorter name is tried only when the longer one did not give a valid reference
    (约一10 is not 1 John 10, which does not exist, but John 1:10)."""
    first_error: ScriptureError | None = None
    for i, (length, osis) in enumerate(candidates):
        b = _BY_OSIS[osis]
        start = pos + length
        spec = _Spec(s, pos, b, strict, short_name=length == 1)
        try:
            raws, end = spec.parse(start)
            if not raws:
                if first_error is None:
                    first_error = ScriptureError("no_chapter", text=s[pos:start])
                continue
            if i > 0 and s[end : end + 1] in tuple("0123456789:."):
                continue
            if strict:
                return [_validate(b, r) for r in raws], end
            found: list[RefRange] = []
            for r in raws:
                try:
                    found.append(_validate(b, r))
                except ScriptureError:
                    continue
            if found:
                return found, end
        except ScriptureError as err:
            if first_error is None:
                first_error = err
    if strict and first_error is not None:
        raise first_error
    return [], pos


def _candidates(s: str, pos: int, prose_match: re.Match[str] | None) -> list[tuple[int, str]]:
    zh = _names_at(s, pos)
    if zh:
        return zh
    m = prose_match if prose_match is not None else _EN_NAME_RE.match(s, pos)
    if m is None or m["en"] is None:
        return []
    osis = _en_lookup(m)
    return [(m.end() - pos, osis)] if osis else []


def parse_reference(text: str) -> list[RefRange]:
    """Strict: the whole of `text` must be references (commands: `/cite 弗1:10-12；约14:20, 23`)."""
    s = _translate(text)
    pos = _skip_separators(s, 0)
    if pos >= len(s):
        raise ScriptureError("empty")
    out: list[RefRange] = []
    while pos < len(s):
        candidates = _candidates(s, pos, None)
        if not candidates:
            raise ScriptureError("unknown", text=_fragment(text, pos))
        found, end = _parse_at(s, pos, candidates, strict=True)
        if not found:
            raise ScriptureError("no_chapter", text=text[pos : pos + candidates[0][0]].strip())
        out.extend(found)
        nxt = _skip_separators(s, end)
        if nxt == end and end < len(s) and not _candidates(s, end, None):
            raise ScriptureError("unknown", text=_fragment(text, end))
        pos = nxt
    return _unique(out)


def _skip_separators(s: str, p: int) -> int:
    return _end_of(_SEP_RE, s, p)


def _end_of(pattern: re.Pattern[str], s: str, p: int) -> int:
    m = pattern.match(s, p)
    return m.end() if m else p


def _fragment(text: str, pos: int) -> str:
    frag = re.split(r"[\s,;，；、]", text[pos:].strip(), maxsplit=1)[0]
    return frag[:20] + ("…" if len(frag) > 20 else "") if frag else text[pos : pos + 20]


def find_references(text: str) -> list[RefRange]:
    """Lenient: references in prose, in order of appearance; skips what cannot exist; never raises."""
    s = _translate(text)
    out: list[RefRange] = []
    pos = 0
    while True:
        m = _PROSE_RE.search(s, pos)
        if m is None:
            break
        start = m.start()
        if not _prose_name_ok(s, m):
            pos = start + 1
            continue
        candidates = _candidates(s, start, None if m["zh"] else m)
        found, end = _parse_at(s, start, candidates, strict=False) if candidates else ([], start)
        if found and m["en"] and not _prose_en_ok(s, m, found, end):
            found = []
        if found:
            out.extend(found)
            pos = max(end, start + 1)
        else:
            pos = start + 1
    return _unique(out)


def _prose_name_ok(s: str, m: re.Match[str]) -> bool:
    if m["zh"]:
        if len(m["zh"]) <= 2 and m.start() > 0 and s[m.start() - 1 : m.start() + 1] in _ZH_WORDS:
            return False
        if m.start() > 1 and s[m.start() - 2 : m.start() + 1] in _ZH_WORDS:
            return False
        return True
    return True


def _prose_en_ok(s: str, m: re.Match[str], found: list[RefRange], end: int) -> bool:
    name = _en_key(m["en"])
    if m["pre"] and m["pre"][0].isdigit():
        return True
    if name in _EN_COMMON:
        if not m["en"][0].isupper():
            return False
        return found[0].start.verse is not None and ":" in s[m.end() : end]
    return True


def _unique(refs: list[RefRange]) -> list[RefRange]:
    return list(dict.fromkeys(refs))


# ---- using references ---------------------------------------------------------------------


def expand(r: RefRange) -> list[str]:
    """Every verse OSIS id in the range; a chapter expands to all its verses."""
    b = _BY_OSIS[r.start.book]
    start_verse = r.start.verse or 1
    end_verse = r.end.verse if r.end.verse is not None else b.verses[r.end.chapter - 1]
    out: list[str] = []
    for chapter in range(r.start.chapter, r.end.chapter + 1):
        first = start_verse if chapter == r.start.chapter else 1
        last = end_verse if chapter == r.end.chapter else b.verses[chapter - 1]
        out.extend(f"{b.osis}.{chapter}.{v}" for v in range(first, last + 1))
    return out


def sort_key(osis_id: str) -> tuple[int, int, int]:
    """Canonical order for OSIS ids ("Ps.23" sorts before "Ps.23.1"); unknown books last."""
    parts = osis_id.split(".")
    b = _BY_OSIS.get(parts[0])
    nums = [int(p) if p.isdigit() else 0 for p in parts[1:3]]
    nums += [0] * (2 - len(nums))
    return (b.index if b else 99, nums[0], nums[1])


def normalise_refs(text: str) -> tuple[str, ...]:
    """Verse ids found in `text`, sorted canonically and unique (fills `Chunk.scripture_refs`).

    Verse ranges expand to their verses; a chapter-only reference gives the chapter id
    ("Ps.23"), a chapter range one id per chapter, keeping the list short."""
    ids: set[str] = set()
    for r in find_references(text):
        if r.start.verse is None:
            ids.update(f"{r.start.book}.{c}" for c in range(r.start.chapter, r.end.chapter + 1))
        else:
            ids.update(expand(r))
    return tuple(sorted(ids, key=sort_key))


def _render(r: RefRange, name: str, sep: str) -> str:
    s, e = r.start, r.end
    b = _BY_OSIS[s.book]

    def point(c: int, v: int | None) -> str:
        if v is None:
            return f"{c}章" if b.chapters == 1 and sep == "" else str(c)
        return f"{c}:{v}"

    text = f"{name}{sep}{point(s.chapter, s.verse)}"
    if e == s:
        return text
    if e.chapter == s.chapter and s.verse is not None and e.verse is not None:
        return f"{text}-{e.verse}"
    return f"{text}-{point(e.chapter, e.verse)}"


def render_zh(r: RefRange) -> str:
    """Chinese short form: "弗1:10-12", "太5:3-7:29", "诗23"."""
    return _render(r, _BY_OSIS[r.start.book].zh_short, "")


def render_en(r: RefRange) -> str:
    """English short form: "Eph 1:10-12", "1 Cor 15:45", "Ps 23"."""
    b = _BY_OSIS[r.start.book]
    if b.chapters == 1 and r.start.verse is None:
        return f"{b.en_short} 1"  # a whole one-chapter book reads as its verse 1 otherwise
    return _render(r, b.en_short, " ")
