"""`/settings language zh|en`, `/settings script 简体|繁体`: a chat's settings, chosen by its
admins."""

from __future__ import annotations

from typing import Any, Protocol

from bot.actor import Actor
from bot.budget import Payer, Spent
from bot.i18n import catalog
from bot.registry import Call, Command, Group, Help, Param, Values
from bot.reply import Block, Reply
from kernel.i18n import Lang
from retrieval.requests import SCRIPT_NAMES, Script

T = catalog("settings")


class LanguageSetting(Protocol):
    """`bot.chats.ChatSettings`."""

    async def language(self, platform: str, chat_id: str) -> Lang: ...

    async def set_language(self, platform: str, chat_id: str, lang: Lang, set_by: str) -> None: ...

    async def script(self, platform: str, chat_id: str) -> Script | None: ...

    async def set_script(
        self, platform: str, chat_id: str, script: Script, set_by: str
    ) -> None: ...


_SCRIPT_WORDS: dict[Script, tuple[str, str]] = {
    "simplified": ("简体", "Simplified"),
    "traditional": ("繁体", "Traditional"),
}


class Usage(Protocol):
    """Today's model tokens of a user and their chat (`bot.budget.Budget`)."""

    def spent(self, payer: Payer) -> Spent: ...


def _usage_line(lang: Lang, usage: Usage | None, actor: Actor) -> str:
    if usage is None:
        return T(lang, "no_model")
    s = usage.spent(Payer(f"{actor.platform}:{actor.user_id}", actor.chat))

    def limit(n: int) -> str:
        return f"{n:,}" if n else T(lang, "no_limit")

    return T(
        lang,
        "usage_line",
        user=f"{s.user:,}",
        user_limit=limit(s.user_limit),
        chat=f"{s.chat:,}",
        chat_limit=limit(s.chat_limit),
    )


def settings_commands(
    chats: LanguageSetting | None,
    extra: tuple[Command[Any], ...] = (),
    *,
    usage: Usage | None = None,
) -> tuple[Group, ...]:
    """`/settings` (what this chat's settings are, and today's model use: `usage`, None when
    no model is configured), `/settings language` (when there is a store) and the rooms' own
    settings (`extra`, e.g. the writers' room ballot)."""

    async def show(call: Call, _: None) -> Reply:
        actor = call.actor
        lang = actor.lang
        lines = []
        if chats is not None:
            current = await chats.language(actor.platform, actor.chat_id)
            lines.append(T(current, "language_is"))
            zh, en = _SCRIPT_WORDS[
                await chats.script(actor.platform, actor.chat_id) or "simplified"
            ]
            lines.append(T(lang, "script_is", name=zh, name_en=en))
        lines.append(_usage_line(lang, usage, actor))
        heading = Block(T(lang, "show_heading"), "heading")
        return Reply(blocks=(heading, Block("\n".join(lines))), lang=lang)

    async def language(call: Call, value: Lang | None) -> Reply:
        assert chats is not None
        actor = call.actor
        if value is None:
            current = await chats.language(actor.platform, actor.chat_id)
            return Reply.text(T(current, "language_is"), lang=current)
        await chats.set_language(actor.platform, actor.chat_id, value, actor.user_id)
        return Reply.text(T(value, "language_set"), lang=value)

    async def script(call: Call, value: Script | None) -> Reply:
        assert chats is not None
        actor = call.actor
        key = "script_set"
        if value is None:
            key, value = "script_is", await chats.script(actor.platform, actor.chat_id)
        else:
            await chats.set_script(actor.platform, actor.chat_id, value, actor.user_id)
        zh, en = _SCRIPT_WORDS[value or "simplified"]
        return Reply.text(T(actor.lang, key, name=zh, name_en=en), lang=actor.lang)

    def parse_script(values: Values) -> Script | None:
        return SCRIPT_NAMES.get(values.text("value"))

    def parse(values: Values) -> Lang | None:
        value = values.text("value")
        return "en" if value == "en" else "zh" if value == "zh" else None

    children: list[Command[Any]] = [
        Command(
            help=Help(
                "show",
                "查看本聊天的设置与今天的模型用量",
                "This chat's settings and today's model use",
                "/settings",
            ),
            parse=lambda v: None,
            run=show,
            rate_limited=False,
        )
    ]
    if chats is not None:
        children.extend(
            (
                Command(
                    help=Help(
                        "language",
                        "回复语言：zh 中文 · en 英文",
                        "Reply language: zh Chinese · en English",
                        "/settings language en",
                    ),
                    params=(
                        Param(
                            "value",
                            "语言",
                            "language",
                            "choice",
                            required=False,
                            choices=("zh", "en"),
                        ),
                    ),
                    parse=parse,
                    run=language,
                    rate_limited=False,
                ),
                Command(
                    help=Help(
                        "script",
                        "/cite 经文的字体：简体 · 繁体",
                        "Script of /cite verses: simplified · traditional",
                        "/settings script 繁体",
                        "/settings script traditional",
                    ),
                    params=(
                        Param(
                            "value",
                            "字体",
                            "script",
                            "choice",
                            required=False,
                            choices=tuple(SCRIPT_NAMES),
                        ),
                    ),
                    parse=parse_script,
                    run=script,
                    rate_limited=False,
                ),
            )
        )
    children.extend(extra)
    lines = " · ".join(c.help.usage for c in children)
    lines_en = " · ".join(c.help.usage_in("en") for c in children)
    return (
        Group(
            Help(
                "settings",
                "本聊天的设置（管理员修改）",
                "This chat's settings (admins change them)",
                lines,
                lines_en,
            ),
            tuple(children),
            bare="show",
        ),
    )
