"""`RequestWindow`: how many embedding requests are in flight, and the pause a 429 asks for,
on a virtual clock."""

from __future__ import annotations

import asyncio

import pytest

from retrieval.embed.window import RequestWindow
from tests.stubs.clock import VirtualClock


async def _hold(window: RequestWindow, release: asyncio.Event, started: list[int]) -> None:
    async with window.slot():
        started.append(window.in_flight)
        await release.wait()


async def test_no_more_than_the_ceiling_are_in_flight() -> None:
    clock = VirtualClock()
    window = RequestWindow(3, clock.as_clock())
    release = asyncio.Event()
    started: list[int] = []
    tasks = [asyncio.ensure_future(_hold(window, release, started)) for _ in range(7)]
    for _ in range(20):
        await asyncio.sleep(0)
    assert window.in_flight == 3 and started == [1, 2, 3]  # four wait for a place
    release.set()
    await asyncio.gather(*tasks)
    assert window.peak == 3 and window.in_flight == 0 and len(started) == 7
    assert clock.slept == []  # nobody paused


async def test_a_429_pauses_every_later_request_and_halves_the_window() -> None:
    clock = VirtualClock()
    window = RequestWindow(8, clock.as_clock())
    window.throttled(2.5)
    assert window.limit == 4
    window.throttled(0.5)  # an earlier end never shortens the pause
    assert window.limit == 2 and window.resume_at == pytest.approx(clock.now() + 2.5)
    started_at: list[float] = []

    async def request() -> None:
        async with window.slot():
            started_at.append(clock.now())

    await asyncio.gather(*(request() for _ in range(3)))
    assert all(t >= 1_002.5 for t in started_at)  # VirtualClock starts at 1000 s
    assert clock.slept and clock.slept[0] == pytest.approx(2.5)


def test_successes_grow_the_window_back_one_at_a_time() -> None:
    window = RequestWindow(4, VirtualClock().as_clock())
    window.throttled(0)
    window.throttled(0)
    assert window.limit == 1
    window.succeeded()  # one success at a limit of one
    assert window.limit == 2
    window.succeeded()
    assert window.limit == 2  # two in a row are needed at two
    window.succeeded()
    assert window.limit == 3
    for _ in range(10):
        window.succeeded()
    assert window.limit == 4  # never beyond the ceiling
    window.throttled(0)
    assert window.limit == 2  # and a 429 resets the run of successes
    window.succeeded()
    assert window.limit == 2


def test_a_window_allows_at_least_one_request() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RequestWindow(0)
