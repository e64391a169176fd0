"""The /ask and /cite service.

`ask`: hybrid search → (model answer, its text so far streamed to `progress`) → citation
verification → an `Answer`. Without a model, or when the model fails, the answer is extractive:
retrieved passages verbatim with their citation labels, clearly labelled as such.

`cite`: for each requested range, the verse text (as stored: the bundled CUV is Traditional),
its footnotes, the ministry passages whose `scripture_refs` include it (one per source first,
then the rest), and the concepts the knowledge graph grounds in it: a `CiteResult`.

A request the scholar will not run comes back as a `Refusal`. Results are typed and carry their
language; `bot.presenters` words them for the chat.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from retrieval import scripture
from retrieval.answer import (
    Answer,
    EmptyModelAnswer,
    Mode,
    ModelFailed,
    RelevanceGate,
    build_prompt,
    excerpt,
    extractive_answer,
    model_answer,
    model_declined,
    not_addressed_answer,
    preview,
    quote_at,
    verify,
)
from retrieval.i18n import Lang
from retrieval.index import SourceNames, VerseRow
from retrieval.labels import CitationLabel
from retrieval.library import SHARED, Reading
from retrieval.ports import LLM, CitationStats, LLMError, OnDelta, VectorStore
from retrieval.requests import AskRequest, CiteRequest
from retrieval.search import SearchResult
from retrieval.text import in_script, reader_script, search_form, to_simplified
from retrieval.types import Chunk, Filter, Hit

log = logging.getLogger(__name__)

MAX_VERSES = 30
MAX_FOOTNOTES = 6
NON_MINISTRY = ("footnote", "bible")
FILTER_KEYS = frozenset({"source", "type", "era", "language", "topic_tags", "doc_id"})

# Receives the answer so far while the model writes it (the chat shows it as a growing message).
Preview = Callable[[str], Awaitable[None]]

RefusalReason = Literal["empty_question", "unknown_source", "unknown_era", "no_refs", "bad_ref"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the scholar will not run, and why."""

    reason: RefusalReason
    lang: Lang
    value: str = ""  # the filter value or the reference at fault
    known: tuple[str, ...] = ()  # what the corpus does hold (unknown_source / unknown_era)


@dataclass(frozen=True, slots=True)
class VerseLine:
    chapter: int
    verse: int
    text: str  # in the reader's script
    version: str


@dataclass(frozen=True, slots=True)
class CitedText:
    """A note or passage /cite shows: the text as shown and the label of where it is from."""

    text: str
    label: CitationLabel


@dataclass(frozen=True, slots=True, kw_only=True)
class CiteResult:
    """What /cite found for its ranges; nothing in it appears twice."""

    lang: Lang
    ranges: tuple[scripture.RefRange, ...]
    has_bible: bool
    verses: tuple[VerseLine, ...]  # at most MAX_VERSES, in the reader's script
    requested: int  # how many verses the ranges hold (more than MAX_VERSES: only the first shown)
    footnotes: tuple[CitedText, ...] = ()  # notes on these verses, without the verse again
    related_notes: tuple[CitedText, ...] = ()  # notes on other verses that mention them
    passages: tuple[CitedText, ...] = ()  # ministry passages citing them
    concepts: tuple[str, ...] = ()  # knowledge-graph concepts grounded in them


class UnknownFilter(ValueError):
    """An /ask filter names a source or era the corpus does not hold."""

    def __init__(self, key: str, value: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown {key}: {value}")
        self.key = key
        self.value = value
        self.known = known


class Searcher(Protocol):
    async def search(
        self,
        query: str,
        *,
        flt: Filter | None = None,
        limit: int = 6,
        reading: Reading | None = None,
    ) -> SearchResult: ...


class VerseIndex(Protocol):
    """What /cite and /sources need from `retrieval.index.Indexer`."""

    @property
    def store(self) -> VectorStore: ...

    async def verses(self, osis_ids: Sequence[str]) -> Sequence[VerseRow]: ...

    async def has_bible(self) -> bool: ...

    async def source_names(self, namespaces: Sequence[str] | None = None) -> SourceNames: ...

    def reading(self, shelf: str = "") -> Reading: ...


class ScriptureGraph(Protocol):
    def concepts_for_scripture(self, osis: str) -> list[str]: ...


# The graph as a reader sees it who must not see these documents (`KnowledgeGraph.seen_without`).
GraphViews = Callable[[frozenset[str]], Awaitable[ScriptureGraph]]


@dataclass(frozen=True, slots=True)
class _Range:
    ref: scripture.RefRange
    osis: str
    ids: tuple[str, ...]


def _verse_ref(osis: str) -> scripture.VerseRef:
    parts = osis.split(".")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts[1:]):
        raise ValueError(osis)
    return scripture.VerseRef(parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else None)


def one_per_source_first(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Keep rank order, but show one passage of every source before a second of any."""
    firsts: list[Chunk] = []
    rest: list[Chunk] = []
    seen: set[str] = set()
    for chunk in chunks:
        key = chunk.source or chunk.doc_id
        (rest if key in seen else firsts).append(chunk)
        seen.add(key)
    return firsts + rest


class Scholar:
    """`ask` and `cite` over the ministry corpus. `llm=None` → extractive answers."""

    def __init__(
        self,
        search: Searcher,
        indexer: VerseIndex,
        graph: ScriptureGraph | None,
        llm: LLM | None,
        *,
        passages: int = 6,
        gate: RelevanceGate | None = None,
        views: GraphViews | None = None,
    ) -> None:
        """`views`: the graph as each reader sees it (/cite's concepts of a reader whose
        `Reading` hides documents)."""
        self._search = search
        self._indexer = indexer
        self._graph = graph
        self._views = views
        self._llm = llm
        self._passages = max(1, passages)
        self._gate = gate or RelevanceGate()
        self._names: dict[tuple[str, ...], SourceNames] = {}  # by the namespaces read
        # Running totals since start-up (logged; the benchmark reads the same numbers).
        self.citation_stats = CitationStats()

    # ---- /ask ---------------------------------------------------------------------------

    async def ask(
        self, lang: Lang, request: AskRequest, progress: Preview | None = None
    ) -> Answer | Refusal:
        if not request.question.strip():
            return Refusal("empty_question", lang)
        try:
            request = await self.resolve_filters(request)
        except UnknownFilter as err:
            reason: RefusalReason = "unknown_source" if err.key == "source" else "unknown_era"
            return Refusal(reason, lang, err.value, err.known)
        return await self.answer(lang, request, progress)

    # ---- the corpus: /ask filters ---------------------------------------------------------

    def source_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        """Titles for autocomplete (as of the last look at the library a reader with `shelf`
        reads), best matches first."""
        key = search_form(typed).casefold().strip()
        titles = self._known(shelf).titles
        starts = [t for t in titles if search_form(t).casefold().startswith(key)]
        inside = [t for t in titles if key in search_form(t).casefold() and t not in starts]
        return (starts + inside)[:limit]

    def era_suggestions(self, typed: str, limit: int = 25, *, shelf: str = "") -> list[str]:
        key = typed.strip().casefold()
        return [e for e in self._known(shelf).eras if key in e.casefold()][:limit]

    def _known(self, shelf: str) -> SourceNames:
        namespaces = self._indexer.reading(shelf).namespaces
        return self._names.get(namespaces) or self._names.get((SHARED,), SourceNames((), ()))

    async def refresh_sources(self, shelf: str = "") -> SourceNames:
        """The titles and eras a reader with `shelf` reads, looked up now (and kept for
        autocomplete)."""
        namespaces = self._indexer.reading(shelf).namespaces
        names = self._names[namespaces] = await self._indexer.source_names(namespaces)
        return names

    async def resolve_filters(self, request: AskRequest) -> AskRequest:
        """A source filter names a title the asker's library holds — exactly, in the other
        script, or as the one title containing it; an era filter an era it holds. Raises
        UnknownFilter (naming what that library holds, never another shelf's)."""
        if not request.filters.get("source") and not request.filters.get("era"):
            return request
        names = await self.refresh_sources(request.shelf)
        titles = names.titles
        filters = dict(request.filters)
        wanted = filters.get("source", "")
        if wanted:
            key = search_form(wanted).casefold()
            exact = [t for t in titles if search_form(t).casefold() == key]
            partial = [t for t in titles if key in search_form(t).casefold()]
            match = exact or (partial if len(partial) == 1 else [])
            if not match:
                raise UnknownFilter("source", wanted, tuple(partial or titles))
            filters["source"] = match[0]
        era = filters.get("era", "")
        if era and era not in names.eras:
            raise UnknownFilter("era", era, names.eras)
        return dataclasses.replace(request, filters=filters)

    async def answer(
        self, lang: Lang, request: AskRequest, progress: Preview | None = None
    ) -> Answer:
        """Search, decide whether the corpus addresses the question, then answer from the
        passages: with the model when there is one, else (or when it fails) extractively."""
        question = request.question.strip()
        if not question:
            raise ValueError("empty question")
        result = await self._search.search(
            question,
            flt=self._filter(request.filters),
            limit=self._passages,
            reading=self._indexer.reading(request.shelf),
        )
        hits, paths = result.hits, result.graph_paths
        script = reader_script(request.script, question)
        mode: Mode = "extractive" if self._llm is None else "llm"
        # related reading only when it shares meaning with the question
        related = hits if self._gate.related(result.evidence) else []
        if not hits or not self._gate.addressed(result.evidence):
            return not_addressed_answer(
                question, related, lang, mode, graph_paths=paths, script=script
            )
        if self._llm is None:
            return extractive_answer(question, hits, lang, graph_paths=paths, script=script)
        prompt = build_prompt(
            question,
            hits,
            lang=lang,
            context_tokens=self._llm.context_tokens,
            max_passages=self._passages,
        )
        if not prompt.passages:  # a window too small for even one passage
            return extractive_answer(question, hits, lang, graph_paths=paths, script=script)
        try:
            response = await self._llm.complete(prompt.request, self._streamer(progress))
        except LLMError as err:
            if err.kind != "budget":  # a spent budget is a refusal, logged where it is refused
                log.warning("model failed (%s); answering extractively", err)
            return extractive_answer(
                question, hits, lang, graph_paths=paths, notice=ModelFailed(err.kind), script=script
            )
        verified = verify(response, prompt.passages, lang)
        self._tally(verified.stats)
        if model_declined(verified.text):
            return not_addressed_answer(
                question, related, lang, "llm", graph_paths=paths, script=script
            )
        if not verified.text.strip():
            return extractive_answer(
                question, hits, lang, graph_paths=paths, notice=EmptyModelAnswer(), script=script
            )
        return model_answer(question, lang, verified, prompt.passages, paths, script=script)

    def _streamer(self, progress: Preview | None) -> OnDelta | None:
        if progress is None:
            return None
        parts: list[str] = []
        broken = False

        async def on_delta(text: str) -> None:
            nonlocal broken
            parts.append(text)
            if broken:
                return
            try:
                await progress(preview("".join(parts)))
            except Exception:  # a failed edit must not lose the answer
                broken = True
                log.warning("progress callback failed; streaming stopped", exc_info=True)

        return on_delta

    def _filter(self, filters: dict[str, str]) -> Filter | None:
        wanted = {k: v for k, v in filters.items() if k in FILTER_KEYS and v}
        return Filter(equals=wanted) if wanted else None

    def _tally(self, stats: CitationStats) -> None:
        total = self.citation_stats
        total.shown += stats.shown
        total.removed += stats.removed
        for reason, n in stats.reasons.items():
            total.reasons[reason] = total.reasons.get(reason, 0) + n
        checked = total.shown + total.removed
        if stats.removed:
            log.info(
                "citation verifier: %d/%d removed so far (%.1f%%)",
                total.removed,
                checked,
                100.0 * total.removed / max(1, checked),
            )

    # ---- /cite --------------------------------------------------------------------------

    async def cite(self, lang: Lang, request: CiteRequest) -> CiteResult | Refusal:
        """The verse once (in the reader's script, the version named); the notes on that verse
        — the note text, not the verse again; notes on other verses that mention it; then the
        ministry passages that cite it. Nothing is shown twice."""
        if not request.refs:
            return Refusal("no_refs", lang)
        ranges: list[_Range] = []
        for start, end in request.refs:
            try:
                ref = scripture.RefRange(_verse_ref(start), _verse_ref(end))
                ranges.append(_Range(ref, ref.osis(), tuple(scripture.expand(ref))))
            except (ValueError, KeyError):
                return Refusal("bad_ref", lang, f"{start}-{end}")
        ids = tuple(dict.fromkeys(i for r in ranges for i in r.ids))
        has_bible = await self._indexer.has_bible()
        rows = list(await self._indexer.verses(ids[:MAX_VERSES])) if has_bible else []
        script = reader_script(request.script, request.text)
        verse_text = to_simplified(" ".join(r.text for r in rows))  # for matching
        reading = self._indexer.reading(request.shelf)
        own, related = await self._notes(ids, reading)
        focus = " ".join(scripture.render_zh(r.ref) for r in ranges)
        shown = {c.id for c in own + related}
        found = await self._passages_for(ids, verse_text or request.text, reading)
        passages = [c for c in found if c.id not in shown]
        passage_focus = " ".join([verse_text, focus])
        return CiteResult(
            lang=lang,
            ranges=tuple(r.ref for r in ranges),
            has_bible=has_bible,
            verses=tuple(
                VerseLine(r.chapter, r.verse, in_script(r.text, script), r.version) for r in rows
            ),
            requested=len(ids),
            footnotes=tuple(_cited(note_text(c), c) for c in own),
            related_notes=tuple(_cited(quote_at(note_text(c), focus), c) for c in related),
            passages=tuple(_cited(excerpt(c.text, passage_focus), c) for c in passages),
            concepts=tuple(await self._concepts(ranges, reading)),
        )

    async def _notes(
        self, ids: tuple[str, ...], reading: Reading
    ) -> tuple[list[Chunk], list[Chunk]]:
        """Footnotes mentioning the verses: those whose own verse is one of them, and the rest
        (of the library the reader reads)."""
        flt = Filter(
            equals={
                "scripture_refs": list(ids),
                "type": "footnote",
                "namespace": list(reading.namespaces),
            }
        )
        found = _unique(await self._indexer.store.scroll(flt, limit=MAX_FOOTNOTES * 4))
        found.sort(key=lambda c: (c.source, c.position))
        wanted = set(ids)
        own: list[Chunk] = []
        related: list[Chunk] = []
        for chunk in found:
            verse = CitationLabel.of(chunk).verse
            about = set(scripture.expand(verse)) if verse is not None else set()
            (own if about & wanted else related).append(chunk)
        return own[:MAX_FOOTNOTES], related[:MAX_FOOTNOTES]

    async def _passages_for(
        self, ids: tuple[str, ...], query: str, reading: Reading
    ) -> list[Chunk]:
        """Ministry chunks citing the verses (in the library the reader reads): ranked by
        search, completed by a scroll."""
        flt = Filter(equals={"scripture_refs": list(ids)}, not_equals={"type": list(NON_MINISTRY)})
        ranked: list[Hit] = []
        if query.strip():
            result = await self._search.search(
                query, flt=flt, limit=self._passages * 3, reading=reading
            )
            ranked = result.hits
        read = flt.and_(Filter(equals={"namespace": list(reading.namespaces)}))
        everyone = await self._indexer.store.scroll(read, limit=200)
        everyone.sort(key=lambda c: (c.source, c.position))
        chunks = _unique([h.chunk for h in ranked] + everyone)
        return one_per_source_first(chunks)[: self._passages]

    async def _concepts(self, ranges: Sequence[_Range], reading: Reading) -> list[str]:
        graph = self._graph
        if graph is not None and reading.hidden and self._views is not None:
            graph = await self._views(reading.hidden)
        if graph is None:
            return []
        labels: dict[str, None] = {}
        for r in ranges:
            for label in graph.concepts_for_scripture(r.osis):
                labels[label] = None
        return list(labels)[:12]


def note_text(chunk: Chunk) -> str:
    """A footnote chunk without its first line, the verse it annotates (shown once above)."""
    head, _, notes = chunk.text.partition("\n")
    heading = chunk.extra.get("verse")
    if notes.strip() and isinstance(heading, str) and head.startswith(heading):
        return notes.strip()
    return chunk.text


def _cited(text: str, chunk: Chunk) -> CitedText:
    return CitedText(text, CitationLabel.of(chunk))


def _unique(chunks: Sequence[Chunk]) -> list[Chunk]:
    seen: set[str] = set()
    out = []
    for c in chunks:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
