"""The writers' room behind one method: `NovelService.handle(member, request)` → a typed result.

The facade only routes: the round service (open, propose, vote, close), the chapter service
(write, submit, revise, roll back, delete, show, export) or the world service (blueprint). It
knows nothing of chat: `bot.presenters.novel` words and draws what it returns, and refusals
(`Refused`, `BlueprintError`) propagate to it. It also owns the lifecycle: the deadline
scheduler, the ballot board, reconciling plot memory and resuming open rounds on start-up.

`App` opens the `NovelRepo`, builds the `PlotMemory` and the `ChapterService` (the one part that
holds the model) and passes them in; `announce` tells the round's chat what happened on its own
(a deadline, a resumed write); `ballots` builds the board that keeps posted ballots current from
the service's `ballot` lookup. The read-only `StoryService` (/novel characters, recap, map) is
not routed here: `App` builds it beside this service and registers its commands directly.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import assert_never

from novel import api
from novel.ballot import BallotBoard, BallotPost, NoBallotEdits
from novel.blueprint import default_blueprint
from novel.chapters import ChapterService
from novel.member import Member
from novel.memory import PlotMemory, ReconcileReport
from novel.phase import Event, Phase
from novel.repo import NovelRepo, ProposalRow, RoundRow
from novel.results import (
    Abandoned,
    BallotView,
    ChapterSaved,
    ClosedAndWritten,
    Progress,
    Refused,
    Result,
    Revising,
    VotesClosed,
    WriteStalled,
    Writing,
)
from novel.rounds import RoundService
from novel.schedule import Deadlines
from novel.settings import NovelSettings
from novel.world import WorldService
from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.i18n import Lang
from retrieval.lifecycle import Closing
from retrieval.schedule import Scheduler

log = logging.getLogger(__name__)

# Said to a round's chat unasked: what the deadline or a resumed write produced.
Announcement = Result | Writing
Announce = Callable[[Member, Announcement], Awaitable[None]]
# round id → where its ballot was posted and how it stands now
FindBallot = Callable[[str], Awaitable[tuple[BallotPost, BallotView] | None]]


def _lang(value: str) -> Lang:
    return "en" if value == "en" else "zh"


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
        ballots: Callable[[FindBallot], BallotBoard] | None = None,
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
            repo.chat_settings,
            repo.book,
            settings,
            clock.now,
            self._schedule,
            self._cancel,
            model_writes=chapters.model_writes,
        )
        self.chapters = chapters
        self.world = WorldService(repo.world, settings, clock.now)
        self.ballots: BallotBoard = ballots(self.ballot) if ballots is not None else NoBallotEdits()
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
        """Stop the round deadlines and the ballot editor (the stores belong to the caller)."""
        await self.deadlines.close()
        await self.ballots.close()

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

    # ---- entry point -------------------------------------------------------------------------

    async def handle(
        self, member: Member, request: api.NovelRequest, progress: Progress | None = None
    ) -> Result:
        """The request's result; `Refused` / `BlueprintError` when it cannot be done."""
        if api.needs_admin(request) and not member.is_admin:
            raise Refused("admins_only")  # the router checked first; this guards direct callers
        if isinstance(request, api.PollAnswer):  # no chat id: the poll knows its round
            return await self._poll_answer(member, request)
        await self.repo.world.ensure_novel(
            member.chat_id, default_blueprint().to_json(), self._clock()
        )
        return await self._dispatch(member, request, progress)

    async def _dispatch(
        self, member: Member, request: api.NovelRequest, progress: Progress | None
    ) -> Result:
        match request:
            case (
                api.NextRound()
                | api.Propose()
                | api.Vote()
                | api.PollAnswer()
                | api.BallotSettings()
                | api.CloseRound()
            ):
                return await self._round_request(member, request, progress)
            case (
                api.SubmitChapter()
                | api.ShowChapter()
                | api.ReviseChapter()
                | api.ChapterHistory()
                | api.RollbackChapter()
                | api.DeleteChapter()
                | api.Export()
            ):
                return await self._chapter_request(member, request, progress)
            case (
                api.BlueprintShow()
                | api.BlueprintSet()
                | api.BlueprintEdit()
                | api.BlueprintAccept()
                | api.BlueprintReject()
                | api.BlueprintHistory()
            ):
                return await self._world_request(member, request)
            case _:
                assert_never(request)

    async def _round_request(
        self, member: Member, request: api.RoundRequest, progress: Progress | None
    ) -> Result:
        match request:
            case api.NextRound():
                return await self._next_round(member, progress)
            case api.Propose():
                return await self.rounds.propose(member, request)
            case api.Vote():
                source = "button" if request.round_id else "command"
                cast = await self.rounds.vote(member, request.option, request.round_id, source)
                self.ballots.touch(cast.round_id)
                return cast
            case api.PollAnswer():
                return await self._poll_answer(member, request)
            case api.BallotSettings():
                return await self.rounds.set_ballot_settings(member, request.style, request.voters)
            case api.CloseRound():
                return await self._close(member, progress)
            case _:
                assert_never(request)

    async def _chapter_request(
        self, member: Member, request: api.ChapterRequest, progress: Progress | None
    ) -> Result:
        match request:
            case api.SubmitChapter():
                return await self._submit(member, request.text)
            case api.ShowChapter():
                return await self.chapters.show(member, request.chapter)
            case api.ReviseChapter():
                return await self._revise(member, request, progress)
            case api.ChapterHistory():
                return await self.chapters.history(member, request.chapter)
            case api.RollbackChapter():
                return await self.chapters.rollback(member, request.chapter, request.version)
            case api.DeleteChapter():
                return await self.chapters.delete(member, request.chapter, request.confirm)
            case api.Export():
                return await self.chapters.export(member, request.fmt)
            case _:
                assert_never(request)

    async def _world_request(self, member: Member, request: api.WorldRequest) -> Result:
        match request:
            case api.BlueprintShow():
                return await self.world.show(member)
            case api.BlueprintSet():
                return await self.world.upload(member, request.data, "upload")
            case api.BlueprintEdit():
                return await self.world.edit(
                    member, request.field, request.value, f"edit:{request.field}"
                )
            case api.BlueprintAccept():
                return await self.world.decide(member, request.ids, True)
            case api.BlueprintReject():
                return await self.world.decide(member, request.ids, False)
            case api.BlueprintHistory():
                return await self.world.history(member)
            case _:
                assert_never(request)

    # ---- rounds ------------------------------------------------------------------------------

    async def _next_round(self, member: Member, progress: Progress | None) -> Result:
        if self.settings.openers == "admins" and not member.is_admin:
            raise Refused("admins_open")
        existing = await self.repo.rounds.open_round(member.chat_id)
        if existing is not None and existing.phase == Phase.PENDING:
            return await self._retry_pending(member, existing, progress)
        if existing is not None:
            raise Refused("round_open", phase=existing.phase.value)
        return await self.rounds.open(member)

    async def ballot_posted(self, post: BallotPost) -> None:
        """A transport posted a round's ballot: remember where (its message is edited with the
        running count; a native poll's answers find their round by the poll's id), and show
        any votes cast before it was reported. A stale ballot (another chat's round, or a round
        that no longer exists) is ignored."""
        if not await self.rounds.record_ballot(post):
            log.warning("ballot of round %s posted in chat %s ignored", post.round_id, post.chat_id)
            return
        counted = bool(await self.repo.rounds.votes(post.round_id))
        await self.ballots.posted(post.round_id, counted=counted)

    async def _poll_answer(self, member: Member, answer: api.PollAnswer) -> Result:
        round_id, result = await self.rounds.poll_answer(member, answer.poll_id, answer.options)
        self.ballots.touch(round_id)
        return result

    async def ballot(self, round_id: str) -> tuple[BallotPost, BallotView] | None:
        """Where the round's ballot was posted and how it stands now (None: not posted)."""
        post = await self.repo.rounds.ballot(round_id)
        view = await self.rounds.ballot_view(round_id)
        if post is None or view is None:
            return None
        return post, view

    async def _close(self, member: Member, progress: Progress | None) -> Result:
        r = await self.repo.rounds.open_round(member.chat_id)
        if r is None:
            raise Refused("no_round")
        if r.phase == Phase.PROPOSAL:
            ballot = await self.rounds.close_proposals(r)
            if ballot is None:
                raise Refused("proposals_closed")
            return ballot
        if r.phase == Phase.VOTING:
            finished = await self._finish_voting(r, progress, said=None)
            if finished is None:
                raise Refused("voting_closed")
            return finished
        if r.phase == Phase.PENDING and await self.rounds.abandon(r):
            return Abandoned()
        raise Refused("busy_writing")

    async def _on_deadline(self, round_id: str) -> None:
        r = await self.repo.rounds.get_round(round_id)
        if r is None:
            return
        target = self._target(r)
        if r.phase == Phase.PROPOSAL:
            ballot = await self.rounds.close_proposals(r)
            if ballot is not None:
                await self._announce(target, ballot)
        elif r.phase == Phase.VOTING:
            await self._finish_voting(r, None, said=target)

    async def _finish_voting(
        self, r: RoundRow, progress: Progress | None, *, said: Member | None
    ) -> Result | None:
        """Voting → the winner is written (or waits for the group's text). One path for the
        deadline (`said`: each step is announced to the round's chat as it happens) and for
        `/chapter close` (the caller gets the result; progress streams to it). None: another
        closer won."""
        closed = await self.rounds.close_votes(r)
        if closed is None:
            return None
        self.ballots.touch(r.id)  # the ballot shows the final count, without buttons
        if said is not None:
            await self._announce(said, closed)
        if not closed.model_writes:
            await self.repo.rounds.advance(r.id, Event.STALL)
            return closed
        written = await self._write(r, self._winner_of(closed), closed.number, progress, said)
        if said is not None:
            return written
        return ClosedAndWritten(closed, written)

    async def _write(
        self,
        r: RoundRow,
        winner: ProposalRow,
        number: int,
        progress: Progress | None,
        said: Member | None,
        *,
        resumed: bool = False,
    ) -> ChapterSaved | WriteStalled:
        """Tell the chat chapter `number` is being written, write it, announce it when no
        caller waits for it."""
        if said is not None:
            await self._announce(said, Writing(number, resumed))
        elif progress is not None:
            await progress(Writing(number, resumed))
        written = await self.chapters.write_round(r, winner, progress, wait=said is not None)
        if said is not None:
            await self._announce(said, written)
        return written

    @staticmethod
    def _winner_of(closed: VotesClosed) -> ProposalRow:
        assert closed.outcome.winner is not None
        return closed.outcome.winner

    async def _winner(self, r: RoundRow) -> ProposalRow:
        """The round's winning proposal (decided again if a crash left none recorded)."""
        if r.winner_id is None:
            outcome = await self.rounds.decide(r.id)
            assert outcome.winner is not None
            return outcome.winner
        return next(p for p in await self.repo.rounds.proposals(r.id) if p.id == r.winner_id)

    async def _retry_pending(
        self, member: Member, r: RoundRow, progress: Progress | None
    ) -> Result:
        winner = await self._winner(r)
        number = len(await self.repo.book.chapters(member.chat_id)) + 1
        if not self.chapters.model_writes:
            return WriteStalled("no_model_retry", number, winner.title)
        self.chapters.ensure_idle(member.chat_id)
        if not await self.repo.rounds.advance(r.id, Event.WRITE):
            raise Refused("busy_writing")
        return await self._write(r, winner, number, progress, None)

    async def _resume_write(self, round_id: str) -> None:
        r = await self.repo.rounds.get_round(round_id)
        if r is None or r.phase != Phase.PENDING or not self.chapters.model_writes:
            return
        if not await self.repo.rounds.advance(r.id, Event.WRITE):
            return
        winner = await self._winner(r)
        number = len(await self.repo.book.chapters(r.chat_id)) + 1
        await self._write(r, winner, number, None, self._target(r), resumed=True)

    async def _submit(self, member: Member, text: str) -> Result:
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

    async def _revise(
        self, member: Member, request: api.ReviseChapter, progress: Progress | None
    ) -> Result:
        async def started() -> None:
            if progress is not None:
                await progress(Revising(request.chapter))

        return await self.chapters.revise(
            member, request.chapter, request.instructions, request.text, progress, started
        )

    @staticmethod
    def _target(r: RoundRow) -> Member:
        """The round's chat, as its opener (announcements speak the round's language)."""
        return Member(
            platform=r.platform,
            chat_id=r.chat_id,
            user_id=r.opener_id,
            user_name=r.opener_name,
            channel_id=r.channel_id,
            lang=_lang(r.lang),
        )
