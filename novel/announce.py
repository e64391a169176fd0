"""The writers' room's one way up: what it says unasked, through a port the chat layer
implements (`bot.presenters.novel.NovelAnnouncer`).

A deadline closes a phase, a resumed write finishes, a tally changes: no member asked, so the
room tells the round's chat (its opener, as a `Member` with the language and the `via` the
round was opened with), or tells the chat layer a ballot's count moved. `novel/` never calls
`bot/` any other way.
"""

from __future__ import annotations

from typing import Protocol

from novel.member import Member
from novel.results import BallotView, ChapterSaved, RoundEmpty, VotesClosed, WriteStalled, Writing


class Announce(Protocol):
    async def round_empty(self, chat: Member, empty: RoundEmpty) -> None:
        """The proposal deadline passed with no proposal: the round closed."""

    async def proposals_closed(self, chat: Member, ballot: BallotView) -> None:
        """The proposal deadline passed: voting is open on this ballot."""

    async def votes_closed(self, chat: Member, closed: VotesClosed) -> None:
        """The vote deadline passed: the winner (and, with no model, who should write it)."""

    async def writing(self, chat: Member, step: Writing) -> None:
        """The model started writing the winner's chapter (`resumed`: after a restart)."""

    async def written(self, chat: Member, written: ChapterSaved | WriteStalled) -> None:
        """The chapter no one waited for was saved, or the write stalled."""

    def tally_changed(self, round_id: str) -> None:
        """A vote, a withdrawal or the close changed what round `round_id`'s ballot shows."""
