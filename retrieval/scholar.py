"""The /ask and /cite service.

`ask`: hybrid search → (model answer, its text so far streamed to `progress`) → citation
verification → an `Answer`. Without a model, or when the model fails, the answer is extractive:
retrieved passages verbatim with their citation labels, clearly labelled as such.

`cite`: for each requested range, the verse text (as stored: the bundled CUV is Traditional),
its footnotes, the ministry passages whose `scripture_refs` include it (one per source first,
then the rest), and the concepts the knowledge graph grounds in it: a `CiteResult`. A passage
of more than PAGE_VERSES verses (诗119: 176) comes a page at a time (`CiteRequest.page`): each
page its verses and their notes; the first also the notes, passages and concepts of the whole.

A request the scholar will not run raises `kernel.refusal.Refused` (its reason, the value at
fault, and what the corpus does hold), the one convention of every room. Results are typed and carry their
language; `bot.presenters` words them for the chat.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from kernel.i18n import Lang
from kernel.refusal import Refused
from retrieval import scripture
from retrieval.answer import (
    Answer,
    Answerability,
    AnswerBearing,
    Asked,
    EmptyModelAnswer,
    Evidence,
    FactReader,
    Mode,
    ModelFailed,
    RelevanceGate,
    asked_for,
    build_prompt,
    excerpt,
    extractive_answer,
    model_answer,
    model_declined,
    not_addressed_answer,
    preview,
    quote_at,
    said_in,
    verify,
)
from retrieval.index import SourceNames, VerseRow
from retrieval.labels import CitationLabel
from retrieval.library import SHARED, Reading
from retrieval.ports import LLM, CitationStats, LLMError, OnDelta, VectorStore
from retrieval.relevance import without_the_speaker
from retrieval.requests import AskRequest, CiteRequest, Script
from retrieval.search import SearchResult
from retrieval.text import bible_in_script, reader_script, search_form, to_simplified
from retrieval.types import Chunk, Filter, Hit

log = logging.getLogger(__name__)

PAGE_VERSES = 30
MAX_FOOTNOTES = 6
NON_MINISTRY = ("footnote", "bible")
FILTER_KEYS = frozenset({"source", "type", "era", "language", "topic_tags", "doc_id"})

# Receives the answer so far while the model writes it (the chat shows it as a growing message).
Preview = Callable[[str], Awaitable[None]]

# Why the scholar refuses (`Refused.reason`); the fields: `value`, the filter value or the
# reference or page at fault; `known`, what the corpus does hold (unknown_source /
# unknown_era) or how many pages there are (no_page); unknown_match: each filter names what
# the library holds, but no passage is all of them (a message's title with 类型:outline).
RefusalReason = Literal[
    "empty_question",
    "unknown_source",
    "unknown_era",
    "unknown_match",
    "no_refs",
    "bad_ref",
    "no_page",
]


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
    verses: tuple[VerseLine, ...]  # this page's (at most PAGE_VERSES), in the reader's script
    requested: int  # how many verses the ranges hold
    page: int = 1  # which page of them this is (1-based) …
    pages: int = 1  # … of how many (PAGE_VERSES a page)
    script: Script = "simplified"  # what the verses are shown in (the next page keeps it)
    footnotes: tuple[CitedText, ...] = ()  # notes on these verses, without the verse again
    related_notes: tuple[CitedText, ...] = ()  # notes on other verses that mention them
    passages: tuple[CitedText, ...] = ()  # ministry passages citing them
    concepts: tuple[str, ...] = ()  # knowledge-graph concepts grounded in them


class UnknownFilter(ValueError):
    """An /ask filter names a source or era the corpus does not hold (`key` source, era), or
    the filters together name no passage (`key` match)."""

    def __init__(self, key: str, value: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown {key}: {value}")
        self.key = key
        self.value = value
        self.known = known


_FILTER_REFUSALS: dict[str, RefusalReason] = {
    "source": "unknown_source",
    "era": "unknown_era",
    "match": "unknown_match",
}


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


def verse_first(hits: Sequence[Hit], verse_id: str) -> list[Hit]:
    """`hits` with the verse `verse_id` first (the Bible text that answers), else as ranked."""
    first = [h for h in hits if h.chunk.id == verse_id]
    return first + [h for h in hits if h.chunk.id != verse_id]


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
        facts: FactReader | None = None,
        bearing: AnswerBearing | None = None,
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
        # Does a passage state the date, number, place or person a question asks for? Without
        # a reader every question counts as answerable when the gate says it is addressed.
        self._answerability = Answerability(facts) if facts is not None else None
        # The sentences closest in meaning to a question, read for the fact it asks when the
        # passages share too few of its words (a paraphrase, another language).
        self._bearing = bearing
        self._names: dict[tuple[str, ...], SourceNames] = {}  # by the namespaces read
        # Running totals since start-up (logged; the benchmark reads the same numbers).
        self.citation_stats = CitationStats()

    # ---- /ask ---------------------------------------------------------------------------

    async def ask(self, lang: Lang, request: AskRequest, progress: Preview | None = None) -> Answer:
        """The answer to `request`; `Refused` for an empty question or a filter naming what
        the corpus does not hold."""
        if not request.question.strip():
            raise Refused("empty_question")
        try:
            request = await self.resolve_filters(request)
        except UnknownFilter as err:
            reason = _FILTER_REFUSALS[err.key]
            raise Refused(reason, value=err.value, known=err.known) from None
        return await self.answer(lang, request, progress)

    async def _check_match(self, request: AskRequest) -> None:
        """Filters that each name what the library holds may still hold nothing together
        (书:神的经纶与神人的调和, a message, with 类型:outline): UnknownFilter("match") then,
        rather than an answer that says nothing near the question is in the corpus."""
        wanted = {k: v for k, v in request.filters.items() if k in FILTER_KEYS and v}
        if len(wanted) < 2:
            return
        reading = self._indexer.reading(request.shelf)
        flt = Filter(equals={**wanted, "namespace": list(reading.namespaces)})
        if not await self._indexer.store.scroll(flt, limit=1):
            raise UnknownFilter("match", " · ".join(wanted.values()), ())

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
        script, or as the one title containing it; an era filter an era it holds; and some
        passage is all the filters at once. Raises UnknownFilter (naming what that library
        holds, never another shelf's; key "match" when only the filters together hold none)."""
        if not request.filters.get("source") and not request.filters.get("era"):
            await self._check_match(request)
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
        request = dataclasses.replace(request, filters=filters)
        await self._check_match(request)
        return request

    async def answer(
        self, lang: Lang, request: AskRequest, progress: Preview | None = None
    ) -> Answer:
        """Search, decide whether the corpus addresses the question, then answer from the
        passages: with the model when there is one, else (or when it fails) extractively."""
        question = request.question.strip()
        if not question:
            raise ValueError("empty question")
        result = await self._search.search(
            without_the_speaker(question),  # 职事对X怎么说: X, not 新约职事
            flt=self._filter(request.filters),
            limit=self._passages,
            reading=self._indexer.reading(request.shelf),
        )
        hits, paths = result.hits, result.graph_paths
        script = reader_script(request.script, question)
        mode: Mode = "extractive" if self._llm is None else "llm"
        asked = asked_for(question)
        by_verse = self._gate.by_verse(
            result.evidence,
            bible_only=request.filters.get("type") == "bible",
            # who a person is the verses tell as well as any exposition (兄弟推基古)
            exposition=asked.kind in ("definition", "relation") and asked.detail != "person",
        )
        # related reading only when it shares meaning with the question
        related = hits if by_verse or self._gate.related(result.evidence) else []
        decided = await self._decide(question, asked, result.evidence, hits, by_verse)
        if decided == "declined":
            return not_addressed_answer(
                question, related, lang, mode, graph_paths=paths, script=script
            )
        if decided == "unstated":
            # about the subject, but no passage says the year, number, place or person asked
            return not_addressed_answer(
                question, hits, lang, mode, graph_paths=paths, script=script, unstated=asked
            )
        if by_verse:  # the verse that says it first, quoted as the verse
            hits = verse_first(hits, result.evidence.verse_best)
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

    async def _decide(
        self, question: str, asked: Asked, evidence: Evidence, hits: Sequence[Hit], by_verse: bool
    ) -> Literal["answer", "unstated", "declined"]:
        """Answer, decline as not stated (about the subject, the fact asked not said), or
        decline as not addressed. A fact question the gate finds too few of its words for is
        still answered when a sentence close in meaning states the fact (a paraphrase, a
        question in another language). One the gate addresses is judged on its words (the
        subject share of `Answerability`): they are in the passages, and say more precisely
        what the fact must be said of than nearness in meaning does — except in a sentence
        that points back (那日就是复活的日子), which names its subject by a pronoun only."""
        if not hits:
            return "declined"
        if by_verse or self._gate.addressed(evidence):
            if self._states(asked, evidence, hits):
                return "answer"
            # said through a pronoun (那日就是…) after a sentence near the question's meaning
            pointed = await self._bears(question, asked, evidence, hits, pointed_only=True)
            return "answer" if pointed else "unstated"
        if asked.fact and self._gate.near(evidence):
            # near the question, but in other words: does a sentence say what it asks?
            if await self._bears(question, asked, evidence, hits):
                return "answer"
        return "declined"

    async def _bears(
        self,
        question: str,
        asked: Asked,
        evidence: Evidence,
        hits: Sequence[Hit],
        *,
        pointed_only: bool = False,
    ) -> bool:
        """Whether a sentence close in meaning to the question states the fact it asks (never
        without a fact reader and a scorer the embedder's scale is known for). Only the
        sentences that state it are scored."""
        if self._answerability is None or self._bearing is None or not asked.fact:
            return False
        texts = [h.chunk.text for h in hits]
        stating = self._answerability.stating(
            asked, said_in(texts), evidence.terms, texts, pointed_only=pointed_only
        )
        return bool(await self._bearing.close(question, stating))

    def _states(self, asked: Asked, evidence: Evidence, hits: Sequence[Hit]) -> bool:
        """Whether some passage states the kind of fact `asked` wants (always, for a question
        that asks for none, or without a fact reader)."""
        if self._answerability is None or not asked.fact:
            return True
        texts = [h.chunk.text for h in hits]
        concepts = [e.split(":", 1)[1] for e in evidence.entities if not e.startswith("person:")]
        return self._answerability.answerable(asked, evidence.terms, texts, concepts)

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

    async def cite(self, lang: Lang, request: CiteRequest) -> CiteResult:
        """The verse once (in the reader's script, the version named); the notes on that verse
        — the note text, not the verse again; notes on other verses that mention it; then the
        ministry passages that cite it. Nothing is shown twice. `Refused` without a reference,
        or for one the Bible does not have."""
        if not request.refs:
            raise Refused("no_refs")
        ranges: list[_Range] = []
        for start, end in request.refs:
            try:
                ref = scripture.RefRange(_verse_ref(start), _verse_ref(end))
                ranges.append(_Range(ref, ref.osis(), tuple(scripture.expand(ref))))
            except (ValueError, KeyError):
                raise Refused("bad_ref", value=f"{start}-{end}") from None
        ids = tuple(dict.fromkeys(i for r in ranges for i in r.ids))
        pages = max(1, -(-len(ids) // PAGE_VERSES))
        if not 1 <= request.page <= pages:
            raise Refused("no_page", value=str(request.page), known=(str(pages),))
        on_page = ids[(request.page - 1) * PAGE_VERSES : request.page * PAGE_VERSES]
        has_bible = await self._indexer.has_bible()
        rows = list(await self._indexer.verses(on_page)) if has_bible else []
        script = reader_script(request.script, request.text)
        reading = self._indexer.reading(request.shelf)
        own, related = await self._notes(on_page if pages > 1 else ids, reading)
        result = CiteResult(
            lang=lang,
            ranges=tuple(r.ref for r in ranges),
            has_bible=has_bible,
            verses=tuple(
                VerseLine(r.chapter, r.verse, bible_in_script(r.text, script), r.version)
                for r in rows
            ),
            requested=len(ids),
            page=request.page,
            pages=pages,
            script=script,
            footnotes=tuple(_cited(note_text(c), c) for c in own),
        )
        if request.page > 1:  # the whole passage's notes, passages and concepts: on page 1
            return result
        verse_text = to_simplified(" ".join(r.text for r in rows))  # for matching
        focus = " ".join(scripture.render_zh(r.ref) for r in ranges)
        shown = {c.id for c in own + related}
        found = await self._passages_for(ids, verse_text or request.text, reading)
        passages = [c for c in found if c.id not in shown]
        passage_focus = " ".join([verse_text, focus])
        return dataclasses.replace(
            result,
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
