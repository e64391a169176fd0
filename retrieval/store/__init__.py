"""Vector store adapters (Qdrant Edge in-process, Qdrant server by URL) and their errors.

The adapters live in `retrieval.store.edge` and `retrieval.store.server`; import them
directly so that only the SDK you use gets loaded.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class for vector store failures."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or is closed. `str(err)` is safe to show to users."""


class DimensionMismatch(StoreError, ValueError):
    """The store was built for vectors of another size (a different embedder)."""

    def __init__(self, stored: int, requested: int, where: str) -> None:
        super().__init__(
            f"vector store at {where} holds {stored}-d vectors but the embedder produces "
            f"{requested}-d vectors; switching embedders requires re-indexing "
            f"(delete the store or choose the embedder it was built with)"
        )
        self.stored = stored
        self.requested = requested


__all__ = ["DimensionMismatch", "StoreError", "StoreUnavailable"]
