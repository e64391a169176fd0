"""The writers' room commands: `/chapter …` and `/novel …`.

Each command is registered for its own request type (`Command[SubmitChapter]` …): `parse`
builds the request, and its handler (`novel_handlers`, python-telegram-bot's `TypeHandler`)
calls the one service method it needs and the one presenter method that words its result.
Adding a command is its `Command` and its handler here, and its presenter method.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from bot.actor import Actor
from bot.presenters import novel as present
from bot.presenters.cast import cast_reply, map_reply, recap_reply
from bot.presenters.novel import NovelPresenter, StoryPlaces, member_of, place_of
from bot.registry import (
    Call,
    Command,
    Group,
    Handlers,
    Help,
    Param,
    Run,
    UsageError,
    Values,
)
from bot.reply import Reply
from kernel.refusal import Refused
from novel import api as novel_api
from novel.api import Story
from novel.blueprint import BlueprintError
from novel.cast import RECAP_DEFAULT, RECAP_MAX
from novel.chapters import ChapterService
from novel.member import Member, Place
from novel.results import (
    ChapterSaved,
    Revising,
    Steps,
)
from novel.service import NovelService
from novel.settings import MAX_CHAPTER_CHARS
from novel.stories import MAX_TITLE

R = TypeVar("R")
Out = TypeVar("Out")
# A handler's two halves: the service call (a member, the request, where steps stream), and
# the presenter method that words its result for the asking actor.
Serve = Callable[[Member, R, Steps | None], Awaitable[Out]]
Show = Callable[[Out, Actor], Reply]


class NovelRunner(Protocol):
    """The writers' room's handlers by request type, as the commands take them
    (`bot.registry.Handlers`; tests record the calls with a plain class)."""

    def of(self, kind: type[R]) -> Run[R]: ...

    async def run(self, call: Call, request: object) -> Reply: ...


def _answer(
    present: NovelPresenter,
    call: Call,
    request: R,
    serve: Callable[[Steps | None], Awaitable[Out]],
    show: Show[Out],
) -> Awaitable[Reply]:
    """The room's one admin rule asked again (a caller may have skipped the router), the
    service called, its result (or refusal) worded."""

    async def answer() -> Reply:
        actor, lang = call.actor, call.actor.lang
        if novel_api.needs_admin(request) and not actor.is_admin:
            return present.refusal(lang, Refused("admins_only"))
        steps = None if call.progress is None else present.steps(lang, call.progress)
        try:
            result = await serve(steps)
        except Refused as refused:
            return present.refusal(lang, refused, admin=actor.is_admin)
        except BlueprintError as err:
            return present.blueprint_error(lang, err)
        return show(result, actor)

    return answer()


def handler(
    present: NovelPresenter, places: StoryPlaces, serve: Serve[R, Out], show: Show[Out]
) -> Run[R]:
    """A typed handler: the member in the story of the place they spoke in (`places`)."""

    async def run(call: Call, request: R) -> Reply:
        member = member_of(call.actor, places)
        return await _answer(present, call, request, lambda s: serve(member, request, s), show)

    return run


def place_handler(
    present: NovelPresenter,
    places: StoryPlaces,
    serve: Callable[[Member, Place, R], Awaitable[Out]],
    show: Show[Out],
) -> Run[R]:
    """A typed handler of a request about the chat's stories: it gets the place asked in."""

    async def run(call: Call, request: R) -> Reply:
        member, place = member_of(call.actor, places), place_of(call.actor)
        return await _answer(present, call, request, lambda s: serve(member, place, request), show)

    return run


def novel_handlers(service: NovelService, words: NovelPresenter) -> Handlers:
    """Each request type's handler: the one service method it calls, the one presenter method
    that words the result. A member reaches the story of the place they spoke in."""
    rounds, chapters, world, shown = service.rounds, service.chapters, service.world, words.chapters
    stories, places = service.stories, service.repo.stories
    api = novel_api
    handlers = Handlers()

    def add(kind: type[R], serve: Serve[R, Out], show: Show[Out]) -> None:
        handlers.add(kind, handler(words, places, serve, show))

    add(api.NextRound, lambda m, r, steps: service.next_round(m, steps), words.next_round)
    add(api.Propose, lambda m, r, steps: rounds.propose(m, r), words.proposed)
    add(api.ShowRound, lambda m, r, steps: rounds.current(m), words.current_round)
    add(
        api.ChooseOption,
        lambda m, r, steps: rounds.vote(api.Vote("", r.option, m)),
        words.vote_cast,
    )
    add(api.CloseRound, lambda m, r, steps: service.close_round(m, steps), words.closed)
    add(api.SubmitChapter, lambda m, r, steps: service.submit(m, r.text), shown.saved)
    add(api.ShowChapter, lambda m, r, steps: chapters.show(m, r.chapter), shown.shown)
    add(api.ReviseChapter, _revise(chapters), shown.saved)
    add(api.ChapterHistory, lambda m, r, steps: chapters.history(m, r.chapter), shown.history)
    add(
        api.RollbackChapter,
        lambda m, r, steps: chapters.rollback(m, r.chapter, r.version),
        shown.rolled_back,
    )
    add(
        api.DeleteChapter,
        lambda m, r, steps: chapters.delete(m, r.chapter, r.confirm),
        shown.deleted,
    )
    add(api.Export, lambda m, r, steps: chapters.export(m, r.fmt), shown.exported)
    add(api.BlueprintShow, lambda m, r, steps: world.show(m), present.blueprint_shown)
    add(
        api.BlueprintSet,
        lambda m, r, steps: world.upload(m, r.data, "upload"),
        present.blueprint_saved,
    )
    add(
        api.BlueprintEdit,
        lambda m, r, steps: world.edit(m, r.field, r.value, f"edit:{r.field}"),
        present.blueprint_edited,
    )
    add(
        api.BlueprintAccept,
        lambda m, r, steps: world.decide(m, r.ids, True),
        present.changes_decided,
    )
    add(
        api.BlueprintReject,
        lambda m, r, steps: world.decide(m, r.ids, False),
        present.changes_decided,
    )
    add(api.BlueprintHistory, lambda m, r, steps: world.history(m), present.blueprint_history)
    handlers.add(
        api.NewStory,
        place_handler(
            words, places, lambda m, p, r: stories.new(m, p, r.title), present.story_opened
        ),
    )
    handlers.add(
        api.ListStories,
        place_handler(words, places, lambda m, p, r: stories.listed(p), present.stories_listed),
    )
    return handlers


def _revise(chapters: ChapterService) -> Serve[novel_api.ReviseChapter, ChapterSaved]:
    """A revision says "rewriting…" once it passed every check, then streams the draft."""

    async def revise(
        member: Member, request: novel_api.ReviseChapter, steps: Steps | None
    ) -> ChapterSaved:
        async def started() -> None:
            if steps is not None:
                await steps(Revising(request.chapter))

        return await chapters.revise(
            member, request.chapter, request.instructions, request.text, steps, started
        )

    return revise


_CH = Param("chapter", "章节号", "chapter number", "int")


# A chapter's text as a file: plain text (UTF-8 or GB18030), as .txt or Markdown.
TEXT_FILES = (".txt", ".md", ".markdown")
MAX_INSTRUCTIONS = 1000
# `/chapter revise N 正文：…` — the words after the marker are the chapter's new text, not an
# instruction to the model. Matched at the start of the arguments, colon required (full or half
# width), so an instruction that merely begins with the word (「正文太长了」) stays one.
NEW_TEXT = re.compile(r"^\s*(?:正文|text)\s*[:：]", re.IGNORECASE)


def _decode_upload(data: bytes | None) -> str | None:
    """An uploaded chapter text (UTF-8 or GB18030); `UsageError("not_text")` when the bytes
    are not text (a NUL byte, or neither encoding reads them)."""
    if data is None:
        return None
    if b"\x00" not in data:
        for encoding in ("utf-8-sig", "gb18030"):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                continue
    raise UsageError("not_text")


def _revision(values: Values) -> novel_api.ReviseChapter:
    """`/chapter revise N …`: an instruction to the model, or the new text itself (after
    「正文：」/「text:」, in the `text` option, or as a file), never two texts at once."""
    said = values.text("instructions")
    marked = NEW_TEXT.match(said)
    texts = [
        t
        for t in (
            _decode_upload(values.file("file")),
            values.text("text") or None,
            said[marked.end() :] if marked else None,
        )
        if t is not None
    ]
    if len(texts) > 1:
        raise UsageError.say(
            "新正文只能给一份：附上的文件、正文选项或「正文：」之后的文字，三者选一。",
            "Give the new text once: a file, the text option, or the words after “text:”.",
        )
    if texts:
        if not texts[0].strip():
            raise UsageError("missing_arg", param=Param("text", "新正文", "new text"))
        return novel_api.ReviseChapter(values.number("chapter"), "" if marked else said, texts[0])
    if len(said) > MAX_INSTRUCTIONS:
        limit = Param("instructions", "修改说明", "instructions", max_len=MAX_INSTRUCTIONS)
        raise UsageError("too_long", param=limit, n=len(said), limit=MAX_INSTRUCTIONS)
    return novel_api.ReviseChapter(values.number("chapter"), said)


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


def _blueprint_request(values: Values) -> novel_api.WorldRequest:
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


def _submission(values: Values) -> novel_api.SubmitChapter:
    """The chapter typed after the command, or an uploaded text file (UTF-8 or GB18030)."""
    text = _decode_upload(values.file("file"))
    if text is None:
        text = values.text("text")
    if not text.strip():
        raise UsageError("missing_arg", param=Param("text", "正文或文件", "text or a file"))
    return novel_api.SubmitChapter(text)


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


def story_commands(story: Story, places: StoryPlaces) -> tuple[Command[Any], ...]:
    """`/novel characters`, `/novel recap [N]`, `/novel map`: the story so far, read-only, of
    the story the place asked in belongs to."""

    def here(call: Call) -> str:
        return places.story_at(place_of(call.actor))

    async def characters(call: Call, _: None) -> Reply:
        return cast_reply(await story.cast(here(call)), call.actor.lang)

    async def recap(call: Call, count: int) -> Reply:
        return recap_reply(await story.recap(here(call), count), call.actor.lang)

    async def cast_map(call: Call, _: None) -> Reply:
        return await map_reply(await story.cast_map(here(call)), call.actor.lang)

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
    novels: NovelRunner,
    *,
    story: Story | None = None,
    places: StoryPlaces | None = None,
) -> tuple[Group, ...]:
    """`/chapter …` and `/novel …`; `/novel characters|recap|map` with `story` (the story a
    place holds found by `places`)."""
    if story is not None and places is None:
        raise ValueError("the story commands need the directory of stories (places)")

    def command(
        help: Help,
        kind: type[R],
        parse: Callable[[Values], R],
        params: tuple[Param, ...] = (),
        *,
        rate_limited: bool = True,
        pipe_split: bool = False,
    ) -> Command[R]:
        return Command(
            help=help,
            params=params,
            parse=parse,
            run=novels.of(kind),
            rate_limited=rate_limited,
            pipe_split=pipe_split,
        )

    chapter = Group(
        Help(
            "chapter",
            "小说接龙：提议、投票、写作与修订章节",
            "Collaborative novel: propose, vote, write and revise chapters",
            "/chapter next | propose | status | vote | submit | show | revise | history | rollback"
            " | delete | close",
        ),
        (
            command(
                Help(
                    "next",
                    "开启新一轮（提议→投票→写作）；有待写的章节时重试写作",
                    "Open a round (propose → vote → write); retries a pending chapter",
                    "/chapter next",
                ),
                novel_api.NextRound,
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
                novel_api.Propose,
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
                    "status",
                    "当前这一轮：阶段、截止时间、各提议与票数",
                    "The open round: its phase, deadline, proposals and running count",
                    "/chapter status",
                ),
                novel_api.ShowRound,
                lambda v: novel_api.ShowRound(),
                rate_limited=False,  # a look, no work
            ),
            command(
                Help(
                    "vote",
                    "为提议投票（可改票）",
                    "Vote for a proposal (changeable)",
                    "/chapter vote 2",
                ),
                novel_api.ChooseOption,
                lambda v: novel_api.ChooseOption(v.number("option")),
                (Param("option", "选项编号", "option number", "int"),),
                rate_limited=False,
            ),
            command(
                Help(
                    "submit",
                    "提交胜出提议的正文（直接写在命令后，或附上文本文件）",
                    "Submit the winning goal's chapter (typed after the command, or a file)",
                    "/chapter submit 夜色沉沉，林远……（或附上 .txt 文件；控制台：/chapter submit @第3章.txt）",
                    "/chapter submit The night was deep… (or attach a .txt file; on the console:"
                    " /chapter submit @chapter3.txt)",
                ),
                novel_api.SubmitChapter,
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
                    Param(
                        "file",
                        "正文文件",
                        "text file",
                        "file",
                        required=False,
                        extensions=TEXT_FILES,
                    ),
                ),
            ),
            command(
                Help(
                    "show",
                    "查看章节（默认最新一章）",
                    "Show a chapter (latest by default)",
                    "/chapter show 12",
                ),
                novel_api.ShowChapter,
                lambda v: novel_api.ShowChapter(v.maybe_number("chapter")),
                (Param("chapter", "章节号", "chapter number", "int", required=False),),
                rate_limited=False,
            ),
            command(
                Help(
                    "revise",
                    "重写某章：给模型的修改说明；或「正文：」后写新的全文；或附上文本文件",
                    "Rewrite a chapter: instructions to the model, or “text:” and the new text, or a file",
                    "/chapter revise 12 让结尾更有悬念 · /chapter revise 12 正文：夜色沉沉……"
                    " · /chapter revise 12 @第12章.txt（控制台）",
                    "/chapter revise 12 make the ending tenser · /chapter revise 12 text: The night…"
                    " · /chapter revise 12 @chapter12.txt (console)",
                ),
                novel_api.ReviseChapter,
                _revision,
                (
                    _CH,
                    Param(
                        "instructions",
                        "修改说明（或「正文：」加新的全文）",
                        "instructions (or “text:” and the new text)",
                        required=False,
                        rest=True,
                        max_len=MAX_CHAPTER_CHARS,
                    ),
                    Param(
                        "text",
                        "新的全文（替换这一章）",
                        "the new text (replaces the chapter)",
                        required=False,
                        rest=True,
                        max_len=MAX_CHAPTER_CHARS,
                    ),
                    Param(
                        "file",
                        "替换文本",
                        "replacement text",
                        "file",
                        required=False,
                        extensions=TEXT_FILES,
                    ),
                ),
            ),
            command(
                Help(
                    "history", "查看某章的版本", "List a chapter's versions", "/chapter history 12"
                ),
                novel_api.ChapterHistory,
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
                novel_api.RollbackChapter,
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
                novel_api.DeleteChapter,
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
                novel_api.CloseRound,
                lambda v: novel_api.CloseRound(),
            ),
        ),
    )
    novel = Group(
        Help(
            "novel",
            "小说设定、人物、前情提要、关系图、导出；一个服务器/群里的多个故事",
            "Novel blueprint, cast, recap, cast map, export; several stories in one server or group",
            "/novel blueprint show | set | edit | accept | reject | history · /novel characters"
            " · /novel recap [N] · /novel map · /novel export · /novel new <标题> · /novel list",
            "/novel blueprint show | set | edit | accept | reject | history · /novel characters"
            " · /novel recap [N] · /novel map · /novel export · /novel new <title> · /novel list",
        ),
        (
            Command(
                help=Help(
                    "blueprint",
                    "世界设定：show · set 上传 JSON · edit 字段 值 · accept/reject 更新建议 · history 记录",
                    "Blueprint: show · set (JSON) · edit FIELD VALUE · accept/reject updates · history",
                    "/novel blueprint edit characters.林远.status 已死亡"
                    " · /novel blueprint set @世界.json（控制台）",
                    "/novel blueprint edit characters.Lin.status dead"
                    " · /novel blueprint set @world.json (console)",
                ),
                # The action word picks the request's type, as a subcommand's name would; its
                # handler is the one registered for that type.
                parse=_blueprint_request,
                run=novels.run,
                params=(
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
                novel_api.Export,
                lambda v: novel_api.Export(v.text("format", "md")),
                (
                    Param(
                        "format", "格式", "format", "choice", required=False, choices=("md", "epub")
                    ),
                ),
            ),
            command(
                Help(
                    "new",
                    "让本频道、子区或话题有自己的故事（管理员）",
                    "Give this channel, thread or topic a story of its own (admins)",
                    "/novel new 星海",
                    "/novel new Star Sea",
                ),
                novel_api.NewStory,
                lambda v: novel_api.NewStory(v.text("title")),
                (Param("title", "标题", "title", rest=True, max_len=MAX_TITLE),),
            ),
            command(
                Help(
                    "list",
                    "本服务器/群的各个故事：在哪里、写到第几章、这里用哪一个",
                    "This server's or group's stories: where, how far, which one is used here",
                    "/novel list",
                ),
                novel_api.ListStories,
                lambda v: novel_api.ListStories(),
                rate_limited=False,  # a look, no work
            ),
            *(story_commands(story, places) if story is not None and places else ()),
        ),
    )
    return chapter, novel
