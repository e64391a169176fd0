"""The one place the writers' room's results become `Reply`s: wording (via the catalogue in
`bot.presenters.novel_messages`), layout, attachments for long chapters. Each command has its
own presenter method here, taking the result its handler got (`bot.commands.novel` pairs them);
a ballot is drawn by the ballot room's board (`bot.ballot.board`), which knows each chat's look.

`NovelAnnouncer` is the chat side of the writers' room's announce port: what a deadline or a
resumed write produced, worded and sent to the round's chat through the router, and a changed
tally passed to the ballot board.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from bot.actor import Actor
from bot.presenters.answer import failure_reason
from bot.presenters.novel_messages import T
from bot.reply import Attachment, Block, Posted, Progress, Reply
from kernel.i18n import Lang
from kernel.refusal import Refused
from novel.blueprint import BlueprintError
from novel.consistency import Finding
from novel.evolve import BlueprintChange
from novel.member import Member, Place
from novel.phase import Phase
from novel.results import (
    BallotOption,
    BallotView,
    BlueprintEdited,
    BlueprintHistoryView,
    BlueprintSaved,
    BlueprintShown,
    ChangesDecided,
    ChapterSaved,
    ChapterView,
    Closed,
    ClosedAndWritten,
    CurrentRound,
    Deleted,
    Exported,
    History,
    Proposal,
    ProposalSaved,
    ProposedChange,
    Revising,
    RolledBack,
    RoundEmpty,
    RoundOpened,
    Steps,
    StoryList,
    StoryOpened,
    VoteCast,
    VoteRetracted,
    VotesClosed,
    WriteStalled,
    Writing,
)
from novel.settings import NovelSettings


def join(*replies: Reply) -> Reply:
    """Several results in one message (e.g. the vote result and the chapter it produced)."""
    return Reply(
        blocks=tuple(b for r in replies for b in r.blocks),
        attachments=tuple(a for r in replies for a in r.attachments),
        is_error=any(r.is_error for r in replies),
        lang=replies[0].lang if replies else "zh",
    )


class Ballots(Protocol):
    """How a ballot is drawn in a chat (`bot.ballot.board.BallotBoard`)."""

    def reply(self, view: BallotView, where: Actor) -> Reply: ...


class NovelPresenter:
    """The rounds' replies and what every command shares (refusals, progress); the chapters'
    are `chapters`, the blueprint's the module's `blueprint_*` functions."""

    def __init__(self, settings: NovelSettings, ballots: Ballots) -> None:
        self.chapters = ChapterPresenter(settings)
        self._ballots = ballots

    def refusal(self, lang: Lang, refused: Refused, *, admin: bool = False) -> Reply:
        fields = dict(refused.fields)
        if isinstance(fields.get("kind"), str):  # why the model failed, in words
            fields["kind"] = failure_reason(str(fields["kind"]), lang)
        if isinstance(fields.get("phase"), str):  # a round's phase, in the chat's words
            fields["phase"] = T(lang, f"phase_{fields['phase']}")
        text = T(lang, refused.reason, **fields)
        if admin and refused.reason == "needs_model":  # the setting to fix, said once
            text += T(lang, "admin_setting")
        return Reply.error(text, lang=lang)

    def blueprint_error(self, lang: Lang, err: BlueprintError) -> Reply:
        return Reply.error(err.text(lang), lang=lang)

    def steps(self, lang: Lang, progress: Progress) -> Steps:
        """A long request's steps (a notice, then the draft) as the caller's progress lines."""

        async def step(said: Writing | Revising | str) -> None:
            await progress(self.progress(lang, said))

        return step

    def progress(self, lang: Lang, step: Writing | Revising | str) -> str:
        """A step of a long request as the caller's progress line (a draft streams as is)."""
        if isinstance(step, Writing):
            return self.writing(lang, step)
        if isinstance(step, Revising):
            return T(lang, "revising_progress", n=step.number)
        return step

    # ---- each round command's reply ------------------------------------------------------------

    def next_round(self, r: RoundOpened | ChapterSaved | WriteStalled, actor: Actor) -> Reply:
        """`/chapter next`: the round opened, or a pending chapter written again (or not)."""
        if isinstance(r, RoundOpened):
            return self._opened(r, actor.lang, actor.is_admin)
        return self.written(r, actor.lang, admin=actor.is_admin)

    def proposed(self, r: ProposalSaved, actor: Actor) -> Reply:
        lang = actor.lang
        key = "proposal_added" if r.new else "proposal_updated"
        return Reply.text(
            T(lang, key, title=r.title),
            T(lang, "proposal_count", n=r.count, minutes=r.minutes),
            lang=lang,
        )

    def current_round(self, r: CurrentRound, actor: Actor) -> Reply:
        """`/chapter status`: the phase, the proposals (with the running count once voting
        opened), what closes when, and what members can do now."""
        lang = actor.lang
        heading = T(lang, "chapter_heading", n=r.number, title=T(lang, f"phase_{r.phase.value}"))
        counted = r.phase != Phase.PROPOSAL
        lines = [_option_line(i, o, lang, counted) for i, o in enumerate(r.options, start=1)]
        blocks = [Block(heading, "heading"), *([Block("\n".join(lines))] if lines else [])]
        if r.phase == Phase.PROPOSAL:
            said = [T(lang, "proposal_count", n=len(r.options), minutes=r.minutes)]
            said.append(T(lang, "how_to_propose"))
        elif r.phase == Phase.VOTING:
            votes = sum(len(o.voters) for o in r.options)
            said = [T(lang, "ballot_total", n=votes) + T(lang, "ballot_help", minutes=r.minutes)]
        elif r.phase == Phase.WRITING:
            said = [T(lang, "writing_progress", n=r.number)]
        else:
            said = [T(lang, "pending_waiting", title=r.winner, n=r.number)]
        blocks += [Block(text, "note") for text in said]
        return Reply(blocks=tuple(blocks), lang=lang)

    def vote_cast(self, r: VoteCast, actor: Actor) -> Reply:
        lang = actor.lang
        said = {"new": "voted", "same": "vote_same", "changed": "vote_changed"}
        head = T(lang, said[r.change], n=r.option, title=r.title)
        return Reply.text(head, "\n".join(tally_lines(r.outcome.counts, lang)), lang=lang)

    def vote_retracted(self, r: VoteRetracted, actor: Actor) -> Reply:
        key = "vote_retracted" if r.removed else "vote_not_retracted"
        return Reply.text(T(actor.lang, key), lang=actor.lang)

    def closed(self, r: Closed, actor: Actor) -> Reply:
        """`/chapter close`, by the phase it closed: the ballot (voting opens), the empty round,
        the result (and the chapter the model wrote), or the abandoned round."""
        lang, admin = actor.lang, actor.is_admin
        if isinstance(r, BallotView):  # said in the round's language, wherever it is shown
            return self._ballots.reply(r, actor)
        if isinstance(r, RoundEmpty):
            return self.round_empty(r)
        if isinstance(r, VotesClosed):
            return self.votes_closed(r, lang, admin=admin)
        if isinstance(r, ClosedAndWritten):
            return join(
                self.votes_closed(r.closed, lang, admin=admin),
                self.written(r.written, lang, admin=admin),
            )
        return Reply.text(T(lang, "pending_abandoned"), lang=lang)

    # ---- what is also announced ----------------------------------------------------------------

    def round_empty(self, r: RoundEmpty) -> Reply:
        """Said in the round's language."""
        return Reply.text(T(r.lang, "round_empty"), lang=r.lang)

    def votes_closed(self, r: VotesClosed, lang: Lang, *, admin: bool = False) -> Reply:
        winner = r.outcome.winner
        assert winner is not None
        blocks = [
            Block(T(lang, "result_heading"), "heading"),
            Block("\n".join(tally_lines(r.outcome.counts, lang))),
            Block(T(lang, "winner", title=winner.title, why=T(lang, f"win_{r.outcome.reason}"))),
        ]
        if not r.model_writes:
            wanted = T(lang, "submit_wanted", title=winner.title, n=r.number)
            blocks.append(Block(wanted + (T(lang, "admin_setting") if admin else "")))
        return Reply(blocks=tuple(blocks), lang=lang)

    def writing(self, lang: Lang, step: Writing) -> str:
        return T(lang, "writing_resumed" if step.resumed else "writing_progress", n=step.number)

    def writing_notice(self, lang: Lang, step: Writing) -> Reply:
        """The "writing chapter N…" message announced to the chat (no caller to stream to)."""
        return Reply.text(self.writing(lang, step), lang=lang)

    def written(self, r: ChapterSaved | WriteStalled, lang: Lang, *, admin: bool = False) -> Reply:
        """A round's chapter: saved, or the write stalled (the round waits)."""
        if isinstance(r, ChapterSaved):
            return self.chapters.saved_in(r, lang)
        return self.stalled(r, lang, admin=admin)

    def _opened(self, r: RoundOpened, lang: Lang, admin: bool) -> Reply:
        paragraphs = [
            T(lang, "round_opened", n=r.number, minutes=r.minutes),
            T(lang, "how_to_propose"),
        ]
        if not r.model_writes:
            notice = T(lang, "no_model_round")
            paragraphs.append(notice + (T(lang, "admin_setting") if admin else ""))
        return Reply.text(*paragraphs, lang=lang)

    def stalled(self, r: WriteStalled, lang: Lang, *, admin: bool = False) -> Reply:
        if r.reason == "no_model":
            text = T(lang, "submit_wanted", title=r.title, n=r.number)
            return Reply.text(text + (T(lang, "admin_setting") if admin else ""), lang=lang)
        if r.reason == "no_model_retry":
            text = T(lang, "pending_waiting", title=r.title, n=r.number)
            return Reply.error(text + (T(lang, "admin_setting") if admin else ""), lang=lang)
        if r.reason == "busy":
            return Reply.error(T(lang, "busy_writing_pending"), lang=lang)
        if r.reason == "llm":
            kind = failure_reason(r.kind, lang)
            return Reply.error(T(lang, "llm_failed_pending", kind=kind), lang=lang)
        return Reply.error(T(lang, "write_failed_pending"), lang=lang)


class ChapterPresenter:
    """The chapters' replies: a chapter inline or attached (`show_inline_chars`), its check and
    the blueprint updates it proposes, its versions, an export."""

    def __init__(self, settings: NovelSettings) -> None:
        self._settings = settings

    def saved(self, r: ChapterSaved, actor: Actor) -> Reply:
        """`/chapter submit`, `/chapter revise`: the chapter as saved, its check and updates."""
        return self.saved_in(r, actor.lang)

    def shown(self, r: ChapterView, actor: Actor) -> Reply:
        lang, v = actor.lang, r.version
        return self.chapter(lang, r.number, v.title, v.text, T(lang, "version_note", v=v.version))

    def history(self, r: History, actor: Actor) -> Reply:
        lang = actor.lang
        lines = []
        for v in r.versions:
            mark = T(lang, "current_mark") if v.version == r.current else ""
            lines.append(
                T(
                    lang,
                    "history_line",
                    v=v.version,
                    when=v.created_at.strftime("%Y-%m-%d %H:%M"),
                    who=v.author or "-",
                    why=_reason(lang, v.reason) or "-",
                    chars=len(v.text),
                )
                + mark
            )
        return Reply(
            blocks=(
                Block(T(lang, "history_heading", n=r.number), "heading"),
                Block("\n".join(lines)),
            ),
            lang=lang,
        )

    def rolled_back(self, r: RolledBack, actor: Actor) -> Reply:
        lang = actor.lang
        return Reply.text(T(lang, "rolled_back", n=r.number, v=r.version), lang=lang)

    def deleted(self, r: Deleted, actor: Actor) -> Reply:
        lang = actor.lang
        if r.renumbered:
            said = T(lang, "deleted_renumbered", n=r.number, count=r.renumbered)
            return Reply.text(said, lang=lang)
        return Reply.text(T(lang, "deleted", n=r.number), lang=lang)

    def exported(self, r: Exported, actor: Actor) -> Reply:
        lang = actor.lang
        said = T(lang, "exported", title=r.title, n=r.chapters, chars=r.chars)
        return Reply(
            blocks=(Block(said),),
            attachments=(Attachment(r.filename, r.data, r.mime),),
            lang=lang,
        )

    def chapter(self, lang: Lang, number: int, title: str, text: str, footer: str = "") -> Reply:
        """A chapter inline when short, else its opening and the whole as a .md attachment."""
        heading = T(lang, "chapter_heading", n=number, title=title)
        if len(text) <= self._settings.show_inline_chars:
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
        return Reply(
            blocks=tuple(blocks),
            attachments=(Attachment(f"chapter-{number:03d}.md", md),),
            lang=lang,
        )

    def saved_in(self, r: ChapterSaved, lang: Lang) -> Reply:
        if r.how == "generated":
            footer = T(lang, "indexed", chunks=r.chunks)
        elif r.how == "submitted":
            footer = T(lang, "submitted", n=r.number, chunks=r.chunks)
        else:
            footer = T(lang, "revised", v=r.version, chunks=r.chunks)
        chapter = self.chapter(lang, r.number, r.title, r.text, footer)
        return join(
            chapter,
            self.findings(lang, r.number, r.findings),
            self.changes(lang, r.changes),
        )

    def findings(self, lang: Lang, number: int, findings: Sequence[Finding]) -> Reply:
        if not findings:
            return Reply(blocks=(Block(T(lang, "check_clean"), "note"),), lang=lang)
        blocks = [Block(T(lang, "check_heading", n=len(findings)), "heading")]
        for f in findings:
            blocks.append(Block(f.quote, "quote"))
            if f.source == "model":
                kind = T(lang, f"kind_{f.kind}")
                rule = T(lang, "rule_model", kind=kind, rule=f.fields.get("rule") or "-")
                fix = f.fields.get("fix") or f.fields.get("rule") or ""
            else:
                rule = T(lang, f"rule_{f.kind}", **f.fields)
                fix = T(lang, f"fix_{f.kind}", **f.fields)
            blocks.append(Block(rule, "note"))
            blocks.append(Block(f"/chapter revise {number} {_one_line(fix)}", "code"))
        return Reply(blocks=tuple(blocks), lang=lang)

    def changes(self, lang: Lang, changes: Sequence[ProposedChange]) -> Reply:
        if not changes:
            return Reply(lang=lang)
        blocks = [Block(T(lang, "changes_heading"), "heading")]
        blocks += [Block(describe_change(lang, c), "item") for c in changes]
        blocks.append(Block(T(lang, "changes_help"), "note"))
        return Reply(blocks=tuple(blocks), lang=lang)


# ---- the blueprint -------------------------------------------------------------------------


def blueprint_shown(r: BlueprintShown, actor: Actor) -> Reply:
    lang = actor.lang
    blocks = [
        Block(T(lang, "blueprint_heading"), "heading"),
        *(Block(line) for line in r.lines),
    ]
    if r.pending:
        blocks.append(Block(T(lang, "pending_heading"), "heading"))
        blocks += [Block(describe_change(lang, c), "item") for c in r.pending]
        blocks.append(Block(T(lang, "changes_help"), "note"))
    return Reply(
        blocks=tuple(blocks),
        attachments=(Attachment("blueprint.json", r.json.encode("utf-8"), "application/json"),),
        lang=lang,
    )


def blueprint_saved(r: BlueprintSaved, actor: Actor) -> Reply:
    lang = actor.lang
    return Reply.text(T(lang, "blueprint_saved", title=r.title, chars=r.characters), lang=lang)


def blueprint_edited(r: BlueprintEdited, actor: Actor) -> Reply:
    lang = actor.lang
    return Reply.text(T(lang, "blueprint_edited", field=r.field, value=r.value), lang=lang)


def changes_decided(r: ChangesDecided, actor: Actor) -> Reply:
    lang = actor.lang
    blocks: list[Block] = []
    if r.changes:
        head = T(lang, "changes_accepted" if r.accepted else "changes_rejected")
        blocks.append(Block(head))
        blocks += [Block(describe_change(lang, c), "item") for c in r.changes]
    for change, err in r.skipped:
        why = err.text(lang) if isinstance(err, BlueprintError) else str(err)
        blocks.append(Block(T(lang, "change_skipped", id=change.id, why=why), "note"))
    return Reply(blocks=tuple(blocks), is_error=not r.changes, lang=lang)


def blueprint_history(r: BlueprintHistoryView, actor: Actor) -> Reply:
    lang = actor.lang
    if not r.entries and not r.decisions:
        return Reply.text(T(lang, "blueprint_history_empty"), lang=lang)
    blocks: list[Block] = []
    lines = [
        T(
            lang,
            "blueprint_history_line",
            when=when,
            who=who or "-",
            why=_reason(lang, why) or "-",
            title=title,
        )
        for when, who, why, title in r.entries
    ]
    if lines:
        blocks += [Block(T(lang, "blueprint_history_heading"), "heading")]
        blocks += [Block("\n".join(lines))]
    decided = [
        T(
            lang,
            "blueprint_decision_line",
            when=c.decided_at.strftime("%Y-%m-%d %H:%M") if c.decided_at else "-",
            who=c.decided_by or "-",
            status=T(lang, f"change_status_{c.status}"),
            change=describe_change(lang, c),
        )
        for c in r.decisions
    ]
    if decided:
        blocks += [Block(T(lang, "blueprint_decisions_heading"), "heading")]
        blocks += [Block("\n".join(decided))]
    return Reply(blocks=tuple(blocks), lang=lang)


# ---- the chat's stories ----------------------------------------------------------------------


def place_name(lang: Lang, platform: str, place: str, name: str) -> str:
    """Where a story lives, as its chat names it: a Discord channel or thread by name (else
    by mention, which Discord shows by name), a Telegram topic by name (else by number)."""
    kind = "topic" if platform == "telegram" else "channel"
    if name:
        return T(lang, f"place_{kind}", name=name)
    return T(lang, f"place_{kind}_id", id=place)


def story_opened(r: StoryOpened, actor: Actor) -> Reply:
    lang = actor.lang
    where = place_name(lang, actor.platform, actor.channel_id, r.place_name)
    return Reply.text(
        T(lang, "story_opened", title=r.title, where=where), T(lang, "story_next"), lang=lang
    )


def stories_listed(r: StoryList, actor: Actor) -> Reply:
    """`/novel list`: each story with where it lives, its chapters and its open round; the one
    this place uses marked."""
    lang = actor.lang
    lines = []
    for number, story in enumerate(r.stories, start=1):
        where = (
            place_name(lang, actor.platform, story.place, story.place_name)
            if story.place
            else T(lang, "story_default")
        )
        parts = [T(lang, "story_line", n=number, title=story.title, where=where)]
        parts.append(T(lang, "story_chapters", n=story.chapters))
        if story.phase is not None:
            parts.append(T(lang, f"phase_{story.phase.value}"))
        lines.append(" · ".join(parts) + (T(lang, "story_here_mark") if story.here else ""))
    return Reply(
        blocks=(
            Block(T(lang, "stories_heading", n=len(r.stories)), "heading"),
            Block("\n".join(lines)),
            Block(T(lang, "stories_note"), "note"),
        ),
        lang=lang,
    )


def describe_change(lang: Lang, proposed: ProposedChange) -> str:
    """A proposed blueprint change in one line: `change_<kind>`, worded with its fields."""
    change = proposed.change
    return T(
        lang, f"change_{change.kind}", id=proposed.id, name=change.name, **_change_fields(change)
    )


def _change_fields(change: BlueprintChange) -> dict[str, str]:
    """What each kind's line says besides the change's id and character."""
    if change.kind == "status":
        return {"before": change.before or "-", "value": change.value}
    if change.kind == "character":
        return {"desc": f"（{change.value[:60]}）" if change.value else ""}
    return {"other": change.other, "value": change.value}


_REASONS = {
    "generated": "reason_round",
    "submitted": "reason_submitted",
    "regenerated": "reason_regenerate",
    "uploaded": "reason_upload",
    "upload": "reason_upload_blueprint",
}


def _reason(lang: Lang, reason: str) -> str:
    """Stored reasons are codes (or a revision's own instructions): codes read as words."""
    key = _REASONS.get(reason)
    if key is not None:
        return T(lang, key)
    if reason.startswith("accept:"):
        return T(lang, "changes_accepted").rstrip("：:") + " #" + reason.removeprefix("accept:")
    if reason.startswith("edit:"):
        return reason.removeprefix("edit:")
    return reason


def tally_lines(counts: Sequence[tuple[Proposal, int]], lang: Lang) -> list[str]:
    """The count of each proposal, one line each, in ballot order."""
    unit = " vote(s)" if lang == "en" else " 票"
    return [f"{i}. {p.title} — {n}{unit}" for i, (p, n) in enumerate(counts, start=1)]


def _option_line(number: int, option: BallotOption, lang: Lang, counted: bool) -> str:
    """A proposal on one line: its number and title, its count (once voting opened), who
    proposed it."""
    unit = " vote(s)" if lang == "en" else " 票"
    by = "proposed by " if lang == "en" else "提议："
    count = f" — {len(option.voters)}{unit}" if counted else ""
    proposer = f" · {by}{option.proposer}" if option.proposer else ""
    return f"{number}. {option.title}{count}{proposer}"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


# ---- the room as the router sees it --------------------------------------------------------


class StoryPlaces(Protocol):
    """Which story a place holds and which chat a story belongs to (`novel.repo.StoryStore`,
    the writers' room's directory of stories)."""

    def story_at(self, place: Place) -> str: ...

    def chat_of(self, story_id: str) -> str: ...


def place_of(actor: Actor) -> Place:
    """Where the actor spoke, in the room's plain ids."""
    return Place(actor.chat_id, actor.channel_id, actor.parent_id, actor.channel_name)


def member_of(actor: Actor, places: StoryPlaces) -> Member:
    """The chat's person as the writers' room sees one: in the story the place they spoke in
    belongs to (`places`), with plain ids, the admin flag the router decided, the language,
    and the platform as the opaque `via` the room hands back."""
    return Member(
        chat_id=places.story_at(place_of(actor)),
        user_id=actor.user_id,
        user_name=actor.user_name,
        channel_id=actor.channel_id,
        is_admin=actor.is_admin,
        lang=actor.lang,
        via=actor.platform,
    )


def actor_of(member: Member, places: StoryPlaces) -> Actor:
    """Where a member spoke, as the router addresses it: the chat their story belongs to
    (`places`) and the place in it (roles are not the room's to know)."""
    return Actor(
        member.via,
        places.chat_of(member.chat_id),
        member.user_id,
        member.user_name,
        channel_id=member.channel_id,
        is_admin=member.is_admin,
        lang=member.lang,
    )


Send = Callable[[Actor, Reply], Awaitable[Posted]]


class Board(Ballots, Protocol):
    """The ballot board as announcements reach it: draw a ballot, redraw one's count."""

    def touch(self, round_id: str) -> None: ...


class NovelAnnouncer:
    """The writers' room's announce port (`novel.announce.Announce`): each announcement
    worded for the round's chat and sent through the router (`Router.send`, which runs the
    posted hooks: a ballot announced at a deadline is recorded like any other); a changed tally
    passed to the ballot board."""

    def __init__(
        self, presenter: NovelPresenter, send: Send, board: Board, places: StoryPlaces
    ) -> None:
        self._present = presenter
        self._send = send
        self._board = board
        self._places = places

    def _where(self, chat: Member) -> Actor:
        return actor_of(chat, self._places)

    async def round_empty(self, chat: Member, empty: RoundEmpty) -> None:
        await self._send(self._where(chat), self._present.round_empty(empty))

    async def proposals_closed(self, chat: Member, ballot: BallotView) -> None:
        where = self._where(chat)
        await self._send(where, self._board.reply(ballot, where))

    async def votes_closed(self, chat: Member, closed: VotesClosed) -> None:
        reply = self._present.votes_closed(closed, chat.lang, admin=chat.is_admin)
        await self._send(self._where(chat), reply)

    async def writing(self, chat: Member, step: Writing) -> None:
        await self._send(self._where(chat), self._present.writing_notice(chat.lang, step))

    async def written(self, chat: Member, written: ChapterSaved | WriteStalled) -> None:
        reply = self._present.written(written, chat.lang, admin=chat.is_admin)
        await self._send(self._where(chat), reply)

    def tally_changed(self, round_id: str) -> None:
        self._board.touch(round_id)
