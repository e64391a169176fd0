"""The Qdrant Edge shard in a process of its own: `EdgeProcessStore`.

Why: a Qdrant Edge call (qdrant-edge-py 0.9.0) holds the GIL for its whole run, so in one
process the three search tracks, the graph walk, the relevance evidence and the bot's event
loop take turns with the engine: a fused search at a million chunks costs the sum of their CPU
(bench/results/million.md). With the shard in a child, the engine's work and this process's
Python run on two cores at once; same results, the store's searches no longer stall the bot.

The two processes talk over a Unix socket pair in frames (`kernel.child`): the parent sends
`(request id, ShardOps method, arguments)`, the child answers `(request id, True, result)` or
`(request id, False, (error class, message, fields))`. The child serves requests one at a
time, in order, so a read sees every write sent before it.

Lifecycle: `open` starts the child (`python -m retrieval.store.edge_process FD`) and waits for
the shard to open there (a shard with memory-mapped files is then read through on a thread of
the child, `edge_shard.warm_page_cache`, while it serves); `close` asks it to flush and exit,
then waits for it to exit. When this process dies the child reads end-of-file, flushes the
shard and exits (flushed, not closed: Qdrant Edge's close drops the shard's files from the page
cache, which the next start would then read from disk again). When the child dies, the next
call starts another (`EdgeProcessStore.restarts`). The child ignores SIGINT: Ctrl-C in a
console reaches the whole process group, and the parent closes the shard in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import pickle
import socket
import sys
import threading
from logging import getLogger
from pathlib import Path
from typing import Any, NoReturn

from kernel.child import HEADER, child_env, frame, receive, serve_parent
from retrieval.store import DimensionMismatch, StoreError, StoreUnavailable
from retrieval.store.edge import Lane, ShardOp, ShardStore, check_dim
from retrieval.store.edge_shard import IN_MEMORY, Layout, ShardOps, warm_page_cache

log = getLogger(__name__)

# How long `close` waits for the child to flush and exit before killing it.
CLOSE_TIMEOUT_S = 60.0
_CLOSE = None  # the op that asks the child to flush, close and exit


def _error_fields(exc: BaseException) -> tuple[str, str, dict[str, Any]]:
    """An exception as (class, message, fields): what crosses the socket."""
    if isinstance(exc, DimensionMismatch):
        fields = {"stored": exc.stored, "requested": exc.requested}
        return "DimensionMismatch", str(exc), fields
    for cls in (StoreUnavailable, StoreError, ValueError):
        if isinstance(exc, cls):
            return cls.__name__, str(exc), {}
    return "engine", str(exc), {}


def _rebuild(kind: str, message: str, fields: dict[str, Any], path: Path) -> Exception:
    if kind == "DimensionMismatch":
        return DimensionMismatch(fields["stored"], fields["requested"], str(path))
    if kind == "StoreUnavailable":
        return StoreUnavailable(message)
    if kind == "StoreError":
        return StoreError(message)
    if kind == "ValueError":
        return ValueError(message)
    return StoreError(f"Qdrant Edge ({path}): {message}")


class EdgeProcessStore(ShardStore):
    """VectorStore on a Qdrant Edge shard owned by a child process. Open with
    `await EdgeProcessStore.open(path, dim, layout)`; same contract as `EdgeStore`.

    When the child dies (killed, out of memory), the calls it was serving fail with
    StoreUnavailable and the next call starts a new child on the same shard (Qdrant's WAL
    kept every acknowledged write); `restarts` counts them.

    Its fused searches and reads by id leave out the payloads this process was sent already
    (`ShardStore.elides`): at a million chunks, reading, converting and pickling the payloads
    in the child was half of its combined call, and turning them into chunks here ~1 ms more."""

    elides = True

    def __init__(self, path: Path, dim: int, layout: Layout) -> None:
        super().__init__(path, dim, layout)
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._lost: str | None = "not started"  # why there is no child to talk to
        self._restarting = asyncio.Lock()
        self.restarts = 0

    @classmethod
    async def open(cls, path: Path, dim: int, layout: Layout = IN_MEMORY) -> EdgeProcessStore:
        """Start the child and open (or create) the shard under `path` there."""
        store = cls(Path(path), check_dim(dim), layout)
        await store._start()
        return store

    async def _start(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                __name__,
                str(theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                env=child_env(),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._process = process
        self._reader, self._writer = await asyncio.open_unix_connection(sock=ours)
        self._lost = None
        self._replies = asyncio.create_task(self._read_replies(), name="edge-process-replies")
        try:
            opened = self._register(-1)
            # The child's first frame: what to open.
            await self._send(-1, (self._path, self._dim, self._layout))
            await opened
        except BaseException:
            await self._abandon()
            raise

    async def _restart(self) -> None:
        """A new child for the shard, when the last one is gone (one at a time)."""
        async with self._restarting:
            if self._lost is None or self._closed:
                return
            lost = self._lost
            await self._abandon()
            log.warning("%s; starting a new one", lost)
            try:
                await self._start()
            except StoreUnavailable as exc:
                raise StoreUnavailable(f"{lost}, and a new one did not start: {exc}") from exc
            self.restarts += 1

    @property
    def pid(self) -> int:
        """The child's process id (its memory is the shard's)."""
        return self._process.pid

    # ---- the socket --------------------------------------------------------------------

    async def _send(self, rid: int, message: object) -> None:
        self._writer.write(frame((rid, message)))
        await self._writer.drain()

    def _register(self, rid: int) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        return future

    async def _read_replies(self) -> None:
        """Hand each reply to its caller; when the child is gone, fail every call left."""
        reason = ""
        try:
            while True:
                size = HEADER.unpack(await self._reader.readexactly(HEADER.size))[0]
                rid, ok, value = pickle.loads(await self._reader.readexactly(size))
                future = self._pending.pop(rid, None)
                if future is None or future.done():  # its caller was cancelled
                    continue
                if ok:
                    future.set_result(value)
                else:
                    kind, message, fields = value
                    future.set_exception(_rebuild(kind, message, fields, self._path))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except Exception as exc:  # a reply that cannot be read: the stream is lost
            reason = f" after an unreadable reply ({exc})"
            self._process.kill()
        code = await self._process.wait()
        self._lost = f"the vector store process for {self._path} exited (code {code}){reason}"
        for future in self._pending.values():
            if not future.done():
                future.set_exception(StoreUnavailable(self._lost))
        self._pending.clear()

    async def _call(self, lane: Lane, op: ShardOp | None, *args: Any) -> Any:
        if self._lost is not None:
            await self._restart()
        rid = next(self._ids)
        future = self._register(rid)
        try:
            await self._send(rid, (op, args))
        except (ConnectionError, OSError) as exc:
            self._pending.pop(rid, None)
            await asyncio.shield(self._replies)
            lost = self._lost or f"the vector store at {self._path} is lost"
            raise StoreUnavailable(lost) from exc
        return await future

    async def close(self) -> None:
        """Let the calls already sent finish (the child serves in order), then have the child
        flush the shard and exit, and wait for it to exit."""
        if self._closed:
            return
        self._closed = True  # calls from now on: StoreUnavailable("… is closed")
        try:
            if self._lost is None:
                with contextlib.suppress(StoreUnavailable):  # it died meanwhile: closed too
                    await self._call("write", _CLOSE)
        finally:
            await self._abandon()

    async def _abandon(self) -> None:
        """Close the socket and wait for the child (kill it when it does not exit)."""
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()
        try:
            await asyncio.wait_for(self._process.wait(), CLOSE_TIMEOUT_S)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await self._replies


# ---- the child -------------------------------------------------------------------------------


def serve(sock: socket.socket) -> None:
    """The child's loop: open the shard the first frame names, then run requests in order
    until told to close or the parent goes away; then flush and exit (`leave`)."""
    first = receive(sock)
    if first is None:
        return
    rid, (path, dim, layout) = first
    try:
        ops = ShardOps.open(path, dim, layout, serial=True)  # one request at a time
    except Exception as exc:
        sock.sendall(frame((rid, False, _error_fields(exc))))
        return
    sock.sendall(frame((rid, True, None)))
    stop_warming = threading.Event()
    if layout.mapped:  # the first searches would read the mapped files from disk page by page
        threading.Thread(target=_warm, args=(path, stop_warming), name="warm", daemon=True).start()
    try:
        while (received := receive(sock)) is not None:
            rid, (op, args) = received
            if op is _CLOSE:
                break
            try:
                reply = (rid, True, op(ops, *args))
            except Exception as exc:
                reply = (rid, False, _error_fields(exc))
            sock.sendall(frame(reply))
    finally:
        stop_warming.set()
        # Flushed, not closed: Qdrant Edge's close drops the shard's files from the page cache
        # (POSIX_FADV_DONTNEED; a 1M shard's 5 GB), and the next start would read them from
        # disk again (~9 s of CPU while it serves).
        failed = _flush(ops)
    if received is not None:  # asked to close: the reply says whether the flush held
        sock.sendall(frame((rid, failed is None, failed)))
    elif failed is not None:  # nobody is left to tell but the terminal
        print(f"baibao: the vector store at {path} was not flushed: {failed[1]}", file=sys.stderr)
    # With `ops` still open: its destructor would drop the page cache as close does.
    leave(0 if failed is None else 1)


def _warm(path: Path, stop: threading.Event) -> None:
    """The page-cache warm-up, on its own thread. The shard's files can vanish under it (the
    data directory deleted while the bot runs, a segment replaced by an optimization): then it
    ends with one line saying so, never a thread's traceback on the terminal."""
    try:
        warm_page_cache(path, stop)
    except Exception as exc:
        print(f"baibao: stopped warming the vector store at {path}: {exc}", file=sys.stderr)


def _flush(ops: ShardOps) -> tuple[str, str, dict[str, Any]] | None:
    """Flush the shard: None, or the failure as a reply carries it (the shard's files removed
    while it ran, a full disk), so that it ends as an error the parent words, not a traceback."""
    try:
        ops.flush()
    except Exception as exc:
        return _error_fields(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return serve_parent(serve, int(args[0]))


def leave(code: int) -> NoReturn:
    """Exit now, without running destructors (the shard's: `serve` calls this with the shard
    flushed and still open), and the operating system releases the rest."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
