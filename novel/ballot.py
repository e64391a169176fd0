"""The ballot: the vote-button codec every transport and the service share, where a posted
ballot lives, and the throttled editor that keeps its running count current.

A vote button (or keyboard key) carries `vote:<round id>:<option>`; a native Telegram poll
carries nothing, so its id is mapped to the round in SQLite (`novel_ballots`) when the transport
reports the posted ballot. Every way of voting ends in one tally (`novel_votes`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from bot.reply import Reply

log = logging.getLogger(__name__)

BallotStyle = Literal["poll", "keyboard"]
BALLOT_STYLES: tuple[BallotStyle, ...] = ("poll", "keyboard")

VOTE = "vote"  # the action prefix of vote buttons

# Telegram's native poll takes 2–12 options; it is the only platform with one here. Whether a
# ballot goes out as the native poll or as buttons is decided once, by `native_ballot` (the
# presenter words the help text by it and the renderers follow the flag it sets).
POLL_MIN_OPTIONS = 2
POLL_MAX_OPTIONS = 12
NATIVE_POLL_PLATFORMS = frozenset({"telegram"})


def native_ballot(style: BallotStyle, platform: str, options: int) -> bool:
    """True: the ballot is the platform's native poll; False: buttons / a keyboard."""
    return (
        style == "poll"
        and platform in NATIVE_POLL_PLATFORMS
        and POLL_MIN_OPTIONS <= options <= POLL_MAX_OPTIONS
    )


@dataclass(frozen=True, slots=True)
class VoteAction:
    round_id: str
    option: int  # 1-based, as printed on the ballot


def vote_prefix(round_id: str) -> str:
    """What a ballot option's action starts with; option i appends `i` (1-based)."""
    return f"{VOTE}:{round_id}:"


def encode_vote(round_id: str, option: int) -> str:
    return f"{vote_prefix(round_id)}{option}"


def decode_vote(action: str) -> VoteAction | None:
    """`vote:<round>:<n>` → VoteAction; None for anything else (another action, garbage)."""
    kind, _, payload = action.partition(":")
    return decode_vote_payload(payload) if kind == VOTE else None


def decode_vote_payload(payload: str) -> VoteAction | None:
    """`<round>:<n>` (what follows the `vote:` prefix) → VoteAction, or None."""
    round_id, _, option = payload.rpartition(":")
    if not option.isascii() or not option.isdigit() or not 0 < int(option) <= 1000:
        return None
    return VoteAction(round_id, int(option))


@dataclass(frozen=True, slots=True)
class BallotPost:
    """Where a round's ballot was posted: enough to edit it after a restart."""

    round_id: str
    platform: str
    chat_id: str
    channel_id: str
    message_id: str  # the message that shows the running count (with the keyboard, if any)
    poll_id: str = ""  # a native poll's id (Telegram), mapped back to the round
    poll_message_id: str = ""  # the native poll's own message (to stop it at the close)


EditBallot = Callable[[BallotPost, Reply], Awaitable[None]]
# round id → the ballot's place and its current rendering (None: nothing to edit)
RenderBallot = Callable[[str], Awaitable[tuple[BallotPost, Reply] | None]]


@dataclass(slots=True)
class _Pending:
    dirty: bool = False
    last_at: float = float("-inf")
    task: asyncio.Task[None] | None = None
    shown: Reply | None = None  # what the message shows now: an identical edit is skipped


@dataclass(slots=True)
class BallotEditor:
    """Edits each round's ballot message with the running count, at most once per
    `interval_s` per ballot (flood limits: Telegram allows about 20 messages a minute in a
    group, edits included; Discord 5 edits per 5 s in a channel). Votes arriving while an
    edit waits are coalesced into it: the rendering happens when the edit goes out.
    """

    render: RenderBallot
    edit: EditBallot
    interval_s: float = 5.0
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    edits: int = 0
    _rounds: dict[str, _Pending] = field(default_factory=dict)

    def shown(self, round_id: str, reply: Reply) -> None:
        """The ballot was just posted showing `reply`."""
        self._rounds.setdefault(round_id, _Pending()).shown = reply

    def touch(self, round_id: str) -> None:
        """The tally of `round_id` changed: schedule an edit (or fold into a scheduled one)."""
        state = self._rounds.setdefault(round_id, _Pending())
        state.dirty = True
        if state.task is None or state.task.done():
            state.task = asyncio.get_running_loop().create_task(self._run(round_id, state))

    async def _run(self, round_id: str, state: _Pending) -> None:
        while state.dirty:
            wait = state.last_at + self.interval_s - self.now()
            if wait > 0:
                await self.sleep(wait)
            state.dirty = False
            try:
                found = await self.render(round_id)
                if found is None:
                    return
                if found[1] == state.shown:  # no new count (e.g. a retraction of nothing)
                    continue
                await self.edit(*found)
                state.shown = found[1]
                self.edits += 1
            except asyncio.CancelledError:
                raise
            except Exception:  # a ballot edit is best effort: the tally itself is in SQLite
                log.warning("editing the ballot of round %s failed", round_id, exc_info=True)
            state.last_at = self.now()

    async def idle(self) -> None:
        """Wait until every scheduled edit went out (tests, shutdown)."""
        while True:
            tasks = [s.task for s in self._rounds.values() if s.task and not s.task.done()]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        tasks = [s.task for s in self._rounds.values() if s.task and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._rounds.clear()
