"""The transport seam: events in, replies out.

A transport is httpx's strict point of cut-off, seen from both sides:

- in: every event becomes one `bot.router.Invocation` (who, what was said, where the reply
  goes) handed to `Router.handle`, which answers, posts through `reply_to` and runs the
  registry's `posted` hooks (the router owns them; a transport fires no callback);
- out: one primitive per platform, `post(outlet, reply) -> Posted`: put a reply in its outlet
  (an interaction, a channel, a chat) and say what it posted. `send` (unsolicited) picks the
  outlet for a chat and posts there; `edit` replaces a posted message.

A transport is built with the router it serves and attaches itself to it (the router's `send`
and `edit` reach its chats that way; its clock is the router's, the composition root's, unless
a test drives the wire on a clock of its own), so `DiscordTransport(app.router, settings)` is
complete. `start` refuses a transport the router does not hold (`bot.router.NotAttached`):
never a silent drop later.
"""

from __future__ import annotations

import abc
from typing import Generic, Self, TypeVar

from pydantic import SecretStr

from bot.actor import Actor
from bot.reply import Posted, Reply
from bot.router import Post, Router
from retrieval.clock import Clock

Outlet = TypeVar("Outlet")


def required_token(token: SecretStr | None, variable: str) -> SecretStr:
    """A platform's bot token; a transport cannot be built without it."""
    if token is None:
        raise ValueError(f"{variable} is not set")
    return token


class ChatTransport(abc.ABC, Generic[Outlet]):
    """Lifecycle through `async with` (`start`, `stop`); built attached to its router."""

    name: str = "transport"

    def __init__(self, router: Router, *, clock: Clock | None = None) -> None:
        """`clock` drives the transport's throttles (streaming edits, flood pacing): the
        router's unless given."""
        self.router = router
        self.clock = clock if clock is not None else router.clock
        router.attach(self)

    async def start(self) -> None:
        """Connect and begin receiving events (returns once running). `NotAttached` when the
        router does not hold this transport (another one of its platform replaced it)."""
        self.router.ensure_attached(self)
        await self._start()

    @abc.abstractmethod
    async def _start(self) -> None:
        """The platform's own start."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Disconnect cleanly; idempotent."""

    @abc.abstractmethod
    async def post(self, outlet: Outlet, reply: Reply) -> Posted:
        """Put `reply` in `outlet`, the platform's place for it; say what was posted."""

    @abc.abstractmethod
    async def send(self, target: Actor, reply: Reply) -> Posted:
        """Post an unsolicited reply to `target`'s chat: `target.channel_id` when set, else
        `target.chat_id` (the router's `send` calls it and runs the hooks)."""

    def reply_to(self, outlet: Outlet) -> Post:
        """Where an invocation's reply goes: posted in `outlet`."""

        async def post(reply: Reply) -> Posted:
            return await self.post(outlet, reply)

        return post

    async def edit(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None:
        """Replace a message this transport posted in `target`'s chat with `reply` (a ballot's
        running count; without a poll the ballot is closed: its buttons go, and the native poll
        `poll_message_id` stops). A transport that cannot edit leaves the message as it is."""
        return None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
