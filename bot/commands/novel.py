"""The writers' room commands: `/chapter …`, `/novel …`, and the vote buttons."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from bot.presenters.cast import cast_reply, map_reply, recap_reply
from bot.presenters.novel import VOTE, NovelReplies, decode_vote_payload
from bot.registry import Action, Call, Command, Group, Help, Param, UsageError, Values
from bot.reply import POLL_ANSWER, Reply
from novel import api as novel_api
from novel.api import NovelRequest, Story
from novel.cast import RECAP_DEFAULT, RECAP_MAX
from novel.settings import MAX_CHAPTER_CHARS

_CH = Param("chapter", "章节号", "chapter number", "int")


def _decode_upload(data: bytes | None) -> str | None:
    if data is None:
        return None
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise UsageError("need_file")


_ALL = ("all", "全部", "所有")


def _change_ids(values: Values) -> tuple[int, ...]:
    """`accept 3 4` / `accept 3,4` / `accept all` / `accept` → the ids (none = every one)."""
    words = f"{values.text('field')} {values.text('value')}".replace("，", ",").replace("、", ",")
    parts = [w for w in words.replace(",", " ").split() if w]
    if not parts or (len(parts) == 1 and parts[0].lower() in _ALL):
        return ()
    try:
        ids = tuple(int(unicodedata.normalize("NFKC", w).lstrip("#")) for w in parts)
    except ValueError:
        raise UsageError.say(
            "请给出建议的编号，例如 /novel blueprint accept 3（或 all）",
            "Give the update's number, e.g. /novel blueprint accept 3 (or all)",
        ) from None
    if any(i < 1 for i in ids):
        raise UsageError.say("编号应为正整数", "Numbers must be positive")
    return ids


def _blueprint_request(values: Values) -> NovelRequest:
    action = values.text("action")
    if action == "show":
        return novel_api.BlueprintShow()
    if action == "history":
        return novel_api.BlueprintHistory()
    if action == "accept":
        return novel_api.BlueprintAccept(_change_ids(values))
    if action == "reject":
        return novel_api.BlueprintReject(_change_ids(values))
    if action == "set":
        data = values.file("file")
        if data is None:
            raise UsageError("need_file")
        return novel_api.BlueprintSet(data)
    if not values.text("field") or not values.has("value"):
        raise UsageError("missing_arg", param=Param("value", "字段和值", "field and value"))
    return novel_api.BlueprintEdit(values.text("field"), values.text("value"))


def _submission(values: Values) -> NovelRequest:
    """The chapter typed after the command, or an uploaded text file (UTF-8 or GB18030)."""
    text = _decode_upload(values.file("file"))
    if text is None:
        text = values.text("text")
    if not text.strip():
        raise UsageError("missing_arg", param=Param("text", "正文或文件", "text or a file"))
    return novel_api.SubmitChapter(text)


_STYLES = ("poll", "keyboard")
_VOTERS = ("shown", "hidden")


def _ballot_settings(values: Values) -> NovelRequest:
    chosen = [values.text(name) for name in ("setting", "setting2") if values.has(name)]
    style = next((c for c in chosen if c in _STYLES), None)
    voters = next((c for c in chosen if c in _VOTERS), None)
    if len([c for c in chosen if c in _STYLES]) > 1 or len([c for c in chosen if c in _VOTERS]) > 1:
        raise UsageError.say("每项只能选一个", "Choose one value for each setting")
    return novel_api.BallotSettings(style, voters)


def decode_vote(payload: str) -> novel_api.Vote | None:
    """A vote button's payload → a vote, by the codec the ballot was built with."""
    vote = decode_vote_payload(payload)
    return novel_api.Vote(vote.option, vote.round_id) if vote is not None else None


def decode_poll_answer(payload: str) -> novel_api.PollAnswer | None:
    """`{poll id}:{1,2}` (see `bot.reply.poll_answer_action`) → the answer."""
    poll_id, _, options = payload.rpartition(":")
    parts = [o for o in options.split(",") if o]
    if not poll_id or not all(o.isascii() and o.isdigit() for o in parts):
        return None
    return novel_api.PollAnswer(poll_id, tuple(int(o) for o in parts))


def _recap_count(values: Values) -> int:
    """`/novel recap` → 3; `/novel recap 5` → 5; 0, negatives and words are refused by the
    parameter's own check (a positive whole number); more than RECAP_MAX here."""
    count = values.maybe_number("count") or RECAP_DEFAULT
    if count > RECAP_MAX:
        raise UsageError.say(
            f"一次最多回顾 {RECAP_MAX} 章，收到：{count}。",
            f"A recap covers at most {RECAP_MAX} chapters, got: {count}.",
        )
    return count


def story_commands(story: Story) -> tuple[Command[Any], ...]:
    """`/novel characters`, `/novel recap [N]`, `/novel map`: the story so far, read-only."""

    async def characters(call: Call, _: None) -> Reply:
        return cast_reply(await story.cast(call.actor.chat_id), call.actor.lang)

    async def recap(call: Call, count: int) -> Reply:
        return recap_reply(await story.recap(call.actor.chat_id, count), call.actor.lang)

    async def cast_map(call: Call, _: None) -> Reply:
        return await map_reply(await story.cast_map(call.actor.chat_id), call.actor.lang)

    def nothing(values: Values) -> None:
        return None

    return (
        Command(
            help=Help(
                "characters",
                "人物表：谁是谁、状态（死亡/受伤/失踪，附章节与原句）、最后出现的地点与章节",
                "Who is who: status (dead/hurt/missing, with chapter and sentence), last seen",
                "/novel characters",
            ),
            parse=nothing,
            run=characters,
        ),
        Command(
            help=Help(
                "recap",
                f"前情提要：最近 N 章（默认 {RECAP_DEFAULT}，最多 {RECAP_MAX}），每章几行",
                f"Recap of the last N chapters (default {RECAP_DEFAULT}, at most {RECAP_MAX})",
                "/novel recap 5",
            ),
            params=(Param("count", "章数", "chapters", "int", required=False),),
            parse=_recap_count,
            run=recap,
        ),
        Command(
            help=Help(
                "map",
                "人物关系图（图片）：按状态着色，连线为设定中的关系与同场章节数",
                "Cast map (a picture): coloured by status; lines = relationships, shared chapters",
                "/novel map",
            ),
            parse=nothing,
            run=cast_map,
        ),
    )


def novel_commands(
    novels: NovelReplies,
    *,
    story: Story | None = None,
) -> tuple[Group, ...]:
    async def run(call: Call, request: NovelRequest) -> Reply:
        return await novels.handle(call.actor, request, call.progress)

    def command(
        help: Help,
        parse: Callable[[Values], NovelRequest],
        params: tuple[Param, ...] = (),
        *,
        rate_limited: bool = True,
        pipe_split: bool = False,
    ) -> Command[NovelRequest]:
        return Command(
            help=help,
            params=params,
            parse=parse,
            run=run,
            rate_limited=rate_limited,
            pipe_split=pipe_split,
        )

    chapter = Group(
        Help(
            "chapter",
            "小说接龙：提议、投票、写作与修订章节",
            "Collaborative novel: propose, vote, write and revise chapters",
            "/chapter next | propose | vote | submit | show | revise | history | rollback | delete"
            " | close",
        ),
        (
            command(
                Help(
                    "next",
                    "开启新一轮（提议→投票→写作）；有待写的章节时重试写作",
                    "Open a round (propose → vote → write); retries a pending chapter",
                    "/chapter next",
                ),
                lambda v: novel_api.NextRound(),
            ),
            command(
                Help(
                    "propose",
                    "提议下一章目标：标题 | 摘要 | 写作要点",
                    "Propose the next chapter's goal: title | summary | notes",
                    "/chapter propose 夜渡 | 林远夜里渡河寻找师父 | 多写环境，少写对白",
                    "/chapter propose Night crossing | Lin crosses the river | more scenery",
                ),
                lambda v: novel_api.Propose(v.text("title"), v.text("summary"), v.text("notes")),
                (
                    Param("title", "标题", "title", max_len=100),
                    Param("summary", "摘要", "summary", required=False, max_len=1000),
                    Param("notes", "写作要点", "notes", required=False, max_len=1000),
                ),
                pipe_split=True,
                rate_limited=False,  # cheap, and a round's last minute must not lock people out
            ),
            command(
                Help(
                    "vote",
                    "为提议投票（可改票）",
                    "Vote for a proposal (changeable)",
                    "/chapter vote 2",
                ),
                lambda v: novel_api.Vote(v.number("option")),
                (Param("option", "选项编号", "option number", "int"),),
                rate_limited=False,
            ),
            command(
                Help(
                    "submit",
                    "提交胜出提议的正文（直接写在命令后，或附上文本文件）",
                    "Submit the winning goal's chapter (typed after the command, or a file)",
                    "/chapter submit 夜色沉沉，林远……（或附上 .txt 文件）",
                    "/chapter submit The night was deep… (or attach a .txt file)",
                ),
                _submission,
                (
                    Param(
                        "text",
                        "正文",
                        "text",
                        required=False,
                        rest=True,
                        max_len=MAX_CHAPTER_CHARS,
                    ),
                    Param("file", "正文文件", "text file", "file", required=False),
                ),
            ),
            command(
                Help(
                    "show",
                    "查看章节（默认最新一章）",
                    "Show a chapter (latest by default)",
                    "/chapter show 12",
                ),
                lambda v: novel_api.ShowChapter(v.maybe_number("chapter")),
                (Param("chapter", "章节号", "chapter number", "int", required=False),),
                rate_limited=False,
            ),
            command(
                Help(
                    "revise",
                    "重写某章（可附说明或上传文本）",
                    "Rewrite a chapter (with instructions or an uploaded text)",
                    "/chapter revise 12 让结尾更有悬念",
                    "/chapter revise 12 make the ending more suspenseful",
                ),
                lambda v: novel_api.ReviseChapter(
                    v.number("chapter"), v.text("instructions"), _decode_upload(v.file("file"))
                ),
                (
                    _CH,
                    Param(
                        "instructions",
                        "修改说明",
                        "instructions",
                        required=False,
                        rest=True,
                        max_len=1000,
                    ),
                    Param("file", "替换文本", "replacement text", "file", required=False),
                ),
            ),
            command(
                Help(
                    "history", "查看某章的版本", "List a chapter's versions", "/chapter history 12"
                ),
                lambda v: novel_api.ChapterHistory(v.number("chapter")),
                (_CH,),
                rate_limited=False,
            ),
            command(
                Help(
                    "rollback",
                    "回滚某章到指定版本",
                    "Roll a chapter back to a version",
                    "/chapter rollback 12 2",
                ),
                lambda v: novel_api.RollbackChapter(v.number("chapter"), v.number("version")),
                (_CH, Param("version", "版本号", "version", "int")),
            ),
            command(
                Help(
                    "delete",
                    "删除最后一章（删除更早的章节需加 confirm 并重新编号）",
                    "Delete the last chapter (earlier ones need confirm; later ones renumber)",
                    "/chapter delete  或  /chapter delete 5 confirm",
                    "/chapter delete  or  /chapter delete 5 confirm",
                ),
                lambda v: novel_api.DeleteChapter(v.maybe_number("chapter"), v.has("confirm")),
                (
                    Param("chapter", "章节号", "chapter number", "int", required=False),
                    Param(
                        "confirm",
                        "确认",
                        "confirm",
                        "choice",
                        required=False,
                        choices=("confirm", "确认"),
                    ),
                ),
            ),
            command(
                Help(
                    "close",
                    "提前结束当前阶段；放弃待写的一轮（管理员）",
                    "Close the current phase early; abandon a pending round (admins)",
                    "/chapter close",
                ),
                lambda v: novel_api.CloseRound(),
            ),
        ),
    )
    novel = Group(
        Help(
            "novel",
            "小说设定、人物、前情提要、关系图与导出",
            "Novel blueprint, cast, recap, cast map and export",
            "/novel blueprint show | set | edit | accept | reject | history · /novel characters"
            " · /novel recap [N] · /novel map · /novel export",
        ),
        (
            command(
                Help(
                    "blueprint",
                    "世界设定：show · set 上传 JSON · edit 字段 值 · accept/reject 更新建议 · history 记录",
                    "Blueprint: show · set (JSON) · edit FIELD VALUE · accept/reject updates · history",
                    "/novel blueprint edit characters.林远.status 已死亡",
                    "/novel blueprint edit characters.Lin.status dead",
                ),
                _blueprint_request,
                (
                    Param(
                        "action",
                        "操作",
                        "action",
                        "choice",
                        choices=("show", "set", "edit", "accept", "reject", "history"),
                    ),
                    Param("field", "字段", "field", required=False, max_len=200),
                    Param("value", "值", "value", required=False, rest=True),
                    Param("file", "JSON 文件", "JSON file", "file", required=False),
                ),
            ),
            command(
                Help(
                    "export",
                    "导出全文（md 或 epub）",
                    "Export the novel (md or epub)",
                    "/novel export epub",
                ),
                lambda v: novel_api.Export(v.text("format", "md")),
                (
                    Param(
                        "format", "格式", "format", "choice", required=False, choices=("md", "epub")
                    ),
                ),
            ),
            *(story_commands(story) if story is not None else ()),
        ),
    )
    return chapter, novel


def ballot_setting(novels: NovelReplies) -> Command[NovelRequest]:
    """`/settings ballot poll|keyboard shown|hidden`: one ballot per chat, voters' names."""

    async def run(call: Call, request: NovelRequest) -> Reply:
        return await novels.handle(call.actor, request)

    choice = _STYLES + _VOTERS
    return Command(
        help=Help(
            "ballot",
            "投票方式：poll 原生投票 · keyboard 按钮；shown/hidden 显示或隐藏投票人",
            "Ballot: poll (native) · keyboard (buttons); shown/hidden voters' names",
            "/settings ballot keyboard shown",
        ),
        params=(
            Param("setting", "设置", "setting", "choice", required=False, choices=choice),
            Param("setting2", "设置", "setting", "choice", required=False, choices=choice),
        ),
        parse=_ballot_settings,
        run=run,
        rate_limited=False,
    )


def novel_actions(novels: NovelReplies) -> tuple[Action[Any], ...]:
    """Vote buttons and native poll answers."""

    async def run(call: Call, request: NovelRequest) -> Reply:
        return await novels.handle(call.actor, request)

    return (
        Action(prefix=VOTE, decode=decode_vote, run=run),
        Action(prefix=POLL_ANSWER, decode=decode_poll_answer, run=run),
    )
