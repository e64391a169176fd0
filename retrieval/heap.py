"""Handing freed heap memory back to the operating system."""

from __future__ import annotations

import ctypes


def release_free_memory() -> None:
    """Return the heap pages freed so far to the OS. glibc keeps them otherwise: ~200 MB of
    fetched rows after loading a million-chunk graph, gigabytes after Qdrant Edge built a
    segment (bench/results/million.md). A no-op where the C library is not glibc."""
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)
