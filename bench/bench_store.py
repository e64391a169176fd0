"""Vector store benchmark: Qdrant Edge (EdgeStore) vs the naive stack.

Synthetic chunks (Chinese-ish text from a small vocabulary, random-normal 384-d normalised
dense vectors, BM25-style sparse vectors computed here), then per size:
  ours  : EdgeStore upsert + optimize, dense / sparse / Edge-native RRF queries with a filter,
          recall@10 of HNSW against exact=True, RSS;
  naive : qdrant-client local mode (QdrantClient(":memory:")) for dense and sparse, and
          rank-bm25's BM25Okapi for keyword, same filter.
Each (stack, size) runs in its own process so RSS numbers don't mix.

    nice .venv/bin/python bench/bench_store.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import percentile, rss_mb
from retrieval.types import Chunk, ChunkType, Filter, IndexedChunk, SparseVector

DIM = 384
BATCH = 1000
N_QUERIES = 50
CHARS = (
    "神人基督灵生命经纶分赐召会身体国度恩典真理信心盼望爱心圣别荣耀救恩复活十字架父子职事话语祷告"
)
TYPES: tuple[ChunkType, ...] = ("book", "message", "outline", "footnote")
K1, B = 1.2, 0.75
AVG_LEN = 55.0


def vocabulary(seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    words = {"".join(rng.choice(list(CHARS), size=int(rng.integers(2, 4)))) for _ in range(1200)}
    return sorted(words)[:800]


VOCAB = vocabulary()
# Zipf-like word frequencies, like real text.
WEIGHTS = 1.0 / np.arange(1, len(VOCAB) + 1) ** 0.9
WEIGHTS /= WEIGHTS.sum()


def term_index(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) & 0x7FFFFFFF


def doc_tokens(rng: np.random.Generator) -> list[str]:
    n = int(rng.integers(30, 80))
    return [VOCAB[i] for i in rng.choice(len(VOCAB), size=n, p=WEIGHTS)]


def bm25_doc(tokens: list[str]) -> SparseVector:
    tf = Counter(tokens)
    norm = K1 * (1 - B + B * len(tokens) / AVG_LEN)
    items = sorted((term_index(t), c * (K1 + 1) / (c + norm)) for t, c in tf.items())
    return SparseVector(tuple(i for i, _ in items), tuple(v for _, v in items))


def bm25_query(tokens: list[str]) -> SparseVector:
    idx = sorted({term_index(t) for t in tokens})
    return SparseVector(tuple(idx), tuple(1.0 for _ in idx))


def batch(start: int, size: int) -> tuple[list[Chunk], np.ndarray, list[list[str]]]:
    """Deterministic batch of chunks, their dense vectors and tokens."""
    rng = np.random.default_rng(1_000_003 + start)
    dense = rng.standard_normal((size, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    chunks, tokens = [], []
    for n in range(start, start + size):
        toks = doc_tokens(rng)
        text = "".join(toks)
        chunks.append(
            Chunk(
                id=str(uuid.UUID(int=n + 1)),
                text=text,
                search_text=text,
                doc_id=f"doc{n // 50}",
                source=f"书{n // 500}",
                type=TYPES[n % 4],
                position=n,
                era=("nee", "lee")[n % 2],
                scripture_refs=(f"Eph.1.{n % 23 + 1}",),
                extra={"version": n % 3},
            )
        )
        tokens.append(toks)
    return chunks, dense, tokens


def queries(size: int) -> tuple[np.ndarray, list[list[str]]]:
    """Dense queries near random stored vectors; keyword queries of 2-4 vocabulary words."""
    rng = np.random.default_rng(99)
    qs, toks = [], []
    for _ in range(N_QUERIES):
        n = int(rng.integers(0, size))
        start = n - n % BATCH
        _, dense, doc_toks = batch(start, min(BATCH, size - start))
        v = dense[n - start] + 0.6 * rng.standard_normal(DIM).astype(np.float32) / math.sqrt(DIM)
        qs.append(v / np.linalg.norm(v))
        words = doc_toks[n - start]
        toks.append([words[int(i)] for i in rng.choice(len(words), size=int(rng.integers(2, 5)))])
    return np.stack(qs), toks


FILTER = Filter(
    equals={"type": ["book", "message"], "namespace": "corpus"}, ranges={"x_version": (0, 1)}
)


def filter_ok(chunk: Chunk) -> bool:
    return FILTER.matches(chunk.payload())


def pct(samples: list[float], q: float) -> float:
    """Percentile `q` (0..1) of durations in seconds, in milliseconds."""
    return percentile(samples, q * 100) * 1000


async def run_ours(size: int) -> dict[str, Any]:
    from retrieval.store.edge import EdgeStore

    tmp = Path(tempfile.mkdtemp(prefix="bench-edge-"))
    base_rss = rss_mb()
    store = await EdgeStore.open(tmp / "qdrant", DIM)
    t0 = time.perf_counter()
    for start in range(0, size, BATCH):
        chunks, dense, tokens = batch(start, min(BATCH, size - start))
        await store.upsert(
            [IndexedChunk(c, d, bm25_doc(t)) for c, d, t in zip(chunks, dense, tokens, strict=True)]
        )
    t_upsert = time.perf_counter() - t0
    t1 = time.perf_counter()
    await store.optimize()
    t_opt = time.perf_counter() - t1
    qv, qt = queries(size)
    out: dict[str, Any] = {"upsert_s": t_upsert, "optimize_s": t_opt}
    for q in qv[:5]:  # warm-up
        await store.search_dense(q, flt=FILTER, limit=10)
    lat: dict[str, list[float]] = {"dense": [], "sparse": [], "hybrid": []}
    recall = []
    for q, toks in zip(qv, qt, strict=True):
        sv = bm25_query(toks)
        t = time.perf_counter()
        hits = await store.search_dense(q, flt=FILTER, limit=10)
        lat["dense"].append(time.perf_counter() - t)
        t = time.perf_counter()
        await store.search_sparse(sv, flt=FILTER, limit=10)
        lat["sparse"].append(time.perf_counter() - t)
        t = time.perf_counter()
        await store.search_hybrid(q, sv, flt=FILTER, limit=10)
        lat["hybrid"].append(time.perf_counter() - t)
        exact = await store.search_dense(q, flt=FILTER, limit=10, exact=True)
        assert all(filter_ok(h.chunk) for h in hits)
        recall.append(len({h.chunk.id for h in hits} & {h.chunk.id for h in exact}) / 10)
    for name, samples in lat.items():
        out[f"{name}_p50_ms"] = pct(samples, 0.5)
        out[f"{name}_p95_ms"] = pct(samples, 0.95)
    out["recall_at_10"] = statistics.mean(recall)
    out["rss_mb"] = rss_mb() - base_rss
    out["disk_mb"] = sum(f.stat().st_blocks * 512 for f in tmp.rglob("*") if f.is_file()) / 2**20  # noqa: ASYNC240
    t = time.perf_counter()
    await store.close()
    out["close_s"] = time.perf_counter() - t
    t = time.perf_counter()
    store = await EdgeStore.open(tmp / "qdrant", DIM)
    out["reopen_s"] = time.perf_counter() - t
    await store.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_naive(size: int, max_queries: int) -> dict[str, Any]:
    from qdrant_client import QdrantClient, models
    from rank_bm25 import BM25Okapi

    base_rss = rss_mb()
    client = QdrantClient(location=":memory:")
    client.create_collection(
        "bench",
        vectors_config={"dense": models.VectorParams(size=DIM, distance=models.Distance.COSINE)},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    corpus_tokens: list[list[str]] = []
    payload_ok: list[bool] = []
    t0 = time.perf_counter()
    for start in range(0, size, BATCH):
        chunks, dense, tokens = batch(start, min(BATCH, size - start))
        points = []
        for c, d, toks in zip(chunks, dense, tokens, strict=True):
            sv = bm25_doc(toks)
            vec = {
                "dense": d.tolist(),
                "bm25": models.SparseVector(indices=list(sv.indices), values=list(sv.values)),
            }
            points.append(models.PointStruct(id=c.id, vector=vec, payload=c.payload()))
        client.upsert("bench", points=points)
        corpus_tokens.extend(tokens)
        payload_ok.extend(filter_ok(c) for c in chunks)
    t_upsert = time.perf_counter() - t0
    t1 = time.perf_counter()
    bm25 = BM25Okapi(corpus_tokens)
    t_bm25 = time.perf_counter() - t1
    mask = np.array(payload_ok)
    qfilter = models.Filter(
        must=[
            models.FieldCondition(key="type", match=models.MatchAny(any=["book", "message"])),
            models.FieldCondition(key="namespace", match=models.MatchValue(value="corpus")),
            models.FieldCondition(key="x_version", range=models.Range(gte=0, lte=1)),
        ]
    )
    qv, qt = queries(size)
    lat: dict[str, list[float]] = {"dense": [], "sparse": [], "bm25okapi": []}
    for q, toks in list(zip(qv, qt, strict=True))[:max_queries]:
        sv = bm25_query(toks)
        t = time.perf_counter()
        client.query_points(
            "bench", query=q.tolist(), using="dense", query_filter=qfilter, limit=10
        )
        lat["dense"].append(time.perf_counter() - t)
        t = time.perf_counter()
        client.query_points(
            "bench",
            query=models.SparseVector(indices=list(sv.indices), values=list(sv.values)),
            using="bm25",
            query_filter=qfilter,
            limit=10,
        )
        lat["sparse"].append(time.perf_counter() - t)
        t = time.perf_counter()
        scores = bm25.get_scores(toks)
        scores = np.where(mask, scores, -np.inf)
        np.argpartition(-scores, 10)[:10]
        lat["bm25okapi"].append(time.perf_counter() - t)
    out: dict[str, Any] = {
        "upsert_s": t_upsert,
        "bm25okapi_build_s": t_bm25,
        "queries": len(lat["dense"]),
    }
    for name, samples in lat.items():
        out[f"{name}_p50_ms"] = pct(samples, 0.5)
        out[f"{name}_p95_ms"] = pct(samples, 0.95)
    out["rss_mb"] = rss_mb() - base_rss
    return out


def worker(stack: str, size: int, max_queries: int) -> None:
    result = asyncio.run(run_ours(size)) if stack == "ours" else run_naive(size, max_queries)
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def report(results: dict[int, dict[str, dict[str, Any]]], out: Path) -> str:
    lines = [
        "# Vector store benchmark",
        "",
        "`nice .venv/bin/python bench/bench_store.py --sizes "
        + ",".join(str(s) for s in results)
        + "` on this machine (2 cores). Synthetic Chinese-ish chunks, 384-d random-normal",
        "normalised dense vectors, client-side BM25 sparse vectors; every query carries the filter",
        "`type ∈ {book, message} ∧ namespace = corpus ∧ 0 ≤ x_version ≤ 1` (≈ 33% of points).",
        f"{N_QUERIES} queries per track for ours; the naive stack is capped (see `queries`).",
        "RSS is the growth of the worker process's resident set over the run.",
        "",
    ]
    for size, r in results.items():
        o, n = r["ours"], r["naive"]
        lines += [
            f"## {size:,} chunks",
            "",
            "| | Qdrant Edge (EdgeStore) | naive: qdrant-client local + rank-bm25 | naive / ours |",
            "|---|---|---|---|",
            f"| build | upsert {o['upsert_s']:.1f} s + optimize (HNSW) {o['optimize_s']:.1f} s "
            f"| upsert {n['upsert_s']:.1f} s; BM25Okapi {n['bm25okapi_build_s']:.1f} s | |",
        ]
        for track, naive_key in (("dense", "dense"), ("sparse", "sparse"), ("sparse", "bm25okapi")):
            label = "keyword (rank-bm25)" if naive_key == "bm25okapi" else track
            ratio = n[f"{naive_key}_p50_ms"] / max(o[f"{track}_p50_ms"], 1e-6)
            lines.append(
                f"| {label} p50 / p95 | {o[f'{track}_p50_ms']:.2f} / {o[f'{track}_p95_ms']:.2f} ms "
                f"| {n[f'{naive_key}_p50_ms']:.1f} / {n[f'{naive_key}_p95_ms']:.1f} ms | ×{ratio:.0f} |"
            )
        lines += [
            f"| fused dense+sparse (Edge RRF, one call) p50 / p95 | {o['hybrid_p50_ms']:.2f} / "
            f"{o['hybrid_p95_ms']:.2f} ms | — | |",
            f"| recall@10, HNSW vs exact | {o['recall_at_10']:.3f} | exact (brute force) | |",
            f"| RSS growth / max RSS | {o['rss_mb']:.0f} / {o['maxrss_mb']:.0f} MB "
            f"| {n['rss_mb']:.0f} / {n['maxrss_mb']:.0f} MB | |",
            f"| on disk; close; reopen | {o['disk_mb']:.0f} MB; {o['close_s']:.2f} s; {o['reopen_s']:.2f} s | in memory | |",
            f"| queries measured | {N_QUERIES} | {n['queries']} | |",
            "",
        ]
    text = "\n".join(lines)
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
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "store.md")
    parser.add_argument("--worker", nargs=2, metavar=("STACK", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        stack, size = args.worker[0], int(args.worker[1])
        worker(stack, size, args.naive_queries or (N_QUERIES if size <= 20_000 else 20))
        return
    results: dict[int, dict[str, dict[str, Any]]] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        results[size] = {}
        for stack in ("ours", "naive"):
            cmd = [sys.executable, __file__, "--worker", stack, str(size)]
            if args.naive_queries:
                cmd += ["--naive-queries", str(args.naive_queries)]
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"{stack} @ {size} failed:\n{proc.stderr[-3000:]}")
            results[size][stack] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"{stack:5} {size:>7}: {time.perf_counter() - t:6.1f} s  {results[size][stack]}",
                flush=True,
            )
    print(report(results, args.out))


if __name__ == "__main__":
    main()
