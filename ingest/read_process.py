"""Reading in a process of its own: `ReadProcess`, and when a pipeline uses one (`ReadOffload`).

Why: the ingest process runs Python, one thread at a time (the GIL). Reading a document
(load, structure, chunk, the search form with OpenCC, verse references: ~1.5 ms of CPU a
chunk of Markdown, more for PDF and DOCX) ran on threads beside indexing (embedding, tags,
jieba, graph growth, the store), so it took turns with it on one core while the machine's
other core idled. In a child it runs on that other core (bench/results/embed-server.md).

What crosses (frames of `kernel.child` over a private socket pair): the parent sends
`(request id, work)`, `work` a `functools.partial` of a module-level function of the reading
stage (`ingest.pipeline.prepare_document`, a document's chunks), pickled by reference; the
child answers `(request id, TAKEN, None)` as it takes the work, then `(request id, True,
result)` or `(request id, False, failure)`. A failure is the exception's class name, message,
notes and pickle: the parent raises the exception itself when the pickle loads there (a file's
`LoadError` does, whatever its class: `ingest.errors`), else `ReadFailed` with that name and
message; one that is not a file's refusal carries the child's traceback as a note, for the
log. The functions are the ones the pipeline runs on a thread otherwise: the
same input gives the same chunks.

Lifecycle (`ingest.pipeline.Pipeline.ingest_paths` owns one for the length of an ingest):
`start` starts the child in the background (`python -m ingest.read_process FD PARENT_PID`,
~0.3 s of CPU, on the other core), which first does a warm-up (importing what the work needs);
work asked for meanwhile runs on a thread here, so the start delays nothing. `close` closes
the socket and the child exits at end-of-file. The child
dies with its parent: the kernel kills it when the parent dies (`kernel.child.die_with_parent`),
and a child that cannot be told so ends at its next read of the closed socket. It ignores
SIGINT (Ctrl-C reaches the whole process group; the parent ends it in order).

When the child dies (killed, out of memory, a crash in a loader's C code): a file it had taken
is skipped with a reason (`ReadProcessLost`, a `LoadError`: ingest it again), since it may be
what killed it; work it had not taken yet is done here while a new child starts. After
`MAX_STARTS` children, or when none can start, the rest is read on a thread of this process,
as without a child.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import socket
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from ingest.errors import BilingualError
from ingest.loaders.base import LoadError
from kernel.child import HEADER, child_env, die_with_parent, frame, receive, serve_parent

log = logging.getLogger(__name__)

T = TypeVar("T")

TAKEN = "taken"  # the child's first answer to a request: it has the work
MAX_STARTS = 4  # children an ingest starts at most (the first and three after one died)
CLOSE_TIMEOUT_S = 10.0  # how long `close` waits for the child to exit before killing it


@dataclass(frozen=True, slots=True)
class ReadOffload:
    """When an ingest reads in a process of its own (`INGEST_READ_PROCESS`): `enabled`, and
    for at least `min_files` documents of `min_bytes` in all. Below that the child's start
    (~0.3 s of CPU) costs more than it frees, and one document alone has nothing to overlap
    its reading with: a chat's upload of one file is read in the bot's process."""

    enabled: bool = True
    min_files: int = 2
    min_bytes: int = 256 * 1024

    def wants(self, documents: Sequence[Path]) -> bool:
        if not self.enabled or len(documents) < self.min_files:
            return False
        total = 0
        for path in documents:
            with contextlib.suppress(OSError):  # gone: its reading says so
                total += path.stat().st_size
            if total >= self.min_bytes:
                return True
        return False


class ReadFailed(Exception):
    """An exception of the reading process that does not pickle: its class's name (`kind`)
    and its message (`str`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(kind, message)
        self.kind = kind

    def __str__(self) -> str:
        return str(self.args[1])


class ReadProcessLost(LoadError):
    """The reading process died with this file's work in hand."""

    def __init__(self, code: int | None) -> None:
        if code is not None and code < 0:
            zh, en = f"被信号 {-code} 终止", f"killed by signal {-code}"
        else:
            zh, en = f"退出码 {code}", f"exit code {code}"
        super().__init__(
            f"读取此文件的子进程意外退出（{zh}），文件未导入；请重新导入",
            f"the process reading this file stopped ({en}); it was not ingested: ingest it again",
        )


async def in_thread(work: Callable[[], T]) -> T:
    """Reading on a thread of this process (a small ingest, or no reading process)."""
    return await asyncio.to_thread(work)


class _NotTaken(Exception):
    """The child was gone before it took the work: it may go to another."""


class ReadProcess:
    """Runs reading work in a child process: `await reader(work)` with `work` a picklable
    callable of no arguments (a `functools.partial` of a module-level function) returns what
    it returns, or raises what it raised. One piece of work at a time, in order.

    The child starts in the background (`start()`, or the first call) and is ready once it has
    done `warm` (imported what the work needs); until then work runs on a thread here, so its
    start-up delays nothing. Always `close()` it (`Pipeline.ingest_paths` does, on every way
    out)."""

    def __init__(self, warm: Callable[[], object] = int, max_starts: int = MAX_STARTS) -> None:
        self._warm = warm
        self._max_starts = max_starts
        self._ids = itertools.count()
        self._lock = asyncio.Lock()
        self._starting: asyncio.Future[None] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.served = 0  # pieces of work the child did (its warm-up not counted)
        self.pids: list[int] = []  # the children started, in order

    async def __call__(self, work: Callable[[], T]) -> T:
        async with self._lock:
            if self._ready():
                try:
                    return await self._ask(work)
                except _NotTaken:
                    pass  # it died while idle: the work is done here, a new one starts
            return await asyncio.to_thread(work)

    def start(self) -> asyncio.Future[None]:
        """Start a child in the background, unless one is running or starting, or the last
        allowed has been started; awaiting what it returns waits until it is ready (or could
        not start)."""
        running = self._process is not None and self._process.returncode is None
        if not running and (self._starting is None or self._starting.done()):
            if len(self.pids) < self._max_starts:
                self._starting = asyncio.ensure_future(self._start())
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_future()
            self._starting.set_result(None)
        return asyncio.shield(self._starting)

    def _ready(self) -> bool:
        """A child is running and warm: work goes to it. Else one is started (when allowed)
        and the work is done here."""
        if self._starting is not None and not self._starting.done():
            return False
        if self._process is not None and self._process.returncode is None:
            return True
        self.start()
        return False

    async def _start(self) -> None:
        await self._end()  # what is left of the last one
        ours, theirs = socket.socketpair()
        try:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                __name__,
                str(theirs.fileno()),
                str(os.getpid()),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                env=child_env(),
            )
        except OSError as exc:
            ours.close()
            log.warning("the reading process did not start (%s): reading here", exc)
            self._max_starts = 0
            return
        finally:
            theirs.close()
        self.pids.append(self._process.pid)
        self._streams = await asyncio.open_unix_connection(sock=ours)
        try:
            await self._ask(self._warm)
        except Exception as exc:  # it cannot start as it should: reading stays here
            log.warning("the reading process did not start (%s): reading here", exc)
            self._max_starts = 0
            await self._end(kill=True)
        else:
            self.served -= 1

    async def _ask(self, work: Callable[[], T]) -> T:
        rid = next(self._ids)
        message = frame((rid, work))  # work that does not pickle fails here, the child unharmed
        assert self._streams is not None
        reader, writer = self._streams
        taken = False
        try:
            writer.write(message)
            await writer.drain()
            taken = pickle.loads(await self._reply(reader)) == (rid, TAKEN, None)
            answer = await self._reply(reader)
        except BaseException as exc:  # the child is gone, or the stream out of step
            # A child that closed the socket is exiting: its own exit code says why (a kill
            # now would reap it first, in `Popen.send_signal`, and hide the code from asyncio).
            # Cancelled, it is busy with work nobody waits for: killed.
            code = await self._end(kill=not isinstance(exc, Exception))
            if isinstance(exc, Exception):
                if not taken:
                    raise _NotTaken from exc
                log.warning("the reading process stopped (code %s) while reading a file", code)
                raise ReadProcessLost(code) from exc
            raise  # cancelled: the rest of the ingest goes too
        self.served += 1
        _, ok, value = pickle.loads(answer)
        if ok:
            return cast("T", value)
        raise _raised(*value)

    @staticmethod
    async def _reply(reader: asyncio.StreamReader) -> bytes:
        size = HEADER.unpack(await reader.readexactly(HEADER.size))[0]
        return await reader.readexactly(size)

    async def _end(self, *, kill: bool = False) -> int | None:
        """Close the socket and wait for the child to exit (killed when `kill`, or when it
        does not exit in time); its exit code."""
        process, streams = self._process, self._streams
        self._process, self._streams = None, None
        if streams is not None:
            streams[1].close()
            with contextlib.suppress(ConnectionError, OSError):
                await streams[1].wait_closed()
        if process is None:
            return None
        if kill and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        try:
            return await asyncio.wait_for(process.wait(), CLOSE_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            return await process.wait()

    async def close(self) -> None:
        """End the child: it exits at end-of-file, or is killed when it has work in hand or
        is still starting (the ingest is ending without waiting for it); no more children
        after this."""
        self._max_starts = 0
        starting = self._starting is not None and not self._starting.done()
        if self._starting is not None and starting:
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        await self._end(kill=starting or self._lock.locked())


# ---- the child -------------------------------------------------------------------------------


Failure = tuple[str, str, list[str], bytes | None]  # class name, message, notes, pickle


def _failure(exc: Exception) -> Failure:
    """What crosses to the parent of an exception raised here."""
    if not isinstance(exc, BilingualError):  # unexpected: the log wants where it happened
        exc.add_note("in the reading process:\n" + "".join(traceback.format_exception(exc)))
    notes = [str(n) for n in vars(exc).get("__notes__", ())]  # add_note keeps them there
    try:
        pickled: bytes | None = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        pickled = None
    return type(exc).__name__, str(exc), notes, pickled


def _raised(kind: str, message: str, notes: list[str], pickled: bytes | None) -> Exception:
    """The exception to raise here for a failure in the child: itself when its pickle loads
    (and is one), else `ReadFailed`."""
    if pickled is not None:
        with contextlib.suppress(Exception):
            exc = pickle.loads(pickled)
            if isinstance(exc, Exception):
                return exc
    failed = ReadFailed(kind, message)
    for note in notes:
        failed.add_note(note)
    return failed


def serve(sock: socket.socket) -> None:
    """The child's loop: take each piece of work, say so, do it, answer; until the parent
    closes the socket."""
    while (received := receive(sock)) is not None:
        rid, work = received
        sock.sendall(frame((rid, TAKEN, None)))
        try:
            answer = frame((rid, True, work()))
        except Exception as exc:  # the work's failure, or a result that does not pickle
            answer = frame((rid, False, _failure(exc)))
        sock.sendall(answer)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    die_with_parent(int(args[1]))
    return serve_parent(serve, int(args[0]))


if __name__ == "__main__":
    sys.exit(main())
