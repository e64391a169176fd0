"""One command table; parsing and validation happen here, once, for every transport.

Text transports (console, Telegram) hand in a raw line (`/ask@baibao_bot 什么是经纶？`);
Discord hands in already-split slash-command options. Both end in `Router.dispatch`, which
validates, rate-limits, builds a typed request and calls the service. Every failure becomes a
`Reply` in the user's language: nothing raises out of the router.
"""

from __future__ import annotations

import logging
import unicodedata
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from bot.i18n import T
from bot.ratelimit import RateLimiter
from novel import api as novel_api
from retrieval import scripture
from retrieval.i18n import Lang, detect_language
from retrieval.reply import Block, Progress, Reply
from retrieval.requests import Actor, AskRequest, CiteRequest

log = logging.getLogger(__name__)

MAX_QUESTION = 1000
MAX_FIELD = 2000


class Scholar(Protocol):
    async def ask(
        self, actor: Actor, request: AskRequest, progress: Progress | None = None
    ) -> Reply: ...

    async def cite(self, actor: Actor, request: CiteRequest) -> Reply: ...


ParamKind = Literal["text", "int", "choice", "file"]


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    zh: str
    en: str
    kind: ParamKind = "text"
    required: bool = True
    rest: bool = False  # text form: takes the remainder of the line
    max_len: int = MAX_FIELD
    choices: tuple[str, ...] = ()

    def label(self, lang: Lang) -> str:
        return self.en if lang == "en" else self.zh


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    zh: str
    en: str
    usage: str
    params: tuple[Param, ...] = ()
    subcommands: tuple[Command, ...] = ()
    # Text form: split the remainder on "|" into the params, in order (e.g. a proposal).
    pipe_split: bool = False
    rate_limited: bool = True

    def describe(self, lang: Lang) -> str:
        return self.en if lang == "en" else self.zh

    def sub(self, name: str) -> Command | None:
        return next((c for c in self.subcommands if c.name == name), None)


class UsageError(Exception):
    def __init__(self, key: str, **fields: object) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields


_CH = Param("chapter", "章节号", "chapter number", "int")

COMMANDS: tuple[Command, ...] = (
    Command(
        "ask",
        "向职事语料提问，回答附出处",
        "Ask the ministry corpus; answers cite their sources",
        "/ask 神圣分赐与召会有什么关系？",
        (Param("question", "问题", "question", rest=True, max_len=MAX_QUESTION),),
    ),
    Command(
        "cite",
        "查经文：经文、注解及阐述它的职事段落",
        "Look up a verse: text, footnotes and passages that expound it",
        "/cite 弗1:10",
        (Param("reference", "经文出处", "reference", rest=True, max_len=200),),
    ),
    Command(
        "chapter",
        "小说接龙：提议、投票、写作与修订章节",
        "Collaborative novel: propose, vote, write and revise chapters",
        "/chapter next | propose | vote | show | revise | history | rollback | delete | close",
        subcommands=(
            Command(
                "next",
                "开启新一轮（提议→投票→写作）；有待写的章节时重试写作",
                "Open a round (propose → vote → write); retries a pending chapter",
                "/chapter next",
            ),
            Command(
                "propose",
                "提议下一章目标：标题 | 摘要 | 写作要点",
                "Propose the next chapter's goal: title | summary | notes",
                "/chapter propose 夜渡 | 林远夜里渡河寻找师父 | 多写环境，少写对白",
                (
                    Param("title", "标题", "title", max_len=100),
                    Param("summary", "摘要", "summary", required=False, max_len=1000),
                    Param("notes", "写作要点", "notes", required=False, max_len=1000),
                ),
                pipe_split=True,
                rate_limited=False,  # cheap, and a round's last minute must not lock people out
            ),
            Command(
                "vote",
                "为提议投票（可改票）",
                "Vote for a proposal (changeable)",
                "/chapter vote 2",
                (Param("option", "选项编号", "option number", "int"),),
                rate_limited=False,
            ),
            Command(
                "show",
                "查看章节（默认最新一章）",
                "Show a chapter (latest by default)",
                "/chapter show 12",
                (Param("chapter", "章节号", "chapter number", "int", required=False),),
                rate_limited=False,
            ),
            Command(
                "revise",
                "重写某章（可附说明或上传文本）",
                "Rewrite a chapter (with instructions or an uploaded text)",
                "/chapter revise 12 让结尾更有悬念",
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
            Command(
                "history",
                "查看某章的版本",
                "List a chapter's versions",
                "/chapter history 12",
                (_CH,),
                rate_limited=False,
            ),
            Command(
                "rollback",
                "回滚某章到指定版本",
                "Roll a chapter back to a version",
                "/chapter rollback 12 2",
                (_CH, Param("version", "版本号", "version", "int")),
            ),
            Command(
                "delete",
                "删除最后一章（删除更早的章节需加 confirm 并重新编号）",
                "Delete the last chapter (earlier ones need confirm; later ones renumber)",
                "/chapter delete  或  /chapter delete 5 confirm",
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
            Command(
                "close",
                "提前结束当前阶段；放弃待写的一轮（管理员）",
                "Close the current phase early; abandon a pending round (admins)",
                "/chapter close",
            ),
        ),
    ),
    Command(
        "novel",
        "小说设定与导出",
        "Novel blueprint and export",
        "/novel blueprint show | set | edit · /novel export",
        subcommands=(
            Command(
                "blueprint",
                "世界设定：show 查看 · set 上传 JSON · edit 字段 值",
                "World blueprint: show · set (upload JSON) · edit FIELD VALUE",
                "/novel blueprint edit characters.林远.status 已死亡",
                (
                    Param("action", "操作", "action", "choice", choices=("show", "set", "edit")),
                    Param("field", "字段", "field", required=False, max_len=200),
                    Param("value", "值", "value", required=False, rest=True),
                    Param("file", "JSON 文件", "JSON file", "file", required=False),
                ),
            ),
            Command(
                "export",
                "导出全文（md 或 epub）",
                "Export the novel (md or epub)",
                "/novel export epub",
                (
                    Param(
                        "format", "格式", "format", "choice", required=False, choices=("md", "epub")
                    ),
                ),
            ),
        ),
    ),
    Command(
        "help",
        "显示帮助",
        "Show help",
        "/help [命令]",
        (Param("command", "命令", "command", required=False, max_len=50),),
        rate_limited=False,
    ),
)

COMMAND_INDEX: dict[str, Command] = {c.name: c for c in COMMANDS}

RawArgs = Mapping[str, str | int | bytes | None]


@dataclass(slots=True)
class Parsed:
    path: tuple[str, ...]
    args: dict[str, Any] = field(default_factory=dict)


def _clean(text: str) -> str:
    """Drop control characters (keeping newlines and tabs); the user's punctuation stays."""
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")


def split_text_command(line: str, bot_username: str = "") -> tuple[str, str] | None:
    """`/ask@bot question` → ("ask", "question"); None when the line is not a command."""
    line = line.strip()
    if not line.startswith(("/", "／")):
        return None
    head, _, rest = line[1:].partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = more + (" " + rest if rest else "")
    name, _, target = head.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        return None  # addressed to another bot in the group
    return name.lower(), rest.strip()


def parse_args(command: Command, rest: str) -> dict[str, str]:
    """Text form → raw argument strings, by the command's params."""
    rest = rest.strip()
    args: dict[str, str] = {}
    text_params = [p for p in command.params if p.kind != "file"]
    if command.pipe_split:
        parts = [p.strip() for p in rest.replace("｜", "|").split("|")] if rest else []
        for param, part in zip(text_params, parts, strict=False):
            args[param.name] = part
        if len(parts) > len(text_params):  # extra pipes belong to the last field
            args[text_params[-1].name] = " | ".join(parts[len(text_params) - 1 :])
        return args
    for param in text_params:
        if not rest:
            break
        if param.rest:
            args[param.name] = rest
            rest = ""
        else:
            token, _, rest = rest.partition(" ")
            args[param.name] = token
            rest = rest.strip()
    if rest and text_params:  # leftover words join the last text parameter
        last = text_params[-1]
        args[last.name] = f"{args.get(last.name, '')} {rest}".strip()
    return args


def validate(command: Command, raw: RawArgs) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for param in command.params:
        value = raw.get(param.name)
        if isinstance(value, str):
            value = _clean(value).strip()
            if value == "":
                value = None
        if value is None:
            if param.required:
                raise UsageError("missing_arg", param=param)
            continue
        if param.kind == "file":
            if not isinstance(value, bytes | bytearray):
                raise UsageError("need_file")
            out[param.name] = bytes(value)
        elif param.kind == "int":
            try:
                number = int(unicodedata.normalize("NFKC", str(value)))
            except (TypeError, ValueError):
                raise UsageError("not_int", param=param, value=str(value)[:20]) from None
            if number < 1 or number > 1_000_000:
                raise UsageError("not_int", param=param, value=str(value)[:20])
            out[param.name] = number
        elif param.kind == "choice":
            text = unicodedata.normalize("NFKC", str(value)).lower()
            if text not in param.choices:
                raise UsageError("bad_choice", param=param, choices=" / ".join(param.choices))
            out[param.name] = text
        else:
            text = str(value)
            if len(text) > param.max_len:
                raise UsageError("too_long", param=param, n=len(text), limit=param.max_len)
            out[param.name] = text
    return out


class Router:
    """Turns invocations into service calls and replies. Holds no platform code."""

    def __init__(
        self,
        scholar: Scholar,
        novels: novel_api.Novels,
        *,
        limiter: RateLimiter | None = None,
        default_lang: Lang = "zh",
    ) -> None:
        self._scholar = scholar
        self._novels = novels
        self._limiter = limiter or RateLimiter()
        self._default_lang = default_lang

    # ---- entry points -------------------------------------------------------------------

    async def handle_text(
        self,
        actor: Actor,
        line: str,
        *,
        bot_username: str = "",
        attachment: bytes | None = None,
        progress: Progress | None = None,
    ) -> Reply | None:
        """A raw chat line. None when it is not addressed to us (another bot's command)."""
        actor = _with_lang(actor, self._lang_for(actor, line))
        reply = await self._handle_text(actor, line, bot_username, attachment, progress)
        if reply is not None:
            reply.lang = actor.lang
        return reply

    async def _handle_text(
        self,
        actor: Actor,
        line: str,
        bot_username: str,
        attachment: bytes | None,
        progress: Progress | None,
    ) -> Reply | None:
        lang = actor.lang
        split = split_text_command(line, bot_username)
        if split is None:
            if line.strip().startswith(("/", "／")):
                return None
            return Reply.error(T(lang, "not_a_command"))
        name, rest = split
        command = COMMAND_INDEX.get(name)
        if command is None:
            return Reply.error(T(lang, "unknown_command", name=name[:40]))
        path: tuple[str, ...] = (name,)
        if command.subcommands:
            sub_name, _, rest = rest.partition(" ")
            sub_name = unicodedata.normalize("NFKC", _clean(sub_name)).strip().lower()
            sub = command.sub(sub_name)
            if sub is None:
                return self._sub_error(lang, command, sub_name)
            command, path = sub, (name, sub_name)
        raw: dict[str, str | int | bytes | None] = dict(parse_args(command, rest))
        if attachment is not None:
            for p in command.params:
                if p.kind == "file":
                    raw[p.name] = attachment
        return await self.dispatch(actor, path, raw, progress=progress)

    async def dispatch(
        self,
        actor: Actor,
        path: tuple[str, ...],
        raw: RawArgs,
        *,
        progress: Progress | None = None,
    ) -> Reply:
        """Structured form (Discord options, or the text form after splitting)."""
        reply = await self._dispatch(actor, path, raw, progress)
        reply.lang = actor.lang
        return reply

    async def _dispatch(
        self, actor: Actor, path: tuple[str, ...], raw: RawArgs, progress: Progress | None
    ) -> Reply:
        lang = actor.lang
        command = COMMAND_INDEX.get(path[0]) if path else None
        if command is None:
            return Reply.error(T(lang, "unknown_command", name=(path or ("",))[0][:40]))
        for part in path[1:]:
            sub = command.sub(part)
            if sub is None:
                return self._sub_error(lang, command, part)
            command = sub
        if command.subcommands:
            return self._sub_error(lang, command, "")
        try:
            args = validate(command, raw)
        except UsageError as err:
            return self._usage(lang, command, err)
        # The console is the operator's own terminal: limits protect shared chats only.
        if command.rate_limited and actor.platform != "console":
            wait = self._limiter.check(actor.platform, actor.chat_id, actor.user_id)
            if wait > 0:
                return Reply.error(T(lang, "rate_limited", seconds=max(1, round(wait))))
        try:
            return await self._call(actor, path, args, progress)
        except UsageError as err:
            return self._usage(lang, command, err)
        except Exception:
            ref = uuid.uuid4().hex[:8]
            log.exception("command %s failed (ref %s)", "/".join(path), ref)
            return Reply.error(T(lang, "internal_error", ref=ref))

    async def press(self, actor: Actor, action: str) -> Reply:
        """A button / keyboard / poll choice coming back (`Button.action`)."""
        reply = await self._press(actor, action)
        reply.lang = actor.lang
        return reply

    async def _press(self, actor: Actor, action: str) -> Reply:
        kind, _, rest = action.partition(":")
        if kind == "vote":
            round_id, _, option = rest.rpartition(":")
            if option.isdigit():
                return await self._guard(actor, novel_api.Vote(int(option), round_id))
        return Reply.error(T(actor.lang, "unknown_action"))

    # ---- internals ----------------------------------------------------------------------

    async def _guard(self, actor: Actor, request: novel_api.NovelRequest) -> Reply:
        try:
            return await self._novels.handle(actor, request)
        except Exception:
            ref = uuid.uuid4().hex[:8]
            log.exception("action failed (ref %s)", ref)
            return Reply.error(T(actor.lang, "internal_error", ref=ref))

    async def _call(
        self, actor: Actor, path: tuple[str, ...], args: dict[str, Any], progress: Progress | None
    ) -> Reply:
        head = path[0]
        if head == "help":
            return self.help(actor.lang, args.get("command"))
        if head == "ask":
            return await self._scholar.ask(actor, AskRequest(args["question"]), progress)
        if head == "cite":
            try:
                ranges = scripture.parse_reference(args["reference"])
            except scripture.ScriptureError as err:
                usage = T(actor.lang, "usage", usage=COMMAND_INDEX["cite"].usage)
                return Reply.error(f"{err.en if actor.lang == 'en' else err.zh}\n{usage}")
            refs = tuple((r.start.osis(), r.end.osis()) for r in ranges)
            return await self._scholar.cite(actor, CiteRequest(args["reference"], refs))
        request = _novel_request(path, args)
        return await self._novels.handle(actor, request, progress)

    def help(self, lang: Lang, topic: str | None = None) -> Reply:
        if topic:
            command = COMMAND_INDEX.get(topic.lstrip("/").lower())
            if command is None:
                return Reply.error(T(lang, "unknown_command", name=topic[:40]))
            blocks = [Block(f"/{command.name} — {command.describe(lang)}", "heading")]
            blocks += [Block(T(lang, "usage", usage=command.usage), "code")]
            for sub in command.subcommands:
                blocks.append(Block(f"{sub.name} — {sub.describe(lang)}\n{sub.usage}", "item"))
            return Reply(blocks=blocks)
        blocks = [Block(T(lang, "help_header"), "heading")]
        for command in COMMANDS:
            blocks.append(
                Block(f"/{command.name} — {command.describe(lang)}\n{command.usage}", "item")
            )
        blocks.append(Block(T(lang, "help_footer"), "note"))
        return Reply(blocks=blocks)

    def _lang_for(self, actor: Actor, text: str) -> Lang:
        """The language of the user's own words: the arguments, without command names."""
        text = text.strip()
        if not text.startswith(("/", "／")):
            return detect_language(text, default=actor.lang or self._default_lang)
        head, _, rest = text.partition(" ")
        command = COMMAND_INDEX.get(head.lstrip("/／").partition("@")[0].lower())
        if command is not None and command.subcommands:
            rest = rest.strip().partition(" ")[2]
        return detect_language(rest, default=actor.lang or self._default_lang)

    def _sub_error(self, lang: Lang, command: Command, sub: str) -> Reply:
        choices = " | ".join(c.name for c in command.subcommands)
        key = "need_sub" if not sub else "unknown_sub"
        return Reply.error(
            T(lang, key, name=command.name, sub=sub[:40], choices=choices)
            + "\n"
            + T(lang, "usage", usage=command.usage)
        )

    def _usage(self, lang: Lang, command: Command, err: UsageError) -> Reply:
        fields = {k: (v.label(lang) if isinstance(v, Param) else v) for k, v in err.fields.items()}
        return Reply.error(
            T(lang, err.key, **fields) + "\n" + T(lang, "usage", usage=command.usage)
        )


def _with_lang(actor: Actor, lang: Lang) -> Actor:
    if actor.lang == lang:
        return actor
    from dataclasses import replace

    return replace(actor, lang=lang)


_NOVEL_BUILDERS: dict[tuple[str, ...], Callable[[dict[str, Any]], novel_api.NovelRequest]] = {
    ("chapter", "next"): lambda a: novel_api.NextRound(),
    ("chapter", "propose"): lambda a: novel_api.Propose(
        a["title"], a.get("summary", ""), a.get("notes", "")
    ),
    ("chapter", "vote"): lambda a: novel_api.Vote(a["option"]),
    ("chapter", "close"): lambda a: novel_api.CloseRound(),
    ("chapter", "show"): lambda a: novel_api.ShowChapter(a.get("chapter")),
    ("chapter", "revise"): lambda a: novel_api.ReviseChapter(
        a["chapter"], a.get("instructions", ""), _decode_upload(a.get("file"))
    ),
    ("chapter", "history"): lambda a: novel_api.ChapterHistory(a["chapter"]),
    ("chapter", "rollback"): lambda a: novel_api.RollbackChapter(a["chapter"], a["version"]),
    ("chapter", "delete"): lambda a: novel_api.DeleteChapter(
        a.get("chapter"), a.get("confirm") is not None
    ),
    ("novel", "export"): lambda a: novel_api.Export(a.get("format", "md")),
    ("novel", "blueprint"): lambda a: _blueprint_request(a),
}


def _novel_request(path: tuple[str, ...], args: dict[str, Any]) -> novel_api.NovelRequest:
    return _NOVEL_BUILDERS[path](args)


def _blueprint_request(args: dict[str, Any]) -> novel_api.NovelRequest:
    action = args["action"]
    if action == "show":
        return novel_api.BlueprintShow()
    if action == "set":
        data = args.get("file")
        if data is None:
            raise UsageError("need_file")
        return novel_api.BlueprintSet(data)
    if not args.get("field") or args.get("value") is None:
        raise UsageError("missing_arg", param=Param("value", "字段和值", "field and value"))
    return novel_api.BlueprintEdit(args["field"], args["value"])


def _decode_upload(data: bytes | None) -> str | None:
    if data is None:
        return None
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise UsageError("need_file")
