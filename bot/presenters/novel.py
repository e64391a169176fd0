"""The one place the writers' room's results become `Reply`s: wording (via the catalogue in
`bot.presenters.novel_messages`), layout, ballots and polls, attachments for long chapters; the
vote codec (the ballot's buttons are encoded here, and decoded by `bot.commands.novel` with the
same functions); and `PresentedNovels`, the room as the router sees it (an `Actor` in, a `Reply`
out) over `novel.service.NovelService` (a `Member` in, a typed result out).

`NovelPresenter.reply(result, lang, admin=...)` covers every `novel.results.Result` (the match
ends in `assert_never`, so mypy checks it is complete); `refusal` covers `Refused`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, assert_never

from bot.actor import Actor
from bot.presenters.answer import failure_reason
from bot.presenters.novel_messages import T
from bot.reply import Attachment, Block, Poll, Progress, Reply
from novel import api
from novel.ballot import BallotEditor, BallotPost, native_ballot
from novel.blueprint import BlueprintError
from novel.consistency import Finding
from novel.evolve import BlueprintChange
from novel.member import Member
from novel.repo import ChangeRow
from novel.results import (
    Abandoned,
    BallotView,
    BlueprintEdited,
    BlueprintHistoryView,
    BlueprintSaved,
    BlueprintShown,
    ChangesDecided,
    ChapterResult,
    ChapterSaved,
    ChapterView,
    ClosedAndWritten,
    Deleted,
    Exported,
    History,
    ProposalSaved,
    Refused,
    Result,
    Revising,
    RolledBack,
    RoundEmpty,
    RoundOpened,
    RoundResult,
    SettingsSaved,
    VoteCast,
    VoteRetracted,
    VotesClosed,
    WorldResult,
    WriteStalled,
    Writing,
)
from novel.service import Announcement, FindBallot, NovelService
from novel.settings import NovelSettings
from novel.tally import option_label, tally_lines
from retrieval.i18n import Lang

# ---- the vote codec ---------------------------------------------------------------------------
# A vote button (or keyboard key) carries `vote:<round id>:<option>`.

VOTE = "vote"  # the action prefix of vote buttons


@dataclass(frozen=True, slots=True)
class VoteAction:
    round_id: str
    option: int  # 1-based, as printed on the ballot


def vote_prefix(round_id: str) -> str:
    """What a ballot option's action starts with; option i appends `i` (1-based)."""
    return f"{VOTE}:{round_id}:"


def encode_vote(round_id: str, option: int) -> str:
    return f"{vote_prefix(round_id)}{option}"


def decode_vote(action: str) -> VoteAction | None:
    """`vote:<round>:<n>` → VoteAction; None for anything else (another action, garbage)."""
    kind, _, payload = action.partition(":")
    return decode_vote_payload(payload) if kind == VOTE else None


def decode_vote_payload(payload: str) -> VoteAction | None:
    """`<round>:<n>` (what follows the `vote:` prefix) → VoteAction, or None."""
    round_id, _, option = payload.rpartition(":")
    if not option.isascii() or not option.isdigit() or not 0 < int(option) <= 1000:
        return None
    return VoteAction(round_id, int(option))


# ---- replies ----------------------------------------------------------------------------------


def join(*replies: Reply) -> Reply:
    """Several results in one message (e.g. the vote result and the chapter it produced)."""
    return Reply(
        blocks=tuple(b for r in replies for b in r.blocks),
        attachments=tuple(a for r in replies for a in r.attachments),
        is_error=any(r.is_error for r in replies),
        lang=replies[0].lang if replies else "zh",
    )


def _lang(value: str) -> Lang:
    return "en" if value == "en" else "zh"


class NovelPresenter:
    def __init__(self, settings: NovelSettings) -> None:
        self._settings = settings

    def refusal(self, lang: Lang, refused: Refused, *, admin: bool = False) -> Reply:
        fields = dict(refused.fields)
        if isinstance(fields.get("kind"), str):  # why the model failed, in words
            fields["kind"] = failure_reason(str(fields["kind"]), lang)
        if refused.key == "round_open" and isinstance(fields.get("phase"), str):
            fields["phase"] = T(lang, f"phase_{fields['phase']}")
        text = T(lang, refused.key, **fields)
        if admin and refused.key == "needs_model":  # the setting to fix, said once
            text += T(lang, "admin_setting")
        return Reply.error(text, lang=lang)

    def reply(self, result: Result, lang: Lang, *, admin: bool = False) -> Reply:
        match result:
            case (
                RoundOpened()
                | ProposalSaved()
                | BallotView()
                | VoteCast()
                | VoteRetracted()
                | RoundEmpty()
                | VotesClosed()
                | Abandoned()
                | SettingsSaved()
            ):
                return self._round_reply(result, lang, admin)
            case (
                ChapterSaved()
                | WriteStalled()
                | ChapterView()
                | History()
                | RolledBack()
                | Deleted()
                | Exported()
                | ClosedAndWritten()
            ):
                return self._chapter_reply(result, lang, admin)
            case (
                BlueprintShown()
                | BlueprintSaved()
                | BlueprintEdited()
                | ChangesDecided()
                | BlueprintHistoryView()
            ):
                return self._world_reply(result, lang)
            case _:
                assert_never(result)

    def _round_reply(self, result: RoundResult, lang: Lang, admin: bool) -> Reply:
        match result:
            case RoundOpened():
                return self._opened(result, lang, admin)
            case ProposalSaved():
                key = "proposal_added" if result.new else "proposal_updated"
                return Reply.text(
                    T(lang, key, title=result.title),
                    T(lang, "proposal_count", n=result.count, minutes=result.minutes),
                    lang=lang,
                )
            case BallotView():  # said in the round's language, wherever it is shown
                return self.ballot(result, _lang(result.round.lang))
            case VoteCast():
                said = {"new": "voted", "same": "vote_same", "changed": "vote_changed"}
                head = T(lang, said[result.change], n=result.option, title=result.title)
                return Reply.text(
                    head, "\n".join(tally_lines(result.outcome.counts, lang)), lang=lang
                )
            case VoteRetracted():
                key = "vote_retracted" if result.removed else "vote_not_retracted"
                return Reply.text(T(lang, key), lang=lang)
            case RoundEmpty():  # said in the round's language
                return Reply.text(T(_lang(result.lang), "round_empty"), lang=_lang(result.lang))
            case VotesClosed():
                return self._result(result, lang, admin)
            case Abandoned():
                return Reply.text(T(lang, "pending_abandoned"), lang=lang)
            case SettingsSaved():
                style = T(lang, f"style_{result.style}")
                voters = T(lang, "voters_shown" if result.show_voters else "voters_hidden")
                return Reply.text(T(lang, "ballot_settings", style=style, voters=voters), lang=lang)
            case _:
                assert_never(result)

    def _chapter_reply(self, result: ChapterResult, lang: Lang, admin: bool) -> Reply:
        match result:
            case ChapterSaved():
                return self._saved(result, lang)
            case WriteStalled():
                return self.stalled(result, lang, admin=admin)
            case ChapterView():
                v = result.version
                return self.chapter(
                    lang, result.number, v.title, v.text, T(lang, "version_note", v=v.version)
                )
            case History():
                return self._history(result, lang)
            case RolledBack():
                return Reply.text(
                    T(lang, "rolled_back", n=result.number, v=result.version), lang=lang
                )
            case Deleted():
                if result.renumbered:
                    said = T(lang, "deleted_renumbered", n=result.number, count=result.renumbered)
                    return Reply.text(said, lang=lang)
                return Reply.text(T(lang, "deleted", n=result.number), lang=lang)
            case Exported():
                return self._exported(result, lang)
            case ClosedAndWritten():
                return join(
                    self._result(result.closed, lang, admin),
                    self._chapter_reply(result.written, lang, admin),
                )
            case _:
                assert_never(result)

    def _world_reply(self, result: WorldResult, lang: Lang) -> Reply:
        match result:
            case BlueprintShown():
                return self._blueprint(result, lang)
            case BlueprintSaved():
                return Reply.text(
                    T(lang, "blueprint_saved", title=result.title, chars=result.characters),
                    lang=lang,
                )
            case BlueprintEdited():
                return Reply.text(
                    T(lang, "blueprint_edited", field=result.field, value=result.value), lang=lang
                )
            case ChangesDecided():
                return self._decided(result, lang)
            case BlueprintHistoryView():
                return self._blueprint_history(result, lang)
            case _:
                assert_never(result)

    def _exported(self, result: Exported, lang: Lang) -> Reply:
        said = T(lang, "exported", title=result.title, n=result.chapters, chars=result.chars)
        return Reply(
            blocks=(Block(said),),
            attachments=(Attachment(result.filename, result.data, result.mime),),
            lang=lang,
        )

    # ---- rounds --------------------------------------------------------------------------------

    def _opened(self, r: RoundOpened, lang: Lang, admin: bool) -> Reply:
        paragraphs = [
            T(lang, "round_opened", n=r.number, minutes=r.minutes),
            T(lang, "how_to_propose"),
        ]
        if not r.model_writes:
            notice = T(lang, "no_model_round")
            paragraphs.append(notice + (T(lang, "admin_setting") if admin else ""))
        return Reply.text(*paragraphs, lang=lang)

    def ballot(self, view: BallotView, lang: Lang) -> Reply:
        """The ballot message: options with the running count (and voters' names when the chat
        shows them); the poll/keyboard while open, the final count once closed."""
        counts = {p.id: 0 for p in view.proposals}
        names: dict[int, list[str]] = {p.id: [] for p in view.proposals}
        for v in view.votes:
            counts[v.proposal_id] = counts.get(v.proposal_id, 0) + 1
            names.setdefault(v.proposal_id, []).append(v.user_name or v.user_id)
        unit = " vote(s)" if lang == "en" else " 票"
        lines = []
        by = "proposed by " if lang == "en" else "提议："
        for i, p in enumerate(view.proposals, start=1):
            line = f"{i}. {p.title} — {counts[p.id]}{unit}"
            if view.show_voters and names[p.id]:
                line += "（" + "、".join(names[p.id]) + "）"
            detail = " · ".join(
                x for x in (p.summary, f"{by}{p.user_name}" if p.user_name else "") if x
            )
            lines.append(line + (f"\n   {detail}" if detail else ""))
        total = T(lang, "ballot_total", n=len(view.votes))
        if view.closed:
            return Reply(
                blocks=(
                    Block(T(lang, "ballot_closed_heading"), "heading"),
                    Block("\n".join(lines)),
                    Block(total, "note"),
                ),
                lang=lang,
            )
        native = native_ballot(view.style, view.round.platform, len(view.proposals))
        help_key = "ballot_poll_help" if native else "ballot_help"
        return Reply(
            blocks=(
                Block(T(lang, "ballot_heading"), "heading"),
                Block("\n".join(lines)),
                Block(total + T(lang, help_key, minutes=view.minutes), "note"),
            ),
            poll=Poll(
                question=T(lang, "ballot_question"),
                options=tuple(option_label(p) for p in view.proposals),
                action_prefix=vote_prefix(view.round.id),
                round_id=view.round.id,
                native=native,
            ),
            lang=lang,
        )

    def _result(self, r: VotesClosed, lang: Lang, admin: bool) -> Reply:
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

    def blueprint_error(self, lang: Lang, err: BlueprintError) -> Reply:
        return Reply.error(err.text(lang), lang=lang)

    def progress(self, lang: Lang, step: Writing | Revising | str) -> str:
        """A step of a long request as the caller's progress line (a draft streams as is)."""
        match step:
            case Writing():
                return self.writing(lang, step)
            case Revising():
                return T(lang, "revising_progress", n=step.number)
            case str():
                return step
            case _:
                assert_never(step)

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

    # ---- chapters ------------------------------------------------------------------------------

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

    def _saved(self, r: ChapterSaved, lang: Lang) -> Reply:
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

    def changes(self, lang: Lang, changes: Sequence[ChangeRow]) -> Reply:
        if not changes:
            return Reply(lang=lang)
        blocks = [Block(T(lang, "changes_heading"), "heading")]
        blocks += [Block(describe_change(lang, c), "item") for c in changes]
        blocks.append(Block(T(lang, "changes_help"), "note"))
        return Reply(blocks=tuple(blocks), lang=lang)

    def _history(self, r: History, lang: Lang) -> Reply:
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

    # ---- blueprint -----------------------------------------------------------------------------

    def _blueprint(self, r: BlueprintShown, lang: Lang) -> Reply:
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

    def _decided(self, r: ChangesDecided, lang: Lang) -> Reply:
        blocks: list[Block] = []
        if r.changes:
            head = T(lang, "changes_accepted" if r.accepted else "changes_rejected")
            blocks.append(Block(head))
            blocks += [Block(describe_change(lang, c), "item") for c in r.changes]
        for change, err in r.skipped:
            why = err.text(lang) if isinstance(err, BlueprintError) else str(err)
            blocks.append(Block(T(lang, "change_skipped", id=change.id, why=why), "note"))
        return Reply(blocks=tuple(blocks), is_error=not r.changes, lang=lang)

    def _blueprint_history(self, r: BlueprintHistoryView, lang: Lang) -> Reply:
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


def describe_change(lang: Lang, row: ChangeRow) -> str:
    """A proposed blueprint change in one line: `change_<kind>`, worded with its fields."""
    change = BlueprintChange.from_row(row.kind, row.payload)
    return T(lang, f"change_{change.kind}", id=row.id, name=change.name, **_change_fields(change))


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


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


# ---- the room as the router sees it --------------------------------------------------------


# What the chat layer knows of a person and the writers' room does not: the platform's role
# names, the kind of chat and the role the permission table read (the room gets `is_admin`).
CHAT_ONLY = ("roles", "kind", "role")


def member_of(actor: Actor) -> Member:
    """The chat's person as the writers' room sees one: an Actor's fields but those only the
    chat layer reads (`CHAT_ONLY`), from which the router already decided `is_admin`."""
    fields = asdict(actor)
    for name in CHAT_ONLY:
        del fields[name]
    return Member(**fields)


def actor_of(member: Member) -> Actor:
    return Actor(**asdict(member))  # a Member's fields are an Actor's, roles aside


AnnounceReply = Callable[[Actor, Reply], Awaitable[None]]
EditBallotReply = Callable[[BallotPost, Reply], Awaitable[None]]


def announcer(
    presenter: NovelPresenter, announce: AnnounceReply
) -> Callable[[Member, Announcement], Awaitable[None]]:
    """The service's `announce`: each announcement worded for the round's chat."""

    async def say(target: Member, said: Announcement) -> None:
        if isinstance(said, Writing):
            reply = presenter.writing_notice(target.lang, said)
        else:
            reply = presenter.reply(said, target.lang, admin=target.is_admin)
        await announce(actor_of(target), reply)

    return say


def ballot_editor(
    presenter: NovelPresenter,
    edit: EditBallotReply,
    interval_s: float,
    *,
    now: Callable[[], float],
    sleep: Callable[[float], Awaitable[object]],
) -> Callable[[FindBallot], BallotEditor[Reply]]:
    """The service's `ballots`: posted ballots edited with the presented running count."""

    def build(find: FindBallot) -> BallotEditor[Reply]:
        async def render(round_id: str) -> tuple[BallotPost, Reply] | None:
            found = await find(round_id)
            if found is None:
                return None
            post, view = found
            return post, presenter.ballot(view, _lang(view.round.lang))

        return BallotEditor(render, edit, interval_s, now=now, sleep=sleep)

    return build


class NovelReplies(Protocol):
    """The writers' room as the commands call it (tests record the calls with a plain class)."""

    async def handle(
        self, actor: Actor, request: api.NovelRequest, progress: Progress | None = None
    ) -> Reply: ...


class PresentedNovels:
    """`novel.api.Novels` for the router: an `Actor` in, the service's result worded out."""

    def __init__(self, service: NovelService, presenter: NovelPresenter) -> None:
        self.service = service
        self.present = presenter

    async def handle(
        self, actor: Actor, request: api.NovelRequest, progress: Progress | None = None
    ) -> Reply:
        lang = actor.lang
        steps = None if progress is None else self._steps(lang, progress)
        try:
            result = await self.service.handle(member_of(actor), request, steps)
        except Refused as refused:
            return self.present.refusal(lang, refused, admin=actor.is_admin)
        except BlueprintError as err:
            return self.present.blueprint_error(lang, err)
        return self.present.reply(result, lang, admin=actor.is_admin)

    def _steps(
        self, lang: Lang, progress: Progress
    ) -> Callable[[Writing | Revising | str], Awaitable[None]]:
        async def step(said: Writing | Revising | str) -> None:
            await progress(self.present.progress(lang, said))

        return step

    async def ballot_posted(self, post: BallotPost) -> None:
        await self.service.ballot_posted(post)
