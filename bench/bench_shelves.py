"""Shelves and search speed (issue 39): at 100k chunks in the shared library with 100 shelves
of 1,000 chunks each, the fused p95 must stay within 1.2x of the same library without shelves.

Built the way `bench/bench_search.py` builds its 100k corpus (CUV verses and synthetic chunks
from their token statistics, clustered 384-d vectors, BM25 over jieba tokens, the graph
contributions the indexer adds), in the store the bot runs by default (Qdrant Edge in its
own process, `EdgeProcessStore`: the process whose single-namespace fast path skips the
namespace condition). Two stores, side by side in one process, queried in turns:

- `no shelves`: the 100k shared chunks alone; queries read the shared library (the store
  holds one namespace: the fast path applies);
- `100 shelves`: the same 100k plus 100 shelves of 1,000 chunks (in documents of 50 chunks,
  each growing a concept of its own in the graph); each query is asked from one of the 100
  chats (a random one): it reads the shared library and that chat's shelf, and its graph hides
  the 99 other shelves' growth (`KnowledgeGraph.seen_without`); the same queries are also
  asked from a chat with no shelf (the shared library, every shelf hidden).

The graph views are built once before timing (the first query of each chat builds its own;
the time is reported). Queries: `bench_search.make_queries`, each asked `--rounds` times per
store, interleaved.

    nice .venv/bin/python bench/bench_shelves.py --size 100000 --shelves 100 --shelf-chunks 1000
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_search import (  # noqa: E402
    DIM,
    PrecomputedEmbedder,
    Row,
    chunk_of,
    corpus,
    dense_vectors,
    graph_rows,
    make_queries,
    stats,
)
from retrieval.index import point_id  # noqa: E402
from retrieval.library import SHARED, Reading, shelf_namespace  # noqa: E402
from retrieval.types import Chunk, IndexedChunk  # noqa: E402

DOC_CHUNKS = 50  # chunks per shelf document


def place_on_shelves(rows: list[Row], shelves: int, per_shelf: int) -> list[tuple[str, Row]]:
    """(namespace, row): synthetic chunks like the shared ones, in shelf documents of
    DOC_CHUNKS chunks."""
    out = []
    for i, r in enumerate(rows[: shelves * per_shelf]):
        namespace = shelf_namespace(f"telegram:-{1000 + i // per_shelf}")
        r.doc_id = f"{namespace}/doc-{(i % per_shelf) // DOC_CHUNKS}"
        r.pos = i % DOC_CHUNKS
        r.source = f"书架{i // per_shelf}·{(i % per_shelf) // DOC_CHUNKS}"
        out.append((namespace, r))
    return out


def chunk_in(namespace: str, r: Row) -> Chunk:
    return dataclasses.replace(chunk_of(r), namespace=namespace)


async def build(
    path: Path, rows: list[tuple[str, Row]], dense: np.ndarray, graph: Any, encoder: Any
) -> Any:
    from retrieval.store.edge_process import EdgeProcessStore

    store = await EdgeProcessStore.open(path, DIM)
    started = time.perf_counter()
    step = 1024
    for s in range(0, len(rows), step):
        items = [
            IndexedChunk(chunk_in(ns, r), d.tolist(), encoder.encode_tokens([*r.tokens, *r.refs]))
            for (ns, r), d in zip(rows[s : s + step], dense[s : s + step], strict=True)
        ]
        await store.upsert(items)
    await store.optimize()
    terms = graph.query.term_index().terms
    by_doc: dict[str, list[Row]] = {}
    for _, r in rows:
        by_doc.setdefault(r.doc_id, []).append(r)
    concepts = sorted(terms)
    rng = random.Random(7)
    from retrieval.graph import Edge, Node

    for doc_id, rs in by_doc.items():
        ids = [(point_id(f"{r.doc_id}#{r.pos}", 1), r) for r in rs]
        nodes, edges, mentions = graph_rows(ids, terms)
        if doc_id.startswith("shelf:"):  # a concept this shelf's document grew
            own = f"concept:{doc_id}"
            known = next(iter(terms[concepts[rng.randrange(len(concepts))]]))
            nodes = [*nodes, Node(own, "concept", f"书架概念{doc_id[-12:]}")]
            edges = [*edges, Edge(own, known, "相关")]
            mentions = [*mentions, *((cid, own) for cid, _ in ids[:5])]
        await graph.add(doc_id, nodes, edges, mentions, title=rs[0].source)
    print(f"built {path.name}: {len(rows)} chunks in {time.perf_counter() - started:.0f} s")
    return store


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from retrieval.graph import KnowledgeGraph
    from retrieval.keyword import Bm25Encoder
    from retrieval.search import HybridSearch
    from retrieval.synonyms import SynonymTable
    from retrieval.text import default_tokenizer

    rows = corpus(args.size + args.shelves * args.shelf_chunks)  # the same first `size` rows
    shared = [(SHARED, r) for r in rows[: args.size]]
    dense_shared = dense_vectors([r for _, r in shared])
    queries = make_queries([r for _, r in shared], dense_shared)
    on_shelves = place_on_shelves(rows[args.size :], args.shelves, args.shelf_chunks)
    dense_shelves = dense_vectors([r for _, r in on_shelves])
    default_tokenizer().warm()
    encoder = Bm25Encoder()
    tmp = Path(tempfile.mkdtemp(prefix="bench-shelves-"))
    plain_graph = await KnowledgeGraph.open(None)
    shelf_graph = await KnowledgeGraph.open(None)
    plain = await build(tmp / "plain", shared, dense_shared, plain_graph, encoder)
    both = np.concatenate([dense_shared, dense_shelves])
    shelved = await build(tmp / "shelves", shared + on_shelves, both, shelf_graph, encoder)
    vectors = PrecomputedEmbedder({q.text: q.vector for q in queries})
    synonyms = SynonymTable.load()
    searches = {
        "no shelves": HybridSearch(plain, vectors, encoder, plain_graph.query, synonyms),
        "100 shelves": HybridSearch(
            shelved, vectors, encoder, shelf_graph.query, synonyms, views=shelf_graph
        ),
    }
    docs_of: dict[str, set[str]] = {}
    for ns, r in on_shelves:
        docs_of.setdefault(ns, set()).add(r.doc_id)
    every = frozenset(d for ds in docs_of.values() for d in ds)
    readings = {
        ns: Reading((SHARED, ns), every - frozenset(docs), ns) for ns, docs in docs_of.items()
    }
    no_shelf = Reading((SHARED,), every, "")
    started = time.perf_counter()
    for reading in [*readings.values(), no_shelf]:
        await shelf_graph.seen_without(reading.hidden)
    views_s = time.perf_counter() - started

    rng = random.Random(2026)
    lat: dict[str, list[float]] = {"no shelves": [], "100 shelves": [], "no shelf, 100 hidden": []}
    names = sorted(readings)
    for q in queries[:5]:  # warm-up
        for name, search in searches.items():
            await search.search(q.text, reading=no_shelf if name != "no shelves" else None)
    for _ in range(args.rounds):
        for q in queries:
            t = time.perf_counter()
            await searches["no shelves"].search(q.text, limit=6)
            lat["no shelves"].append(time.perf_counter() - t)
            reading = readings[names[rng.randrange(len(names))]]
            t = time.perf_counter()
            await searches["100 shelves"].search(q.text, limit=6, reading=reading)
            lat["100 shelves"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await searches["100 shelves"].search(q.text, limit=6, reading=no_shelf)
            lat["no shelf, 100 hidden"].append(time.perf_counter() - t)
    sole_plain = await _sole(plain)
    sole_shelved = await _sole(shelved)
    await plain.close()
    await shelved.close()
    shutil.rmtree(tmp, ignore_errors=True)
    out = {name: stats(v) for name, v in lat.items()}
    ratio = out["100 shelves"]["p95"] / out["no shelves"]["p95"]
    return {
        "shared_chunks": args.size,
        "shelves": args.shelves,
        "shelf_chunks": args.shelf_chunks,
        "queries": len(queries) * args.rounds,
        "fused_ms": out,
        "p95_ratio_shelves_vs_none": round(ratio, 3),
        "within_1_2x": ratio <= 1.2,
        "graph_views_built_s": round(views_s, 2),
        "store_sole_namespace": {"no shelves": sole_plain, "100 shelves": sole_shelved},
    }


async def _sole(store: Any) -> str | None:
    """The namespace every point of the store is in (None: several): the fast path's test,
    asked of the store's process."""
    from retrieval.types import Filter

    total = await store.count()
    shared = await store.count(Filter(equals={"namespace": SHARED}))
    return SHARED if total == shared else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shelves", type=int, default=100)
    parser.add_argument("--shelf-chunks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/shelves-100k.json")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps(result, ensure_ascii=False, indent=2))
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
