"""The round service: opens rounds, takes proposals and votes, closes phases."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal

from kernel.refusal import Refused
from novel.announce import Announce
from novel.api import Vote, Withdrawal
from novel.member import Member
from novel.phase import Event, Phase
from novel.repo import ChapterStore, RoundRow, RoundStore
from novel.results import (
    BallotOption,
    BallotView,
    CurrentRound,
    Outcome,
    ProposalSaved,
    RoundEmpty,
    RoundOpened,
    VoteCast,
    VoteRetracted,
    VotesClosed,
)
from novel.schedule import Now
from novel.settings import NovelSettings
from novel.tally import decide
from novel.writer import Goal

Schedule = Callable[[str, datetime], None]  # (round id, when) → a deadline job
Cancel = Callable[[str], None]


def minutes_left(clock: Now, when: datetime | None) -> int:
    if when is None:
        return 0
    return max(0, round((when - clock()).total_seconds() / 60))


def lang_of(r: RoundRow) -> Literal["zh", "en"]:
    return "en" if r.lang == "en" else "zh"


class BallotViews:
    """A round's ballot as it stands (read only): what the round service returns when voting
    opens, and what the chat layer redraws as the count changes."""

    def __init__(self, rounds: RoundStore, clock: Now) -> None:
        self._rounds = rounds
        self._clock = clock

    async def view(self, round_id: str) -> BallotView | None:
        r = await self._rounds.get_round(round_id)
        if r is None:
            return None
        return BallotView(
            round_id=r.id,
            chat_id=r.chat_id,
            lang=lang_of(r),
            options=await self.options(round_id),
            minutes=minutes_left(self._clock, r.vote_deadline),
            closed=r.phase != Phase.VOTING,
        )

    async def options(self, round_id: str) -> tuple[BallotOption, ...]:
        """The round's proposals in ballot order, each with who voted for it."""
        proposals = await self._rounds.proposals(round_id)
        voters: dict[int, list[str]] = {p.id: [] for p in proposals}
        for v in await self._rounds.votes(round_id):
            voters.setdefault(v.proposal_id, []).append(v.user_name or v.user_id)
        return tuple(
            BallotOption(p.title, p.summary, p.user_name, tuple(voters[p.id])) for p in proposals
        )


class RoundService:
    """Open → propose → vote → close. Every phase change is `RoundStore.advance` (a
    compare-and-set), so a deadline job and an admin closing at once never both act. Every
    change of a ballot's count is announced (`Announce.tally_changed`)."""

    def __init__(
        self,
        rounds: RoundStore,
        book: ChapterStore,
        settings: NovelSettings,
        clock: Now,
        schedule: Schedule,
        cancel: Cancel,
        announce: Announce,
        *,
        model_writes: bool,
    ) -> None:
        self._rounds = rounds
        self._book = book  # how many chapters there are (the round is for the next)
        self._settings = settings
        self._clock = clock
        self._schedule = schedule
        self._cancel = cancel
        self._announce = announce
        self.ballots = BallotViews(rounds, clock)
        self.model_writes = model_writes

    def minutes_left(self, when: datetime | None) -> int:
        return minutes_left(self._clock, when)

    async def open(self, member: Member) -> RoundOpened:
        now = self._clock()
        deadline = now + timedelta(minutes=self._settings.proposal_minutes)
        round_id = uuid.uuid4().hex[:12]
        created = await self._rounds.insert_round(
            round_id=round_id, opener=member, now=now, proposal_deadline=deadline
        )
        if not created:
            raise Refused("round_open", phase=Phase.PROPOSAL.value)
        self._schedule(round_id, deadline)
        number = len(await self._book.chapters(member.chat_id)) + 1
        return RoundOpened(number, self.minutes_left(deadline), self.model_writes)

    async def current(self, member: Member) -> CurrentRound:
        """The member's chat's open round as it stands; `Refused("no_round")` without one."""
        r = await self._rounds.open_round(member.chat_id)
        if r is None:
            raise Refused("no_round")
        deadline = {Phase.PROPOSAL: r.proposal_deadline, Phase.VOTING: r.vote_deadline}.get(r.phase)
        options = await self.ballots.options(r.id)
        winner = next(
            (p.title for p in await self._rounds.proposals(r.id) if p.id == r.winner_id), ""
        )
        return CurrentRound(
            r.id,
            r.phase,
            len(await self._book.chapters(r.chat_id)) + 1,
            deadline,
            self.minutes_left(deadline),
            options,
            winner,
        )

    async def propose(self, member: Member, goal: Goal) -> ProposalSaved:
        title, summary, notes = goal.title.strip(), goal.summary, goal.notes
        if not title:
            raise Refused("propose_title_missing")
        if len(title) > 100 or len(summary) > 1000 or len(notes) > 1000:
            raise Refused("propose_too_long")
        r = await self._rounds.open_round(member.chat_id)
        if r is None:
            raise Refused("no_round")
        if r.phase != Phase.PROPOSAL or self._clock() >= r.proposal_deadline:
            raise Refused("proposals_closed")
        try:
            new = await self._rounds.upsert_proposal(
                r.id,
                member.user_id,
                member.user_name,
                title,
                summary.strip(),
                notes.strip(),
                self._clock(),
            )
        except LookupError:
            raise Refused("proposals_closed") from None
        count = len(await self._rounds.proposals(r.id))
        return ProposalSaved(title, new, count, self.minutes_left(r.proposal_deadline))

    async def _voting_round(self, chat_id: str, round_id: str) -> RoundRow:
        r = await self._rounds.open_round(chat_id) if chat_id else None
        if round_id and (r is None or r.id != round_id):
            raise Refused("stale_ballot")
        if r is None:
            raise Refused("no_round")
        if r.phase == Phase.PROPOSAL:
            raise Refused("not_voting_yet")
        # By the clock, not by the job: a vote a second after the deadline is late even when
        # the deadline job has not run yet.
        if r.phase != Phase.VOTING or (r.vote_deadline and self._clock() >= r.vote_deadline):
            raise Refused("voting_closed")
        return r

    async def vote(self, vote: Vote) -> VoteCast:
        """Count `vote` (one per member: a later vote replaces the earlier one)."""
        voter = vote.voter
        r = await self._voting_round(voter.chat_id, vote.round_id)
        proposals = await self._rounds.proposals(r.id)
        if not 1 <= vote.option <= len(proposals):
            raise Refused("bad_option", n=len(proposals))
        chosen = proposals[vote.option - 1]
        try:
            before = await self._rounds.vote(
                r.id,
                voter.user_id,
                chosen.id,
                self._clock(),
                user_name=voter.user_name,
                source=vote.source,
            )
        except LookupError:
            raise Refused("voting_closed") from None
        self._announce.tally_changed(r.id)
        outcome = decide(proposals, await self._rounds.tally(r.id))
        change: Literal["new", "same", "changed"] = (
            "new" if before is None else "same" if before == chosen.id else "changed"
        )
        return VoteCast(r.id, vote.option, chosen.title, change, outcome)

    async def withdraw(self, withdrawal: Withdrawal) -> VoteRetracted:
        """Take back the member's vote if it was cast through `withdrawal.source` (a poll's
        withdrawal does not undo a later button vote)."""
        voter = withdrawal.voter
        r = await self._voting_round(voter.chat_id, withdrawal.round_id)
        try:
            removed = await self._rounds.retract_vote(r.id, voter.user_id, source=withdrawal.source)
        except LookupError:
            raise Refused("voting_closed") from None
        self._announce.tally_changed(r.id)
        return VoteRetracted(removed)

    async def close_proposals(self, r: RoundRow) -> BallotView | RoundEmpty | None:
        """Proposals → voting (or the round closes empty). None if someone else did it."""
        now = self._clock()
        deadline = now + timedelta(minutes=self._settings.vote_minutes)
        if not await self._rounds.advance(r.id, Event.CLOSE_PROPOSALS, vote_deadline=deadline):
            return None
        self._cancel(r.id)
        if not await self._rounds.proposals(r.id):
            await self._rounds.advance(r.id, Event.NO_PROPOSALS, closed_at=now, outcome="empty")
            return RoundEmpty(lang_of(r))
        self._schedule(r.id, deadline)
        view = await self.ballots.view(r.id)
        assert view is not None
        return view

    async def close_votes(self, r: RoundRow) -> VotesClosed | None:
        """Voting → writing with the winner decided. None if someone else closed it first."""
        if not await self._rounds.advance(r.id, Event.CLOSE_VOTES):
            return None
        self._cancel(r.id)
        self._announce.tally_changed(r.id)  # the ballot shows the final count, without buttons
        # Decided after the compare-and-set: no vote can land in a closed round any more.
        outcome = await self.decide(r.id)
        number = len(await self._book.chapters(r.chat_id)) + 1
        return VotesClosed(outcome, number, self.model_writes)

    async def decide(self, round_id: str) -> Outcome:
        """The winner by the round's tally, recorded on the round."""
        outcome = decide(await self._rounds.proposals(round_id), await self._rounds.tally(round_id))
        assert outcome.winner is not None  # empty rounds never reach voting
        await self._rounds.set_winner(round_id, outcome.winner.id, outcome.reason)
        return outcome

    async def abandon(self, r: RoundRow) -> bool:
        return await self._rounds.advance(r.id, Event.ABANDON, closed_at=self._clock())
