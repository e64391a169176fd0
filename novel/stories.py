"""Several stories in one chat.

A chat has one story of its own, its default: keyed by the chat's id, as every story was
before a place could hold one. A place in it (a channel, a thread, a forum topic) may hold a
story of its own, made there with `/novel new <title>` by an admin and keyed by a story id of
its own. Everything a story has is keyed by that key (`Member.chat_id`): its rounds and
ballots, chapters and their versions, plot memory (the vector store's namespace is
`novel:<key>`, and every search filters on it), summaries, blueprint and its history,
proposed changes, story state. So nothing of one story reaches another's prompt, search or
count.

Which story a command belongs to (`StoryStore.story_at`): the story of the place it was
spoken in; in a thread without a story of its own, its channel's; anywhere else, the chat's
own story. So a chat that never makes a second story works exactly as before, and a chat that
does keeps its own story for every channel or topic that holds none.

The directory (which place holds which story) is `NovelRepo.stories`, read once and kept in
memory; the chat layer asks it for every command. This service makes stories and lists them.
"""

from __future__ import annotations

import json
import uuid

from kernel.refusal import Refused
from novel.blueprint import Blueprint, default_blueprint, validate
from novel.member import Member, Place
from novel.repo import NovelRepo, StoryRow
from novel.results import StoryEntry, StoryList, StoryOpened
from novel.schedule import Now

MAX_TITLE = 100  # a blueprint's title


def new_story_id() -> str:
    """A key no chat's id can be (ids are numbers, `dm:…` or `console`)."""
    return f"story:{uuid.uuid4().hex[:16]}"


class Stories:
    """`/novel new` and `/novel list`."""

    def __init__(self, repo: NovelRepo, clock: Now) -> None:
        self._repo = repo
        self._directory = repo.stories
        self._clock = clock

    async def new(self, founder: Member, place: Place, title: str) -> StoryOpened:
        """A story of its own for `place`, with an empty world named `title` (an admin sets
        its blueprint there, or the chapters propose one)."""
        title = " ".join(title.split())
        if not founder.is_admin:
            raise Refused("admins_only")
        if not title:
            raise Refused("story_title_missing")
        if len(title) > MAX_TITLE:
            raise Refused("story_title_too_long", n=len(title), limit=MAX_TITLE)
        if not place.channel_id:
            raise Refused("story_needs_place")
        await self._refuse_if_taken(place)
        row = StoryRow(
            new_story_id(),
            place.chat_id,
            place.channel_id,
            place.name,
            self._clock(),
            founder.user_id,
        )
        if not await self._directory.create(row, Blueprint(title=title).to_json()):
            await self._refuse_if_taken(place)  # another admin was first: say whose it is
            raise Refused("story_here", title=title)
        return StoryOpened(title, place.name)

    async def _refuse_if_taken(self, place: Place) -> None:
        """Refused when the place holds a story already, or when the story it uses now has a
        round open that was opened here (that round's ballot and results are said here, while
        this place's commands would reach the new story)."""
        own = self._directory.story_at(Place(place.chat_id, place.channel_id))
        if own != place.chat_id:
            raise Refused("story_here", title=await self._title(own))
        current = self._directory.story_at(place)  # its channel's (a thread), or the chat's
        r = await self._repo.rounds.open_round(current)
        if r is not None and r.channel_id == place.channel_id:
            raise Refused("story_round_here", title=await self._title(current), phase=r.phase.value)

    async def listed(self, place: Place) -> StoryList:
        """The stories of `place`'s chat: its own first (listed even before it was used),
        then the places' in the order they were made."""
        here = self._directory.story_at(place)
        places = [r for r in await self._directory.stories(place.chat_id) if r.place]
        entries = [await self._entry(place.chat_id, "", "", here)]
        for r in places:
            entries.append(await self._entry(r.story_id, r.place, r.place_name, here))
        return StoryList(tuple(entries))

    async def _entry(self, story_id: str, place: str, name: str, here: str) -> StoryEntry:
        r = await self._repo.rounds.open_round(story_id)
        return StoryEntry(
            await self._title(story_id),
            place,
            name,
            len(await self._repo.book.chapters(story_id)),
            r.phase if r is not None else None,
            story_id == here,
        )

    async def _title(self, story_id: str) -> str:
        """The story's name: its blueprint's title (the default world's until it has one)."""
        raw = await self._repo.world.blueprint_json(story_id)
        return (validate(json.loads(raw)) if raw else default_blueprint()).title
