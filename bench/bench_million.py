"""A million chunks on this machine (issue 13): HybridSearch on Qdrant Edge at library scale.

The corpus and vectors are `bench_search.py`'s (CUV verses + synthetic chunks from CUV token
statistics; a clustered 384-d mixture, not real embeddings), generated and written in a
stream so no process ever holds the corpus. Two processes per run:

  build : points into an EdgeStore with the chosen layout (default `ON_DISK`: vectors and
          payload on disk, int8 scalar quantization in RAM with rescoring, memory-mapped
          BM25 index, payload indexes as always), then `optimize()`; the knowledge graph's
          rows (books, authors, verses, seed concepts linked per chunk) straight into SQLite.
          The keyword terms' chunk counts (`retrieval.termstats`) into the same SQLite, as the
          indexer keeps them (`--phase df` writes them for a shard built without them).
  query : a fresh process opens the shard and the graph the way the bot does at start-up,
          then times `HybridSearch.search` per track and fused (equal weights, k=60), with and
          without a filter, and measures HNSW recall@10 against exact search (same filter).
          Its RSS (plus the store process's, see `--store`) is the bot's footprint for that
          library.
  start : the bot (`baibao chat`, `/ask` sent as it starts) and `baibao ask` on the library,
          each started three times: seconds to the first line of the answer, and to exit.
  ab    : fused searches with the shard in this process (`EdgeStore`, its calls on threads)
          and in a child (`EdgeProcessStore`), alternated round by round in one process on
          the same shard: latency, CPU of both processes, and whether the results agree.

`--store` is where the query phase keeps the shard: `process` (the bot's default with the
on-disk layout) or `thread` (with the in-memory one); `auto` picks as the bot does.

    nice .venv/bin/python bench/bench_million.py --size 1000000
    nice .venv/bin/python bench/bench_million.py --size 100000 --layout in-memory

Writes bench/results/million-<size>-<layout>.json; the report is bench/results/million.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_search import (  # noqa: E402
    CENTROIDS,
    DIM,
    FILTERS,
    NOISE,
    NT_FIRST,
    QNOISE,
    TYPES,
    PrecomputedEmbedder,
    Row,
    books_zh,
    chunk_of,
    cuv_verses,
    graph_rows,
    seed_concepts,
    stats,
)
from bench.measure import rss_mb  # noqa: E402

BATCH = 2048
N_QUERIES = 60
WARMUP = 5
N_NEW = 100  # first-seen queries per measure
CONCURRENCY = 8  # searches at once, as eight /ask would run them
EF_SWEEP = (64, 128, 256, 512)  # hnsw_ef values the recall check tries besides the default
RESULTS = ROOT / "bench" / "results"


def rows_stream(size: int, sample: set[int]) -> Any:
    """Yield (index, Row) for `size` chunks: CUV verses first (up to 31,103), then synthetic
    chunks built like bench_search.corpus, one at a time."""
    verses = cuv_verses()
    order = sorted(range(len(verses)), key=lambda i: (verses[i][0] not in NT_FIRST, i))
    keep = sorted(order[: min(len(verses), int(size * 0.8))])
    i = 0
    for v_index in keep:
        book, ch, v, trad, simp, toks = verses[v_index]
        yield (
            i,
            Row(
                f"cuv:{book}.{ch}",
                v,
                trad,
                simp,
                toks,
                (f"{book}.{ch}.{v}",),
                f"和合本·{book}",
                "footnote",
                "",
                "",
            ),
        )
        i += 1
    vocab: dict[str, int] = {}
    occ: list[int] = []
    chapters: dict[tuple[str, int], list[int]] = {}
    starts: list[tuple[int, str, int]] = []
    for book, ch, v, _, _, toks in verses:
        if (book, ch) not in chapters:
            chapters[(book, ch)] = []
            starts.append((len(occ), book, ch))
        chapters[(book, ch)].append(v)
        occ.extend(vocab.setdefault(t, len(vocab)) for t in toks)
    words = list(vocab)
    occ_arr = np.array(occ, dtype=np.int32)
    bounds = [s for s, *_ in starts] + [len(occ)]
    wlen = np.array([len(w) for w in words])
    concepts = seed_concepts()
    rng = np.random.default_rng(2026)
    authors = ("倪柝声", "李常受")
    n = 0
    while i < size:
        doc = n // 20
        c = int(rng.integers(0, len(starts)))
        local = occ_arr[rng.integers(bounds[c], bounds[c + 1], size=250)]
        glob = occ_arr[rng.integers(0, len(occ_arr), size=250)]
        ids = np.where(rng.random(250) < 0.5, local, glob)
        cut = int(np.searchsorted(np.cumsum(wlen[ids]), 300)) + 1
        toks = [words[k] for k in ids[:cut]]
        if rng.random() < 0.3:
            for _ in range(int(rng.integers(1, 3))):
                toks.insert(
                    int(rng.integers(0, len(toks))), concepts[int(rng.integers(0, len(concepts)))]
                )
        text = "".join(t + ("，" if j % 8 == 7 else "") for j, t in enumerate(toks)) + "。"
        _, book, ch = starts[c]
        vs = chapters[(book, ch)]
        refs = tuple(
            dict.fromkeys(
                f"{book}.{ch}.{vs[int(rng.integers(0, len(vs)))]}"
                for _ in range(int(rng.integers(0, 4)))
            )
        )
        yield (
            i,
            Row(
                f"syn:{doc}",
                n % 20,
                text,
                text,
                toks,
                refs,
                f"书{doc // 10}",
                TYPES[doc % 3],
                authors[doc % 2],
                ("nee", "lee")[doc % 2],
            ),
        )
        i += 1
        n += 1


def vectors(rows: list[Row], cents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    cl = np.array([zlib.crc32(r.doc_id.encode()) % CENTROIDS for r in rows])
    noise = rng.standard_normal((len(rows), DIM)).astype(np.float32) / math.sqrt(DIM)
    v = cents[cl] + NOISE * noise
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def make_query(r: Row, vector: np.ndarray, n: int, rng: np.random.Generator) -> dict[str, Any]:
    from retrieval.text import search_form

    picks = sorted(
        rng.choice(len(r.tokens), size=min(len(r.tokens), int(rng.integers(2, 5))), replace=False)
    )
    text = "".join(r.tokens[int(p)] for p in picks)
    if n % 3 == 0 and r.refs:
        book, ch, v = r.refs[0].split(".")
        text += f" {books_zh()[book]}{ch}:{v}"
    elif n % 3 == 1:
        concepts = seed_concepts()
        text += concepts[int(rng.integers(0, len(concepts)))]
    q = vector + QNOISE * rng.standard_normal(DIM).astype(np.float32) / math.sqrt(DIM)
    # `chunk`: the stored chunk the query was drawn from, the keyword track's target.
    return {
        "text": search_form(text),
        "vector": (q / np.linalg.norm(q)).tolist(),
        "chunk": chunk_of(r).id,
    }


def memory_status(pid: int | str = "self") -> dict[str, float]:
    """RSS split as the kernel reports it: anonymous (heap) vs file-backed (mmapped shard
    files the page cache can drop), plus the peak; MB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0]) / 1024
    return out


def rss_by_file(top: int = 12, pid: int | str = "self") -> dict[str, float]:
    """Resident MB per mapping, the shard's files grouped by kind (segment ids and numbers
    folded), from /proc/<pid>/smaps: what the file-backed part of RSS is made of."""
    out: dict[str, float] = {}
    name = "[anon]"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            path = head[5].strip() if len(head) > 5 else "[anon]"
            if "/qdrant/" in path:
                path = re.sub(r"/segments/[^/]+/", "/", path.split("/qdrant", 1)[1])
                path = re.sub(r"[0-9a-zN]{16,}-", "", re.sub(r"\d+", "N", path))
            elif path.startswith("/"):
                path = Path(path).name
            name = path
        elif head[0] == "Rss:":
            out[name] = out.get(name, 0.0) + int(head[1]) / 1024
    ranked = sorted(out.items(), key=lambda kv: -kv[1])
    return {k: round(v, 1) for k, v in ranked[:top] if v >= 1}


def layout_of(name: str) -> Any:
    from retrieval.store.edge import IN_MEMORY, ON_DISK

    return {"on-disk": ON_DISK, "in-memory": IN_MEMORY}[name]


def store_kind(kind: str, layout: str) -> str:
    """`auto` as the bot resolves it (`Settings.edge_child_process`: a local shard runs in a
    child process, whatever its layout)."""
    return "process" if kind == "auto" else kind


async def open_store(kind: str, work: Path, layout: str) -> Any:
    from retrieval.store.edge import EdgeStore
    from retrieval.store.edge_process import EdgeProcessStore

    cls = EdgeProcessStore if kind == "process" else EdgeStore
    return await cls.open(work / "qdrant", DIM, layout_of(layout))


def process_cpu_s(pid: int) -> float:
    """CPU seconds the process `pid` has used so far, all its threads (the scheduler's
    nanosecond counts). `/proc/PID/schedstat` alone is its main thread: Qdrant Edge searches
    a shard's segments on a pool of its own threads, which that count leaves out (a store
    process's search was read as 0.7 ms of CPU where all its threads used 3-4 ms)."""
    used = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            used += int((task / "schedstat").read_text().split()[0])
    return used / 1e9


def store_pid(store: Any) -> int | None:
    """The process id of the store's own process (None: the store is in this process)."""
    from retrieval.store.edge_process import EdgeProcessStore

    return store.pid if isinstance(store, EdgeProcessStore) else None


def cpu_split(store: Any) -> tuple[float, float]:
    """CPU seconds used so far by this process and by the store's process (0 for a store in
    this process, whose threads this process's count holds)."""
    pid = store_pid(store)
    return time.process_time(), (process_cpu_s(pid) if pid is not None else 0.0)


def cpu_s(store: Any) -> float:
    """CPU seconds used so far by this process and, for `EdgeProcessStore`, by the store's
    process too: the work moved there still counts."""
    return sum(cpu_split(store))


def store_status(store: Any) -> dict[str, float]:
    """The store process's memory_status (empty for a store in this process)."""
    pid = store_pid(store)
    return memory_status(pid) if pid is not None else {}


# ---- build ------------------------------------------------------------------------------------


class PeakMemory:
    """The build's memory, sampled every half second: peak RSS and its anonymous and
    file-backed parts (a Qdrant Edge call holds the GIL, so samples pause during one; the
    kernel's own peak, VmHWM, is read at the end)."""

    def __init__(self) -> None:
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for key, value in memory_status().items():
                self.peak[key] = max(self.peak.get(key, 0.0), value)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        now = memory_status()
        return {
            "vm_hwm_mb": now["VmHWM"],
            "rss_anon_peak_mb": self.peak.get("RssAnon", 0.0),
            "rss_file_peak_mb": self.peak.get("RssFile", 0.0),
        }


class BuildRecords:
    """What the indexer keeps per document, written as each document completes (nothing
    held for the whole build): the registry row (gen 1, graph up to date), the document's
    keyword-term counts (`retrieval.termstats`) and its graph rows. A registered document is
    complete, so a killed build resumes after it (`done`)."""

    def __init__(self, indexer: Any, gdb: Any, terms: Any) -> None:
        self.indexer = indexer
        self.db = indexer.db
        self.gdb = gdb
        self.terms = terms
        self.done: set[str] = set()
        self._terms: list[tuple[str, bytes]] = []
        self._registry: list[tuple[str, str, str, str, str, str, int]] = []

    @classmethod
    async def open(cls, work: Path, store: Any, terms: Any) -> BuildRecords:
        from retrieval.graph.storage import GraphDB
        from retrieval.index import Indexer
        from retrieval.keyword import Bm25Encoder

        # The Indexer's own tables, created as the bot creates them.
        indexer = Indexer(
            work / "baibao.sqlite3", store, PrecomputedEmbedder({}), Bm25Encoder(), None
        )
        await indexer.open()
        records = cls(indexer, await GraphDB.open(work / "baibao.sqlite3"), terms)
        async with indexer.db.execute("SELECT doc_id FROM corpus_documents") as cur:
            records.done = {str(r[0]) async for r in cur}
        return records

    async def write(self, doc_id: str, rows: list[tuple[str, Row]], sparse: list[Any]) -> None:
        """The document's graph rows now (their own transaction), its registry row and term
        counts at the next `commit`."""
        from retrieval import termstats
        from retrieval.graph.model import DocumentRows

        nodes, edges, mentions = graph_rows(rows, self.terms)
        first = rows[0][1]
        # Rows as given, added (a document redone after a kill writes the same rows again).
        mentioned = list(dict.fromkeys(mentions))
        doc_rows = DocumentRows(doc_id, nodes, edges, mentioned, title=first.source)
        await self.gdb.write(doc_rows, replace=False)
        counts = termstats.pack(termstats.count_terms(sparse))
        self._terms.append((doc_id, counts))
        self._registry.append(
            (doc_id, first.source, doc_id, first.author, first.era, first.type, len(rows))
        )

    async def commit(self) -> None:
        """The registry rows and term counts written since the last commit, in one
        transaction: a kill loses only those, and their documents are done again."""
        await self.db.executemany(
            "INSERT OR REPLACE INTO corpus_doc_terms (doc_id, terms) VALUES (?, ?)", self._terms
        )
        await self.db.executemany(
            "INSERT OR REPLACE INTO corpus_documents (doc_id, source, content_hash, author, "
            "era, type, language, chunk_count, ingested_at, gen, graph_gen, has_points) "
            "VALUES (?, ?, ?, ?, ?, ?, 'zh', ?, '2026-11-30T00:00:00+00:00', 1, 1, 1)",
            self._registry,
        )
        await self.db.commit()
        self.done.update(doc_id for doc_id, *_ in self._registry)
        self._terms.clear()
        self._registry.clear()

    async def sum_terms(self) -> int:
        """`corpus_term_df` as the sum of every document's counts (streamed, blob by blob)."""
        from retrieval import termstats

        total: Counter[int] = Counter()
        async with self.db.execute("SELECT terms FROM corpus_doc_terms") as cur:
            async for (blob,) in cur:
                total.update(termstats.unpack(blob))
        await self.db.execute("DELETE FROM corpus_term_df")
        await termstats.add(self.db, total)
        await self.db.commit()
        return len(total)

    async def close(self) -> None:
        await self.gdb.close()
        await self.indexer.close()


async def build(size: int, layout: str, work: Path) -> dict[str, Any]:
    from retrieval.graph import KnowledgeGraph
    from retrieval.keyword import Bm25Encoder
    from retrieval.store.edge import EdgeStore
    from retrieval.text import default_tokenizer
    from retrieval.types import IndexedChunk

    memory = PeakMemory()
    out: dict[str, Any] = {"size": size, "layout": layout}
    default_tokenizer().warm()
    encoder = Bm25Encoder()
    async with await KnowledgeGraph.open(None) as seed_graph:
        terms = seed_graph.query.term_index().terms
    store = await EdgeStore.open(work / "qdrant", DIM, layout_of(layout))
    records = await BuildRecords.open(work, store, terms)
    out["resumed_after_documents"] = len(records.done)
    rng = np.random.default_rng(7)
    sample = set(rng.choice(size, size=N_QUERIES * 3, replace=False).tolist())
    cents = np.random.default_rng(384).standard_normal((CENTROIDS, DIM)).astype(np.float32)
    cents /= np.linalg.norm(cents, axis=1, keepdims=True)
    noise_rng = np.random.default_rng(11)
    qrng = np.random.default_rng(99)
    queries: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    upsert_s = graph_s = 0.0
    batch: list[tuple[int, Row]] = []
    # The documents the stream is inside of (a document's chunks are contiguous).
    docs: dict[str, tuple[list[tuple[str, Row]], list[Any]]] = {}

    async def flush_batch() -> None:
        nonlocal upsert_s, graph_s
        rows = [r for _, r in batch]
        # Every batch draws its vectors and queries, written or not: a resumed build
        # continues the same stream.
        dense = vectors(rows, cents, noise_rng)
        for (i, r), d in zip(batch, dense, strict=True):
            if i in sample and len(queries) < N_QUERIES and len(r.tokens) >= 2:
                queries.append(make_query(r, d, len(queries), qrng))
        items = []
        for r, d in zip(rows, dense, strict=True):
            if r.doc_id in records.done:
                continue
            c = chunk_of(r)
            sparse = encoder.encode_tokens([*r.tokens, *r.refs])
            items.append(IndexedChunk(c, d.tolist(), sparse))
            held = docs.setdefault(r.doc_id, ([], []))
            held[0].append((c.id, r))
            held[1].append(sparse)
        t = time.perf_counter()
        await store.upsert(items)
        upsert_s += time.perf_counter() - t
        batch.clear()
        t = time.perf_counter()
        # A document is complete once the stream has moved past it.
        for doc_id in [d for d in docs if d != rows[-1].doc_id]:
            await records.write(doc_id, *docs.pop(doc_id))
        await records.commit()
        graph_s += time.perf_counter() - t

    last_report = time.perf_counter()
    for i, r in rows_stream(size, sample):
        batch.append((i, r))
        if len(batch) >= BATCH:
            await flush_batch()
        if time.perf_counter() - last_report > 60:
            last_report = time.perf_counter()
            print(
                f"  build: {i + 1:,}/{size:,} chunks, {time.perf_counter() - t0:.0f} s, "
                f"RSS {rss_mb():.0f} MB",
                flush=True,
            )
    if batch:
        await flush_batch()
    for doc_id in list(docs):
        await records.write(doc_id, *docs.pop(doc_id))
    await records.commit()
    out["terms"] = await records.sum_terms()
    out["upsert_s"] = upsert_s
    out["graph_rows_s"] = graph_s
    out["stream_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    await store.optimize()
    out["optimize_s"] = time.perf_counter() - t
    out["points"] = await store.count()
    out["segments"] = store.ops.shard.info().segments_count
    await store.close()
    await records.close()
    out["build_memory"] = memory.stop()
    out["build_peak_rss_mb"] = out["build_memory"]["vm_hwm_mb"]
    out["disk_mb"] = sum(p.stat().st_blocks * 512 for p in work.rglob("*") if p.is_file()) / 2**20  # noqa: ASYNC240
    (work / "queries.json").write_text(json.dumps(queries), encoding="utf-8")
    return out


async def write_term_counts(work: Path, counts: Counter[int]) -> None:
    """The keyword terms' chunk counts as the indexer keeps them (`retrieval.termstats`)."""
    import aiosqlite

    from retrieval import termstats

    async with aiosqlite.connect(work / "baibao.sqlite3") as db:
        await db.executescript(termstats.SCHEMA)
        await db.execute("DELETE FROM corpus_term_df")
        await termstats.add(db, counts)
        await db.commit()


async def count_terms(size: int, work: Path) -> dict[str, Any]:
    """`--phase df`: the term counts of a shard built before the build wrote them, from the
    same deterministic stream of rows."""
    from retrieval import termstats
    from retrieval.keyword import Bm25Encoder
    from retrieval.text import default_tokenizer

    default_tokenizer().warm()
    encoder = Bm25Encoder()
    t = time.perf_counter()
    counts: Counter[int] = Counter()
    for _, r in rows_stream(size, set()):
        counts.update(encoder.encode_tokens([*r.tokens, *r.refs]).indices)
    await write_term_counts(work, counts)
    common = sum(1 for n in counts.values() if n >= termstats.COMMON_DF)
    return {"terms": len(counts), "common": common, "s": time.perf_counter() - t}


# ---- query ------------------------------------------------------------------------------------


async def keyword_sweep(hs: Any, indexer: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """The keyword track with other thresholds for a common term (`termstats.COMMON_DF` is the
    shipped one): latency and how often the query's own chunk is in its top 10."""
    from retrieval import termstats

    out: dict[str, Any] = {}
    for min_df in (5_000, 10_000, 20_000, 50_000, 100_000):
        common = await termstats.common_terms(indexer.db, min_df)
        hs.common_terms = lambda _ns, common=common: common
        lat, found = [], []
        for q in queries:
            t = time.perf_counter()
            res = await hs.search(q["text"], tracks=("keyword",), limit=10)
            lat.append(time.perf_counter() - t)
            found.append(q.get("chunk") in {h.chunk.id for h in res.hits})
        out[str(min_df)] = {"common": len(common), "found": statistics.mean(found), **stats(lat)}
    hs.common_terms = None
    return out


async def soak_run(hs: Any, queries: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """`n` more fused searches, each new to the store: two stored queries' texts joined, the
    vector of one moved further away (so the dense track reaches other chunks). RSS every n/5:
    how the file-backed part grows as queries touch more of the shard."""
    from retrieval.text import search_form

    rng = np.random.default_rng(5)
    vectors = hs.embedder.vectors
    lat: list[float] = []
    trace: list[dict[str, float]] = []
    for i in range(n):
        a, b = (queries[int(k)] for k in rng.integers(0, len(queries), size=2))
        text = search_form(a["text"] + b["text"])
        v = np.asarray(a["vector"]) + 0.5 * rng.standard_normal(DIM) / math.sqrt(DIM)
        vectors[text] = (v / np.linalg.norm(v)).tolist()
        t = time.perf_counter()
        await hs.search(text, limit=6)
        lat.append(time.perf_counter() - t)
        if (i + 1) % max(1, n // 5) == 0:
            store = {f"store_{k}": v for k, v in store_status(hs.store).items()}
            trace.append({"queries": i + 1, **memory_status(), **store})
    return {"lat": stats(lat), "trace": trace}


async def searcher(work: Path, store: Any, embedder: Any, graph: Any) -> tuple[Any, Any]:
    """HybridSearch as the bench runs it (equal weights, k=60) and the open Indexer it takes
    the keyword terms' chunk counts from (the registry's database, as the bot opens it)."""
    from retrieval.index import Indexer
    from retrieval.keyword import Bm25Encoder
    from retrieval.search import HybridSearch
    from retrieval.synonyms import SynonymTable

    indexer = Indexer(work / "baibao.sqlite3", store, embedder, Bm25Encoder(), graph)
    await indexer.open()
    hs = HybridSearch(
        store,
        embedder,
        Bm25Encoder(),
        graph.query,
        SynonymTable.load(),
        weights=(1.0, 1.0, 1.0),
        k=60,
        common_terms=indexer.common_terms,
    )
    return hs, indexer


def fresh_queries(queries: list[dict[str, Any]], n: int, seed: int, embedder: Any) -> list[str]:
    """`n` queries no process has seen: two stored queries' texts joined, the vector of one
    moved further away (so the dense track reaches other chunks); registered with the
    precomputed embedder."""
    from retrieval.text import search_form

    rng = np.random.default_rng(seed)
    out: list[str] = []
    while len(out) < n:
        a, b = (queries[int(k)] for k in rng.integers(0, len(queries), size=2))
        text = search_form(a["text"] + b["text"])
        if text in embedder.vectors:
            continue
        v = np.asarray(a["vector"]) + 0.5 * rng.standard_normal(DIM) / math.sqrt(DIM)
        embedder.vectors[text] = (v / np.linalg.norm(v)).tolist()
        out.append(text)
    return out


async def timed_searches(hs: Any, texts: list[str], flt: Any = None) -> dict[str, float]:
    lat = []
    for text in texts:
        t = time.perf_counter()
        await hs.search(text, flt=flt, limit=6)
        lat.append(time.perf_counter() - t)
    return stats(lat)


def drop_page_cache() -> bool:
    """The kernel's page cache emptied (root only): the shard's pages come from the disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


async def first_seen(hs: Any, queries: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """Queries this process has never seen, without and with the 46 % filter."""
    plain = fresh_queries(queries, N_NEW, seed, hs.embedder)
    filtered = fresh_queries(queries, N_NEW, seed + 1, hs.embedder)
    return {
        "fused": await timed_searches(hs, plain),
        "fused+filter": await timed_searches(hs, filtered, FILTERS["type∈{book,message}"]),
    }


async def cold(hs: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """First-seen queries right after the page cache is dropped (once before each set)."""
    out: dict[str, Any] = {}
    for name, seed, flt in (("fused", 31, None), ("fused+filter", 37, "type∈{book,message}")):
        texts = fresh_queries(queries, N_NEW, seed, hs.embedder)
        if not drop_page_cache():
            return {"skipped": "not root: /proc/sys/vm/drop_caches is not writable"}
        out[name] = await timed_searches(hs, texts, FILTERS[flt] if flt else None)
    return out


async def concurrent(hs: Any, queries: list[dict[str, Any]], workers: int) -> dict[str, Any]:
    """`workers` searches at once, as that many /ask would run them: each worker takes the
    next query of three passes over the stored ones (each seen before: the warm case)."""
    todo = [q["text"] for _ in range(3) for q in queries]
    lat: list[float] = []

    async def worker() -> None:
        while todo:
            text = todo.pop()
            t = time.perf_counter()
            await hs.search(text, limit=6)
            lat.append(time.perf_counter() - t)

    start, before = time.perf_counter(), cpu_split(hs.store)
    await asyncio.gather(*(worker() for _ in range(workers)))
    wall = time.perf_counter() - start
    used = [after - then for after, then in zip(cpu_split(hs.store), before, strict=True)]
    return {
        "workers": workers,
        **stats(lat),
        "throughput_qps": len(lat) / wall,
        "cpu_ms_per_search": sum(used) / len(lat) * 1000,
        # Which process the CPU went to, and how many of the machine's cores were busy:
        # near all of them, throughput is bound by the CPU a search costs, not by waiting.
        "bot_cpu_ms_per_search": used[0] / len(lat) * 1000,
        "store_cpu_ms_per_search": used[1] / len(lat) * 1000,
        "cores_busy": sum(used) / wall,
        "cores": os.cpu_count() or 1,
    }


Label = str | Callable[..., str]


class Timeline:
    """Where a fused search's time goes: each step's start and end, ms from the search's
    start (median over the queries), stamped by wrapping this run's store, graph and search
    objects (the bench's own instruments; the product code is unchanged)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float]] = []
        self._restore: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, label: Label) -> None:
        method = getattr(owner, name)
        self._restore.append((owner, name, owner.__dict__.get(name)))
        events = self.events

        def named(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
            return label if isinstance(label, str) else label(*args, **kwargs)

        if asyncio.iscoroutinefunction(method):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                step = named(args, kwargs)
                events.append((step + " start", time.perf_counter()))
                try:
                    return await method(*args, **kwargs)
                finally:
                    events.append((step + " end", time.perf_counter()))

            setattr(owner, name, timed_async)
        else:

            def timed(*args: Any, **kwargs: Any) -> Any:
                step = named(args, kwargs)
                events.append((step + " start", time.perf_counter()))
                try:
                    return method(*args, **kwargs)
                finally:
                    events.append((step + " end", time.perf_counter()))

            setattr(owner, name, timed)

    def unwrap(self) -> None:
        for owner, name, original in reversed(self._restore):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._restore.clear()

    async def run(self, hs: Any, texts: list[str]) -> dict[str, Any]:
        stamps: dict[str, list[float]] = {}
        total = []
        for text in texts:
            self.events.clear()
            t0 = time.perf_counter()
            await hs.search(text, limit=6)
            total.append(time.perf_counter() - t0)
            first: dict[str, float] = {}
            for step, t in self.events:  # a step run several times: first start, last end
                if step.endswith("start"):
                    first.setdefault(step, t)
                else:
                    first[step] = t
            for step, t in first.items():
                stamps.setdefault(step, []).append((t - t0) * 1000)
        steps = {k: statistics.median(v) for k, v in stamps.items()}
        return {
            "fused": stats(total),
            "steps_ms": dict(sorted(steps.items(), key=lambda kv: kv[1])),
            "queries_with_step": {k: len(v) for k, v in stamps.items()},
        }


def _scroll_step(flt: Any = None, **_: Any) -> str:
    if flt is not None and flt.ids is not None:
        return "store.scroll(by id)"
    return "store.scroll(citing the verses)"


async def timeline(hs: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """A per-query timeline of the fused search: the store calls as this process sends and
    gets them back, the graph's link and walk, the evidence and fusion."""
    from retrieval import relevance, search

    tl = Timeline()
    tl.wrap(hs.store, "search_dense_and_sparse", "store.search_dense_and_sparse")
    tl.wrap(hs.store, "scroll", _scroll_step)
    tl.wrap(hs.graph, "link", "graph.link")
    tl.wrap(hs.graph, "walk", "graph.walk")
    tl.wrap(relevance.CoverageReader, "read", "evidence.read")
    tl.wrap(search._EvidenceReader, "evidence", "evidence.sum")
    tl.wrap(hs, "fuse", "fuse")
    try:
        return await tl.run(hs, [q["text"] for q in queries])
    finally:
        tl.unwrap()


async def open_for_queries(
    work: Path, layout: str, kind: str, out: dict[str, Any]
) -> tuple[Any, Any]:
    """The store and the graph opened as the bot opens them, timed. The graph is opened twice:
    from its rows (what a first start after writes costs, and what writes the snapshot), then
    as the bot opens it (from that snapshot)."""
    from retrieval.graph import KnowledgeGraph

    base = rss_mb()
    t = time.perf_counter()
    store = await open_store(kind, work, layout)
    out["open_store_s"] = time.perf_counter() - t
    out["rss_store_mb"] = rss_mb() - base + store_status(store).get("VmRSS", 0.0)
    t = time.perf_counter()
    rows = await KnowledgeGraph.open(work / "baibao.sqlite3", from_snapshot=False)
    out["open_graph_from_rows_s"] = time.perf_counter() - t
    await rows.close()
    del rows
    t, g_rss = time.perf_counter(), rss_mb()
    graph = await KnowledgeGraph.open(work / "baibao.sqlite3")
    out["open_graph_s"] = time.perf_counter() - t
    out["graph_from_snapshot"] = not graph.loaded_rows
    out["rss_graph_mb"] = rss_mb() - g_rss
    out["graph_stats"] = graph.stats()
    return store, graph


class HeldShare:
    """How many of the points the searches read came from the chunks this process holds
    (`retrieval.store.edge.HeldChunks`) since the last `since`, and how many were sent."""

    def __init__(self, store: Any) -> None:
        self._held = store.held
        self._last = self._counts()

    def _counts(self) -> tuple[int, int, int]:
        return self._held.hits, self._held.kept, self._held.misses

    def since(self) -> dict[str, float]:
        now = self._counts()
        hits, kept, misses = (a - b for a, b in zip(now, self._last, strict=True))
        self._last = now
        points = hits + kept + misses
        return {"held": hits, "sent": kept, "read_again": misses, "share": hits / max(points, 1)}


async def track_by_track(
    hs: Any, hs_all: Any, store: Any, queries: list[dict[str, Any]], out: dict[str, Any]
) -> None:
    """Each stored query: first seen (fused), each track alone, the keyword track with every
    term, fused again (seen: the repeated case), fused with the 46 % filter (first time)."""
    lat: dict[str, list[float]] = {
        k: []
        for k in (
            "fused first",
            "dense",
            "keyword",
            "keyword, every term",
            "graph",
            "fused",
            "fused+filter",
        )
    }
    # The chunk each query was drawn from, in the keyword track's top 10 and fused top 6: what
    # leaving out the common terms costs in ranking.
    found: dict[str, list[bool]] = {"keyword": [], "keyword, every term": [], "fused": []}
    # CPU time of both processes per fused search: the work a query costs, which the other
    # programs on a shared machine do not change, unlike its wall time.
    cpu: list[float] = []
    hits: dict[str, list[int]] = {"graph": [], "fused": []}
    type_filter = FILTERS["type∈{book,message}"]
    for q in queries:
        t = time.perf_counter()
        await hs.search(q["text"], limit=6)
        lat["fused first"].append(time.perf_counter() - t)
        for track in ("dense", "keyword", "graph"):
            t = time.perf_counter()
            res = await hs.search(q["text"], tracks=(track,), limit=10)
            lat[track].append(time.perf_counter() - t)
            if track == "graph":
                hits["graph"].append(len(res.hits))
            if track == "keyword":
                found["keyword"].append(q.get("chunk") in {h.chunk.id for h in res.hits})
        t = time.perf_counter()
        res = await hs_all.search(q["text"], tracks=("keyword",), limit=10)
        lat["keyword, every term"].append(time.perf_counter() - t)
        found["keyword, every term"].append(q.get("chunk") in {h.chunk.id for h in res.hits})
        t, c = time.perf_counter(), cpu_s(store)
        res = await hs.search(q["text"], limit=6)
        lat["fused"].append(time.perf_counter() - t)
        cpu.append(cpu_s(store) - c)
        hits["fused"].append(len(res.hits))
        found["fused"].append(q.get("chunk") in {h.chunk.id for h in res.hits})
        t = time.perf_counter()
        await hs.search(q["text"], flt=type_filter, limit=6)
        lat["fused+filter"].append(time.perf_counter() - t)
    out["lat"] = {k: stats(v) for k, v in lat.items()}
    out["fused_cpu"] = stats(cpu)
    out["hits_mean"] = {k: statistics.mean(v) for k, v in hits.items()}
    out["source_found"] = {k: statistics.mean(v) for k, v in found.items()}


async def recall(store: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """HNSW recall@10 against exact search (same filter) at the layout's own `hnsw_ef` and
    others, with each one's latency (the store's dense search alone)."""
    out: dict[str, Any] = {}
    for fname in ("none", "type∈{book,message}"):
        f = FILTERS[fname]
        exact = []
        for q in queries:
            res = await store.search_dense(q["vector"], flt=f, limit=10, exact=True)
            exact.append({h.chunk.id for h in res})
        for ef in (None, *EF_SWEEP):  # None: the layout's own
            rs, ls = [], []
            for q, ex in zip(queries, exact, strict=True):
                t = time.perf_counter()
                res = await store.search_dense(q["vector"], flt=f, limit=10, hnsw_ef=ef)
                ls.append(time.perf_counter() - t)
                rs.append(len({h.chunk.id for h in res} & ex) / len(ex) if ex else 1.0)
            out[f"{fname}|{ef or 'default'}"] = {"recall": statistics.mean(rs), **stats(ls)}
    return out


def serving_memory(store: Any, out: dict[str, Any]) -> None:
    """The bot's footprint for this library (both processes)."""
    out["status_serving"] = memory_status()
    out["rss_by_file_serving"] = rss_by_file()
    if (pid := store_pid(store)) is not None:
        out["status_serving_store_process"] = store_status(store)
        out["rss_by_file_serving_store_process"] = rss_by_file(pid=pid)
    out["rss_serving_total_mb"] = out["status_serving"]["VmRSS"] + store_status(store).get(
        "VmRSS", 0.0
    )


async def query(layout: str, work: Path, soak: int = 0, kind: str = "auto") -> dict[str, Any]:
    from bot.app import keep_what_start_up_built
    from retrieval.keyword import Bm25Encoder
    from retrieval.search import HybridSearch
    from retrieval.synonyms import SynonymTable
    from retrieval.text import default_tokenizer
    from retrieval.types import CORPUS_NAMESPACE

    kind = store_kind(kind, layout)
    out: dict[str, Any] = {"store": kind, "load_start": os.getloadavg()}
    queries = json.loads((work / "queries.json").read_text(encoding="utf-8"))
    store, graph = await open_for_queries(work, layout, kind, out)
    default_tokenizer().warm()
    embedder = PrecomputedEmbedder({q["text"]: q["vector"] for q in queries})
    hs, indexer = await searcher(work, store, embedder, graph)
    out["common_terms"] = len(indexer.common_terms(CORPUS_NAMESPACE))
    # The same search with every query term: the keyword track without term counts.
    hs_all = HybridSearch(store, embedder, Bm25Encoder(), graph.query, SynonymTable.load())
    for q in queries[:WARMUP]:
        await hs.search(q["text"])
    # What a serving bot does once it answers (`App.serving`): start-up's objects frozen.
    keep_what_start_up_built()
    # First, while the process is new: queries it has never seen.
    held = HeldShare(store)
    out["first_seen"] = await first_seen(hs, queries, seed=17)
    out["held_first_seen"] = held.since()
    await track_by_track(hs, hs_all, store, queries, out)
    out["held_track_by_track"] = held.since()
    out["concurrent"] = await concurrent(hs, queries, CONCURRENCY)
    out["held_concurrent"] = held.since()
    out["timeline"] = await timeline(hs, queries)
    out["keyword_by_common_df"] = await keyword_sweep(hs_all, indexer, queries)
    # The bot's footprint: after serving queries, before the recall check below reads every
    # original vector (exact search), which the bot never does.
    serving_memory(store, out)
    if soak:
        out["soak"] = await soak_run(hs, queries, soak)
        out["rss_by_file_soak"] = rss_by_file()
    out["cold"] = await cold(hs, queries)
    out["load_end"] = os.getloadavg()
    out["recall"] = await recall(store, queries)
    out["rss_now_mb"] = rss_mb()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["status"] = memory_status()  # after the exact searches too
    out["status_store_process"] = store_status(store)
    out["rss_by_file"] = rss_by_file()
    out["queries"] = len(queries)
    await indexer.close()
    await store.close()
    await graph.close()
    return out


async def ab(layout: str, work: Path, rounds: int) -> dict[str, Any]:
    """Fused searches (each query once to warm, then timed) with the shard in this process
    and in a child, alternating: the machine's drift falls on both alike."""
    from retrieval.graph import KnowledgeGraph
    from retrieval.text import default_tokenizer

    queries = json.loads((work / "queries.json").read_text(encoding="utf-8"))
    graph = await KnowledgeGraph.open(work / "baibao.sqlite3")
    default_tokenizer().warm()
    embedder = PrecomputedEmbedder({q["text"]: q["vector"] for q in queries})
    runs: dict[str, list[dict[str, Any]]] = {"thread": [], "process": []}
    top: dict[str, list[list[str]]] = {}
    for _ in range(rounds):
        for kind in runs:
            store = await open_store(kind, work, layout)
            hs, indexer = await searcher(work, store, embedder, graph)
            for q in queries:
                await hs.search(q["text"], limit=6)
            lat, ids = [], []
            c = cpu_s(store)
            for q in queries:
                t = time.perf_counter()
                res = await hs.search(q["text"], limit=6)
                lat.append(time.perf_counter() - t)
                ids.append([h.chunk.id for h in res.hits])
            cpu_ms = (cpu_s(store) - c) / len(queries) * 1000
            runs[kind].append({**stats(lat), "cpu_ms_per_search": cpu_ms})
            top.setdefault(kind, ids)
            await indexer.close()
            await store.close()
    await graph.close()

    def median(kind: str, key: str) -> float:
        return float(statistics.median(r[key] for r in runs[kind]))

    summary = {
        k: {key: median(k, key) for key in ("p50", "p95", "cpu_ms_per_search")} for k in runs
    }
    return {
        "rounds": runs,
        "median_of_rounds": summary,
        "p50_ratio_thread_over_process": summary["thread"]["p50"] / summary["process"]["p50"],
        "p95_ratio_thread_over_process": summary["thread"]["p95"] / summary["process"]["p95"],
        "same_top6": sum(a == b for a, b in zip(top["thread"], top["process"], strict=True)),
        "queries": len(queries),
    }


START_QUESTION = "神圣分赐与召会的关系是什么？"


def _first_answer(cmd: list[str], env: dict[str, str], stdin: str) -> dict[str, Any]:
    """Run `cmd` fed `stdin`; seconds from its start to the first line of the answer (the
    first line after the console's two-line banner for `chat`) and to its exit."""
    chat = "chat" in cmd
    t = time.perf_counter()
    process = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    if stdin:
        process.stdin.write(stdin)
        process.stdin.flush()
    answered = None
    skip = 2 if chat else 0  # the banner, Chinese and English
    for line in process.stdout:
        if skip:
            skip -= 1
            continue
        if answered is None and line.strip():
            answered = time.perf_counter() - t
            if chat:
                process.stdin.write("/quit\n")
                process.stdin.flush()
    process.stdin.close()
    err = process.stderr.read() if process.stderr else ""
    code = process.wait()
    return {
        "answer_s": answered,
        "exit_s": time.perf_counter() - t,
        "exit": code,
        "stderr_tail": err[-400:],
    }


def bot_start(work: Path, layout: str, runs: int = 3) -> dict[str, Any]:
    """The bot on this library, started fresh, `/ask` sent as it starts: seconds to the first
    line of its answer (`baibao chat`: the whole App with the writers' room, the default e5
    embedder, the store in its child, the graph, the start-up reconcile, no language model),
    and the same for `baibao ask`. Each `runs` times, alternating; one unmeasured start first
    (it may write the graph's snapshot)."""
    env = {
        **os.environ,
        "DATA_DIR": str(work),
        "SAMPLE_CORPUS": "false",
        "QDRANT_EDGE_LAYOUT": layout,
        "LLM_PROVIDER": "none",
        "LOG_LEVEL": "WARNING",
        # as on a terminal: each line when it is printed (a pipe would hold them until exit)
        "PYTHONUNBUFFERED": "1",
    }
    bot = [sys.executable, "-m", "bot.cli", "chat"]
    ask = [sys.executable, "-m", "bot.cli", "ask", START_QUESTION]
    _first_answer(ask, env, "")
    out: dict[str, Any] = {"question": START_QUESTION, "bot": [], "ask": []}
    for _ in range(runs):
        out["bot"].append(_first_answer(bot, env, f"/ask {START_QUESTION}\n"))
        out["ask"].append(_first_answer(ask, env, ""))
    return out


def child(
    phase: str, size: int, layout: str, work: Path, soak: int, kind: str, rounds: int
) -> None:
    runs = {
        "build": lambda: build(size, layout, work),
        "df": lambda: count_terms(size, work),
        "query": lambda: query(layout, work, soak, kind),
        "ab": lambda: ab(layout, work, rounds),
    }
    if phase == "start":
        result = bot_start(work, layout)
    else:
        result = asyncio.run(runs[phase]())
    (work / f"{phase}.json").write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def summary(result: dict[str, Any]) -> str:
    """The figures the targets are stated in, one per line."""
    lines = [f"load average before: {result.get('load_before')}"]

    def pq(figures: dict[str, Any]) -> str:
        return f"p50 {figures['p50']:.2f} / p95 {figures['p95']:.2f} ms"

    q = result.get("query")
    if q:
        lat = q["lat"]
        lines += [
            f"fused (repeated query): {pq(lat['fused'])}; CPU both processes {pq(q['fused_cpu'])}",
            f"fused, first time a stored query is seen: {pq(lat['fused first'])}",
            f"fused + 46 % filter (first time with the filter): {pq(lat['fused+filter'])}",
            f"first-seen ({N_NEW} new queries): {pq(q['first_seen']['fused'])}; "
            f"with the 46 % filter: {pq(q['first_seen']['fused+filter'])}",
            "points read from the chunks held in this process: "
            + ", ".join(
                f"{phase} {q[f'held_{phase}']['share']:.0%}"
                for phase in ("first_seen", "track_by_track", "concurrent")
                if f"held_{phase}" in q
            ),
        ]
        cold = q.get("cold", {})
        if "fused" in cold:
            lines.append(
                f"page cache dropped, new queries: {pq(cold['fused'])}; "
                f"with the filter: {pq(cold['fused+filter'])}"
            )
        c = q["concurrent"]
        lines += [
            f"{c['workers']} concurrent searches: {pq(c)}, {c['throughput_qps']:.0f} searches/s",
            f"  CPU a search: bot {c.get('bot_cpu_ms_per_search', math.nan):.2f} + store "
            f"process {c.get('store_cpu_ms_per_search', math.nan):.2f} ms; "
            f"{c.get('cores_busy', math.nan):.2f} of {c.get('cores', '?')} cores busy",
            f"dense / keyword / graph track p50: {lat['dense']['p50']:.2f} / "
            f"{lat['keyword']['p50']:.2f} / {lat['graph']['p50']:.2f} ms",
            "recall@10 vs exact: "
            + ", ".join(f"{k} {v['recall']:.3f}" for k, v in q["recall"].items()),
            f"RSS serving, both processes: {q['rss_serving_total_mb']:.0f} MB",
            f"open: store {q['open_store_s']:.2f} s, graph {q['open_graph_s']:.2f} s "
            f"(from its rows {q['open_graph_from_rows_s']:.2f} s)",
            "timeline (median ms from the search's start): "
            + ", ".join(f"{k} {v:.2f}" for k, v in q["timeline"]["steps_ms"].items()),
        ]
    start = result.get("start")
    if start:
        for kind in ("bot", "ask"):
            lines.append(
                f"{kind}: start to first answer: "
                + ", ".join(
                    f"{r['answer_s']:.2f} s (exit {r['exit']} at {r['exit_s']:.2f} s)"
                    if r["answer_s"] is not None
                    else f"no answer (exit {r['exit']})"
                    for r in start[kind]
                )
            )
    build = result.get("build")
    if build and "build_memory" in build:
        m = build["build_memory"]
        lines.append(
            f"build: peak RSS {m['vm_hwm_mb']:.0f} MB (anonymous {m['rss_anon_peak_mb']:.0f}, "
            f"file-backed {m['rss_file_peak_mb']:.0f}), {build.get('segments')} segments"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--layout", choices=("on-disk", "in-memory"), default="on-disk")
    ap.add_argument("--work", type=Path, default=None, help="keep the built shard here")
    ap.add_argument(
        "--phase", choices=("build", "df", "query", "start", "ab"), help=argparse.SUPPRESS
    )
    ap.add_argument(
        "--store",
        choices=("auto", "process", "thread"),
        default="auto",
        help="where the query phase keeps the shard (auto: as the bot does for the layout)",
    )
    ap.add_argument(
        "--ab-rounds", type=int, default=4, help="rounds of the thread/process comparison (0: none)"
    )
    ap.add_argument("--skip-build", action="store_true", help="query an existing --work dir")
    ap.add_argument(
        "--count-terms",
        action="store_true",
        help="first write the keyword terms' chunk counts (a shard built without them)",
    )
    ap.add_argument("--soak", type=int, default=0, help="then this many more fused searches")
    ap.add_argument(
        "--out", type=Path, default=None, help="results JSON (default bench/results/million-…)"
    )
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-million-"))
    if args.phase:
        child(args.phase, args.size, args.layout, work, args.soak, args.store, args.ab_rounds)
        return
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"load_before": os.getloadavg()}
    phases = ["query", "start"] if args.skip_build else ["build", "query", "start"]
    if args.count_terms:
        phases = ["df", *phases]
    if args.ab_rounds:
        phases.append("ab")
    for phase in phases:
        t = time.perf_counter()
        cmd = [
            sys.executable,
            __file__,
            "--phase",
            phase,
            "--size",
            str(args.size),
            "--layout",
            args.layout,
            "--work",
            str(work),
            "--soak",
            str(args.soak),
            "--store",
            args.store,
            "--ab-rounds",
            str(args.ab_rounds),
        ]
        subprocess.run(cmd, check=True)
        result[phase] = json.loads((work / f"{phase}.json").read_text(encoding="utf-8"))
        result[phase]["wall_s"] = time.perf_counter() - t
        result[f"load_after_{phase}"] = os.getloadavg()
    built = work / "build.json"
    if args.skip_build and built.exists():
        # The shard's own build numbers stay with the query numbers measured on it.
        result["build"] = json.loads(built.read_text(encoding="utf-8"))
        result["build"]["from_earlier_run"] = True
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = args.out or RESULTS / f"million-{args.size}-{args.layout}.json"
    target.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False, indent=1))
    print(summary(result))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
