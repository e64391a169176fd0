"""The optional LLM extraction with the real SDK adapters (anthropic, openai) over HTTP to the
loopback model server: typed entities and relations, batches, the token cost before and after,
answers cached by content hash (a killed pass resumes), provenance under `llm:<doc>`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from retrieval.graph import KnowledgeGraph
from retrieval.graph.extract_llm import LLMExtractor, llm_doc
from retrieval.llm.anthropic import ClaudeLLM
from retrieval.llm.base import RetryPolicy
from retrieval.llm.openai import OpenAICompatLLM
from retrieval.ports import LLM, LLMError
from retrieval.types import Chunk
from tests.stubs.llm_server import (
    LLMStubServer,
    Scripted,
    anthropic_error,
    anthropic_message,
    openai_completion,
)

FAST = RetryPolicy(max_retries=1, timeout_s=30.0, base_delay_s=0.01, max_delay_s=0.02)
DOC = "doc-priesthood"
PASSAGES = [
    "祭司职分有两面：圣别的祭司职分向着神，君尊的祭司职分向着人。" * 8,
    "圣别的祭司职分产生君尊的祭司职分；先在至圣所接触神，后在外面代表神。" * 8,
]
ANSWER = "\n".join(
    json.dumps(x, ensure_ascii=False)
    for x in [
        {"entity": "祭司职分", "type": "concept", "en": "priesthood"},
        {"entity": "君尊的祭司职分", "type": "concept", "en": "royal priesthood"},
        {"entity": "圣别的祭司职分", "type": "concept", "en": "holy priesthood"},
        {"relation": "包含", "source": "祭司职分", "target": "君尊的祭司职分"},
        {"relation": "发展自", "source": "君尊的祭司职分", "target": "圣别的祭司职分"},
        {"relation": "包含", "source": "祭司职分", "target": "不在列表里"},
        {"entity": "x", "type": "spaceship"},
    ]
)


def chunks() -> list[Chunk]:
    return [
        Chunk(f"00000000-0000-0000-0000-00000000000{i}", t, t, DOC, "新约的祭司职分", "outline")
        for i, t in enumerate(PASSAGES)
    ]


def claude(server: LLMStubServer) -> LLM:
    return ClaudeLLM("test-key", base_url=server.url, policy=FAST, timeout_s=FAST.timeout_s)


def openai(server: LLMStubServer) -> LLM:
    return OpenAICompatLLM(
        "test-key", base_url=server.openai_url, policy=FAST, timeout_s=FAST.timeout_s
    )


def script_ok(server: LLMStubServer, provider: str, answer: str = ANSWER) -> None:
    if provider == "anthropic":
        server.anthropic.append(Scripted.json(anthropic_message([(answer, [])])))
    else:
        server.openai.append(Scripted.json(openai_completion(answer)))


@pytest.fixture
async def server() -> AsyncIterator[LLMStubServer]:
    async with LLMStubServer() as s:
        yield s


@pytest.mark.parametrize(("provider", "make"), [("anthropic", claude), ("openai", openai)])
async def test_extraction_costs_caches_and_resumes(
    server: LLMStubServer, tmp_path: Path, provider: str, make: Callable[[LLMStubServer], LLM]
) -> None:
    graph = await KnowledgeGraph.open(tmp_path / "g.sqlite3")
    llm = make(server)
    extractor = LLMExtractor(llm, graph.answer_cache(), model="stub-model", batch_tokens=300)
    docs = chunks()
    plan = await extractor.plan(docs)
    batches = plan.batches
    assert len(batches) == 2 and plan.cached == frozenset()
    assert plan.estimated_tokens > 0  # shown before anything is sent

    # the first batch is answered, the second fails: the pass stops (as if killed) …
    script_ok(server, provider)
    for _ in range(2):
        if provider == "anthropic":
            server.anthropic.append(Scripted.error(529, anthropic_error("overloaded_error")))
        else:
            server.openai.append(Scripted.error(503, {"error": {"message": "busy"}}))
    with pytest.raises(LLMError):
        await extractor.run(plan)

    # … and the next pass sends only what is missing; its cost says so before and after
    again = await extractor.plan(docs)
    assert len(again.to_send) == 1 and again.estimated_tokens < plan.estimated_tokens
    script_ok(server, provider)
    extraction, report = await extractor.run(again)
    assert report.sent == 1 and report.input_tokens == 321 and report.output_tokens == 45
    assert report.entities == 6 and report.relations == 4 and report.dropped == 4
    requests = server.requests_to(
        "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    )
    assert len(requests) == 4  # ok, failed twice (one retry), ok

    await graph.add_extraction(DOC, "新约的祭司职分", extraction)
    assert graph.query.has_edge("concept:祭司职分", "concept:君尊的祭司职分", "包含")
    assert graph.query.has_edge("concept:君尊的祭司职分", "concept:圣别的祭司职分", "发展自")
    assert "royal priesthood" in graph.query.node("concept:君尊的祭司职分").aliases
    assert graph.query.chunks_for("concept:祭司职分") == {c.id for c in docs}
    assert graph.query.edge_sources("concept:祭司职分", "concept:君尊的祭司职分", "包含") == (
        "新约的祭司职分 (LLM)",
    )

    # everything cached now: a third pass costs nothing
    assert (await extractor.plan(docs)).estimated_tokens == 0
    # deleting the document removes its extraction too
    await graph.delete_document(DOC)
    assert graph.query.node("concept:君尊的祭司职分") is None
    assert llm_doc(DOC) not in graph.stats() and graph.stats()["documents"] == 0
    await graph.close()
    close: Any = getattr(llm, "aclose", None)
    if close is not None:
        await close()
