"""The shared work of in-process (offline) embedders.

A subclass declares its model (`spec`: a `LocalModel`), loads it (`_load`) and encodes a batch
(`_encode_passages`, optionally `_encode_query`); this base runs every call on one dedicated
worker thread — the models are CPU-bound and not shared between threads — in batches, so the
event loop stays free and a query waits behind at most one batch.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True, slots=True)
class LocalModel:
    """An in-process model, as its embedder declares it."""

    model_id: str  # names the vector space (cache key, store compatibility check)
    dim: int
    thread_name: str  # the worker thread's name prefix
    batch_size: int  # texts per call to the model, unless the embedder is given another


class LocalEmbedder(abc.ABC):
    spec: ClassVar[LocalModel]
    model_id: str
    dim: int

    def __init__(self, batch_size: int | None = None, num_threads: int | None = None) -> None:
        """`batch_size` defaults to the model's; `num_threads` (the threads the model may use)
        is `_load`'s to pass on, None leaving it to the model."""
        batch_size = self.spec.batch_size if batch_size is None else batch_size
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model_id = self.spec.model_id
        self.dim = self.spec.dim
        self._batch_size = batch_size
        self._num_threads = num_threads
        self._model: Any = None
        self._started = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.spec.thread_name)

    @abc.abstractmethod
    def _load(self) -> Any:
        """Load and return the model (called once, on the worker thread)."""

    @abc.abstractmethod
    def _encode_passages(self, model: Any, texts: list[str]) -> Any:
        """A (len(texts), dim) array of passage vectors."""

    def _encode_query(self, model: Any, text: str) -> Any:
        """A (dim,) query vector; models without query/passage asymmetry reuse passages."""
        return self._encode_passages(model, [text])[0]

    def start_loading(self) -> None:
        """Load the model on the worker thread now, not on the first call (which then waits
        for the load, if still running, like any call behind another)."""
        self._started = True
        self._worker.submit(self._model_on_worker)

    @property
    def started(self) -> bool:
        """Whether the model has begun to load (`start_loading`, or a first call)."""
        return self._started

    def _model_on_worker(self) -> Any:
        self._started = True
        if self._model is None:
            self._model = self._load()
        return self._model

    def _passages(self, texts: list[str]) -> list[list[float]]:
        matrix = np.asarray(self._encode_passages(self._model_on_worker(), texts), np.float32)
        if matrix.shape != (len(texts), self.dim):
            raise RuntimeError(
                f"{self.model_id} produced shape {matrix.shape}, expected ({len(texts)}, {self.dim})"
            )
        return [row.tolist() for row in _normalised(matrix)]

    def _query(self, text: str) -> list[float]:
        vector = np.asarray(self._encode_query(self._model_on_worker(), text), np.float32)
        if vector.shape != (self.dim,):
            raise RuntimeError(
                f"{self.model_id} produced shape {vector.shape}, expected ({self.dim},)"
            )
        row: list[float] = _normalised(vector[None, :])[0].tolist()
        return row

    async def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        batch = check_texts(texts)
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

    async def aclose(self) -> None:
        self.close()


def _normalised(matrix: Any) -> Any:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)  # models give unit length; guard zeros


def check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("embed_passages takes a list of texts, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise ValueError(f"texts must be strings, got {type(t).__name__}")
    return out
