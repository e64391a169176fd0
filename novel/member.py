"""Who is asking, and where, as the writers' room sees it: no chat concepts."""

from __future__ import annotations

from dataclasses import dataclass

from kernel.i18n import Lang


@dataclass(frozen=True, slots=True)
class Member:
    """A member of the room as the domain sees one: plain ids, whether the chat made them an
    admin (the chat layer decided), and the language to answer in. Announcements go to the
    round's opener as a Member too.

    `chat_id` is the story they take part in, by its key: a chat's own story is keyed by the
    chat's id (every story was, before a place could hold one of its own), a story a place
    holds by a story id of its own (`novel.stories`). Everything a story has (rounds,
    chapters, plot memory, blueprint, summaries, story state) is keyed by it.

    `channel_id` is where in the chat they spoke (a channel, thread or topic: a round's
    results are said there). `via` is the chat layer's own word for where the chat is; the
    room stores it with a round and hands it back in the round's announcements, and never
    reads it."""

    chat_id: str  # the story's key: the unit that owns a novel
    user_id: str
    user_name: str = ""
    channel_id: str = ""
    is_admin: bool = False
    lang: Lang = "zh"
    via: str = ""


@dataclass(frozen=True, slots=True)
class Place:
    """Where in a chat someone spoke, as the chat layer saw it, in plain ids: the chat, the
    channel, thread or topic ("" when the chat has no places: a private chat, a group without
    topics, the console), the channel a thread is in ("" for none), and the place's name when
    the chat layer knew it. Which story a place holds is `novel.stories`' to say."""

    chat_id: str
    channel_id: str = ""
    parent_id: str = ""
    name: str = ""
