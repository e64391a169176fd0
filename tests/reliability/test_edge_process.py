"""The Qdrant Edge shard in a child process (`retrieval.store.edge_process`): what happens when
either process goes away, Ctrl-C, engine errors crossing the socket, and many callers at once.
The contract suite (`tests/contract/test_vector_store.py`, backend `edge-process`) covers the
VectorStore behaviour itself."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from retrieval.ports import DenseAndSparseQuery
from retrieval.store import StoreError, StoreUnavailable, schema
from retrieval.store.edge import ON_DISK, EdgeStore, HeldChunks, Lane, ShardOp
from retrieval.store.edge_process import EdgeProcessStore
from retrieval.store.edge_shard import SentPayloads, ShardOps
from retrieval.types import Chunk, Filter, ScoredChunk, SparseVector
from tests.contract.test_vector_store import DIM, angle_vec, chunk, corpus, uid
from tests.reliability.helpers.processes import exited

ROOT = Path(__file__).resolve().parents[2]


async def test_a_killed_store_process_fails_its_calls_clearly_and_is_restarted(
    tmp_path: Path,
) -> None:
    s = await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK)
    try:
        await s.upsert(corpus())
        old = s.pid
        os.kill(old, signal.SIGSTOP)  # so the call below is in flight when the child dies
        in_flight = asyncio.ensure_future(s.search_dense(angle_vec(0.0), limit=3))
        await asyncio.sleep(0)  # its request is written
        os.kill(old, signal.SIGKILL)
        with pytest.raises(StoreUnavailable, match=r"process .* exited \(code -9\)"):
            await in_flight
        # The next call starts a new child on the same shard: the WAL kept every write.
        assert await s.count() == len(corpus())
        assert s.pid != old and s.restarts == 1
        hits = await s.search_dense(angle_vec(0.0), limit=1)
        assert hits[0].chunk.id == corpus()[0].chunk.id
    finally:
        await s.close()
    await exited(s.pid)


async def test_a_restart_that_cannot_open_the_shard_says_so(tmp_path: Path) -> None:
    s = await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK)
    try:
        old = s.pid
        os.kill(old, signal.SIGSTOP)
        in_flight = asyncio.ensure_future(s.count())
        await asyncio.sleep(0)
        (tmp_path / "q" / "baibao-store.json").write_text("{not json")
        os.kill(old, signal.SIGKILL)
        with pytest.raises(StoreUnavailable, match="exited"):
            await in_flight
        with pytest.raises(StoreError, match=r"baibao-store\.json") as caught:
            await s.count()  # the new child could not open the shard: the reason, not a hang
        assert not isinstance(caught.value, StoreUnavailable) and s.restarts == 0
    finally:
        await s.close()


_PARENT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from retrieval.store.edge import ON_DISK
    from retrieval.store.edge_process import EdgeProcessStore
    from tests.contract.test_vector_store import DIM, corpus

    async def main():
        s = await EdgeProcessStore.open(Path(sys.argv[1]), DIM, ON_DISK)
        await s.upsert(corpus())
        print(s.pid, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    asyncio.run(main())
    """
)


async def test_the_store_process_flushes_the_shard_when_its_parent_dies(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    parent = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _PARENT,
        str(tmp_path / "q"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    try:
        assert parent.stdout is not None
        child = int(await parent.stdout.readline())
        parent.kill()
        await parent.wait()
        await exited(child)  # end-of-file on its socket: it flushes the shard and exits
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()
    again = await EdgeStore.open(tmp_path / "q", DIM, ON_DISK)
    try:
        assert await again.count() == len(corpus())
    finally:
        await again.close()


async def test_ctrl_c_is_left_to_the_parent(tmp_path: Path) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus()[:3])
        os.kill(s.pid, signal.SIGINT)  # what a console's Ctrl-C sends the whole group
        assert await s.count() == 3


async def test_an_engine_error_comes_back_as_a_store_error_naming_the_shard(
    tmp_path: Path,
) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus()[:3])
        # A vector the store would refuse, sent past its checks: the engine refuses it, in
        # the child, with its own words.
        with pytest.raises(StoreError, match=r"Qdrant Edge \(.*q\): .*dimension") as caught:
            await s._read(ShardOps.search_dense, [1.0, 0.0], schema.plan(None), 3, False, None)
        assert not isinstance(caught.value, StoreUnavailable)
        assert await s.count() == 3  # the child serves on


async def test_many_callers_at_once_each_get_their_own_answer(tmp_path: Path) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        items = corpus()
        await s.upsert(items)
        thetas = [0.05 * i for i in range(40)]
        alone = [[h.chunk.id for h in await s.search_dense(angle_vec(t), limit=3)] for t in thetas]
        together = await asyncio.gather(
            *(s.search_dense(angle_vec(t), limit=3) for t in thetas),
            *(s.count() for _ in thetas),
        )
        assert [[h.chunk.id for h in hits] for hits in together[: len(thetas)]] == alone
        assert together[len(thetas) :] == [len(items)] * len(thetas)


async def test_close_stops_the_child(tmp_path: Path) -> None:
    s = await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK)
    pid = s.pid
    await s.close()
    await exited(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(StoreUnavailable, match="closed"):
        await s.count()


async def test_a_shard_removed_while_it_ran_fails_close_with_a_store_error_not_a_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import shutil

    s = await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK)
    await s.upsert(corpus()[:3])
    shutil.rmtree(tmp_path / "q")  # the data directory deleted under a running bot
    with pytest.raises(StoreError, match=r"Qdrant Edge \(.*q\): .*flush") as caught:
        await s.close()
    assert not isinstance(caught.value, StoreUnavailable)
    assert s._process.returncode == 1  # the child told its parent and exited
    assert "Traceback" not in capfd.readouterr().err


class _Vanishing(type(Path())):  # type: ignore[misc]
    """A shard path whose files are deleted while the warm-up lists them."""

    def glob(self, pattern: str, **_: Any) -> Any:
        raise FileNotFoundError(2, "No such file or directory", str(self / "segments"))


def test_the_warm_up_thread_ends_with_one_line_when_the_shards_files_vanish(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Under load the deletion in the test above lands while the child's warm-up thread still
    lists the shard's files (issue 40): the thread ends with one line, not a traceback."""
    import threading

    from retrieval.store import edge_process

    shard = _Vanishing(tmp_path / "q")
    thread = threading.Thread(target=edge_process._warm, args=(shard, threading.Event()))
    thread.start()
    thread.join()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in thread" not in err
    assert err.count("\n") == 1 and "stopped warming the vector store" in err, err
    assert "No such file or directory" in err


async def test_close_lets_the_calls_already_sent_finish(tmp_path: Path) -> None:
    s = await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK)
    await s.upsert(corpus())
    searches = [
        asyncio.ensure_future(s.search_dense(angle_vec(0.1 * i), limit=3)) for i in range(10)
    ]
    await asyncio.sleep(0)  # each task runs to its first await: its request is written by then
    await s.close()
    assert [len(f.result()) for f in searches] == [3] * 10
    with pytest.raises(StoreUnavailable, match="closed"):
        await s.search_dense(angle_vec(0.0), limit=3)


# ---- payloads this process holds are not sent again (ShardStore.elides) ----------------------


def _fused(theta: float) -> DenseAndSparseQuery:
    return DenseAndSparseQuery(
        angle_vec(theta), SparseVector((1,), (1.0,)), dense_limit=12, sparse_limit=12
    )


Found = list[list[tuple[str, float, Chunk]]]


async def _found(s: EdgeProcessStore, theta: float) -> Found:
    lists = await s.search_dense_and_sparse(_fused(theta))
    return [[(h.chunk.id, round(h.score, 5), h.chunk) for h in hits] for hits in lists]


async def test_a_repeated_search_is_answered_from_the_chunks_held_here(tmp_path: Path) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus())
        first = await _found(s, 0.3)
        assert s.held.hits == 0
        assert await _found(s, 0.3) == first
        distinct = {pid for hits in first for pid, _, _ in hits}
        assert s.held.hits == len(distinct) and s.held.misses == 0
        # by id too: the points the search read are not sent again
        listed = await s.scroll(Filter(ids=frozenset(distinct)))
        assert s.held.hits == 2 * len(distinct) and {c.id for c in listed} == distinct


async def test_a_payload_left_out_but_not_held_here_is_read_again(tmp_path: Path) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus())
        first = await _found(s, 0.3)
        s.held = HeldChunks(capacity=0)  # this side forgot what the child believes it holds
        assert await _found(s, 0.3) == first
        assert s.held.misses == len({pid for hits in first for pid, _, _ in hits})


async def test_a_new_store_process_sends_every_payload_again(tmp_path: Path) -> None:
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus())
        first = await _found(s, 0.3)
        os.kill(s.pid, signal.SIGKILL)
        with pytest.raises(StoreUnavailable):
            await _found(s, 0.3)
        again = await _found(s, 0.3)
        # (every point, but a reloaded shard may rank ties otherwise: the chunks are compared)
        assert [{pid: c for pid, _, c in hits} for hits in again] == [
            {pid: c for pid, _, c in hits} for hits in first
        ]
        assert s.restarts == 1 and s.held.misses == 0  # the new child knew it had sent nothing


def _count_calls(s: EdgeProcessStore) -> list[str]:
    """The names of the ops `s` sends its child from now on (its last: "close")."""
    sent: list[str] = []
    call = s._call

    async def counted(lane: Lane, op: ShardOp | None, *args: Any) -> Any:
        sent.append("close" if op is None else op.__name__)
        return await call(lane, op, *args)

    s._call = counted  # type: ignore[method-assign]
    return sent


@contextlib.asynccontextmanager
async def _after_a_search(
    tmp_path: Path,
) -> AsyncIterator[tuple[EdgeProcessStore, Found, frozenset[str], list[str]]]:
    """A store of the corpus after one fused search: the store, what the search found, the
    ids of those points, and the ops sent from then on."""
    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert(corpus())
        first = await _found(s, 0.3)
        ids = frozenset(pid for hits in first for pid, _, _ in hits)
        yield s, first, ids, _count_calls(s)


async def test_a_read_by_id_of_chunks_held_since_the_last_write_asks_nothing(
    tmp_path: Path,
) -> None:
    async with _after_a_search(tmp_path) as (s, first, ids, sent):
        listed = await s.scroll(Filter(ids=ids, equals={"type": "book"}))
        assert sent == [] and {c.id for c in listed} == {
            pid for hits in first for pid, _, c in hits if c.type == "book"
        }
        # one id not held (no such point): the child is asked
        assert len(await s.scroll(Filter(ids=ids | {uid(99)}))) == len(ids)
        assert sent[:1] == ["retrieve_elided"]


async def test_after_a_write_a_read_by_id_asks_the_child_again(tmp_path: Path) -> None:
    async with _after_a_search(tmp_path) as (s, first, _, sent):
        pid = first[0][0][0]
        n = next(k for k in range(12) if uid(k) == pid)
        changed = corpus()[n]
        await s.upsert([replace(changed, chunk=replace(changed.chunk, text="改过的原文"))])
        assert [c.text for c in await s.scroll(Filter(ids=frozenset({pid})))] == ["改过的原文"]
        assert sent[:2] == ["upsert", "retrieve_elided"]


async def test_a_read_answered_while_a_write_was_sent_leaves_the_generation_unknown(
    tmp_path: Path,
) -> None:
    async with _after_a_search(tmp_path) as (s, first, ids, sent):
        search = asyncio.ensure_future(_found(s, 0.3))
        await asyncio.sleep(0)  # the search is sent, then the write; the child serves in order
        await s.delete(Filter(ids=frozenset({uid(11)})))
        assert await search == first  # read before the write: its generation is an old one
        await s.scroll(Filter(ids=ids))
        assert sent[:3] == ["search_dense_and_sparse", "delete", "retrieve_elided"]


async def test_a_namespace_that_holds_every_point_keeps_out_a_point_written_later(
    tmp_path: Path,
) -> None:
    """The child leaves out the namespace condition while one namespace holds every point
    (`ShardOps.sole_namespace`); a point of another namespace brings it back."""
    in_corpus = Filter(equals={"namespace": "corpus"})
    near = angle_vec(0.35)  # between two points: the one written later sits on it

    def ranked(hits: list[ScoredChunk]) -> list[str]:
        """Best first; points the query is equally near (0.3 and 0.4 from 0.35) in id order,
        as a search path may return a tie either way."""
        return [h.chunk.id for h in sorted(hits, key=lambda h: (-round(h.score, 5), h.chunk.id))]

    async def both(s: EdgeProcessStore) -> list[list[str]]:
        query = DenseAndSparseQuery(near, SparseVector((1,), (1.0,)), in_corpus, 5, 5)
        return [ranked(hits) for hits in await s.search_dense_and_sparse(query)]

    async with await EdgeProcessStore.open(tmp_path / "q", DIM, ON_DISK) as s:
        await s.upsert([i for i in corpus() if i.chunk.namespace == "corpus"])
        alone = await both(s)
        everything = await s.search_dense(near, limit=5)
        assert alone[0] == ranked(everything)
        novel = next(i for i in corpus() if i.chunk.namespace != "corpus")
        await s.upsert([replace(novel, dense=near)])  # the nearest point of all, elsewhere
        assert (await s.search_dense(near, limit=1))[0].chunk.id == novel.chunk.id
        assert await both(s) == alone
        found = await s.search_dense(near, flt=in_corpus, limit=5)
        assert ranked(found) == alone[0]
        cited = await s.scroll(in_corpus)
        assert novel.chunk.id not in {c.id for c in cited} and len(cited) == 9


def test_the_sole_namespace_is_read_again_after_each_write(tmp_path: Path) -> None:
    ops = ShardOps.open(tmp_path / "q", DIM, ON_DISK, serial=True)
    try:
        assert ops.sole_namespace() is None  # no points: no namespace holds them all
        items = corpus()
        ops.upsert(schema.prepare([i for i in items if i.chunk.namespace == "corpus"], DIM))
        assert ops.sole_namespace() == "corpus"
        ops.upsert(schema.prepare([i for i in items if i.chunk.namespace != "corpus"], DIM))
        assert ops.sole_namespace() is None
    finally:
        ops.close()


def test_what_the_child_believes_is_held_here_is_held_here() -> None:
    """`SentPayloads` and `HeldChunks` of one capacity, used in the same order (held ones
    first, then the read ones, as the store does), with writes between: every id the child
    would leave out is held here for the child's generation."""
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    rng = random.Random(seed)
    sent, held = SentPayloads(capacity=20), HeldChunks(capacity=20)
    for _ in range(400):
        if rng.random() < 0.05:
            sent.written()
            continue
        ids = list(dict.fromkeys(uid(rng.randrange(60)) for _ in range(rng.randrange(1, 15))))
        left_out = [pid for pid in ids if sent.held(pid)]
        generation = sent.generation
        assert all(held.get(pid, generation) is not None for pid in left_out)
        read = [pid for pid in ids if pid not in left_out]
        sent.send(read)
        for pid in read:
            held.put(pid, generation, chunk(0, id=pid).payload())
    assert held.misses == 0 and held.hits > 0
