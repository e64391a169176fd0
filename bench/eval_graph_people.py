"""People, topics and the generic-word rule in the grown graph (issue 24), on the bundled sample
corpus (original texts; no embedding: the graph alone).

Grows the graph from every sample document with the burstiness rule off (`grow.BURST_MIN =
0`, what growth did before) and at several thresholds, and counts the grown concept nodes,
the generic words among them and the subject terms the labelled questions ask about. Also
lists the person and topic nodes and what `/graph 保罗` shows.

    nice .venv/bin/python bench/eval_graph_people.py

Prints Markdown and writes bench/results/graph-people.md.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest.manifest import DocMeta, find_manifest, load_manifest  # noqa: E402
from ingest.pipeline import build_document, default_tagger, expand_paths  # noqa: E402
from ingest.samples import SAMPLES_DIR  # noqa: E402
from retrieval.graph import KnowledgeGraph, grow  # noqa: E402

OUT = ROOT / "bench" / "results" / "graph-people.md"
# Judged by reading the texts (evaluation labels, not used by the rule): the examples
# and the words of commentary that grew as concepts before.
GENERIC = (
    "原文 意思 这里 终极 信徒 灵里 功用 合式 一班人 圣徒们 参林 以弗所 word revelation 住处 服事"
).split()
# The subjects tests/quality/labelled_grown.yaml asks about, and others the texts treat.
SUBJECTS = (
    "得胜者 锡安 新妇 初熟的果子 细麻衣 祭司职分 君尊的祭司职分 福音祭司 变化形状 帕子 "
    "羔羊 枝子 葡萄树 肢体 荣耀 救赎 新约 果子 人性"
).split()


async def grown(burst_min: float) -> tuple[KnowledgeGraph, set[str]]:
    grow.BURST_MIN = burst_min
    graph = await KnowledgeGraph.open(None)
    seed = {n for kind in ("concept", "person", "topic") for n in graph.query.node_ids(kind)}
    manifest_path = find_manifest(SAMPLES_DIR)
    manifest = load_manifest(manifest_path) if manifest_path else None
    files, _ = expand_paths([SAMPLES_DIR])
    tagger = default_tagger()
    for f in files:
        if f.name.endswith((".tsv", ".tsv.gz")):
            continue
        meta = manifest.for_path(f) if manifest else DocMeta()
        built = build_document(f, meta, max_bytes=10**8, tagger=tagger)
        await graph.index_document(built.record.doc_id, built.chunks)
    return graph, seed


def concept_labels(graph: KnowledgeGraph, seed: set[str]) -> set[str]:
    return {graph.query.node_label(n) for n in graph.query.node_ids("concept") if n not in seed}


async def main() -> None:
    rows = []
    graphs = {}
    sweep = [("before (no burstiness rule)", 0.0)]
    sweep += [(f"BURST_MIN {b}", b) for b in (1.3, 1.4, 1.5)]
    sweep += [("after (BURST_MIN 1.6, shipped)", 1.6), ("BURST_MIN 1.8", 1.8)]
    for name, burst in sweep:
        graph, seed = await grown(burst)
        labels = concept_labels(graph, seed)
        generic = sorted(w for w in GENERIC if w in labels)
        subjects = sorted(w for w in SUBJECTS if w in labels)
        rows.append((name, len(labels), generic, subjects))
        graphs[name] = (graph, seed, labels)
    lines = [
        "# People, topics and generic words in the grown graph (issue 24) — "
        "`bench/eval_graph_people.py`",
        "",
        "`nice .venv/bin/python bench/eval_graph_people.py`: the bundled sample corpus (16 "
        "original documents, 124 chunks), graph only. Generic words and subject terms are "
        "evaluation labels judged by reading the texts; the rule does not see them.",
        "",
        f"Generic words labelled ({len(GENERIC)}): {' '.join(GENERIC)}",
        "",
        f"Subject terms labelled ({len(SUBJECTS)}): {' '.join(SUBJECTS)}",
        "",
        "| growth | grown concept nodes | generic words grown | subject terms grown |",
        "|---|---|---|---|",
    ]
    for name, count, generic, subjects in rows:
        lines.append(
            f"| {name} | {count} | {len(generic)}/{len(GENERIC)}: {' '.join(generic) or '—'} "
            f"| {len(subjects)}/{len(SUBJECTS)} |"
        )
    shipped = next(name for name, _, _, _ in rows if "shipped" in name)
    before, after = graphs[rows[0][0]][2], graphs[shipped][2]
    lines += [
        "",
        f"Dropped by the rule: {' '.join(sorted(before - after)) or '—'}",
        "",
        f"Subject terms lost: {' '.join(sorted(w for w in SUBJECTS if w in before - after)) or '—'}",
        "",
    ]
    graph, seed, _ = graphs[shipped]
    persons = sorted(
        (len(graph.query.chunks_for(n)), graph.query.node_label(n))
        for n in graph.query.node_ids("person")
    )
    named = [f"{label} ({n})" for n, label in reversed(persons) if n]
    topics = [graph.query.node_label(n) for n in graph.query.node_ids("topic")]
    lines += [
        f"Person nodes named in the texts (chunks): {', '.join(named)}",
        "",
        f"Topic nodes: {len(topics)} ({sum(1 for t in topics if f'topic:{t}' not in seed)} "
        "from outline titles and sections)",
        "",
        "`/graph 保罗` (the relations it lists):",
        "",
    ]
    for edge in graph.query.relations("person:保罗"):
        sources = ", ".join(graph.query.edge_sources(edge.src, edge.dst, edge.relation))
        lines.append(
            f"- {graph.query.label(edge.src)} —{edge.relation}→ {graph.query.label(edge.dst)} "
            f"({edge.weight:g}; {sources})"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    OUT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
