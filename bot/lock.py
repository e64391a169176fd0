"""One process owns a data directory: Qdrant Edge and SQLite are opened in-process."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType


class DataDirBusy(Exception):
    """Another baibao process holds the data directory."""


class DataDirLock:
    """An advisory `flock` on `<data_dir>/baibao.lock`, released when the process exits
    (even on SIGKILL: the kernel drops the lock with the file descriptor)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "baibao.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise DataDirBusy(
                f"数据目录 {self.path.parent} 正被另一个百宝箱进程（PID {holder}）使用；"
                "请先停止它，或在它运行时通过聊天命令操作。 / The data directory is in use by "
                f"another baibao process (PID {holder}); stop it first."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
