"""Retrieval-quality regression on the labelled set, fast: the real stack (App, Qdrant Edge,
SQLite, jieba BM25, the knowledge graph) with the hash embedder, so dense quality means
nothing here — only the keyword and graph tracks and the fused ranking are held to floors.

Floors are the values measured when this test was written (bench/results/quality.md, hash
rows) minus a margin; a drop below one means a real regression in tokenising, synonyms,
chunking, the graph or fusion. Raise them when retrieval improves.
"""

from __future__ import annotations

import math

import pytest

from bench.eval_quality import Run, evaluate, load_questions, mean_scores

# measured: keyword 0.763 / 0.741, graph 0.530 / 0.340, fused 0.628 / 0.651 (recall@5 / MRR@10)
FLOORS = {
    "keyword": (0.70, 0.68),
    "graph": (0.47, 0.28),
    "fused": (0.57, 0.59),
}


@pytest.fixture(scope="module")
def run() -> Run:
    import asyncio

    questions = load_questions()
    return asyncio.run(
        evaluate("hash", questions, configs=tuple(FLOORS), throughput=False, log=lambda _: None)
    )


def test_labels_resolve() -> None:
    questions = load_questions()
    assert len(questions) >= 70
    assert {q.lang for q in questions} == {"zh", "en", "mixed"}
    assert all(q.answers for q in questions)


@pytest.mark.parametrize("config", sorted(FLOORS))
def test_quality_floor(run: Run, config: str) -> None:
    m = mean_scores(list(run.per_q[config].values()))
    recall_floor, mrr_floor = FLOORS[config]
    assert not math.isnan(m.recall)
    assert m.recall >= recall_floor, f"{config} recall@5 {m.recall:.3f} < {recall_floor}"
    assert m.mrr >= mrr_floor, f"{config} MRR@10 {m.mrr:.3f} < {mrr_floor}"


def test_sample_corpus_ingested(run: Run) -> None:
    assert run.chunks > 300  # samples + Ephesians verses
