"""Chat identity: who is asking, on which platform, where, and in which language.

The transports build an `Actor` for every message from what the platform tells them (its
ids, the kind of chat: `kind`); the router adds what it decides (the asker's `role` by the
permission table's rules, `bot.permissions`, and `is_admin`); the commands read it. The
domain packages never see one: they are handed plain ids, an `is_admin` flag and a language.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernel.i18n import Lang

# Where a command was sent: a Discord server's channel or a Telegram group ("group"), a forum
# topic in one ("topic"), a private chat with the bot ("dm"), the operator's terminal
# ("console": `baibao chat` and the one-shot CLI).
ChatKind = Literal["group", "topic", "dm", "console"]
# Who is asking, as the router decides it (`bot.permissions.Roles`): an operator (OPERATORS,
# the console), a chat's admin, a member, or a stranger (a DM from someone who is no operator).
Role = Literal["operator", "chat_admin", "member", "stranger"]


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is asking, where, and in which language the reply should be."""

    platform: str  # discord | telegram | console
    chat_id: str  # guild id / group id / "console": the unit that owns a novel and a shelf
    user_id: str
    user_name: str = ""
    channel_id: str = ""
    # Whether the asker may change this chat's own things (its settings, story and shelf): a
    # chat admin, an operator, a DM's own member. A transport that knows it without a lookup
    # (the console, tests) sets it; otherwise the router does, when the command needs it.
    is_admin: bool = False
    roles: tuple[str, ...] = ()
    lang: Lang = "zh"
    # Where `channel_id` is: the channel a thread is in ("" for none), and the place's name
    # when the platform said it. The writers' room finds a place's story with them.
    parent_id: str = ""
    channel_name: str = ""
    kind: ChatKind = "group"
    role: Role | None = None  # set by the router's permission check

    @property
    def chat(self) -> str:
        """The chat as one key, `platform:chat_id` (ALLOWED_CHATS, shelves, the change log)."""
        return f"{self.platform}:{self.chat_id}"
