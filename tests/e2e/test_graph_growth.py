"""The graph grows from what a user ingests, as a user does it: `baibao ingest` a new text about
a concept the curated seed lacks, `baibao search --json` shows a graph path through it with
its provenance, `baibao ingest --delete` takes the concept and its edges away again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TEXT = Path(__file__).parent.parent / "data" / "message-tabernacle.md"
TITLE = "帐幕与召会（测试）"


def baibao(
    args: list[str], data_dir: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SAMPLE_CORPUS": "false",
        "DATA_DIR": str(data_dir),
        "EMBEDDING_PROVIDER": "offline-use",  # the faster offline model: this is about the graph
        "LLM_PROVIDER": "none",
        **(extra or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=Path.cwd(),
    )


def paths_of(data_dir: Path, query: str) -> list[dict[str, Any]]:
    result = baibao(["search", query, "--json"], data_dir)
    assert result.returncode == 0, result.stderr
    paths: list[dict[str, Any]] = json.loads(result.stdout)["graph_paths"]
    return paths


def test_ingest_grows_a_concept_search_shows_its_path_delete_removes_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    query = "帐幕和召会是什么关系？"
    assert not any("concept:帐幕" in p["nodes"] for p in paths_of(data, query))

    ingested = baibao(["ingest", str(TEXT), "--title", TITLE], data)
    assert ingested.returncode == 0, ingested.stderr

    paths = paths_of(data, query)
    through = [p for p in paths if "concept:帐幕" in p["nodes"]]
    assert through, paths
    steps = [s for p in through for s in p["steps"] if "concept:帐幕" in (s["from"], s["to"])]
    assert steps and all(TITLE in s["sources"] for s in steps)  # provenance of each edge
    assert "帐幕" in through[0]["path"] and through[0]["path_en"]

    deleted = baibao(["ingest", "--delete", TITLE], data)
    assert deleted.returncode == 0, deleted.stderr
    assert not any("concept:帐幕" in p["nodes"] for p in paths_of(data, query))
    listed = baibao(["search", "帐幕", "--json"], data)
    assert json.loads(listed.stdout)["hits"] == []


async def test_graph_extract_shows_the_cost_before_and_after(tmp_path: Path) -> None:
    """`baibao graph extract` with an OpenAI-compatible model (the loopback server, reached by
    the openai SDK in the child process over HTTP): estimate, extract, nothing left to send."""
    import asyncio

    from tests.stubs.llm_server import LLMStubServer, Scripted, openai_completion

    data = tmp_path / "data"
    answer = "\n".join(
        json.dumps(x, ensure_ascii=False)
        for x in (
            {"entity": "帐幕", "type": "concept", "en": "tabernacle"},
            {"entity": "至圣所", "type": "concept", "en": "Holy of Holies"},
            {"relation": "包含", "source": "帐幕", "target": "至圣所"},
        )
    )
    ingested = await asyncio.to_thread(baibao, ["ingest", str(TEXT), "--title", TITLE], data)
    assert ingested.returncode == 0, ingested.stderr
    async with LLMStubServer() as server:
        for _ in range(20):
            server.openai.append(Scripted.json(openai_completion(answer)))
        env = {"LLM_PROVIDER": "openai", "LLM_BASE_URL": server.openai_url, "LLM_MODEL": "m"}
        dry = await asyncio.to_thread(baibao, ["graph", "extract", "--dry-run"], data, env)
        assert dry.returncode == 0, dry.stderr
        assert "预计 / estimated: 1 documents" in dry.stdout and "tokens" in dry.stdout
        assert server.requests_to("/v1/chat/completions") == []
        run = await asyncio.to_thread(baibao, ["graph", "extract"], data, env)
        assert run.returncode == 0, run.stderr
        sent = len(server.requests_to("/v1/chat/completions"))
        assert sent >= 1 and f"实际 / actual: {sent} batches sent" in run.stdout
        again = await asyncio.to_thread(baibao, ["graph", "extract"], data, env)
        assert "0 to send" in again.stdout and "实际 / actual: 0 batches sent" in again.stdout
    paths = paths_of(data, "帐幕和至圣所是什么关系？")
    step = next(s for p in paths for s in p["steps"] if s["relation"] == "包含")
    assert step["sources"] == [f"{TITLE} (LLM)"]


async def test_keyword_index_cuts_text_the_same_after_a_restart(tmp_path: Path) -> None:
    """Concepts grown from ingested documents are the graph's words, not the keyword index's:
    a process restarted after an ingest cuts a question exactly as the process that indexed
    the chunks did (经历内住的基督 stays 经历 / 内住 / 基督 on both sides), so its keyword hits
    do not change with a restart."""
    from bot.app import App
    from retrieval.fakes import HashEmbedder
    from retrieval.text import Tokenizer
    from tests.e2e.test_full_stack import DIM, _settings

    settings = _settings(tmp_path / "data")
    async with App(settings, embedder=HashEmbedder(DIM), llm=None) as app:
        assert await app.prepare_samples()
        grown = sorted(app.graph.query.terms() - app.graph.seed_terms())
        grown_cut = Tokenizer(terms=app.graph.query.terms())
        questions = [
            f"怎样{t}？"
            for t in grown
            if grown_cut(f"怎样{t}？") != app.encoder.tokenize(f"怎样{t}？")
        ][:20]
        assert questions  # some grown terms would cut differently as dictionary words
        before = [app.encoder.tokenize(q) for q in questions]
        hits_before = [
            [h.chunk.id for h in (await app.search.search(q, tracks=("keyword",))).hits]
            for q in questions
        ]
    async with App(settings, embedder=HashEmbedder(DIM), llm=None) as app:
        after = [app.encoder.tokenize(q) for q in questions]
        hits_after = [
            [h.chunk.id for h in (await app.search.search(q, tracks=("keyword",))).hits]
            for q in questions
        ]
    assert after == before
    assert hits_after == hits_before
    assert any(hits_before)
