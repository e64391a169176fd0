"""Paths through authors (issue 43, item 5): how many of the graph paths the questions of the
quality sets get pass through a person who wrote a book of the corpus (the samples' 示例作者),
and which documents' persons got edges. The sample corpus is grown into an in-memory graph (no
embedding: the graph alone); every question of tests/quality (labelled, labelled_grown, the
relevance halves) is linked and walked as the graph track does.

    nice .venv/bin/python bench/eval_author_paths.py

Runs on any checkout (it finds authors by their 著作 edge itself), so the same script measures
the commit before the change: `PYTHONPATH=<old checkout> python <old checkout>/bench/...`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ingest.manifest import find_manifest, load_manifest  # noqa: E402
from ingest.pipeline import build_document  # noqa: E402
from ingest.samples import SAMPLES_DIR  # noqa: E402
from retrieval.graph import KnowledgeGraph  # noqa: E402

SETS = ROOT / "tests" / "quality"
FILES = (
    "labelled.yaml",
    "labelled_grown.yaml",
    "relevance_calibration.yaml",
    "relevance_test.yaml",
)


async def grown() -> KnowledgeGraph:
    kg = await KnowledgeGraph.open(None)
    manifest_path = find_manifest(SAMPLES_DIR)
    assert manifest_path is not None
    manifest = load_manifest(manifest_path)
    for path in sorted(SAMPLES_DIR.iterdir()):
        if path.suffix in (".md", ".txt"):
            built = build_document(
                path, manifest.for_path(path), max_bytes=10**8, tagger=lambda _: ()
            )
            await kg.index_document(built.chunks[0].doc_id, built.chunks)
    return kg


async def main() -> None:
    kg = await grown()
    q = kg.query
    authors = {
        p
        for p in q.node_ids("person")
        if any(e.relation == "著作" and e.src == p for e in q.relations(p))
    }
    questions = [
        row["question"]
        for name in FILES
        if (SETS / name).exists()
        for row in yaml.safe_load((SETS / name).read_text(encoding="utf-8"))
    ]
    paths = through = middle = asked = 0
    examples: list[str] = []
    for question in questions:
        walk = q.walk(q.link(question))
        asked += bool(walk.paths)
        for path in walk.paths:
            paths += 1
            hit = [n for n in path.nodes if n in authors]
            through += bool(hit)
            if any(n in authors for n in path.nodes[1:-1]):
                middle += 1
                if len(examples) < 5:
                    examples.append(f"{question} → {path.render()}")
    print("| questions | with paths | paths | paths naming an author | an author in the middle |")
    print("|---|---|---|---|---|")
    print(f"| {len(questions)} | {asked} | {paths} | {through} | {middle} |")
    print()
    print("Authors:", ", ".join(sorted(q.node_label(a) for a in authors)))
    for example in examples:
        print(f"- {example}")
    await kg.close()


if __name__ == "__main__":
    asyncio.run(main())
