"""The Discord transport end to end in SimCord (`tests/discord_sim.py`): `DiscordTransport`'s own
client, unmodified, in an in-memory Discord that runs discord.py's real machinery and refuses
what Discord refuses (a second acknowledgement, a late one, content and component limits …).
The services behind the real router and command registry are the recording fakes: the subject
here is the transport. The whole product through Discord is `test_discord_app.py`; what SimCord
cannot do runs on the loopback stub (`test_discord_stub.py`)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.actor import Actor
from bot.ballot.codec import VoteButton
from bot.ballot.store import PostedBallot
from bot.chats import ChatSettings
from bot.commands.scholar import book_suggestions
from bot.ratelimit import RateLimiter
from bot.reply import Attachment, Block, Button, Reply
from bot.router import Invocation, Router
from bot.transports.discord import DiscordTransport
from novel import api as novel_api
from retrieval.requests import AskRequest
from tests.discord_sim import Server, VirtualTime, answer_text, app_settings, buttons, simulated
from tests.service_fakes import (
    RecordingBallots,
    RecordingNovels,
    RecordingScholar,
    ballot_poll,
    fake_router,
)


@dataclass
class Env:
    transport: DiscordTransport
    server: Server
    scholar: RecordingScholar
    novels: RecordingNovels
    votes: RecordingBallots  # the ballot room: button votes, posted ballots

    @property
    def ballots(self) -> list[PostedBallot]:
        """Where each ballot went, as the router's `posted` hook saw it."""
        return self.votes.posted_ballots

    def since(self, mark: int, method: str, fragment: str = "") -> list[Any]:
        """The bot's REST requests after `mark` (an index into the log)."""
        return [
            r
            for r in self.server.env.http_requests[mark:]
            if r.method == method and fragment in r.path
        ]

    @property
    def mark(self) -> int:
        return len(self.server.env.http_requests)


@asynccontextmanager
async def discord_env(tmp_path: Path, router_type: type[Router] = Router) -> AsyncIterator[Env]:
    scholar, novels, votes = RecordingScholar(), RecordingNovels(), RecordingBallots()
    async with ChatSettings(tmp_path / "chats.sqlite3") as chats:
        router = fake_router(scholar, novels, ballots=votes, limiter=RateLimiter(0, 0), chats=chats)
        router.__class__ = router_type
        time = VirtualTime()
        # Answering takes longer than Discord's 3-s acknowledgement window (virtual time).
        scholar.takes = novels.takes = lambda: time.elapse(5)
        settings = app_settings(tmp_path / "data")
        transport = DiscordTransport(router, settings, clock=time.clock())
        async with simulated(transport, time) as server:
            yield Env(transport, server, scholar, novels, votes)


class AnswersAtOnce(Router):
    """The real router, but a command is answered without being deferred first (no command
    does that today; a ballot posted that way must still report itself)."""

    async def answer(self, inv: Invocation) -> Reply | None:
        return await super().answer(dataclasses.replace(inv, ack=None))


BALLOT = Reply(
    lang="zh",
    blocks=[Block("投票开始")],
    poll=ballot_poll("下一章写什么？", ("夜渡", "山门"), "r9"),
    buttons=[Button("结束投票", "close:r9")],
)


async def test_start_syncs_commands_from_the_table(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        [sync] = env.since(0, "PUT", "/commands")
    commands = {c["name"]: c for c in sync.json}
    assert set(commands) == {"ask", "cite", "chapter", "novel", "settings", "start", "help"}
    chapter = commands["chapter"]
    subs = {o["name"]: o for o in chapter["options"]}
    assert set(subs) == {
        "next",
        "propose",
        "status",  # issue 41: the open round as it stands
        "vote",
        "submit",  # issue 12: the group writes the winning chapter itself
        "show",
        "revise",
        "history",
        "rollback",
        "delete",
        "close",
    }
    assert all(o["type"] == 1 for o in subs.values())
    assert chapter["description"] == "小说接龙：提议、投票、写作与修订章节"
    assert chapter["description_localizations"]["en-US"].startswith("Collaborative novel")
    revise = {o["name"]: o for o in subs["revise"]["options"]}
    assert revise["file"]["type"] == 11 and revise["chapter"]["required"] is True
    assert commands["cite"]["options"][0]["autocomplete"] is True
    export = commands["novel"]["options"][1]["options"][0]
    assert [c["value"] for c in export["choices"]] == ["md", "epub"]


async def test_ask_defers_then_follows_up(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.scholar.reply = Reply(
            lang="zh", blocks=[Block("经纶", "heading"), Block("神的经纶是*分赐*。")]
        )
        mark = env.mark
        asked = await env.server.member("alice").slash(
            env.server.channel, "ask", question="什么是经纶？"
        )
        [callback] = env.since(mark, "POST", "/callback")
        [post] = env.since(mark, "POST", "/webhooks/")
    assert callback.json["type"] == 5  # deferred, "thinking"
    assert post.json["content"] == "**经纶**\n\n神的经纶是\\*分赐\\*。"
    assert answer_text(asked) == "**经纶**\n\n神的经纶是\\*分赐\\*。"
    assert post.json["allowed_mentions"]["parse"] == []
    actor, request = env.scholar.calls[0]
    assert request == AskRequest("什么是经纶？")
    assert actor.platform == "discord" and actor.channel_id == str(env.server.channel.id)
    assert actor.lang == "zh"


async def test_subcommand_reaches_the_novel_service(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        await env.server.member("alice").slash(env.server.channel, "chapter vote", option=2)
    [(actor, request)] = env.novels.calls
    assert request == novel_api.ChooseOption(2) and not actor.is_admin


@pytest.mark.parametrize(
    ("name", "options", "needle"),
    [
        ("chapter propose", {"title": " \u200b"}, "缺少参数「标题」"),
        ("ask", {"question": "   "}, "缺少参数「问题」"),
    ],
)
async def test_bad_options_get_an_ephemeral_chinese_usage_error(
    tmp_path: Path, name: str, options: dict[str, Any], needle: str
) -> None:
    async with discord_env(tmp_path) as env:
        mark = env.mark
        answered = await env.server.member("alice").slash(env.server.channel, name, **options)
        [callback] = env.since(mark, "POST", "/callback")
    assert callback.json["type"] == 4  # answered at once, not deferred
    assert callback.json["data"]["flags"] & 64 and answered.ephemeral
    assert needle in callback.json["data"]["content"]
    assert env.scholar.calls == [] and env.novels.calls == []


async def test_the_servers_language_decides_not_the_users_locale(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        server = env.server
        alice, mod = server.member("alice"), server.member("mod", server.mods)
        # SimCord's clients are all en-US: the replies follow the server's setting anyway.
        blank = await alice.slash(server.channel, "ask", question=" ")
        assert "缺少参数「问题」" in answer_text(blank)
        done = await mod.slash(server.channel, "settings language", value="en")
        assert answer_text(done).startswith("Done: this")  # in the new language
        blank = await alice.slash(server.channel, "ask", question=" ")
        assert "Missing argument" in answer_text(blank)
        await alice.slash(server.channel, "ask", question="什么是经纶？")  # Chinese words
    assert env.scholar.calls[-1][0].lang == "zh"


async def test_late_usage_error_replaces_the_thinking_message_privately(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        mark = env.mark
        mod = env.server.member("mod", env.server.mods)
        answered = await mod.slash(env.server.channel, "novel blueprint", action="set")
        [callback] = env.since(mark, "POST", "/callback")
        assert callback.json["type"] == 5
        assert env.since(mark, "DELETE", "/messages/@original")
        [post] = answered.followups
    assert post.ephemeral and "JSON 文件" in post.content
    assert answered.response is None  # the public "thinking" message is gone
    assert env.novels.calls == []


async def test_service_error_after_defer_is_private(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.novels.reply = Reply.error("本轮已结束", lang="zh")
        mark = env.mark
        mod = env.server.member("mod", env.server.mods)
        answered = await mod.slash(env.server.channel, "chapter close")
        assert env.since(mark, "DELETE", "/messages/@original")
        [post] = answered.followups
    assert post.ephemeral and "本轮已结束" in post.content


async def test_poll_becomes_buttons_and_a_click_presses(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.novels.reply = BALLOT
        mod = env.server.member("mod", env.server.mods)
        opened = await mod.slash(env.server.channel, "chapter next")
        message = opened.response
        assert message is not None
        sent = buttons(message)
        assert [b["custom_id"] for b in sent] == ["vote:r9:1", "vote:r9:2", "close:r9"]
        assert sent[0]["label"] == "1. 夜渡" and sent[0]["type"] == 2
        env.votes.reply = Reply.text("已投给第 2 项", lang="zh")
        mark = env.mark
        click = await env.server.member("bob").click(message, label="2. 山门")
        [callback] = env.since(mark, "POST", "/callback")
    assert env.votes.calls[-1][1] == VoteButton("r9", 2)
    assert callback.json["type"] == 5 and callback.json["data"]["flags"] & 64
    assert answer_text(click) == "已投给第 2 项" and click.ephemeral


async def test_long_reply_is_split_in_order(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.scholar.reply = Reply(
            lang="zh", blocks=[Block(f"第{i:03d}段。" + "道" * 300) for i in range(20)]
        )
        mark = env.mark
        await env.server.member("alice").slash(env.server.channel, "ask", question="长回答")
        texts = [r.json["content"] for r in env.since(mark, "POST", "/webhooks/")]
    assert len(texts) >= 4  # each one accepted by SimCord's 2,000-character limit
    order = [int(t[i + 1 : i + 4]) for t in texts for i in range(len(t)) if t[i] == "第"]
    assert order == list(range(20))


async def test_mentions_are_escaped_and_never_ping(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.scholar.reply = Reply.text("@everyone @here <@123> 看这里", lang="zh")
        mark = env.mark
        await env.server.member("alice").slash(env.server.channel, "ask", question="提及")
        [post] = env.since(mark, "POST", "/webhooks/")
    assert "@everyone" not in post.json["content"] and "@here" not in post.json["content"]
    assert post.json["allowed_mentions"] == {"parse": []}


async def test_attachment_is_downloaded_and_passed_as_bytes(tmp_path: Path) -> None:
    data = '{"setting": "山城"}'.encode()
    async with discord_env(tmp_path) as env:
        mod = env.server.member("mod", env.server.mods)
        await mod.slash(env.server.channel, "novel blueprint", action="set", file=("bp.json", data))
    assert [c[1] for c in env.novels.calls] == [novel_api.BlueprintSet(data)]


async def test_streaming_edits_the_original_response_on_the_virtual_clock(
    tmp_path: Path,
) -> None:
    async with discord_env(tmp_path) as env:
        time = env.server.time
        env.scholar.partials = ["神圣", "神圣的分赐"]
        env.scholar.between = lambda: time.sleep(1)  # a second of generation between them
        env.scholar.reply = Reply.text("神圣的分赐是三一神的工作。", lang="zh")
        mark = env.mark
        asked = await env.server.member("alice").slash(env.server.channel, "ask", question="分赐")
        assert answer_text(asked) == "神圣"  # the first partial; the model is still writing
        await env.server.env.advance_time(1)  # the next partial, then the final text
        assert answer_text(asked) == "神圣的分赐"  # the final waits out the 1-s throttle
        await env.server.env.advance_time(1)
        edits = env.since(mark, "PATCH", "/messages/@original")
    assert [e.json["content"] for e in edits] == [
        "神圣",
        "神圣的分赐",
        "神圣的分赐是三一神的工作。",
    ]
    assert all(e.json["allowed_mentions"] == {"parse": []} for e in edits)
    assert env.since(mark, "POST", "/webhooks/") == []
    assert asked.followups == []


async def test_chapter_attachment_goes_as_a_file(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.novels.reply = Reply(
            lang="zh",
            blocks=[Block("第 3 章《夜渡》")],
            attachments=[Attachment("chapter-3.md", "# 夜渡\n\n正文".encode())],
        )
        shown = await env.server.member("alice").slash(
            env.server.channel, "chapter show", chapter=3
        )
        [file] = [a for m in [shown.response, *shown.followups] if m for a in m.attachments]
        assert file.filename == "chapter-3.md"
        assert await file.read() == "# 夜渡\n\n正文".encode()


async def test_cite_autocomplete_suggests_books(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        alice = env.server.member("alice")
        choices = await alice.autocomplete(env.server.channel, "cite", "reference", "弗")
        sources = await alice.autocomplete(env.server.channel, "ask", "source", "神", question="?")
    assert {c["value"] for c in choices} >= {"弗"}
    assert book_suggestions("弗1:10") == [("弗1:10", "弗1:10")]
    assert [c["value"] for c in sources] == ["神的经纶"]


async def test_send_posts_to_the_channel(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        channel = env.server.channel
        target = Actor("discord", str(env.server.guild.id), "0", channel_id=str(channel.id))
        await env.transport.send(target, Reply.text("第 3 章已完成 @everyone", lang="zh"))
        [post] = env.since(0, "POST", f"/channels/{channel.id}/messages")
        assert channel.last_message is not None and "第 3 章已完成" in channel.last_message.content
    assert post.json["allowed_mentions"] == {"parse": []}
    assert "@everyone" not in post.json["content"]


async def test_a_dm_never_meets_silence_a_server_channel_stays_quiet(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        server = env.server
        alice = server.member("alice")
        await alice.send_dm("你好")
        await alice.send_dm("/foo 1")
        dm = alice.user.dm_channel

        def answers() -> list[str]:
            return [m.content for m in dm.history() if m.author.bot]

        plain, unknown = answers()
        assert plain.startswith("请以 / 开头输入命令") and "/help" in plain and "\n" not in plain
        assert unknown.startswith("未知命令：/foo") and "/help" in unknown
        # Never answered: a server channel (mentioning the bot or not), another bot's DM;
        # nor the bot's own DM messages, which reach it over the gateway like anyone's.
        await alice.send(server.channel, "大家好")
        bot = env.transport.client.user
        assert bot is not None
        await alice.send(server.channel, f"<@{bot.id}> /foo")
        dice = env.server.env.create_user("dice", bot=True)
        await dice.send_dm("你好")
        await alice.send_dm("what can you do")
        assert answers()[2].startswith("Commands start with /")
        assert len(answers()) == 3
        ours = [*server.channel.history(), *dice.dm_channel.history()]
        assert [m.content for m in ours if m.author.id == bot.id] == []
    assert env.scholar.calls == []


# ---- where a ballot was posted: every delivery path reports it -------------------------------


async def test_a_deferred_ballot_reports_the_message_with_its_buttons(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.novels.reply = BALLOT
        mod = env.server.member("mod", env.server.mods)
        opened = await mod.slash(env.server.channel, "chapter next")
    assert opened.response is not None
    [posted] = env.ballots
    assert posted == PostedBallot(
        "r9",
        "discord",
        str(env.server.guild.id),
        str(env.server.channel.id),
        str(opened.response.id),
    )


async def test_a_ballot_answered_at_once_reports_its_message(tmp_path: Path) -> None:
    """`_respond_now` never reported the ballot it posted: its count stayed 「共 0 票」."""
    async with discord_env(tmp_path, AnswersAtOnce) as env:
        env.novels.takes = None  # quick: unacknowledged, slow work would miss the 3-s window
        env.novels.reply = BALLOT
        mark = env.mark
        mod = env.server.member("mod", env.server.mods)
        opened = await mod.slash(env.server.channel, "chapter next")
        [callback] = env.since(mark, "POST", "/callback")
    assert callback.json["type"] == 4  # answered at once
    assert opened.response is not None and buttons(opened.response)
    [posted] = env.ballots
    assert posted.round_id == "r9" and posted.message_id == str(opened.response.id)


async def test_a_ballot_in_a_long_reply_reports_the_last_message(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        env.novels.reply = Reply(
            lang="zh",
            blocks=[Block(f"第{i:02d}个提议。" + "道" * 300) for i in range(12)],
            poll=BALLOT.poll,
        )
        mod = env.server.member("mod", env.server.mods)
        opened = await mod.slash(env.server.channel, "chapter next")
    *_, last = opened.followups
    assert buttons(last)
    [posted] = env.ballots
    assert posted.message_id == str(last.id)


async def test_a_ballot_sent_to_the_channel_reports_its_message(tmp_path: Path) -> None:
    async with discord_env(tmp_path) as env:
        channel = env.server.channel
        target = Actor("discord", str(env.server.guild.id), "0", channel_id=str(channel.id))
        await env.transport.router.send(target, BALLOT)
        message = channel.last_message
    assert message is not None and message.components
    [posted] = env.ballots
    assert posted.message_id == str(message.id) and posted.channel_id == str(channel.id)


async def test_a_private_reply_reports_no_ballot(tmp_path: Path) -> None:
    """A button press is answered privately: nothing there can show a count to everyone."""
    async with discord_env(tmp_path) as env:
        channel = env.server.channel
        target = Actor("discord", str(env.server.guild.id), "0", channel_id=str(channel.id))
        choice = Reply(lang="zh", blocks=[Block("选一个")], buttons=[Button("夜渡", "vote:r9:1")])
        await env.transport.router.send(target, choice)
        message = channel.last_message
        assert message is not None
        env.votes.reply = BALLOT  # the press's own answer carries a ballot
        click = await env.server.member("bob").click(message, label="夜渡")
    assert click.ephemeral and "投票开始" in answer_text(click)
    assert env.ballots == []
