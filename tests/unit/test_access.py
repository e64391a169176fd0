"""Who may use the bot at all (`bot.permissions.Access`): `ALLOWED_CHATS` (empty = every chat)
and `ALLOW_DMS`, before the permission table; operators and the console are always served;
each refusal is one log line."""

from __future__ import annotations

import logging

import pytest

from bot.actor import Actor
from bot.permissions import Access, Permissions, Roles
from bot.ratelimit import RateLimiter
from bot.router import Invocation, Line, Press, Router
from bot.settings import load_settings
from tests.service_fakes import RecordingNovels, RecordingScholar, fake_router

IN_A = Actor("telegram", "-100", "7")
IN_B = Actor("discord", "555", "8")
STRANGER = Actor("telegram", "9", "9", kind="dm")
OPERATOR_IN_B = Actor("discord", "555", "1")
OPERATOR_DM = Actor("telegram", "1", "1", kind="dm")
CONSOLE = Actor("console", "console", "cli", kind="console")


def router(access: Access) -> tuple[Router, RecordingScholar]:
    scholar = RecordingScholar()
    base = fake_router(scholar, RecordingNovels(), limiter=RateLimiter(0, 0))
    roles = Roles(frozenset({"discord:1", "telegram:1"}))
    return Router(
        base.registry, limiter=RateLimiter(0, 0), permissions=Permissions(roles, access)
    ), scholar


async def test_allowed_chats_and_closed_dms(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    r, scholar = router(Access(frozenset({"telegram:-100"}), allow_dms=False))
    for actor in (IN_A, OPERATOR_IN_B, OPERATOR_DM, CONSOLE):
        reply = await r.answer(Invocation(actor, Line("/ask 经纶")))
        assert reply is not None and not reply.is_error, actor
    refused = await r.answer(Invocation(IN_B, Line("/ask 经纶")))
    assert refused is not None and "没有在本群开放（ALLOWED_CHATS）" in refused.plain()
    closed = await r.answer(Invocation(STRANGER, Line("/ask 经纶")))
    assert closed is not None and "不接受私聊（ALLOW_DMS=false）" in closed.plain()
    assert len(scholar.calls) == 4
    lines = [rec for rec in caplog.records if rec.getMessage().startswith("refused ")]
    assert len(lines) == 2 and not any(rec.exc_info for rec in lines)
    pressed = await r.answer(Invocation(IN_B, Press("vote:r1:1")))  # buttons too
    assert "ALLOWED_CHATS" in pressed.plain()


async def test_every_chat_and_dm_by_default() -> None:
    r, scholar = router(Access())
    for actor in (IN_A, IN_B, STRANGER):
        reply = await r.answer(Invocation(actor, Line("/ask 经纶")))
        assert reply is not None and not reply.is_error
    assert len(scholar.calls) == 3


def test_the_settings_read_and_check_the_ids() -> None:
    s = load_settings(
        _env_file=None, operators="discord:1, telegram:2", allowed_chats="telegram:-100"
    )
    assert s.operator_ids == frozenset({"discord:1", "telegram:2"})
    assert s.allowed_chat_ids == frozenset({"telegram:-100"})
    from bot.settings import SettingsError

    with pytest.raises(SettingsError, match=r"OPERATORS.*platform:id"):
        load_settings(_env_file=None, operators="alice")
