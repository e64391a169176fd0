"""The vote codec every transport shares, the phase machine, and the throttled ballot editor
(its clock and sleep injected: no wall time)."""

from __future__ import annotations

import asyncio

import pytest

from bot.ballot.codec import PollVote, VoteButton
from bot.ballot.editor import BallotEditor
from bot.ballot.store import PostedBallot
from bot.registry import PollAnswer
from bot.reply import Reply
from novel.phase import Event, IllegalMove, Phase, sources, transition


def test_vote_codec_round_trips_and_rejects_garbage() -> None:
    action = VoteButton("r-7", 3).action
    assert action == "vote:r-7:3"
    decoded = VoteButton.read(action)
    assert decoded is not None and (decoded.round_id, decoded.option) == ("r-7", 3)
    for bad in (
        "",
        "vote",
        "vote:r1:",
        "vote:r1:x",
        "vote:r1:0",
        "vote:r1:-1",
        "close:r1:2",
        "vote:r1:２",
        "vote:r1:99999",
    ):
        assert VoteButton.read(bad) is None, bad


def test_a_native_polls_answer_reads_as_ballot_options() -> None:
    """Platforms count a poll's options from 0, the ballot from 1; none is a withdrawal."""
    chosen = PollVote.of(PollAnswer("p-1", (1,)))
    assert chosen == PollVote("p-1", (2,)) and not chosen.withdrawn
    assert PollVote.of(PollAnswer("p-1", ())).withdrawn


def test_one_transition_function() -> None:
    assert transition(Phase.PROPOSAL, Event.CLOSE_PROPOSALS) == Phase.VOTING
    assert transition(Phase.VOTING, Event.CLOSE_VOTES) == Phase.WRITING
    assert transition(Phase.WRITING, Event.STALL) == Phase.PENDING
    assert transition(Phase.PENDING, Event.WRITE) == Phase.WRITING
    assert transition(Phase.WRITING, Event.SAVE) == Phase.DONE
    assert transition(Phase.PENDING, Event.ABANDON) == Phase.ABANDONED
    assert transition(Phase.VOTING, Event.NO_PROPOSALS) == Phase.EMPTY
    with pytest.raises(IllegalMove):
        transition(Phase.DONE, Event.WRITE)
    with pytest.raises(IllegalMove):
        transition(Phase.PROPOSAL, Event.SAVE)
    assert sources(Event.SAVE) == (Phase.WRITING,)


class FakeTime:
    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []
        self.gate = asyncio.Event()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await self.gate.wait()  # the test decides when the interval is over
        self.t += seconds


async def test_editor_coalesces_a_burst_within_the_interval() -> None:
    time = FakeTime()
    count = {"n": 0}
    edits: list[str] = []
    post = PostedBallot("r1", "telegram", "-1", "", "55")

    async def render(round_id: str) -> tuple[PostedBallot, Reply]:
        return post, Reply.text(f"{round_id}: {count['n']} 票", lang="zh")

    async def edit(where: PostedBallot, reply: Reply) -> None:
        edits.append(reply.plain())

    editor = BallotEditor(render, edit, interval_s=5.0, now=time.now, sleep=time.sleep)
    count["n"] = 1
    editor.touch("r1")
    await asyncio.sleep(0)  # the first edit goes out at once
    for n in range(2, 11):  # nine more votes inside the interval
        count["n"] = n
        editor.touch("r1")
    await asyncio.sleep(0)
    assert edits == ["r1: 1 票"] and time.slept == [5.0]
    time.gate.set()
    await editor.idle()
    assert edits == ["r1: 1 票", "r1: 10 票"]  # one more edit, with the latest count
    assert editor.edits == 2


async def test_editor_survives_a_failing_edit_and_a_vanished_ballot() -> None:
    time = FakeTime()
    time.gate.set()
    calls: list[str] = []

    async def render(round_id: str) -> tuple[PostedBallot, Reply] | None:
        return (
            None
            if round_id == "gone"
            else (PostedBallot(round_id, "d", "g", "c", "m"), Reply(lang="zh"))
        )

    async def edit(where: PostedBallot, reply: Reply) -> None:
        calls.append(where.round_id)
        raise RuntimeError("message deleted")

    editor = BallotEditor(render, edit, interval_s=0.0, now=time.now, sleep=time.sleep)
    editor.touch("gone")
    editor.touch("r2")
    await editor.idle()
    assert calls == ["r2"] and editor.edits == 0
    editor.touch("r2")  # still works after a failure
    await editor.idle()
    assert calls == ["r2", "r2"]
    await editor.close()
