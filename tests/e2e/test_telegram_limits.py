"""Telegram's limits on the real wire, on the loopback server's virtual clock: the production
edit throttle, flood control (pacing to the published limits; a 429 waited out as long as
Telegram says), and the 4,096 limit counted as Telegram counts it (UTF-16 code units), with CJK
Extension B text that counts two units a character. The server refuses what Telegram refuses
(429s and over-long messages included) and the fixture fails a test that provoked a refusal it
did not expect. No test waits in real time: every wait is on the virtual clock."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.chats import ChatSettings
from bot.ratelimit import RateLimiter
from bot.render.telegram import units
from bot.reply import Block, Citation, Reply
from bot.transports.telegram import TelegramTransport
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router
from tests.stubs.fixtures import telegram_settings
from tests.stubs.telegram_rules import MESSAGE_METHODS
from tests.stubs.telegram_server import TelegramServer, parse_html

GROUP = -100700
# 3,000 characters of CJK Extension B (U+20000 …): 6,000 UTF-16 code units.
EXT_B = "".join(chr(0x20000 + i) for i in range(3000))


@dataclass
class Env:
    server: TelegramServer
    transport: TelegramTransport
    scholar: RecordingScholar


@pytest.fixture
async def env(telegram_wire: TelegramServer, tmp_path: Path) -> AsyncIterator[Env]:
    """The transport with its production settings (edit throttle 1.5 s, FloodControl), on the
    server's clock."""
    telegram_wire.join(GROUP)
    scholar = RecordingScholar()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, RecordingNovels(), limiter=RateLimiter(0, 0), chats=chats)
        transport = TelegramTransport(
            router, telegram_settings(telegram_wire), clock=telegram_wire.clock
        )
        async with transport:
            yield Env(telegram_wire, transport, scholar)


def message_times(server: TelegramServer, chat_id: int) -> list[float]:
    """When the server accepted each message request in the chat."""
    return [
        c.at
        for c in server.calls
        if c.method in MESSAGE_METHODS and c.status == 200 and c.params.get("chat_id") == chat_id
    ]


def most_in_any(times: list[float], seconds: float) -> int:
    return max((sum(t <= s < t + seconds for s in times) for t in times), default=0)


def shown(server: TelegramServer, method: str = "sendMessage") -> list[str]:
    return [parse_html(str(c.params["text"])) for c in server.named(method)]


async def test_the_production_edit_throttle_streams_within_the_group_limit(env: Env) -> None:
    """80 partials, one every 0.5 s, in a group: the edit throttle keeps edits 1.5 s apart,
    and FloodControl keeps the stream within 20 messages a minute; nothing is refused."""
    server, clock = env.server, env.server.time
    partials = ["".join(f"第{j}句。" for j in range(i + 1)) for i in range(80)]
    env.scholar.partials = partials
    env.scholar.between = lambda: clock.sleep(0.5)
    env.scholar.reply = Reply.text(partials[-1] + "完。", lang="zh")
    server.push_command("/ask@baibao_bot 长回答", chat_id=GROUP, user_id=8)
    await server.wait_for("editMessageText", where=lambda c: str(c.params["text"]).endswith("完。"))
    [first] = server.named("sendMessage")
    edits = server.named("editMessageText")
    times = [first.at, *(c.at for c in edits)]
    assert min(b - a for a, b in itertools.pairwise(times)) >= 1.5
    assert 20 < len(times) < len(partials)  # throttled, and long enough to meet the group limit
    group = message_times(server, GROUP)
    assert most_in_any(group, 60) <= 20 and most_in_any(group, 3) <= 3
    assert group[20] - group[0] >= 60  # the 21st waited for the minute: paced, not refused


async def test_a_burst_of_posts_to_a_group_is_paced_never_refused(env: Env) -> None:
    server, clock = env.server, env.server.time
    start = clock.now()
    target = Actor("telegram", str(GROUP), "0")
    for i in range(25):
        await env.transport.send(target, Reply.text(f"公告 {i}", lang="zh"))
    assert shown(server) == [f"公告 {i}" for i in range(25)]
    times = message_times(server, GROUP)
    assert most_in_any(times, 60) <= 20 and most_in_any(times, 3) <= 3
    assert clock.now() - start >= 60


async def test_a_429_on_a_reply_is_waited_out_on_the_clock(env: Env) -> None:
    server = env.server
    server.flood("sendMessage", retry_after=7)
    server.push_command("/help")
    [sent] = await server.wait_for("sendMessage")
    [refused] = [c for c in server.calls if c.method == "sendMessage" and c.status == 429]
    assert sent.at - refused.at >= 7 and 7.0 in server.time.slept
    assert sent.params["text"] == refused.params["text"]  # the same message, sent again


async def test_a_429_on_a_ballot_edit_is_waited_out_on_the_clock(env: Env) -> None:
    server = env.server
    target = Actor("telegram", str(GROUP), "0")
    await env.transport.send(target, Reply.text("共 0 票", lang="zh"))
    [ballot] = server.named("sendMessage")
    message_id = next(m.message_id for m in server.messages.values() if m.text == "共 0 票")
    server.flood("editMessageText", retry_after=4)
    await env.transport.edit(target, str(message_id), Reply.text("共 1 票", lang="zh"))
    [edit] = server.named("editMessageText")
    assert edit.params["text"] == "共 1 票" and edit.at - ballot.at >= 4


# ---- 4,096 as Telegram counts it -----------------------------------------------------------------


@pytest.mark.parametrize("length", [2048, 2049, 3000])
async def test_extension_b_answers_fit_in_utf16_units(env: Env, length: int) -> None:
    """2,048 Extension B characters are exactly 4,096 units: one message; one more needs two.
    Before the renderer counted UTF-16 units, 3,000 (6,000 units) went out as one message
    and Telegram refused it."""
    server = env.server
    env.scholar.reply = Reply(lang="zh", blocks=[Block(EXT_B[:length])])
    server.push_command("/ask 长回答")
    await server.wait_until(lambda: "".join(shown(server)) == EXT_B[:length])
    texts = shown(server)
    assert len(texts) == (1 if length <= 2048 else 2)
    assert all(units(t) <= 4096 for t in texts)


async def test_an_extension_b_citation_fits(env: Env) -> None:
    server = env.server
    env.scholar.reply = Reply(
        lang="zh",
        blocks=[Block("答：见下。")],
        citations=[Citation("𠀀书，第一章", "𠀀书", "第一章", EXT_B)],
    )
    server.push_command("/ask 出处")
    await server.wait_until(lambda: EXT_B[-10:] in "".join(shown(server)))
    texts = shown(server)
    assert "".join(texts).replace("\n", "").count(EXT_B[:100]) == 1
    assert "".join(t.replace("\n", "") for t in texts).endswith(EXT_B)
    assert all(units(t) <= 4096 for t in texts) and "【𠀀书，第一章】" in texts[1]


async def test_extension_b_streamed_edits_fit(env: Env) -> None:
    """A streamed partial of 3,000 Extension B characters is clipped to one message; the final
    answer (3,500 characters) ends as the edited message plus one more."""
    server, clock = env.server, env.server.time
    env.scholar.partials = [EXT_B[:1000], EXT_B]
    env.scholar.between = lambda: clock.sleep(2)  # past the edit throttle: each partial is shown
    final = EXT_B + EXT_B[:500]
    env.scholar.reply = Reply(lang="zh", blocks=[Block(final)])
    server.push_command("/ask 流式")
    await server.wait_until(lambda: len(server.named("sendMessage")) == 2)
    [preview, rest] = shown(server)
    edits = shown(server, "editMessageText")
    assert preview == EXT_B[:1000]
    assert edits[0].endswith("…") and units(edits[0]) <= 4096  # the 3,000-character partial
    assert edits[-1] + rest.strip() == final  # the final answer: nothing lost
    assert all(units(t) <= 4096 for t in [*edits, rest])
