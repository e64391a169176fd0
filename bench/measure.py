"""Measurement helpers shared by the benchmark scripts (run as `python bench/<name>.py`)."""

from __future__ import annotations

import resource
from pathlib import Path


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank `p`-th percentile (p in 0..100) of `values`, in their unit."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def rss_mb() -> float:
    """This process's resident set now, in MB (max RSS where /proc is missing)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
