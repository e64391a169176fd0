"""Which shelf a chat has (`retrieval.library`), and what it reads of the library.

A Discord server and a Telegram group each have a shelf; their channels and forum topics
share it (the shelf belongs to the chat, `Actor.chat`). A DM has one only when the operator
sets `DM_UPLOADS=true`; the console (the operator's terminal) reads and writes the shared
library. Every command that reads the library asks here what the chat reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.actor import Actor
from retrieval.library import SHARED_ONLY, Reading, shelf_namespace


class Readings(Protocol):
    """What a reader sees of the library (`retrieval.index.Indexer.reading`)."""

    def reading(self, shelf: str = "") -> Reading: ...


@dataclass(frozen=True, slots=True)
class Shelves:
    """`readings`: the library's registry (None: no shelves, nothing but the shared library,
    as in a registry built without one); `dm_uploads`: DM_UPLOADS."""

    readings: Readings | None = None
    dm_uploads: bool = False

    def of(self, actor: Actor) -> str:
        """The chat's shelf (a namespace), or "" when it has none."""
        if self.readings is None or actor.platform == "console" or actor.kind == "console":
            return ""
        if actor.kind == "dm" and not self.dm_uploads:
            return ""
        return shelf_namespace(actor.chat)

    def reading(self, actor: Actor) -> Reading:
        """What the chat reads: the shared library and its own shelf, nothing of another's."""
        if self.readings is None:
            return SHARED_ONLY
        return self.readings.reading(self.of(actor))
