"""Graph growth alone: CPU per chunk, and a digest of what it grows (issue 40, item 4).

Grows an in-memory graph (the bundled seed, no SQLite) from a corpus document by document, as
`KnowledgeGraph.index_document` does for ingest, with growth run inline (no thread), and
reports the CPU seconds of growth per chunk. `--digest` prints one SHA-256 over every
document's growth (nodes, edges, mentions, terms, concept count, in a canonical order): two
commits that print the same digest grew the same graph. `--root` runs another checkout's code
with this script (compare against the base commit in the same run, alternating).

Growth depends on Python's string hashing (PYTHONHASHSEED): the tokenizer adds the synonym
table's terms to jieba's dictionary in a set's order, and jieba gives a word added without a
frequency one that depends on the words added before it, so from the ninth document or so the
cuts differ. With `--digest` the script runs under PYTHONHASHSEED=0 unless one is set.

Corpora (`--corpus`):
- `synthetic`: the documents of `bench_embed_server.py` (random words, 40 KB each);
- `cuv`: real prose, the bundled 1919 CUV (public domain), one document per book, a section a
  chapter;
- `samples`: the bundled sample messages and outlines (original text).

    .venv/bin/python bench/bench_growth.py --corpus synthetic --docs 8
    .venv/bin/python bench/bench_growth.py --corpus cuv --docs 4 --digest
    .venv/bin/python bench/bench_growth.py --profile 30            # the 30 costliest functions
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gzip
import hashlib
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
ap.add_argument("--corpus", choices=("synthetic", "cuv", "samples"), default="synthetic")
ap.add_argument("--docs", type=int, default=8)
ap.add_argument("--kb", type=int, default=40, help="synthetic: KB of text per document")
ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
ap.add_argument("--digest", action="store_true")
ap.add_argument("--profile", type=int, default=0, metavar="N")
ap.add_argument("--dump", type=Path, help="write every document's growth (JSON) here")
args = ap.parse_args()
if args.digest and "PYTHONHASHSEED" not in os.environ:  # the same hashing in both runs
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
ROOT = args.root.resolve()
sys.path.insert(0, str(ROOT))
BENCH = Path(__file__).resolve().parent
sys.path.insert(1, str(BENCH.parent))


def corpus(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    if args.corpus == "synthetic":
        from bench.bench_ingest import synthetic_markdown

        for i in range(args.docs):
            text = synthetic_markdown(args.kb * 1024, seed=1000 + i)
            (folder / f"message-{i:04d}.md").write_text(text, encoding="utf-8")
    elif args.corpus == "cuv":
        books: dict[str, list[str]] = {}
        cuv = ROOT / "ingest" / "samples" / "cuv-1919-traditional.tsv.gz"
        with gzip.open(cuv, "rt", encoding="utf-8") as f:
            next(f)
            for line in f:
                book, chapter, _verse, text = line.rstrip("\n").split("\t")
                lines = books.setdefault(book, [f"# {book}\n"])
                if not lines[-1].startswith(f"\n## 第{chapter}章"):
                    lines.append(f"\n## 第{chapter}章\n")
                    lines.append("")
                lines[-1] += text
        for i, (book, lines) in enumerate(list(books.items())[: args.docs]):
            (folder / f"{i:02d}-{book}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        samples = ROOT / "ingest" / "samples"
        for p in sorted(samples.glob("*.md")) + sorted(samples.glob("*.txt")):
            (folder / p.name).write_bytes(p.read_bytes())
    return sorted(folder.iterdir())[: args.docs]


def canonical(growth: Any) -> list[Any]:
    return [
        sorted((n.id, n.kind, n.label, list(n.aliases)) for n in growth.nodes.values()),
        sorted([list(k), v] for k, v in growth.edges.items()),
        list(growth.mentions),
        sorted(growth.terms.items()),
        growth.concepts,
    ]


async def main() -> None:
    from ingest.manifest import DocMeta
    from ingest.pipeline import _untagged, finish_document, prepare_document
    from retrieval.graph import KnowledgeGraph, core
    from retrieval.graph.grow import grow as real_grow

    work = Path(tempfile.mkdtemp(prefix="bench-growth-"))
    files = corpus(work / "corpus")
    chunks = [
        finish_document(
            prepare_document(f, DocMeta(), max_bytes=10**8), tagger=_untagged, namespace="corpus"
        )
        for f in files
    ]
    graph = await KnowledgeGraph.open(None)
    await graph._ensure_lexicon()  # jieba's dictionary: not growth
    grown: list[Any] = []
    spent = 0.0
    profiler = cProfile.Profile() if args.profile else None

    def timed_grow(*a: Any, **k: Any) -> Any:
        nonlocal spent
        start = time.process_time()
        if profiler is not None:
            profiler.enable()
        try:
            out = real_grow(*a, **k)
        finally:
            if profiler is not None:
                profiler.disable()
            spent += time.process_time() - start
        grown.append(canonical(out))
        return out

    async def inline(fn: Any, /, *a: Any, **k: Any) -> Any:
        return fn(*a, **k)

    vars(core)["grow"] = timed_grow  # what `index_document` calls
    core.asyncio.to_thread = inline  # type: ignore[attr-defined]
    n = 0
    for b in chunks:
        await graph.index_document(b.record.doc_id, b.chunks)
        n += len(b.chunks)
    await graph.close()
    print(
        f"{args.corpus}: {len(files)} documents, {n} chunks: graph growth"
        f" {1000 * spent / n:.2f} ms CPU a chunk ({spent:.2f} s)  [{ROOT}]"
    )
    if args.digest:
        blob = json.dumps(grown, ensure_ascii=False, sort_keys=True).encode()
        seed = os.environ["PYTHONHASHSEED"]
        print(f"digest {hashlib.sha256(blob).hexdigest()} (PYTHONHASHSEED={seed})")
    if args.dump:
        args.dump.write_text(json.dumps(grown, ensure_ascii=False, indent=0), encoding="utf-8")
    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.print_callers("_convert|fold|_is_reference|viterbi.py:14|spans")


asyncio.run(main())
