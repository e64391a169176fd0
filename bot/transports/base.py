"""The transport seam: events in, replies out.

The base class owns delivery: every reply a transport posts, whatever the path (a command
answered at once or after a deferral, follow-ups, a button press, an unsolicited channel
message, a native poll), goes out through `deliver`, which knows the ids of the messages posted
and reports a ballot through the one injected callback (`on_ballot`). Each platform fills in one
primitive, `_post`: put a reply in its outlet (an interaction, a channel, a chat) and say what it
posted. Lifecycle (`start`, `stop`) and unsolicited `send` are the platform's too.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Self, TypedDict, TypeVar

from pydantic import SecretStr

from bot.actor import Actor
from bot.reply import Reply
from bot.router import Router
from retrieval.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

Outlet = TypeVar("Outlet")


@dataclass(frozen=True, slots=True)
class Posted:
    """What one delivery put in the chat: the messages the transport may edit later (public
    ones, in order; the last carries the buttons), and a native poll if one went out."""

    message_ids: tuple[str, ...] = ()
    poll_id: str = ""
    poll_message_id: str = ""


@dataclass(frozen=True, slots=True)
class BallotPosted:
    """A round's ballot is in a chat: the message that shows its running count (edited as
    votes arrive) and, on Telegram, the native poll that carries its votes."""

    platform: str
    chat_id: str
    channel_id: str  # a Discord channel, a Telegram forum topic ("" for none)
    round_id: str
    message_id: str
    poll_id: str = ""
    poll_message_id: str = ""


OnBallot = Callable[[BallotPosted], Awaitable[None]]


class Wiring(TypedDict, total=False):
    """What the composition root wires into every transport (`ChatTransport`'s keywords); a
    platform's transport takes them as `**wiring` and hands them on."""

    on_ballot: OnBallot | None
    clock: Clock


def required_token(token: SecretStr | None, variable: str) -> SecretStr:
    """A platform's bot token; a transport cannot be built without it."""
    if token is None:
        raise ValueError(f"{variable} is not set")
    return token


class ChatTransport(abc.ABC, Generic[Outlet]):
    """Lifecycle through `async with`; `serve()` runs until `stop()` or cancellation.

    `on_ballot` is told where every ballot went (the composition root passes the writers'
    room's); `clock` drives the transport's throttles (streaming edits)."""

    name: str = "transport"

    def __init__(
        self,
        router: Router,
        *,
        on_ballot: OnBallot | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.router = router
        self.clock = clock
        self._on_ballot = on_ballot

    @abc.abstractmethod
    async def start(self) -> None:
        """Connect and begin receiving events (returns once running)."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Disconnect cleanly; idempotent."""

    @abc.abstractmethod
    async def send(self, target: Actor, reply: Reply) -> None:
        """Post an unsolicited reply (a round closing, a chapter finished) to `target`'s chat:
        `target.channel_id` when set, else `target.chat_id`. Through `deliver`."""

    @abc.abstractmethod
    async def _post(self, outlet: Outlet, reply: Reply) -> Posted:
        """Put `reply` in `outlet`, the platform's place for it; say what was posted."""

    async def deliver(self, where: Actor, reply: Reply, outlet: Outlet) -> Posted:
        """Post `reply` in `where`'s chat through `outlet`; a ballot reports where it went."""
        posted = await self._post(outlet, reply)
        poll = reply.poll
        if poll is None or not poll.round_id or not posted.message_ids:
            return posted
        if self._on_ballot is None:
            return posted
        ballot = BallotPosted(
            where.platform,
            where.chat_id,
            where.channel_id,
            poll.round_id,
            posted.message_ids[-1],
            posted.poll_id,
            posted.poll_message_id,
        )
        try:
            await self._on_ballot(ballot)
        except Exception:  # the ballot is posted and votes count; only its live count is lost
            log.exception("%s: reporting the ballot of round %s failed", self.name, poll.round_id)
        return posted

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
