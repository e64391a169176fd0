"""The round service: opens rounds, takes proposals and votes, closes phases."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Literal

from novel.ballot import BALLOT_STYLES, BallotPost, BallotStyle, native_ballot
from novel.member import Member
from novel.phase import Event, Phase
from novel.repo import ChapterStore, RoundRow, RoundStore, SettingsStore, VoteSource
from novel.results import (
    BallotOption,
    BallotView,
    Outcome,
    ProposalSaved,
    Refused,
    RoundEmpty,
    RoundOpened,
    SettingsSaved,
    VoteCast,
    VoteRetracted,
    VotesClosed,
)
from novel.schedule import Now
from novel.settings import NovelSettings
from novel.tally import decide
from novel.writer import Goal

STYLE_KEY = "ballot_style"
VOTERS_KEY = "ballot_voters"

Schedule = Callable[[str, datetime], None]  # (round id, when) → a deadline job
Cancel = Callable[[str], None]


def default_style(platform: str) -> BallotStyle:
    """Telegram groups get the native poll; everywhere else the buttons/keyboard."""
    return "poll" if platform == "telegram" else "keyboard"


class RoundService:
    """Open → propose → vote → close. Every phase change is `RoundStore.advance` (a
    compare-and-set), so a deadline job and an admin closing at once never both act."""

    def __init__(
        self,
        rounds: RoundStore,
        chat_settings: SettingsStore,
        book: ChapterStore,
        settings: NovelSettings,
        clock: Now,
        schedule: Schedule,
        cancel: Cancel,
        *,
        model_writes: bool,
    ) -> None:
        self._rounds = rounds
        self._chat_settings = chat_settings
        self._book = book  # how many chapters there are (the round is for the next)
        self._settings = settings
        self._clock = clock
        self._schedule = schedule
        self._cancel = cancel
        self.model_writes = model_writes

    def minutes_left(self, when: datetime | None) -> int:
        if when is None:
            return 0
        return max(0, round((when - self._clock()).total_seconds() / 60))

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

    async def vote(
        self, member: Member, option: int, round_id: str = "", source: VoteSource = "command"
    ) -> VoteCast:
        r = await self._voting_round(member.chat_id, round_id)
        proposals = await self._rounds.proposals(r.id)
        if not 1 <= option <= len(proposals):
            raise Refused("bad_option", n=len(proposals))
        chosen = proposals[option - 1]
        try:
            before = await self._rounds.vote(
                r.id,
                member.user_id,
                chosen.id,
                self._clock(),
                user_name=member.user_name,
                source=source,
            )
        except LookupError:
            raise Refused("voting_closed") from None
        outcome = decide(proposals, await self._rounds.tally(r.id))
        change: Literal["new", "same", "changed"] = (
            "new" if before is None else "same" if before == chosen.id else "changed"
        )
        return VoteCast(r.id, option, chosen.title, change, outcome)

    async def poll_answer(
        self, member: Member, poll_id: str, options: tuple[int, ...]
    ) -> tuple[str, VoteCast | VoteRetracted]:
        """A native poll's answer → the round's tally; returns (round id, result)."""
        post = await self._rounds.ballot_by_poll(poll_id)
        if post is None:
            raise Refused("stale_ballot")
        voter = replace(member, chat_id=post.chat_id)
        if not options:
            r = await self._voting_round(post.chat_id, post.round_id)
            try:
                removed = await self._rounds.retract_vote(r.id, member.user_id, source="poll")
            except LookupError:
                raise Refused("voting_closed") from None
            return r.id, VoteRetracted(removed)
        cast = await self.vote(voter, options[0], post.round_id, source="poll")
        return post.round_id, cast

    async def close_proposals(self, r: RoundRow) -> BallotView | RoundEmpty | None:
        """Proposals → voting (or the round closes empty). None if someone else did it."""
        now = self._clock()
        deadline = now + timedelta(minutes=self._settings.vote_minutes)
        if not await self._rounds.advance(r.id, Event.CLOSE_PROPOSALS, vote_deadline=deadline):
            return None
        self._cancel(r.id)
        if not await self._rounds.proposals(r.id):
            await self._rounds.advance(r.id, Event.NO_PROPOSALS, closed_at=now, outcome="empty")
            return RoundEmpty(r.lang)
        self._schedule(r.id, deadline)
        view = await self.ballot_view(r.id)
        assert view is not None
        return view

    async def close_votes(self, r: RoundRow) -> VotesClosed | None:
        """Voting → writing with the winner decided. None if someone else closed it first."""
        if not await self._rounds.advance(r.id, Event.CLOSE_VOTES):
            return None
        self._cancel(r.id)
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

    async def ballot_view(self, round_id: str) -> BallotView | None:
        r = await self._rounds.get_round(round_id)
        if r is None:
            return None
        style, show = await self.ballot_settings(r.chat_id, r.platform)
        proposals = await self._rounds.proposals(round_id)
        voters: dict[int, list[str]] = {p.id: [] for p in proposals}
        for v in await self._rounds.votes(round_id):
            voters.setdefault(v.proposal_id, []).append(v.user_name or v.user_id)
        return BallotView(
            round_id=r.id,
            chat_id=r.chat_id,
            lang="en" if r.lang == "en" else "zh",
            options=tuple(
                BallotOption(p.title, p.summary, p.user_name, tuple(voters[p.id]))
                for p in proposals
            ),
            minutes=self.minutes_left(r.vote_deadline),
            style=style,
            show_voters=show,
            native=native_ballot(style, r.platform, len(proposals)),
            closed=r.phase != Phase.VOTING,
        )

    async def record_ballot(self, post: BallotPost) -> bool:
        """Where the round's ballot was posted; False for a round of another chat or none."""
        r = await self._rounds.get_round(post.round_id)
        if r is None or r.chat_id != post.chat_id:
            return False
        await self._rounds.save_ballot(post, self._clock())
        return True

    async def ballot_settings(self, chat_id: str, platform: str) -> tuple[BallotStyle, bool]:
        style = await self._chat_settings.setting(chat_id, STYLE_KEY)
        voters = await self._chat_settings.setting(chat_id, VOTERS_KEY)
        chosen = next((s for s in BALLOT_STYLES if s == style), default_style(platform))
        return chosen, voters == "shown"

    async def set_ballot_settings(
        self, member: Member, style: str | None, voters: str | None
    ) -> SettingsSaved:
        if style is not None:
            if style not in BALLOT_STYLES:
                raise Refused("bad_ballot_style", got=style[:20])
            await self._chat_settings.set_setting(member.chat_id, STYLE_KEY, style)
        if voters is not None:
            if voters not in ("shown", "hidden"):
                raise Refused("bad_voters", got=voters[:20])
            await self._chat_settings.set_setting(member.chat_id, VOTERS_KEY, voters)
        chosen, show = await self.ballot_settings(member.chat_id, member.platform)
        return SettingsSaved(chosen, show)
