"""The reading process (`ingest.read_process`): work crosses and comes back as it would on a
thread (results, and exceptions with their class and fields); until the child is ready, and
when it cannot start, work runs here; a child that dies idle is replaced without a trace, one
that dies with work in hand fails that work with a reason; the child is gone after `close`,
after a cancelled call, with its parent, and never reaches past loopback (the suite's network
block holds in it)."""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import pickle
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from ingest.loaders import LoadError, load_document
from ingest.manifest import ManifestError
from ingest.read_process import ReadFailed, ReadOffload, ReadProcess, ReadProcessLost
from ingest.uploads import ShelfFull
from kernel.child import child_env
from kernel.refusal import Refused
from tests.conftest import Refusals
from tests.reliability.helpers.processes import exited


class Unpicklable(Exception):
    """An exception whose constructor takes what `args` does not hold: it does not unpickle."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(f"{why} ({code})")


def _raise(exc: Exception) -> None:
    raise exc


def _raise_unpicklable() -> None:
    raise Unpicklable(7, "broken")


def _gone(pid: int) -> bool:
    """No such process (it exited and was reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def _kill_idle(reader: ReadProcess) -> None:
    """SIGKILL the idle child and wait until it is reaped (the next call cannot tell)."""
    pid = reader.pids[-1]
    os.kill(pid, signal.SIGKILL)
    assert reader._process is not None
    assert await reader._process.wait() == -signal.SIGKILL


def test_a_refusal_pickles_as_itself_with_its_fields() -> None:
    for error in (
        LoadError("中文原因", "the reason"),
        ShelfFull("书架已满", "the shelf is full"),
        ManifestError(Path("/a/manifest.toml"), "格式错误", "syntax error"),
    ):
        error.add_note("a note")
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error)
        assert (again.zh, again.en, again.reason, str(again), again.args) == (
            error.zh,
            error.en,
            error.reason,
            str(error),
            error.args,
        )
        assert again.__notes__ == ["a note"]
    manifest = pickle.loads(pickle.dumps(ManifestError(Path("/m.toml"), "错", "wrong")))
    assert manifest.path == Path("/m.toml") and isinstance(manifest, ValueError)


async def test_work_and_its_failures_come_back_as_on_a_thread(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# 标题\n\n神圣的分赐。\n", encoding="utf-8")
    reader = ReadProcess()
    try:
        await reader.start()
        loaded = await reader(functools.partial(load_document, doc))
        assert loaded == load_document(doc)
        assert await reader(os.getpid) == reader.pids[0] != os.getpid()  # it ran there

        with pytest.raises(LoadError) as refused:  # a loader's refusal, raised there
            await reader(functools.partial(load_document, doc, 3))
        with pytest.raises(LoadError) as here:
            load_document(doc, 3)
        assert type(refused.value) is LoadError
        assert (refused.value.zh, refused.value.en) == (here.value.zh, here.value.en)

        with pytest.raises(Refused) as no:
            await reader(functools.partial(_raise, Refused("full", documents=3)))
        assert (no.value.reason, no.value.fields) == ("full", {"documents": 3})

        with pytest.raises(FileNotFoundError) as missing:
            await reader(functools.partial(Path.read_bytes, tmp_path / "none"))
        assert missing.value.errno == errno.ENOENT
        assert missing.value.filename == str(tmp_path / "none")
        assert any("in the reading process" in n for n in missing.value.__notes__)

        with pytest.raises(MemoryError):
            await reader(functools.partial(_raise, MemoryError()))

        with pytest.raises(ReadFailed) as failed:  # crosses by its name and message
            await reader(_raise_unpicklable)
        assert (failed.value.kind, str(failed.value)) == ("Unpicklable", "broken (7)")
        assert "_raise_unpicklable" in failed.value.__notes__[0]  # the child's traceback
        assert pickle.loads(pickle.dumps(failed.value)).kind == "Unpicklable"

        assert reader.served == 7 and len(reader.pids) == 1  # one child did it all
    finally:
        await reader.close()
    assert _gone(reader.pids[0])


async def test_a_child_that_dies_idle_is_replaced_without_failing_the_next_work() -> None:
    reader = ReadProcess()
    try:
        await reader.start()
        first = await reader(os.getpid)
        await _kill_idle(reader)
        assert await reader(os.getpid) == os.getpid()  # here, while the next one starts
        await reader.start()
        second = await reader(os.getpid)
        assert reader.pids == [first, second] and first != second
    finally:
        await reader.close()


@pytest.mark.parametrize(
    ("work", "reason"),
    [
        (functools.partial(os._exit, 3), "exit code 3"),
        (functools.partial(signal.raise_signal, signal.SIGKILL), "killed by signal 9"),
    ],
    ids=["exit", "sigkill"],
)
async def test_a_child_that_dies_with_the_work_in_hand_fails_that_work_with_a_reason(
    work: functools.partial[None], reason: str
) -> None:
    reader = ReadProcess()
    try:
        await reader.start()
        with pytest.raises(ReadProcessLost) as lost:
            await reader(work)
        assert isinstance(lost.value, LoadError)
        assert reason in lost.value.en and "ingest it again" in lost.value.en
        assert "请重新导入" in lost.value.zh
        await reader(os.getpid)  # (here: it starts the next child)
        await reader.start()
        assert await reader(os.getpid) == reader.pids[1]  # the next work: a new child
    finally:
        await reader.close()
    assert all(_gone(pid) for pid in reader.pids)


async def test_after_its_last_child_it_reads_on_a_thread_here() -> None:
    reader = ReadProcess(max_starts=1)
    try:
        await reader.start()
        await _kill_idle(reader)
        await reader.start()  # none: it was the last
        assert await reader(os.getpid) == os.getpid()
        assert len(reader.pids) == 1
    finally:
        await reader.close()


async def test_a_cancelled_call_ends_its_child_and_close_leaves_none() -> None:
    reader = ReadProcess()
    await reader.start()
    call = asyncio.ensure_future(reader(functools.partial(time.sleep, 3600)))
    await asyncio.sleep(0)  # sent
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert _gone(reader.pids[0])  # killed and reaped, not left sleeping
    await reader.close()
    await reader.close()  # twice: nothing left to do
    unused = ReadProcess()
    await unused.close()  # never started: nothing to do
    assert unused.pids == []
    starting = ReadProcess()
    starting.start()
    await starting.close()  # still starting: stopped, and nothing left
    assert all(_gone(pid) for pid in starting.pids)


async def test_until_the_child_is_warm_and_when_it_cannot_start_work_runs_here() -> None:
    reader = ReadProcess(warm=functools.partial(time.sleep, 3600))  # never warm
    try:
        reader.start()
        assert await reader(os.getpid) == os.getpid()
        assert reader.served == 0 and len(reader.pids) <= 1
    finally:
        await reader.close()
    assert all(_gone(pid) for pid in reader.pids)
    broken = ReadProcess(warm=functools.partial(os._exit, 1))  # dies as it starts
    try:
        await broken.start()
        assert await broken(os.getpid) == os.getpid()
        await broken.start()  # no other one
        assert len(broken.pids) == 1
    finally:
        await broken.close()


async def test_work_that_does_not_pickle_fails_here_and_leaves_the_child_serving() -> None:
    reader = ReadProcess()
    try:
        await reader.start()
        with pytest.raises((pickle.PicklingError, AttributeError)):
            await reader(lambda: os.getpid())
        assert await reader(os.getpid) == reader.pids[0] and len(reader.pids) == 1
    finally:
        await reader.close()


async def test_the_network_block_holds_in_the_child(refused_connections: Refusals) -> None:
    reader = ReadProcess()
    try:
        await reader.start()
        with pytest.raises(Exception) as blocked:
            # (create_connection resolves through the block's getaddrinfo, there)
            await reader(functools.partial(socket.create_connection, ("example.com", 443)))
        assert "NetworkBlocked" in f"{type(blocked.value).__name__} {blocked.value!r}" or (
            isinstance(blocked.value, ReadFailed) and blocked.value.kind == "NetworkBlocked"
        )
    finally:
        await reader.close()
    child = reader.pids[0]
    assert any(f"pid {child}:" in line and "example.com" in line for line in refused_connections())


BUSY_PARENT = """
import asyncio, functools, time
from ingest.read_process import ReadProcess

async def main():
    reader = ReadProcess()
    await reader.start()
    print(reader.pids[0], flush=True)
    await reader(functools.partial(time.sleep, 3600))

asyncio.run(main())
"""


async def test_a_child_busy_with_work_dies_with_its_parent() -> None:
    """The parent SIGKILLed while its child sleeps in a piece of work: the child does not
    finish it (it would for an hour), the kernel kills it with its parent."""
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", BUSY_PARENT, stdout=asyncio.subprocess.PIPE, env=child_env()
    )
    assert parent.stdout is not None
    child = int(await parent.stdout.readline())
    parent.kill()
    assert await parent.wait() == -signal.SIGKILL
    await exited(child)  # (a child that did not die would hang here)


def test_only_an_ingest_large_enough_reads_in_a_process(tmp_path: Path) -> None:
    small, large = tmp_path / "small.md", tmp_path / "large.md"
    small.write_bytes(b"x" * 1000)
    large.write_bytes(b"x" * 300_000)
    policy = ReadOffload()
    assert not policy.wants([large])  # one document: nothing to overlap its reading with
    assert not policy.wants([small, small.with_name("gone.md")])  # too little to pay
    assert policy.wants([small, large])
    assert not ReadOffload(enabled=False).wants([small, large])
    assert ReadOffload(min_bytes=0).wants([small, small])
