"""Ingest end to end through an embedding server (issue 40): chunks/s against batches in flight.

`baibao ingest DIR` as a user runs it with `EMBEDDING_PROVIDER=openai`, against the loopback
OpenAI-compatible server of the tests (`tests/stubs/embeddings_server.py`, in a process of its
own) that answers each batch after `--delay` seconds (200 ms by default) with vectors of the
model's size (bge-m3: 1024). Each run starts from an empty data directory (Qdrant Edge, SQLite,
BM25, the growing graph) and ingests the same synthetic Chinese prose (original random text,
`bench_ingest.synthetic_markdown`), once per `EMBEDDING_CONCURRENCY` in `--inflight`.

Reported per run: chunks, seconds, chunks/s; the CPU time of the ingest (the `baibao` process
and its children, user+sys) and per chunk, split into the ingest process itself, its reading
process (`ingest.read_process`, when it reads in one) and its Qdrant Edge process (children
sampled every 0.1 s from /proc: their last tenth of a second may be missed, and counted as the
ingest process's); the most requests the server had in flight at once; the server's own CPU. The row "no wait" (`--delay 0`, the largest concurrency) is what
our side does when the server answers at once: the ceiling the pipeline puts on ingest.

    .venv/bin/python bench/bench_embed_server.py                   # the table, 1 2 4 8 16
    .venv/bin/python bench/bench_embed_server.py --stages          # + CPU per chunk per stage

`--stages` runs each stage of the pipeline alone, in this process, over the same documents
(the real App: Qdrant Edge in its child process, SQLite, jieba, the graph; the embedding
server at no delay) and reports its CPU time per chunk: this process's (all its threads) and
the store process's. The ingest process's Python holds one core at most (the GIL): the sum of
its stages per chunk is the ceiling on chunks/s whatever the server does.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_ingest import synthetic_markdown  # noqa: E402

RESULTS = ROOT / "bench" / "results"


@dataclass
class Run:
    label: str
    inflight: int
    delay_s: float
    chunks: int
    documents: int
    seconds: float  # the whole process: start-up, the pipeline, the store's optimize, exit
    pipeline_s: float  # the pipeline alone (the summary's seconds)
    cpu_s: float
    reader_cpu_s: float  # the reading process's
    store_cpu_s: float  # the Qdrant Edge process's
    server_peak: int
    server_requests: int
    server_cpu_s: float
    load: float

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.pipeline_s if self.pipeline_s else 0.0


def make_corpus(folder: Path, docs: int, kb: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(docs):
        text = synthetic_markdown(kb * 1024, seed=1000 + i)
        (folder / f"message-{i:04d}.md").write_text(text, encoding="utf-8")


class Server:
    """The stub embeddings server in a child process (so its CPU is not the ingest's)."""

    def __init__(self, delay_s: float, dim: int) -> None:
        cmd = [sys.executable, "-m", "tests.stubs.embeddings_server"]
        cmd += ["--delay", str(delay_s), "--dim", str(dim)]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "URL":
            self.proc.kill()
            raise RuntimeError(f"the embeddings server did not start: {line}")
        self.url = line[1]

    def stop(self) -> dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        stats: dict[str, float] = json.loads(self.proc.stdout.readline())
        self.proc.wait(timeout=30)
        return stats


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# A child's kind, by what its command line runs.
CHILD_KINDS = {"ingest.read_process": "reader", "retrieval.store.edge_process": "store"}


class Children:
    """The CPU seconds of a process's descendants, by kind, sampled from /proc while it runs
    (each one's last sample: what it used in its last tenth of a second is missed)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.cpu: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _descendants(self, pid: int) -> list[int]:
        found = []
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                listed = children.read_text().split()
            except OSError:  # a thread that ended meanwhile
                continue
            for child in listed:
                found.append(int(child))
                found.extend(self._descendants(int(child)))
        return found

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self._sample()
            except Exception as exc:  # a process or thread that ended mid-read
                print(f"(sample skipped: {exc!r})", file=sys.stderr)

    def _sample(self) -> None:
        for pid in self._descendants(self.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                cpu = _proc_cpu(pid)
            except (OSError, IndexError, ValueError):  # it ended meanwhile
                continue
            kind = next((k for m, k in CHILD_KINDS.items() if m in cmd), "other")
            self.cpu[pid] = (kind, cpu)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        out: dict[str, float] = {}
        for kind, cpu in self.cpu.values():
            out[kind] = out.get(kind, 0.0) + cpu
        return out


def ingest(
    corpus: Path,
    work: Path,
    url: str,
    inflight: int,
    profile: Path | None = None,
    growth: bool = True,
) -> tuple[float, float, float, dict[str, float]]:
    """One `baibao ingest` into a fresh data dir: (seconds, the pipeline's seconds, CPU seconds
    of it and its children, CPU seconds of its children by kind)."""
    data = work / f"data-{inflight}-{time.monotonic_ns()}"
    env = {
        **os.environ,
        "DATA_DIR": str(data),
        "SAMPLE_CORPUS": "false",
        "LLM_PROVIDER": "none",
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_BASE_URL": url,
        "EMBEDDING_MODEL": "bge-m3",
        "EMBEDDING_CONCURRENCY": str(inflight),
        "GRAPH_GROWTH": "true" if growth else "false",
    }
    python = [sys.executable]
    if profile is not None:
        python += ["-m", "cProfile", "-o", str(profile)]
    cmd = [*python, "-m", "bot.cli", "ingest", str(corpus)]
    cpu = children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    children = Children(proc.pid)
    stdout, stderr = proc.communicate()
    seconds = time.perf_counter() - started
    by_kind = children.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"ingest failed ({proc.returncode}):\n{stderr[-3000:]}")
    found = re.search(r"\(([\d.]+) 秒 s\)", stdout)
    pipeline = float(found.group(1)) if found else seconds
    return seconds, pipeline, children_cpu() - cpu, by_kind


def counts(data_root: Path) -> tuple[int, int]:
    dbs = sorted(data_root.glob("data-*/baibao.sqlite3"), key=lambda p: p.stat().st_mtime)
    with sqlite3.connect(dbs[-1]) as db:
        docs, chunks = db.execute(
            "SELECT count(*), coalesce(sum(chunk_count), 0) FROM corpus_documents"
        ).fetchone()
    return int(docs), int(chunks)


def one_run(
    label: str,
    corpus: Path,
    work: Path,
    inflight: int,
    delay: float,
    dim: int,
    profile: Path | None = None,
    growth: bool = True,
) -> Run:
    server = Server(delay, dim)
    try:
        seconds, pipeline, cpu, by_kind = ingest(
            corpus, work, server.url, inflight, profile, growth
        )
    finally:
        stats = server.stop()
    docs, chunks = counts(work)
    return Run(
        label,
        inflight,
        delay,
        chunks,
        docs,
        round(seconds, 2),
        round(pipeline, 2),
        round(cpu, 2),
        round(by_kind.get("reader", 0.0), 2),
        round(by_kind.get("store", 0.0), 2),
        int(stats["peak_in_flight"]),
        int(stats["requests"]),
        float(stats["cpu_s"]),
        round(os.getloadavg()[0], 2),
    )


def table(runs: list[Run]) -> str:
    lines = [
        "| batches in flight | server delay | chunks | process s | pipeline s | chunks/s"
        " | ingest CPU s | CPU ms/chunk | ms/chunk: ingest process | reading process | store"
        " | server peak in flight | requests | server CPU s | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        per_chunk = 1000 * r.cpu_s / r.chunks if r.chunks else 0.0
        main = r.cpu_s - r.reader_cpu_s - r.store_cpu_s
        split = [1000 * x / r.chunks if r.chunks else 0.0 for x in (main, r.reader_cpu_s)]
        store = 1000 * r.store_cpu_s / r.chunks if r.chunks else 0.0
        lines.append(
            f"| {r.label} | {r.delay_s * 1000:.0f} ms | {r.chunks} | {r.seconds:.1f} |"
            f" {r.pipeline_s:.1f} |"
            f" **{r.chunks_per_s:.0f}** | {r.cpu_s:.1f} | {per_chunk:.1f} |"
            f" {split[0]:.1f} | {split[1]:.1f} | {store:.1f} | {r.server_peak} |"
            f" {r.server_requests} | {r.server_cpu_s:.1f} | {r.load} |"
        )
    return "\n".join(lines)


def profile_summary(path: Path, top: int = 25) -> str:
    """The functions with the most own time in the profiled ingest (main process only)."""
    stats = pstats.Stats(str(path))
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    total = sum(v[2] for _, v in rows)
    out = [
        f"total own time in the ingest process: {total:.1f} s",
        "",
        "| own s | share | cumulative s | function |",
        "|---|---|---|---|",
    ]
    for (file, line, name), (_, _, own, cumulative, _) in rows[:top]:
        where = file.replace(str(ROOT) + "/", "").split("site-packages/")[-1]
        out.append(
            f"| {own:.2f} | {own / total:.0%} | {cumulative:.2f} | `{where}:{line} {name}` |"
        )
    return "\n".join(out)


def _proc_cpu(pid: int) -> float:
    """User+sys seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def stages(
    files: list[Path], work: Path, url: str, dim: int
) -> tuple[list[tuple[str, float, float]], int]:
    """(stage, CPU s here, CPU s in the store process) for each stage over the corpus, and
    the number of chunks."""
    from bot.app import App
    from bot.settings import load_settings
    from ingest.manifest import DocMeta
    from ingest.pipeline import Pipeline, _tagged, _untagged, finish_document, prepare_document
    from retrieval.store.edge_process import EdgeProcessStore

    settings = load_settings(
        data_dir=work / f"stages-{time.monotonic_ns()}",
        sample_corpus=False,
        llm_provider="none",
        embedding_provider="openai",
        embedding_base_url=url,
        embedding_model="bge-m3",
        embedding_concurrency=8,
    )
    out: list[tuple[str, float, float]] = []
    async with App(settings, llm=None) as app:
        pipeline = Pipeline(app.indexer)
        store = app.store
        pid = store.pid if isinstance(store, EdgeProcessStore) else os.getpid()

        def clock() -> tuple[float, float]:
            return time.process_time(), _proc_cpu(pid) if pid != os.getpid() else 0.0

        def lap(name: str, start: tuple[float, float]) -> None:
            now = clock()
            out.append((name, now[0] - start[0], now[1] - start[1]))

        start = clock()
        prepared = [
            prepare_document(f, DocMeta(), max_bytes=10**8, tagger_key=pipeline.tagger_key)
            for f in files
        ]
        lap("read: load, structure", start)
        start = clock()
        built = [finish_document(p, tagger=_untagged, namespace="corpus") for p in prepared]
        lap("read: chunk, search form (OpenCC), verse references", start)
        start = clock()
        vectors = []
        for b in built:
            vectors.append(await pipeline._embed(b.chunks))
        lap("embed: request, answer JSON, cache (SQLite)", start)
        start = clock()
        for b in built:
            b.chunks = _tagged(b.chunks, pipeline.tagger)
        lap("tag (synonyms, graph concepts)", start)
        start = clock()
        for b in built:
            app.indexer._encode(b.chunks)
        lap("keyword tokens (jieba BM25)", start)
        start = clock()
        graph = app.graph
        for b in built:
            await graph.index_document(b.record.doc_id + "-probe", b.chunks)
            await graph.delete_document(b.record.doc_id + "-probe")
        lap("graph growth (and its removal)", start)
        start = clock()
        for b, v in zip(built, vectors, strict=True):
            await app.indexer.replace_document(b.record, b.chunks, vectors=v)
        lap("index: keyword tokens + store upsert + registry + graph", start)
        chunks = sum(len(b.chunks) for b in built)
    return out, chunks


def stages_table(rows: list[tuple[str, float, float]], chunks: int) -> str:
    lines = [
        "| stage (alone, in order) | CPU ms/chunk, ingest process | CPU ms/chunk, store process |",
        "|---|---|---|",
    ]
    for name, here, store in rows:
        lines.append(f"| {name} | {1000 * here / chunks:.1f} | {1000 * store / chunks:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--kb", type=int, default=40, help="KB of text per document")
    ap.add_argument("--delay", type=float, default=0.2, help="server seconds per batch")
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--inflight", default="1,2,4,8,16")
    ap.add_argument("--no-wait", action="store_true", help="skip the delay-0 reference row")
    ap.add_argument("--growth-off", action="store_true", help="add a row with GRAPH_GROWTH=false")
    ap.add_argument("--stages", action="store_true", help="CPU per chunk of each stage")
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also profile one run at N in flight (cProfile, main process)",
    )
    ap.add_argument("--json", type=Path, default=RESULTS / "embed-server.json")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-embed-server-"))
    corpus = work / "corpus"
    make_corpus(corpus, args.docs, args.kb)
    if args.stages:
        import asyncio

        server = Server(0.0, args.dim)
        try:
            rows, chunks = asyncio.run(stages(sorted(corpus.iterdir()), work, server.url, args.dim))
        finally:
            server.stop()
        print(f"{args.docs} documents × {args.kb} KB: {chunks} chunks")
        print(stages_table(rows, chunks))
        return
    levels = [int(x) for x in args.inflight.split(",")]
    runs: list[Run] = []
    for n in levels:
        runs.append(one_run(str(n), corpus, work, n, args.delay, args.dim))
        print(table(runs[-1:]).splitlines()[-1], flush=True)
    if not args.no_wait:
        runs.append(one_run(f"{max(levels)}, no wait", corpus, work, max(levels), 0.0, args.dim))
        print(table(runs[-1:]).splitlines()[-1], flush=True)
    if args.growth_off:
        label = f"{max(levels)}, GRAPH_GROWTH=false"
        runs.append(one_run(label, corpus, work, max(levels), args.delay, args.dim, growth=False))
        print(table(runs[-1:]).splitlines()[-1], flush=True)
    print()
    print(f"{args.docs} documents × {args.kb} KB, {os.cpu_count()} cores")
    print(table(runs))
    if args.profile:
        prof = work / "ingest.prof"
        one_run(
            f"{args.profile} (profiled)", corpus, work, args.profile, args.delay, args.dim, prof
        )
        print()
        print(profile_summary(prof))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "docs": args.docs,
                "kb": args.kb,
                "dim": args.dim,
                "runs": [asdict(r) | {"chunks_per_s": round(r.chunks_per_s, 1)} for r in runs],
            },
            indent=1,
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
