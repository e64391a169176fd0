"""The one admin policy, and the Telegram admin cache it is fed from."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import pytest

from bot.actor import Actor
from bot.admin import AdminCache, AdminPolicy, AdminUnknown, MemberFacts
from bot.ratelimit import RateLimiter
from bot.router import Invocation, Line
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router


@pytest.mark.parametrize(
    ("member", "role", "admin"),
    [
        (MemberFacts(), "", False),
        (MemberFacts(private_chat=True), "", True),
        (MemberFacts(owner=True), "", True),
        (MemberFacts(administrator=True), "", True),
        (MemberFacts(manage_server=True), "", True),
        (MemberFacts(as_the_chat=True), "", True),  # a Telegram anonymous administrator
        (MemberFacts(roles=("写手",)), "写手", True),
        (MemberFacts(roles=("写手",)), "", False),
        (MemberFacts(roles=("读者",)), "写手", False),
    ],
)
def test_policy(member: MemberFacts, role: str, admin: bool) -> None:
    assert AdminPolicy(role).is_admin(member) is admin


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_cache_fetches_once_per_ttl_and_forgets_on_change() -> None:
    calls: list[int] = []

    async def fetch(chat_id: int) -> Mapping[int, MemberFacts]:
        calls.append(chat_id)
        return {7: MemberFacts(administrator=True)}

    clock = Clock()
    cache = AdminCache(fetch, ttl_s=60, clock=clock)
    assert (await cache.member(-1, 7)).administrator
    assert await cache.member(-1, 8) == MemberFacts()
    assert calls == [-1]
    clock.now = 61
    await cache.member(-1, 7)
    assert calls == [-1, -1]
    cache.forget(-1)
    await cache.member(-1, 7)
    assert calls == [-1, -1, -1]


async def test_cache_shares_one_request_between_concurrent_checks() -> None:
    release = asyncio.Event()
    calls = 0

    async def fetch(chat_id: int) -> Mapping[int, MemberFacts]:
        nonlocal calls
        calls += 1
        await release.wait()
        return {}

    cache = AdminCache(fetch)
    waiting = [asyncio.create_task(cache.member(-1, n)) for n in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiting) == [MemberFacts()] * 5
    assert calls == 1


async def test_cache_does_not_remember_failures() -> None:
    answers: list[Mapping[int, MemberFacts] | None] = [None, {7: MemberFacts(owner=True)}]

    async def fetch(chat_id: int) -> Mapping[int, MemberFacts]:
        answer = answers.pop(0)
        if answer is None:
            raise AdminUnknown("timed out")
        return answer

    cache = AdminCache(fetch)
    with pytest.raises(AdminUnknown):
        await cache.member(-1, 7)
    assert (await cache.member(-1, 7)).owner


async def test_unknown_admin_status_is_said_once_in_the_log_never_a_wrong_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    novels = RecordingNovels()
    router = fake_router(RecordingScholar(), novels, limiter=RateLimiter(0, 0))
    lookups = 0

    async def member() -> MemberFacts:
        nonlocal lookups
        lookups += 1
        raise AdminUnknown("getChatAdministrators: Bad Gateway")

    creator = Actor("telegram", "-100", "1")
    with caplog.at_level(logging.DEBUG):
        asked = await router.answer(Invocation(creator, Line("/ask 什么是经纶？"), member=member))
        assert lookups == 0  # /ask needs no admin: nothing is looked up
        closed = await router.answer(Invocation(creator, Line("/chapter close"), member=member))
        english = await router.answer(
            Invocation(creator, Line("/chapter delete 2 confirm"), member=member)
        )
    assert asked is not None and not asked.is_error and lookups == 2
    assert closed is not None and closed.is_error
    assert closed.plain() == "暂时无法确认管理员身份，请稍后再试。"
    assert "只有管理员" not in closed.plain()
    assert english is not None and english.is_error and "管理员身份" in english.plain()
    assert novels.calls == []
    records = [r for r in caplog.records if r.name == "bot.router"]
    assert len(records) == 2 and all(r.exc_info is None for r in records)
    assert all("Bad Gateway" in r.getMessage() for r in records)
    assert all("Traceback" not in r.getMessage() for r in records)


async def test_english_words_get_the_english_admin_notice() -> None:
    router = fake_router(RecordingScholar(), RecordingNovels(), limiter=RateLimiter(0, 0))

    async def member() -> MemberFacts:
        raise AdminUnknown("down")

    reply = await router.answer(
        Invocation(
            Actor("telegram", "-100", "1"),
            Line("/chapter revise 2 make the ending darker"),
            member=member,
        )
    )
    assert reply is not None and reply.plain() == (
        "Could not confirm admin status right now; please try again later."
    )
