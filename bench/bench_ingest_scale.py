"""Ingest at scale with the offline embedder (issue 13): chunks/s on this machine, resuming
after a kill, peak memory.

`baibao ingest DIR` as a user runs it (default offline e5 embedder, Qdrant Edge, SQLite, BM25,
the growing graph) on synthetic Chinese prose (original random text from bench_ingest), in a
fresh data dir. The first run is killed (SIGKILL) after --kill-after seconds; the second run
ingests the same folder to the end. Reported: chunks/s of each run, how many documents the
second run found already done, the embedding cache's share (chunks embedded before the kill
are not embedded again), and the peak RSS of the ingest process.

    nice .venv/bin/python bench/bench_ingest_scale.py --docs 12 --kill-after 60
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_ingest import synthetic_markdown  # noqa: E402


def count(db: Path, sql: str) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        try:
            return int(conn.execute(sql).fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--kb", type=int, default=12, help="KB of text per document")
    ap.add_argument("--kill-after", type=float, default=60.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-scale-"))
    corpus = work / "corpus"
    corpus.mkdir()
    for i in range(args.docs):
        (corpus / f"doc-{i:03d}.md").write_text(
            synthetic_markdown(args.kb * 1024, seed=i), encoding="utf-8"
        )
    env = {
        **os.environ,
        "DATA_DIR": str(work / "data"),
        "SAMPLE_CORPUS": "false",
        "LLM_PROVIDER": "none",
    }
    cmd = [sys.executable, "-m", "bot.cli", "ingest", str(corpus)]
    db = work / "data" / "baibao.sqlite3"
    load = os.getloadavg()
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=args.kill_after)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    first_s = time.perf_counter() - t
    docs_first = count(db, "SELECT count(*) FROM corpus_documents")
    chunks_first = count(db, "SELECT coalesce(sum(chunk_count), 0) FROM corpus_documents")
    cached_before = count(db, "SELECT count(*) FROM embed_cache")
    t = time.perf_counter()
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    second_s = time.perf_counter() - t
    chunks_total = count(db, "SELECT coalesce(sum(chunk_count), 0) FROM corpus_documents")
    docs_total = count(db, "SELECT count(*) FROM corpus_documents")
    embedded_total = count(db, "SELECT count(*) FROM embed_cache")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = {
        "docs": args.docs,
        "kb_per_doc": args.kb,
        "load_before": load,
        "load_after": os.getloadavg(),
        "first_run_s": first_s,
        "first_run_killed": proc.returncode == -signal.SIGKILL,
        "docs_done_before_kill": docs_first,
        "chunks_done_before_kill": chunks_first,
        "embeddings_cached_at_kill": cached_before,
        "second_run_s": second_s,
        "docs_total": docs_total,
        "chunks_total": chunks_total,
        "embeddings_total": embedded_total,
        "chunks_per_s_first": chunks_first / first_s if first_s else 0.0,
        "chunks_per_s_overall": chunks_total / (first_s + second_s),
        "peak_rss_mb": peak,
        "second_run_tail": second.stdout.strip().splitlines()[-3:],
    }
    print(json.dumps(result, ensure_ascii=False, indent=1))
    out = ROOT / "bench" / "results" / "ingest-scale.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
