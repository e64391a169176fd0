"""The writers' room behind one method: `NovelService.handle(actor, request)` → `Reply`.

The facade only routes: permissions, then the round service (open, propose, vote, close), the
chapter service (write, submit, revise, roll back, delete, show, export) or the world service
(blueprint), then the presenter (every Reply). It also owns the lifecycle: the deadline
scheduler, the ballot editor, reconciling plot memory and resuming open rounds on start-up.

`App` opens the `NovelRepo` and builds the `PlotMemory` and passes them in; `announce` posts an
unsolicited reply to a chat, `edit_ballot` edits a posted ballot (both go through the transport
registered for the chat's platform).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from types import TracebackType

from bot.actor import Actor
from bot.reply import Progress, Reply
from novel import api
from novel.ballot import BallotEditor, BallotPost, EditBallot
from novel.blueprint import BlueprintError, default_blueprint
from novel.cast import StoryService
from novel.chapters import ChapterService
from novel.memory import PlotMemory, ReconcileReport
from novel.phase import Event, Phase
from novel.presenter import Presenter, join
from novel.repo import NovelRepo, ProposalRow, RoundRow
from novel.results import Abandoned, Refused, VotesClosed, WriteStalled
from novel.rounds import RoundService
from novel.schedule import Deadlines
from novel.settings import NovelSettings
from novel.world import WorldService
from retrieval.clock import SYSTEM_CLOCK, Clock
from retrieval.i18n import Lang
from retrieval.ports import LLM

log = logging.getLogger(__name__)

Announce = Callable[[Actor, Reply], Awaitable[None]]

# Requests only an admin may make (the router checks first; this guards direct callers).
_ADMIN_ONLY = (
    api.CloseRound,
    api.ReviseChapter,
    api.RollbackChapter,
    api.DeleteChapter,
    api.BlueprintSet,
    api.BlueprintEdit,
    api.BlueprintAccept,
    api.BlueprintReject,
)


def _lang(value: str) -> Lang:
    return "en" if value == "en" else "zh"


class NovelService:
    def __init__(
        self,
        repo: NovelRepo,
        memory: PlotMemory,
        llm: LLM | None,
        settings: NovelSettings,
        announce: Announce,
        clock: Clock = SYSTEM_CLOCK,
        *,
        edit_ballot: EditBallot | None = None,
    ) -> None:
        self.repo = repo
        self.memory = memory
        self.llm = llm
        self.settings = settings
        self._announce = announce
        self._clock = clock.now
        self.deadlines = Deadlines(clock)
        self.present = Presenter(settings)
        self.rounds = RoundService(
            repo,
            settings,
            clock.now,
            self._schedule,
            self._cancel,
            model_writes=llm is not None,
        )
        self.chapters = ChapterService(repo, memory, llm, settings, clock.now)
        self.world = WorldService(repo, settings, clock.now)
        self.story = StoryService(repo, llm, self.chapters.blueprint)  # /novel characters …
        self.ballots: BallotEditor | None = (
            BallotEditor(
                self._render_ballot,
                edit_ballot,
                settings.ballot_edit_interval_s,
                now=clock.monotonic,
                sleep=clock.sleep,
            )
            if edit_ballot is not None
            else None
        )
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

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.deadlines.close()
        if self.ballots is not None:
            await self.ballots.close()

    async def reconcile(self) -> dict[str, ReconcileReport]:
        """Re-apply the SQLite truth to the vector store for every novel."""
        for chat_id in await self.repo.chats():
            report = await self.memory.reconcile(chat_id)
            self.last_reconcile[chat_id] = report
            if report.removed or report.reindexed or report.activated or report.renumbered:
                log.warning("novel %s: plot memory reconciled: %s", chat_id, report)
        return self.last_reconcile

    async def _resume_rounds(self) -> None:
        for r in await self.repo.open_rounds():
            if r.phase == Phase.PROPOSAL:
                self._schedule(r.id, r.proposal_deadline)
            elif r.phase == Phase.VOTING and r.vote_deadline is not None:
                self._schedule(r.id, r.vote_deadline)
            elif r.phase == Phase.WRITING:
                # The process stopped mid-write: nothing was saved (one transaction saves the
                # chapter and finishes the round). Write it again at once when a model can.
                await self.repo.advance(r.id, Event.STALL)
                if self.llm is not None:
                    self.deadlines.at(f"resume:{r.id}", self._clock(), self._resumer(r.id))

    def _schedule(self, round_id: str, when: datetime) -> None:
        self.deadlines.at(f"round:{round_id}", when, self._closer(round_id))

    def _cancel(self, round_id: str) -> None:
        self.deadlines.cancel(f"round:{round_id}")

    def _closer(self, round_id: str) -> Callable[[], Awaitable[None]]:
        return lambda: self._on_deadline(round_id)

    def _resumer(self, round_id: str) -> Callable[[], Awaitable[None]]:
        return lambda: self._resume_write(round_id)

    # ---- entry point -------------------------------------------------------------------------

    @staticmethod
    def is_admin(actor: Actor) -> bool:
        """The router decided (`bot.admin.AdminPolicy`, NOVEL_ADMIN_ROLE included); the service
        only refuses what a caller that skipped the router must not do."""
        return actor.is_admin

    async def handle(
        self, actor: Actor, request: api.NovelRequest, progress: Progress | None = None
    ) -> Reply:
        admin = self.is_admin(actor)
        try:
            changes_ballot = isinstance(request, api.BallotSettings) and (
                request.style is not None or request.voters is not None
            )
            if (isinstance(request, _ADMIN_ONLY) or changes_ballot) and not admin:
                raise Refused("admins_only")
            if isinstance(request, api.PollAnswer):  # no chat id: the poll knows its round
                return await self._poll_answer(actor, request)
            await self.repo.ensure_novel(
                actor.chat_id, default_blueprint().to_json(), self._clock()
            )
            return await self._dispatch(actor, request, progress, admin)
        except Refused as refused:
            return self.present.refusal(actor.lang, refused, admin=admin)
        except BlueprintError as err:
            return self.present.blueprint_error(actor.lang, err)

    async def _dispatch(
        self, actor: Actor, request: api.NovelRequest, progress: Progress | None, admin: bool
    ) -> Reply:
        lang = actor.lang
        show = self.present.reply
        match request:
            case api.NextRound():
                return await self._next_round(actor, progress, admin)
            case api.Propose():
                saved = await self.rounds.propose(
                    actor, request.title, request.summary, request.notes
                )
                return show(saved, lang)
            case api.Vote():
                source = "button" if request.round_id else "command"
                cast = await self.rounds.vote(actor, request.option, request.round_id, source)
                if self.ballots is not None:
                    self.ballots.touch(cast.round_id)
                return show(cast, lang)
            case api.BallotSettings():
                saved_settings = await self.rounds.set_ballot_settings(
                    actor, request.style, request.voters
                )
                return show(saved_settings, lang)
            case api.SubmitChapter():
                return await self._submit(actor, request.text)
            case api.CloseRound():
                return await self._close(actor, progress, admin)
            case api.ShowChapter():
                return show(await self.chapters.show(actor, request.chapter), lang)
            case api.ReviseChapter():
                return await self._revise(actor, request, progress)
            case api.ChapterHistory():
                return show(await self.chapters.history(actor, request.chapter), lang)
            case api.RollbackChapter():
                rolled = await self.chapters.rollback(actor, request.chapter, request.version)
                return show(rolled, lang)
            case api.DeleteChapter():
                deleted = await self.chapters.delete(actor, request.chapter, request.confirm)
                return show(deleted, lang)
            case api.BlueprintShow():
                return show(await self.world.show(actor), lang)
            case api.BlueprintSet():
                return show(await self.world.upload(actor, request.data, "upload"), lang)
            case api.BlueprintEdit():
                edited = await self.world.edit(
                    actor, request.field, request.value, f"edit:{request.field}"
                )
                return show(edited, lang)
            case api.BlueprintAccept():
                return show(await self.world.decide(actor, request.ids, True), lang)
            case api.BlueprintReject():
                return show(await self.world.decide(actor, request.ids, False), lang)
            case api.BlueprintHistory():
                return show(await self.world.history(actor), lang)
            case api.Export():
                return show(await self.chapters.export(actor, request.fmt), lang)
        raise Refused("unknown_request")

    # ---- rounds ------------------------------------------------------------------------------

    async def _next_round(self, actor: Actor, progress: Progress | None, admin: bool) -> Reply:
        if self.settings.openers == "admins" and not admin:
            raise Refused("admins_open")
        existing = await self.repo.open_round(actor.chat_id)
        if existing is not None and existing.phase == Phase.PENDING:
            return await self._retry_pending(actor, existing, progress, admin)
        if existing is not None:
            raise Refused("round_open", phase=existing.phase.value)
        return self.present.reply(await self.rounds.open(actor), actor.lang, admin=admin)

    async def ballot_posted(self, post: BallotPost) -> None:
        """A transport posted a round's ballot: remember where (its message is edited with the
        running count; a native poll's answers find their round by the poll's id), and show
        any votes cast before it was reported. A stale ballot (another chat's round, or a round
        that no longer exists) is ignored."""
        if not await self.rounds.record_ballot(post):
            log.warning("ballot of round %s posted in chat %s ignored", post.round_id, post.chat_id)
            return
        if self.ballots is None:
            return
        found = await self._render_ballot(post.round_id)
        if found is not None and not await self.repo.votes(post.round_id):
            self.ballots.shown(post.round_id, found[1])  # as just posted
        else:
            self.ballots.touch(post.round_id)  # votes came first: show them

    async def _poll_answer(self, actor: Actor, answer: api.PollAnswer) -> Reply:
        round_id, result = await self.rounds.poll_answer(actor, answer.poll_id, answer.options)
        if self.ballots is not None:
            self.ballots.touch(round_id)
        return self.present.reply(result, actor.lang)

    async def _render_ballot(self, round_id: str) -> tuple[BallotPost, Reply] | None:
        post = await self.repo.ballot(round_id)
        view = await self.rounds.ballot_view(round_id)
        if post is None or view is None:
            return None
        return post, self.present.ballot(view, _lang(view.round.lang))

    async def _close(self, actor: Actor, progress: Progress | None, admin: bool) -> Reply:
        r = await self.repo.open_round(actor.chat_id)
        if r is None:
            raise Refused("no_round")
        lang = actor.lang
        if r.phase == Phase.PROPOSAL:
            ballot = await self.rounds.close_proposals(r)
            if ballot is None:
                raise Refused("proposals_closed")
            return self.present.reply(ballot, _lang(r.lang))
        if r.phase == Phase.VOTING:
            closed = await self.rounds.close_votes(r)
            if closed is None:
                raise Refused("voting_closed")
            if self.ballots is not None:
                self.ballots.touch(r.id)  # the ballot shows the final count, without buttons
            result = self.present.reply(closed, lang, admin=admin)
            if not closed.model_writes:
                await self.repo.advance(r.id, Event.STALL)
                return result
            if progress is not None:
                await progress(self.present.writing(lang, closed.number))
            written = await self.chapters.write_round(
                r, self._winner_of(closed), progress, wait=False
            )
            return join(result, self.present.reply(written, lang, admin=admin))
        if r.phase == Phase.PENDING and await self.rounds.abandon(r):
            return self.present.reply(Abandoned(), lang)
        raise Refused("busy_writing")

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
        return next(p for p in await self.repo.proposals(r.id) if p.id == r.winner_id)

    async def _on_deadline(self, round_id: str) -> None:
        r = await self.repo.get_round(round_id)
        if r is None:
            return
        target = self._target(r)
        lang = target.lang
        if r.phase == Phase.PROPOSAL:
            ballot = await self.rounds.close_proposals(r)
            if ballot is not None:
                await self._announce(target, self.present.reply(ballot, lang))
        elif r.phase == Phase.VOTING:
            closed = await self.rounds.close_votes(r)
            if closed is None:
                return
            if self.ballots is not None:
                self.ballots.touch(r.id)
            await self._announce(target, self.present.reply(closed, lang))
            if not closed.model_writes:
                await self.repo.advance(r.id, Event.STALL)
                return
            await self._announce(target, self.present.writing_notice(lang, closed.number))
            written = await self.chapters.write_round(r, self._winner_of(closed), None, wait=True)
            await self._announce(target, self.present.reply(written, lang))

    async def _retry_pending(
        self, actor: Actor, r: RoundRow, progress: Progress | None, admin: bool
    ) -> Reply:
        winner = await self._winner(r)
        number = len(await self.repo.chapters(actor.chat_id)) + 1
        if self.llm is None:
            stalled = WriteStalled("no_model_retry", number, winner.title)
            return self.present.reply(stalled, actor.lang, admin=admin)
        self.chapters.ensure_idle(actor.chat_id)
        if not await self.repo.advance(r.id, Event.WRITE):
            raise Refused("busy_writing")
        if progress is not None:
            await progress(self.present.writing(actor.lang, number))
        written = await self.chapters.write_round(r, winner, progress, wait=False)
        return self.present.reply(written, actor.lang, admin=admin)

    async def _resume_write(self, round_id: str) -> None:
        r = await self.repo.get_round(round_id)
        if r is None or r.phase != Phase.PENDING or self.llm is None:
            return
        if not await self.repo.advance(r.id, Event.WRITE):
            return
        target = self._target(r)
        winner = await self._winner(r)
        number = len(await self.repo.chapters(r.chat_id)) + 1
        await self._announce(target, self.present.writing_notice(target.lang, number, resumed=True))
        written = await self.chapters.write_round(r, winner, None, wait=True)
        await self._announce(target, self.present.reply(written, target.lang))

    async def _submit(self, actor: Actor, text: str) -> Reply:
        r = await self.repo.open_round(actor.chat_id)
        if r is None:
            raise Refused("submit_no_round")
        if r.phase in (Phase.PROPOSAL, Phase.VOTING):
            raise Refused("submit_not_yet")
        if r.phase != Phase.PENDING:
            raise Refused("busy_writing")
        winner = await self._winner(r)
        if not self.is_admin(actor) and actor.user_id != winner.user_id:
            raise Refused("submit_not_yours", who=winner.user_name or winner.user_id)
        saved = await self.chapters.submit(actor, r, winner, text)
        return self.present.reply(saved, actor.lang)

    async def _revise(
        self, actor: Actor, request: api.ReviseChapter, progress: Progress | None
    ) -> Reply:
        async def started() -> None:
            if progress is not None:
                await progress(self.present.revising(actor.lang, request.chapter))

        saved = await self.chapters.revise(
            actor, request.chapter, request.instructions, request.text, progress, started
        )
        return self.present.reply(saved, actor.lang)

    @staticmethod
    def _target(r: RoundRow) -> Actor:
        return Actor(
            platform=r.platform,
            chat_id=r.chat_id,
            user_id=r.opener_id,
            user_name=r.opener_name,
            channel_id=r.channel_id,
            lang=_lang(r.lang),
        )
