"""FloodControl, Telegram's one flood-control layer, on a virtual clock: it paces message
requests to the published limits, waits out a 429 in the refused chat only, and a bot that
goes through it is never refused by the loopback server's flood model (whatever the timing)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from telegram.error import RetryAfter

from bot.transports.telegram_flood import FloodControl, counts
from retrieval.clock import Clock
from tests.stubs.clock import VirtualClock
from tests.stubs.telegram_rules import FloodModel


class Recorder:
    """The Bot API, as far as FloodControl sees it: a callback that records when it ran."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.sent: list[tuple[float, str, int]] = []  # (time, method, chat)
        self.refuse: list[BaseException] = []

    async def __call__(self, method: str, chat_id: int) -> dict[str, Any]:
        self.sent.append((self.clock.now(), method, chat_id))
        if self.refuse:
            raise self.refuse.pop(0)
        return {}


def sender(flood: FloodControl, recorder: Recorder) -> Callable[[str, int], Awaitable[object]]:
    async def send(method: str, chat_id: int) -> object:
        return await flood.process_request(
            recorder, (method, chat_id), {}, method, {"chat_id": chat_id}, None
        )

    return send


def at(recorder: Recorder, chat_id: int) -> list[float]:
    return [t - 1000.0 for t, _, c in recorder.sent if c == chat_id]


def test_what_counts_as_a_message() -> None:
    assert counts("sendMessage") and counts("editMessageText") and counts("sendPoll")
    assert counts("stopPoll") and counts("sendDocument")
    assert not counts("sendChatAction") and not counts("answerCallbackQuery")
    assert not counts("getChatAdministrators") and not counts("getFile")


async def test_a_chat_gets_a_burst_of_three_then_about_one_a_second() -> None:
    clock = VirtualClock()
    recorder = Recorder(clock)
    send = sender(FloodControl(clock.as_clock()), recorder)
    for _ in range(7):
        await send("sendMessage", 42)
    assert at(recorder, 42) == [0, 0, 0, 3, 3, 3, 6]


async def test_a_group_gets_twenty_a_minute() -> None:
    clock = VirtualClock()
    recorder = Recorder(clock)
    send = sender(FloodControl(clock.as_clock()), recorder)
    for _ in range(25):
        await send("sendMessage", -100)
    times = at(recorder, -100)
    assert all(sum(t <= s < t + 60 for s in times) <= 20 for t in times)
    assert all(sum(t <= s < t + 3 for s in times) <= 3 for t in times)
    assert times[20] >= 60  # the 21st waits until the first leaves the minute


async def test_the_whole_bot_gets_thirty_a_second() -> None:
    clock = VirtualClock()
    recorder = Recorder(clock)
    send = sender(FloodControl(clock.as_clock()), recorder)
    await asyncio.gather(*(send("sendMessage", chat) for chat in range(1, 32)))
    times = sorted(t for t, _, _ in recorder.sent)
    assert times.count(1000.0) == 30 and times[30] == 1001.0


async def test_requests_in_flight_count_until_answered() -> None:
    clock = VirtualClock()
    answered = asyncio.Event()
    started: list[float] = []

    async def slow(method: str, chat_id: int) -> dict[str, Any]:
        started.append(clock.now())
        if len(started) <= 3:
            await answered.wait()
        return {}

    flood = FloodControl(clock.as_clock())

    async def send() -> object:
        return await flood.process_request(
            slow, ("sendMessage", 42), {}, "sendMessage", {"chat_id": 42}, None
        )

    first = [asyncio.create_task(send()) for _ in range(3)]
    fourth = asyncio.create_task(send())
    for _ in range(5):
        await asyncio.sleep(0)
    clock.advance(10)  # time alone makes no room: three are still in flight
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(started) == 3 and not fourth.done()
    answered.set()  # answered at t=10: the fourth goes at t=13, when they leave the window
    await asyncio.gather(*first, fourth)
    assert [t - 1000 for t in started] == [0, 0, 0, 13]


async def test_a_429_is_waited_out_in_that_chat_only() -> None:
    clock = VirtualClock()
    recorder = Recorder(clock)
    recorder.refuse = [RetryAfter(5)]
    send = sender(FloodControl(clock.as_clock()), recorder)
    held = asyncio.create_task(send("sendMessage", 42))
    await asyncio.sleep(0)
    await send("sendMessage", 43)  # another chat goes on, before 42's retry, without waiting
    await held
    assert [chat for _, _, chat in recorder.sent] == [42, 43, 42]
    assert at(recorder, 42) == [0, 5] and clock.slept == [5.0]  # only chat 42 waited


async def test_a_429_after_the_last_retry_reaches_the_caller() -> None:
    clock = VirtualClock()
    recorder = Recorder(clock)
    recorder.refuse = [RetryAfter(1)] * 3
    send = sender(FloodControl(clock.as_clock(), max_retries=2), recorder)
    try:
        await send("editMessageText", 42)
    except RetryAfter:
        pass
    else:
        raise AssertionError("the third 429 should reach the caller")
    assert at(recorder, 42) == [0, 1, 2]


async def test_reads_and_chat_actions_are_not_paced() -> None:
    clock = VirtualClock()
    recorder = Recorder(clock)
    send = sender(FloodControl(clock.as_clock()), recorder)
    for method in ["sendChatAction", "getChatAdministrators", "answerCallbackQuery"] * 5:
        await send(method, 42)
    assert set(at(recorder, 42)) == {0}


class EventClock:
    """A discrete-event clock: a sleeper wakes at its deadline, in deadline order, once every
    task that can run has run (no I/O here, so a few yields settle the loop)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self.t

    def as_clock(self) -> Clock:
        return Clock(monotonic=self.now, sleep=self.sleep)

    async def sleep(self, seconds: float) -> None:
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.t + max(0.0, seconds), next(self._order), waiter))
        await waiter

    async def run(self, main: Awaitable[list[int]]) -> list[int]:
        task = asyncio.ensure_future(main)
        while not task.done():
            for _ in range(50):
                await asyncio.sleep(0)
            if self._sleepers and not task.done():
                deadline, _, waiter = heapq.heappop(self._sleepers)
                self.t = max(self.t, deadline)
                waiter.set_result(None)
        return task.result()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([42, 43, -100]),  # chat
            st.floats(0, 4),  # when the bot asks
            st.floats(0, 1.5),  # on the way to Telegram
            st.floats(0, 1.5),  # on the way back
        ),
        min_size=1,
        max_size=60,
    )
)
def test_the_server_model_never_refuses_a_paced_bot(
    plan: list[tuple[int, float, float, float]],
) -> None:
    """Whatever the timing of concurrent requests, what FloodControl lets through fits the
    loopback server's flood model (the argument in telegram_flood's docstring, checked)."""
    clock = EventClock()

    async def scenario() -> list[int]:
        model = FloodModel()
        refused: list[int] = []
        flood = FloodControl(clock.as_clock())

        async def telegram(chat_id: int, there: float, back: float) -> dict[str, Any]:
            await clock.sleep(there)
            if model.retry_after(chat_id, clock.now()) is not None:
                refused.append(chat_id)
            else:
                model.accept(chat_id, clock.now())
            await clock.sleep(back)
            return {}

        async def one(chat_id: int, start: float, there: float, back: float) -> None:
            await clock.sleep(start)
            await flood.process_request(
                telegram, (chat_id, there, back), {}, "sendMessage", {"chat_id": chat_id}, None
            )

        await asyncio.gather(*(one(*step) for step in plan))
        return refused

    assert asyncio.run(clock.run(scenario())) == []
