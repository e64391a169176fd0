"""Directories built once per test run and shared by every pytest-xdist worker of it.

A session fixture runs once per worker process: a prepared data directory that takes seconds to
build would be built once by each. `built_once` builds it once for the whole run, in the temp
root the workers share (the controller's base temp; each worker's own is a folder inside it),
under a file lock: the first worker to ask builds it, the others wait for it and reuse it.

The result is a read-only source: a test copies it (`shutil.copytree`) before writing, so
tests stay independent. A fixture that hands out something a test may change, or that holds
an open file, a process or a model, is not shared this way (see `tests/parallel.py`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The temp directory every worker of this run shares (this process's own without xdist)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`build(path)` run once for the whole test run; the path it filled, complete."""
    root = run_root(factory)
    target = root / f"shared-{name}"
    done = root / f"shared-{name}.done"
    with (root / f"shared-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            partial = root / f"shared-{name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)
            partial.mkdir()
            build(partial)
            partial.rename(target)
            done.touch()
    return target
