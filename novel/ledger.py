"""The story state, stored: each chapter version's events in SQLite, folded on demand.

A chapter's events (`novel.events`) are read once, against the story before it, and stored with
the chapter's version and a `basis` — a hash of the reader's version, of what the blueprint
tells the reader (names, aliases, who is a woman, places) and of every chapter version before
it. The state after any chapter is the fold of the stored events of the current versions
(`story_state.apply`): no chapter is read again, so a restart reads the state back without
replaying the story.

A chapter is read again only when its stored basis no longer matches: the chapter was revised
or rolled back (another version is current: that version's events, stored with it), an earlier
chapter changed (its pronouns or names may read differently), the blueprint's cast changed, or
a new reader ships (`READER`). Deleting a chapter deletes its versions and their events (the
foreign key cascades), and the chapters after it are read again against the story without it.

`/novel characters` (`novel.cast`) and the consistency check (`novel.chapters`) both read the
state through `StoryLedger.state`, then add what the chapters' summaries and pending proposals
know (`with_summaries`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Sequence

from novel.blueprint import Blueprint
from novel.events import ChapterEvents
from novel.repo import ChangeRow, EventStore, VersionRow
from novel.story_state import Status, StoryState, apply, chapter_events, read_chapter

log = logging.getLogger(__name__)

# The reader that wrote a chapter's events: a new one reads every chapter again, once.
READER = "issue42-14"  # changed with every change to what the reader reads


def _cast_key(bp: Blueprint) -> bytes:
    """What of the blueprint the reader uses: the cast as named and described, the places."""
    cast = [
        (c.name, c.aliases, c.description, c.traits, c.status, c.location) for c in bp.characters
    ]
    return json.dumps([cast, bp.places], ensure_ascii=False).encode("utf-8")


def _hash(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    return h.digest()


def bases(bp: Blueprint, versions: Sequence[tuple[str, int]]) -> list[str]:
    """The basis of each chapter version in order: what it is read against."""
    chain = _hash(READER.encode(), _cast_key(bp))
    out: list[str] = []
    for chapter_id, version in versions:
        out.append(chain.hex())
        chain = _hash(chain, chapter_id.encode(), str(version).encode())
    return out


def _read(state: StoryState, text: str) -> ChapterEvents:
    return chapter_events(state, read_chapter(state, text))


class StoryLedger:
    """The stored events of a chat's chapters, and the state they fold into."""

    def __init__(self, store: EventStore) -> None:
        self._store = store

    async def state(
        self,
        chat_id: str,
        bp: Blueprint,
        current: Sequence[tuple[int, VersionRow]],
        before: int | None = None,
    ) -> StoryState:
        """The state after the current chapters (only those numbered below `before`, when
        given), from stored events; the ones missing or stale are read and stored."""
        chapters = [(n, v) for n, v in sorted(current, key=lambda nv: nv[0])]
        keys = bases(bp, [(v.chapter_id, v.version) for _, v in chapters])
        stored = await self._store.stored(chat_id)
        state = StoryState(bp)
        for (number, v), basis in zip(chapters, keys, strict=True):
            if before is not None and number >= before:
                break
            kept = stored.get((v.chapter_id, v.version))
            events = _decode(kept[1]) if kept is not None and kept[0] == basis else None
            if events is None:
                events = await asyncio.to_thread(_read, state, v.text)
                await self._store.put(v.chapter_id, v.version, basis, events.to_json())
            state = apply(state, events)
        return state

    async def refresh(
        self, chat_id: str, bp: Blueprint, current: Sequence[tuple[int, VersionRow]]
    ) -> None:
        """Bring the stored events up to date (after a save, a revision, a rollback or a
        delete), so that the next reader, in this process or after a restart, reads none."""
        await self.state(chat_id, bp, current)


def _decode(raw: str) -> ChapterEvents | None:
    try:
        return ChapterEvents.from_json(raw)
    except (ValueError, KeyError, TypeError):
        log.warning("stored story events that do not decode: reading the chapter again")
        return None


def with_summaries(
    state: StoryState,
    others: Sequence[tuple[int, VersionRow]],
    pending: Sequence[ChangeRow],
    number: int,
) -> StoryState:
    """The state before chapter `number`, also knowing the names and scenes the other
    chapters' summaries list, pending new-character proposals, and the statuses the previous
    chapter's summary reports (a model may see a wound the rules miss)."""
    names: list[str] = []
    places: list[str] = []
    noted: list[tuple[str, Status]] = []
    for n, v in others:
        names.extend(v.summary.characters)
        names.extend(nc.name for nc in v.summary.new_characters)
        places.extend(v.summary.scenes)
        if n == number - 1:
            noted += [(c.name, "hurt") for c in v.summary.status_changes if "伤" in c.status]
    names.extend(str(c.payload.get("name", "")) for c in pending if c.kind == "character")
    state = state.knowing(names).seeing(places)
    for name, status in noted:
        state = state.noting(name, status, state.chapters)
    return state
