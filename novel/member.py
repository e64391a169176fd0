"""Who is asking, as the writers' room sees a member: no chat concepts."""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.i18n import Lang


@dataclass(frozen=True, slots=True)
class Member:
    """A member of the room as the domain sees one: plain ids, whether the chat made them an
    admin (`bot.admin.AdminPolicy` decided), and the language to answer in. Announcements go to
    the round's opener as a Member too."""

    platform: str  # which platform's chat (a ballot's default style depends on it)
    chat_id: str  # the unit that owns a novel
    user_id: str
    user_name: str = ""
    channel_id: str = ""
    is_admin: bool = False
    lang: Lang = "zh"
