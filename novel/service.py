"""The writers' room: rounds (propose → vote → write), chapters with versions, blueprint, export.

`NovelService` is an async context manager (opens SQLite, starts the deadline scheduler,
reconciles plot memory with SQLite, re-schedules open rounds) and implements `novel.api.Novels`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType

from novel import api
from novel.blueprint import (
    Blueprint,
    BlueprintError,
    default_blueprint,
    edit,
    parse_upload,
    render_summary,
    validate,
)
from novel.export import ExportChapter, to_epub, to_markdown
from novel.memory import EncodeSparse, PlotMemory, ReconcileReport
from novel.messages import T
from novel.repo import NovelRepo, RoundRow
from novel.rounds import decide, option_label, tally_lines
from novel.schedule import Clock, Deadlines, utcnow
from novel.settings import NovelSettings
from novel.splitter import UnitSplitter
from novel.writer import (
    BRIDGE_CHARS,
    Context,
    Goal,
    PriorChapter,
    generate,
    memory_query,
    pick_summaries,
    summarise,
    top_k,
    within_budget,
)
from retrieval.i18n import Lang
from retrieval.ports import LLM, Embedder, LLMError, VectorStore
from retrieval.reply import Attachment, Block, Poll, Progress, Reply
from retrieval.requests import Actor

log = logging.getLogger(__name__)

Announce = Callable[[Actor, Reply], Awaitable[None]]


class _Refused(Exception):
    """A user-facing refusal: the catalog key and its fields."""

    def __init__(self, key: str, **fields: object) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields


def _lang(value: str) -> Lang:
    return "en" if value == "en" else "zh"


class NovelService:
    def __init__(
        self,
        db_path: Path,
        store: VectorStore,
        embedder: Embedder,
        encode_sparse: EncodeSparse,
        llm: LLM | None,
        settings: NovelSettings,
        announce: Announce,
        clock: Clock = utcnow,
        *,
        encode_query_sparse: EncodeSparse | None = None,
        units: UnitSplitter | None = None,
    ) -> None:
        self._db_path = Path(db_path)
        self._store = store
        self._embedder = embedder
        self._encode_sparse = encode_sparse
        self._encode_query_sparse = encode_query_sparse
        self._units = units
        self.llm = llm
        self.settings = settings
        self._announce = announce
        self._clock = clock
        self._repo: NovelRepo | None = None
        self._memory: PlotMemory | None = None
        self.deadlines = Deadlines(clock)
        self._locks: dict[str, asyncio.Lock] = {}
        self.last_reconcile: dict[str, ReconcileReport] = {}

    # ---- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> NovelService:
        self._repo = await NovelRepo.open(self._db_path)
        self._memory = PlotMemory(
            self._repo,
            self._store,
            self._embedder,
            self._encode_sparse,
            encode_query_sparse=self._encode_query_sparse,
            units=self._units,
        )
        try:
            self.deadlines.start()
            await self.reconcile()
            await self._resume_rounds()
        except BaseException:
            await self.deadlines.close()
            await self._repo.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.deadlines.close()
        if self._repo is not None:
            await self._repo.close()
            self._repo = None

    @property
    def repo(self) -> NovelRepo:
        assert self._repo is not None, "use `async with NovelService(...)`"
        return self._repo

    @property
    def memory(self) -> PlotMemory:
        assert self._memory is not None, "use `async with NovelService(...)`"
        return self._memory

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
            if r.phase == "proposal":
                self._schedule(r.id, r.proposal_deadline)
            elif r.phase == "voting" and r.vote_deadline is not None:
                self._schedule(r.id, r.vote_deadline)
            elif r.phase == "writing":  # the process died while writing: offer a retry
                await self.repo.move_round(r.id, ("writing",), "pending")

    def _schedule(self, round_id: str, when: datetime) -> None:
        self.deadlines.at(f"round:{round_id}", when, lambda: self._on_deadline(round_id))

    # ---- entry point -------------------------------------------------------------------------

    async def handle(
        self, actor: Actor, request: api.NovelRequest, progress: Progress | None = None
    ) -> Reply:
        try:
            await self.repo.ensure_novel(
                actor.chat_id, default_blueprint().to_json(), self._clock()
            )
            return await self._dispatch(actor, request, progress)
        except _Refused as refusal:
            return Reply.error(T(actor.lang, refusal.key, **refusal.fields), lang=actor.lang)
        except BlueprintError as err:
            return Reply.error(err.text(actor.lang), lang=actor.lang)

    async def _dispatch(
        self, actor: Actor, request: api.NovelRequest, progress: Progress | None
    ) -> Reply:
        match request:
            case api.NextRound():
                return await self._next_round(actor, progress)
            case api.Propose():
                return await self._propose(actor, request)
            case api.Vote():
                return await self._vote(actor, request)
            case api.CloseRound():
                return await self._close(actor, progress)
            case api.ShowChapter():
                return await self._show(actor, request)
            case api.ReviseChapter():
                return await self._revise(actor, request, progress)
            case api.ChapterHistory():
                return await self._history(actor, request)
            case api.RollbackChapter():
                return await self._rollback(actor, request)
            case api.DeleteChapter():
                return await self._delete(actor, request)
            case api.BlueprintShow():
                return await self._blueprint_show(actor)
            case api.BlueprintSet():
                return await self._blueprint_set(actor, request)
            case api.BlueprintEdit():
                return await self._blueprint_edit(actor, request)
            case api.Export():
                return await self._export(actor, request)
        raise _Refused("unknown_request")

    # ---- permissions and helpers --------------------------------------------------------------

    def is_admin(self, actor: Actor) -> bool:
        role = self.settings.admin_role
        return actor.is_admin or bool(role and role in actor.roles)

    def _require_admin(self, actor: Actor) -> None:
        if not self.is_admin(actor):
            raise _Refused("admins_only")

    def _lock(self, chat_id: str) -> asyncio.Lock:
        return self._locks.setdefault(chat_id, asyncio.Lock())

    def _busy(self, chat_id: str) -> None:
        if self._lock(chat_id).locked():
            raise _Refused("busy_writing")

    async def _blueprint(self, chat_id: str) -> Blueprint:
        raw = await self.repo.blueprint_json(chat_id)
        return validate(json.loads(raw)) if raw else default_blueprint()

    async def _chapter(self, chat_id: str, number: int | None) -> tuple[int, str, int]:
        chapters = await self.repo.chapters(chat_id)
        if not chapters:
            raise _Refused("no_chapters")
        if number is None:
            c = chapters[-1]
        else:
            found = [c for c in chapters if c.chapter_no == number]
            if not found:
                raise _Refused("no_such_chapter", n=number, last=chapters[-1].chapter_no)
            c = found[0]
        return c.chapter_no, c.id, c.current_version

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

    def _minutes_left(self, when: datetime) -> int:
        return max(0, round((when - self._clock()).total_seconds() / 60))

    # ---- rounds --------------------------------------------------------------------------------

    async def _next_round(self, actor: Actor, progress: Progress | None) -> Reply:
        if self.settings.openers == "admins" and not self.is_admin(actor):
            raise _Refused("admins_open")
        existing = await self.repo.open_round(actor.chat_id)
        if existing is not None and existing.phase == "pending":
            return await self._retry_pending(actor, existing, progress)
        if existing is not None:
            raise _Refused("round_open", phase=T(actor.lang, f"phase_{existing.phase}"))
        now = self._clock()
        deadline = now + timedelta(minutes=self.settings.proposal_minutes)
        round_id = uuid.uuid4().hex[:12]
        created = await self.repo.insert_round(
            round_id=round_id,
            chat_id=actor.chat_id,
            platform=actor.platform,
            channel_id=actor.channel_id,
            opener_id=actor.user_id,
            opener_name=actor.user_name,
            lang=actor.lang,
            now=now,
            proposal_deadline=deadline,
        )
        if not created:
            raise _Refused("round_open", phase=T(actor.lang, "phase_proposal"))
        self._schedule(round_id, deadline)
        number = len(await self.repo.chapters(actor.chat_id)) + 1
        return Reply.text(
            T(actor.lang, "round_opened", n=number, minutes=self._minutes_left(deadline)),
            T(actor.lang, "how_to_propose"),
            lang=actor.lang,
        )

    async def _propose(self, actor: Actor, req: api.Propose) -> Reply:
        title = req.title.strip()
        if not title:
            raise _Refused("propose_title_missing")
        if len(title) > 100 or len(req.summary) > 1000 or len(req.notes) > 1000:
            raise _Refused("propose_too_long")
        r = await self.repo.open_round(actor.chat_id)
        if r is None:
            raise _Refused("no_round")
        if r.phase != "proposal" or self._clock() >= r.proposal_deadline:
            raise _Refused("proposals_closed")
        try:
            new = await self.repo.upsert_proposal(
                r.id,
                actor.user_id,
                actor.user_name,
                title,
                req.summary.strip(),
                req.notes.strip(),
                self._clock(),
            )
        except LookupError:
            raise _Refused("proposals_closed") from None
        count = len(await self.repo.proposals(r.id))
        key = "proposal_added" if new else "proposal_updated"
        return Reply.text(
            T(actor.lang, key, title=title),
            T(
                actor.lang,
                "proposal_count",
                n=count,
                minutes=self._minutes_left(r.proposal_deadline),
            ),
            lang=actor.lang,
        )

    async def _vote(self, actor: Actor, req: api.Vote) -> Reply:
        r = await self.repo.open_round(actor.chat_id)
        if req.round_id and (r is None or r.id != req.round_id):
            raise _Refused("stale_ballot")
        if r is None:
            raise _Refused("no_round")
        if r.phase == "proposal":
            raise _Refused("not_voting_yet")
        if r.phase != "voting" or (r.vote_deadline and self._clock() >= r.vote_deadline):
            raise _Refused("voting_closed")
        proposals = await self.repo.proposals(r.id)
        if not 1 <= req.option <= len(proposals):
            raise _Refused("bad_option", n=len(proposals))
        chosen = proposals[req.option - 1]
        try:
            before = await self.repo.vote(r.id, actor.user_id, chosen.id, self._clock())
        except LookupError:
            raise _Refused("voting_closed") from None
        outcome = decide(proposals, await self.repo.tally(r.id))
        if before is None:
            head = T(actor.lang, "voted", n=req.option, title=chosen.title)
        elif before == chosen.id:
            head = T(actor.lang, "vote_same", n=req.option, title=chosen.title)
        else:
            head = T(actor.lang, "vote_changed", n=req.option, title=chosen.title)
        return Reply.text(head, "\n".join(tally_lines(outcome.counts, actor.lang)), lang=actor.lang)

    async def _close(self, actor: Actor, progress: Progress | None) -> Reply:
        self._require_admin(actor)
        r = await self.repo.open_round(actor.chat_id)
        if r is None:
            raise _Refused("no_round")
        if r.phase == "proposal":
            reply = await self._close_proposals(r)
            return (
                reply
                if reply is not None
                else Reply.error(T(actor.lang, "proposals_closed"), lang=actor.lang)
            )
        if r.phase == "voting":
            result = await self._close_votes(r)
            if result is None:
                raise _Refused("voting_closed")
            number = len(await self.repo.chapters(actor.chat_id)) + 1
            if progress is not None:
                await progress(T(actor.lang, "writing_progress", n=number))
            chapter = await self._write_round(r.id, actor.lang, progress, wait=False)
            return Reply(
                blocks=(*result.blocks, *chapter.blocks),
                attachments=chapter.attachments,
                is_error=chapter.is_error,
                lang=actor.lang,
            )
        if r.phase == "pending":
            if await self.repo.move_round(r.id, ("pending",), "abandoned", closed_at=self._clock()):
                return Reply.text(T(actor.lang, "pending_abandoned"), lang=actor.lang)
        raise _Refused("busy_writing")

    async def _on_deadline(self, round_id: str) -> None:
        r = await self.repo.get_round(round_id)
        if r is None:
            return
        target = self._target(r)
        if r.phase == "proposal":
            ballot = await self._close_proposals(r)
            if ballot is not None:
                await self._announce(target, ballot)
        elif r.phase == "voting":
            result = await self._close_votes(r)
            if result is None:
                return
            await self._announce(target, result)
            number = len(await self.repo.chapters(r.chat_id)) + 1
            progress = Reply.text(T(target.lang, "writing_progress", n=number), lang=target.lang)
            await self._announce(target, progress)
            chapter = await self._write_round(r.id, target.lang, None, wait=True)
            await self._announce(target, chapter)

    async def _close_proposals(self, r: RoundRow) -> Reply | None:
        """Proposal phase → ballot (or an empty round closed). None if someone else did it."""
        lang = _lang(r.lang)
        now = self._clock()
        deadline = now + timedelta(minutes=self.settings.vote_minutes)
        if not await self.repo.move_round(r.id, ("proposal",), "voting", vote_deadline=deadline):
            return None
        self.deadlines.cancel(f"round:{r.id}")
        proposals = await self.repo.proposals(r.id)
        if not proposals:
            await self.repo.move_round(r.id, ("voting",), "empty", closed_at=now, outcome="empty")
            return Reply.text(T(lang, "round_empty"), lang=lang)
        self._schedule(r.id, deadline)
        lines = [
            f"{i}. {p.title}"
            + (f" — {p.summary}" if p.summary else "")
            + (f"（{p.user_name}）" if p.user_name else "")
            for i, p in enumerate(proposals, start=1)
        ]
        return Reply(
            lang=lang,
            blocks=(
                Block(T(lang, "ballot_heading"), "heading"),
                Block("\n".join(lines)),
                Block(T(lang, "ballot_help", minutes=self._minutes_left(deadline)), "note"),
            ),
            poll=Poll(
                question=T(lang, "ballot_question"),
                options=tuple(option_label(p) for p in proposals),
                action_prefix=f"vote:{r.id}:",
                round_id=r.id,
            ),
        )

    async def _close_votes(self, r: RoundRow) -> Reply | None:
        """Voting → the winner is decided and the round moves to writing. None if already moved."""
        lang = _lang(r.lang)
        proposals = await self.repo.proposals(r.id)
        if not await self.repo.move_round(r.id, ("voting",), "writing"):
            return None
        self.deadlines.cancel(f"round:{r.id}")
        outcome = decide(proposals, await self.repo.tally(r.id))
        assert outcome.winner is not None  # empty rounds never reach voting
        await self.repo.move_round(
            r.id, ("writing",), "writing", winner_id=outcome.winner.id, outcome=outcome.reason
        )
        winner = outcome.winner
        why = T(lang, f"win_{outcome.reason}")
        return Reply(
            lang=lang,
            blocks=(
                Block(T(lang, "result_heading"), "heading"),
                Block("\n".join(tally_lines(outcome.counts, lang))),
                Block(T(lang, "winner", title=winner.title, why=why)),
            ),
        )

    async def _retry_pending(self, actor: Actor, r: RoundRow, progress: Progress | None) -> Reply:
        self._busy(actor.chat_id)
        if self.llm is None:
            return Reply.error(T(actor.lang, "needs_model_pending"), lang=actor.lang)
        if not await self.repo.move_round(r.id, ("pending",), "writing"):
            raise _Refused("busy_writing")
        number = len(await self.repo.chapters(actor.chat_id)) + 1
        if progress is not None:
            await progress(T(actor.lang, "writing_progress", n=number))
        return await self._write_round(r.id, actor.lang, progress, wait=False)

    async def _write_round(
        self, round_id: str, lang: Lang, progress: Progress | None, *, wait: bool
    ) -> Reply:
        """Write the chapter for a round in phase `writing`. On any failure the round goes to
        `pending` (retry with /chapter next) and nothing is saved."""
        r = await self.repo.get_round(round_id)
        assert r is not None and r.winner_id is not None
        lock = self._lock(r.chat_id)
        if lock.locked() and not wait:
            await self.repo.move_round(round_id, ("writing",), "pending")
            return Reply.error(T(lang, "busy_writing_pending"), lang=lang)
        async with lock:
            try:
                if self.llm is None:
                    await self.repo.move_round(round_id, ("writing",), "pending")
                    return Reply.error(T(lang, "needs_model_pending"), lang=lang)
                winner = next(p for p in await self.repo.proposals(round_id) if p.id == r.winner_id)
                goal = Goal(winner.title, winner.summary, winner.notes)
                bp = await self._blueprint(r.chat_id)
                ctx = await self._context(r.chat_id, bp, goal, None)
                text = await generate(self.llm, ctx, progress, self.settings.chapter_max_tokens)
                summary = await summarise(self.llm, text, goal.title, bp)
                number, chunks = await self.memory.add_chapter(
                    chat_id=r.chat_id,
                    chapter_id=uuid.uuid4().hex,
                    title=goal.title,
                    text=text,
                    summary=summary,
                    author=winner.user_name or winner.user_id,
                    reason=T(lang, "reason_round"),
                    now=self._clock(),
                    round_id=round_id,
                )
            except LLMError as err:
                await self.repo.move_round(round_id, ("writing",), "pending")
                return Reply.error(T(lang, "llm_failed_pending", kind=err.kind), lang=lang)
            except Exception:
                log.exception("writing round %s failed", round_id)
                await self.repo.move_round(round_id, ("writing",), "pending")
                return Reply.error(T(lang, "write_failed_pending"), lang=lang)
        return self._chapter_reply(
            lang, number, goal.title, text, T(lang, "indexed", chunks=chunks)
        )

    async def _context(
        self,
        chat_id: str,
        bp: Blueprint,
        goal: Goal,
        number: int | None,
        instructions: str = "",
        draft: str = "",
    ) -> Context:
        """The prompt layers for chapter `number` (None = a new last chapter)."""
        current = await self.repo.current_versions(chat_id)
        if number is None:
            number = len(current) + 1
        prior = [(n, v) for n, v in current if n < number]
        plot = await self.memory.search(
            chat_id, memory_query(bp, goal), limit=top_k(len(current)) + 2
        )
        plot = [h for h in plot if h.chapter_no != number][: top_k(len(current))]
        plot = within_budget(plot, self.settings.plot_token_budget)
        summaries = [PriorChapter(n, v.title, v.summary) for n, v in prior]
        previous = prior[-1][1] if prior else None
        return Context(
            blueprint=bp,
            goal=goal,
            number=number,
            previous_summary=previous.summary if previous else None,
            previous_tail=previous.text[-BRIDGE_CHARS:] if previous else "",
            plot=plot,
            summaries=pick_summaries(summaries[:-1] if previous else summaries, plot)
            if summaries
            else [],
            instructions=instructions,
            draft=draft,
        )

    def _chapter_reply(
        self, lang: Lang, number: int, title: str, text: str, footer: str = ""
    ) -> Reply:
        heading = T(lang, "chapter_heading", n=number, title=title)
        if len(text) <= self.settings.show_inline_chars:
            blocks = [
                Block(heading, "heading"),
                *(Block(p) for p in text.split("\n\n") if p.strip()),
            ]
            if footer:
                blocks.append(Block(footer, "note"))
            return Reply(blocks=tuple(blocks), lang=lang)
        md = f"# {heading}\n\n{text}\n".encode()
        blocks = [
            Block(heading, "heading"),
            Block(text[:300] + "……"),
            Block(T(lang, "attached_full"), "note"),
        ]
        if footer:
            blocks.append(Block(footer, "note"))
        attachment = Attachment(f"chapter-{number:03d}.md", md)
        return Reply(blocks=tuple(blocks), attachments=(attachment,), lang=lang)

    # ---- chapters ------------------------------------------------------------------------------

    async def _show(self, actor: Actor, req: api.ShowChapter) -> Reply:
        number, chapter_id, version = await self._chapter(actor.chat_id, req.chapter)
        row = await self.repo.version(chapter_id, version)
        assert row is not None
        return self._chapter_reply(
            actor.lang, number, row.title, row.text, T(actor.lang, "version_note", v=version)
        )

    async def _history(self, actor: Actor, req: api.ChapterHistory) -> Reply:
        number, chapter_id, current = await self._chapter(actor.chat_id, req.chapter)
        lines = []
        for v in await self.repo.versions(chapter_id):
            mark = T(actor.lang, "current_mark") if v.version == current else ""
            when = v.created_at.strftime("%Y-%m-%d %H:%M")
            lines.append(
                T(
                    actor.lang,
                    "history_line",
                    v=v.version,
                    when=when,
                    who=v.author or "-",
                    why=v.reason or "-",
                    chars=len(v.text),
                )
                + mark
            )
        return Reply(
            lang=actor.lang,
            blocks=(
                Block(T(actor.lang, "history_heading", n=number), "heading"),
                Block("\n".join(lines)),
            ),
        )

    async def _revise(
        self, actor: Actor, req: api.ReviseChapter, progress: Progress | None
    ) -> Reply:
        self._require_admin(actor)
        number, chapter_id, version = await self._chapter(actor.chat_id, req.chapter)
        self._busy(actor.chat_id)
        if req.text is not None:
            text = req.text.strip()
            if not text:
                raise _Refused("upload_empty")
            if len(text) > self.settings.max_upload_chars:
                raise _Refused(
                    "upload_too_long", limit=self.settings.max_upload_chars, got=len(text)
                )
        elif self.llm is None:
            raise _Refused("needs_model")
        async with self._lock(actor.chat_id):
            row = await self.repo.version(chapter_id, version)
            assert row is not None
            bp = await self._blueprint(actor.chat_id)
            try:
                if req.text is None:
                    assert self.llm is not None
                    if progress is not None:
                        await progress(T(actor.lang, "revising_progress", n=number))
                    goal = Goal(row.title, str(row.summary.get("summary", "")))
                    ctx = await self._context(
                        actor.chat_id, bp, goal, number, req.instructions, row.text
                    )
                    text = await generate(self.llm, ctx, progress, self.settings.chapter_max_tokens)
                    reason = req.instructions.strip() or T(actor.lang, "reason_regenerate")
                else:
                    reason = T(actor.lang, "reason_upload")
                summary = await summarise(self.llm, text, row.title, bp)
                new_version, chunks = await self.memory.add_version(
                    chat_id=actor.chat_id,
                    chapter_id=chapter_id,
                    chapter_no=number,
                    title=row.title,
                    text=text,
                    summary=summary,
                    author=actor.user_name or actor.user_id,
                    reason=reason[:200],
                    now=self._clock(),
                )
            except LLMError as err:
                raise _Refused("llm_failed", kind=err.kind) from None
        reply = self._chapter_reply(
            actor.lang,
            number,
            row.title,
            text,
            T(actor.lang, "revised", v=new_version, chunks=chunks),
        )
        return reply

    async def _rollback(self, actor: Actor, req: api.RollbackChapter) -> Reply:
        self._require_admin(actor)
        number, chapter_id, current = await self._chapter(actor.chat_id, req.chapter)
        versions = [v.version for v in await self.repo.versions(chapter_id)]
        if req.version not in versions:
            raise _Refused(
                "no_such_version", n=number, v=req.version, versions="、".join(map(str, versions))
            )
        if req.version == current:
            raise _Refused("already_current", n=number, v=req.version)
        self._busy(actor.chat_id)
        async with self._lock(actor.chat_id):
            await self.memory.rollback(actor.chat_id, chapter_id, number, req.version)
        return Reply.text(T(actor.lang, "rolled_back", n=number, v=req.version), lang=actor.lang)

    async def _delete(self, actor: Actor, req: api.DeleteChapter) -> Reply:
        self._require_admin(actor)
        chapters = await self.repo.chapters(actor.chat_id)
        number, chapter_id, _ = await self._chapter(actor.chat_id, req.chapter)
        last = chapters[-1].chapter_no
        if number != last and not req.confirm:
            raise _Refused("delete_needs_confirm", n=number, later=last - number)
        self._busy(actor.chat_id)
        async with self._lock(actor.chat_id):
            renumbered = await self.memory.delete_chapter(actor.chat_id, chapter_id)
        if renumbered:
            text = T(actor.lang, "deleted_renumbered", n=number, count=len(renumbered))
            return Reply.text(text, lang=actor.lang)
        return Reply.text(T(actor.lang, "deleted", n=number), lang=actor.lang)

    # ---- blueprint and export ------------------------------------------------------------------

    async def _blueprint_show(self, actor: Actor) -> Reply:
        bp = await self._blueprint(actor.chat_id)
        return Reply(
            lang=actor.lang,
            blocks=(
                Block(T(actor.lang, "blueprint_heading"), "heading"),
                *(Block(line) for line in render_summary(bp, actor.lang)),
            ),
            attachments=(
                Attachment("blueprint.json", bp.to_json().encode("utf-8"), "application/json"),
            ),
        )

    async def _blueprint_set(self, actor: Actor, req: api.BlueprintSet) -> Reply:
        self._require_admin(actor)
        bp = parse_upload(req.data, self.settings.max_blueprint_bytes)
        await self.repo.set_blueprint(actor.chat_id, bp.to_json(), actor.user_id, self._clock())
        return Reply.text(
            T(actor.lang, "blueprint_saved", title=bp.title, chars=len(bp.characters)),
            lang=actor.lang,
        )

    async def _blueprint_edit(self, actor: Actor, req: api.BlueprintEdit) -> Reply:
        self._require_admin(actor)
        bp = edit(await self._blueprint(actor.chat_id), req.field, req.value)
        await self.repo.set_blueprint(actor.chat_id, bp.to_json(), actor.user_id, self._clock())
        return Reply.text(
            T(actor.lang, "blueprint_edited", field=req.field, value=req.value.strip()),
            lang=actor.lang,
        )

    async def _export(self, actor: Actor, req: api.Export) -> Reply:
        fmt = req.fmt.lower()
        if fmt not in ("md", "epub"):
            raise _Refused("bad_format", fmt=req.fmt)
        current = await self.repo.current_versions(actor.chat_id)
        if not current:
            raise _Refused("no_chapters")
        bp = await self._blueprint(actor.chat_id)
        chapters = [ExportChapter(n, v.title, v.text) for n, v in current]
        if fmt == "epub":
            data = await to_epub(bp.title, chapters, f"baibao-{actor.chat_id}")
            attachment = Attachment(f"{bp.title}.epub", data, "application/epub+zip")
        else:
            attachment = Attachment(f"{bp.title}.md", to_markdown(bp.title, chapters))
        chars = sum(len(c.text) for c in chapters)
        text = T(actor.lang, "exported", title=bp.title, n=len(chapters), chars=chars)
        return Reply(blocks=(Block(text),), attachments=(attachment,), lang=actor.lang)
