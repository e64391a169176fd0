"""L2 plot memory: chapter versions ↔ chunks in the shared VectorStore, kept in step with SQLite.

Invariant: no search returns a chunk of a version that is not current, and a crash between any
two steps leaves the previously current version fully current (or, after the SQLite flip, the new
one current once `reconcile()` has run). The order of every change:

1. index the new version's chunks with `x_current=false` (invisible to searches);
2. one SQLite transaction flips the chapter's `current_version` (the truth);
3. `set_extra(x_current=true)` on the new version's chunks;
4. delete the chunks of every other version of that chapter.

Searches filter on `x_current=true` *and* drop any hit whose (chapter, version) SQLite does not
call current. `reconcile()` re-applies the SQLite truth to the store after a crash.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from novel.blueprint import default_blueprint, validate
from novel.repo import Draft, NovelRepo, VersionRow
from novel.splitter import SplitConfig, UnitSplitter, split_text
from novel.summary import ChapterSummary
from novel.tags import EVENT, blueprint_places, known_places, text_tags
from retrieval.ports import Embedder, VectorStore
from retrieval.types import (
    Chunk,
    Filter,
    IndexedChunk,
    ScoredChunk,
    SparseVector,
    chunk_id,
    content_hash,
)

log = logging.getLogger(__name__)

EncodeSparse = Callable[[str], SparseVector]
Merge = Literal["fuse", "fill"]  # how filtered L2 hits meet the unfiltered ones (`search`)

PLOT = "plot"  # x_kind of a chapter's text chunks (L2)
SUMMARY = "summary"  # x_kind of a chapter version's summary point (L3)
SUMMARY_POSITION = -1
SELECTIVE = 0.25  # a tag carried by more than this share of chunks neither filters nor boosts
# The goal's selective character and scene tags (not its event tags: `PlotMemory.search`)
# filter L2 first when at least this many current chunks carry one; fewer, and the search runs
# unfiltered (the tags only boost, as a third ranking).
MIN_FILTERED = 8


def namespace(chat_id: str) -> str:
    return f"novel:{chat_id}"


@dataclass(frozen=True, slots=True)
class PlotHit:
    chapter_no: int
    chapter_id: str
    version: int
    title: str
    text: str
    tags: tuple[str, ...]
    score: float


def fuse_hits(
    filtered: Sequence[PlotHit], unfiltered: Sequence[PlotHit], limit: int
) -> list[PlotHit]:
    """The filtered and the unfiltered hits by reciprocal rank fusion; on a tie the filtered
    hit first."""
    score: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], tuple[int, int]] = {}
    hits: dict[tuple[str, str], PlotHit] = {}
    for source, ranking in enumerate((filtered, unfiltered)):
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.chapter_id, hit.text)
            score[key] = score.get(key, 0.0) + 1.0 / (60 + rank)
            first.setdefault(key, (source, rank))
            hits.setdefault(key, hit)
    ordered = sorted(score, key=lambda k: (-round(score[k], 12), first[k]))
    return [hits[k] for k in ordered[:limit]]


@dataclass(frozen=True, slots=True)
class VersionAt:
    """Where a chapter version's chunks go: its novel, chapter, number and version."""

    chat_id: str
    chapter_id: str
    chapter_no: int
    version: int


# A chapter version's words and summary: a `Draft` about to be stored, or a stored `VersionRow`.
Written = Draft | VersionRow


@dataclass(slots=True)
class ReconcileReport:
    removed: int = 0  # chunks of versions SQLite does not call current (or of deleted chapters)
    reindexed: int = 0  # current versions whose chunks were missing or incomplete
    activated: int = 0  # current versions whose chunks were still marked not current
    renumbered: int = 0
    chapters: list[str] = field(default_factory=list)


def _bigrams(text: str) -> set[str]:
    compact = "".join(text.split())
    return {compact[i : i + 2] for i in range(len(compact) - 1)} or {compact}


def chunk_tags(
    pieces: Sequence[str], names: Mapping[str, str], summary: ChapterSummary
) -> list[list[str]]:
    """Tags for each chunk of a chapter: the characters it names (aliases → canonical names),
    then the summary's scenes and events it carries.

    A scene or event tags the chunks that contain most of its character bigrams (≥ 60%), or
    else the one chunk that contains the most (≥ 30%): the summariser paraphrases, so a phrase
    rarely appears verbatim.
    """
    ordered = sorted((a for a in names if a), key=len, reverse=True)
    tags: list[list[str]] = []
    grams = [_bigrams(p) for p in pieces]
    for piece in pieces:
        found: list[str] = []
        for alias in ordered:
            if alias in piece and names[alias] not in found:
                found.append(names[alias])
        tags.append(found)
    for item in (*summary.scenes, *summary.events):
        if not item.strip():
            continue
        item = item.strip()[:60]
        wanted = _bigrams(item)
        shares = [len(wanted & g) / len(wanted) for g in grams]
        chosen = [i for i, share in enumerate(shares) if share >= 0.6]
        if not chosen and shares:
            best = max(range(len(shares)), key=lambda i: shares[i])
            if shares[best] >= 0.3:
                chosen = [best]
        for i in chosen:
            if item not in tags[i]:
                tags[i].append(item)
    return tags


def summary_text(title: str, summary: ChapterSummary) -> str:
    """What L3 indexes for a chapter: its title, summary line, characters, scenes, events."""
    parts = [f"《{title}》{summary.summary.strip()}"]
    labelled = (
        (summary.characters, "人物"),
        (summary.scenes, "场景"),
        (summary.events, "事件"),
    )
    for listed, label in labelled:
        items = [i for i in listed if i]
        if items:
            parts.append(f"{label}：{'、'.join(items)}")
    return "\n".join(parts)


def _ranked(found: Sequence[ScoredChunk]) -> list[tuple[ScoredChunk, int]]:
    return [(sc, rank) for rank, sc in enumerate(found, start=1)]


class PlotMemory:
    def __init__(
        self,
        repo: NovelRepo,
        store: VectorStore,
        embedder: Embedder,
        encode_sparse: EncodeSparse,
        *,
        encode_query_sparse: EncodeSparse | None = None,
        split: SplitConfig | None = None,
        units: UnitSplitter | None = None,
    ) -> None:
        self._book = repo.book
        self._world = repo.world
        self._store = store
        self._embedder = embedder
        self._encode_sparse = encode_sparse
        self._encode_query_sparse = encode_query_sparse
        self._split = split or SplitConfig()
        self._units = units

    # ---- building blocks ---------------------------------------------------------------------

    def _flt(self, chat_id: str, **equals: Any) -> Filter:
        return Filter(equals={"namespace": namespace(chat_id), **equals})

    async def _names(self, chat_id: str) -> tuple[dict[str, str], list[str]]:
        """The blueprint's name index (alias → canonical) and its places."""
        raw = await self._world.blueprint_json(chat_id)
        bp = validate(json.loads(raw)) if raw else default_blueprint()
        return bp.name_index(), blueprint_places(bp)

    def chunks_for(
        self,
        at: VersionAt,
        written: Written,
        names: Mapping[str, str],
        places: Sequence[str] = (),
    ) -> list[Chunk]:
        """The plot chunks of a version, then one point for its summary (L3). A chunk's tags:
        the characters it names, the summary's scene and event phrases it carries (by bigrams),
        then its scene and event tags (`novel.tags`: one name per place and kind of event)."""
        chat_id, chapter_id, version = at.chat_id, at.chapter_id, at.version
        title, summary = written.title, written.summary
        ns = namespace(chat_id)
        now = datetime.now(UTC).isoformat()
        pieces = split_text(written.text, self._split, self._units)
        # characters the summary names but the blueprint does not know yet (a new face) tag too
        extra = [c for c in summary.characters if len(c) >= 2]
        names = {**{c: c for c in extra}, **names}
        scenes = list(summary.scenes)
        places = known_places(places, scenes)
        out: list[Chunk] = []

        def point(position: int, piece: str, kind: str, tags: list[str]) -> Chunk:
            digest = content_hash(piece)
            return Chunk(
                id=chunk_id(ns, f"{chapter_id}:v{version}", position, digest),
                text=piece,
                search_text=piece,
                doc_id=chapter_id,
                source=title,
                type="novel",
                chapter=title,  # the number lives in x_chapter_no (renumbering)
                position=position,
                namespace=ns,
                content_hash=digest,
                ingested_at=now,
                extra={
                    "novel": chat_id,
                    "chapter_id": chapter_id,
                    "chapter_no": at.chapter_no,
                    "title": title,
                    "chunk_id": f"{chapter_id}:v{version}:{position}",
                    "kind": kind,
                    "tags": tags,
                    "version": version,
                    "current": False,
                },
            )

        for position, (piece, tags) in enumerate(
            zip(pieces, chunk_tags(pieces, names, summary), strict=True)
        ):
            out.append(point(position, piece, PLOT, tags + text_tags(piece, places)))
        if pieces:
            canon = list(dict.fromkeys(names.get(c, c) for c in summary.characters))
            line = summary_text(title, summary)
            out.append(
                point(SUMMARY_POSITION, line, SUMMARY, canon + scenes + text_tags(line, places))
            )
        return out

    async def index_version(
        self,
        at: VersionAt,
        written: Written,
        names: Mapping[str, str] | None = None,
        places: Sequence[str] | None = None,
    ) -> int:
        """Step 1: embed and upsert a version's chunks and summary point, invisible
        (`x_current=false`); returns the number of plot chunks."""
        if names is None or places is None:
            names, places = await self._names(at.chat_id)
        chunks = self.chunks_for(at, written, names, places)
        if not chunks:
            return 0
        dense = await self._embedder.embed_passages([c.search_text for c in chunks])
        sparse = await asyncio.to_thread(
            lambda: [self._encode_sparse(c.search_text) for c in chunks]
        )
        await self._store.upsert(
            [IndexedChunk(c, d, s) for c, d, s in zip(chunks, dense, sparse, strict=True)]
        )
        return sum(1 for c in chunks if c.extra.get("kind") == PLOT)  # the summary point aside

    async def activate(self, chat_id: str, chapter_id: str, version: int) -> None:
        """Steps 3 and 4, after SQLite made `version` current."""
        await self._store.set_extra(
            self._flt(chat_id, doc_id=chapter_id, x_version=version), {"current": True}
        )
        await self._store.delete(
            Filter(
                equals={"namespace": namespace(chat_id), "doc_id": chapter_id},
                not_equals={"x_version": version},
            )
        )

    # ---- versioned operations ----------------------------------------------------------------

    async def add_chapter(
        self, chat_id: str, chapter_id: str, draft: Draft, round_id: str | None = None
    ) -> tuple[int, int]:
        """A new last chapter (version 1); returns (chapter number, chunk count)."""
        expected = len(await self._book.chapters(chat_id)) + 1
        count = await self.index_version(VersionAt(chat_id, chapter_id, expected, 1), draft)
        number = await self._book.add_chapter(chat_id, chapter_id, draft, round_id)
        if number != expected:
            await self._store.set_extra(
                self._flt(chat_id, doc_id=chapter_id), {"chapter_no": number}
            )
        await self.activate(chat_id, chapter_id, 1)
        return number, count

    async def add_version(
        self, chat_id: str, chapter_id: str, chapter_no: int, draft: Draft
    ) -> tuple[int, int]:
        """A new current version of an existing chapter; returns (version, chunk count)."""
        version = await self._book.next_version(chapter_id)
        count = await self.index_version(VersionAt(chat_id, chapter_id, chapter_no, version), draft)
        await self._book.add_version(chapter_id, version, draft)
        await self.activate(chat_id, chapter_id, version)
        return version, count

    async def undo_version(self, chat_id: str, chapter_id: str, version: int, keep: int) -> None:
        """After `add_version` of `version` failed (a store or disk fault at any step, the
        process still running): make `keep` current again and remove `version`. SQLite first
        (the truth), then the store is made to agree — the new chunks dropped, `keep`'s chunks
        re-activated or re-indexed if step 4 got that far. Best effort: if the store still
        fails, the next `reconcile()` finishes from the same SQLite truth."""
        try:
            if await self._book.version(chapter_id, version) is not None:
                await self._book.drop_version(chapter_id, version, keep)
        except Exception:
            log.exception("undoing version %s of chapter %s in SQLite failed", version, chapter_id)
            return
        try:
            await self._store.delete(self._flt(chat_id, doc_id=chapter_id, x_version=version))
            await self.reconcile(chat_id)
        except Exception:
            log.warning(
                "plot memory of %s left for the next reconcile after a failed revision",
                chat_id,
                exc_info=True,
            )

    async def rollback(self, chat_id: str, chapter_id: str, chapter_no: int, version: int) -> int:
        row = await self._book.version(chapter_id, version)
        if row is None:
            raise LookupError(version)
        count = await self.index_version(VersionAt(chat_id, chapter_id, chapter_no, version), row)
        await self._book.set_current(chapter_id, version)
        await self.activate(chat_id, chapter_id, version)
        return count

    async def delete_chapter(self, chat_id: str, chapter_id: str) -> list[tuple[str, int]]:
        """SQLite first (the truth: searches stop returning it at once), then the store."""
        renumbered = await self._book.delete_chapter(chat_id, chapter_id)
        await self._store.delete(self._flt(chat_id, doc_id=chapter_id))
        for other, number in renumbered:
            await self._store.set_extra(self._flt(chat_id, doc_id=other), {"chapter_no": number})
        return renumbered

    # ---- reading -----------------------------------------------------------------------------

    async def search(
        self,
        chat_id: str,
        query: str,
        limit: int = 6,
        *,
        tags: Sequence[str] = (),
        min_filtered: int = MIN_FILTERED,
        merge: Merge = "fill",
        events: bool = False,
    ) -> list[PlotHit]:
        """L2: plot chunks of current versions by dense + BM25 similarity, fused (RRF).

        `tags` are the goal's: the characters, `场景:` scenes and `事件:` events it names. The
        rule: only the characters and scenes count here — an event kind (发誓, 结识, 拾获) is
        common in any novel, and filtering or boosting on it pushed the planted passage out
        for chunks that merely share the event (3 of 30 callbacks lost with the USE embedder,
        1 with hash; bench/RESULTS.md, issue 23); `events=True` lets them count again. The
        selective ones (carried by at most SELECTIVE of the chunks) filter first: when at
        least `min_filtered` (MIN_FILTERED) chunks carry one of them, the hits are the best of
        those chunks, and only if they are fewer than `limit` does the unfiltered search fill
        the rest (`merge="fuse"`: fused by rank with the unfiltered hits instead, `fuse_hits`).
        Fewer matches, and the search runs unfiltered, the tagged chunks boosted by a third
        ranking.
        """
        if not events:
            tags = [t for t in tags if not t.startswith(EVENT)]
        flt = Filter(
            equals={"namespace": namespace(chat_id), "x_current": True},
            not_equals={"x_kind": SUMMARY},
        )
        selective = await self._selective(flt, tags)
        if selective:
            tagged = flt.and_(Filter(equals={"x_tags": list(selective)}))
            if await self._store.count(tagged) >= min_filtered:
                # every chunk left carries a tag: one tag has nothing more to rank by
                boost = selective if len(selective) > 1 else {}
                hits = await self._fused(chat_id, query, tagged, limit, boost)
                if merge == "fuse":
                    unfiltered = await self._fused(chat_id, query, flt, limit, selective)
                    return fuse_hits(hits, unfiltered, limit)
                if len(hits) < limit:
                    seen = {(h.chapter_id, h.text) for h in hits}
                    rest = await self._fused(chat_id, query, flt, limit + len(hits), {})
                    hits += [h for h in rest if (h.chapter_id, h.text) not in seen]
                return hits[:limit]
        return await self._fused(chat_id, query, flt, limit, selective)

    async def summaries(
        self, chat_id: str, query: str, limit: int = 5, *, tags: Sequence[str] = ()
    ) -> list[PlotHit]:
        """L3: the chapter summaries most similar to `query` (current versions only), the ones
        tagged with the selective `tags` boosted."""
        flt = self._flt(chat_id, x_current=True, x_kind=SUMMARY)
        return await self._fused(chat_id, query, flt, limit, await self._selective(flt, tags))

    async def _selective(self, flt: Filter, tags: Sequence[str]) -> dict[str, float]:
        """The tags that pick out a few chunks, each with its weight log(chunks / chunks
        carrying it): a character in most of the novel picks none, a name in one chunk weighs
        most."""
        if not tags:
            return {}
        total = await self._store.count(flt)
        kept: dict[str, float] = {}
        for tag in dict.fromkeys(tags):
            n = await self._store.count(flt.and_(Filter(equals={"x_tags": [tag]})))
            if 0 < n <= max(3, SELECTIVE * total):
                kept[tag] = math.log((total + 1) / n)
        return kept

    async def _fused(
        self, chat_id: str, query: str, flt: Filter, limit: int, boost: Mapping[str, float]
    ) -> list[PlotHit]:
        """Dense + BM25 under `flt`, fused (RRF); with `boost` (selective tags and their
        weights), a third ranking of the chunks carrying them (`_tag_ranking`)."""
        fetch = max(limit * 3, 10)
        vector = await self._embedder.embed_query(query)
        rankings: list[list[tuple[ScoredChunk, int]]] = [
            _ranked(await self._store.search_dense(vector, flt=flt, limit=fetch))
        ]
        if self._encode_query_sparse is not None:
            sparse_q = self._encode_query_sparse(query)
            if sparse_q.indices:
                found = await self._store.search_sparse(sparse_q, flt=flt, limit=fetch)
                rankings.append(_ranked(found))
        if boost:
            rankings.append(await self._tag_ranking(vector, flt, boost, fetch))
        fused: dict[str, float] = {}
        chunks: dict[str, Chunk] = {}
        for ranking in rankings:
            for sc, rank in ranking:
                fused[sc.chunk.id] = fused.get(sc.chunk.id, 0.0) + 1.0 / (60 + rank)
                chunks[sc.chunk.id] = sc.chunk
        truth = await self._book.current_map(chat_id)
        hits: list[PlotHit] = []
        for cid in sorted(fused, key=lambda k: fused[k], reverse=True):
            c = chunks[cid]
            chapter_id = str(c.extra.get("chapter_id", c.doc_id))
            current = truth.get(chapter_id)
            # Double check against SQLite: a hit of a non-current version is never returned.
            if current is None or int(c.extra.get("version", -1)) != current[1]:
                continue
            if c.namespace != namespace(chat_id):
                continue
            hits.append(
                PlotHit(
                    chapter_no=current[0],
                    chapter_id=chapter_id,
                    version=current[1],
                    title=str(c.extra.get("title", "")),
                    text=c.text,
                    tags=tuple(c.extra.get("tags") or ()),
                    score=fused[cid],
                )
            )
            if len(hits) >= limit:
                break
        return hits

    async def _tag_ranking(
        self, vector: Sequence[float], flt: Filter, weights: Mapping[str, float], fetch: int
    ) -> list[tuple[ScoredChunk, int]]:
        """The chunks most similar to the query among each tag's, ranked by the summed weight
        of the goal's tags they carry (a chunk with the goal's rare name and its event first).
        Equal weights share a rank: similarity already has its own ranking."""
        found: dict[str, ScoredChunk] = {}
        for tag in weights:
            tagged = flt.and_(Filter(equals={"x_tags": [tag]}))
            for sc in await self._store.search_dense(vector, flt=tagged, limit=fetch):
                found.setdefault(sc.chunk.id, sc)

        def weight(sc: ScoredChunk) -> float:
            carried = set(sc.chunk.extra.get("tags") or ())
            return round(sum(w for tag, w in weights.items() if tag in carried), 9)

        ordered = sorted(found.values(), key=lambda sc: (-weight(sc), -sc.score))[:fetch]
        out: list[tuple[ScoredChunk, int]] = []
        for i, sc in enumerate(ordered):
            tied = out and weight(out[-1][0]) == weight(sc)
            out.append((sc, out[-1][1] if tied else i + 1))
        return out

    # ---- recovery ----------------------------------------------------------------------------

    async def reconcile(self, chat_id: str) -> ReconcileReport:
        """Make the store agree with SQLite for one novel."""
        report = ReconcileReport()
        ns_flt = self._flt(chat_id)
        total = await self._store.count(ns_flt)
        stored = await self._store.scroll(ns_flt, limit=max(total, 1)) if total else []
        groups: dict[tuple[str, int], list[Chunk]] = {}
        for c in stored:
            key = (str(c.extra.get("chapter_id", c.doc_id)), int(c.extra.get("version", -1)))
            groups.setdefault(key, []).append(c)
        truth = await self._book.current_map(chat_id)
        for (chapter_id, version), chunks in groups.items():
            current = truth.get(chapter_id)
            if current is None or current[1] != version:
                await self._store.delete(self._flt(chat_id, doc_id=chapter_id, x_version=version))
                report.removed += len(chunks)
        names, places = await self._names(chat_id)
        for chapter_id, (number, version) in truth.items():
            chunks = groups.get((chapter_id, version), [])
            row = await self._book.version(chapter_id, version)
            if row is None:
                continue
            pieces = len(split_text(row.text, self._split, self._units))
            expected = pieces + 1 if pieces else 0  # the chunks and the summary point
            if len(chunks) != expected:
                await self._store.delete(self._flt(chat_id, doc_id=chapter_id, x_version=version))
                at = VersionAt(chat_id, chapter_id, number, version)
                await self.index_version(at, row, names, places)
                await self.activate(chat_id, chapter_id, version)
                report.reindexed += 1
                report.chapters.append(chapter_id)
                continue
            if any(not c.extra.get("current") for c in chunks):
                await self.activate(chat_id, chapter_id, version)
                report.activated += 1
            if any(int(c.extra.get("chapter_no", -1)) != number for c in chunks):
                await self._store.set_extra(
                    self._flt(chat_id, doc_id=chapter_id), {"chapter_no": number}
                )
                report.renumbered += 1
        return report

    async def chunks_of(self, chat_id: str, chapter_id: str) -> Sequence[Chunk]:
        """The plot chunks (L2) of a chapter as stored (its summary point is not one)."""
        flt = Filter(
            equals={"namespace": namespace(chat_id), "doc_id": chapter_id},
            not_equals={"x_kind": SUMMARY},
        )
        n = await self._store.count(flt)
        return await self._store.scroll(flt, limit=max(n, 1))
