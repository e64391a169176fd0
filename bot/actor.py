"""Chat identity: who is asking, on which platform, where, and in which language.

The transports build an `Actor` for every message; the router and the commands read it. The
domain packages never see one: they are handed plain ids, an `is_admin` flag and a language.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel.i18n import Lang


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is asking, where, and in which language the reply should be."""

    platform: str  # discord | telegram | console
    chat_id: str  # guild id / group id / "console": the unit that owns a novel
    user_id: str
    user_name: str = ""
    channel_id: str = ""
    is_admin: bool = False
    roles: tuple[str, ...] = ()
    lang: Lang = "zh"
    # Where `channel_id` is: the channel a thread is in ("" for none), and the place's name
    # when the platform said it. The writers' room finds a place's story with them.
    parent_id: str = ""
    channel_name: str = ""
