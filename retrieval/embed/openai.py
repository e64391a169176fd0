"""Embeddings from OpenAI (`text-embedding-3-large` …) or any OpenAI-compatible endpoint
(bge-m3 on Ollama / TEI / vLLM, by `base_url`), through the openai SDK.

Several batches in flight: `embed_passages` cuts its texts into batches of `batch_size` and
sends them together, at most `concurrency` requests at a time across every caller of this
embedder (`RequestWindow`, `EMBEDDING_CONCURRENCY`), so a bulk ingest keeps the server busy
instead of waiting for each answer before sending the next batch.

Retries are done here, with the SDK's own turned off: 408, 429, 5xx, timeouts and connection
errors get `max_retries` more attempts after exponential backoff (`RetryPolicy`, as the model
adapters), or after exactly what `retry-after-ms` / `retry-after` asks when the server says.
A 429 also holds back every request of this embedder until that time has passed and halves the
requests allowed in flight (they grow back one at a time as answers come). A server asking for
more than `RetryPolicy.max_retry_after_s` is not waited for. What still fails becomes
`EmbeddingUnavailable`. The vector size is `dimensions` when given, else a known model's size,
else learnt from the first response (`await probe()`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import openai
from openai import AsyncOpenAI

from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.embed import EmbeddingUnavailable
from retrieval.embed.window import RequestWindow
from retrieval.llm.base import RetryPolicy, kind_for_status, retry_after_seconds

MAX_BATCH = 256  # inputs per request (OpenAI accepts up to 2048; compatible servers less)
DEFAULT_CONCURRENCY = 4  # requests in flight (EMBEDDING_CONCURRENCY)

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
        concurrency: int = DEFAULT_CONCURRENCY,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not model:
            raise ValueError("an embedding model name is required")
        if dimensions is not None and dimensions <= 0:
            raise ValueError(f"dimensions must be positive, got {dimensions}")
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be within 1..{MAX_BATCH}, got {batch_size}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
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
            max_retries=0,  # retried here, every request in flight heeding a 429 (see above)
        )
        self._policy = RetryPolicy(max_retries=max_retries, timeout_s=timeout_s)
        self._clock = clock
        self.window = RequestWindow(concurrency, clock)
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
        size = self._batch_size
        parts = [batch[start : start + size] for start in range(0, len(batch), size)]
        if len(parts) <= 1:
            return await self._embed(batch)
        # Every batch at once; the window decides how many are really in flight.
        tasks = [asyncio.ensure_future(self._embed(part)) for part in parts]
        try:
            done = await asyncio.gather(*tasks)
        finally:
            for task in tasks:  # one failed: the others are not waited for
                task.cancel()
        return [vector for part in done for vector in part]

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([self._query_prefix + _check(text)]))[0]

    async def _embed(self, batch: list[str]) -> list[list[float]]:
        if not batch:
            return []
        # The API rejects empty strings; a space embeds as "nothing" just as well.
        inputs = [t if t.strip() else " " for t in batch]
        body = await self._request(inputs)
        return self._vectors(_parse(body, len(inputs)))

    async def _request(self, inputs: list[str]) -> object:
        """One batch, retried as the module docstring says; the answer's JSON.

        The body is read as JSON here, not by the SDK: the SDK builds a typed object for every
        float of every vector (~35 µs each, a whole core for 27 chunks/s of 1024-d vectors,
        bench/results/embed-server.md), `json.loads` reads them at C speed."""
        retries = 0
        while True:
            async with self.window.slot():
                try:
                    raw = await self._client.embeddings.with_raw_response.create(
                        model=self._model, input=inputs, **self._options()
                    )
                    response = json.loads(raw.http_response.content)
                except ValueError as exc:  # not JSON
                    raise EmbeddingUnavailable(
                        "malformed", f"the answer is not JSON: {exc}"
                    ) from exc
                except openai.OpenAIError as exc:
                    failure = _failure(exc, self._model)
                else:
                    self.window.succeeded()
                    return response
                delay = self._policy.backoff(retries) if failure.wait is None else failure.wait
                too_long = delay > self._policy.max_retry_after_s  # asked to wait too long
                if failure.error.kind == "rate_limited" and not too_long:
                    self.window.throttled(delay)
            if not failure.retry or retries >= self._policy.max_retries or too_long:
                raise failure.error from failure.cause
            await self._clock.sleep(delay)
            retries += 1

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self._dimensions is not None:
            options["dimensions"] = self._dimensions
        if self._encoding == "float":
            # Left unset, the SDK asks for base64 and decodes it itself.
            options["encoding_format"] = "float"
        return options

    def _vectors(self, vectors: list[list[float]]) -> list[list[float]]:
        """The vectors, checked: all of the model's size (learnt from the first answer)."""
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


def _parse(body: object, asked: int) -> list[list[float]]:
    """The answer's vectors in input order (float lists, or base64 of little-endian float32),
    one for each of the `asked` inputs; anything else is "malformed"."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise EmbeddingUnavailable("malformed", "the answer has no list of embeddings")
    by_index: dict[int, list[float]] = {}
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        vector = _vector(item.get("embedding")) if isinstance(item, dict) else None
        if not isinstance(index, int) or vector is None or index in by_index:
            raise EmbeddingUnavailable("malformed", "an embedding without its index or vector")
        by_index[index] = vector
    if sorted(by_index) != list(range(asked)):
        raise EmbeddingUnavailable("malformed", f"asked for {asked} embeddings, got {len(data)}")
    return [by_index[i] for i in range(asked)]


def _vector(value: object) -> list[float] | None:
    if isinstance(value, str):
        try:
            packed = base64.b64decode(value, validate=True)
        except binascii.Error:
            return None
        if not packed or len(packed) % 4:
            return None
        vector: list[float] = np.frombuffer(packed, dtype="<f4").tolist()
        return vector
    if not isinstance(value, list) or not value:
        return None
    # The element types in one pass in C (a per-float check cost ~0.9 ms a 1024-d vector on the
    # event loop, a tenth of ingest's CPU). `bool` is a type of its own, so it is refused.
    kinds = set(map(type, value))
    if kinds == {float}:
        return value  # the floats json.loads made, kept as they are
    if kinds <= _NUMBER_TYPES:
        return [float(x) for x in value]
    return None


_NUMBER_TYPES = frozenset({int, float})


def _detail(exc: openai.APIStatusError) -> str:
    return f"HTTP {exc.status_code}: {exc.message}"


@dataclass(frozen=True, slots=True)
class _Failure:
    cause: openai.OpenAIError
    error: EmbeddingUnavailable
    retry: bool  # another attempt may succeed
    wait: float | None = None  # what the server asked for (retry-after), in seconds


def _failure(exc: openai.OpenAIError, model: str) -> _Failure:
    """What the SDK raised, as the error users see and whether to try again."""
    if isinstance(exc, openai.APITimeoutError):  # a connection error too: checked first
        return _Failure(exc, EmbeddingUnavailable("timeout", f"{model}: no answer in time"), True)
    if isinstance(exc, openai.APIConnectionError):
        detail = f"cannot reach the server: {exc}"
        return _Failure(exc, EmbeddingUnavailable("unavailable", detail), True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        kind = "rate_limited" if status == 429 else "unavailable" if status >= 500 else "rejected"
        retry = kind_for_status(status) is not None  # 408, 429, 5xx
        wait = retry_after_seconds(exc.response.headers)
        return _Failure(exc, EmbeddingUnavailable(kind, _detail(exc)), retry, wait)
    return _Failure(exc, EmbeddingUnavailable("malformed", str(exc)), False)
