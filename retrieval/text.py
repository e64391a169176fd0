"""Text normalisation and tokenisation for search.

- `normalise`: full-width letters/digits/symbols → ASCII (NFKC), Chinese punctuation kept as
  the full-width marks readers expect (，：；！？（）～), zero-width characters dropped,
  whitespace collapsed (paragraph breaks survive as one blank line).
- `to_simplified`: OpenCC Traditional → Simplified (converter built once, cached).
- `search_form`: both; what `Chunk.search_text` holds and what queries are turned into.
  These three live in `retrieval.normal_form` (re-exported here), below both this module and
  `retrieval.synonyms`, whose terms the tokenizer loads.
- `Tokenizer`: a private `jieba.Tokenizer` with the domain dictionary (bundled user dictionary,
  every synonym-table term, and terms registered at runtime with `add_terms`, e.g. the graph's
  concept labels), lowercase English, stop words and punctuation dropped, OSIS verse ids
  (`Eph.1.10`) kept whole. Tokenizers expect `search_form` text.

Changing the dictionary changes how documents split into tokens: register terms before
indexing (the composition root does so at start-up), or re-index after adding many.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import marshal
import math
import os
import re
import sqlite3
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from retrieval.normal_form import DATA_DIR as DATA_DIR
from retrieval.normal_form import bible_in_script as bible_in_script
from retrieval.normal_form import in_script as in_script
from retrieval.normal_form import is_traditional as is_traditional
from retrieval.normal_form import normalise as normalise
from retrieval.normal_form import reader_script as reader_script
from retrieval.normal_form import search_form as search_form
from retrieval.normal_form import to_simplified as to_simplified
from retrieval.normal_form import to_traditional as to_traditional

if TYPE_CHECKING:
    from retrieval.word_index import WordIndex

log = logging.getLogger(__name__)

USERDICT = DATA_DIR / "userdict.txt"
STOPWORDS = DATA_DIR / "stopwords.txt"
# Texts this short have their tokens kept (`Tokenizer.tokenize`): questions, synonym terms.
RECENT_TEXT_CHARS = 200
RECENT_TEXTS = 4096

TokenizeFn = Callable[[str], list[str]]

# ---- tokenisation -------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# OSIS-like verse/chapter ids: Eph.1.10, 1Cor.12.27, Ps.23
_OSIS = re.compile(r"(?<![\w.])([1-3]?[A-Z][a-z]{1,5}\.\d{1,3}(?:\.\d{1,3})?)(?!\w|\.\w)")
_WORDLIKE = re.compile(r"[\w\u3400-\u9fff\uf900-\ufaff]")


_LATIN = re.compile(r"[A-Za-z]")


def is_latin(text: str) -> bool:
    """Written in Latin script: letters and no Chinese at all (`Ps 23:1` counts, `oikonomia
    和经纶` does not)."""
    return bool(_LATIN.search(text)) and not _CJK.search(text)


def mostly_chinese(text: str) -> bool:
    """More Chinese characters than Latin letters."""
    return len(_CJK.findall(text)) > len(_LATIN.findall(text))


def _load_lines(path: Path | None) -> list[str]:
    if path is None or not path.exists():
        return []
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    candidate = Path(base) / "baibao" / "jieba"
    try:
        candidate.mkdir(parents=True, exist_ok=True)
        if os.access(candidate, os.W_OK):
            return candidate
    except OSError:
        pass
    return Path(tempfile.gettempdir())


def _dictionary_term(term: str) -> str | None:
    """jieba can only keep a term whole when it is one block of CJK (no spaces)."""
    t = search_form(term).strip()
    if not t or any(c.isspace() for c in t) or not _CJK.search(t):
        return None
    return t


_BASE_LOCK = threading.Lock()
_BASE: dict[Path, tuple[dict[str, int], int]] = {}  # main dictionaries loaded in memory
_INDEX: dict[Path, WordIndex] = {}  # … and read from disk a word at a time
_IMPORT_LOCK = threading.Lock()


def import_jieba() -> ModuleType:
    """`jieba`, imported without `pkg_resources`. jieba asks setuptools' `pkg_resources` only
    for the path of its own bundled files and opens them by path when it is missing; importing
    `pkg_resources` (which scans every installed distribution) cost 0.5 s of the 1.7 s jieba
    takes to load, on every `baibao` command that tokenizes. Hidden for this import only: a
    module that imports `pkg_resources` later still gets it."""
    with _IMPORT_LOCK:
        loaded = sys.modules.get("jieba")
        if loaded is not None:
            return loaded
        hide = "pkg_resources" not in sys.modules
        if hide:
            sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import → ImportError
        try:
            import jieba
        finally:
            if hide:
                del sys.modules["pkg_resources"]
        module: ModuleType = jieba
        module.setLogLevel(logging.WARNING)
        return module


def _cached_dictionary(cache_dir: Path) -> tuple[dict[str, int], int] | None:
    """jieba's main dictionary from the cache file jieba writes (`jieba.cache`, the prefix
    dictionary and its total), or None when there is none or it does not read. The same file
    jieba's `initialize` reads, read whole first: jieba unmarshals it from the open file, a
    read call per object, and took 1.6 s of CPU for its half a million entries, this 0.4 s."""
    try:
        freq, total = marshal.loads((cache_dir / "jieba.cache").read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(freq, dict) or not isinstance(total, int):
        return None
    return freq, total


def _built_dictionary(cache_dir: Path) -> tuple[dict[str, int], int]:
    """jieba's main dictionary built from its word list, written to the cache for next time.
    A cache file `_cached_dictionary` could not read goes first: jieba would read a foreign
    one (a pair of other things) without a word and fail later."""
    with contextlib.suppress(OSError):  # none, or not ours to remove: jieba copes
        (cache_dir / "jieba.cache").unlink()
    loader = import_jieba().Tokenizer()
    loader.tmp_dir = str(cache_dir)
    loader.initialize()
    return loader.FREQ, loader.total


def _fresh_jieba(cache_dir: Path) -> Any:
    """A new jieba.Tokenizer with the main dictionary; the dictionary is loaded once per
    process (about a second) and copied into each instance (milliseconds)."""
    jieba = import_jieba()
    freq, total = _loaded_dictionary(cache_dir)
    tok = jieba.Tokenizer()
    tok.FREQ, tok.total, tok.initialized = dict(freq), total, True
    return tok


def _loaded_dictionary(cache_dir: Path) -> tuple[dict[str, int], int]:
    with _BASE_LOCK:
        if cache_dir not in _BASE:
            _BASE[cache_dir] = _cached_dictionary(cache_dir) or _built_dictionary(cache_dir)
        return _BASE[cache_dir]


def _disk_jieba(cache_dir: Path) -> Any:
    """A new jieba.Tokenizer reading the main dictionary from its `WordIndex` (built on first
    use); one loaded in memory when the index cannot be built or read."""
    from retrieval.word_index import DiskFrequencies, WordIndex

    with _BASE_LOCK:
        index = _INDEX.get(cache_dir)
    if index is None:
        try:
            index = WordIndex.open(cache_dir / "jieba.cache", lambda: _loaded_dictionary(cache_dir))
        except (OSError, sqlite3.Error):
            log.warning("jieba's word index in %s is unusable; loading the dictionary", cache_dir)
            return _fresh_jieba(cache_dir)
        with _BASE_LOCK:
            index = _INDEX.setdefault(cache_dir, index)
    tok = import_jieba().Tokenizer()
    tok.FREQ, tok.total, tok.initialized = DiskFrequencies(index), index.total, True
    return tok


def _main_count(cache_dir: Path | None) -> tuple[Callable[[str], int | None], int] | None:
    """How to look a word up in the main dictionary of `cache_dir` (any, for None), and its
    total: the loaded dictionary when there is one, else the word index; None when neither is
    open yet."""
    with _BASE_LOCK:
        loaded = _BASE.get(cache_dir) if cache_dir else next(iter(_BASE.values()), None)
        if loaded is not None:
            return loaded[0].get, loaded[1]
        index = _INDEX.get(cache_dir) if cache_dir else next(iter(_INDEX.values()), None)
    return (index.count, index.total) if index is not None else None


@dataclass(frozen=True, slots=True)
class TokenizerSpec:
    """A `Tokenizer`'s constructor arguments, its terms in the order they were added
    (`Tokenizer.spec`): picklable and hashable; `build` makes a tokenizer that cuts the same."""

    userdict: Path | None
    stopwords: Path | None
    terms: tuple[str, ...]
    synonyms: bool
    cache_dir: Path | None
    on_disk: bool

    def build(self) -> Tokenizer:
        return Tokenizer(
            userdict=self.userdict,
            stopwords=self.stopwords,
            terms=list(self.terms),
            synonyms=self.synonyms,
            cache_dir=self.cache_dir,
            on_disk=self.on_disk,
        )


class Tokenizer:
    """jieba with the domain dictionary; one instance per owner, initialised on first use.

    `terms`: extra dictionary terms; `synonyms=True` adds every term of the bundled synonym
    table. `on_disk`: read jieba's main dictionary a word at a time from its `WordIndex`
    rather than load it (0.4 s) — for a process that tokenizes a few lines; the cuts are the
    same. Calling the instance tokenizes.
    """

    def __init__(
        self,
        *,
        userdict: Path | None = USERDICT,
        stopwords: Path | None = STOPWORDS,
        terms: Iterable[str] = (),
        synonyms: bool = True,
        cache_dir: Path | None = None,
        on_disk: bool = False,
    ) -> None:
        self._userdict = userdict
        self._stopwords_path = stopwords
        self._on_disk = on_disk
        self._stop = frozenset(w.lower() for w in _load_lines(stopwords))
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._jieba: Any = None
        self._terms: set[str] = set()
        self._pending: list[str] = []
        self._with_synonyms = synonyms
        self._base_key: Path | None = None
        # the main dictionary's lookup, found once (the gloss asks it for every CC-CEDICT word)
        self._main: tuple[Callable[[str], int | None], int] | None = None
        # Short texts' tokens (a question is cut three or four times a search: the tracks,
        # the keyword vector, the evidence; synonyms' terms in every search naming them).
        self._recent: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._tagger: Any = None  # jieba.posseg over this dictionary (`tag`), made on first use
        self._given: list[str] = []  # the terms added (`add_terms`), in order: see `spec`
        self.add_terms(terms)

    @property
    def stopwords(self) -> frozenset[str]:
        return self._stop

    def spec(self) -> TokenizerSpec:
        """What makes this tokenizer, to make the same one in another process (the reading
        process cuts the keyword tokens ahead: `ingest.read_process`). Its terms are given in
        the order they were added: jieba suggests a word's frequency from the words before it."""
        return TokenizerSpec(
            self._userdict,
            self._stopwords_path,
            tuple(self._given),
            self._with_synonyms,
            self._cache_dir,
            self._on_disk,
        )

    def add_terms(self, terms: Iterable[str]) -> int:
        """Register dictionary terms (kept whole by the segmenter); returns how many were new."""
        new = 0
        # A set's order differs between processes (string hashing), and jieba suggests a new
        # word's frequency from the words added before it: a set is added in one fixed order.
        ordered = sorted(terms) if isinstance(terms, AbstractSet) else terms
        with self._lock:
            for term in ordered:
                t = _dictionary_term(term)
                if t is None or t in self._terms:
                    continue
                self._terms.add(t)
                self._given.append(t)
                new += 1
                if self._jieba is None:
                    self._pending.append(t)
                else:
                    self._jieba.add_word(t)
            if new:  # a new term may cut a text differently
                self._recent.clear()
        return new

    def _ensure(self) -> Any:
        if self._jieba is not None:
            return self._jieba
        synonym_terms: set[str] = set()
        if self._with_synonyms:
            from retrieval.synonyms import SynonymTable

            synonym_terms = SynonymTable.load().terms()
        with self._lock:
            if self._jieba is not None:
                return self._jieba
            self._base_key = self._cache_dir or _default_cache_dir()
            tok = (_disk_jieba if self._on_disk else _fresh_jieba)(self._base_key)
            for line in _load_lines(self._userdict):
                word, *rest = line.split()
                t = _dictionary_term(word)
                if t is None:
                    continue
                freq = rest[0] if rest and rest[0].isdigit() else None
                tok.add_word(t, freq)
                self._terms.add(t)
            # in a fixed order: jieba suggests a new word's frequency from the words added
            # before it, so set order made the dictionary differ between processes
            for term in sorted(synonym_terms):
                t = _dictionary_term(term)
                if t is not None and t not in self._terms:
                    self._terms.add(t)
                    tok.add_word(t)
            for t in self._pending:
                tok.add_word(t)
            self._pending.clear()
            self._jieba = tok
            return tok

    @property
    def loaded(self) -> bool:
        """Whether jieba's dictionary is loaded (by `warm`, or the first tokenization)."""
        return self._jieba is not None

    def warm(self) -> None:
        """Load the dictionary now (about a second; run it off the event loop at start-up)."""
        self._ensure()

    def __call__(self, s: str) -> list[str]:
        return self.tokenize(s)

    @property
    def jieba(self) -> Any:
        """The underlying `jieba.Tokenizer` with the domain dictionary (loaded on first use),
        e.g. for `jieba.posseg.POSTokenizer`."""
        return self._ensure()

    def tag(self, s: str) -> list[tuple[str, str]]:
        """`s` cut into (word, part-of-speech tag) pairs by jieba's tagger over the same
        dictionary (a domain word has the tag "x"); its HMM computed with numpy
        (`_pos_tagger_class`), the pairs jieba's own tagger gives."""
        tagger = self._tagger
        if tagger is None:
            tagger = self._tagger = _pos_tagger_class()(self.jieba)
        return [(pair.word, pair.flag) for pair in tagger.cut(s)]

    def general_frequency(self, word: str) -> float:
        """How common `word` is in general Chinese: its share of jieba's main dictionary (0 for
        a word it does not have); the domain dictionary does not count."""
        if self._main is None:
            self._ensure()
            self._main = _main_count(self._base_key)
            assert self._main is not None
        count, total = self._main
        return (count(word) or 0) / total if total else 0.0

    def knows(self, word: str) -> bool:
        """Whether `word` is a word of the dictionary (jieba's main one or the domain one),
        not one jieba's HMM made up from characters it could not place."""
        self._ensure()
        return word in self._terms or self.general_frequency(word) > 0

    def tokenize(self, s: str) -> list[str]:
        """Tokens of `s` (expected in `search_form`), in order, duplicates kept."""
        if not s:
            return []
        if len(s) > RECENT_TEXT_CHARS:
            return self._cut(s)
        with self._lock:
            known = self._recent.get(s)
            if known is not None:
                self._recent.move_to_end(s)
                return list(known)
        tokens = self._cut(s)
        with self._lock:
            self._recent[s] = tuple(tokens)
            if len(self._recent) > RECENT_TEXTS:
                self._recent.popitem(last=False)
        return tokens

    def _cut(self, s: str) -> list[str]:
        tok = self._ensure()
        out: list[str] = []
        for i, piece in enumerate(_OSIS.split(s)):
            if i % 2:
                out.append(piece)
                continue
            for raw in tok.cut(piece):
                w = raw.strip().lower()
                if not w or not _WORDLIKE.search(w) or w in self._stop:
                    continue
                w = w.strip("._-%#&+")
                if w and w not in self._stop:
                    out.append(w)
        return out


# ---- part of speech ---------------------------------------------------------------------

HMM_RUNS_KEPT = 1 << 15  # runs of unplaced characters whose words and tags are kept


@functools.cache
def _pos_tagger_class() -> type[Any]:
    """`jieba.posseg.POSTokenizer` with its HMM computed by `retrieval.pos_viterbi`: the same
    (word, tag) pairs, several times faster (jieba's Viterbi in pure Python was most of graph
    growth's CPU). Made on first use: importing `jieba.posseg` loads its tag dictionary.

    jieba runs its HMM in a private method, `__cut` (a run of characters its dictionary could
    not place → words and tags), which `POSTokenizer` calls as `self.__cut`; Python mangles
    that to `_POSTokenizer__cut`, and defining that name here is the only way in short of
    copying the whole tagger. What it returns is a pure function of the run (the HMM's tables
    never change), so the last HMM_RUNS_KEPT runs' words are kept: the same names and phrases
    recur through a document. Everything else (the dictionary's cut, its tags) is jieba's."""
    import_jieba()  # before its submodule: jieba without `pkg_resources`
    fresh = "jieba.posseg" not in sys.modules
    import jieba.posseg as posseg
    from jieba.posseg.viterbi import viterbi

    from retrieval.pos_viterbi import PosViterbi

    tables = (posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P)
    hmm = PosViterbi(*tables, fallback=lambda run: viterbi(run, *tables))

    @functools.lru_cache(maxsize=HMM_RUNS_KEPT)
    def words(run: str) -> tuple[tuple[str, str], ...]:
        """jieba's `POSTokenizer.__cut`: the route's B…E and S states are words."""
        _, route = hmm.route(run)
        out: list[tuple[str, str]] = []
        begin = after = 0
        for i, (position, tag) in enumerate(route):
            if position == "B":
                begin = i
            elif position == "E":
                out.append((run[begin : i + 1], tag))
                after = i + 1
            elif position == "S":
                out.append((run[i], tag))
                after = i + 1
        if after < len(run):
            out.append((run[after:], route[after][1]))
        return tuple(out)

    # The tags of the main dictionary's words, by dictionary: jieba parses its 350,000 lines
    # for each tagger (0.3 s), and for its own default tagger as `jieba.posseg` is imported.
    # That one's table is taken when the import was this one's, so untouched yet (its tagger
    # merges user words into it only as it cuts); else the first tagger's own parse is.
    main_tags: dict[str | None, dict[str, str]] = {}
    if fresh:
        main_tags[posseg.dt.tokenizer.dictionary] = dict(posseg.dt.word_tag_tab)

    class Tagger(posseg.POSTokenizer):  # type: ignore[misc]  # jieba has no type hints
        word_tag_tab: dict[str, str]

        def load_word_tag(self, f: Any) -> None:
            tags = main_tags.get(self.tokenizer.dictionary)
            if tags is None:
                super().load_word_tag(f)
                main_tags[self.tokenizer.dictionary] = dict(self.word_tag_tab)
            else:
                f.close()
                self.word_tag_tab = dict(tags)

        def _POSTokenizer__cut(self, sentence: str) -> Iterator[Any]:  # jieba's private name
            return (posseg.pair(word, tag) for word, tag in words(sentence))

    return Tagger


_default: Tokenizer | None = None
_default_lock = threading.Lock()


def default_tokenizer() -> Tokenizer:
    """The process-wide tokenizer (bundled dictionary + synonyms + `add_terms`)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Tokenizer()
        return _default


def tokenize(s: str) -> list[str]:
    return default_tokenizer().tokenize(s)


def add_terms(terms: Iterable[str]) -> int:
    """Register domain terms (e.g. the graph's concept labels) with the default tokenizer."""
    return default_tokenizer().add_terms(terms)


def made_up(token: str) -> bool:
    """A two-character Chinese token no dictionary has (the default tokenizer's): jieba glued
    two characters it could not place (主说, 里排)."""
    return (
        len(token) == 2
        and all("\u3400" <= c <= "\u9fff" for c in token)
        and not default_tokenizer().knows(token)
    )


def rarity(token: str) -> float:
    """How distinctive a token is in general Chinese, 0 (very common) … 1 (rare or unknown):
    jieba's dictionary frequency as an IDF, scaled by the rarest possible. Domain terms and
    English words are not in that dictionary and count as rare; stop words never reach here."""
    main = _main_count(None)
    if main is None:
        default_tokenizer().warm()
        main = _main_count(None)
        assert main is not None
    lookup, total = main
    top = math.log(total)
    count = lookup(token) or 0
    return 1.0 if count <= 0 else max(0.0, min(1.0, math.log(total / count) / top))
