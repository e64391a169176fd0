"""The /ask and /cite service.

`ask`: hybrid search → (model answer, streamed to `progress`) → citation verification → Reply.
Without a model, or when the model fails, the reply is extractive: retrieved passages verbatim
with their citation labels, clearly labelled as such.

`cite`: for each requested range, the verse text (as stored: the bundled CUV is Traditional),
its footnotes, the ministry passages whose `scripture_refs` include it (one per source first,
then the rest), and the concepts the knowledge graph grounds in it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.actor import Actor
from bot.reply import Attachment, Block, Progress, Reply
from retrieval import scripture
from retrieval.answer import (
    Answer,
    Mode,
    RelevanceGate,
    answer_reply,
    build_prompt,
    excerpt,
    extractive_answer,
    failure_notice,
    model_answer,
    model_declined,
    not_addressed_answer,
    preview,
    quote_at,
    verify,
)
from retrieval.answer.replies import T as REPLY_T
from retrieval.i18n import Catalog, Lang
from retrieval.labels import CitationLabel
from retrieval.ports import LLM, CitationStats, LLMError, OnDelta, VectorStore
from retrieval.requests import AskRequest, CiteRequest, Script
from retrieval.search import SearchResult
from retrieval.text import in_script, reader_script, search_form, to_simplified
from retrieval.types import CORPUS_NAMESPACE, Chunk, Filter, GraphPath, Hit

log = logging.getLogger(__name__)

T = Catalog(
    {
        "empty_question": ("请在 /ask 后面写下问题。", "Please write a question after /ask."),
        "no_refs": ("请给出经文出处，例如 /cite 弗1:10", "Give a reference, e.g. /cite Eph 1:10"),
        "bad_ref": ("无法识别的经文出处：{ref}", "Unrecognised reference: {ref}"),
        "no_bible": (
            "尚未导入圣经经文，无法显示经文本文（可用 baibao ingest 导入圣经）。",
            "No Bible text has been ingested, so the verse text cannot be shown "
            "(ingest one with `baibao ingest`).",
        ),
        "verse_missing": (
            "已导入的圣经中没有这处经文的本文（可能只导入了部分书卷）。",
            "The ingested Bible does not include this passage (perhaps only some books "
            "were ingested).",
        ),
        "verses_truncated": (
            "……（共 {n} 节，只显示前 {shown} 节）",
            "… ({n} verses; showing the first {shown})",
        ),
        "unknown_source": (
            "语料中没有「{value}」这本书。已收录：{known}（用 /sources 查看全部）",
            "The corpus holds no source “{value}”. It holds: {known} (see /sources)",
        ),
        "unknown_era": (
            "语料中没有「{value}」这个时代。已有：{known}",
            "The corpus holds no era “{value}”. It has: {known}",
        ),
        "footnotes": ("注解", "Footnotes"),
        "related_notes": ("相关注解", "Related notes"),
        "passages": ("阐述这处经文的职事段落", "Ministry passages on this passage"),
        "no_passages": (
            "语料中没有找到引用这处经文的职事段落。",
            "No ministry passage in the corpus references this passage.",
        ),
        "concepts": ("相关概念：{concepts}", "Related concepts: {concepts}"),
    }
)

MAX_VERSES = 30
MAX_FOOTNOTES = 6
NON_MINISTRY = ("footnote", "bible")
FILTER_KEYS = frozenset({"source", "type", "era", "language", "topic_tags", "doc_id"})


class UnknownFilter(ValueError):
    """An /ask filter names a source or era the corpus does not hold."""

    def __init__(self, key: str, value: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown {key}: {value}")
        self.key = key
        self.value = value
        self.known = known

    def message(self, lang: Lang) -> str:
        shown = "、".join(self.known[:8]) if lang == "zh" else ", ".join(self.known[:8])
        more = "…" if len(self.known) > 8 else ""
        return T(lang, f"unknown_{self.key}", value=self.value[:60], known=shown + more)


class Searcher(Protocol):
    async def search(
        self, query: str, *, flt: Filter | None = None, limit: int = 6
    ) -> SearchResult: ...


class VerseIndex(Protocol):
    """What /cite and /sources need from `retrieval.index.Indexer`."""

    @property
    def store(self) -> VectorStore: ...

    async def verses(self, osis_ids: Sequence[str]) -> Sequence[VerseLike]: ...

    async def has_bible(self) -> bool: ...

    async def source_names(self) -> SourceNamesLike: ...


class SourceNamesLike(Protocol):
    """The corpus's titles (Bible books aside) and eras, sorted."""

    @property
    def titles(self) -> Sequence[str]: ...

    @property
    def eras(self) -> Sequence[str]: ...


class VerseLike(Protocol):
    @property
    def version(self) -> str: ...

    @property
    def osis(self) -> str: ...

    @property
    def chapter(self) -> int: ...

    @property
    def verse(self) -> int: ...

    @property
    def text(self) -> str: ...


class ScriptureGraph(Protocol):
    def concepts_for_scripture(self, osis: str) -> list[str]: ...


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


class PathPictures(Protocol):
    """Draws the graph paths an answer used (`retrieval.graph.view.GraphViewer`)."""

    async def picture(self, paths: Sequence[GraphPath], lang: Lang) -> Attachment | None: ...


class Scholar:
    """`ask` and `cite` over the ministry corpus. `llm=None` → extractive answers;
    `pictures`: attach a picture of the knowledge-graph path an answer shows."""

    def __init__(
        self,
        search: Searcher,
        indexer: VerseIndex,
        graph: ScriptureGraph | None,
        llm: LLM | None,
        *,
        passages: int = 6,
        pictures: PathPictures | None = None,
        gate: RelevanceGate | None = None,
    ) -> None:
        self._search = search
        self._pictures = pictures
        self._indexer = indexer
        self._graph = graph
        self._llm = llm
        self._passages = max(1, passages)
        self._gate = gate or RelevanceGate()
        self._titles: list[str] = []
        self._eras: list[str] = []
        # Running totals since start-up (logged; the benchmark reads the same numbers).
        self.citation_stats = CitationStats()

    # ---- /ask ---------------------------------------------------------------------------

    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply:
        if not request.question.strip():
            return Reply.error(T(actor.lang, "empty_question"), lang=actor.lang)
        try:
            request = await self.resolve_filters(request)
        except UnknownFilter as err:
            return Reply.error(err.message(actor.lang), lang=actor.lang)
        answer = await self.answer(actor, request, progress)
        reply = answer_reply(answer)
        if self._pictures is None or not (answer.addressed and answer.graph_helped):
            return reply
        # The answer showed a knowledge-graph path: attach its picture too.
        picture = await self._pictures.picture(answer.graph_paths, actor.lang)
        if picture is None:
            return reply
        return dataclasses.replace(reply, attachments=(*reply.attachments, picture))

    # ---- the corpus: /ask filters ---------------------------------------------------------

    def source_suggestions(self, typed: str, limit: int = 25) -> list[str]:
        """Titles for autocomplete (as of the last look at the corpus), best matches first."""
        key = search_form(typed).casefold().strip()
        titles = self._titles
        starts = [t for t in titles if search_form(t).casefold().startswith(key)]
        inside = [t for t in titles if key in search_form(t).casefold() and t not in starts]
        return (starts + inside)[:limit]

    def era_suggestions(self, typed: str, limit: int = 25) -> list[str]:
        key = typed.strip().casefold()
        return [e for e in self._eras if key in e.casefold()][:limit]

    async def refresh_sources(self) -> None:
        names = await self._indexer.source_names()
        self._titles, self._eras = list(names.titles), list(names.eras)

    async def resolve_filters(self, request: AskRequest) -> AskRequest:
        """A source filter names a title the corpus holds — exactly, in the other script, or
        as the one title containing it; an era filter an era it holds. Raises UnknownFilter."""
        if not request.filters.get("source") and not request.filters.get("era"):
            return request
        await self.refresh_sources()
        filters = dict(request.filters)
        wanted = filters.get("source", "")
        if wanted:
            key = search_form(wanted).casefold()
            exact = [t for t in self._titles if search_form(t).casefold() == key]
            partial = [t for t in self._titles if key in search_form(t).casefold()]
            match = exact or (partial if len(partial) == 1 else [])
            if not match:
                raise UnknownFilter("source", wanted, tuple(partial or self._titles))
            filters["source"] = match[0]
        era = filters.get("era", "")
        if era and era not in self._eras:
            raise UnknownFilter("era", era, tuple(self._eras))
        return dataclasses.replace(request, filters=filters)

    async def answer(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Answer:
        """Search, decide whether the corpus addresses the question, then answer from the
        passages: with the model when there is one, else (or when it fails) extractively."""
        lang = actor.lang
        question = request.question.strip()
        if not question:
            raise ValueError("empty question")
        result = await self._search.search(
            question, flt=self._filter(request.filters), limit=self._passages
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
            log.warning("model failed (%s); answering extractively", err)
            notice = failure_notice(err.kind, lang)
            return extractive_answer(
                question, hits, lang, graph_paths=paths, notice=notice, script=script
            )
        verified = verify(response, prompt.passages, lang)
        self._tally(verified.stats)
        if model_declined(verified.text):
            return not_addressed_answer(
                question, related, lang, "llm", graph_paths=paths, script=script
            )
        if not verified.text.strip():
            notice = REPLY_T(lang, "empty_answer")
            return extractive_answer(
                question, hits, lang, graph_paths=paths, notice=notice, script=script
            )
        return model_answer(question, lang, verified, prompt.passages, paths, script=script)

    def _streamer(self, progress: Progress | None) -> OnDelta | None:
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

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply:
        """The verse once (in the reader's script, the version named); under 注解 the notes on
        that verse — the note text, not the verse again; under 相关注解 notes on other verses
        that mention it; then the ministry passages that cite it. Nothing is shown twice."""
        lang = actor.lang
        if not request.refs:
            return Reply.error(T(lang, "no_refs"), lang=lang)
        ranges: list[_Range] = []
        for start, end in request.refs:
            try:
                ref = scripture.RefRange(_verse_ref(start), _verse_ref(end))
                ids = tuple(scripture.expand(ref))
            except (ValueError, KeyError):
                return Reply.error(T(lang, "bad_ref", ref=f"{start}-{end}"), lang=lang)
            ranges.append(_Range(ref, ref.osis(), ids))
        ids = tuple(dict.fromkeys(i for r in ranges for i in r.ids))
        render = scripture.render_en if lang == "en" else scripture.render_zh
        sep = "；" if lang == "zh" else "; "
        blocks: list[Block] = [Block(sep.join(render(r.ref) for r in ranges), "heading")]
        script = reader_script(request.script, request.text)
        verse_text = await self._verse_blocks(ids, lang, script, blocks)

        shown: set[str] = set()
        own, related = await self._notes(ids)
        if own:
            blocks.append(Block(T(lang, "footnotes"), "heading"))
            for chunk in own:
                label = CitationLabel.of(chunk).text(lang)
                blocks.append(Block(f"{note_text(chunk)}【{label}】", "item"))
                shown.add(chunk.id)
        if related:
            blocks.append(Block(T(lang, "related_notes"), "heading"))
            focus = " ".join(scripture.render_zh(r.ref) for r in ranges)
            for chunk in related:
                label = CitationLabel.of(chunk).text(lang)
                blocks.append(Block(f"{quote_at(note_text(chunk), focus)}【{label}】", "item"))
                shown.add(chunk.id)
        passages = [
            c
            for c in await self._passages_for(ids, verse_text or request.text)
            if c.id not in shown
        ]
        if passages:
            blocks.append(Block(T(lang, "passages"), "heading"))
            focus = " ".join([verse_text, *(scripture.render_zh(r.ref) for r in ranges)])
            for chunk in passages:
                label = CitationLabel.of(chunk).text(lang)
                blocks.append(Block(f"{excerpt(chunk.text, focus)}【{label}】", "quote"))
        elif not own and not related:
            blocks.append(Block(T(lang, "no_passages"), "note"))
        concepts = self._concepts(ranges)
        if concepts:
            blocks.append(Block(T(lang, "concepts", concepts=" · ".join(concepts)), "note"))
        return Reply(blocks=tuple(blocks), lang=lang)

    async def _verse_blocks(
        self, ids: tuple[str, ...], lang: Lang, script: Script, blocks: list[Block]
    ) -> str:
        """Add the verse block — in `script`, its version named — or say why there is none;
        return the verse text (Simplified, for matching)."""
        if not await self._indexer.has_bible():
            blocks.append(Block(T(lang, "no_bible"), "note"))
            return ""
        rows = list(await self._indexer.verses(ids[:MAX_VERSES]))
        if not rows:
            blocks.append(Block(T(lang, "verse_missing"), "note"))
            return ""
        versions = list(dict.fromkeys(r.version for r in rows))
        lines = []
        for row in rows:
            tag = f"（{version_name(row.version, lang)}）" if len(versions) > 1 else ""
            lines.append(f"{row.chapter}:{row.verse} {in_script(row.text, script)}{tag}")
        blocks.append(Block("\n".join(lines), "quote"))
        if len(versions) == 1:
            blocks.append(Block(version_name(versions[0], lang), "note"))
        if len(ids) > MAX_VERSES:
            blocks.append(Block(T(lang, "verses_truncated", n=len(ids), shown=MAX_VERSES), "note"))
        return to_simplified(" ".join(r.text for r in rows))

    async def _notes(self, ids: tuple[str, ...]) -> tuple[list[Chunk], list[Chunk]]:
        """Footnotes mentioning the verses: those whose own verse is one of them, and the rest."""
        flt = Filter(
            equals={"scripture_refs": list(ids), "type": "footnote", "namespace": CORPUS_NAMESPACE}
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

    async def _passages_for(self, ids: tuple[str, ...], query: str) -> list[Chunk]:
        """Ministry chunks citing the verses: ranked by search, completed by a scroll."""
        flt = Filter(
            equals={"scripture_refs": list(ids), "namespace": CORPUS_NAMESPACE},
            not_equals={"type": list(NON_MINISTRY)},
        )
        ranked: list[Hit] = []
        if query.strip():
            result = await self._search.search(query, flt=flt, limit=self._passages * 3)
            ranked = result.hits
        everyone = await self._indexer.store.scroll(flt, limit=200)
        everyone.sort(key=lambda c: (c.source, c.position))
        chunks = _unique([h.chunk for h in ranked] + everyone)
        return one_per_source_first(chunks)[: self._passages]

    def _concepts(self, ranges: Sequence[_Range]) -> list[str]:
        if self._graph is None:
            return []
        labels: dict[str, None] = {}
        for r in ranges:
            for label in self._graph.concepts_for_scripture(r.osis):
                labels[label] = None
        return list(labels)[:12]


VERSION_NAMES = {"cuv1919": ("和合本（1919）", "Chinese Union Version (1919)")}


def version_name(version: str, lang: Lang) -> str:
    zh, en = VERSION_NAMES.get(version, (version, version))
    return en if lang == "en" else zh


def note_text(chunk: Chunk) -> str:
    """A footnote chunk without its first line, the verse it annotates (shown once above)."""
    head, _, notes = chunk.text.partition("\n")
    heading = chunk.extra.get("verse")
    if notes.strip() and isinstance(heading, str) and head.startswith(heading):
        return notes.strip()
    return chunk.text


def _unique(chunks: Sequence[Chunk]) -> list[Chunk]:
    seen: set[str] = set()
    out = []
    for c in chunks:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
