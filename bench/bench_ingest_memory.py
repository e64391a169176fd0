"""`baibao ingest` at library scale: how its memory grows with the chunks written (issue 25).

The ingest pipeline as `baibao ingest DIR` runs it — loaders, chunkers, the Indexer (registry,
keyword-term counts), the growing knowledge graph, the Qdrant Edge shard in its own process
with the on-disk layout (segments bounded by `Layout.segment_points`), and `optimize()` at
the end — over synthetic Chinese Markdown (bench_ingest's original random text). The one
difference is the embedder: a hash embedder (384-d) stands in for e5, which runs at about one
chunk a second here and would take days; the embedder holds no state that grows.

Reported: chunks written, seconds, and the peak RSS (anonymous and file-backed) of the ingest
process and of the store's process, sampled every half second, at each tenth of the run.

    nice .venv/bin/python bench/bench_ingest_memory.py --chunks 100000 --work /work/perf/ing100k
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_ingest import synthetic_markdown  # noqa: E402
from bench.bench_million import memory_status  # noqa: E402

DOC_KB = 200  # per synthetic document: ~450 chunks


class Sampler:
    """Peak RSS of this process and of `pids()` (the store's process), every half second."""

    def __init__(self, pids: Any) -> None:
        self.pids = pids
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

    def sample(self) -> None:
        for who, pid in (("ingest", "self"), *(("store", p) for p in self.pids())):
            try:
                status = memory_status(pid)
            except OSError:
                continue
            for key in ("VmRSS", "RssAnon", "RssFile"):
                name = f"{who}_{key}"
                self.peak[name] = max(self.peak.get(name, 0.0), status.get(key, 0.0))

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self.sample()
        return dict(self.peak)


async def run(chunks: int, work: Path) -> dict[str, Any]:
    from ingest.manifest import DocMeta, Manifest
    from ingest.pipeline import Pipeline
    from retrieval.fakes import HashEmbedder
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import Indexer
    from retrieval.keyword import Bm25Encoder
    from retrieval.store.edge import ON_DISK
    from retrieval.store.edge_process import EdgeProcessStore

    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    store = await EdgeProcessStore.open(work / "qdrant", 384, ON_DISK)
    sampler = Sampler(lambda: [store.pid])
    # growth=False: books, authors, verses and mentions of the seed concepts, no new concepts
    # (growing them runs jieba statistics over every document: ~20 chunks/s here)
    graph = await KnowledgeGraph.open(work / "baibao.sqlite3", growth=False)
    out: dict[str, Any] = {"chunks_target": chunks, "load_before": os.getloadavg(), "steps": []}
    t0 = time.perf_counter()
    async with Indexer(
        work / "baibao.sqlite3", store, HashEmbedder(384), Bm25Encoder(), graph
    ) as indexer:
        pipeline = Pipeline(indexer)
        written, doc = 0, 0
        while written < chunks:
            path = corpus / f"doc-{doc:05d}.md"
            path.write_text(synthetic_markdown(DOC_KB * 1024, doc), encoding="utf-8")
            summary = await pipeline.ingest_paths(
                [path], manifest=Manifest({}, DocMeta(type="message"))
            )
            path.unlink()
            written += summary.chunks
            doc += 1
            if written * 10 // chunks > len(out["steps"]):
                out["steps"].append(
                    {"chunks": written, "s": time.perf_counter() - t0, **sampler.stop()}
                )
                sampler = Sampler(lambda: [store.pid])
        t = time.perf_counter()
        await store.optimize()
        out["optimize_s"] = time.perf_counter() - t
    out["chunks"] = written
    out["documents"] = doc
    out["s"] = time.perf_counter() - t0
    out["peak"] = sampler.stop()
    out["vm_hwm_ingest_mb"] = memory_status()["VmHWM"]
    out["vm_hwm_store_mb"] = memory_status(store.pid)["VmHWM"]
    out["peaks_over_run"] = {
        k: max(s.get(k, 0.0) for s in [*out["steps"], out["peak"]]) for k in out["peak"]
    }
    await graph.close()
    await store.close()
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--work", type=Path, required=True, help="a new directory")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    result = asyncio.run(run(args.chunks, args.work))
    text = json.dumps(result, ensure_ascii=False, indent=1)
    print(text)
    target = args.out or ROOT / "bench" / "results" / f"ingest-memory-{args.chunks}.json"
    target.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
