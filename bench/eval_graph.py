"""What the grown graph adds (issue 13): the graph track and fused, with the curated-only graph
(`GRAPH_GROWTH=false`: the seed plus books, authors and verses) and with the graph grown from
the ingested documents, on the labelled set (tests/quality/labelled.yaml) and on the questions
about concepts only the grown graph knows (tests/quality/labelled_grown.yaml).

Each (embedder, growth) pair runs `bench.eval_quality.evaluate` in its own process on a fresh
data dir (the real App: Qdrant Edge, SQLite, jieba BM25, the graph; llm=None).

    nice .venv/bin/python bench/eval_graph.py --embedders hash,e5

Prints a Markdown table and writes bench/results/graph.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.eval_quality import LABELLED, evaluate, load_questions, mean_scores  # noqa: E402

GROWN = ROOT / "tests" / "quality" / "labelled_grown.yaml"
OUT = ROOT / "bench" / "results" / "graph.md"
CONFIGS = ("graph", "keyword", "dense", "fused")


def child(embedder: str) -> None:
    sets = {"labelled": load_questions(LABELLED), "grown": load_questions(GROWN)}
    questions = [q for qs in sets.values() for q in qs]
    run = asyncio.run(
        evaluate(embedder, questions, configs=CONFIGS, throughput=False, log=lambda _: None)
    )
    out: dict[str, dict[str, list[float]]] = {}
    for name, qs in sets.items():
        ids = {q.id for q in qs}
        for config in CONFIGS:
            m = mean_scores([s for qid, s in run.per_q[config].items() if qid in ids])
            out.setdefault(name, {})[config] = [m.recall, m.mrr, m.ndcg]
    print("RESULT " + json.dumps({"chunks": run.chunks, "scores": out}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--embedders", default="hash")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    rows: list[str] = []
    load = os.getloadavg()
    for embedder in args.embedders.split(","):
        results = {}
        for growth in ("false", "true"):
            env = {**os.environ, "GRAPH_GROWTH": growth}
            proc = subprocess.run(
                [sys.executable, __file__, "--child", embedder],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
            results[growth] = json.loads(line[len("RESULT ") :])
        for name, n in (("labelled", "labelled.yaml"), ("grown", "labelled_grown.yaml")):
            for config in ("graph", "fused"):
                before = results["false"]["scores"][name][config]
                after = results["true"]["scores"][name][config]
                rows.append(
                    f"| {embedder} | {n} | {config} | {before[0]:.3f} / {before[1]:.3f} | "
                    f"{after[0]:.3f} / {after[1]:.3f} | {after[0] - before[0]:+.3f} / "
                    f"{after[1] - before[1]:+.3f} |"
                )
    table = "\n".join(
        [
            "| embedder | questions | track | curated-only recall@5 / MRR@10 | grown | change |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    text = (
        "# What the grown graph adds (issue 13) — `bench/eval_graph.py`\n\n"
        f"`nice .venv/bin/python bench/eval_graph.py --embedders {args.embedders}`; "
        f"load average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}.\n\n" + table + "\n"
    )
    OUT.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
