"""Citation verification: every source the model cites must be a passage it was given, and
every quotation attributed to a source must be in that source.

The answer is read claim by claim (a claim is a sentence, with the citation markers that close
it). Each claim goes through four small steps, none of which changes its inputs:

1. `read_markers` — its `[n]` and 【label】 markers, each with the passages it names (none when
   it names something the model was not given);
2. `check_native` — Claude's native citations: the document exists and the cited text is in it;
3. `check_quotations` — every 「quotation」 in the claim is in a passage the claim cites, else
   none of its citations holds;
4. `rewrite` — valid markers become 【label】 (in the reply's language), invalid ones vanish,
   and a claim left with nothing valid is marked 〔未经证实〕 / [unsupported] (`UNSUPPORTED`).

The mark is part of the verified answer, not a message about it: `rewrite` alone knows where
it goes (in place of the claim's first invalid marker, else before the closing stop, after any
labels), and readers of the verified text rely on it (`model_declined` skips it), as they rely
on the 【label】s written in the reader's language next to it.

`verify` runs them over the whole answer and sums what was shown and removed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kernel.i18n import Lang
from retrieval.answer.prompt import Passage
from retrieval.answer.quotes import quote_found, split_sentences, verify_form
from retrieval.labels import label_key
from retrieval.ports import CitationStats, LLMResponse, ModelCitation

log = logging.getLogger(__name__)

# The mark on a claim none of whose citations holds, in the answer's language.
UNSUPPORTED: Mapping[Lang, str] = {"zh": "〔未经证实〕", "en": "[unsupported]"}

MIN_QUOTE_CHARS = 6  # shorter quoted strings are terms, not quotations
SECTION_TITLES = frozenset(
    {"职事明确教导", "推论", "whattheministryexplicitlyteaches", "inference", "无", "none"}
)
_NUMBERS = r"\d{1,3}(?:\s*[,，、]\s*\d{1,3})*"
_MARKER = re.compile(rf"\[({_NUMBERS})\]|【([^【】\n]{{1,160}})】")
_LEADING_MARKERS = re.compile(rf"^(?:[ \t]*(?:\[{_NUMBERS}\]|【[^【】\n]{{1,160}}】))+")
_QUOTE = re.compile(r"「([^「」\n]{1,400})」|“([^“”\n]{1,400})”|\"([^\"\n]{1,400})\"")
_TERMINAL_TAIL = re.compile(r"[。！？!?；;.…]+$")
_MARK_AFTER_STOP = re.compile(  # labels and `UNSUPPORTED` marks after a stop
    r"([。！？!?；;.]+)[ \t]*((?:【[^【】]+】|〔未经证实〕|\[unsupported\])+)"
)
_DUPLICATE_LABELS = re.compile(r"(【[^【】]+】)(?:\s*\1)+")

UNKNOWN_SOURCE = "unknown_source"
MISQUOTED = "misquoted"


@dataclass(frozen=True, slots=True)
class Use:
    """One verified citation: which passage, and the text that shows where in it."""

    passage: Passage
    spot: str


@dataclass(frozen=True, slots=True)
class Verified:
    text: str
    uses: tuple[Use, ...] = ()
    stats: CitationStats = field(default_factory=CitationStats)
    # Passages the model cited whose quotation was not in them (shown as unverified).
    misquoted: tuple[Passage, ...] = ()

    def cited_passages(self) -> list[Passage]:
        seen: dict[int, Passage] = {}
        for use in self.uses:
            seen.setdefault(use.passage.index, use.passage)
        return list(seen.values())


# ---- resolving what a marker names ----------------------------------------------------------


def resolve_numbers(numbers: str, passages: Sequence[Passage]) -> list[Passage]:
    by_index = {p.index: p for p in passages}
    found = []
    for raw in re.split(r"[,，、\s]+", numbers):
        if raw.isdigit() and int(raw) in by_index:
            found.append(by_index[int(raw)])
        else:
            return []  # one bad number spoils the marker: it names something not given
    return found


def resolve_label(label: str, passages: Sequence[Passage]) -> list[Passage]:
    """Passages a 【…】 label names: its number, its label (either language, any punctuation),
    or its title + place written some other way (`神的经纶，第三章…`)."""
    inner = label.strip()
    if re.fullmatch(_NUMBERS, inner):
        return resolve_numbers(inner, passages)
    key = label_key(inner)
    if not key:
        return []
    exact = [p for p in passages if key in p.label.keys()]
    if exact:
        return exact
    parts = [
        label_key(x)
        for x in re.split(r"[，,、;；:：]|\s+[-—–]\s+", inner.replace("《", "").replace("》", ""))
    ]
    parts = [x for x in parts if x]
    if len(parts) < 2:
        return []
    name, place = parts[0], "".join(parts[1:])
    return [
        p
        for p in passages
        if name in p.label.names()
        and (place in p.label.places() or place == label_key(p.chunk.chapter))
    ]


# ---- the steps ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Marker:
    start: int
    end: int
    named: tuple[Passage, ...]  # empty: it names nothing the model was given


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one claim keeps: the markers as resolved, the native citations that hold, where in
    each passage the claim rests (passage index → text), and why citations were removed."""

    markers: tuple[Marker, ...]
    native: tuple[Passage, ...]
    spots: Mapping[int, str]
    removed: tuple[str, ...]
    misquoted: tuple[Passage, ...] = ()

    @property
    def supported(self) -> tuple[Passage, ...]:
        named = [p for m in self.markers for p in m.named]
        return tuple(dict.fromkeys([*named, *self.native]))


def read_markers(sentence: str, passages: Sequence[Passage]) -> tuple[Marker, ...]:
    out = []
    for m in _MARKER.finditer(sentence):
        named = (
            resolve_numbers(m.group(1), passages)
            if m.group(1) is not None
            else resolve_label(m.group(2), passages)
        )
        out.append(Marker(m.start(), m.end(), tuple(named)))
    return tuple(out)


def check_native(
    native: Sequence[ModelCitation], passages: Sequence[Passage]
) -> tuple[tuple[Passage, ...], dict[int, str], tuple[str, ...]]:
    """Native citations that hold, where they point, and a reason per one that does not."""
    by_index = {p.index: p for p in passages}
    kept: list[Passage] = []
    spots: dict[int, str] = {}
    removed: list[str] = []
    for c in native:
        passage = by_index.get(c.document_index)
        if passage is None:
            removed.append(UNKNOWN_SOURCE)
        elif c.cited_text and not quote_found(c.cited_text, passage.chunk.text):
            removed.append(MISQUOTED)
        else:
            kept.append(passage)
            if c.cited_text:
                spots.setdefault(passage.index, c.cited_text)
    return tuple(kept), spots, tuple(removed)


def quotations(sentence: str) -> list[str]:
    """「…」 / “…” / "…" spans long enough to be quotations (not terms or section titles)."""
    found = []
    for m in _QUOTE.finditer(sentence):
        quote = next(g for g in m.groups() if g is not None)
        form = verify_form(quote)
        if len(form) >= MIN_QUOTE_CHARS and form not in SECTION_TITLES:
            found.append(quote)
    return found


def check_quotations(
    sentence: str, cited: Sequence[Passage]
) -> tuple[bool, dict[int, str], tuple[Passage, ...]]:
    """Every quotation must be in one of the cited passages. Returns whether they all are,
    where each was found, and the passages a failed quotation was attributed to."""
    spots: dict[int, str] = {}
    for quote in quotations(sentence):
        holders = [p for p in cited if quote_found(quote, p.chunk.text)]
        if not holders:
            return False, {}, tuple(cited)
        for p in holders:
            spots.setdefault(p.index, quote)
    return True, spots, ()


def judge(sentence: str, passages: Sequence[Passage], native: Sequence[ModelCitation]) -> Verdict:
    """Steps 1–3 for one claim."""
    markers = read_markers(sentence, passages)
    native_kept, native_spots, removed = check_native(native, passages)
    removed += tuple(UNKNOWN_SOURCE for m in markers if not m.named)
    verdict = Verdict(markers, native_kept, native_spots, removed)
    cited = verdict.supported
    ok, quote_spots, misquoted = check_quotations(sentence, cited)
    if not ok:  # the quotation is in none of its sources: none of them holds
        return Verdict(
            tuple(Marker(m.start, m.end, ()) for m in markers),
            (),
            {},
            removed + tuple(MISQUOTED for _ in cited),
            misquoted,
        )
    return Verdict(markers, native_kept, {**native_spots, **quote_spots}, removed)


def _labels(passages: Sequence[Passage], lang: Lang) -> str:
    return "".join(f"【{p.title(lang)}】" for p in dict.fromkeys(passages))


def rewrite(sentence: str, verdict: Verdict, lang: Lang) -> str:
    """Step 4: the claim as shown."""
    unsupported = UNSUPPORTED[lang] if verdict.removed and not verdict.supported else ""
    pieces: list[str] = []
    cursor = 0
    for m in verdict.markers:
        pieces.append(sentence[cursor : m.start])
        if m.named:
            pieces.append(_labels(m.named, lang))
        elif unsupported:
            pieces.append(unsupported)
            unsupported = ""
        cursor = m.end
    pieces.append(sentence[cursor:])
    text = "".join(pieces)
    stripped = text.rstrip()
    tail = text[len(stripped) :]
    mark = _labels(verdict.native, lang) + unsupported
    if mark:
        # Chinese style: the source goes before the closing full stop.
        terminal = _TERMINAL_TAIL.search(stripped)
        at = terminal.start() if terminal else len(stripped)
        stripped = stripped[:at] + mark + stripped[at:]
    stripped = _MARK_AFTER_STOP.sub(r"\2\1", stripped)
    return _DUPLICATE_LABELS.sub(r"\1", stripped) + tail


def attach_leading_markers(sentences: Sequence[str]) -> list[str]:
    """Citation markers that open a sentence belong to the sentence they close."""
    out: list[str] = []
    for sentence in sentences:
        m = _LEADING_MARKERS.match(sentence)
        if out and m and not out[-1].endswith("\n"):
            out[-1] += m.group(0)
            sentence = sentence[m.end() :]
            if not sentence:
                continue
        out.append(sentence)
    return out


def claims(response: LLMResponse) -> list[tuple[str, tuple[ModelCitation, ...]]]:
    """The answer as claims; a segment's native citations go with its last sentence."""
    out: list[tuple[str, tuple[ModelCitation, ...]]] = []
    for segment in response.segments:
        sentences = attach_leading_markers(split_sentences(segment.text)) or [""]
        for i, sentence in enumerate(sentences):
            out.append((sentence, segment.citations if i == len(sentences) - 1 else ()))
    return out


def verify(response: LLMResponse, passages: Sequence[Passage], lang: Lang = "zh") -> Verified:
    """Check every citation and attributed quotation of `response` against `passages`."""
    shown: list[Use] = []
    removed: list[str] = []
    misquoted: list[Passage] = []
    out: list[str] = []
    for sentence, native in claims(response):
        if not _MARKER.search(sentence) and not native:
            out.append(sentence)
            continue
        verdict = judge(sentence, passages, native)
        removed.extend(verdict.removed)
        misquoted.extend(verdict.misquoted)
        shown.extend(Use(p, verdict.spots.get(p.index, sentence)) for p in verdict.supported)
        out.append(rewrite(sentence, verdict, lang))
    text = re.sub(r"[ \t]+\n", "\n", "".join(out)).strip()
    reasons: dict[str, int] = {}
    for reason in removed:
        reasons[reason] = reasons.get(reason, 0) + 1
    stats = CitationStats(len(shown), len(removed), reasons)
    if removed:
        log.info("citations: %d shown, %d removed %s", stats.shown, stats.removed, reasons)
    return Verified(text, tuple(shown), stats, tuple(dict.fromkeys(misquoted)))
