"""Who is asking, as the writers' room sees a member: no chat concepts."""

from __future__ import annotations

from dataclasses import dataclass

from kernel.i18n import Lang


@dataclass(frozen=True, slots=True)
class Member:
    """A member of the room as the domain sees one: plain ids, whether the chat made them an
    admin (the chat layer decided), and the language to answer in. Announcements go to the
    round's opener as a Member too.

    `channel_id` is where in the chat they spoke (a channel, thread or topic: a round's
    results are said there). `via` is the chat layer's own word for where the chat is; the
    room stores it with a round and hands it back in the round's announcements, and never
    reads it."""

    chat_id: str  # the unit that owns a novel
    user_id: str
    user_name: str = ""
    channel_id: str = ""
    is_admin: bool = False
    lang: Lang = "zh"
    via: str = ""
