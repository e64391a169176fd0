"""`Activity`: the router's record of running commands, and the quiet moment background work
waits for (on a virtual clock: nothing here waits in real time)."""

from __future__ import annotations

import asyncio

from bot.activity import Activity
from tests.stubs.clock import VirtualClock


def test_quiet_counts_from_the_last_command_and_is_zero_while_one_runs() -> None:
    clock = VirtualClock()
    activity = Activity(clock.now)
    clock.advance(3.0)
    assert activity.quiet_for() == 3.0  # since it was created
    with activity.command():
        clock.advance(5.0)
        assert activity.quiet_for() == 0.0
        with activity.command():  # two at once: still running after the inner one ends
            pass
        assert activity.quiet_for() == 0.0
    assert activity.quiet_for() == 0.0  # just ended
    clock.advance(1.5)
    assert activity.quiet_for() == 1.5


def test_a_failing_command_still_ends() -> None:
    clock = VirtualClock()
    activity = Activity(clock.now)
    try:
        with activity.command():
            raise ValueError("the command failed")
    except ValueError:
        pass
    clock.advance(1.0)
    assert activity.quiet_for() == 1.0


async def test_quiet_waits_out_a_running_command_then_the_quiet_seconds() -> None:
    clock = VirtualClock()
    activity = Activity(clock.now)
    done = asyncio.Event()

    async def command() -> None:
        with activity.command():
            await done.wait()

    running = asyncio.create_task(command())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(activity.quiet(2.0, clock.sleep))
    for _ in range(20):  # it keeps waiting while the command runs, however long
        await asyncio.sleep(0)
    assert not waiter.done()
    done.set()
    await running
    await waiter
    assert activity.quiet_for() >= 2.0  # then a quiet moment of 2 s, in the clock's time
