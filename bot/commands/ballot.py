"""The ballot room's commands: `/settings ballot`, the vote buttons and keys, native polls'
answers, and the hook that tells the board where a ballot was posted."""

from __future__ import annotations

from bot.ballot.board import BALLOT_STYLES, VOTERS
from bot.ballot.codec import VoteButton
from bot.ballot.room import BallotReplies, BallotSettings
from bot.registry import (
    Action,
    Call,
    Command,
    Help,
    Param,
    PollAnswer,
    Registry,
    UsageError,
    Values,
)
from bot.reply import Reply

_CHOICES = BALLOT_STYLES + VOTERS


def _asked(values: Values) -> BallotSettings:
    chosen = [values.text(name) for name in ("setting", "setting2") if values.has(name)]
    styles = [c for c in chosen if c in BALLOT_STYLES]
    voters = [c for c in chosen if c in VOTERS]
    if len(styles) > 1 or len(voters) > 1:
        raise UsageError.say("每项只能选一个", "Choose one value for each setting")
    return BallotSettings(next(iter(styles), None), next(iter(voters), None))


def ballot_setting(ballots: BallotReplies) -> Command[BallotSettings]:
    """`/settings ballot poll|keyboard shown|hidden`: one ballot per chat, voters' names."""

    async def run(call: Call, asked: BallotSettings) -> Reply:
        return await ballots.settings(call.actor, asked)

    return Command(
        help=Help(
            "ballot",
            "投票方式：poll 原生投票 · keyboard 按钮；shown/hidden 显示或隐藏投票人",
            "Ballot: poll (native) · keyboard (buttons); shown/hidden voters' names",
            "/settings ballot keyboard shown",
        ),
        params=(
            Param("setting", "设置", "setting", "choice", required=False, choices=_CHOICES),
            Param("setting2", "设置", "setting", "choice", required=False, choices=_CHOICES),
        ),
        parse=_asked,
        run=run,
        rate_limited=False,
    )


def register_ballots(registry: Registry, ballots: BallotReplies) -> Registry:
    """What a ballot brings back to the router: its buttons and keys (`VoteButton`, the
    action that builds them parses them), its native poll's answers, and every posted reply
    (the board keeps where a ballot went)."""

    async def vote(call: Call, button: VoteButton) -> Reply:
        return await ballots.vote(call.actor, button)

    async def answer(call: Call, poll: PollAnswer) -> Reply:
        return await ballots.poll_answer(call.actor, poll)

    registry.add_action(Action(prefix=VoteButton.PREFIX, decode=VoteButton.parse, run=vote))
    return registry.answer_polls(answer, place=ballots.poll_place).on_posted(ballots.posted)
