"""Retrieval quality on the labelled set (tests/quality/labelled.yaml) per embedder and track.

For each embedder (hash | e5 | use) the real stack is built into a temporary data dir through
`bot.app.App` (Qdrant Edge + SQLite, llm=None) and the sample corpus is prepared with
`App.prepare_samples()` (messages, outlines, footnotes + the chosen Bible books). Every labelled
question then goes through `app.search.search()` with the dense, keyword and graph tracks alone
and all three fused, and recall@5, MRR@10 and nDCG@10 are reported overall, by lang and by kind.
Also: ingest time, passage throughput on the real sample chunks, and query latency.

    nice .venv/bin/python bench/eval_quality.py --embedders hash,e5,use \
        --weights 0.4,0.3,0.3 0.5,0.2,0.3 0.6,0.2,0.2 --out /tmp/quality-tables.md

Weights are (dense, graph, keyword), the order of `Settings.fusion_weights`; "fused" is the
Settings default weights and k.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot.app import App  # noqa: E402
from bot.settings import Settings  # noqa: E402
from ingest.manifest import find_manifest, load_manifest  # noqa: E402
from ingest.pipeline import doc_id_for  # noqa: E402
from ingest.samples import SAMPLES_DIR  # noqa: E402
from retrieval.ports import Embedder  # noqa: E402
from retrieval.search import Track  # noqa: E402
from retrieval.text import search_form  # noqa: E402
from retrieval.types import CORPUS_NAMESPACE, Filter, Hit  # noqa: E402

LABELLED = ROOT / "tests" / "quality" / "labelled.yaml"
# The fused defaults are the Settings defaults (dense, graph, keyword), so "fused" below always
# measures what a fresh install runs.
_W = str(Settings.model_fields["fusion_weights"].default).split(",")
DEFAULT_WEIGHTS: tuple[float, float, float] = (float(_W[0]), float(_W[1]), float(_W[2]))
DEFAULT_K = int(Settings.model_fields["fusion_k"].default)
CONFIGS: dict[str, tuple[Track, ...]] = {
    "dense": ("dense",),
    "keyword": ("keyword",),
    "graph": ("graph",),
    "fused": ("dense", "graph", "keyword"),
}
K_RECALL = 5
K_RANK = 10
_WS = re.compile(r"\s+")


# ---- labels and metrics -------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    doc_id: str
    contains: str


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    lang: str
    kind: str
    answers: tuple[Answer, ...]


def _squash(s: str) -> str:
    return _WS.sub("", s)


def load_questions(path: Path = LABELLED, samples_dir: Path = SAMPLES_DIR) -> list[Question]:
    manifest_path = find_manifest(samples_dir)
    manifest = load_manifest(manifest_path) if manifest_path else None

    def doc_id(file: str) -> str:
        f = samples_dir / file
        title = manifest.for_path(f).title if manifest else None
        return doc_id_for(title or f.stem)

    items = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [
        Question(
            it["id"],
            it["question"],
            it["lang"],
            it["kind"],
            tuple(Answer(doc_id(a["file"]), a["contains"]) for a in it["answers"]),
        )
        for it in items
    ]


def matches(hit: Hit, answer: Answer) -> bool:
    """Relevant: the chunk comes from the answer's file and contains its substring
    (whitespace collapsed; the search form is tried too, for width/script normalisation)."""
    c = hit.chunk
    if c.doc_id != answer.doc_id:
        return False
    want = _squash(answer.contains)
    return want in _squash(c.text) or _squash(search_form(answer.contains)) in _squash(
        c.search_text
    )


@dataclass
class Scores:
    recall: float
    mrr: float
    ndcg: float


def score(question: Question, hits: Sequence[Hit]) -> Scores:
    """recall@5 over labelled answers; MRR@10 of the first relevant hit; binary nDCG@10
    (a hit gains 1 when it covers an answer no earlier hit covered)."""
    credited: set[int] = set()
    first_rank = 0
    dcg = 0.0
    found_at: dict[int, int] = {}
    for rank, hit in enumerate(hits[:K_RANK], start=1):
        new = [i for i, a in enumerate(question.answers) if i not in credited and matches(hit, a)]
        if any(matches(hit, a) for a in question.answers) and not first_rank:
            first_rank = rank
        if new:
            dcg += 1.0 / math.log2(rank + 1)
            for i in new:
                credited.add(i)
                found_at[i] = rank
    n = len(question.answers)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(n, K_RANK) + 1))
    recall = sum(1 for r in found_at.values() if r <= K_RECALL) / n
    return Scores(recall, 1.0 / first_rank if first_rank else 0.0, dcg / ideal)


def mean_scores(rows: Sequence[Scores]) -> Scores:
    if not rows:
        return Scores(float("nan"), float("nan"), float("nan"))
    return Scores(
        statistics.fmean(r.recall for r in rows),
        statistics.fmean(r.mrr for r in rows),
        statistics.fmean(r.ndcg for r in rows),
    )


# ---- running the stack ---------------------------------------------------------------------


def make_embedder(name: str) -> Embedder:
    if name == "hash":
        from retrieval.fakes import HashEmbedder

        return HashEmbedder(256)
    if name == "e5":
        from retrieval.embed.offline import E5Embedder

        return E5Embedder()
    if name == "use":
        from retrieval.embed.use import USEEmbedder

        return USEEmbedder()
    raise SystemExit(f"unknown embedder {name!r} (hash | e5 | use)")


def corpus_dir(data_dir: Path, embedder_name: str, books: str) -> Path:
    """Where a kept corpus lives: one directory per embedder and book set."""
    return data_dir / f"{embedder_name}-{books.replace(',', '_')}"


def _weight_map(w: tuple[float, float, float]) -> dict[str, float]:
    return dict(zip(("dense", "graph", "keyword"), w, strict=True))


@dataclass
class Run:
    embedder: str
    books: str = "Eph"
    ingest_s: float = 0.0
    chunks: int = 0
    throughput: float = 0.0  # passages/s on the real sample chunks (raw embedder, no cache)
    throughput_n: int = 0
    query_ms: list[float] = field(default_factory=list)  # fused search, cold query embedding
    embed_query_ms: list[float] = field(default_factory=list)  # raw embedder, one query
    per_q: dict[str, dict[str, Scores]] = field(default_factory=dict)  # config -> qid -> scores


def _settings(data_dir: Path, books: str) -> Settings:
    return Settings.model_validate(
        {
            "data_dir": data_dir,
            "demo_bible_books": books,
            "llm_provider": "none",
            "qdrant_url": None,
            "embedding_provider": "offline",
            "fusion_weights": ",".join(str(w) for w in DEFAULT_WEIGHTS),
            "fusion_k": DEFAULT_K,
        }
    )


NO_GLOSS = "without the English → Chinese gloss of the keyword track (before/after)"


async def evaluate(
    embedder_name: str,
    questions: Sequence[Question],
    *,
    weight_sets: Sequence[tuple[float, float, float]] = (),
    fusion_ks: Sequence[int] = (),
    configs: Sequence[str] = tuple(CONFIGS),
    books: str = "Eph",
    throughput: bool = True,
    data_dir: Path | None = None,
    log: Callable[[str], None] = print,
    gloss: bool = True,
    embedder: Embedder | None = None,
) -> Run:
    """`data_dir`: keep the prepared corpus there and reuse it on the next run (one directory
    per embedder and book set; ingest is skipped when the corpus is already there, so
    `ingest_s` is then near zero). None: a temporary directory. `embedder`: this instance
    (e.g. one model shared by a test session) instead of a new `make_embedder(embedder_name)`;
    `App` closes it on the way out, as it closes any embedder it is given."""
    run = Run(embedder_name, books)
    inner = embedder or make_embedder(embedder_name)
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="baibao-quality-")))
        else:
            tmp = corpus_dir(data_dir, embedder_name, books)
        async with App(_settings(tmp, books), embedder=inner, llm=None) as app:
            if not gloss:
                app.search.gloss = None
            t0 = time.perf_counter()
            await app.prepare_samples()
            run.ingest_s = time.perf_counter() - t0
            everything = Filter(equals={"namespace": CORPUS_NAMESPACE})
            run.chunks = await app.store.count(everything)
            log(f"[{embedder_name}] ingest {run.ingest_s:.1f} s, {run.chunks} chunks")

            if throughput and embedder_name != "hash":
                texts = [c.search_text for c in await app.store.scroll(everything, limit=100_000)]
                t0 = time.perf_counter()
                await inner.embed_passages(texts)
                run.throughput = len(texts) / (time.perf_counter() - t0)
                run.throughput_n = len(texts)
                for q in questions[:20]:
                    t0 = time.perf_counter()
                    await inner.embed_query(search_form(q.text))
                    run.embed_query_ms.append((time.perf_counter() - t0) * 1000)
                log(f"[{embedder_name}] {run.throughput:.1f} passages/s over {len(texts)}")

            search = app.search
            # fused first: its query embedding is a cache miss, so its latency is the real one
            order = ["fused", *[c for c in configs if c != "fused"]]
            for config in order:
                if config not in configs:
                    continue
                search.weights = _weight_map(DEFAULT_WEIGHTS)
                rows: dict[str, Scores] = {}
                for q in questions:
                    t0 = time.perf_counter()
                    result = await search.search(q.text, limit=K_RANK, tracks=CONFIGS[config])
                    if config == "fused":
                        run.query_ms.append((time.perf_counter() - t0) * 1000)
                    rows[q.id] = score(q, result.hits)
                run.per_q[config] = rows
            # variants: other weights at the default k, then each k with the default and other weights
            variants = [(w, DEFAULT_K) for w in weight_sets]
            variants += [(w, k) for k in fusion_ks for w in (DEFAULT_WEIGHTS, *weight_sets)]
            for w, k in variants:
                search.weights = _weight_map(w)
                search.k = k
                rows = {}
                for q in questions:
                    result = await search.search(q.text, limit=K_RANK)
                    rows[q.id] = score(q, result.hits)
                run.per_q[f"fused {'/'.join(str(x) for x in w)} k={k}"] = rows
            search.weights = _weight_map(DEFAULT_WEIGHTS)
            search.k = DEFAULT_K
    return run


# ---- reporting -----------------------------------------------------------------------------


def group_means(
    run: Run, questions: Sequence[Question], config: str, key: Callable[[Question], str]
) -> dict[str, Scores]:
    groups: dict[str, list[Scores]] = defaultdict(list)
    for q in questions:
        groups[key(q)].append(run.per_q[config][q.id])
    return {g: mean_scores(v) for g, v in sorted(groups.items())}


def _f(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.3f}"


def report(runs: Sequence[Run], questions: Sequence[Question]) -> str:
    out: list[str] = []
    langs = sorted({q.lang for q in questions})
    kinds = sorted({q.kind for q in questions})
    n_by = {g: sum(1 for q in questions if g in (q.lang, q.kind)) for g in [*langs, *kinds]}
    out.append("## Overall (recall@5 / MRR@10 / nDCG@10)\n")
    out.append("| embedder | config | recall@5 | MRR@10 | nDCG@10 |")
    out.append("|---|---|---|---|---|")
    for run in runs:
        for config in run.per_q:
            m = mean_scores(list(run.per_q[config].values()))
            out.append(
                f"| {run.embedder} | {config} | {_f(m.recall)} | {_f(m.mrr)} | {_f(m.ndcg)} |"
            )
    out.append("")
    for title, groups, key in (
        ("lang", langs, lambda q: q.lang),
        ("kind", kinds, lambda q: q.kind),
    ):
        out.append(f"## By {title} (recall@5 / MRR@10)\n")
        head = " | ".join(f"{g} (n={n_by[g]})" for g in groups)
        out.append(f"| embedder | config | {head} |")
        out.append("|---|---|" + "---|" * len(groups))
        for run in runs:
            for config in CONFIGS:
                if config not in run.per_q:
                    continue
                gm = group_means(run, questions, config, key)
                cells = " | ".join(f"{_f(gm[g].recall)} / {_f(gm[g].mrr)}" for g in groups)
                out.append(f"| {run.embedder} | {config} | {cells} |")
        out.append("")
    out.append("## Cost\n")
    out.append(
        "| embedder | prepare_samples (books) | chunks | passages/s (sample chunks) "
        "| embed_query p50 | fused search p50 / p95 |"
    )
    out.append("|---|---|---|---|---|---|")
    for run in runs:
        qs = sorted(run.query_ms)
        p50 = statistics.median(qs) if qs else float("nan")
        p95 = qs[min(len(qs) - 1, int(0.95 * len(qs)))] if qs else float("nan")
        eq = statistics.median(run.embed_query_ms) if run.embed_query_ms else float("nan")
        eq_text = f"{eq:.1f} ms" if run.embed_query_ms else "–"
        tp = f"{run.throughput:.1f} (n={run.throughput_n})" if run.throughput else "–"
        out.append(
            f"| {run.embedder} | {run.ingest_s:.1f} s ({run.books}) | {run.chunks} | {tp} | "
            f"{eq_text} | {p50:.0f} / {p95:.0f} ms |"
        )
    out.append("")
    return "\n".join(out)


def dump(runs: Sequence[Run]) -> dict[str, Any]:
    return {
        r.embedder: {
            "ingest_s": r.ingest_s,
            "chunks": r.chunks,
            "throughput": r.throughput,
            "query_ms": r.query_ms,
            "embed_query_ms": r.embed_query_ms,
            "per_q": {
                c: {q: [s.recall, s.mrr, s.ndcg] for q, s in rows.items()}
                for c, rows in r.per_q.items()
            },
        }
        for r in runs
    }


def _weights(text: str) -> tuple[float, float, float]:
    a, b, c = (float(p) for p in re.split(r"[,/]", text))
    return (a, b, c)


async def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedders", default="hash,e5,use")
    p.add_argument("--weights", nargs="*", type=_weights, default=[])
    p.add_argument("--ks", nargs="*", type=int, default=[], help="RRF k values to try")
    p.add_argument("--books", default="Eph")
    p.add_argument("--no-throughput", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="markdown tables here")
    p.add_argument("--json", type=Path, default=None, help="raw per-question scores here")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep prepared corpora here (<dir>/<embedder>-<books>) and reuse them",
    )
    p.add_argument("--no-gloss", action="store_true", help=NO_GLOSS)
    args = p.parse_args(argv)
    questions = load_questions()
    runs = []
    for name in args.embedders.split(","):
        runs.append(
            await evaluate(
                name.strip(),
                questions,
                weight_sets=args.weights,
                fusion_ks=args.ks,
                books=args.books,
                throughput=not args.no_throughput,
                data_dir=args.data_dir,
                gloss=not args.no_gloss,
            )
        )
    text = report(runs, questions)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(dump(runs), ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
