"""Optional extraction by a language model, in the style of LightRAG: typed entities and typed
relations read from the passages, on top of what the offline growth found. Never required.

- **Batched.** Chunks go to the model in batches of about BATCH_TOKENS tokens of text.
- **Cached by content hash.** A batch's key is the hash of the prompt version, the model and
  its texts; the model's answer is stored (`graph_llm_cache`) the moment it arrives, so a pass
  that is killed resumes where it stopped and an unchanged document costs nothing again.
- **Costed.** `plan()` estimates the tokens a pass will spend before anything is sent (only
  the batches not cached yet); the pass reports what the model says it actually used.
- **Provenance.** A document's extraction is stored under `llm:<doc_id>` (title "<title>
  (LLM)"): deleting or re-ingesting the document removes it with the rest of its share.

The model answers one JSON object per line:
    {"entity": "得胜者", "type": "concept", "en": "overcomers"}
    {"relation": "包含", "source": "祭司职分", "target": "君尊的祭司职分"}
Lines that do not parse, unknown types or relations, and relations between names the batch
did not name are dropped (counted in `ExtractionReport.dropped`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from retrieval.graph.linking import fold, term_key
from retrieval.graph.model import RELATION_INFO, Edge, Node
from retrieval.llm.base import estimate_tokens
from retrieval.ports import LLM, LLMRequest, Message
from retrieval.types import Chunk

PROMPT_VERSION = "graph-extract-1"
BATCH_TOKENS = 1500
OUTPUT_TOKENS = 800  # the answer budget per batch (also the estimate of what it costs)
ENTITY_TYPES = frozenset({"concept", "person", "book", "topic"})
LLM_PREFIX = "llm:"

SYSTEM = (
    "你是一个神学知识图谱的抽取器。从给出的段落中找出重要的实体和它们之间的关系。\n"
    "每行输出一个 JSON 对象，不要输出别的文字：\n"
    '实体：{"entity": "中文名称", "type": "concept|person|book|topic", "en": "English name"}\n'
    '关系：{"relation": "发展自|发展|包含|根基于|阐明|对应|相关", "source": "名称", "target": "名称"}\n'
    "只使用段落中出现的名称；关系的两端必须是你列出的实体。"
)


def llm_doc(doc_id: str) -> str:
    """The provenance id of a document's LLM extraction."""
    return LLM_PREFIX + doc_id


@dataclass(frozen=True, slots=True)
class Batch:
    key: str  # content hash
    chunks: tuple[Chunk, ...]
    prompt: str

    @property
    def estimated_tokens(self) -> int:
        return estimate_tokens(SYSTEM) + estimate_tokens(self.prompt) + OUTPUT_TOKENS


@dataclass(frozen=True, slots=True)
class Plan:
    batches: tuple[Batch, ...]
    cached: frozenset[str]  # keys already answered

    @property
    def to_send(self) -> list[Batch]:
        return [b for b in self.batches if b.key not in self.cached]

    @property
    def estimated_tokens(self) -> int:
        """Tokens the pass will spend (input + answer budget), cached batches excluded."""
        return sum(b.estimated_tokens for b in self.to_send)


@dataclass(slots=True)
class ExtractionReport:
    batches: int = 0
    sent: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    entities: int = 0
    relations: int = 0
    dropped: int = 0


@dataclass(slots=True)
class Extraction:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: set[Edge] = field(default_factory=set)
    mentions: set[tuple[str, str]] = field(default_factory=set)


class AnswerCache(Protocol):
    """Where answers are kept (`KnowledgeGraph.answer_cache()`: SQLite, or memory)."""

    async def get(self, keys: Sequence[str]) -> dict[str, str]: ...

    async def put(self, key: str, answer: str, input_tokens: int, output_tokens: int) -> None: ...


class MemoryAnswers:
    """An AnswerCache in memory (an in-memory graph has nowhere else to keep them)."""

    def __init__(self) -> None:
        self._answers: dict[str, str] = {}

    async def get(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: self._answers[k] for k in keys if k in self._answers}

    async def put(self, key: str, answer: str, input_tokens: int, output_tokens: int) -> None:
        self._answers[key] = answer


def batches(chunks: Sequence[Chunk], model: str, budget: int = BATCH_TOKENS) -> list[Batch]:
    groups: list[list[Chunk]] = [[]]
    size = 0
    for c in chunks:
        n = estimate_tokens(c.text)
        if groups[-1] and size + n > budget:
            groups.append([])
            size = 0
        groups[-1].append(c)
        size += n
    out = []
    for group in groups:
        if not group:
            continue
        prompt = "\n\n".join(f"[{i + 1}] {c.text}" for i, c in enumerate(group))
        key = hashlib.sha256(f"{PROMPT_VERSION}\x00{model}\x00{prompt}".encode()).hexdigest()
        out.append(Batch(key, tuple(group), prompt))
    return out


class LLMExtractor:
    def __init__(
        self, llm: LLM, cache: AnswerCache, model: str, *, batch_tokens: int = BATCH_TOKENS
    ) -> None:
        self._llm = llm
        self._cache = cache
        self._model = model
        self._batch_tokens = batch_tokens

    async def plan(self, chunks: Sequence[Chunk]) -> Plan:
        found = batches(chunks, self._model, self._batch_tokens)
        cached = await self._cache.get([b.key for b in found])
        return Plan(tuple(found), frozenset(cached))

    async def run(
        self,
        plan: Plan,
        on_batch: Callable[[int, int], Awaitable[None] | None] | None = None,
    ) -> tuple[Extraction, ExtractionReport]:
        report = ExtractionReport(batches=len(plan.batches))
        answers = await self._cache.get([b.key for b in plan.batches])
        for done, batch in enumerate(plan.batches, 1):
            if batch.key not in answers:
                response = await self._llm.complete(
                    LLMRequest(
                        system=SYSTEM,
                        messages=[Message("user", batch.prompt)],
                        max_tokens=OUTPUT_TOKENS,
                        temperature=0.0,
                    )
                )
                answers[batch.key] = response.text
                await self._cache.put(
                    batch.key, response.text, response.input_tokens, response.output_tokens
                )
                report.sent += 1
                report.input_tokens += response.input_tokens
                report.output_tokens += response.output_tokens
            if on_batch is not None:
                result = on_batch(done, len(plan.batches))
                if result is not None:
                    await result
        extraction = Extraction()
        for batch in plan.batches:
            read(answers[batch.key], batch.chunks, extraction, report)
        return extraction, report


def read(answer: str, chunks: Sequence[Chunk], out: Extraction, report: ExtractionReport) -> None:
    """Parse one batch's answer into nodes, edges and mentions."""
    named: dict[str, str] = {}  # folded name → node id
    relations: list[tuple[str, str, str]] = []
    for item in _objects(answer, report):
        if isinstance(item.get("entity"), str) and item.get("type") in ENTITY_TYPES:
            node = _entity(item)
            if node is None:
                report.dropped += 1
                continue
            out.nodes.setdefault(node.id, node)
            named[term_key(node.label)] = node.id
            report.entities += 1
        elif item.get("relation") in RELATION_INFO and item["relation"] != "著作":
            relations.append(
                (str(item.get("source", "")), item["relation"], str(item.get("target", "")))
            )
        else:
            report.dropped += 1
    for source, relation, target in relations:
        src, dst = named.get(term_key(source)), named.get(term_key(target))
        if src is None or dst is None or src == dst:
            report.dropped += 1
            continue
        out.edges.add(Edge(src, dst, relation))
        report.relations += 1
    for c in chunks:
        text = fold(c.text)
        for key, node_id in named.items():
            if key and key in text:
                out.mentions.add((c.id, node_id))


def _objects(answer: str, report: ExtractionReport) -> Iterator[dict[str, Any]]:
    """The JSON objects of an answer, one a line; a line that is no object is dropped."""
    for line in answer.splitlines():
        line = line.strip().strip(",")
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except ValueError:
            report.dropped += 1
            continue
        if isinstance(item, dict):
            yield item
        else:
            report.dropped += 1


def _entity(item: dict[str, Any]) -> Node | None:
    """An entity line as a node (its English name an alias); None when the name is blank."""
    name = str(item["entity"]).strip()
    if not name:
        return None
    english = item.get("en")
    aliases = (english.strip(),) if isinstance(english, str) and english.strip() else ()
    return Node(f"{item['type']}:{name}", item["type"], name, aliases)
