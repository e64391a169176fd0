"""Waiting on processes without polling."""

from __future__ import annotations

import asyncio
import os


async def exited(pid: int) -> None:
    """Wait until process `pid` (not necessarily our child) has exited: its pidfd turns
    readable then. No polling, no clock."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    gone = asyncio.Event()
    loop.add_reader(fd, gone.set)
    try:
        await gone.wait()
    finally:
        loop.remove_reader(fd)
        os.close(fd)
