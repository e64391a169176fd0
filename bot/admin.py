"""Who counts as an admin: one policy for every platform.

A transport only reports facts about a member (`MemberFacts`), lazily, through a `MemberLookup` the
router calls when — and only when — a command needs an admin. The policy here turns the facts
into a yes or no:

- Discord: the Administrator or Manage Server permission, or the role named `NOVEL_ADMIN_ROLE`;
- Telegram: the chat's creator and its administrators, and whoever posts as the group itself
  (an anonymous administrator: Telegram lets only administrators do that);
- a private chat (a DM, the console): its only member.

A lookup that cannot get an answer raises `AdminUnknown`; the router then says so and never
guesses "not an admin".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass


class AdminUnknown(Exception):
    """The platform could not tell us (API error, timeout). The message is logged, once."""


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """Facts about a member of a chat, as the platform reports them."""

    private_chat: bool = False  # a DM / private chat: the member owns it
    owner: bool = False  # Telegram creator, Discord server owner
    administrator: bool = False  # Telegram administrator, Discord Administrator permission
    manage_server: bool = False  # Discord Manage Server permission
    roles: tuple[str, ...] = ()  # Discord role names
    # Telegram: the message was sent on behalf of the chat itself (`sender_chat` is the chat),
    # as an anonymous administrator's are. A post on behalf of another chat (a linked
    # channel) is not this.
    as_the_chat: bool = False


MemberLookup = Callable[[], Awaitable[MemberFacts]]


@dataclass(frozen=True, slots=True)
class AdminPolicy:
    admin_role: str = ""  # NOVEL_ADMIN_ROLE: a Discord role whose members count as admins

    def is_admin(self, member: MemberFacts) -> bool:
        if (
            member.private_chat
            or member.owner
            or member.administrator
            or member.manage_server
            or member.as_the_chat  # only a chat's administrators may speak as the chat
        ):
            return True
        return bool(self.admin_role) and self.admin_role in member.roles


class AdminCache:
    """A chat's administrators, fetched once per `ttl_s` (one request per chat, however many
    commands arrive at once) and forgotten when the platform reports a membership change.

    `fetch(chat_id)` returns the chat's admins by user id and raises `AdminUnknown` when the
    platform cannot answer; failures are not cached."""

    def __init__(
        self,
        fetch: Callable[[int], Awaitable[Mapping[int, MemberFacts]]],
        *,
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        max_chats: int = 10_000,
    ) -> None:
        self._fetch = fetch
        self._ttl = ttl_s
        self._clock = clock
        self._max = max_chats
        self._chats: dict[int, tuple[float, Mapping[int, MemberFacts]]] = {}
        self._pending: dict[int, asyncio.Task[Mapping[int, MemberFacts]]] = {}

    async def member(self, chat_id: int, user_id: int) -> MemberFacts:
        return (await self.admins(chat_id)).get(user_id, MemberFacts())

    async def admins(self, chat_id: int) -> Mapping[int, MemberFacts]:
        cached = self._chats.get(chat_id)
        if cached is not None and cached[0] > self._clock():
            return cached[1]
        task = self._pending.get(chat_id)
        if task is None:
            task = asyncio.ensure_future(self._fetch(chat_id))
            self._pending[chat_id] = task
            task.add_done_callback(lambda _: self._pending.pop(chat_id, None))
        admins = await asyncio.shield(task)
        if len(self._chats) >= self._max:
            now = self._clock()
            self._chats = {k: v for k, v in self._chats.items() if v[0] > now}
        self._chats[chat_id] = (self._clock() + self._ttl, admins)
        return admins

    def forget(self, chat_id: int) -> None:
        self._chats.pop(chat_id, None)
