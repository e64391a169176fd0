"""The transport seam: events in, replies out. Each platform fills in `start` and `stop`."""

from __future__ import annotations

import abc
from types import TracebackType

from bot.router import Router
from retrieval.reply import Reply
from retrieval.requests import Actor


class ChatTransport(abc.ABC):
    """Lifecycle through `async with`; `serve()` runs until `stop()` or cancellation."""

    name: str = "transport"

    def __init__(self, router: Router) -> None:
        self.router = router

    @abc.abstractmethod
    async def start(self) -> None:
        """Connect and begin receiving events (returns once running)."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Disconnect cleanly; idempotent."""

    @abc.abstractmethod
    async def send(self, target: Actor, reply: Reply) -> None:
        """Post an unsolicited reply (a round closing, a chapter finished) to `target`'s chat:
        `target.channel_id` when set, else `target.chat_id`."""

    async def edit(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None:
        """Replace a message this transport posted in `target`'s chat with `reply` (a ballot's
        running count; without a poll the ballot is closed: its buttons go, and the native poll
        `poll_message_id` stops). A transport that cannot edit leaves the message as it is."""
        return None

    async def __aenter__(self) -> ChatTransport:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
