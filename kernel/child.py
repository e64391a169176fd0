"""A child process of ours over a Unix socket pair: its frames, its environment, its end.

Used by the Qdrant Edge shard's process (`retrieval.store.edge_process`) and by ingest's
reading process (`ingest.read_process`). A frame is a 4-byte big-endian length, then a
pickle. Pickle is safe here: both ends are this code, and the socket pair is private to them.

The child is started as `python -m <module> FD …` with `child_env()`: this environment (so a
child of the test suite carries its network block, `tests/sandbox/sitecustomize.py`), with
the directory that holds the product on the path.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import socket
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

HEADER = struct.Struct(">I")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def frame(message: object) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def child_env() -> dict[str, str]:
    """This environment, with the directory that holds the product's packages on the path
    (the child must import this very code, installed or not), after what is there already."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), root) if p)
    return env


# ---- in the child ----------------------------------------------------------------------------


def _recv_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        data = sock.recv(min(size, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        size -= len(data)
    return b"".join(chunks)


def receive(sock: socket.socket) -> tuple[int, Any] | None:
    """The next `(request id, message)` from the parent; None when it has gone."""
    header = _recv_exactly(sock, HEADER.size)
    if header is None:
        return None
    body = _recv_exactly(sock, HEADER.unpack(header)[0])
    if body is None:
        return None
    rid, message = pickle.loads(body)
    return rid, message


def serve_parent(serve: Callable[[socket.socket], None], fd: int) -> int:
    """The child's life: SIGINT ignored (Ctrl-C in a console reaches the whole process group;
    the parent ends its child in order), then `serve` on the socket `fd` until it returns or
    the parent has gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with socket.socket(fileno=fd) as sock:
        try:
            serve(sock)
        except (BrokenPipeError, ConnectionResetError):
            return 0  # the parent went away mid-reply: nothing left to tell it
    return 0


def die_with_parent(parent: int) -> None:
    """Be killed when the parent dies, even while busy (Linux; elsewhere the child still
    ends when it next reads from the closed socket). `parent`: the pid the parent gave; when
    it is no longer this process's parent, the parent died before the request took hold."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl here
        return
    if os.getppid() != parent:
        os._exit(0)
