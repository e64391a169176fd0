"""Rounds on the real stack with an injected clock: one tally fed by commands, buttons and a
native poll (retractions included), the poll ↔ round mapping surviving a restart, the ballot
edited with the running count, deadlines by the clock, restarts during voting and mid-write,
and a deadline colliding with an active write."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.actor import Actor
from bot.presenters.novel import member_of
from kernel.refusal import Refused
from novel import api
from novel.phase import Phase
from novel.settings import NovelSettings
from novel.summary import SUMMARY_SYSTEM
from retrieval.llm.scripted import ScriptedLLM
from retrieval.ports import LLMRequest, LLMResponse, OnDelta
from tests.novel_room import ADMIN, SLOW, FakeClock, Room, fake_model, member

TG = Actor("telegram", "-100", "admin", "管理员", is_admin=True)


def tg(i: int) -> Actor:
    return Actor("telegram", "-100", f"u{i}", f"成员{i}")


def poll_voter(i: int) -> Actor:
    """A poll answer carries no chat: the transport knows only the user."""
    return Actor("telegram", "", f"u{i}", f"成员{i}")


async def _to_voting(room: Room, actor: Actor, *titles: str) -> str:
    s = room.service
    assert not (await s.handle(actor, api.NextRound())).is_error
    for i, title in enumerate(titles, start=1):
        who = Actor(actor.platform, actor.chat_id, f"u{i}", f"成员{i}", actor.channel_id)
        assert not (await s.handle(who, api.Propose(title))).is_error
    ballot = await s.handle(actor, api.CloseRound())
    assert ballot.poll is not None, ballot.plain()
    return ballot.poll.round_id


async def test_one_tally_from_commands_buttons_and_poll_with_retraction(tmp_path: Path) -> None:
    async with Room(tmp_path, None, edits=True) as room:
        s = room.service
        rid = await _to_voting(room, TG, "夜渡", "山门")
        await room.post_ballot(TG, rid, "501", "poll-9", "502")
        await s.handle(tg(1), api.ChooseOption(1))  # /chapter vote 1
        await s.vote(tg(2), 2, rid)  # a button
        poll = await s.poll_answer(poll_voter(3), "poll-9", (2,))
        assert not poll.is_error and "山门" in poll.plain()
        assert await room.repo.rounds.tally(rid) == {
            p.id: n for p, n in zip(await room.repo.rounds.proposals(rid), (1, 2), strict=True)
        }
        # A retraction in the poll withdraws the poll vote …
        gone = await s.poll_answer(poll_voter(3), "poll-9", ())
        assert "撤回" in gone.plain()
        # … but not a vote the member cast by button after answering the poll.
        await s.poll_answer(poll_voter(2), "poll-9", (1,))
        await s.vote(tg(2), 2, rid)
        kept = await s.poll_answer(poll_voter(2), "poll-9", ())
        assert "仍然有效" in kept.plain()
        tally = await room.repo.rounds.tally(rid)
        assert sorted(tally.values()) == [1, 1]
        unknown = await s.poll_answer(poll_voter(4), "poll-unknown", (1,))
        assert unknown.is_error and "已经结束的一轮" in unknown.plain()
        # The ballot message was edited with the running count (one tally everywhere).
        await room.board.idle()
        edited = []
        while not room.edited.empty():
            edited.append(await room.edited.get())
        where, message_id, poll_message_id, last = edited[-1]
        assert (where.chat_id, message_id, poll_message_id) == ("-100", "501", "502")
        assert "1. 夜渡 — 1 票" in last.plain() and "2. 山门 — 1 票" in last.plain()
        assert last.poll is not None and last.poll.native  # Telegram default: the native poll


async def test_voter_names_follow_the_chat_setting(tmp_path: Path) -> None:
    async with Room(tmp_path, None, edits=True) as room:
        s = room.service
        rid = await _to_voting(room, ADMIN, "夜渡", "山门")
        await room.post_ballot(ADMIN, rid, "m1")
        await s.handle(member(5), api.ChooseOption(2))
        refused = await s.ballot_settings(member(5), voters="shown")
        assert refused.is_error and "管理员" in refused.plain()
        bad = await s.ballot_settings(ADMIN, style="carrier-pigeon")
        assert bad.is_error and "poll" in bad.plain() and "keyboard" in bad.plain()
        ok = await s.ballot_settings(ADMIN, style="keyboard", voters="shown")
        assert "按钮" in ok.plain() and "显示姓名" in ok.plain()
        view = await room.novel.rounds.ballots.view(rid)
        assert view is not None
        shown = room.board.reply(view, ADMIN)
        assert "2. 山门 — 1 票（成员5）" in shown.plain()
        assert shown.poll is not None and not shown.poll.native
        await s.ballot_settings(ADMIN, voters="hidden")
        view = await room.novel.rounds.ballots.view(rid)
        assert view is not None and "成员5" not in room.board.reply(view, ADMIN).blocks[1].text


async def test_late_proposal_and_vote_by_the_clock_before_the_job_fires(tmp_path: Path) -> None:
    async with Room(tmp_path, None) as room:
        s = room.service
        await s.handle(ADMIN, api.NextRound())
        room.clock.advance(minutes=60, seconds=1)  # past the deadline; the job has not run
        late = await s.handle(member(1), api.Propose("迟到的提议"))
        assert late.is_error and "提议阶段已经结束" in late.plain()
        assert await room.repo.rounds.proposals((await room.repo.rounds.open_round("g1")).id) == []  # type: ignore[union-attr]
        empty = await room.fire()
        assert len(empty) == 1
        _, announced = await room.next_announcement()
        assert "没有收到任何提议" in announced.plain()

        rid = await _to_voting(room, ADMIN, "夜渡")
        room.clock.advance(minutes=60)  # exactly at the vote deadline
        late_vote = await s.vote(member(2), 1, rid)
        assert late_vote.is_error and "投票已经截止" in late_vote.plain()
        assert await room.repo.rounds.tally(rid) == {}


async def test_restart_during_voting_keeps_votes_and_the_poll_mapping(tmp_path: Path) -> None:
    clock = FakeClock()
    llm = ScriptedLLM([fake_model], repeat_last=True)
    async with Room(tmp_path, llm, SLOW, clock) as room:
        rid = await _to_voting(room, TG, "夜渡", "山门")
        await room.post_ballot(TG, rid, "501", "poll-1", "502")
        await room.service.handle(tg(1), api.ChooseOption(1))
    clock.advance(minutes=30)
    async with Room(tmp_path, llm, SLOW, clock) as room:
        s = room.service
        # The poll answer after the restart finds its round (persisted mapping) and counts.
        for i in (2, 3):
            r = await s.poll_answer(poll_voter(i), "poll-1", (2,))
            assert not r.is_error, r.plain()
        # The deadline was never re-scheduled: the scheduler's job store kept it.
        assert s.service.deadlines.when(f"round:{rid}") is not None
        await room.fire(minutes=31)
        _, result = await room.next_announcement()
        assert "胜出：《山门》" in result.plain() and "得票最多" in result.plain()
        await room.wait_for(lambda r: "第 1 章" in r.plain() and "山门这一夜" in r.plain())


class BlockingLLM(ScriptedLLM):
    """Writes block until `gate` opens; summaries and checks answer at once."""

    def __init__(self) -> None:
        super().__init__([fake_model], repeat_last=True)
        self.gate = asyncio.Event()
        self.writing = asyncio.Event()

    async def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        if request.system != SUMMARY_SYSTEM and "本章目标" in request.messages[-1].content:
            self.writing.set()
            await self.gate.wait()
        return await super().complete(request, on_delta)


async def test_restart_mid_write_writes_the_chapter_again(tmp_path: Path) -> None:
    clock = FakeClock()
    stuck = BlockingLLM()
    async with Room(tmp_path, stuck, SLOW, clock) as room:
        rid = await _to_voting(room, ADMIN, "夜渡")
        clock.advance(minutes=60)
        room.novel.deadlines.run_due()
        await stuck.writing.wait()  # the deadline job is writing … and the process stops
    assert (await _phase(tmp_path, rid)) == "writing"
    async with Room(tmp_path, ScriptedLLM([fake_model], repeat_last=True), SLOW, clock) as room:
        resumed = await room.wait_for(lambda r: "重新写作" in r.plain())
        assert "第 1 章" in resumed.plain()
        chapter = await room.wait_for(lambda r: "夜渡这一夜" in r.plain())
        assert "情节记忆" in chapter.plain()
        assert [c.title for c in await room.repo.book.chapters("g1")] == ["夜渡"]
        assert (await room.repo.rounds.get_round(rid)).phase == "done"  # type: ignore[union-attr]


async def _phase(tmp_path: Path, round_id: str) -> str:
    from novel.repo import NovelRepo

    async with await NovelRepo.open(tmp_path / "baibao.sqlite3") as repo:
        r = await repo.rounds.get_round(round_id)
        assert r is not None
        return r.phase.value


async def test_deadline_colliding_with_an_active_write_waits_its_turn(tmp_path: Path) -> None:
    llm = BlockingLLM()
    llm.gate.set()
    async with Room(tmp_path, llm) as room:
        s = room.service
        rid = await _to_voting(room, ADMIN, "夜渡")
        assert not (await s.handle(ADMIN, api.CloseRound())).is_error  # chapter 1
        rid = await _to_voting(room, ADMIN, "寻师")
        llm.gate.clear()
        llm.writing.clear()
        revise = asyncio.create_task(s.handle(ADMIN, api.ReviseChapter(1, "更紧张")))
        await llm.writing.wait()  # the revision holds the novel's write lock
        room.clock.advance(minutes=60)
        assert s.service.deadlines.run_due() == [f"round:{rid}"]
        _, result = await room.next_announcement()
        assert "胜出：《寻师》" in result.plain()
        _, progress = await room.next_announcement()
        assert "正在写作第 2 章" in progress.plain()
        llm.gate.set()  # the revision finishes, then the deadline's chapter is written
        assert "第 2 版" in (await revise).plain()
        await s.service.deadlines.idle()
        _, chapter = await room.next_announcement()
        assert not chapter.is_error and "寻师这一夜" in chapter.plain()
        assert [c.title for c in await room.repo.book.chapters("g1")] == ["夜渡", "寻师"]


async def test_admin_close_and_deadline_at_once_act_once(tmp_path: Path) -> None:
    async with Room(tmp_path, ScriptedLLM([fake_model], repeat_last=True)) as room:
        s = room.service
        await _to_voting(room, ADMIN, "夜渡")
        room.clock.advance(minutes=60)
        closing = asyncio.create_task(s.handle(ADMIN, api.CloseRound()))
        s.service.deadlines.run_due()
        reply = await closing
        await s.service.deadlines.idle()
        assert len(await room.repo.book.chapters("g1")) == 1
        announced = []
        while not room.announced.empty():
            announced.append((await room.announced.get())[1].plain())
        # exactly one of the two wrote the result
        assert sum("投票结果" in t for t in [reply.plain(), *announced]) == 1


async def test_members_may_open_rounds_when_configured(tmp_path: Path) -> None:
    settings = NovelSettings(openers="members", proposal_minutes=60, vote_minutes=60)
    async with Room(tmp_path, None, settings) as room:
        opened = await room.service.handle(member(1), api.NextRound())
        assert not opened.is_error


def _rendered_ballot_help(ballot_plain: str) -> str:
    return "poll" if "在下方的投票中选择" in ballot_plain else "buttons"


async def test_ballot_help_matches_the_ballot_actually_rendered(tmp_path: Path) -> None:
    """Telegram polls take 2–12 options: 1 or 13 proposals go out as the keyboard, and the
    help text says buttons; Discord always shows buttons, even with the chat set to poll."""
    from bot.render import discord as dr
    from bot.render import telegram as tr

    titles = [f"提议{i}" for i in range(1, 14)]
    for count, native in ((1, False), (2, True), (12, True), (13, False)):
        chat = f"-10{count}"
        admin = Actor("telegram", chat, "admin", "管理员", is_admin=True)
        async with Room(tmp_path / f"tg{count}", None) as room:
            s = room.service
            assert not (await s.handle(admin, api.NextRound())).is_error
            for i, title in enumerate(titles[:count], start=1):
                who = Actor("telegram", chat, f"u{i}", f"成员{i}")
                assert not (await s.handle(who, api.Propose(title))).is_error
            ballot = await s.handle(admin, api.CloseRound())
            assert ballot.poll is not None and ballot.poll.native is native, count
            out = tr.render(ballot)
            assert (out.poll is not None) is native, count
            keyboard = out.messages[-1].keyboard
            rows = len(keyboard.inline_keyboard) if keyboard is not None else 0
            assert rows == (0 if native else count), count
            said = _rendered_ballot_help(ballot.plain())
            assert said == ("poll" if native else "buttons"), (count, ballot.plain())
            if not native:
                assert "点按钮或用 /chapter vote 编号 投票" in ballot.plain()
    discord_admin = Actor("discord", "guild", "admin", "管理员", "chan", is_admin=True)
    async with Room(tmp_path / "dc", None) as room:
        s = room.service
        set_poll = await s.ballot_settings(discord_admin, style="poll")
        assert not set_poll.is_error
        assert not (await s.handle(discord_admin, api.NextRound())).is_error
        for i, title in enumerate(titles[:3], start=1):
            who = Actor("discord", "guild", f"u{i}", f"成员{i}", "chan")
            assert not (await s.handle(who, api.Propose(title))).is_error
        ballot = await s.handle(discord_admin, api.CloseRound())
        assert ballot.poll is not None and not ballot.poll.native
        assert len(dr.render(ballot)[-1].buttons) == 3
        assert _rendered_ballot_help(ballot.plain()) == "buttons", ballot.plain()


async def test_the_open_round_as_it_stands(tmp_path: Path) -> None:
    """`RoundService.current`: the phase, the chapter, the minutes left on the room's clock,
    the proposals with their running count, the winner once decided."""
    async with Room(tmp_path, None) as room:
        s, rounds, asking = room.service, room.novel.rounds, member_of(member(9), room.repo.stories)
        with pytest.raises(Refused) as none:
            await rounds.current(asking)
        assert none.value.reason == "no_round"
        await s.handle(ADMIN, api.NextRound())
        room.clock.advance(minutes=20)
        await s.handle(member(1), api.Propose("夜渡", "渡河"))
        now = await rounds.current(asking)
        assert (now.phase, now.number, now.minutes) == (Phase.PROPOSAL, 1, 40)
        assert [(o.title, o.proposer, o.voters) for o in now.options] == [("夜渡", "成员1", ())]
        await s.handle(member(2), api.Propose("寻师"))
        assert not (await s.handle(ADMIN, api.CloseRound())).is_error  # voting opens
        await s.handle(member(3), api.ChooseOption(2))
        room.clock.advance(minutes=15)
        now = await rounds.current(asking)
        assert (now.phase, now.minutes, now.winner) == (Phase.VOTING, 45, "")
        assert [o.voters for o in now.options] == [(), ("成员3",)]
        await s.handle(ADMIN, api.CloseRound())  # no model: the winner waits for its text
        now = await rounds.current(asking)
        assert (now.phase, now.deadline, now.minutes, now.winner) == (
            Phase.PENDING,
            None,
            0,
            "寻师",
        )
