"""An in-process embedder hands its thread one batch of passages at a time
(`retrieval.embed.local`): a query that comes while a large document is embedded waits behind
the batch running, and goes before the document's next one."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np

from retrieval.embed.local import LocalEmbedder, LocalModel


class Recording(LocalEmbedder):
    spec = LocalModel("recording", dim=4, thread_name="recording", batch_size=1)

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []
        self.running = threading.Event()
        self.release = threading.Event()

    def _load(self) -> Any:
        return object()

    def _encode_passages(self, model: Any, texts: list[str]) -> Any:
        self.running.set()
        self.release.wait(timeout=30)  # a hang guard, not a time limit
        self.order.extend(texts)
        return np.ones((len(texts), 4), np.float32)

    def _encode_query(self, model: Any, text: str) -> Any:
        self.order.append(f"query {text}")
        return np.ones(4, np.float32)


async def test_a_query_waits_behind_one_batch_not_the_document() -> None:
    embedder = Recording()
    ingest = asyncio.create_task(embedder.embed_passages(["p1", "p2", "p3"]))
    await asyncio.to_thread(embedder.running.wait, 30)  # p1 is on the thread
    question = asyncio.create_task(embedder.embed_query("q"))
    await asyncio.sleep(0)
    embedder.release.set()
    await asyncio.gather(ingest, question)
    assert embedder.order == ["p1", "query q", "p2", "p3"]
    embedder.close()
