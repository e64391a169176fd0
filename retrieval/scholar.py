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

from retrieval import scripture
from retrieval.answer import (
    T as ANSWER_T,
)
from retrieval.answer import (
    answer_reply,
    build_prompt,
    citation_label,
    excerpt,
    extractive_reply,
    failure_notice,
    not_found_reply,
    preview,
    quote_at,
    verify,
)
from retrieval.i18n import Catalog, Lang
from retrieval.ports import LLM, CitationStats, LLMError, OnDelta, VectorStore
from retrieval.reply import Attachment, Block, Citation, Progress, Reply
from retrieval.requests import Actor, AskRequest, CiteRequest
from retrieval.search import SearchResult
from retrieval.text import to_simplified
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
        "footnotes": ("注解", "Footnotes"),
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


class Searcher(Protocol):
    async def search(
        self, query: str, *, flt: Filter | None = None, limit: int = 6
    ) -> SearchResult: ...


class VerseIndex(Protocol):
    """What /cite needs from `retrieval.index.Indexer`."""

    @property
    def store(self) -> VectorStore: ...

    async def verses(self, osis_ids: Sequence[str]) -> Sequence[VerseLike]: ...

    async def has_bible(self) -> bool: ...


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
    ) -> None:
        self._search = search
        self._pictures = pictures
        self._indexer = indexer
        self._graph = graph
        self._llm = llm
        self._passages = max(1, passages)
        # Running totals since start-up (logged; the benchmark reads the same numbers).
        self.citation_stats = CitationStats()

    # ---- /ask ---------------------------------------------------------------------------

    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply:
        reply, paths = await self._answer(actor, request, progress)
        if self._pictures is None or not paths:
            return reply
        # The answer showed a knowledge-graph path: attach its picture too.
        picture = await self._pictures.picture(paths, actor.lang)
        if picture is None:
            return reply
        return dataclasses.replace(reply, attachments=(*reply.attachments, picture))

    async def _answer(
        self, actor: Actor, request: AskRequest, progress: Progress | None
    ) -> tuple[Reply, Sequence[GraphPath]]:
        """The reply, and the graph paths it shows (none when the graph did not help)."""
        lang = actor.lang
        question = request.question.strip()
        if not question:
            return Reply.error(T(lang, "empty_question"), lang=lang), ()
        result = await self._search.search(
            question, flt=self._filter(request.filters), limit=self._passages
        )
        hits = result.hits
        if not hits:
            return not_found_reply(lang), ()
        shown = result.graph_paths if any("graph" in h.ranks for h in hits) else []
        if self._llm is None:
            return extractive_reply(question, hits, lang, graph_paths=result.graph_paths), shown
        prompt = build_prompt(
            question,
            hits,
            lang=lang,
            context_tokens=self._llm.context_tokens,
            max_passages=self._passages,
        )
        if not prompt.passages:  # a window too small for even one passage
            return extractive_reply(question, hits, lang, graph_paths=result.graph_paths), shown
        try:
            response = await self._llm.complete(prompt.request, self._streamer(progress))
        except LLMError as err:
            log.warning("model failed (%s); answering extractively", err)
            reply = extractive_reply(
                question,
                hits,
                lang,
                graph_paths=result.graph_paths,
                notice=failure_notice(err.kind, lang),
            )
            return reply, shown
        verified = verify(response, prompt.passages, lang)
        self._tally(verified.stats)
        if not verified.text.strip():
            reply = extractive_reply(
                question,
                hits,
                lang,
                graph_paths=result.graph_paths,
                notice=ANSWER_T(lang, "empty_answer"),
            )
            return reply, shown
        return answer_reply(verified, prompt.passages, result.graph_paths, lang), shown

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
        title = (
            "；".join(render(r.ref) for r in ranges)
            if lang == "zh"
            else "; ".join(render(r.ref) for r in ranges)
        )
        blocks: list[Block] = [Block(title, "heading")]
        citations: list[Citation] = []

        verse_text = await self._verse_blocks(ids, lang, blocks)
        footnotes = await self._footnotes(ids)
        if footnotes:
            blocks.append(Block(T(lang, "footnotes"), "heading"))
            for chunk in footnotes:
                label = citation_label(chunk)
                blocks.append(Block(f"{excerpt(chunk.text, verse_text)}【{label}】", "item"))
                citations.append(self._citation(chunk, verse_text))
        passages = await self._passages_for(ids, verse_text or request.text)
        if passages:
            blocks.append(Block(T(lang, "passages"), "heading"))
            focus = " ".join([verse_text, *(scripture.render_zh(r.ref) for r in ranges)])
            for chunk in passages:
                label = citation_label(chunk)
                blocks.append(Block(f"{excerpt(chunk.text, focus)}【{label}】", "quote"))
                citations.append(self._citation(chunk, focus))
        else:
            blocks.append(Block(T(lang, "no_passages"), "note"))
        concepts = self._concepts(ranges)
        if concepts:
            blocks.append(Block(T(lang, "concepts", concepts=" · ".join(concepts)), "note"))
        return Reply(blocks=tuple(blocks), citations=tuple(citations), lang=lang)

    async def _verse_blocks(self, ids: tuple[str, ...], lang: Lang, blocks: list[Block]) -> str:
        """Add the verse text blocks (or say why there are none); return the text shown."""
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
            tag = f"（{row.version}）" if len(versions) > 1 else ""
            lines.append(f"{row.chapter}:{row.verse} {row.text}{tag}")
        blocks.append(Block("\n".join(lines), "quote"))
        if len(ids) > MAX_VERSES:
            blocks.append(Block(T(lang, "verses_truncated", n=len(ids), shown=MAX_VERSES), "note"))
        return to_simplified(" ".join(r.text for r in rows))

    async def _footnotes(self, ids: tuple[str, ...]) -> list[Chunk]:
        flt = Filter(
            equals={"scripture_refs": list(ids), "type": "footnote", "namespace": CORPUS_NAMESPACE}
        )
        found = await self._indexer.store.scroll(flt, limit=MAX_FOOTNOTES * 4)
        found.sort(key=lambda c: (c.source, c.position))
        return _unique(found)[:MAX_FOOTNOTES]

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

    def _citation(self, chunk: Chunk, focus: str) -> Citation:
        return Citation(
            citation_label(chunk),
            chunk.source,
            chunk.chapter,
            quote_at(chunk.text, focus),
            chunk.id,
        )


def _unique(chunks: Sequence[Chunk]) -> list[Chunk]:
    seen: set[str] = set()
    out = []
    for c in chunks:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
