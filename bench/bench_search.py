"""End-to-end search benchmark (issue 4): HybridSearch on Qdrant Edge vs the naive stack.

Corpus per size: CUV verses (Simplified via `search_form`, one document per chapter, each
verse citing itself) plus synthetic ~300-character Chinese chunks sampled from the CUV's own
jieba tokens (half from one CUV chapter, half from the whole-Bible unigram distribution, with
seed-graph concept labels sprinkled in and 0-3 verse citations), so BM25 statistics and the
graph track see realistic material.

Dense vectors: NOT real embeddings. A clustered mixture in 384-d: 500 random unit centroids;
every document gets a centroid and each chunk is `normalise(centroid + noise)` (cos to the
centroid ≈ 0.7); a query is a stored chunk's vector plus noise (cos ≈ 0.9 to it). Points of a
cluster are ≈ 0.5 apart, so top-10 is a genuine nearest-neighbour ranking, not i.i.d. ties.

Per size, each stack in its own process (RSS does not mix):
  ours : Indexer-style points (point ids, x_gen, BM25 sparse incl. verse ids) upserted
         into EdgeStore + optimize(); KnowledgeGraph in memory; HybridSearch with an Embedder
         whose embed_query returns the precomputed vector. Latency per track (HybridSearch
         with one track) and fused (all three), recall@10 of HNSW vs exact=True.
  naive: qdrant-client local mode (":memory:") for dense + sparse, rank_bm25.BM25Okapi for
         keyword, RRF in Python (dense 0.5 + keyword 0.2; no graph).

    nice .venv/bin/python bench/bench_search.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import math
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import percentile, rss_mb  # noqa: E402
from retrieval.graph import book_node_id, person_node_id, scripture_node_id  # noqa: E402
from retrieval.index import point_id  # noqa: E402
from retrieval.types import CORPUS_NAMESPACE, Chunk, Filter, IndexedChunk  # noqa: E402

DIM = 384
CENTROIDS = 500
NOISE = 1.0  # chunk = centroid + NOISE * unit-ish noise → cos(chunk, centroid) ≈ 0.71
QNOISE = 0.5  # query = chunk + QNOISE * noise → cos(query, chunk) ≈ 0.9
N_QUERIES = 50
CUV = ROOT / "ingest" / "samples" / "cuv-1919-traditional.tsv.gz"
CACHE = Path(tempfile.gettempdir()) / "bench-search-cuv.pkl"
TYPES = ("book", "message", "outline")
EFS: tuple[int | None, ...] = (None, 128, 256)


@dataclass(slots=True)
class Row:
    doc_id: str
    pos: int
    text: str  # display text
    search_text: str
    tokens: list[str]  # keyword tokens (without the verse ids)
    refs: tuple[str, ...]
    source: str
    type: str
    author: str
    era: str


# ---- corpus ---------------------------------------------------------------------------------


def cuv_verses() -> list[tuple[str, int, int, str, str, list[str]]]:
    """(book, chapter, verse, traditional, simplified, tokens), cached across workers."""
    if CACHE.exists():
        cached: list[tuple[str, int, int, str, str, list[str]]] = pickle.loads(CACHE.read_bytes())
        return cached
    from retrieval.text import search_form, tokenize

    out = []
    with gzip.open(CUV, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            book, ch, v, text = line.rstrip("\n").split("\t")
            s = search_form(text)
            out.append((book, int(ch), int(v), text, s, tokenize(s)))
    CACHE.write_bytes(pickle.dumps(out))
    return out


def books_zh() -> dict[str, str]:
    data = json.loads((ROOT / "retrieval" / "data" / "books.json").read_text(encoding="utf-8"))
    return {b["osis"]: b["zh_short"] for b in data["books"]}


def seed_concepts() -> list[str]:
    data = json.loads((ROOT / "retrieval" / "data" / "seed_graph.json").read_text("utf-8"))
    return [n["label"] for n in data["nodes"] if n["kind"] in ("concept", "topic")]


NT_FIRST = ("Matt", "Mark", "Luke", "John", "Acts", "Rom", "1Cor", "2Cor", "Gal", "Eph", "Phil")


def corpus(size: int) -> list[Row]:
    verses = cuv_verses()
    # Verses: all of them at 100k; at small sizes 80% of the budget, New Testament epistles first.
    order = sorted(range(len(verses)), key=lambda i: (verses[i][0] not in NT_FIRST, i))
    n_verses = min(len(verses), int(size * 0.8))
    keep = sorted(order[:n_verses])
    rows: list[Row] = []
    for i in keep:
        book, ch, v, trad, simp, toks = verses[i]
        osis = f"{book}.{ch}.{v}"
        rows.append(
            Row(
                f"cuv:{book}.{ch}",
                v,
                trad,
                simp,
                toks,
                (osis,),
                f"和合本·{book}",
                "footnote",
                "",
                "",
            )
        )
    # Synthetic chunks from CUV token statistics.
    vocab: dict[str, int] = {}
    occ: list[int] = []
    chapters: dict[tuple[str, int], list[int]] = {}
    ch_start: list[tuple[int, int, str, int]] = []
    for book, ch, v, _, _, toks in verses:
        key = (book, ch)
        if key not in chapters:
            chapters[key] = []
            ch_start.append((len(occ), 0, book, ch))
        chapters[key].append(v)
        for t in toks:
            occ.append(vocab.setdefault(t, len(vocab)))
    words = list(vocab)
    occ_arr = np.array(occ, dtype=np.int32)
    bounds = [s for s, *_ in ch_start] + [len(occ)]
    wlen = np.array([len(w) for w in words])
    concepts = seed_concepts()
    rng = np.random.default_rng(2026)
    n_syn = size - len(rows)
    authors = ("倪柝声", "李常受")
    for n in range(n_syn):
        doc = n // 20
        c = int(rng.integers(0, len(ch_start)))
        lo, hi = bounds[c], bounds[c + 1]
        local = occ_arr[rng.integers(lo, hi, size=250)]
        glob = occ_arr[rng.integers(0, len(occ_arr), size=250)]
        ids = np.where(rng.random(250) < 0.5, local, glob)
        cut = int(np.searchsorted(np.cumsum(wlen[ids]), 300)) + 1
        toks = [words[i] for i in ids[:cut]]
        if rng.random() < 0.3:
            for _ in range(int(rng.integers(1, 3))):
                toks.insert(
                    int(rng.integers(0, len(toks))), concepts[int(rng.integers(0, len(concepts)))]
                )
        parts = []
        for j, t in enumerate(toks):
            parts.append(t)
            if j % 8 == 7:
                parts.append("，" if j % 24 != 23 else "。")
        text = "".join(parts) + "。"
        _, _, book, ch = ch_start[c]
        vs = chapters[(book, ch)]
        k = int(rng.integers(0, 4))
        refs = tuple(
            dict.fromkeys(f"{book}.{ch}.{vs[int(rng.integers(0, len(vs)))]}" for _ in range(k))
        )
        rows.append(
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
            )
        )
    return rows


def chunk_of(r: Row) -> Chunk:
    pid = point_id(f"{r.doc_id}#{r.pos}", 1)
    return Chunk(
        id=pid,
        text=r.text,
        search_text=r.search_text,
        doc_id=r.doc_id,
        source=r.source,
        type=r.type,  # type: ignore[arg-type]
        chapter=r.doc_id.split(":", 1)[1],
        position=r.pos,
        author=r.author,
        era=r.era,
        scripture_refs=r.refs,
        namespace=CORPUS_NAMESPACE,
        ingested_at="2026-11-30T00:00:00+00:00",
        extra={"gen": 1},
    )


def dense_vectors(rows: list[Row]) -> np.ndarray:
    rng = np.random.default_rng(384)
    cents = rng.standard_normal((CENTROIDS, DIM)).astype(np.float32)
    cents /= np.linalg.norm(cents, axis=1, keepdims=True)
    cl = np.array([zlib.crc32(r.doc_id.encode()) % CENTROIDS for r in rows])
    noise = rng.standard_normal((len(rows), DIM)).astype(np.float32) / math.sqrt(DIM)
    v = cents[cl] + NOISE * noise
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


@dataclass(slots=True)
class Query:
    text: str
    vector: list[float]
    tokens: list[str]  # for BM25Okapi: tokenize(text) + verse ids


def make_queries(rows: list[Row], dense: np.ndarray) -> list[Query]:
    from retrieval.scripture import normalise_refs
    from retrieval.text import search_form, tokenize

    zh = books_zh()
    concepts = seed_concepts()
    rng = np.random.default_rng(99)
    out: list[Query] = []
    seen: set[str] = set()
    while len(out) < N_QUERIES:
        i = int(rng.integers(0, len(rows)))
        r = rows[i]
        if len(r.tokens) < 2:
            continue
        picks = sorted(
            rng.choice(
                len(r.tokens), size=min(len(r.tokens), int(rng.integers(2, 5))), replace=False
            )
        )
        text = "".join(r.tokens[int(p)] for p in picks)
        if len(out) % 3 == 0 and r.refs:  # a third of the queries cite a verse
            book, ch, v = r.refs[0].split(".")
            text += f" {zh[book]}{ch}:{v}"
        elif len(out) % 3 == 1:  # a third name a seed-graph concept
            text += concepts[int(rng.integers(0, len(concepts)))]
        text = search_form(text)
        if text in seen:
            continue
        seen.add(text)
        q = dense[i] + QNOISE * rng.standard_normal(DIM).astype(np.float32) / math.sqrt(DIM)
        q /= np.linalg.norm(q)
        out.append(Query(text, q.tolist(), tokenize(text) + list(normalise_refs(text))))
    return out


# ---- helpers --------------------------------------------------------------------------------


def pct(samples: list[float], q: float) -> float:
    """Percentile `q` (0..1) of durations in seconds, in milliseconds."""
    return percentile(samples, q * 100) * 1000


def stats(samples: list[float]) -> dict[str, float]:
    return {"p50": pct(samples, 0.5), "p95": pct(samples, 0.95), "n": len(samples)}


class PrecomputedEmbedder:
    """embed_query returns the vector precomputed for the (search-form) query text."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    @property
    def model_id(self) -> str:
        return "precomputed-clustered-384"

    @property
    def dim(self) -> int:
        return DIM

    async def embed_passages(self, texts: Any) -> list[list[float]]:
        raise NotImplementedError

    async def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]

    async def aclose(self) -> None:
        return None


def link_tokens(terms: Mapping[str, set[str]], tokens: list[str]) -> list[str]:
    found: dict[str, None] = {}
    for t in tokens:
        for node in sorted(terms.get(t, ())):
            found[node] = None
    return list(found)


def graph_rows(
    rows: list[tuple[str, Row]], terms: Mapping[str, set[str]]
) -> tuple[list[Any], list[Any], list[tuple[str, str]]]:
    """One document's graph rows as the indexer adds them (book, author 著作 book, verses,
    linked seed concepts), with link() on the chunk's tokens (the real link() scans characters:
    minutes at 100k × 300 chars; same nodes for tokens)."""
    from retrieval.graph import Edge, Node

    nodes: dict[str, Node] = {}
    edges: set[Edge] = set()
    mentions: list[tuple[str, str]] = []
    for cid, r in rows:
        book = book_node_id(r.source)
        nodes.setdefault(book, Node(book, "book", r.source))
        mentions.append((cid, book))
        if r.author:
            person = person_node_id(r.author)
            nodes.setdefault(person, Node(person, "person", r.author))
            edges.add(Edge(person, book, "著作"))
        for osis in r.refs:
            node = scripture_node_id(osis)
            nodes.setdefault(node, Node(node, "scripture", osis))
            mentions.append((cid, node))
        mentions.extend((cid, n) for n in link_tokens(terms, r.tokens))
    return list(nodes.values()), sorted(edges, key=lambda e: (e.src, e.dst)), mentions


# ---- ours -----------------------------------------------------------------------------------

FILTERS: dict[str, Filter | None] = {
    "none": None,
    "type∈{book,message}": Filter(equals={"type": ["book", "message"]}),
    "one source (书3)": Filter(equals={"source": "书3"}),
}


async def run_ours(size: int) -> dict[str, Any]:
    from retrieval.graph import KnowledgeGraph
    from retrieval.keyword import Bm25Encoder
    from retrieval.search import HybridSearch
    from retrieval.store.edge import EdgeStore
    from retrieval.synonyms import SynonymTable
    from retrieval.text import default_tokenizer

    out: dict[str, Any] = {}
    t = time.perf_counter()
    rows = corpus(size)
    dense = dense_vectors(rows)
    queries = make_queries(rows, dense)
    out["corpus_s"] = time.perf_counter() - t
    out["verses"] = sum(r.doc_id.startswith("cuv:") for r in rows)
    out["avg_chars_synthetic"] = statistics.mean(
        [len(r.text) for r in rows if r.doc_id.startswith("syn:")] or [0]
    )
    for name, f in FILTERS.items():
        out[f"sel:{name}"] = sum(
            1 for r in rows if f is None or f.matches(chunk_of(r).payload())
        ) / len(rows)
    default_tokenizer().warm()
    encoder = Bm25Encoder()

    tmp = Path(tempfile.mkdtemp(prefix="bench-search-"))
    base_rss = rss_mb()
    store = await EdgeStore.open(tmp / "qdrant", DIM)
    t0 = time.perf_counter()
    step = 1024
    for s in range(0, len(rows), step):
        items = []
        for r, d in zip(rows[s : s + step], dense[s : s + step], strict=True):
            c = chunk_of(r)
            items.append(IndexedChunk(c, d.tolist(), encoder.encode_tokens([*r.tokens, *r.refs])))
        await store.upsert(items)
    out["upsert_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    await store.optimize()
    out["optimize_s"] = time.perf_counter() - t0
    out["rss_store_mb"] = rss_mb() - base_rss

    # Knowledge graph: the Indexer's graph_contribution, with link() on the chunk's tokens
    # (the real link() scans characters: minutes at 100k × 300 chars; same nodes for tokens).
    g_rss = rss_mb()
    t0 = time.perf_counter()
    graph = await KnowledgeGraph.open(None)
    terms = graph.query.term_index().terms
    by_doc: dict[str, list[Row]] = {}
    for r in rows:
        by_doc.setdefault(r.doc_id, []).append(r)
    for doc_id, rs in by_doc.items():
        ids = [(point_id(f"{r.doc_id}#{r.pos}", 1), r) for r in rs]
        await graph.add(doc_id, *graph_rows(ids, terms))
    out["graph_s"] = time.perf_counter() - t0
    out["rss_graph_mb"] = rss_mb() - g_rss
    out["graph_stats"] = graph.stats()

    hs = HybridSearch(
        store,
        PrecomputedEmbedder({q.text: q.vector for q in queries}),
        encoder,
        graph.query,
        SynonymTable.load(),
    )
    for q in queries[:5]:  # warm-up
        await hs.search(q.text)
    lat: dict[str, list[float]] = {
        k: []
        for k in (
            "dense",
            "keyword",
            "graph",
            "fused",
            "fused+filter",
            "store_dense",
            "store_sparse",
        )
    }
    track_hits: dict[str, list[int]] = {"dense": [], "keyword": [], "graph": [], "fused": []}
    type_filter = FILTERS["type∈{book,message}"]
    for q in queries:
        for track in ("dense", "keyword", "graph"):
            t = time.perf_counter()
            res = await hs.search(q.text, tracks=(track,), limit=10)
            lat[track].append(time.perf_counter() - t)
            track_hits[track].append(len(res.hits))
        t = time.perf_counter()
        res = await hs.search(q.text, limit=6)
        lat["fused"].append(time.perf_counter() - t)
        track_hits["fused"].append(len(res.hits))
        t = time.perf_counter()
        await hs.search(q.text, flt=type_filter, limit=6)
        lat["fused+filter"].append(time.perf_counter() - t)
        t = time.perf_counter()
        await store.search_dense(q.vector, limit=30)
        lat["store_dense"].append(time.perf_counter() - t)
        sv = encoder.encode_query(q.text)
        t = time.perf_counter()
        await store.search_sparse(sv, limit=30)
        lat["store_sparse"].append(time.perf_counter() - t)
    out["lat"] = {k: stats(v) for k, v in lat.items()}
    out["hits_mean"] = {k: statistics.mean(v) for k, v in track_hits.items()}

    # Recall@10 of HNSW vs exact, per filter and hnsw_ef.
    recall: dict[str, Any] = {}
    for fname, f in FILTERS.items():
        exact_ids = []
        ex_lat = []
        for q in queries:
            t = time.perf_counter()
            hits = await store.search_dense(q.vector, flt=f, limit=10, exact=True)
            ex_lat.append(time.perf_counter() - t)
            exact_ids.append({h.chunk.id for h in hits})
        recall[f"{fname}|exact"] = {"recall": 1.0, **stats(ex_lat)}
        for ef in EFS:
            found: list[float] = []
            lats: list[float] = []
            for q, ex in zip(queries, exact_ids, strict=True):
                t = time.perf_counter()
                hits = await store.search_dense(q.vector, flt=f, limit=10, hnsw_ef=ef)
                lats.append(time.perf_counter() - t)
                found.append(
                    len({h.chunk.id for h in hits} & ex) / len(ex) if ex else float(not hits)
                )
            recall[f"{fname}|{ef or 'default'}"] = {"recall": statistics.mean(found), **stats(lats)}
    out["recall"] = recall
    out["rss_total_mb"] = rss_mb() - base_rss
    out["disk_mb"] = sum(p.stat().st_blocks * 512 for p in tmp.rglob("*") if p.is_file()) / 2**20  # noqa: ASYNC240
    await store.close()
    await graph.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return out


# ---- naive ----------------------------------------------------------------------------------


def run_naive(size: int, max_queries: int) -> dict[str, Any]:
    from qdrant_client import QdrantClient, models
    from rank_bm25 import BM25Okapi

    from retrieval.keyword import Bm25Encoder

    out: dict[str, Any] = {}
    rows = corpus(size)
    dense = dense_vectors(rows)
    queries = make_queries(rows, dense)[:max_queries]
    encoder = Bm25Encoder()
    base_rss = rss_mb()
    client = QdrantClient(location=":memory:")
    client.create_collection(
        "bench",
        vectors_config={"dense": models.VectorParams(size=DIM, distance=models.Distance.COSINE)},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    t0 = time.perf_counter()
    ids: list[str] = []
    for s in range(0, len(rows), 1000):
        points = []
        for r, d in zip(rows[s : s + 1000], dense[s : s + 1000], strict=True):
            c = chunk_of(r)
            sv = encoder.encode_tokens([*r.tokens, *r.refs])
            vec = {
                "dense": d.tolist(),
                "bm25": models.SparseVector(indices=list(sv.indices), values=list(sv.values)),
            }
            points.append(models.PointStruct(id=c.id, vector=vec, payload=c.payload()))
            ids.append(c.id)
        client.upsert("bench", points=points)
    out["upsert_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    bm25 = BM25Okapi([[*r.tokens, *r.refs] for r in rows])
    out["bm25okapi_build_s"] = time.perf_counter() - t0
    out["rss_mb"] = rss_mb() - base_rss
    ns = models.Filter(
        must=[
            models.FieldCondition(key="namespace", match=models.MatchValue(value=CORPUS_NAMESPACE))
        ]
    )
    lat: dict[str, list[float]] = {"dense": [], "keyword": [], "sparse": [], "fused": []}
    for q in queries:
        t = time.perf_counter()
        d_hits = client.query_points(
            "bench", query=q.vector, using="dense", query_filter=ns, limit=30
        ).points
        t1 = time.perf_counter()
        scores = bm25.get_scores(q.tokens)
        top = np.argpartition(-scores, 30)[:30]
        top = top[np.argsort(-scores[top])]
        k_ids = [ids[int(i)] for i in top if scores[int(i)] > 0]
        t2 = time.perf_counter()
        fused: dict[str, float] = {}
        for w, ranked in ((0.5, [str(p.id) for p in d_hits]), (0.2, k_ids)):
            for rank, cid in enumerate(ranked, 1):
                fused[cid] = fused.get(cid, 0.0) + w / (60 + rank)
        best = sorted(fused, key=lambda c: -fused[c])[:6]
        client.retrieve("bench", ids=best, with_payload=True)
        t3 = time.perf_counter()
        lat["dense"].append(t1 - t)
        lat["keyword"].append(t2 - t1)
        lat["fused"].append(t3 - t)
        sv = encoder.encode_query(q.text)
        t = time.perf_counter()
        client.query_points(
            "bench",
            query=models.SparseVector(indices=list(sv.indices), values=list(sv.values)),
            using="bm25",
            query_filter=ns,
            limit=30,
        )
        lat["sparse"].append(time.perf_counter() - t)
    out["lat"] = {k: stats(v) for k, v in lat.items()}
    out["queries"] = len(queries)
    return out


# ---- driver ---------------------------------------------------------------------------------


def worker(stack: str, size: int, max_queries: int) -> None:
    result = asyncio.run(run_ours(size)) if stack == "ours" else run_naive(size, max_queries)
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result, ensure_ascii=False))


def report(results: dict[int, dict[str, Any]], out: Path) -> str:
    L = [
        "# Search benchmark (issue 4): HybridSearch on Qdrant Edge vs the naive stack",
        "",
        "`nice .venv/bin/python bench/bench_search.py --sizes "
        + ",".join(str(s) for s in results)
        + "` on this machine (2 cores, shared with other engineers' jobs; load below).",
        "",
        "Corpus: CUV verses (Simplified via `search_form`, one document per chapter, type footnote, each verse",
        "citing itself) + synthetic ~300-character chunks sampled from the CUV's own jieba tokens",
        "(half from one CUV chapter, half from the Bible-wide unigram distribution; 30% carry",
        "seed-graph concept labels; 0-3 verse citations each). Dense vectors are a clustered",
        f"mixture, not real embeddings: {CENTROIDS} centroids, one per document (hash), chunk =",
        "normalise(centroid + noise) (cos to centroid ≈ 0.71, within-cluster ≈ 0.5), query = a",
        "stored chunk + noise (cos ≈ 0.9). Queries: 2-4 tokens of a random chunk; every third adds",
        "that chunk's verse reference (e.g. `弗1:10`), every third a seed-graph concept label, so the",
        "graph track has scripture and concept entry points.",
        "Our per-track and fused numbers are `HybridSearch.search` end to end (search_form,",
        "synonym expansion, jieba, store calls, graph walk + fetch, RRF, overlap merge) with an",
        "Embedder returning the precomputed query vector. Every query carries the namespace",
        "filter (HybridSearch always adds it; the naive stack gets the same).",
        "",
    ]
    for size, r in results.items():
        o, n = r["ours"], r["naive"]
        ol, nl = o["lat"], n["lat"]
        L += [
            f"## {size:,} chunks ({o['verses']:,} CUV verses + {size - o['verses']:,} synthetic, "
            f"avg {o['avg_chars_synthetic']:.0f} chars)",
            "",
            f"Load average before the workers: ours {r['load_ours']}, naive {r['load_naive']}.",
            "",
            "| | ours: HybridSearch on Qdrant Edge | naive: qdrant-client `:memory:` + BM25Okapi | naive / ours (p50) |",
            "|---|---|---|---|",
            f"| build | upsert {o['upsert_s']:.1f} s + optimize {o['optimize_s']:.1f} s "
            f"= **{o['upsert_s'] + o['optimize_s']:.1f} s**; graph {o['graph_s']:.1f} s "
            f"| upsert {n['upsert_s']:.1f} s; BM25Okapi {n['bm25okapi_build_s']:.1f} s | |",
        ]

        def row(
            label: str, ok: str | None, nk: str | None, ol: Any = ol, nl: Any = nl, L: list[str] = L
        ) -> None:
            a = f"{ol[ok]['p50']:.2f} / {ol[ok]['p95']:.2f} ms" if ok else "—"
            b = f"{nl[nk]['p50']:.1f} / {nl[nk]['p95']:.1f} ms" if nk else "—"
            ratio = f"×{nl[nk]['p50'] / ol[ok]['p50']:.0f}" if ok and nk else ""
            L.append(f"| {label} | {a} | {b} | {ratio} |")

        row("dense track p50 / p95", "dense", "dense")
        row(
            "keyword track p50 / p95 (ours: sparse BM25 on Edge; naive: BM25Okapi)",
            "keyword",
            "keyword",
        )
        row(
            "sparse: raw store query, top 30 (ours: Edge; naive: qdrant-client)",
            "store_sparse",
            "sparse",
        )
        row("dense: raw store query, top 30", "store_dense", None)
        row("graph track p50 / p95", "graph", None)
        row("**fused** p50 / p95 (ours 3 tracks; naive dense+BM25Okapi, RRF)", "fused", "fused")
        row("fused + filter type∈{book,message}", "fused+filter", None)
        L += [
            f"| RSS growth: store / graph / total; max RSS | {o['rss_store_mb']:.0f} / "
            f"{o['rss_graph_mb']:.0f} / {o['rss_total_mb']:.0f} MB; {o['maxrss_mb']:.0f} MB "
            f"| {n['rss_mb']:.0f} MB; {n['maxrss_mb']:.0f} MB | |",
            f"| on disk | {o['disk_mb']:.0f} MB | in memory | |",
            f"| queries measured | {ol['fused']['n']} | {nl['fused']['n']} | |",
            "",
            f"Mean hits per query: {', '.join(f'{k} {v:.1f}' for k, v in o['hits_mean'].items())} "
            f"(track-only searches asked for 10, fused for 6). Graph: {o['graph_stats']}.",
            "",
            "Recall@10 of the HNSW index vs `exact=True` (same filter), dense store query, "
            f"{N_QUERIES} queries:",
            "",
            "| filter (share of points) | exact p50 | ef default | ef 128 | ef 256 |",
            "|---|---|---|---|---|",
        ]
        for fname in FILTERS:
            rec = o["recall"]
            cells = []
            for ef in EFS:
                cell = rec[f"{fname}|{ef or 'default'}"]
                cells.append(f"{cell['recall']:.3f} @ {cell['p50']:.2f} ms")
            L.append(
                f"| {fname} ({o['sel:' + fname]:.1%}) | {rec[f'{fname}|exact']['p50']:.2f} ms | "
                + " | ".join(cells)
                + " |"
            )
        L.append("")
    text = "\n".join(L)
    out.write_text(text + "\n", encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument(
        "--naive-queries", type=int, default=0, help="cap (default 50 at 10k, 20 above)"
    )
    parser.add_argument("--stacks", default="ours,naive")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "search.md")
    parser.add_argument(
        "--json", type=Path, default=Path(tempfile.gettempdir()) / "bench-search.json"
    )
    parser.add_argument("--worker", nargs=2, metavar=("STACK", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        stack, size = args.worker[0], int(args.worker[1])
        worker(stack, size, args.naive_queries or (N_QUERIES if size <= 20_000 else 20))
        return
    cuv_verses()  # build the shared cache once
    results: dict[int, dict[str, Any]] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        results[size] = {}
        for stack in args.stacks.split(","):
            results[size][f"load_{stack}"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            cmd = [sys.executable, __file__, "--worker", stack, str(size)]
            if args.naive_queries:
                cmd += ["--naive-queries", str(args.naive_queries)]
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"{stack} @ {size} failed:\n{proc.stderr[-3000:]}")
            results[size][stack] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{stack:5} {size:>7}: {time.perf_counter() - t:6.1f} s", flush=True)
            print(json.dumps(results[size][stack], ensure_ascii=False), flush=True)
            args.json.write_text(json.dumps(results, ensure_ascii=False))
    if all("ours" in r and "naive" in r for r in results.values()):
        print(report(results, args.out))


if __name__ == "__main__":
    main()
