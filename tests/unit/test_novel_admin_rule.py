"""The permission table agrees with the writers' room's own admin rule (`novel.api.ADMIN_ONLY`
/ `needs_admin`, which the handlers ask again for callers that skip the router): every
/chapter and /novel invocation the router checks before parsing is refused to a member of a
group exactly when the request it parses is one its handler would refuse a member.
`/settings ballot` is the ballot room's: changing a setting is for admins
(`BallotSettings.changes`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bot.actor import Actor
from bot.ballot.room import BallotSettings
from bot.commands.ballot import ballot_setting
from bot.commands.novel import novel_commands
from bot.permissions import Conditions, Permissions
from bot.registry import Command, File, Group, Values
from novel import api as novel_api
from tests.service_fakes import RecordingBallots, RecordingNovels

BLUEPRINT = File("world.yaml", b"title: t\n")

# (group, command, arguments): one invocation per request kind, admin-only ones included.
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("chapter", "next", {}),
    ("chapter", "propose", {"title": "目标", "summary": "摘要"}),
    ("chapter", "show", {"chapter": 1}),
    ("chapter", "history", {"chapter": 1}),
    ("chapter", "revise", {"chapter": 1, "instructions": "更紧凑"}),
    ("chapter", "rollback", {"chapter": 1, "version": 1}),
    ("chapter", "delete", {}),
    ("chapter", "close", {}),
    ("novel", "blueprint", {"action": "show"}),
    ("novel", "blueprint", {"action": "history"}),
    ("novel", "blueprint", {"action": "accept", "field": "3"}),
    ("novel", "blueprint", {"action": "reject", "field": "3"}),
    ("novel", "blueprint", {"action": "set", "file": BLUEPRINT}),
    ("novel", "blueprint", {"action": "edit", "field": "title", "value": "新书名"}),
    ("novel", "new", {"title": "星海"}),
    ("novel", "list", {}),
    ("settings", "ballot", {}),
    ("settings", "ballot", {"setting": "poll"}),
    ("settings", "ballot", {"setting": "keyboard", "setting2": "hidden"}),
]


def _leaves(
    node: Command[Any] | Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Command[Any]]]:
    if isinstance(node, Group):
        for child in node.children:
            yield from _leaves(child, (*path, node.name))
    else:
        yield (*path, node.name), node


# Who may open a round is a deployment setting on top of the rule (`NOVEL_ROUND_OPENERS`);
# with members allowed, /chapter next is the room's rule alone. The replies are never run.
COMMANDS = {
    path: command for group in novel_commands(RecordingNovels()) for path, command in _leaves(group)
}
COMMANDS[("settings", "ballot")] = ballot_setting(RecordingBallots())
PERMISSIONS = Permissions(conditions=Conditions(members_open_rounds=True))
MEMBER = Actor("telegram", "-100", "7")


def _refused_to_members(request: object) -> bool:
    if isinstance(request, BallotSettings):
        return request.changes
    return novel_api.needs_admin(request)


@pytest.mark.parametrize(("group", "name", "arguments"), CALLS)
async def test_a_command_asks_an_admin_exactly_when_the_service_would(
    group: str, name: str, arguments: dict[str, Any]
) -> None:
    command = COMMANDS[(group, name)]
    values = Values(arguments)
    request = command.parse(values)
    subject = await PERMISSIONS.subject((group, name), values, MEMBER)
    member_may = PERMISSIONS.allows(subject, "member", "group")
    assert member_may is not _refused_to_members(request), (subject, request)
    assert PERMISSIONS.allows(subject, "chat_admin", "group"), subject


def test_the_calls_cover_every_admin_only_kind() -> None:
    kinds = {type(COMMANDS[(g, n)].parse(Values(a))) for g, n, a in CALLS}
    assert set(novel_api.ADMIN_ONLY) <= kinds
