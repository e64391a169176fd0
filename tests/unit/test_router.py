"""The router: parsing, validation and errors in the user's language, for every command."""

from __future__ import annotations

import pytest

from bot.actor import Actor
from bot.ballot.codec import VoteButton
from bot.ballot.room import BallotSettings
from bot.commands import standard_registry
from bot.parsing import parse_args, split_text_command
from bot.permissions import Permissions, Rule
from bot.ratelimit import RateLimiter
from bot.registry import Command, Group, Help, Param, PollAnswer, Registry, Upload
from bot.reply import Progress, Reply
from bot.router import Invocation, Line, Press, Router
from novel import api as novel_api
from retrieval.requests import AskRequest
from tests.service_fakes import RecordingBallots, RecordingNovels, RecordingScholar, fake_router


@pytest.fixture
def parts() -> tuple[Router, RecordingScholar, RecordingNovels]:
    scholar, novels = RecordingScholar(), RecordingNovels()
    return fake_router(scholar, novels, limiter=RateLimiter(0, 0)), scholar, novels


ACTOR = Actor("console", "c1", "u1", is_admin=True)  # like ConsoleTransport's operator


def test_split_text_command_handles_bot_suffix() -> None:
    assert split_text_command("/ask@baibao_bot 你好", "baibao_bot") == ("ask", "你好")
    assert split_text_command("/ask@other_bot 你好", "baibao_bot") is None
    assert split_text_command("hello") is None
    assert split_text_command("／ask 全角斜杠") == ("ask", "全角斜杠")


def test_pipe_split_for_proposals() -> None:
    chapter = standard_registry(RecordingScholar(), RecordingNovels(), RecordingBallots()).get(
        "chapter"
    )
    assert isinstance(chapter, Group)
    propose = chapter.child("propose")
    assert isinstance(propose, Command)
    assert parse_args(propose, "夜渡 | 渡河 | 少对白") == {
        "title": "夜渡",
        "summary": "渡河",
        "notes": "少对白",
    }
    assert parse_args(propose, "只有标题") == {"title": "只有标题"}


async def test_ask_reaches_the_scholar(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, scholar, _ = parts
    reply = await router.answer(Invocation(ACTOR, Line("/ask 神圣分赐与召会有什么关系？")))
    assert reply is not None and not reply.is_error
    assert scholar.requests == [AskRequest("神圣分赐与召会有什么关系？")]


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("/ask", "缺少参数「问题」"),
        ("/ask    ", "缺少参数「问题」"),
        ("/ask " + "长" * 1001, "太长了"),
        ("/cite", "缺少参数「经文出处」"),
        ("/chapter", "需要子命令"),
        ("/chapter fly", "没有子命令「fly」"),
        ("/chapter vote 零", "应为正整数"),
        ("/chapter vote -1", "应为正整数"),
        ("/chapter rollback 3", "缺少参数「版本号」"),
        ("/chapter show abc", "应为正整数"),
        ("/chapter propose", "缺少参数「标题」"),
        ("/chapter delete 3 maybe", "应为以下之一"),
        ("/novel blueprint", "缺少参数「操作」"),
        ("/novel blueprint set", "JSON 文件"),
        ("/novel blueprint edit", "缺少参数"),
        ("/novel export pdf", "应为以下之一"),
        ("/help nosuch", "未知命令"),
        ("/nosuch 1", "未知命令：/nosuch"),
        ("你好", "请以 / 开头"),
    ],
)
async def test_malformed_input_gets_a_chinese_usage_reply(
    parts: tuple[Router, RecordingScholar, RecordingNovels], line: str, needle: str
) -> None:
    router, scholar, novels = parts
    reply = await router.answer(Invocation(ACTOR, Line(line)))
    assert reply is not None and reply.is_error
    assert needle in reply.plain()
    assert scholar.calls == [] and novels.calls == []


async def test_plain_english_chatter_gets_english_guidance(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, _, _ = parts
    reply = await router.answer(Invocation(ACTOR, Line("hello there")))
    assert reply is not None and reply.is_error and "Commands start with /" in reply.plain()


async def test_english_arguments_get_english_errors(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, _, _ = parts
    reply = await router.answer(Invocation(ACTOR, Line("/chapter revise twelve make it darker")))
    assert reply is not None and "must be a positive whole number" in reply.plain()


async def test_full_width_digits_and_control_characters_are_cleaned(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, _, novels = parts
    await router.answer(Invocation(ACTOR, Line("/chapter rollback １２ ２")))
    await router.answer(Invocation(ACTOR, Line("/chapter propose 夜\x00渡 | 摘\x1b要")))
    assert novels.requests == [
        novel_api.RollbackChapter(12, 2),
        novel_api.Propose("夜渡", "摘要", ""),
    ]


async def test_every_novel_subcommand_builds_its_request(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, _, novels = parts
    lines = [
        "/chapter next",
        "/chapter vote 2",
        "/chapter close",
        "/chapter show",
        "/chapter show 3",
        "/chapter revise 3 更紧张",
        "/chapter history 3",
        "/chapter delete",
        "/chapter delete 2 确认",
        "/novel blueprint show",
        "/novel blueprint edit characters.林远.status 已死亡",
        "/novel export epub",
    ]
    for line in lines:
        reply = await router.answer(Invocation(ACTOR, Line(line)))
        assert reply is not None and not reply.is_error, line
    assert novels.requests == [
        novel_api.NextRound(),
        novel_api.ChooseOption(2),
        novel_api.CloseRound(),
        novel_api.ShowChapter(None),
        novel_api.ShowChapter(3),
        novel_api.ReviseChapter(3, "更紧张", None),
        novel_api.ChapterHistory(3),
        novel_api.DeleteChapter(None, False),
        novel_api.DeleteChapter(2, True),
        novel_api.BlueprintShow(),
        novel_api.BlueprintEdit("characters.林远.status", "已死亡"),
        novel_api.Export("epub"),
    ]


async def test_uploads_reach_blueprint_set_and_revise(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, _, novels = parts
    await router.answer(
        Invocation(ACTOR, Line("/novel blueprint set"), upload=Upload.of(b'{"title": "x"}'))
    )
    await router.answer(
        Invocation(
            ACTOR, Line("/chapter revise 2"), upload=Upload.of("新文本".encode(), "第2章.txt")
        )
    )
    assert novels.requests == [
        novel_api.BlueprintSet(b'{"title": "x"}'),
        novel_api.ReviseChapter(2, "", "新文本"),
    ]


async def test_button_actions_route_votes() -> None:
    """A vote button's action reaches the ballot room, decoded by the codec that built it."""
    novels, ballots = RecordingNovels(), RecordingBallots()
    router = fake_router(RecordingScholar(), novels, ballots=ballots, limiter=RateLimiter(0, 0))
    await router.answer(Invocation(ACTOR, Press("vote:r-7:3")))
    bad = await router.answer(Invocation(ACTOR, Press("bogus")))
    assert ballots.requests == [VoteButton("r-7", 3)] and novels.requests == []
    assert bad is not None and bad.is_error


async def test_rate_limit_replies_with_wait_time() -> None:
    router = fake_router(
        RecordingScholar(), RecordingNovels(), limiter=RateLimiter(per_user=1, per_chat=0)
    )
    member = Actor("telegram", "g1", "u1")
    first = await router.answer(Invocation(member, Line("/ask 一")))
    second = await router.answer(Invocation(member, Line("/ask 二")))
    helped = await router.answer(Invocation(member, Line("/help")))
    votes = [await router.answer(Invocation(member, Line(f"/chapter vote {n}"))) for n in (1, 2, 1)]
    assert first is not None and not first.is_error
    assert second is not None and second.is_error and "请求太频繁" in second.plain()
    assert helped is not None and not helped.is_error
    assert all(v is not None and not v.is_error for v in votes)  # cheap commands never wait


async def test_the_console_is_never_rate_limited() -> None:
    router = fake_router(
        RecordingScholar(), RecordingNovels(), limiter=RateLimiter(per_user=1, per_chat=1)
    )
    replies = [await router.answer(Invocation(ACTOR, Line("/ask 一"))) for _ in range(5)]
    assert all(r is not None and not r.is_error for r in replies)


async def test_a_failing_service_gives_an_error_reference_not_a_traceback() -> None:
    class Broken(RecordingScholar):
        async def ask(
            self, actor: Actor, request: AskRequest, progress: Progress | None = None
        ) -> Reply:
            raise RuntimeError("boom")

    router = fake_router(Broken(), RecordingNovels(), limiter=RateLimiter(0, 0))
    reply = await router.answer(Invocation(ACTOR, Line("/ask 一")))
    assert reply is not None and reply.is_error and "错误编号" in reply.plain()
    assert "boom" not in reply.plain()


async def test_groups_stay_quiet_except_for_our_commands(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, scholar, _ = parts
    member = Actor("telegram", "-100", "7")
    for line in ("大家好", "/nosuch", "/roll@dice_bot 2", "hello there everyone"):
        assert (
            await router.answer(
                Invocation(member, Line(line, bot_username="baibao_bot", private=False))
            )
            is None
        )
    unknown = await router.answer(
        Invocation(member, Line("/nosuch@baibao_bot", bot_username="baibao_bot", private=False))
    )
    assert unknown is not None and "未知命令：/nosuch" in unknown.plain()
    asked = await router.answer(
        Invocation(member, Line("/ask 经纶", bot_username="baibao_bot", private=False))
    )
    assert asked is not None and scholar.requests == [AskRequest("经纶")]


async def test_an_english_question_gets_an_english_actor(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    router, scholar, _ = parts
    await router.answer(Invocation(ACTOR, Line("/ask What is the divine dispensing?")))
    await router.answer(Invocation(ACTOR, Line("/ask 什么是神圣的分赐？")))
    assert [a.lang for a, _ in scholar.calls] == ["en", "zh"]


async def test_writers_room_v2_commands_and_actions() -> None:
    """Issue 12: submit (text or file), blueprint accept/reject/history, ballot settings, and
    what transports report besides commands (native poll answers, typed: no string re-enters
    the router). A posted ballot is no action either: the router's `posted` hook sees it, so
    "posted:…" is unknown here."""
    novels, ballots = RecordingNovels(), RecordingBallots()
    router = fake_router(RecordingScholar(), novels, ballots=ballots, limiter=RateLimiter(0, 0))
    for line in (
        "/chapter submit 夜色沉沉，林远……",
        "/novel blueprint accept 3 4",
        "/novel blueprint accept all",
        "/novel blueprint reject ３",
        "/novel blueprint history",
        "/settings ballot keyboard shown",
        "/settings ballot",
    ):
        reply = await router.answer(Invocation(ACTOR, Line(line)))
        assert reply is not None and not reply.is_error, line
    await router.answer(
        Invocation(
            ACTOR, Line("/chapter submit"), upload=Upload.of("正文".encode("gb18030"), "第1章.txt")
        )
    )
    await router.answer(Invocation(ACTOR, PollAnswer("5551", (1,))))
    await router.answer(Invocation(ACTOR, PollAnswer("5551", ())))  # withdrawn
    assert novels.requests == [
        novel_api.SubmitChapter("夜色沉沉，林远……"),
        novel_api.BlueprintAccept((3, 4)),
        novel_api.BlueprintAccept(()),
        novel_api.BlueprintReject((3,)),
        novel_api.BlueprintHistory(),
        novel_api.SubmitChapter("正文"),
    ]
    assert ballots.requests == [
        BallotSettings("keyboard", "shown"),
        BallotSettings(None, None),
        PollAnswer("5551", (1,)),
        PollAnswer("5551", ()),
    ]
    for bad in ("/chapter submit", "/novel blueprint accept x", "/settings ballot carrier"):
        reply = await router.answer(Invocation(ACTOR, Line(bad)))
        assert reply is not None and reply.is_error, bad
    assert (await router.answer(Invocation(ACTOR, Press("poll:5551:x")))).is_error
    assert (await router.answer(Invocation(ACTOR, Press("posted:r-7")))).is_error
    assert (await router.answer(Invocation(ACTOR, Press("posted:r-7:1008:5551:1009")))).is_error
    assert len(novels.requests) + len(ballots.requests) == 10  # neither reached a room


async def test_submit_looks_the_caller_up_without_requiring_an_admin(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    """Anyone may try /chapter submit (the winner's author); the router still tells the
    service whether an admin asks — and a failed lookup means "not an admin", not a refusal."""
    from bot.admin import AdminUnknown, MemberFacts

    router, _, novels = parts
    member = Actor("telegram", "-100", "8")
    looked: list[str] = []

    async def admin() -> MemberFacts:
        looked.append("admin")
        return MemberFacts(administrator=True)

    async def plain() -> MemberFacts:
        looked.append("plain")
        return MemberFacts()

    async def broken() -> MemberFacts:
        looked.append("broken")
        raise AdminUnknown("502")

    for lookup in (admin, plain, broken):
        reply = await router.answer(Invocation(member, Line("/chapter submit 正文"), member=lookup))
        assert reply is not None and not reply.is_error
    assert looked == ["admin", "plain", "broken"]
    assert [a.is_admin for a, _ in novels.calls] == [True, False, False]
    await router.answer(Invocation(member, Line("/chapter vote 1"), member=admin))
    assert looked == ["admin", "plain", "broken"]  # a vote never looks anyone up


async def test_an_upload_is_checked_before_ack_and_its_real_size_after_reading() -> None:
    """The file's type and declared size refuse it before `ack` (nothing downloaded); a
    platform that understated the size is caught once the bytes are read."""
    taken: list[bytes] = []

    async def run(call: object, data: bytes) -> Reply:
        taken.append(data)
        return Reply(lang="zh")

    registry = Registry()
    registry.add(
        Command(
            help=Help("load", "载入", "Load", "/load"),
            params=(Param("file", "文件", "file", kind="file", max_bytes=4, extensions=(".txt",)),),
            parse=lambda values: values.file("file") or b"",
            run=run,
        )
    )
    anyone = Rule(frozenset({"operator", "chat_admin", "member"}), frozenset({"operator"}))
    router = Router(
        registry, limiter=RateLimiter(0, 0), permissions=Permissions(table={"/load": anyone})
    )
    acks: list[str] = []
    reads: list[str] = []

    async def ack() -> None:
        acks.append("ack")

    def upload(name: str, declared: int, data: bytes) -> Upload:
        async def read() -> bytes:
            reads.append(name)
            return data

        return Upload(name, declared, read)

    async def load(up: Upload) -> str:
        reply = await router.answer(Invocation(ACTOR, Line("/load"), upload=up, ack=ack))
        assert reply is not None
        return reply.plain() if reply.is_error else "ok"

    assert "不支持这种文件" in await load(upload("a.pdf", 2, b"ab"))
    assert "文件太大了" in await load(upload("b.txt", 9, b"abcdefghi"))
    assert acks == [] and reads == []  # refused before ack: nothing downloaded
    assert "文件太大了" in await load(upload("c.txt", 2, b"abcdefghi"))  # the size understated
    assert await load(upload("d.txt", 3, b"abc")) == "ok"
    assert acks == ["ack", "ack"] and reads == ["c.txt", "d.txt"] and taken == [b"abc"]


async def test_chapter_status_takes_no_arguments_and_ignores_stray_words(
    parts: tuple[Router, RecordingScholar, RecordingNovels],
) -> None:
    """`/chapter status` (issue 41) has no parameter: what follows it (garbage, pipes, a
    number) is ignored as for every command without one, and a member may ask (no admin
    lookup); words in English get the answer in English."""
    router, _, novels = parts
    member = Actor("telegram", "-100", "8")
    for line in ("/chapter status", "/chapter status ||| ### 3 <b>", "/chapter status what now"):
        reply = await router.answer(Invocation(member, Line(line, private=False)))
        assert reply is not None and not reply.is_error, line
    assert novels.requests == [novel_api.ShowRound()] * 3
    assert [actor.lang for actor, _ in novels.calls] == ["zh", "zh", "en"]
