"""The chapter service: writes a round's chapter (by the model, or a text the group submits),
revises, rolls back, deletes, shows, exports — and reviews every new chapter or version
(consistency check + proposed blueprint changes).

One asyncio lock per novel: at most one write at a time changes a novel's chapters and memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence

from kernel.refusal import Refused
from novel import consistency, evolve
from novel.blueprint import Blueprint, default_blueprint, validate
from novel.consistency import Finding
from novel.export import ExportChapter, to_epub, to_markdown
from novel.ledger import StoryLedger, with_summaries
from novel.member import Member
from novel.memory import PlotMemory
from novel.phase import Event
from novel.repo import ChangeRow, Draft, NovelRepo, RoundRow, VersionRow
from novel.results import (
    ChapterSaved,
    ChapterView,
    Deleted,
    Exported,
    History,
    Proposal,
    RolledBack,
    SaveHow,
    Steps,
    WriteStalled,
)
from novel.schedule import Now
from novel.settings import NovelSettings
from novel.story_state import StoryState, replay
from novel.summary import ChapterSummary, summarise
from novel.writer import (
    BRIDGE_CHARS,
    Context,
    Goal,
    PriorChapter,
    generate,
    goal_characters,
    goal_tags,
    memory_query,
    summary_k,
    top_k,
    within_budget,
)
from retrieval.ports import LLM, LLMError

log = logging.getLogger(__name__)


class ChapterService:
    def __init__(
        self,
        repo: NovelRepo,
        memory: PlotMemory,
        llm: LLM | None,
        settings: NovelSettings,
        clock: Now,
    ) -> None:
        self._rounds = repo.rounds
        self._book = repo.book
        self._world = repo.world
        self._memory = memory
        self._llm = llm
        self._settings = settings
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._ledger = StoryLedger(repo.events)  # the stored story state (issue 42)

    @property
    def model_writes(self) -> bool:
        return self._llm is not None

    def _draft(
        self, title: str, text: str, summary: ChapterSummary, author: str, reason: str
    ) -> Draft:
        """A version to store, stamped with the service's clock."""
        return Draft(title, text, summary, author, reason, self._clock())

    def lock(self, chat_id: str) -> asyncio.Lock:
        return self._locks.setdefault(chat_id, asyncio.Lock())

    def ensure_idle(self, chat_id: str) -> None:
        if self.lock(chat_id).locked():
            raise Refused("busy_writing")

    async def blueprint(self, chat_id: str) -> Blueprint:
        raw = await self._world.blueprint_json(chat_id)
        return validate(json.loads(raw)) if raw else default_blueprint()

    async def find(self, chat_id: str, number: int | None) -> tuple[int, str, int]:
        """(number, chapter id, current version) of chapter `number` (None = the last)."""
        chapters = await self._book.chapters(chat_id)
        if not chapters:
            raise Refused("no_chapters")
        if number is None:
            c = chapters[-1]
        else:
            found = [c for c in chapters if c.chapter_no == number]
            if not found:
                raise Refused("no_such_chapter", n=number, last=chapters[-1].chapter_no)
            c = found[0]
        return c.chapter_no, c.id, c.current_version

    # ---- writing a round's chapter -------------------------------------------------------------

    async def write_round(
        self, r: RoundRow, winner: Proposal, progress: Steps | None, *, wait: bool
    ) -> ChapterSaved | WriteStalled:
        """Write the chapter of a round in phase `writing`. On any failure the round stalls
        (pending: retry with /chapter next, or submit a text) and nothing is saved."""
        number = len(await self._book.chapters(r.chat_id)) + 1
        lock = self.lock(r.chat_id)
        if lock.locked() and not wait:
            await self._rounds.advance(r.id, Event.STALL)
            return WriteStalled("busy", number, winner.title)
        async with lock:
            if self._llm is None:
                await self._rounds.advance(r.id, Event.STALL)
                return WriteStalled("no_model", number, winner.title)
            try:
                goal = Goal(winner.title, winner.summary, winner.notes)
                bp = await self.blueprint(r.chat_id)
                ctx = await self.context(r.chat_id, bp, goal, None)
                text = await generate(self._llm, ctx, progress, self._settings.chapter_max_tokens)
                return await self._save_new(
                    r.chat_id,
                    r.id,
                    bp,
                    winner.title,
                    text,
                    winner.user_name or winner.user_id,
                    "generated",
                )
            except LLMError as err:
                await self._rounds.advance(r.id, Event.STALL)
                return WriteStalled("llm", number, winner.title, err.kind)
            except Exception:
                log.exception("writing round %s failed", r.id)
                await self._rounds.advance(r.id, Event.STALL)
                return WriteStalled("error", number, winner.title)

    async def submit(
        self, member: Member, r: RoundRow, winner: Proposal, text: str
    ) -> ChapterSaved:
        """The group's own text for the winning goal, saved exactly like a generated one."""
        text = self._valid_text(text)
        self.ensure_idle(member.chat_id)
        async with self.lock(member.chat_id):
            if not await self._rounds.advance(r.id, Event.WRITE):
                raise Refused("busy_writing")
            try:
                bp = await self.blueprint(member.chat_id)
                return await self._save_new(
                    member.chat_id,
                    r.id,
                    bp,
                    winner.title,
                    text,
                    member.user_name or member.user_id,
                    "submitted",
                )
            except Exception:
                log.exception("saving the submitted chapter of round %s failed", r.id)
                await self._rounds.advance(r.id, Event.STALL)
                raise Refused("save_failed") from None

    async def _save_new(
        self,
        chat_id: str,
        round_id: str,
        bp: Blueprint,
        title: str,
        text: str,
        author: str,
        how: SaveHow,
    ) -> ChapterSaved:
        summary = await summarise(self._llm, text, title, bp, await self._known_places(chat_id))
        chapter_id = uuid.uuid4().hex
        number, chunks = await self._memory.add_chapter(
            chat_id=chat_id,
            chapter_id=chapter_id,
            draft=self._draft(title, text, summary, author, how),
            round_id=round_id,
        )
        findings, changes = await self.review(chat_id, chapter_id, number, text, summary, bp)
        proposed = [c.as_change() for c in changes]
        return ChapterSaved(number, title, text, chunks, 1, how, findings, proposed)

    def _valid_text(self, text: str) -> str:
        text = text.strip()
        if not text:
            raise Refused("upload_empty")
        if len(text) > self._settings.max_upload_chars:
            raise Refused("upload_too_long", limit=self._settings.max_upload_chars, got=len(text))
        return text

    async def _known_places(self, chat_id: str) -> list[str]:
        places: list[str] = []
        for _, v in await self._book.current_versions(chat_id):
            places.extend(v.summary.scenes)
        return list(dict.fromkeys(places))

    # ---- the prompt ----------------------------------------------------------------------------

    async def context(
        self,
        chat_id: str,
        bp: Blueprint,
        goal: Goal,
        number: int | None,
        instructions: str = "",
        draft: str = "",
    ) -> Context:
        """The prompt layers for chapter `number` (None = a new last chapter)."""
        current = await self._book.current_versions(chat_id)
        if number is None:
            number = len(current) + 1
        prior = [(n, v) for n, v in current if n < number]
        query = memory_query(bp, goal)
        tags = goal_characters(bp, goal) + _story_names_in(current, goal, bp)
        scenes = [s for _, v in current for s in v.summary.scenes]
        k = top_k(len(current))
        plot = await self._memory.search(
            chat_id, query, limit=k + 2, tags=tags + goal_tags(bp, goal, scenes)
        )
        plot = within_budget(
            [h for h in plot if h.chapter_no != number][:k], self._settings.plot_token_budget
        )
        previous = prior[-1] if prior else None
        by_number = dict(prior)
        similar: list[int] = []
        if previous is not None:
            want = summary_k(len(current))
            for hit in await self._memory.summaries(chat_id, query, limit=want + 2, tags=tags):
                n = hit.chapter_no
                if n in by_number and n != previous[0] and n not in similar:
                    similar.append(n)
                if len(similar) >= want:
                    break
        return Context(
            blueprint=bp,
            goal=goal,
            number=number,
            previous_summary=previous[1].summary if previous else None,
            previous_tail=previous[1].text[-BRIDGE_CHARS:] if previous else "",
            plot=plot,
            summaries=[
                PriorChapter(n, by_number[n].title, by_number[n].summary) for n in sorted(similar)
            ],
            instructions=instructions,
            draft=draft,
        )

    # ---- review: consistency + blueprint proposals -------------------------------------------

    async def review(
        self,
        chat_id: str,
        chapter_id: str,
        number: int,
        text: str,
        summary: ChapterSummary,
        bp: Blueprint,
    ) -> tuple[list[Finding], list[ChangeRow]]:
        """Check the saved chapter against the story so far and propose blueprint changes.
        Never fails the chapter: a broken check is logged and reports nothing."""
        try:
            others = [
                (n, v)
                for n, v in await self._book.current_versions(chat_id)
                if v.chapter_id != chapter_id
            ]
            pending = await self._world.pending_changes(chat_id)
            before = await self._ledger.state(chat_id, bp, others, before=number)
            state = with_summaries(before, others, pending, number)
            earlier = [
                f"第{n}章《{v.title}》：{v.summary.summary.strip()}"
                for n, v in others
                if n < number
            ]
            llm = self._llm if self._settings.consistency_model else None
            findings = await consistency.check(text, state, llm=llm, earlier=earlier, number=number)
            changes = await self._propose(chat_id, chapter_id, number, summary, bp, pending)
            await self._refresh(chat_id)
            return findings, changes
        except Exception:
            log.exception("reviewing chapter %s of %s failed", number, chat_id)
            return [], []

    async def _propose(
        self,
        chat_id: str,
        chapter_id: str,
        number: int,
        summary: ChapterSummary,
        bp: Blueprint,
        pending: Sequence[ChangeRow],
    ) -> list[ChangeRow]:
        """The blueprint changes the chapter's current version proposes (replacing any it
        had pending)."""
        waiting = [  # pending changes of other chapters (this chapter's are replaced)
            evolve.BlueprintChange.from_row(c.kind, c.payload)
            for c in pending
            if c.chapter_id != chapter_id
        ]
        proposed = evolve.propose(bp, summary, waiting)
        return await self._world.propose_changes(
            chat_id,
            chapter_id,
            number,
            [(c.kind, c.payload()) for c in proposed],
            self._clock(),
        )

    async def _repropose(self, chat_id: str, chapter_id: str, number: int) -> None:
        """After a rollback or an undone revision made an older version current again (which
        superseded the chapter's proposals): propose that version's changes again. Never
        fails the operation."""
        try:
            current = await self._book.current_map(chat_id)
            row = await self._book.version(chapter_id, current[chapter_id][1])
            assert row is not None
            bp = await self.blueprint(chat_id)
            pending = await self._world.pending_changes(chat_id)
            await self._propose(chat_id, chapter_id, number, row.summary, bp, pending)
        except Exception:
            log.exception("re-proposing the changes of chapter %s of %s failed", number, chat_id)

    async def story_state(self, chat_id: str) -> StoryState:
        """The story so far: the stored events of every current chapter (after a revise,
        rollback or delete, of the chapters that remain), with the pending proposals' names."""
        current = await self._book.current_versions(chat_id)
        pending = await self._world.pending_changes(chat_id)
        bp = await self.blueprint(chat_id)
        state = await self._ledger.state(chat_id, bp, current)
        return with_summaries(state, current, pending, len(current) + 1)

    async def _refresh(self, chat_id: str) -> None:
        """Store the events of every current chapter that has none for what it is now read
        against (the chapter just saved, revised or rolled back, and the ones after it).
        Never fails the operation: what is not stored now is read on the next use."""
        try:
            bp = await self.blueprint(chat_id)
            await self._ledger.refresh(chat_id, bp, await self._book.current_versions(chat_id))
        except Exception:
            log.exception("storing the story events of %s failed", chat_id)

    # ---- revise, rollback, delete ----------------------------------------------------------------

    async def revise(
        self,
        member: Member,
        number: int,
        instructions: str,
        upload: str | None,
        progress: Steps | None,
        started: Callable[[], Awaitable[None]] | None = None,
    ) -> ChapterSaved:
        """A new version: regenerated by the model (with instructions) or an uploaded text.
        `started` runs once the request passed every check (the "rewriting…" notice)."""
        number, chapter_id, version = await self.find(member.chat_id, number)
        self.ensure_idle(member.chat_id)
        if upload is not None:
            upload = self._valid_text(upload)
        elif self._llm is None:
            raise Refused("needs_model")
        async with self.lock(member.chat_id):
            row = await self._book.version(chapter_id, version)
            assert row is not None
            bp = await self.blueprint(member.chat_id)
            target: int | None = None
            try:
                if upload is None:
                    assert self._llm is not None
                    if started is not None:
                        await started()
                    goal = Goal(row.title, row.summary.summary)
                    ctx = await self.context(
                        member.chat_id, bp, goal, number, instructions, row.text
                    )
                    text = await generate(
                        self._llm, ctx, progress, self._settings.chapter_max_tokens
                    )
                    how: SaveHow = "regenerated"
                    reason = instructions.strip()
                else:
                    text, how, reason = upload, "uploaded", ""
                summary = await summarise(
                    self._llm, text, row.title, bp, await self._known_places(member.chat_id)
                )
                # the version add_version will write (the lock keeps anyone else from adding)
                target = await self._book.next_version(chapter_id)
                new_version, chunks = await self._memory.add_version(
                    chat_id=member.chat_id,
                    chapter_id=chapter_id,
                    chapter_no=number,
                    draft=self._draft(
                        row.title,
                        text,
                        summary,
                        member.user_name or member.user_id,
                        (reason or how)[:200],
                    ),
                )
            except LLMError as err:
                raise Refused("llm_failed", kind=err.kind) from None
            except Refused:
                raise
            except Exception:
                # A store or disk fault: nothing half-written stays (version stays current).
                log.exception(
                    "saving a revision of chapter %s of %s failed", number, member.chat_id
                )
                if target is not None:
                    await self._memory.undo_version(member.chat_id, chapter_id, target, version)
                    await self._repropose(member.chat_id, chapter_id, number)
                raise Refused("revise_save_failed", n=number, v=version) from None
            findings, changes = await self.review(
                member.chat_id, chapter_id, number, text, summary, bp
            )
        proposed = [c.as_change() for c in changes]
        return ChapterSaved(number, row.title, text, chunks, new_version, how, findings, proposed)

    async def rollback(self, member: Member, number: int, version: int) -> RolledBack:
        number, chapter_id, current = await self.find(member.chat_id, number)
        versions = [v.version for v in await self._book.versions(chapter_id)]
        if version not in versions:
            raise Refused(
                "no_such_version", n=number, v=version, versions="、".join(map(str, versions))
            )
        if version == current:
            raise Refused("already_current", n=number, v=version)
        self.ensure_idle(member.chat_id)
        async with self.lock(member.chat_id):
            await self._memory.rollback(member.chat_id, chapter_id, number, version)
            await self._repropose(member.chat_id, chapter_id, number)
            await self._refresh(member.chat_id)
        return RolledBack(number, version)

    async def delete(self, member: Member, number: int | None, confirm: bool) -> Deleted:
        chapters = await self._book.chapters(member.chat_id)
        number, chapter_id, _ = await self.find(member.chat_id, number)
        last = chapters[-1].chapter_no
        if number != last and not confirm:
            raise Refused("delete_needs_confirm", n=number, later=last - number)
        self.ensure_idle(member.chat_id)
        async with self.lock(member.chat_id):
            renumbered = await self._memory.delete_chapter(member.chat_id, chapter_id)
            await self._refresh(member.chat_id)
        return Deleted(number, len(renumbered))

    # ---- reading -------------------------------------------------------------------------------

    async def show(self, member: Member, number: int | None) -> ChapterView:
        number, chapter_id, version = await self.find(member.chat_id, number)
        row = await self._book.version(chapter_id, version)
        assert row is not None
        return ChapterView(number, row.as_version())

    async def history(self, member: Member, number: int) -> History:
        number, chapter_id, current = await self.find(member.chat_id, number)
        versions = await self._book.versions(chapter_id)
        return History(number, current, [v.as_version() for v in versions])

    async def export(self, member: Member, fmt: str) -> Exported:
        fmt = fmt.strip().lower()
        if fmt not in ("md", "epub"):
            raise Refused("bad_format", fmt=fmt[:20])
        current = await self._book.current_versions(member.chat_id)
        if not current:
            raise Refused("no_chapters")
        bp = await self.blueprint(member.chat_id)
        chapters = [ExportChapter(n, v.title, v.text) for n, v in current]
        chars = sum(len(c.text) for c in chapters)
        if fmt == "epub":
            data = await to_epub(bp.title, chapters, f"baibao-{member.chat_id}")
            return Exported(
                bp.title, len(chapters), chars, f"{bp.title}.epub", data, "application/epub+zip"
            )
        return Exported(
            bp.title,
            len(chapters),
            chars,
            f"{bp.title}.md",
            to_markdown(bp.title, chapters),
            "text/markdown",
        )


def _story_state(
    bp: Blueprint,
    others: Sequence[tuple[int, VersionRow]],
    pending: Sequence[ChangeRow],
    number: int,
) -> StoryState:
    """What the story knew before chapter `number`, read from the texts (what the ledger
    stores, without the store): the chapters before it, then what the summaries know."""
    earlier = [v.text for n, v in sorted(others, key=lambda nv: nv[0]) if n < number]
    return with_summaries(replay(bp, earlier), others, pending, number)


def _story_names_in(
    current: Sequence[tuple[int, VersionRow]], goal: Goal, bp: Blueprint
) -> list[str]:
    """Names earlier chapters introduced (their summaries list them) that the goal mentions."""
    text = f"{goal.title}\n{goal.summary}\n{goal.notes}"
    found: list[str] = []
    for _, v in current:
        for name in v.summary.characters:
            if len(name) >= 2 and name in text:
                if bp.character(name) is None and name not in found:
                    found.append(name)
    return found
