"""A transport cannot be built half-wired (issue 41): built with the router it serves, it is
attached to it (the router's unasked `send` reaches its chats; its clock is the router's), and a
transport the router does not hold refuses to start, loudly, instead of dropping what is sent
to its chats later. Each platform's transport takes one `Invocation` in (through
`Router.handle`) and says what it posted (`Posted`)."""

from __future__ import annotations

import io

import pytest

from bot.actor import Actor
from bot.registry import Registry
from bot.reply import Posted, Reply
from bot.router import Invocation, Line, NotAttached, Router
from bot.settings import load_settings
from bot.transports.console import ConsoleTransport
from bot.transports.discord import DiscordTransport
from bot.transports.telegram import TelegramTransport
from retrieval.clock import Clock
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router

SETTINGS = load_settings(discord_token="x", telegram_token="1:x")


def test_a_transport_built_with_a_router_is_attached_to_it() -> None:
    clock = Clock()
    router = Router(Registry(), clock=clock)
    discord = DiscordTransport(router, SETTINGS)
    telegram = TelegramTransport(router, SETTINGS)
    assert router.attached(discord) and router.attached(telegram)
    assert discord.clock is clock and telegram.clock is clock  # the composition root's clock


async def test_a_replaced_transport_refuses_to_start() -> None:
    """Two transports built for one platform: the later one serves it; the earlier one would
    post its replies but never hear what is sent unasked, so it does not start."""
    router = Router(Registry())
    first = ConsoleTransport(router, stdin=io.StringIO(), stdout=io.StringIO())
    second = ConsoleTransport(router, stdin=io.StringIO(), stdout=io.StringIO())
    with pytest.raises(NotAttached, match="console transport is not attached"):
        await first.start()
    await second.start()  # the one the router holds
    elsewhere = ConsoleTransport(Router(Registry()), stdin=io.StringIO(), stdout=io.StringIO())
    assert not router.attached(elsewhere)


async def test_what_is_sent_unasked_reaches_the_attached_transport() -> None:
    router = fake_router(RecordingScholar(), RecordingNovels())
    out = io.StringIO()
    ConsoleTransport(router, stdin=io.StringIO(), stdout=out)
    posted = await router.send(
        Actor("console", "console", ""), Reply.text("第 3 章已完成", lang="zh")
    )
    assert posted == Posted() and "第 3 章已完成" in out.getvalue()
    dropped = await router.send(Actor("discord", "g", ""), Reply.text("无处可去", lang="zh"))
    assert dropped == Posted()  # no Discord transport here: said in the log, not raised


async def test_an_invocation_in_and_what_was_posted_out() -> None:
    """`Router.handle` answers the invocation, posts the reply where it goes and returns what
    was posted; an invocation without a place for its reply is a programming error."""
    router = fake_router(RecordingScholar(), RecordingNovels())
    went: list[Reply] = []

    async def reply_to(reply: Reply) -> Posted:
        went.append(reply)
        return Posted(("m1",))

    actor = Actor("console", "c1", "u1", is_admin=True)
    posted = await router.handle(Invocation(actor, Line("/ask 经纶"), reply_to=reply_to))
    assert posted == Posted(("m1",)) and [r.plain() for r in went] == ["answer"]
    quiet = Actor("telegram", "-1", "u1")
    silent = Invocation(quiet, Line("随便聊聊", private=False), reply_to=reply_to)
    assert await router.handle(silent) == Posted() and len(went) == 1  # a group's plain talk
    with pytest.raises(ValueError, match="reply_to"):
        await router.handle(Invocation(actor, Line("/ask 经纶")))
