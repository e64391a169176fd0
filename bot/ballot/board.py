"""The ballot board: what a ballot looks like in each chat, where each one was posted, and its
running count kept current.

- the look: each chat's style (`poll`: the platform's native poll where it has one;
  `keyboard`: buttons) and whether voters' names are shown, set with `/settings ballot`;
  Telegram groups default to the poll, every other chat to buttons. `native_ballot` decides
  once whether a ballot goes out as a native poll (Telegram's take 2–12 options); the help text
  says what it decided and the renderers follow the flag;
- the posted ballots: the router's `posted` hook tells the board every reply that carried a
  ballot (`posted`), and the board keeps where it went (`bot.ballot.store`);
- the count: when the writers' room announces that a tally changed (`touch`), the throttled
  editor (`bot.ballot.editor`) redraws the ballot from the room's view and edits the message,
  at most once per interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.actor import Actor
from bot.ballot.codec import VoteButton
from bot.ballot.editor import BallotEditor
from bot.ballot.store import BallotStore, PostedBallot
from bot.presenters.novel_messages import T
from bot.reply import Block, Button, Poll, Posted, Reply
from kernel.i18n import Lang
from novel.results import BallotView
from retrieval.clock import Clock
from retrieval.lifecycle import Closing

log = logging.getLogger(__name__)

BallotStyle = Literal["poll", "keyboard"]
BALLOT_STYLES: tuple[BallotStyle, ...] = ("poll", "keyboard")
VOTERS: tuple[str, ...] = ("shown", "hidden")
STYLE_KEY = "ballot_style"
VOTERS_KEY = "ballot_voters"

# Telegram's native poll takes 2–12 options; it is the only platform with one here.
POLL_MIN_OPTIONS = 2
POLL_MAX_OPTIONS = 12
NATIVE_POLL_PLATFORMS = frozenset({"telegram"})
LABEL_LIMIT = 80


def native_ballot(style: BallotStyle, platform: str, options: int) -> bool:
    """True: the ballot is the platform's native poll; False: buttons / a keyboard."""
    return (
        style == "poll"
        and platform in NATIVE_POLL_PLATFORMS
        and POLL_MIN_OPTIONS <= options <= POLL_MAX_OPTIONS
    )


def default_style(platform: str) -> BallotStyle:
    """Telegram groups get the native poll; everywhere else the buttons/keyboard."""
    return "poll" if platform in NATIVE_POLL_PLATFORMS else "keyboard"


def option_label(title: str, limit: int = LABEL_LIMIT) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Look:
    """How a chat shows its ballots."""

    style: BallotStyle
    show_voters: bool


class Views(Protocol):
    """The writers' room's ballot as it stands (`novel.rounds.BallotViews`)."""

    async def view(self, round_id: str) -> BallotView | None: ...


class Edit(Protocol):
    """Replace a posted message (`bot.router.Router.edit`)."""

    async def __call__(
        self, target: Actor, message_id: str, reply: Reply, *, poll_message_id: str = ""
    ) -> None: ...


class BallotBoard(Closing):
    """`chat_of`: the chat a story belongs to (`novel.repo.StoryStore.chat_of`): a ballot's
    view names its round's story, a posted ballot the chat it went to."""

    def __init__(
        self,
        store: BallotStore,
        views: Views,
        edit: Edit,
        *,
        chat_of: Callable[[str], str],
        interval_s: float,
        clock: Clock,
    ) -> None:
        self._store = store
        self._views = views
        self._chat_of = chat_of
        self._edit_message = edit
        self._clock = clock
        self.editor: BallotEditor[Reply] = BallotEditor(
            self._render, self._edit, interval_s, now=clock.monotonic, sleep=clock.sleep
        )

    # ---- the look ------------------------------------------------------------------------------

    def look(self, chat_id: str, platform: str) -> Look:
        style = self._store.settings.get((chat_id, STYLE_KEY))
        chosen = next((s for s in BALLOT_STYLES if s == style), default_style(platform))
        return Look(chosen, self._store.settings.get((chat_id, VOTERS_KEY)) == "shown")

    async def set_look(self, chat_id: str, style: BallotStyle | None, voters: str | None) -> None:
        if style is not None:
            await self._store.set_setting(chat_id, STYLE_KEY, style)
        if voters is not None:
            await self._store.set_setting(chat_id, VOTERS_KEY, voters)

    def reply(self, view: BallotView, where: Actor) -> Reply:
        """The ballot message in the round's language: options with the running count (and
        voters' names when the chat shows them); the poll/keyboard while open, the final count
        once closed."""
        lang = view.lang
        look = self.look(where.chat_id, where.platform)
        lines = [_line(i, o.title, len(o.voters), lang) for i, o in enumerate(view.options, 1)]
        for i, o in enumerate(view.options):
            if look.show_voters and o.voters:
                lines[i] += "（" + "、".join(o.voters) + "）"
            by = "proposed by " if lang == "en" else "提议："
            detail = " · ".join(
                x for x in (o.summary, f"{by}{o.proposer}" if o.proposer else "") if x
            )
            lines[i] += f"\n   {detail}" if detail else ""
        total = T(lang, "ballot_total", n=view.votes)
        if view.closed:
            heading, note = T(lang, "ballot_closed_heading"), total
            return Reply(blocks=_blocks(heading, lines, note), lang=lang)
        native = native_ballot(look.style, where.platform, len(view.options))
        help_key = "ballot_poll_help" if native else "ballot_help"
        note = total + T(lang, help_key, minutes=view.minutes)
        options = tuple(
            Button(option_label(o.title), VoteButton(view.round_id, i).action)
            for i, o in enumerate(view.options, start=1)
        )
        poll = Poll(T(lang, "ballot_question"), options, view.round_id, native)
        return Reply(blocks=_blocks(T(lang, "ballot_heading"), lines, note), poll=poll, lang=lang)

    # ---- the posted ballots and their count ----------------------------------------------------

    async def posted(self, where: Actor, reply: Reply, posted: Posted) -> None:
        """The router's `posted` hook: a reply that carried a round's ballot went out. Remember
        where (its message is edited with the running count; a native poll's answers find
        their round by the poll's id), and show votes cast before it was known. A ballot of
        another chat's round, or of a round that is gone, is ignored."""
        ballot = posted_ballot(where, reply, posted)
        if ballot is None:
            return
        view = await self._views.view(ballot.round_id)
        if view is None or self._chat_of(view.chat_id) != ballot.chat_id:
            log.warning(
                "ballot of round %s posted in chat %s ignored", ballot.round_id, where.chat_id
            )
            return
        await self._store.save(ballot, self._clock.now())
        await self.editor.posted(ballot.round_id, counted=view.votes > 0)

    def touch(self, round_id: str) -> None:
        """The count of round `round_id` changed: its posted ballot is redrawn (throttled)."""
        self.editor.touch(round_id)

    async def find_poll(self, poll_id: str) -> PostedBallot | None:
        return await self._store.by_poll(poll_id)

    async def story_of(self, round_id: str) -> str | None:
        """The story round `round_id` is of (None when there is no such round)."""
        view = await self._views.view(round_id)
        return view.chat_id if view is not None else None

    async def _render(self, round_id: str) -> tuple[PostedBallot, Reply] | None:
        ballot = await self._store.ballot(round_id)
        view = await self._views.view(round_id) if ballot is not None else None
        if ballot is None or view is None:
            return None
        return ballot, self.reply(view, _place(ballot, view.lang))

    async def _edit(self, ballot: PostedBallot, reply: Reply) -> None:
        await self._edit_message(
            _place(ballot, reply.lang),
            ballot.message_id,
            reply,
            poll_message_id=ballot.poll_message_id,
        )

    async def idle(self) -> None:
        """Wait until every scheduled edit went out (tests, shutdown)."""
        await self.editor.idle()

    async def close(self) -> None:
        await self.editor.close()


def posted_ballot(where: Actor, reply: Reply, posted: Posted) -> PostedBallot | None:
    """The ballot a delivery posted (the message that shows its count: the last, which
    carries the buttons; its native poll), or None when it posted none."""
    poll = reply.poll
    if poll is None or not poll.round_id or not posted.message_ids:
        return None
    return PostedBallot(
        poll.round_id,
        where.platform,
        where.chat_id,
        where.channel_id,
        posted.message_ids[-1],
        posted.poll_id,
        posted.poll_message_id,
    )


def _place(ballot: PostedBallot, lang: Lang) -> Actor:
    """The chat a ballot was posted in, as the router's `edit` addresses it."""
    return Actor(ballot.platform, ballot.chat_id, "", channel_id=ballot.channel_id, lang=lang)


def _line(number: int, title: str, votes: int, lang: Lang) -> str:
    unit = " vote(s)" if lang == "en" else " 票"
    return f"{number}. {title} — {votes}{unit}"


def _blocks(heading: str, lines: list[str], note: str) -> tuple[Block, ...]:
    return (Block(heading, "heading"), Block("\n".join(lines)), Block(note, "note"))
