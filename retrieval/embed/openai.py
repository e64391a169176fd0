"""Embeddings from OpenAI (`text-embedding-3-large` …) or any OpenAI-compatible endpoint
(bge-m3 on Ollama / TEI / vLLM, by `base_url`), through the openai SDK.

The SDK retries 408/409/429/5xx and connection errors with backoff (honouring
`retry-after`); what still fails becomes `EmbeddingUnavailable`. The vector size is
`dimensions` when given, else a known model's size, else learnt from the first response
(`await probe()`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import openai
from openai import AsyncOpenAI
from openai.types import Embedding

from retrieval.embed import EmbeddingUnavailable

MAX_BATCH = 256  # inputs per request (OpenAI accepts up to 2048; compatible servers less)

KNOWN_DIMS = {
    "text-embedding-3-large": 3072,
    "text-embedding-3-small": 1536,
    "text-embedding-ada-002": 1536,
    "bge-m3": 1024,
    "BAAI/bge-m3": 1024,
}


class OpenAIEmbedder:
    def __init__(
        self,
        api_key: str | None,
        model: str,
        base_url: str | None = None,
        dimensions: int | None = None,
        *,
        batch_size: int = MAX_BATCH,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        encoding_format: Literal["float", "base64"] | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        if not model:
            raise ValueError("an embedding model name is required")
        if dimensions is not None and dimensions <= 0:
            raise ValueError(f"dimensions must be positive, got {dimensions}")
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be within 1..{MAX_BATCH}, got {batch_size}")
        if not api_key and not base_url:
            raise EmbeddingUnavailable(
                "unconfigured",
                "OpenAI embeddings need an API key (or a base URL of a compatible server)",
            )
        self._client = AsyncOpenAI(
            # Local compatible servers ignore the key, but the SDK requires one.
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout_s,
            max_retries=max_retries,
        )
        self._model = model
        self._dimensions = dimensions
        self._batch_size = batch_size
        # Compatible servers do not all decode base64; OpenAI's own API prefers it.
        self._encoding: Literal["float", "base64"] = encoding_format or (
            "float" if base_url else "base64"
        )
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._dim: int | None = dimensions or KNOWN_DIMS.get(model)

    @property
    def model_id(self) -> str:
        return f"openai/{self._model}" + (f"@{self._dimensions}" if self._dimensions else "")

    @property
    def dim(self) -> int:
        if self._dim is None:
            raise RuntimeError(
                f"the size of {self._model!r} vectors is not known yet: set its dimensions "
                f"or `await probe()` first"
            )
        return self._dim

    async def probe(self) -> int:
        """The vector size, asking the endpoint once when it is not known."""
        if self._dim is None:
            await self._embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise ValueError("embed_passages takes a list of texts, not one string")
        batch = [self._passage_prefix + _check(t) for t in texts]
        out: list[list[float]] = []
        for start in range(0, len(batch), self._batch_size):
            out.extend(await self._embed(batch[start : start + self._batch_size]))
        return out

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([self._query_prefix + _check(text)]))[0]

    async def _embed(self, batch: list[str]) -> list[list[float]]:
        if not batch:
            return []
        # The API rejects empty strings; a space embeds as "nothing" just as well.
        inputs = [t if t.strip() else " " for t in batch]
        try:
            response = await self._client.embeddings.create(
                model=self._model, input=inputs, **self._options()
            )
        except openai.RateLimitError as exc:
            raise EmbeddingUnavailable("rate_limited", _detail(exc)) from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingUnavailable("timeout", f"{self._model}: no answer in time") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingUnavailable("unavailable", f"cannot reach the server: {exc}") from exc
        except openai.APIStatusError as exc:
            kind = "unavailable" if exc.status_code >= 500 else "rejected"
            raise EmbeddingUnavailable(kind, _detail(exc)) from exc
        except openai.OpenAIError as exc:
            raise EmbeddingUnavailable("malformed", str(exc)) from exc
        return self._vectors(response.data, len(inputs))

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self._dimensions is not None:
            options["dimensions"] = self._dimensions
        if self._encoding == "float":
            # Left unset, the SDK asks for base64 and decodes it itself.
            options["encoding_format"] = "float"
        return options

    def _vectors(self, data: Sequence[Embedding], asked: int) -> list[list[float]]:
        """The answer's vectors in input order: one per input, all of the model's size."""
        rows = sorted(data, key=lambda d: d.index)
        if [d.index for d in rows] != list(range(asked)):
            raise EmbeddingUnavailable(
                "malformed", f"asked for {asked} embeddings, got {len(rows)}"
            )
        vectors = [[float(x) for x in d.embedding] for d in rows]
        sizes = {len(v) for v in vectors}
        if len(sizes) != 1:
            raise EmbeddingUnavailable("malformed", f"embeddings of mixed sizes {sorted(sizes)}")
        size = sizes.pop()
        if self._dim is None:
            self._dim = size
        elif size != self._dim:
            raise EmbeddingUnavailable(
                "malformed", f"{self._model} returned {size}-d vectors, expected {self._dim}"
            )
        return vectors

    async def aclose(self) -> None:
        await self._client.close()


def _check(text: str) -> str:
    if not isinstance(text, str):
        raise ValueError(f"texts must be strings, got {type(text).__name__}")
    return text


def _detail(exc: openai.APIStatusError) -> str:
    return f"HTTP {exc.status_code}: {exc.message}"
