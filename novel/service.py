"""The writers' room: its three services, its life cycle, and the flows that span rounds and
chapters.

The chat layer calls the service a command needs directly (`bot.commands.novel` registers one
handler per request type): `rounds` (propose, vote, withdraw, the ballot as it stands),
`chapters` (show, revise, roll back, delete, history, export), `world` (the blueprint),
`stories` (a place's own story, the chat's stories: `novel.stories`). What
needs more than one of them lives here: opening a round (or retrying a pending chapter),
closing the current phase, submitting the winner's text, and what a deadline does. Nothing
here knows of chat: results are typed (`novel.results`), refusals raise `Refused` /
`BlueprintError`, and what happens unasked goes up through the `Announce` port.

It owns the room's life cycle: the deadline scheduler, reconciling plot memory and resuming
open rounds on start-up. `App` opens the `NovelRepo`, builds the `PlotMemory` and the
`ChapterService` (the one part that holds the model) and passes them in. The read-only
`StoryService` (/novel characters, recap, map) is beside it, not in it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from kernel.refusal import Refused
from novel.announce import Announce
from novel.blueprint import default_blueprint
from novel.chapters import ChapterService
from novel.member import Member
from novel.memory import PlotMemory, ReconcileReport
from novel.phase import Event, Phase
from novel.repo import NovelRepo, RoundRow
from novel.results import (
    Abandoned,
    ChapterSaved,
    Closed,
    ClosedAndWritten,
    Proposal,
    RoundEmpty,
    RoundOpened,
    Steps,
    VotesClosed,
    WriteStalled,
    Writing,
)
from novel.rounds import RoundService, lang_of
from novel.schedule import Deadlines
from novel.settings import NovelSettings
from novel.stories import Stories
from novel.world import WorldService
from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.lifecycle import Closing
from retrieval.schedule import Scheduler

log = logging.getLogger(__name__)


class NovelService(Closing):
    def __init__(
        self,
        repo: NovelRepo,
        memory: PlotMemory,
        chapters: ChapterService,
        settings: NovelSettings,
        announce: Announce,
        clock: Clock = SYSTEM_CLOCK,
        *,
        scheduler: Scheduler | None = None,
    ) -> None:
        """`scheduler`: the process's (the deadlines are stored with its jobs and survive a
        restart); without one they are kept in memory."""
        self.repo = repo
        self.memory = memory
        self.settings = settings
        self._announce = announce
        self._clock = clock.now
        self.deadlines = Deadlines(scheduler, clock)
        self.deadlines.on("round", self._on_deadline)
        self.deadlines.on("resume", self._resume_write)
        self.rounds = RoundService(
            repo.rounds,
            repo.book,
            settings,
            clock.now,
            self._schedule,
            self._cancel,
            announce,
            model_writes=chapters.model_writes,
        )
        self.chapters = chapters
        self.world = WorldService(repo.world, settings, clock.now)
        self.stories = Stories(repo, clock.now)
        self.last_reconcile: dict[str, ReconcileReport] = {}

    # ---- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> NovelService:
        try:
            await self.reconcile()
            await self._resume_rounds()
        except BaseException:
            await self.deadlines.close()
            raise
        return self

    async def close(self) -> None:
        """Stop the round deadlines (the stores belong to the caller)."""
        await self.deadlines.close()

    async def reconcile(self) -> dict[str, ReconcileReport]:
        """Re-apply the SQLite truth to the vector store for every novel."""
        for chat_id in await self.repo.world.chats():
            report = await self.memory.reconcile(chat_id)
            self.last_reconcile[chat_id] = report
            if report.removed or report.reindexed or report.activated or report.renumbered:
                log.warning("novel %s: plot memory reconciled: %s", chat_id, report)
        return self.last_reconcile

    async def _resume_rounds(self) -> None:
        """Open rounds' deadlines are in the scheduler's store already; a write the process
        stopped in the middle of is written again."""
        for r in await self.repo.rounds.open_rounds():
            if r.phase == Phase.WRITING:
                # The process stopped mid-write: nothing was saved (one transaction saves the
                # chapter and finishes the round). Write it again at once when a model can.
                await self.repo.rounds.advance(r.id, Event.STALL)
                if self.chapters.model_writes:
                    self.deadlines.at(f"resume:{r.id}", self._clock())

    def _schedule(self, round_id: str, when: datetime) -> None:
        self.deadlines.at(f"round:{round_id}", when)

    def _cancel(self, round_id: str) -> None:
        self.deadlines.cancel(f"round:{round_id}")

    # ---- what spans rounds and chapters --------------------------------------------------------

    async def next_round(
        self, member: Member, steps: Steps | None = None
    ) -> RoundOpened | ChapterSaved | WriteStalled:
        """`/chapter next`: open a round, or write a pending round's chapter again."""
        if self.settings.openers == "admins" and not member.is_admin:
            raise Refused("admins_open")
        existing = await self.repo.rounds.open_round(member.chat_id)
        if existing is not None and existing.phase == Phase.PENDING:
            return await self._retry_pending(member, existing, steps)
        if existing is not None:
            raise Refused("round_open", phase=existing.phase.value)
        await self.repo.world.ensure_novel(
            member.chat_id, default_blueprint().to_json(), self._clock()
        )
        return await self.rounds.open(member)

    async def close_round(self, member: Member, steps: Steps | None = None) -> Closed:
        """`/chapter close`: end the current phase early (or abandon a pending round)."""
        r = await self.repo.rounds.open_round(member.chat_id)
        if r is None:
            raise Refused("no_round")
        if r.phase == Phase.PROPOSAL:
            ballot = await self.rounds.close_proposals(r)
            if ballot is None:
                raise Refused("proposals_closed")
            return ballot
        if r.phase == Phase.VOTING:
            finished = await self._finish_voting(r, steps, said=None)
            if finished is None:
                raise Refused("voting_closed")
            return finished
        if r.phase == Phase.PENDING and await self.rounds.abandon(r):
            return Abandoned()
        raise Refused("busy_writing")

    async def submit(self, member: Member, text: str) -> ChapterSaved:
        """`/chapter submit`: the winner's author (or an admin) gives the pending chapter's
        text."""
        r = await self.repo.rounds.open_round(member.chat_id)
        if r is None:
            raise Refused("submit_no_round")
        if r.phase in (Phase.PROPOSAL, Phase.VOTING):
            raise Refused("submit_not_yet")
        if r.phase != Phase.PENDING:
            raise Refused("busy_writing")
        winner = await self._winner(r)
        if not member.is_admin and member.user_id != winner.user_id:
            raise Refused("submit_not_yours", who=winner.user_name or winner.user_id)
        return await self.chapters.submit(member, r, winner, text)

    # ---- deadlines and writes ------------------------------------------------------------------

    async def _on_deadline(self, round_id: str) -> None:
        r = await self.repo.rounds.get_round(round_id)
        if r is None:
            return
        target = self._target(r)
        if r.phase == Phase.PROPOSAL:
            closed = await self.rounds.close_proposals(r)
            if isinstance(closed, RoundEmpty):
                await self._announce.round_empty(target, closed)
            elif closed is not None:
                await self._announce.proposals_closed(target, closed)
        elif r.phase == Phase.VOTING:
            await self._finish_voting(r, None, said=target)

    async def _finish_voting(
        self, r: RoundRow, steps: Steps | None, *, said: Member | None
    ) -> VotesClosed | ClosedAndWritten | None:
        """Voting → the winner is written (or waits for the group's text). One path for the
        deadline (`said`: each step is announced to the round's chat as it happens) and for
        `/chapter close` (the caller gets the result; progress streams to it). None: another
        closer won."""
        closed = await self.rounds.close_votes(r)
        if closed is None:
            return None
        if said is not None:
            await self._announce.votes_closed(said, closed)
        if not closed.model_writes:
            await self.repo.rounds.advance(r.id, Event.STALL)
            return closed
        written = await self._write(r, self._winner_of(closed), closed.number, steps, said)
        return ClosedAndWritten(closed, written)

    async def _write(
        self,
        r: RoundRow,
        winner: Proposal,
        number: int,
        steps: Steps | None,
        said: Member | None,
        *,
        resumed: bool = False,
    ) -> ChapterSaved | WriteStalled:
        """Tell the chat chapter `number` is being written, write it, announce it when no
        caller waits for it."""
        if said is not None:
            await self._announce.writing(said, Writing(number, resumed))
        elif steps is not None:
            await steps(Writing(number, resumed))
        written = await self.chapters.write_round(r, winner, steps, wait=said is not None)
        if said is not None:
            await self._announce.written(said, written)
        return written

    @staticmethod
    def _winner_of(closed: VotesClosed) -> Proposal:
        assert closed.outcome.winner is not None
        return closed.outcome.winner

    async def _winner(self, r: RoundRow) -> Proposal:
        """The round's winning proposal (decided again if a crash left none recorded)."""
        if r.winner_id is None:
            outcome = await self.rounds.decide(r.id)
            assert outcome.winner is not None
            return outcome.winner
        return next(p for p in await self.repo.rounds.proposals(r.id) if p.id == r.winner_id)

    async def _retry_pending(
        self, member: Member, r: RoundRow, steps: Steps | None
    ) -> ChapterSaved | WriteStalled:
        winner = await self._winner(r)
        number = len(await self.repo.book.chapters(member.chat_id)) + 1
        if not self.chapters.model_writes:
            return WriteStalled("no_model_retry", number, winner.title)
        self.chapters.ensure_idle(member.chat_id)
        if not await self.repo.rounds.advance(r.id, Event.WRITE):
            raise Refused("busy_writing")
        return await self._write(r, winner, number, steps, None)

    async def _resume_write(self, round_id: str) -> None:
        r = await self.repo.rounds.get_round(round_id)
        if r is None or r.phase != Phase.PENDING or not self.chapters.model_writes:
            return
        if not await self.repo.rounds.advance(r.id, Event.WRITE):
            return
        winner = await self._winner(r)
        number = len(await self.repo.book.chapters(r.chat_id)) + 1
        await self._write(r, winner, number, None, self._target(r), resumed=True)

    @staticmethod
    def _target(r: RoundRow) -> Member:
        """The round's chat, as its opener (announcements speak the round's language)."""
        return Member(
            chat_id=r.chat_id,
            user_id=r.opener_id,
            user_name=r.opener_name,
            channel_id=r.channel_id,
            lang=lang_of(r),
            via=r.via,
        )
