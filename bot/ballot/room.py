"""The ballot room as members use it: a vote by button or key, a native poll's answer, the
chat's ballot settings. Each becomes a plain `novel.api.Vote` (or `Withdrawal`) for the
writers' room, whose result the writers' room's presenter words.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from bot.actor import Actor
from bot.ballot.board import BALLOT_STYLES, VOTERS, BallotBoard
from bot.ballot.codec import PollVote, VoteButton
from bot.presenters.novel import NovelPresenter, StoryPlaces, member_of
from bot.presenters.novel_messages import T
from bot.registry import PollAnswer
from bot.reply import Posted, Reply
from kernel.refusal import Refused
from novel.api import Vote, Withdrawal
from novel.member import Member
from novel.results import VoteCast, VoteRetracted


@dataclass(frozen=True, slots=True)
class BallotSettings:
    """`/settings ballot`: `style` poll | keyboard (one ballot, never both); `voters` shown |
    hidden. None leaves a setting as it is (both None: say how the chat's ballot is set)."""

    style: str | None = None
    voters: str | None = None

    @property
    def changes(self) -> bool:
        return self.style is not None or self.voters is not None


class Votes(Protocol):
    """The writers' room's votes (`novel.rounds.RoundService`)."""

    async def vote(self, vote: Vote) -> VoteCast: ...

    async def withdraw(self, withdrawal: Withdrawal) -> VoteRetracted: ...


class BallotReplies(Protocol):
    """The ballot room as its commands call it (tests record the calls with a plain class)."""

    async def vote(self, actor: Actor, button: VoteButton) -> Reply: ...

    async def poll_answer(self, actor: Actor, answer: PollAnswer) -> Reply: ...

    async def poll_place(self, platform: str, poll_id: str) -> tuple[str, str] | None: ...

    async def settings(self, actor: Actor, asked: BallotSettings) -> Reply: ...

    async def posted(self, where: Actor, reply: Reply, posted: Posted) -> None: ...


class BallotRoom:
    def __init__(
        self, board: BallotBoard, votes: Votes, present: NovelPresenter, places: StoryPlaces
    ) -> None:
        self.board = board
        self._votes = votes
        self._present = present
        self._places = places

    async def _voter(self, actor: Actor, round_id: str, chat_id: str) -> Member:
        """The voter in the story of the round the ballot is for, when that story is of the
        chat the ballot is in (a ballot names its round: it counts wherever in its chat it
        is shown); else in the story of the place they voted in, where another story's round
        is a stale ballot."""
        voter = member_of(actor, self._places)
        story = await self.board.story_of(round_id)
        if story is not None and self._places.chat_of(story) == chat_id:
            return replace(voter, chat_id=story)
        return voter

    async def vote(self, actor: Actor, button: VoteButton) -> Reply:
        """A ballot's button or key: a vote in the round the ballot is for."""
        try:
            voter = await self._voter(actor, button.round_id, actor.chat_id)
            vote = Vote(button.round_id, button.option, voter, "button")
            return self._present.vote_cast(await self._votes.vote(vote), actor)
        except Refused as refused:
            return self._present.refusal(actor.lang, refused)

    async def poll_answer(self, actor: Actor, answer: PollAnswer) -> Reply:
        """A native poll's answer: its poll leads to the round and the chat it was posted in
        (the answer names neither); no option is a withdrawal of the poll's vote."""
        chosen = PollVote.of(answer)
        ballot = await self.board.find_poll(chosen.poll_id)
        try:
            if ballot is None:
                raise Refused("stale_ballot")
            voter = await self._voter(actor, ballot.round_id, ballot.chat_id)
            if chosen.withdrawn:
                retracted = await self._votes.withdraw(Withdrawal(ballot.round_id, voter))
                return self._present.vote_retracted(retracted, actor)
            vote = Vote(ballot.round_id, chosen.options[0], voter, "poll")
            return self._present.vote_cast(await self._votes.vote(vote), actor)
        except Refused as refused:
            return self._present.refusal(actor.lang, refused)

    async def poll_place(self, platform: str, poll_id: str) -> tuple[str, str] | None:
        """Where `platform`'s native poll `poll_id` was posted (chat, forum topic), from the
        ballot's record: its answers name no chat, and a transport forgets across restarts."""
        ballot = await self.board.find_poll(poll_id)
        if ballot is None or ballot.platform != platform:
            return None
        return ballot.chat_id, ballot.channel_id

    async def settings(self, actor: Actor, asked: BallotSettings) -> Reply:
        """Show the chat's ballot settings, or change them (admins)."""
        lang = actor.lang
        if asked.changes and not actor.is_admin:  # the router asked first; direct callers too
            return Reply.error(T(lang, "admins_only"), lang=lang)
        style = next((s for s in BALLOT_STYLES if s == asked.style), None)
        if asked.style is not None and style is None:
            return Reply.error(T(lang, "bad_ballot_style", got=asked.style[:20]), lang=lang)
        if asked.voters is not None and asked.voters not in VOTERS:
            return Reply.error(T(lang, "bad_voters", got=asked.voters[:20]), lang=lang)
        await self.board.set_look(actor.chat_id, style, asked.voters)
        look = self.board.look(actor.chat_id, actor.platform)
        voters = T(lang, "voters_shown" if look.show_voters else "voters_hidden")
        said = T(lang, "ballot_settings", style=T(lang, f"style_{look.style}"), voters=voters)
        return Reply.text(said, lang=lang)

    async def posted(self, where: Actor, reply: Reply, posted: Posted) -> None:
        await self.board.posted(where, reply, posted)
