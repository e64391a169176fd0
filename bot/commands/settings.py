"""`/settings language zh|en`: a chat's settings, chosen by its admins."""

from __future__ import annotations

from typing import Any, Protocol

from bot.registry import Call, Command, Group, Help, Param, Permission, Values
from retrieval.i18n import Catalog, Lang
from retrieval.reply import Reply

T = Catalog(
    {
        "language_is": (
            "本聊天的语言：中文。管理员可以用 /settings language en 改为英文。",
            "This chat's language: English. Admins can switch with /settings language zh.",
        ),
        "language_set": (
            "好的，本聊天今后用中文回复（用英文写的问题仍用英文回答）。",
            "Done: this chat now gets replies in English (questions written in Chinese are "
            "still answered in Chinese).",
        ),
    }
)


class LanguageSetting(Protocol):
    """`bot.chats.ChatSettings`."""

    async def language(self, platform: str, chat_id: str) -> Lang: ...

    async def set_language(self, platform: str, chat_id: str, lang: Lang, set_by: str) -> None: ...


def _permission(values: Values) -> Permission:
    return "admins" if values.text("value") else "anyone"  # anyone may ask what it is


def settings_commands(
    chats: LanguageSetting | None, extra: tuple[Command[Any], ...] = ()
) -> tuple[Group, ...]:
    """`/settings language` (when there is a store) and the rooms' own settings (`extra`,
    e.g. the writers' room ballot)."""

    async def language(call: Call, value: Lang | None) -> Reply:
        assert chats is not None
        actor = call.actor
        if value is None:
            current = await chats.language(actor.platform, actor.chat_id)
            return Reply.text(T(current, "language_is"), lang=current)
        await chats.set_language(actor.platform, actor.chat_id, value, actor.user_id)
        return Reply.text(T(value, "language_set"), lang=value)

    def parse(values: Values) -> Lang | None:
        value = values.text("value")
        return "en" if value == "en" else "zh" if value == "zh" else None

    children: list[Command[Any]] = []
    if chats is not None:
        children.append(
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
                permission=_permission,
                rate_limited=False,
            )
        )
    children.extend(extra)
    if not children:
        return ()
    usage = " · ".join(c.help.usage for c in children)
    return (
        Group(
            Help("settings", "本聊天的设置（管理员）", "This chat's settings (admins)", usage),
            tuple(children),
        ),
    )
